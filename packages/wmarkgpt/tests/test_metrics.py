"""Metrics against their peers: NLTK BLEU, rouge-score, the `rouge` 1.0.1 package (pltrdy) on the
official answers, scipy (spec Sec. 5, tests 4-6), and the official per-item scores."""

import gzip
import json
import math
import sys
import warnings

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from wmarkgpt import (
    OFFICIAL_MODELS,
    VISIBILITY_LEVELS,
    bleu,
    clean_text,
    evaluate,
    evaluate_qscore,
    expected_score,
    extract_visibility,
    level_token_ids,
    official_file,
    official_strip,
    plcc,
    position_accuracy,
    rouge_l,
    srcc,
    visibility_accuracy,
)


def _load(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def pairs():
    """All 500 x 7 (answer, reference) pairs of WQA-Real, cleaned as the official code does."""
    gt = _load(official_file("test"))
    refs = {g["image"]: official_strip(g["conversations"][1]["value"]) for g in gt}
    out = []
    for model in OFFICIAL_MODELS:
        for p in _load(official_file("answers", model)):
            out.append(
                (
                    model,
                    p["image"],
                    official_strip(p["conversations"][-1]["value"]),
                    refs[p["image"]],
                )
            )
    return out


HYPS = [
    "the watermark is faint and lies near the edge of the cat",
    "a visible logo sits on the top left corner",
    "the the the watermark",
    "watermark",
]
REFS = [
    "the watermark is faint and sits near the edge of the cat",
    "an obvious logo is on the top left corner of the image",
    "the watermark is invisible",
    "the watermark is obvious",
]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("smoothing", [None, "method1", "method4", "method7"])
def test_bleu_equals_nltk_sentence_and_corpus(n, smoothing):
    w = (1 / n,) * n
    sf = None if smoothing is None else getattr(SmoothingFunction(), smoothing)
    toks_h = [h.split() for h in HYPS]
    toks_r = [[r.split()] for r in REFS]
    with warnings.catch_warnings():  # NLTK warns on zero n-gram counts
        warnings.simplefilter("ignore", UserWarning)
        expected = np.mean(
            [
                sentence_bleu(r, h, weights=w, smoothing_function=sf)
                for r, h in zip(toks_r, toks_h, strict=True)
            ]
        )
    assert abs(bleu(HYPS, REFS, n=n, smoothing=smoothing) - expected) <= 1e-12
    expected_c = corpus_bleu(toks_r, toks_h, weights=w, smoothing_function=sf)
    got_c = bleu(HYPS, REFS, n=n, level="corpus", smoothing=smoothing)
    assert abs(got_c - expected_c) <= 1e-12


def _clipped_precision(h, r, k):
    from collections import Counter

    hc = Counter(tuple(h[i : i + k]) for i in range(len(h) - k + 1))
    rc = Counter(tuple(r[i : i + k]) for i in range(len(r) - k + 1))
    return sum(min(c, rc[g]) for g, c in hc.items()) / max(1, sum(hc.values()))


def test_bleu2_is_not_bleu1_squared():
    # closed form (Papineni et al. 2002): BLEU-2 = BP sqrt(p1 p2), BP = exp(1 - r/c) for c < r;
    # the official "BLEU-2" = corpus_bleu(weights=(2,)) = BP p1^2 (spec Sec. 9)
    h, r = HYPS[1].split(), REFS[1].split()
    bp = math.exp(1 - len(r) / len(h)) if len(h) < len(r) else 1.0
    p1, p2 = _clipped_precision(h, r, 1), _clipped_precision(h, r, 2)
    assert abs(bleu([HYPS[1]], [REFS[1]], n=2) - bp * math.sqrt(p1 * p2)) <= 1e-12
    official = corpus_bleu([[r]], [h], weights=(2,))
    assert abs(official - bp * p1**2) <= 1e-12
    assert abs(bleu([HYPS[1]], [REFS[1]], n=2) - official) > 0.05
    assert abs(bleu([HYPS[1]], [REFS[1]], n=2) - bleu([HYPS[1]], [REFS[1]], n=1) ** 2) > 0.05


def test_rouge_l_standard_equals_rouge_score():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for h, r in [*zip(HYPS, REFS, strict=True), ("", "a b"), ("Hello, World!", "hello world")]:
        assert abs(rouge_l(h, r) - scorer.score(r, h)["rougeL"].fmeasure) <= 1e-12


def test_rouge_l_standard_equals_rouge_score_on_real_answers(pairs):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for _, _, h, r in pairs[::25]:
        assert abs(rouge_l(h, r) - scorer.score(r, h)["rougeL"].fmeasure) <= 1e-12


def test_rouge_l_wmarkgpt_equals_rouge_package_on_all_official_pairs(pairs):
    from rouge import Rouge

    sys.setrecursionlimit(10000)
    peer = Rouge(metrics=["rouge-l"], stats=["f"])
    for model, image, h, r in pairs:
        expected = peer.get_scores(h, r)[0]["rouge-l"]["f"]
        assert abs(rouge_l(h, r, "wmarkgpt") - expected) <= 1e-12, (model, image)


def test_rouge_l_wmarkgpt_needs_no_recursion_on_3000_tokens():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    h = " ".join(rng.choice(words, 3000))
    r = " ".join(rng.choice(words, 3000))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # the rouge package recurses once per LCS word
    try:
        score = rouge_l(h, r, "wmarkgpt")
    finally:
        sys.setrecursionlimit(limit)
    assert 0 < score <= 1
    assert rouge_l(".", "a reference.", "wmarkgpt") == 0.0  # rouge 1.0.1 raises (pltrdy/rouge#75)


def test_compat_per_item_scores_equal_the_official_result_files(pairs):
    # the official <model>-result.json holds BLEU_1 and ROUGE_L per image (Apache-2.0 files)
    official = {m: _load(official_file("scores", m)) for m in OFFICIAL_MODELS}
    for model, image, h, r in pairs[::7]:
        assert abs(bleu([h], [r], n=1) - official[model][image]["BLEU_1"]) <= 1e-12
        assert abs(rouge_l(h, r, "wmarkgpt") - official[model][image]["ROUGE_L"]) <= 1e-12


PAPER = {  # spec Sec. 4 A (paper Table 1): BLEU-1, ROUGE-L, ACC
    "wmarkgpt-7b": (0.4242, 0.4180, 0.550),
    "qwen2-vl-7b-instruct": (0.3278, 0.2885, 0.156),
    "mplug-owl2-7B": (0.2791, 0.2771, 0.110),
    "qwen-vl-chat": (0.2546, 0.2532, 0.170),
    "llava_1.5_13b_hf": (0.2284, 0.2560, 0.136),
    "llava_1.5_7b_hf": (0.2366, 0.2697, 0.118),
    "Efficient-Large-Model-NVILA-8B": (0.1897, 0.2531, 0.172),
}


@pytest.mark.parametrize("model", list(PAPER))
def test_compat_evaluate_gives_the_paper_table(model):
    t = evaluate(official_file("answers", model), official_file("test"), compat="wmarkgpt")
    for got, paper in zip((t.bleu1, t.rouge_l, t.acc), PAPER[model], strict=True):
        assert abs(got - paper) <= 5e-5
    assert t.n == 500


@pytest.mark.parametrize(
    ("kind", "paper"), [("qscore-real", (0.6968, 0.7498)), ("qscore-synthetic", (0.9409, 0.9378))]
)
def test_qscore_correlations_give_the_paper_values(kind, paper):
    s, p = evaluate_qscore(official_file(kind))
    assert abs(s - paper[0]) <= 1e-4
    assert abs(p - paper[1]) <= 1e-4


def test_expected_score_equals_stored_official_predictions():
    data = _load(official_file("qscore-real"))
    levels = ("invisible", "faint", "moderate", "visible", "obvious")
    z = np.array([[v["logits"][w] for w in levels] for v in data.values()])
    stored = np.array([v["predict_score"] for v in data.values()])
    assert np.abs(expected_score(z) - stored).max() <= 1e-12


def test_expected_score_closed_form():
    assert expected_score(np.zeros(5)) == pytest.approx(3.0, abs=1e-15)
    assert expected_score([1e4, 0, 0, 0, 0]) == pytest.approx(5.0, abs=1e-12)
    z = np.array([0.3, -1.0, 2.0, 0.5, 0.0])
    p = np.exp(z) / np.exp(z).sum()
    assert expected_score(z) == pytest.approx(float(p @ [5, 4, 3, 2, 1]), abs=1e-14)
    assert expected_score(np.zeros((4, 3, 5))).shape == (4, 3)


def test_srcc_plcc_equal_scipy_including_ties():
    from scipy.stats import pearsonr, rankdata, spearmanr

    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 200).astype(float)  # many ties
    y = x + rng.normal(0, 1.5, 200).round(1)
    assert abs(srcc(x, y) - spearmanr(x, y)[0]) <= 1e-12
    assert abs(plcc(x, y) - pearsonr(x, y)[0]) <= 1e-12
    # average ranks for ties: Pearson of the average ranks (closed form of Spearman)
    rx, ry = rankdata(x, "average"), rankdata(y, "average")
    assert abs(srcc(x, y) - np.corrcoef(rx, ry)[0, 1]) <= 1e-12


