"""Level bands at their exact boundaries (spec Sec. 5, test 8) and the score formula."""

import pytest
from wmarkgpt import LEVEL_WEIGHTS, VISIBILITY_LEVELS, score_to_level, weight_to_score


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (0, "obvious"),
        (0.999, "obvious"),
        (1, "visible"),
        (1.999, "visible"),
        (2, "moderate"),
        (3, "faint"),
        (3.999, "faint"),
        (4, "invisible"),
        (4.5, "invisible"),
        (5, "invisible"),
    ],
)
def test_level_bands_at_exact_boundaries(score, level):
    # spec Sec. 2: [0,1) obvious, [1,2) visible, [2,3) moderate, [3,4) faint, [4,5] invisible
    assert score_to_level(score) == level


@pytest.mark.parametrize("w", [0.0, 0.01, 0.05, 0.12, 0.13, 0.2, 0.25])
def test_weight_to_score_is_the_official_formula(w):
    # official emb_watermark.py: score = round((5 - 20 * weight), 2)
    assert weight_to_score(w) == round(5 - 20 * w, 2)


def test_score_file_names_match_official_synthetic_labels():
    # the official Q-score file names carry w: "<cover>_<w>.png"; its gt_score is 5 - 20 w
    import gzip
    import json

    from wmarkgpt import official_file

    with gzip.open(official_file("qscore-synthetic"), "rt") as f:
        data = json.load(f)
    for name, record in list(data.items())[:500]:
        w = float(name.rsplit("_", 1)[1][: -len(".png")])
        assert record["gt_score"] == pytest.approx(weight_to_score(w), abs=1e-9)


def test_level_constants():
    assert VISIBILITY_LEVELS == ("invisible", "faint", "moderate", "visible", "obvious")
    assert LEVEL_WEIGHTS == (5, 4, 3, 2, 1)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: score_to_level(-0.01), ValueError, "`s`"),
        (lambda: score_to_level(5.01), ValueError, "`s`"),
        (lambda: score_to_level(float("nan")), ValueError, "`s`"),
        (lambda: score_to_level("3"), TypeError, "`s`"),
        (lambda: weight_to_score(1.5), ValueError, "`w`"),
        (lambda: weight_to_score(-0.1), ValueError, "`w`"),
        (lambda: weight_to_score(True), TypeError, "`w`"),
    ],
)
def test_levels_refuse_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
