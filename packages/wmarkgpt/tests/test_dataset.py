"""Builders: a process pool gives the same files as one process (scale-out, spec Sec. 7),
reruns resume, the index is complete; records carry the paper's fields."""

import json

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
        ({"gt_scores": [9.0]}, "`s`"),
        ({"gt_scores": [1.0, 2.0]}, "gt_scores"),
    ],
)
def test_invisible_builder_refuses_bad_input(tmp_path, kwargs, match):
    pytest.importorskip("imwatermark")
    with pytest.raises(ValueError, match=match):
        build_invisible(_covers(1), 1, tmp_path, seed=0, progress=False, **kwargs)


def test_resume_refuses_other_settings(tmp_path):
    build_synthetic(_covers(), _logos(), 3, tmp_path, seed=1, size=40, progress=False)
    with pytest.raises(ValueError, match="other inputs or settings"):
        build_synthetic(_covers(), _logos(), 3, tmp_path, seed=2, size=40, progress=False)
    with pytest.raises(ValueError, match="other inputs or settings"):
        build_synthetic(
            _covers(), _logos(), 3, tmp_path, seed=1, size=40, format="sharegpt", progress=False
        )


def test_sharegpt_records_evaluate_like_llava(tmp_path):
    from wmarkgpt import evaluate

    llava = build_synthetic(_covers(), _logos(), 3, tmp_path / "a", seed=1, size=40, progress=False)
    share = build_synthetic(
        _covers(), _logos(), 3, tmp_path / "b", seed=1, size=40, format="sharegpt", progress=False
    )
    assert evaluate(share, llava).as_dict() == evaluate(llava, llava).as_dict()
