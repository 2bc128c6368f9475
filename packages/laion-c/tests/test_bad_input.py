"""Bad input raises a clear ValueError / TypeError naming the argument, per public entry point."""

import numpy as np
import pytest
import torch
from laion_c import (
    LaionC,
    Results,
    SuperclassHead,
    TileLibrary,
    aggregate,
    build_dataset,
    build_tiles,
    corrupt,
    distort,
    evaluate,
    geometric_shapes,
    glitch,
    load_tiles,
    luminance_checkerboard,
    mosaic,
    predict,
    preprocess,
    save_tiles,
    stickers,
    superclass_matrix,
    vertical_lines,
)
from PIL import Image

GOOD = np.zeros((64, 64, 3), np.uint8)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: distort(GOOD, "glitched", 0), ValueError, "level"),
        (lambda: distort(GOOD, "glitched", 6), ValueError, "level"),
        (lambda: distort(GOOD, "glitched", True), ValueError, "level"),
        (lambda: distort(GOOD, "glitched", 2.0), TypeError, "level"),
        (lambda: distort(GOOD, "fog", 1), ValueError, "name"),
        (lambda: distort(GOOD, 3, 1), TypeError, "name"),
        (lambda: distort(GOOD.astype(np.float32), "glitched", 1), ValueError, "img"),
        (lambda: distort(GOOD[:, :, :2], "glitched", 1), ValueError, "img"),
        (lambda: distort(GOOD[:, :, 0], "glitched", 1), ValueError, "img"),
        (lambda: distort(GOOD[:31], "glitched", 1), ValueError, "img"),
        (lambda: distort(GOOD[:0], "glitched", 1), ValueError, "img"),
        (lambda: distort([[1, 2]], "glitched", 1), TypeError, "img"),
        (lambda: distort(torch.full((3, 40, 40), float("nan")), "glitched", 1), ValueError, "img"),
        (lambda: distort(torch.full((3, 40, 40), float("inf")), "glitched", 1), ValueError, "img"),
        (lambda: distort(torch.full((3, 40, 40), 1.5), "glitched", 1), ValueError, "img"),
        (
            lambda: distort(torch.zeros(3, 40, 40, dtype=torch.uint8), "glitched", 1),
            ValueError,
            "img",
        ),
        (lambda: distort(torch.zeros(1, 40, 40), "glitched", 1), ValueError, "img"),
        (lambda: distort(torch.zeros(0, 3, 40, 40), "glitched", 1), ValueError, "img"),
        (lambda: distort(GOOD, "mosaic", 1), TypeError, "tiles"),
        (lambda: distort(GOOD, "stickers", 1), TypeError, "tiles"),
        (lambda: distort(GOOD, "geometric_shapes", 1, rng="x"), TypeError, "rng"),
        (lambda: distort(GOOD, "geometric_shapes", 1, rng=-1), ValueError, "rng"),
        (lambda: preprocess(GOOD, "mosaic", 9), ValueError, "level"),
        (lambda: corrupt(GOOD, "nope", 1), ValueError, "name"),
        (lambda: glitch(GOOD, 1, seed=1.5), ValueError, "seed"),
        (lambda: glitch(GOOD, 1, seed=-1), ValueError, "seed"),
        (lambda: corrupt(GOOD, "glitched", 1, glitch_seed=None), ValueError, "glitch_seed"),
        (lambda: distort(GOOD, "glitched", 1, glitch_seed=-1), ValueError, "glitch_seed"),
        (lambda: vertical_lines(GOOD, 0), ValueError, "level"),
        (lambda: geometric_shapes(GOOD, 1, rng=object()), TypeError, "rng"),
        (lambda: luminance_checkerboard(GOOD, -1), ValueError, "level"),
        (lambda: stickers(GOOD, 1, tiles=None), TypeError, "tiles"),
        (lambda: LaionC("mosaic", 1), TypeError, "tiles"),
        (lambda: LaionC("mosaic", 7, tiles={}), ValueError, "level"),
    ],
)
def test_distortions_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_mosaic_rejects_size_not_divisible_and_missing_size(tiles):
    with pytest.raises(ValueError, match="multiple"):
        mosaic(np.zeros((66, 64, 3), np.uint8), 1, tiles)
    with pytest.raises(ValueError, match="tiles"):
        mosaic(GOOD, 1, {16: tiles[16]})
    with pytest.raises(TypeError, match="tiles"):
        mosaic(GOOD, 1, np.zeros((3, 4, 4, 3), np.uint8))