def test_clean_text_removes_tokens_and_official_strip_keeps_its_quirk():
    assert clean_text("visibility is: obvious</s>") == "visibility is: obvious"
    assert official_strip("visibility is: obvious</s>") == "visibility is: obvious</"
    assert official_strip("so obvious") == "o obviou"  # characters, not a token


def test_extract_and_accuracy():
    assert extract_visibility("The watermark visibility is: invisible.") == "invisible"
    assert extract_visibility("It is not visible at all; faint.") == "faint"
    assert extract_visibility("no level here") is None
    preds, gts = ["invisible", "faint", None], ["visible", "faint", "faint"]
    assert visibility_accuracy(preds, gts, match="substring") == pytest.approx(2 / 3)
    assert visibility_accuracy(preds, gts) == pytest.approx(1 / 3)


def _word_tokenizer(vocab_words):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", *vocab_words])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="<unk>", max_input_chars_per_word=100))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    from tokenizers import processors

    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", unk_token="<unk>")


def test_level_token_ids_ours_and_official():
    words = [
        "The",
        "watermark",
        "visibility",
        "is:",
        "invisible",
        "faint",
        "moderate",
        "visible",
        "obvious",
    ]
    tok = _word_tokenizer(words)
    ids = level_token_ids(tok, "The watermark visibility is: ")
    vocab = tok.get_vocab()
    assert ids == [vocab[w] for w in ("invisible", "faint", "moderate", "visible", "obvious")]
    assert level_token_ids(tok, compat="wmarkgpt") == ids


