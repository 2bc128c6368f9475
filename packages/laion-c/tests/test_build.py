"""Spec §5.8: the builder writes the same bytes with 1 or 2 workers and after a real kill +
resume (nothing redone); shard union = the full run; parameters are guarded by the manifest."""

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from laion_c import DISTORTIONS, LEVELS, build_dataset, corrupt, save_tiles
from laion_c.build import image_seed
from PIL import Image

NAMES = [
    "mosaic",
    "glitched",
    "vertical_lines",
    "geometric_shapes",
    "stickers",
    "luminance_checkerboard",
]


@pytest.fixture
def src(tmp_path, photos):
    root = tmp_path / "src"
    for k, photo in enumerate(photos * 2):
        folder = root / ("cat" if k % 2 else "fish") / ("deep" if k > 3 else "")
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(photo[::2, ::2]).save(folder / f"img{k}.png")
    return root


def files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.JPEG"))}


def test_layout_and_names(src, tmp_path, tiles):
    out = tmp_path / "out"
    stats = build_dataset(src, out, tiles=tiles, distortions=["mosaic"], levels=[2])
    assert stats == {"images": 6, "written": 6, "skipped": 0}
    assert (out / "mosaic" / "intensity_level_2" / "cat" / "deep" / "img5_mosaic_2.JPEG").exists()
    with Image.open(out / "mosaic" / "intensity_level_2" / "fish" / "img0_mosaic_2.JPEG") as im:
        assert im.size == (224, 224)
        assert im.format == "JPEG"


def test_same_bytes_with_one_and_two_workers(src, tmp_path, tiles):
    build_dataset(src, tmp_path / "one", tiles=tiles, levels=[1, 5], workers=1, seed=3)
    build_dataset(src, tmp_path / "two", tiles=tiles, levels=[1, 5], workers=2, seed=3)
    one, two = files(tmp_path / "one"), files(tmp_path / "two")
    assert len(one) == 6 * 6 * 2
    assert one == two


def test_shard_union_equals_full_run(src, tmp_path, tiles):
    build_dataset(src, tmp_path / "full", tiles=tiles, levels=[3], seed=1)
    for i in range(3):
        build_dataset(src, tmp_path / "sharded", tiles=tiles, levels=[3], seed=1, shard=(i, 3))
    assert files(tmp_path / "full") == files(tmp_path / "sharded")


@pytest.mark.slow
def test_kill_and_resume_loses_and_redoes_nothing(src, tmp_path, tiles):
    tiles_path = save_tiles(tiles, tmp_path / "tiles.npz")
    build_dataset(src, tmp_path / "reference", tiles=tiles, seed=2)
    out = tmp_path / "killed"
    command = [
        sys.executable, "-m", "laion_c.cli", "build", str(src), str(out),
        "--tiles", str(tiles_path), "--seed", "2",
    ]  # fmt: skip
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(list(out.rglob("*.JPEG"))) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    done = len(files(out))
    assert 0 < done < 6 * 30
    stats = build_dataset(src, out, tiles=tiles, seed=2)
    assert stats["written"] == 6 * 30 - done
    assert stats["skipped"] == done
    assert files(out) == files(tmp_path / "reference")


def test_other_parameters_need_overwrite(src, tmp_path, tiles):
    out = tmp_path / "out"
    build_dataset(src, out, tiles=tiles, distortions=["glitched"], levels=[1], seed=0)
    with pytest.raises(RuntimeError, match="overwrite"):
        build_dataset(src, out, tiles=tiles, distortions=["glitched"], levels=[1], seed=1)
    stats = build_dataset(
        src, out, tiles=tiles, distortions=["glitched"], levels=[1], seed=1, overwrite=True
    )
    assert stats["written"] == 6


def test_seeds_differ_per_image_and_cell(src, tmp_path, tiles):
    out = tmp_path / "out"
    build_dataset(src, out, tiles=tiles, distortions=["luminance_checkerboard"], levels=[5], seed=0)
    a = np.asarray(Image.open(next(out.rglob("img0_*.JPEG"))))
    build_dataset(
        src,
        tmp_path / "other",
        tiles=tiles,
        distortions=["luminance_checkerboard"],
        levels=[5],
        seed=9,
    )
    b = np.asarray(Image.open(next((tmp_path / "other").rglob("img0_*.JPEG"))))
    assert (a != b).any()


def test_bytes_equal_the_jpeg_of_corrupt_for_every_cell(src, tmp_path, tiles):
    """The builder preprocesses once per size; each file must still be corrupt()'s image,
    encoded with the official JPEG settings (q=100, no chroma subsampling)."""
    out = tmp_path / "out"
    build_dataset(src, out, tiles=tiles, seed=4)
    rel = Path("fish") / "img0.png"
    with Image.open(src / rel) as image:
        photo = image.convert("RGB")
    for name in DISTORTIONS:
        for level in LEVELS:
            rng = np.random.default_rng(image_seed(4, rel, name, level))
            buffer = io.BytesIO()
            corrupt(photo, name, level, rng=rng, tiles=tiles).save(
                buffer, format="JPEG", quality=100, subsampling=0
            )
            path = out / name / f"intensity_level_{level}" / "fish" / f"img0_{name}_{level}.JPEG"
            assert path.read_bytes() == buffer.getvalue(), (name, level)


@pytest.mark.parametrize("workers", [1, 2])
def test_unreadable_source_is_named(src, tmp_path, workers):
    (src / "cat" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"broken\.png"):
        build_dataset(src, tmp_path / "out", distortions=["glitched"], levels=[1], workers=workers)


def test_sources_sharing_a_stem_are_refused_before_anything_is_written(tmp_path, photos):
    """Issue 34.2: ``cat/a.jpg`` and ``cat/a.png`` map to one output name; the build lists every
    such group (also from another shard) and writes nothing, while one stem in two folders is
    fine."""
    src = tmp_path / "src"
    for rel in ("cat/a.jpg", "cat/a.png", "fish/b.png", "fish/b.bmp", "fish/a.png", "dog/c.png"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(photos[0][::4, ::4]).save(src / rel)
    for shard in [(0, 1), (1, 2)]:
        with pytest.raises(ValueError, match="2 group") as info:
            build_dataset(src, tmp_path / "out", distortions="glitched", levels=1, shard=shard)
        message = str(info.value)
        assert "cat/a.jpg and cat/a.png" in message
        assert "fish/b.bmp and fish/b.png" in message
        assert "`src`" in message
        assert not (tmp_path / "out").exists()
    for rel in ("cat/a.png", "fish/b.bmp"):
        (src / rel).unlink()
    stats = build_dataset(src, tmp_path / "out", distortions="glitched", levels=1)
    # cat/a, fish/a, fish/b, dog/c: every source is one distinct output file
    assert stats == {"images": 4, "written": 4, "skipped": 0}
    assert len(list((tmp_path / "out").rglob("*.JPEG"))) == 4