@pytest.mark.parametrize(
    ("tiles", "error"),
    [
        (np.zeros((0, 4, 4, 3), np.uint8), ValueError),
        (np.zeros((2, 4, 5, 3), np.uint8), ValueError),
        (np.zeros((2, 4, 4, 4), np.uint8), ValueError),
        (np.zeros((2, 4, 4, 3), np.float32), TypeError),
        (np.zeros((4, 4, 3), np.uint8), ValueError),
    ],
)
def test_tile_library_rejects_bad_tiles(tiles, error):
    with pytest.raises(error, match="tiles"):
        TileLibrary(tiles)


def test_tile_library_nearest_and_builders_reject_bad_input():
    library = TileLibrary(np.zeros((2, 4, 4, 3), np.uint8))
    for colors in (np.zeros((3, 2)), np.full((1, 3), np.nan), np.zeros((0, 3))):
        with pytest.raises(ValueError, match="colors"):
            library.nearest(colors)
    with pytest.raises(ValueError, match="tile_size"):
        TileLibrary.from_images([GOOD], 0)
    with pytest.raises(ValueError, match="crops_per_image"):
        TileLibrary.from_images([GOOD], 4, crops_per_image=-1)
    with pytest.raises(ValueError, match="images"):
        TileLibrary.from_images([], 4)
    with pytest.raises(FileNotFoundError, match="folder"):
        TileLibrary.from_folder("/nonexistent/folder", 4)


@pytest.mark.parametrize(
    ("probs", "error"),
    [
        (np.zeros(1000), ValueError),
        (np.zeros((0, 1000)), ValueError),
        (np.full((2, 1000), np.nan), ValueError),
        (np.zeros((2, 1000), dtype=np.int64), TypeError),
        (np.ones((2, 10)) / 10, ValueError),
        (np.ones((2, 999)) / 999, ValueError),
        (np.full((2, 1000), 0.5), ValueError),  # rows summing to 500: not probabilities
        (np.eye(2, 1000) * 2 - np.eye(2, 1000, 1), ValueError),  # sums 1, a negative entry
    ],
)
def test_aggregate_and_predict_reject_bad_probs(probs, error):
    with pytest.raises(error, match="probs"):
        aggregate(probs)
    with pytest.raises(error, match="probs"):
        predict(probs)


def test_mappings_and_head_reject_bad_input():
    with pytest.raises(ValueError, match="mapping"):
        superclass_matrix("imagenet16")
    with pytest.raises(ValueError, match="mapping"):
        superclass_matrix({"a": [1000]})
    with pytest.raises(TypeError, match="mapping"):
        superclass_matrix({})
    with pytest.raises(TypeError, match="model"):
        SuperclassHead("efficientnet", normalize=None)
    with pytest.raises(ValueError, match="outputs"):
        SuperclassHead(torch.nn.Identity(), normalize=None, outputs="softmax")
    for normalize in ("cifar", ((0, 0), (1, 1, 1)), ((0, 0, 0), (1, 0, 1))):
        with pytest.raises(ValueError, match="normalize"):
            SuperclassHead(torch.nn.Identity(), normalize=normalize)


def test_evaluate_rejects_bad_input(tmp_path):
    model = torch.nn.Identity()
    with pytest.raises(TypeError, match="normalize"):
        evaluate(model, tmp_path)
    with pytest.raises(FileNotFoundError, match="root"):
        evaluate(model, tmp_path / "missing", normalize=None)
    with pytest.raises(ValueError, match="batch_size"):
        evaluate(model, tmp_path, normalize=None, batch_size=0)
    with pytest.raises(ValueError, match="levels"):
        evaluate(model, tmp_path, normalize=None, levels=[0])
    with pytest.raises(ValueError, match="name"):
        evaluate(model, tmp_path, normalize=None, distortions=["fog"])
    with pytest.raises(ValueError, match="outputs"):
        evaluate(model, tmp_path, normalize=None, outputs="log_probs")
    for confidence in (0, 1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="confidence"):
            evaluate(model, tmp_path, normalize=None, confidence=confidence)


