"""The reproduce turns measured accuracies into the report with the fixed pass rules."""

import numpy as np
import pytest
import torch
from laion_c import DISTORTIONS, LEVELS, reproduce
from laion_c.evaluate import Results


def fake_measure(accuracy_of_level, clean, tiles):
    """`measure` replaced: 100 images per cell at the given accuracies; clean (correct, total)."""

    def measure(out, *, full=False, root=None):
        counts = {
            (n, k): (round(100 * accuracy_of_level(k)), 100) for n in DISTORTIONS for k in LEVELS
        }
        return Results.from_counts(counts), clean, {"data": "fake"}, tiles

    return measure


def test_collapse_is_reproduced_when_accuracy_collapses(monkeypatch, tmp_path, tiles):
    monkeypatch.setattr(reproduce, "measure", fake_measure(lambda k: 0.5 / k, (9, 9), tiles))
    report = reproduce.run(out=tmp_path)
    verdicts = [c.verdict.value for c in report.claims]
    assert verdicts == ["reproduced"] * 4
    assert (tmp_path / "laion-c_levels.png").stat().st_size > 0
    assert (tmp_path / "laion-c_grid.png").stat().st_size > 0
    md, _js = report.write(tmp_path)
    text = md.read_text()
    assert "| level mean |" in text
    # 9 of 9 clean: Wilson lower bound n / (n + z^2) (closed form at p = 1)
    z2 = 1.959963984540054**2
    assert f"1.000 [{9 / (9 + z2):.3f}, 1.000]" in report.claims[0].measured_value
    assert "| mosaic | 50.0 [" in text  # cells carry their intervals
    assert "| Best Human Observer | human | 55.2 |" in text


def test_no_collapse_is_reported_honestly(monkeypatch, tmp_path, tiles):
    monkeypatch.setattr(
        reproduce, "measure", fake_measure(lambda k: 0.3 + 0.1 * k, (90, 100), tiles)
    )
    report = reproduce.run(out=tmp_path)
    verdicts = {c.claim: c.verdict.value for c in report.claims}
    expected = ["reproduced", "not reproduced at this scale", "not reproduced at this scale"]
    # a slow rise stays within the monotonicity slack, so that rule alone passes
    assert list(verdicts.values()) == [*expected, "reproduced"]
    high = np.mean([0.7, 0.8])
    assert f"{high:.3f}" in report.claims[1].measured_value


def test_missing_opencv_doc_names_the_package(monkeypatch, tmp_path):
    from laion_c import photos

    monkeypatch.setenv(photos.OPENCV_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match="opencv-doc"):
        photos.load_photo("data/baboon.jpg")


def test_eval_photos_are_nine_in_six_superclasses():
    from laion_c import SUPERCLASSES, photos

    assert len(photos.EVAL_PHOTOS) == 9
    assert {name for name, _ in photos.EVAL_PHOTOS} <= set(SUPERCLASSES)
    assert not {s for _, s in photos.EVAL_PHOTOS} & set(photos.TILE_PHOTOS)


def test_root_run_describes_the_folder_and_builds_no_tiles(monkeypatch, tmp_path):
    """Issue 34.3: ``reproduce --root DIR`` scores DIR; the report names DIR and its image
    count (50 per cell x 30 cells = 1500), never "9 photos (this run)", pooled seeds or the
    library's builder, and no tiles are built."""
    import matplotlib.axes
    from laion_c import models

    counts = {(n, k): (10, 50) for n in DISTORTIONS for k in LEVELS}
    root = tmp_path / "LAION-C"

    def no_tiles(work):
        raise AssertionError("tiles built for a --root run")

    def fake_evaluate(model, folder, **kwargs):
        assert folder == root
        return Results.from_counts(counts, "efficientnet-lite0")

    monkeypatch.setattr(reproduce, "_tiles", no_tiles)
    monkeypatch.setattr(reproduce, "_sources", lambda work: work)
    monkeypatch.setattr(reproduce, "_clean_accuracy", lambda head, src: (9, 9))
    monkeypatch.setattr(reproduce, "evaluate", fake_evaluate)
    monkeypatch.setattr(models, "efficientnet_lite0", lambda: torch.nn.Identity())
    labels = []
    original = matplotlib.axes.Axes.set_ylabel
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "set_ylabel",
        lambda self, label, *a, **k: labels.append(label) or original(self, label, *a, **k),
    )
    report = reproduce.run(out=tmp_path / "reports", root=root)
    md, _js = report.write(tmp_path / "reports")
    text = md.read_text()
    assert "1500 images scored in 30 cells" in text
    assert "EfficientNet-Lite0, LAION-C, 1500 images scored in 30 cells (this run)" in text
    for wrong in ("9 photos (this run)", "Nine real photos", "seeds of the same", "tiles per"):
        assert wrong not in text
    assert "9 photos" not in " ".join(c.note for c in report.claims if c.note)
    assert labels == ["superclass accuracy (LAION-C, 1500 images scored in 30 cells)"]
    assert report.figures == ["laion-c_levels.png"]
    assert not (tmp_path / "reports" / "laion-c_grid.png").exists()