class _WordTokens:
    """A toy word-level tokenizer (BOS = 0, unknown words -> 1), as a small domain vocabulary."""

    def __init__(self, words):
        self.vocab = {w: i + 2 for i, w in enumerate(words)}

    def __call__(self, text):
        return {"input_ids": [0] + [self.vocab.get(w, 1) for w in text.split()]}


def test_level_token_ids_refuse_colliding_first_subtokens():
    levels = ["invisible", "faint", "moderate", "visible", "obvious"]
    full = _WordTokens(["visibility", "is:", *levels])
    assert level_token_ids(full, "visibility is: ") == [full.vocab[w] for w in levels]
    # "faint" and "moderate" are out of vocabulary: both read as <unk>, indistinguishable
    small = _WordTokens(["visibility", "is:", "invisible", "visible", "obvious"])
    with pytest.raises(ValueError, match="'faint' and 'moderate' share first sub-token 1"):
        level_token_ids(small, "visibility is: ")
    with pytest.raises(ValueError, match="'faint' and 'moderate'"):
        level_token_ids(small, compat="wmarkgpt")


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: bleu([], []), ValueError, "hyps"),
        (lambda: bleu(["a"], ["a", "b"]), ValueError, "refs"),
        (lambda: bleu("a b", ["a b"]), TypeError, "hyps"),
        (lambda: bleu(["a"], ["a"], n=0), ValueError, "n"),
        (lambda: bleu(["a"], ["a"], level="doc"), ValueError, "level"),
        (lambda: bleu(["a"], ["a"], smoothing="method9"), ValueError, "smoothing"),
        (lambda: rouge_l("a", "b", variant="x"), ValueError, "variant"),
        (lambda: rouge_l(None, "b"), TypeError, "hyp"),
        (lambda: srcc([1, 2], [1, 2, 3]), ValueError, "x"),
        (lambda: srcc([1, np.nan, 3], [1, 2, 3]), ValueError, "x"),
        (lambda: plcc([1, 1, 1], [1, 2, 3]), ValueError, "constant"),
        (lambda: expected_score(np.zeros(4)), ValueError, "logits"),
        (lambda: expected_score([0, 0, np.inf, 0, 0]), ValueError, "logits"),
        (lambda: visibility_accuracy([], []), ValueError, "gts"),
        (lambda: visibility_accuracy(["a"], ["a"], match="fuzzy"), ValueError, "match"),
        (lambda: evaluate([], [], compat="official"), ValueError, "compat"),
        (lambda: evaluate([], []), ValueError, "gt_json"),
        (lambda: evaluate("/no/such.json", []), ValueError, "pred_json"),
        (lambda: evaluate_qscore({}), ValueError, "qscore_json"),
        (lambda: level_token_ids(lambda t: {"input_ids": [0]}, compat="x"), ValueError, "compat"),
        (lambda: official_file("answers"), ValueError, "model"),
        (lambda: official_file("answers", "gpt-5"), ValueError, "model"),
        (lambda: official_file("test", "wmarkgpt-7b"), ValueError, "only for kinds"),
        (
            lambda: evaluate_qscore(
                {"a": {"gt_score": 1.0, "logits": dict.fromkeys(VISIBILITY_LEVELS, 0)}}
            ),
            ValueError,
            "`qscore_json` holds 1 record",
        ),
    ],
)
def test_metrics_refuse_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_evaluate_names_a_missing_prediction():
    gt = [
        {
            "image": "a.png",
            "visibility": "faint",
            "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "faint."}],
        }
    ]
    with pytest.raises(ValueError, match=r"'a\.png'"):
        evaluate([], gt)
    t = evaluate(gt, gt)
    assert math.isclose(t.bleu1, 1.0)
    assert t.acc == 1.0


