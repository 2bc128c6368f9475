"""Issue 33.4: the published LAION-C accuracies ship with their source, and the comparison
table ranks an evaluated model among them with its interval."""

import pytest
from laion_c import Results, compare_markdown, reference_accuracies
from laion_c.reference import reference_source

# the official README's leaderboard (github.com/FanfeiLi/LAION-C @ 8c6d519), typed by hand
PUBLISHED = {
    "EVA-G-P14-560-M30M-IN22K": 67.5, "EVA02-L-P14-448-MIM-M38M-IN22K": 66.8,
    "ViT-L-P14-224-CLIP-OpenAI-IN12K": 57.8, "ViT-H-P14-336-CLIP-LAION-IN12K": 57.3,
    "Best Human Observer": 55.2, "ConvNeXt-XXL-CLIP-LAION-IN1K": 54.8, "GPT-4o": 54.1,
    "Gemini 1.5 Pro": 50.2, "BEiT-v2-L-P16-224-IN1K": 47.7, "ViT-B-P16-224-AugReg-IN21K": 47.1,
}  # fmt: skip


def test_the_shipped_table_is_the_published_one_with_its_source():
    refs = reference_accuracies()
    assert {r.name: round(100 * r.avg_accuracy, 1) for r in refs} == PUBLISHED
    assert [r.rank for r in refs] == list(range(1, 11))
    assert [r.kind for r in refs if r.kind == "human"] == ["human"]
    assert "8c6d519" in reference_source()
    assert "per-distortion" in reference_source().lower()


def test_a_model_is_ranked_among_the_published_rows_with_its_interval():
    results = Results.from_counts({("mosaic", 1): (49, 100), ("glitched", 1): (49, 100)}, "mine")
    table = compare_markdown(results)
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    names = [line.split("|")[2].strip() for line in lines[2:]]
    assert names.index("**mine (this run)**") == names.index("Gemini 1.5 Pro") + 1
    low, high = results.mean_interval()
    assert f"| 49.0 | [{100 * low:.1f}, {100 * high:.1f}] | this run |" in table
    assert "8c6d519" in table


def test_compare_rejects_other_input():
    with pytest.raises(TypeError, match="results"):
        compare_markdown({("mosaic", 1): 0.5})
