"""Builders: a process pool gives the same files as one process (scale-out, spec Sec. 7),
reruns resume, the index is complete; records carry the paper's fields."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from wmarkgpt import Logo, build_invisible, build_position, build_synthetic, load_coco_objects


def _covers(n=3, side=48):
    rng = np.random.default_rng(0)
    return [
        (f"c{i}", rng.integers(30, 220, (side + 7 * i, side, 3), dtype=np.uint8)) for i in range(n)
    ]


def _logos():
    rng = np.random.default_rng(1)
    mask = np.zeros((12, 20), bool)
    mask[2:10, 1:19] = True
    return [
        Logo(rng.integers(0, 256, (12, 20, 3), dtype=np.uint8), mask, "block"),
        Logo(np.full((9, 9, 3), 250, np.uint8), np.eye(9, dtype=bool), "diag"),
    ]


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted((folder / "images").iterdir())}


def test_process_pool_equals_one_process_and_resumes(tmp_path):
    one = build_synthetic(
        _covers(), _logos(), 12, tmp_path / "one", seed=5, size=40, progress=False
    )
    two = build_synthetic(
        _covers(), _logos(), 12, tmp_path / "two", seed=5, size=40, workers=2, progress=False
    )
    assert one == two
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    # resume: drop two items, rerun: only those are rebuilt and the index is whole again
    for k in (3, 7):
        (tmp_path / "two" / "records" / f"{k:06d}.json").unlink()
    stamp = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "two" / "records").iterdir()}
    again = build_synthetic(
        _covers(), _logos(), 12, tmp_path / "two", seed=5, size=40, workers=2, progress=False
    )
    assert again == one
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "two" / "records").iterdir()}
    assert all(after[name] == t for name, t in stamp.items())
    index = json.loads((tmp_path / "two" / "index.json").read_text())
    assert index == one
    assert not [p for p in (tmp_path / "two").rglob(".*") if p.is_file()]  # no temporary files left


def test_synthetic_records_and_images(tmp_path):
    records = build_synthetic(
        _covers(),
        _logos(),
        6,
        tmp_path,
        seed=0,
        size=40,
        objects={"c0": [("cat", (0, 0, 20, 20))]},
        progress=False,
    )
    for r in records:
        w = r["weight"]
        assert r["image"].endswith(f"_{w}.png")
        assert 0 <= w <= 0.25
        assert r["gt_score"] == round(5 - 20 * w, 2)
        assert r["conversations"][1]["value"].endswith(f"visibility is: {r['visibility']}.")
        img = np.asarray(Image.open(tmp_path / r["image"]))
        assert img.shape == (40, 40, 3)
        x0, y0, x1, y1 = r["wm_box"]
        assert 0 <= x0 < x1 <= 40
        assert 0 <= y0 < y1 <= 40


def test_position_records(tmp_path):
    records = build_position(
        _covers(1),
        _logos(),
        3,
        tmp_path,
        seed=0,
        size=40,
        objects={"c0": [("cat", (0, 0, 20, 20)), ("dog", (20, 20, 40, 40))]},
        progress=False,
    )
    assert len(records) == 6  # one question per object per image
    assert all(
        r["conversations"][1]["value"]
        in (
            "Top-left",
            "Top-right",
            "Bottom-left",
            "Bottom-right",
            "Center",
            "Middle-left",
            "Middle-right",
            "Middle-top",
            "Middle-bottom",
        )
        for r in records
    )


def test_coco_objects_join_by_image_id(tmp_path):
    coco = {
        "images": [
            {"id": 7, "file_name": "a.jpg", "width": 448, "height": 224},
            {"id": 3, "file_name": "b.jpg", "width": 100, "height": 100},
        ],
        "annotations": [
            {"image_id": 3, "bbox": [10, 10, 50, 20], "category_id": 1},
            {"image_id": 7, "bbox": [0, 0, 448, 112], "category_id": 2},
        ],
        "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "bus"}],
    }
    path = tmp_path / "coco.json"
    path.write_text(json.dumps(coco))
    objs = load_coco_objects(path, 224)
    assert objs["a.jpg"] == [("bus", (0.0, 0.0, 224.0, 112.0))]
    ((name, box),) = objs["b.jpg"]
    assert name == "cat"
    assert box == pytest.approx((22.4, 22.4, 134.4, 67.2), abs=1e-12)


def test_invisible_builder(tmp_path):
    pytest.importorskip("imwatermark")
    from skimage import data

    records = build_invisible(
        [("astro", data.astronaut()[:256, :256])],
        1,
        tmp_path,
        seed=0,
        methods=("dwtDctSvd",),
        gt_scores=[4.2],
        progress=False,
    )
    (r,) = records
    assert r["bit_accuracy"]["none"] == 1.0
    assert r["psnr"] > 30
    assert r["visibility"] == "invisible"
    assert r["gt_score"] == 4.2
    answer = r["conversations"][1]["value"]
    assert "invisibly" in answer
    assert "oriented" not in answer  # no logo: no orientation or edge to describe


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"covers": []}, "covers"),
        ({"logos": []}, "logos"),
        ({"n": 0}, "n"),
        ({"workers": 0}, "workers"),
        ({"weight_range": (0.3, 0.1)}, "weight_range"),
        ({"format": "alpaca"}, "format"),
        ({"executor": "dask"}, "executor"),
        ({"covers": [("c", np.zeros((8, 8), np.uint8))]}, "covers"),
        ({"covers": ["/no/such/file.png"]}, "covers"),
        ({"size": None, "covers": [("c", np.zeros((8, 8, 3), np.uint8))]}, "larger"),
    ],
)
def test_builders_refuse_bad_input(tmp_path, kwargs, match):
    args = {"covers": _covers(1), "logos": _logos(), "n": 2, "size": 40, **kwargs}
    with pytest.raises(ValueError, match=match):
        build_synthetic(
            args.pop("covers"),
            args.pop("logos"),
            args.pop("n"),
            tmp_path,
            seed=0,
            progress=False,
            **args,
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"methods": ("lsb",)}, "methods"),
        ({"attacks": ("blur",)}, "attacks"),
        ({"gt_scores": [9.0]}, r"`gt_scores`\[0\]: must be in \[0, 5\]"),
        ({"gt_scores": [float("nan")]}, r"`gt_scores`\[0\]: must not be NaN"),
        ({"methods": "dwtDctSvd"}, "not a str"),
        ({"gt_scores": [1.0, 2.0]}, "gt_scores"),
    ],
)
def test_invisible_builder_refuses_bad_input(tmp_path, kwargs, match):
    pytest.importorskip("imwatermark")
    with pytest.raises(ValueError, match=match):
        build_invisible(_covers(1), 1, tmp_path, seed=0, progress=False, **kwargs)


def test_invisible_builder_names_a_too_small_cover_file(tmp_path):
    pytest.importorskip("imwatermark")
    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(tmp_path / "small.png")
    with pytest.raises(ValueError, match=r"small\.png"):
        build_invisible([tmp_path / "small.png"], 1, tmp_path / "o", seed=0, progress=False)


def test_resume_refuses_other_settings(tmp_path):
    build_synthetic(_covers(), _logos(), 3, tmp_path, seed=1, size=40, progress=False)
    with pytest.raises(ValueError, match=r"other inputs or settings \(differs in: seed"):
        build_synthetic(_covers(), _logos(), 3, tmp_path, seed=2, size=40, progress=False)
    with pytest.raises(ValueError, match=r"other inputs or settings \(differs in: format"):
        build_synthetic(
            _covers(), _logos(), 3, tmp_path, seed=1, size=40, format="sharegpt", progress=False
        )


def test_objects_outside_the_cover_and_rounded_away_weights_are_reported(tmp_path):
    objects = {"c0": [("big", (0, 0, 1000, 1000))]}
    with pytest.raises(ValueError, match="outside the 40x40 cover 'c0'"):
        build_synthetic(
            _covers(), _logos(), 1, tmp_path / "a", seed=0, size=40, objects=objects, progress=False
        )
    with pytest.warns(UserWarning, match="no watermark"):
        build_synthetic(
            _covers(),
            _logos(),
            1,
            tmp_path / "b",
            seed=0,
            size=40,
            weight_range=(0.001, 0.004),
            progress=False,
        )


def test_resume_extends_n_and_refuses_a_smaller_n(tmp_path):
    build_synthetic(_covers(), _logos(), 3, tmp_path / "a", seed=1, size=40, progress=False)
    more = build_synthetic(_covers(), _logos(), 5, tmp_path / "a", seed=1, size=40, progress=False)
    direct = build_synthetic(
        _covers(), _logos(), 5, tmp_path / "b", seed=1, size=40, progress=False
    )
    assert more == direct
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    with pytest.raises(ValueError, match="n = 5 there, 4 now"):
        build_synthetic(_covers(), _logos(), 4, tmp_path / "a", seed=1, size=40, progress=False)


def test_sharegpt_records_evaluate_like_llava(tmp_path):
    from wmarkgpt import evaluate

    llava = build_synthetic(_covers(), _logos(), 3, tmp_path / "a", seed=1, size=40, progress=False)
    share = build_synthetic(
        _covers(), _logos(), 3, tmp_path / "b", seed=1, size=40, format="sharegpt", progress=False
    )
    assert evaluate(share, llava).as_dict() == evaluate(llava, llava).as_dict()


# --- trial 21: flips, COCO sizes, resume checks, 16-bit covers, COCO errors, cancelling ---


def test_augment_flips_the_object_boxes_with_the_cover(tmp_path):
    cover = np.full((48, 48, 3), 40, np.uint8)
    cover[:, :10] = 250  # a bright object on the left
    objects = {"c": [("stripe", (0, 0, 10, 48))]}
    logo = Logo(np.full((6, 6, 3), 128, np.uint8), np.ones((6, 6), bool), "grey")
    records = build_position(
        [("c", cover)],
        [logo],
        6,
        tmp_path,
        seed=0,
        size=None,
        objects=objects,
        augment=True,
        weight_range=(0, 0),
        progress=False,
    )
    flips = set()
    for r in records:
        bright = np.asarray(Image.open(tmp_path / r["image"]))[..., 0].mean(0) > 200
        cols = np.flatnonzero(bright)
        ((_, (x0, _, x1, _)),) = r["objects"]
        assert (x0, x1) == (cols.min(), cols.max() + 1)
        flips.add(x0 > 0)
    assert flips == {True, False}  # both cases met


def _coco(tmp_path, width=200, height=100):
    coco = {
        "images": [
            {"id": 1, "file_name": "big.png", "width": width, "height": height},
            {"id": 2, "file_name": "small.png", "width": width, "height": height},
        ],
        "annotations": [
            {
                "id": 5,
                "image_id": i,
                "category_id": 1,
                "bbox": [0.25 * width, 0.25 * height, 0.5 * width, 0.5 * height],
            }
            for i in (1, 2)
        ],
        "categories": [{"id": 1, "name": "thing"}],
    }
    path = tmp_path / "coco.json"
    path.write_text(json.dumps(coco))
    return path, coco


def test_coco_boxes_follow_each_covers_own_size_and_objects_take_file_names(tmp_path):
    (tmp_path / "covers").mkdir()
    rng = np.random.default_rng(0)
    paths = []
    for name, (h, w) in (("big", (80, 120)), ("small", (40, 48))):
        paths.append(tmp_path / "covers" / f"{name}.png")
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(paths[-1])
    coco, _ = _coco(tmp_path)
    logo = Logo(np.full((6, 6, 3), 128, np.uint8), np.ones((6, 6), bool), "grey")
    records = build_synthetic(
        paths, [logo], 2, tmp_path / "a", seed=0, size=None, coco_json=coco, progress=False
    )
    assert records[0]["objects"] == [["thing", [30.0, 20.0, 90.0, 60.0]]]
    assert records[1]["objects"] == [["thing", [12.0, 10.0, 36.0, 30.0]]]
    assert load_coco_objects(coco, size=None)["big.png"] == [("thing", (50.0, 25.0, 150.0, 75.0))]
    # load_coco_objects' keys (file names) are usable as `objects=`
    objs = load_coco_objects(coco, 32)
    again = build_synthetic(
        paths, [logo], 2, tmp_path / "b", seed=0, size=32, objects=objs, progress=False
    )
    assert again[0]["objects"] == [["thing", [8.0, 8.0, 24.0, 24.0]]]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda c: c["annotations"][0].update(category_id=99), "category_id 99"),
        (lambda c: c["annotations"][0].update(image_id=42), "image_id 42"),
        (lambda c: c["annotations"][0].update(bbox=[float("nan"), 1, 2, 3]), "non-finite"),
        (lambda c: c["images"][0].update(width=0), "size"),
    ],
)
def test_coco_input_errors_are_clear(tmp_path, change, match):
    path, coco = _coco(tmp_path)
    change(coco)
    path.write_text(json.dumps(coco))
    with pytest.raises(ValueError, match=match):
        load_coco_objects(path)


def test_coco_size_must_be_positive(tmp_path):
    path, _ = _coco(tmp_path)
    with pytest.raises(ValueError, match="size"):
        load_coco_objects(path, size=0)


def test_resume_remakes_missing_truncated_and_corrupt_items(tmp_path):
    records = build_synthetic(_covers(), _logos(), 4, tmp_path, seed=3, size=40, progress=False)
    before = _files(tmp_path)
    (tmp_path / records[0]["image"]).unlink()
    (tmp_path / records[1]["image"]).write_bytes(before[Path(records[1]["image"]).name][:100])
    (tmp_path / "records" / "000002.json").write_text('{"x":')
    with pytest.warns(UserWarning, match="made again") as caught:
        again = build_synthetic(_covers(), _logos(), 4, tmp_path, seed=3, size=40, progress=False)
    text = " ".join(str(w.message) for w in caught)
    assert "000002.json is corrupt" in text
    assert records[0]["image"] in text
    assert again == records
    assert _files(tmp_path) == before
    assert json.loads((tmp_path / "index.json").read_text()) == records


def test_resume_refuses_a_changed_cover_file_and_names_a_corrupt_stamp(tmp_path):
    path = tmp_path / "c.png"
    Image.fromarray(np.full((40, 40, 3), 90, np.uint8)).save(path)
    build_synthetic([path], _logos(), 2, tmp_path / "o", seed=0, size=32, progress=False)
    Image.fromarray(np.full((40, 40, 3), 200, np.uint8)).save(path)  # same path, new content
    with pytest.raises(ValueError, match="other inputs"):
        build_synthetic([path], _logos(), 2, tmp_path / "o", seed=0, size=32, progress=False)
    (tmp_path / "o" / "build.json").write_text("{")
    with pytest.raises(ValueError, match=r"build\.json is corrupt"):
        build_synthetic([path], _logos(), 2, tmp_path / "o", seed=0, size=32, progress=False)


def test_16_bit_covers_are_scaled_and_32_bit_refused(tmp_path):
    gray = np.linspace(0, 65535, 48 * 40).reshape(40, 48).astype(np.uint16)
    Image.fromarray(gray).save(tmp_path / "g16.png")
    assert Image.open(tmp_path / "g16.png").mode.startswith("I;16")
    logo = Logo(np.full((4, 4, 3), 128, np.uint8), np.ones((4, 4), bool), "grey")
    (r,) = build_synthetic(
        [tmp_path / "g16.png"],
        [logo],
        1,
        tmp_path / "o",
        seed=0,
        size=None,
        weight_range=(0, 0),
        progress=False,
    )
    stego = np.asarray(Image.open(tmp_path / "o" / r["image"]))
    assert abs(stego.mean() - (gray >> 8).mean()) < 0.5
    (tmp_path / "t.png").write_text("not an image")
    with pytest.raises(ValueError, match=r"t\.png is not a readable image"):
        build_synthetic([tmp_path / "t.png"], [logo], 1, tmp_path / "q", seed=0, progress=False)
    Image.fromarray(gray.astype(np.float32)).save(tmp_path / "f.tif")
    with pytest.raises(ValueError, match="32-bit"):
        build_synthetic(
            [tmp_path / "f.tif"], [logo], 1, tmp_path / "p", seed=0, size=None, progress=False
        )


def _fail_first(path, objects, wm_box, level):
    if "-000000_" in Path(path).name:
        raise RuntimeError("boom")
    import time

    time.sleep(0.05)
    return "text"


def test_a_failed_item_cancels_the_pending_ones(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        build_synthetic(
            _covers(),
            _logos(),
            40,
            tmp_path,
            seed=0,
            size=32,
            workers=2,
            describer=_fail_first,
            progress=False,
        )
    assert len(list((tmp_path / "images").iterdir())) < 20
