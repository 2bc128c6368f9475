"""Compat ROUGE-L (``rouge_l(variant="wmarkgpt")``) vs the `rouge` 1.0.1 package it reproduces,
and the standard ROUGE-L vs `rouge-score`, on the 500 WMarkGPT-7B answers of WQA-Real (spec
Sec. 6). Gated on correctness: equal to 1e-12 on every pair before timing."""

import gzip
import json
import sys
import time

from wmarkgpt import official_file, official_strip, rouge_l


def main():
    with gzip.open(official_file("test"), "rt") as f:
        refs = {g["image"]: official_strip(g["conversations"][1]["value"]) for g in json.load(f)}
    with gzip.open(official_file("answers", "wmarkgpt-7b"), "rt") as f:
        pairs = [
            (official_strip(p["conversations"][-1]["value"]), refs[p["image"]])
            for p in json.load(f)
        ]
    from rouge import Rouge
    from rouge_score import rouge_scorer

    sys.setrecursionlimit(10000)
    peer, scorer = Rouge(metrics=["rouge-l"], stats=["f"]), rouge_scorer.RougeScorer(["rougeL"])
    for h, r in pairs:
        assert abs(rouge_l(h, r, "wmarkgpt") - peer.get_scores(h, r)[0]["rouge-l"]["f"]) <= 1e-12
        assert abs(rouge_l(h, r) - scorer.score(r, h)["rougeL"].fmeasure) <= 1e-12
    timings = {}
    for name, fn in {
        "ours wmarkgpt": lambda: [rouge_l(h, r, "wmarkgpt") for h, r in pairs],
        "rouge 1.0.1": lambda: [peer.get_scores(h, r) for h, r in pairs],
        "ours standard": lambda: [rouge_l(h, r) for h, r in pairs],
        "rouge-score": lambda: [scorer.score(r, h) for h, r in pairs],
    }.items():
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        timings[name] = best
    print(
        f"ROUGE-L on 500 WQA-Real answers (best of 3): compat {timings['ours wmarkgpt']:.3f} s vs "
        f"rouge 1.0.1 {timings['rouge 1.0.1']:.3f} s = "
        f"{timings['rouge 1.0.1'] / timings['ours wmarkgpt']:.2f}x; standard "
        f"{timings['ours standard']:.3f} s vs rouge-score {timings['rouge-score']:.3f} s = "
        f"{timings['rouge-score'] / timings['ours standard']:.2f}x"
    )


if __name__ == "__main__":
    main()