def _gt(image="a.png", level="faint"):
    text = f"A logo. The watermark visibility is: {level}."
    return {
        "image": image,
        "visibility": level,
        "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": text}],
    }


def test_evaluate_refuses_duplicate_images_naming_them():
    with pytest.raises(ValueError, match=r"`pred_json` has two records for image 'a\.png'"):
        evaluate([_gt(), _gt(level="obvious")], [_gt()])
    with pytest.raises(ValueError, match=r"`gt_json` has two records for image 'a\.png'"):
        evaluate([_gt()], [_gt(), _gt()])


@pytest.mark.parametrize(
    ("field", "acc"),
    [
        ("faint.", 1.0),
        (" Faint ", 1.0),
        ("The watermark visibility is: faint", 1.0),
        ("", 1.0),  # falls back to the answer, as None does
        (None, 1.0),
        ("obvious!", 0.0),
    ],
)
def test_evaluate_normalises_the_visibility_field(field, acc):
    pred = dict(_gt(), visibility=field)
    assert evaluate([pred], [_gt()]).acc == acc


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: evaluate([dict(_gt(), visibility=float("nan"))], [_gt()]), "visibility nan"),
        (lambda: evaluate([_gt()], [dict(_gt(), visibility="meh")]), "'meh', not one of"),
        (lambda: visibility_accuracy([float("nan")], ["faint"]), r"`preds`\[0\]"),
        (lambda: visibility_accuracy(["faint"], [None]), r"`gts`\[0\]"),
        (lambda: visibility_accuracy(["meh"], ["meh"]), r"`gts`\[0\]"),
    ],
)
def test_bad_level_values_are_refused_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_level_token_ids_refuse_a_word_missing_from_the_vocabulary():
    words = ["The", "watermark", "visibility", "is:", "invisible", "faint", "moderate", "obvious"]
    with pytest.raises(ValueError, match="'visible' to the unknown token"):
        level_token_ids(_word_tokenizer(words), "The watermark visibility is: ")


def test_position_accuracy_matches_by_id():
    def rec(i, answer):
        turns = [{"from": "human", "value": "q"}, {"from": "gpt", "value": answer}]
        return {"id": i, "image": "a.png", "conversations": turns}

    gt = [rec("a-q0", "Middle-left"), rec("a-q1", "Top-right")]  # one image, two questions
    assert position_accuracy([rec("a-q1", "top-right."), rec("a-q0", "Center")], gt) == 0.5
    with pytest.raises(ValueError, match="no answer for id 'a-q1'"):
        position_accuracy([rec("a-q0", "Center")], gt)
    with pytest.raises(ValueError, match="position_accuracy"):
        evaluate(gt[:1], gt[:1])
