"""Average lagging (Ma et al. 2019) and corpus BLEU (sacrebleu) (spec test 8)."""

import pytest
from monoattn_transducer import average_lagging, corpus_bleu


def test_average_lagging_spec_example():
    # tau = 3 (d_3 = 4 >= |X|): ((2-0) + (3-1) + (4-2)) / 3 = 2
    assert average_lagging([2, 3, 4, 4], 4, 4) == 2.0


def test_average_lagging_wait_k_closed_form():
    # wait-k with |X| = |Y| = n: d_i = min(k + i - 1, n) -> AL = k (Ma et al. 2019, Sec. 4)
    for k in (1, 2, 3):
        n = 10
        d = [min(k + i, n) for i in range(n)]
        assert average_lagging(d, n, n) == pytest.approx(k)


@pytest.mark.parametrize(
    ("args", "name"),
    [(([], 4, 4), "delays"), (([3, 2], 4, 2), "delays"), (([1, 2], 0, 2), "source_length"),
     (([1, 2], 4, 0), "target_length"), (([-1, 2], 4, 2), "delays")],
)  # fmt: skip
def test_average_lagging_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        average_lagging(*args)


def test_corpus_bleu_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    hyp = ["ein und zwanzig", "sieben und neunzig", "drei", "vier und vierzig"]
    ref = ["ein und zwanzig", "sieben und achtzig", "drei", "vier und vierzig"]
    bleu = sacrebleu.metrics.BLEU(tokenize="none", effective_order=True)
    want = bleu.corpus_score(hyp, [ref]).score
    assert corpus_bleu(hyp, ref) == pytest.approx(want)
    assert corpus_bleu(ref, ref) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="hypotheses"):
        corpus_bleu(hyp, ref[:2])


@pytest.mark.parametrize(
    ("args", "exc", "name"),
    [(("12", 3, 2), TypeError, "delays"), ((b"12", 3, 2), TypeError, "delays"),
     ((["a", "b"], 3, 2), TypeError, "delays"), (([1, float("inf")], 3, 2), ValueError, "delays"),
     (([1, 2], float("inf"), 2), ValueError, "source_length"),
     (([1, float("nan")], 3, 2), ValueError, "delays")],
)  # fmt: skip
def test_average_lagging_rejects_strings_and_non_finite(args, exc, name):
    # trial 23 L5: a str was read as its characters, an infinite source length gave nan
    with pytest.raises(exc, match=name):
        average_lagging(*args)