def test_build_rejects_bad_input(tmp_path, tiles):
    (tmp_path / "src").mkdir()
    with pytest.raises(FileNotFoundError, match="src"):
        build_dataset(tmp_path / "nope", tmp_path / "out", tiles=tiles)
    with pytest.raises(ValueError, match="src"):
        build_dataset(tmp_path / "src", tmp_path / "out", tiles=tiles)
    with pytest.raises(ValueError, match="shard"):
        build_dataset(tmp_path / "src", tmp_path / "out", tiles=tiles, shard=(2, 2))
    with pytest.raises(ValueError, match="workers"):
        build_dataset(tmp_path / "src", tmp_path / "out", tiles=tiles, workers=0)
    with pytest.raises(ValueError, match="seed"):
        build_dataset(tmp_path / "src", tmp_path / "out", tiles=tiles, seed=-1)
    Image.fromarray(GOOD).save(tmp_path / "src" / "a.png")
    with pytest.raises(TypeError, match="tiles"):
        build_dataset(tmp_path / "src", tmp_path / "out", distortions=["stickers"])
    with pytest.raises(ValueError, match="levels"):
        build_dataset(tmp_path / "src", tmp_path / "out", tiles=tiles, levels=[True])


class _Returns(torch.nn.Module):
    def __init__(self, make):
        super().__init__()
        self.make = make

    def forward(self, x):
        return self.make(len(x))


@pytest.mark.parametrize(
    "model",
    [
        torch.nn.Identity(),
        _Returns(lambda n: torch.zeros(n, 10)),
        _Returns(lambda n: torch.zeros(n, 1000, 1)),
        _Returns(lambda n: torch.full((n, 1000), float("nan"))),
        _Returns(lambda n: torch.full((n, 1000), float("inf"))),
        _Returns(lambda n: [0.0] * 1000),
    ],
)
def test_head_and_evaluate_reject_bad_model_output(model, tmp_path):
    with pytest.raises(ValueError, match="model"):
        SuperclassHead(model, normalize=None)(torch.zeros(2, 3, 8, 8))
    cell = tmp_path / "glitched" / "intensity_level_1" / "cat"
    cell.mkdir(parents=True)
    Image.fromarray(GOOD).save(cell / "a.png")
    with pytest.raises(ValueError, match="model"):
        evaluate(model, tmp_path, normalize=None, distortions="glitched", levels=1)


@pytest.mark.parametrize(
    "counts",
    [{("glitched", 1): (5, 3)}, {("glitched", 1): (0, 0)}, {("glitched", 1): (-1, 2)},
     {("glitched", 1): (1.5, 2)}, {("glitched", 1): 3}],
)  # fmt: skip
def test_results_from_counts_rejects_bad_counts(counts):
    with pytest.raises(ValueError, match="counts"):
        Results.from_counts(counts)


@pytest.mark.parametrize(
    "device", ["tpu9", 3.5] + ([] if torch.cuda.is_available() else ["cuda", "cuda:0"])
)
def test_evaluate_rejects_bad_device(device, tmp_path):
    with pytest.raises(ValueError, match="device"):
        evaluate(torch.nn.Identity(), tmp_path, normalize=None, device=device)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda d: build_tiles(d / "notes.txt"), FileNotFoundError, "images"),
        (lambda d: build_tiles([d / "notes.txt"]), ValueError, "images"),
        (lambda d: build_tiles(GOOD), TypeError, "images"),
        (lambda d: build_tiles([None]), TypeError, "images"),
        (lambda d: build_tiles(d / "empty"), ValueError, "images"),
        (lambda d: save_tiles("x", d / "t.npz"), TypeError, "libraries"),
        (lambda d: save_tiles({}, d / "t.npz"), TypeError, "libraries"),
        (lambda d: load_tiles(d / "notes.txt"), ValueError, "path"),
        (lambda d: load_tiles(d / "other.npz"), ValueError, "path"),
        (lambda d: load_tiles(d / "missing.npz"), FileNotFoundError, "missing"),
    ],
)
def test_tile_functions_reject_bad_input(call, error, match, tmp_path):
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "empty").mkdir()
    np.savez(tmp_path / "other.npz", weights=np.zeros(3))
    with pytest.raises(error, match=match):
        call(tmp_path)


def test_build_rejects_out_inside_src_and_checks_src_first(tmp_path):
    src = tmp_path / "src"
    (src / "cat").mkdir(parents=True)
    Image.fromarray(GOOD).save(src / "cat" / "a.png")
    for out in (src, src / "laionc_out"):
        with pytest.raises(ValueError, match="out"):
            build_dataset(src, out, distortions=["glitched"], levels=[1])
    assert sorted(p.name for p in src.rglob("*")) == ["a.png", "cat"]
    # a missing src is reported as such even when tiles are missing as well
    with pytest.raises(FileNotFoundError, match="src"):
        build_dataset(tmp_path / "nope", tmp_path / "out")
