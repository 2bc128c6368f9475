"""Reproduce the headline claim, small, on synthetic (espeak-ng) speech: MonoAttn-T vs plain
T-T on reordering.

English spoken numbers (espeak-ng, 8 voices/variants x 3 rates x 2 pitches) are transcribed
into German numeral morphemes ("twenty one" -> "ein und zwanzig"): 72 of the 99 numbers need the
units before the tens the speaker says first (non-monotonic), 28 do not (monotonic). A plain
Transformer-Transducer and MonoAttn-Transducer share encoder, predictor, joint, data and steps;
both stream with 160 ms chunks and one chunk of encoder left context. Test voices are held out.

Run by ``monoattn-transducer reproduce [--out reports] [--full] [--seed N]`` or
``nox -s reproduce -- monoattn-transducer``; writes ``reports/monoattn-transducer.{md,json}``.
"""

import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25_core import Claim, Report, ResultStore, progress, seed_everything
from icml25_core.report import Verdict

# ---- pass rules: written before the first run (spec section 4), never moved afterwards ----
C1_GAIN_POINTS = 10.0  # exact-match gain (points) on non-monotonic items for "reproduced"
C1_CI_LEVEL = 0.95  # bootstrap CI over test utterances must exclude 0
C2_MIN_GAIN_POINTS = -3.0  # no harm on monotonic items
C3_MAX_AL_DIFF_MS = 160.0  # |delta AL| <= one chunk
BOOTSTRAP = 2000
# --------------------------------------------------------------------------------------------

TEST_VOICES = ("en+f4", "en-us+m5")
CHUNK_MS = 160
HOP_MS = 10
SUBSAMPLING = 4
DOWNSAMPLE = 4  # official transducer_downsample
CHUNK_FRAMES = CHUNK_MS // HOP_MS // SUBSAMPLING  # 4 encoder frames
QUICK: dict[str, Any] = {
    "steps": 1200, "batch": 32, "d_model": 64, "enc_layers": 2, "pred_layers": 1, "heads": 4,
    "lr": 2e-3, "seeds": 1,
}  # fmt: skip
FULL = {**QUICK, "steps": 3000, "seeds": 3}
# History (kept honest): the first run used 500 steps; both models were under-trained (exact match
# 42% / 39% on monotonic items) in 84 s of a 5-minute budget, so the step count (not a pass
# rule) was raised once to 1200 for both models alike before any verdict was read as final.


def _cache_dir(out: str | Path = "reports") -> Path:
    """Corpus cache: ``$MONOATTN_TRANSDUCER_CACHE``, else under ``<out>/.checkpoints``."""
    env = os.environ.get("MONOATTN_TRANSDUCER_CACHE")
    return Path(env) if env else Path(out) / ".checkpoints" / "monoattn-transducer" / "corpus"


def _vocab() -> list[str]:
    from .data.spoken_numbers import MORPHEMES

    return ["<blank>", *MORPHEMES]


def _encode(corpus: dict[str, Any]) -> dict[str, Any]:
    vocab = {m: i for i, m in enumerate(_vocab())}
    feats = corpus["feats"]
    mean = np.concatenate(feats).mean(0)
    std = np.concatenate(feats).std(0) + 1e-5
    return {
        "feats": [((f - mean) / std).astype(np.float32) for f in feats],
        "targets": [[vocab[m] for m in t.split()] for t in corpus["target"]],
        "numbers": np.asarray(corpus["numbers"]),
        "voices": np.asarray(corpus["voices"]),
    }


def _batch(data: dict[str, Any], idx: np.ndarray) -> tuple[torch.Tensor, ...]:
    fs = [data["feats"][i] for i in idx]
    ts = [data["targets"][i] for i in idx]
    T = max(len(f) for f in fs)
    U = max(len(t) for t in ts)
    x = torch.zeros(len(idx), T, fs[0].shape[1])
    y = torch.zeros(len(idx), U, dtype=torch.int64)
    for k, (f, t) in enumerate(zip(fs, ts, strict=True)):
        x[k, : len(f)] = torch.from_numpy(f)
        y[k, : len(t)] = torch.tensor(t)
    return x, torch.tensor([len(f) for f in fs]), y, torch.tensor([len(t) for t in ts])


def _train(kind: str, data, train_idx, cfg, seed: int, left_chunks: int | None):
    from .alignment import alignment_prior
    from .model import MonoAttnTransducer

    seed_everything(seed)
    model = MonoAttnTransducer.build(
        80, len(_vocab()), d_model=cfg["d_model"], enc_layers=cfg["enc_layers"],
        pred_layers=cfg["pred_layers"], num_heads=cfg["heads"], chunk_frames=CHUNK_FRAMES,
        left_chunks=left_chunks, downsample=DOWNSAMPLE, monotonic=kind != "plain", dropout=0.1,
    )  # fmt: skip
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg["lr"], total_steps=cfg["steps"])
    rng = np.random.default_rng(seed)
    losses = []
    for _ in progress(range(cfg["steps"]), desc=f"train {kind} seed {seed}", unit="step"):
        idx = rng.choice(train_idx, cfg["batch"], replace=False)
        x, xl, y, yl = _batch(data, idx)
        align = None
        if kind == "prior-only":
            with torch.no_grad():
                enc_len = (xl + SUBSAMPLING - 1) // SUBSAMPLING
                align = alignment_prior("chunk_diagonal", enc_len, yl, chunk_frames=CHUNK_FRAMES,
                                        enc_frames=math.ceil(x.shape[1] / SUBSAMPLING),
                                        max_target_length=y.shape[1])  # fmt: skip
        loss = model(x, xl, y, yl, alignment=align).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return model, losses


def _evaluate(model, data, test_idx) -> dict[str, list]:
    from .decoding import greedy_stream
    from .metrics import average_lagging

    vocab = _vocab()
    hyps, refs, als = [], [], []
    for i in progress(test_idx, desc="stream test", unit="utt"):
        f = torch.from_numpy(data["feats"][i])
        res = greedy_stream(model, f)
        hyps.append(" ".join(vocab[t] for t in res.tokens))
        refs.append(" ".join(vocab[t] for t in data["targets"][i]))
        dur = len(f) * HOP_MS
        if res.tokens:
            delays = [min((c + 1) * SUBSAMPLING * HOP_MS, dur) for c in res.context_frames[1:]]
            als.append(average_lagging(delays, dur, len(res.tokens)))
        else:
            als.append(float("nan"))
    return {"hyp": hyps, "ref": refs, "al": als}


def _pick(items: list, mask: np.ndarray) -> list[str]:
    return [str(x) for x, keep in zip(items, mask, strict=True) if keep]


def _subset_masks(numbers: np.ndarray) -> dict[str, np.ndarray]:
    mono = (numbers <= 20) | (numbers % 10 == 0)
    return {"non-monotonic": ~mono, "monotonic": mono}


def _bootstrap_gain(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """Paired percentile CI of mean(b) - mean(a) in points, resampling utterances."""
    rng = np.random.default_rng(seed)
    n = len(a)
    idx = rng.integers(0, n, (BOOTSTRAP, n))
    diffs = (b[idx].mean(1) - a[idx].mean(1)) * 100
    lo, hi = np.quantile(diffs, [(1 - C1_CI_LEVEL) / 2, 1 - (1 - C1_CI_LEVEL) / 2])
    return float(lo), float(hi)


def _plot(curves: dict[str, list[float]], out: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, c in curves.items():
        k = 25
        smooth = np.convolve(c, np.ones(k) / k, mode="valid") if len(c) > k else c
        ax.plot(smooth, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("RNN-T loss (batch mean, smoothed)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    name = "monoattn-transducer-loss.png"
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / name, dpi=100)
    plt.close(fig)
    return name


def run(full: bool = False, seed: int = 0, out: str | Path = "reports") -> Report:
    """Measure claims C1-C3 on the spoken-number corpus and return the report.

    Parameters
    ----------
    full : bool, default=False
        3 seeds, longer training, plus a full-left-context pair and the prior-only ablation.
    seed : int, default=0
        First seed.
    out : str or Path, default="reports"
        Folder of the report, the loss plot and the resumable result store.

    Returns
    -------
    icml25_core.Report
        Claims C1 (reordering gain), C2 (no harm on monotonic items), C3 (latency).

    Raises
    ------
    ImportError
        Without the ``[speech]`` / ``[eval]`` extras.
    """
    from .data.spoken_numbers import PITCHES, RATES, VOICES, build_corpus
    from .metrics import corpus_bleu

    t0 = time.time()
    torch.set_num_threads(1)  # 2 threads on 2 shared cores ran 10x slower
    cfg: dict[str, Any] = FULL if full else QUICK
    out = Path(out)
    corpus = build_corpus(_cache_dir(out), progress=progress)
    data = _encode(corpus)
    test_mask = np.isin(data["voices"], TEST_VOICES)
    train_idx = np.flatnonzero(~test_mask)
    test_idx = np.flatnonzero(test_mask)
    runs: list[tuple[str, int | None]] = [("plain", 1), ("monoattn", 1)]
    if full:
        runs += [("plain", None), ("monoattn", None), ("prior-only", 1)]
    seeds = [seed + k for k in range(cfg["seeds"])]
    store = ResultStore(
        out / ".checkpoints" / "monoattn-transducer" / "runs.jsonl",
        config={**cfg, "test_voices": TEST_VOICES, "version": 2},  # 2: seeded corpus synthesis
        restart=True,
    )
    results: dict[str, dict] = {}
    resumed: list[str] = []
    for kind, left in runs:
        for s in seeds:
            key = f"{kind}-left{left}-seed{s}"
            rec = store.get(key)
            if rec is None:
                t_run = time.time()
                model, losses = _train(kind, data, train_idx, cfg, s, left)
                ev = _evaluate(model, data, test_idx)
                rec = {**ev, "losses": losses, "seconds": time.time() - t_run}
                store.put(key, rec)
            else:
                resumed.append(key)
            results[key] = rec
    numbers = data["numbers"][test_idx]
    masks = _subset_masks(numbers)

    def correct(key: str) -> np.ndarray:
        r = results[key]
        return np.array([h == f for h, f in zip(r["hyp"], r["ref"], strict=True)], dtype=float)

    rows = []
    summary: dict[tuple[str, str], dict[str, float]] = {}
    for kind, left in runs:
        for sub, m in masks.items():
            keys = [f"{kind}-left{left}-seed{s}" for s in seeds]
            em = np.mean([correct(k)[m].mean() for k in keys]) * 100
            bleu = np.mean(
                [
                    corpus_bleu(_pick(results[k]["hyp"], m), _pick(results[k]["ref"], m))
                    for k in keys
                ]
            )
            al = np.nanmean([np.nanmean(np.array(results[k]["al"])[m]) for k in keys])
            name = f"{kind} (left {'all' if left is None else left})"
            summary[(name, sub)] = {"em": float(em), "bleu": float(bleu), "al": float(al)}
            rows.append(f"| {name} | {sub} | {int(m.sum())} | {em:.1f} | {bleu:.1f} | {al:.0f} |")
    table = "\n".join(["| model | subset | test utts | exact match % | morpheme BLEU | AL (ms) |",
                       "|---|---|---|---|---|---|", *rows])  # fmt: skip

    # C1/C2/C3 on the default pair (left context 1 chunk), paired over utterances (seed-mean)
    plain = np.mean([correct(f"plain-left1-seed{s}") for s in seeds], 0)
    mono = np.mean([correct(f"monoattn-left1-seed{s}") for s in seeds], 0)
    nm, mo = masks["non-monotonic"], masks["monotonic"]
    gain = (mono[nm].mean() - plain[nm].mean()) * 100
    lo, hi = _bootstrap_gain(plain[nm], mono[nm])
    strongest = max(
        (v["em"], k[0])
        for k, v in summary.items()
        if k[1] == "non-monotonic" and not k[0].startswith("monoattn (left 1)")
    )
    excludes0 = lo > 0 or hi < 0
    if gain >= C1_GAIN_POINTS and lo > 0:
        v1 = Verdict.REPRODUCED
    elif lo > 0:
        v1 = Verdict.PARTIAL
    else:
        v1 = Verdict.NOT_REPRODUCED
    mono_em = summary[("monoattn (left 1)", "non-monotonic")]["em"]
    claims = [
        Claim(
            "C1: MonoAttn-T beats plain T-T on non-monotonic (reordered) items",
            "better quality under reordering (paper Sec. 5; value not read)",
            f"exact-match gain {gain:+.1f} points, {int(C1_CI_LEVEL * 100)}% CI [{lo:+.1f}, "
            f"{hi:+.1f}] (plain {plain[nm].mean() * 100:.1f}%, MonoAttn "
            f"{mono[nm].mean() * 100:.1f}%); strongest other model of the run: {strongest[1]} "
            f"{strongest[0]:.1f}% vs MonoAttn {mono_em:.1f}%",
            v1,
            f"gain >= +{C1_GAIN_POINTS:.0f} points and CI excludes 0: reproduced; CI excludes 0 "
            "with a smaller gain: partially",
            "CI excludes 0 but the gain is negative" if excludes0 and gain < 0 else "",
        ),
        Claim.judge(
            "C2: no harm on monotonic items",
            "no degradation (paper Sec. 5)",
            f"exact-match gain {(mono[mo].mean() - plain[mo].mean()) * 100:+.1f} points",
            bool((mono[mo].mean() - plain[mo].mean()) * 100 >= C2_MIN_GAIN_POINTS),
            f"gain >= {C2_MIN_GAIN_POINTS:.0f} points",
        ),
    ]
    al_p = summary[("plain (left 1)", "non-monotonic")]["al"]
    al_m = summary[("monoattn (left 1)", "non-monotonic")]["al"]
    all_al = [np.nanmean(results[f"{k}-left1-seed{s}"]["al"]) for k in ("plain", "monoattn")
              for s in seeds]  # fmt: skip
    d_al = float(np.mean(all_al[len(seeds) :]) - np.mean(all_al[: len(seeds)]))
    claims.append(
        Claim.judge(
            "C3: comparable latency",
            "comparable AL (paper Sec. 5)",
            f"delta AL {d_al:+.0f} ms over all test items (non-monotonic: plain {al_p:.0f} ms, "
            f"MonoAttn {al_m:.0f} ms)",
            bool(abs(d_al) <= C3_MAX_AL_DIFF_MS),
            f"|delta AL| <= {C3_MAX_AL_DIFF_MS:.0f} ms (one chunk)",
        )
    )
    curves = {f"{k.split('-seed')[0]}": results[k]["losses"] for k in results
              if k.endswith(f"seed{seeds[0]}")}  # fmt: skip
    fig = _plot(curves, out)
    report = Report(
        library="monoattn-transducer",
        title="MonoAttn-Transducer vs plain Transformer-Transducer on spoken numbers "
        "(English speech -> German numeral morphemes)",
        claims=claims,
        setup={
            "input": "espeak-ng (espeakng-loader) English numbers 1-99, voices "
            f"{list(VOICES)}, rates {list(RATES)} wpm, pitches {list(PITCHES)}; 80-dim log-mel, "
            "10 ms hop (librosa)",
            "targets": "num2words(n, lang='de') cut into numeral morphemes by longest match",
            "train/test": f"{len(train_idx)} train utterances / {len(test_idx)} test utterances "
            f"(held-out voices {list(TEST_VOICES)})",
            "subsets": "non-monotonic: 21-99 not multiples of 10 (72 numbers); monotonic: 1-20 and "
            "tens (27 numbers here, 100 is out of range)",
            "models": f"{cfg}; chunk {CHUNK_MS} ms = {CHUNK_FRAMES} encoder frames, decision "
            f"stride {DOWNSAMPLE}, encoder left context 1 chunk, prior chunk_diagonal a=1",
            "seeds": seeds,
            "decoding": "streaming greedy, <= 5 symbols per decision frame",
            "torch": torch.__version__,
            "train+decode seconds per model": {
                k: round(float(r.get("seconds", float("nan"))), 1) for k, r in results.items()
            },
            "resumed from the result store": resumed or "no",
        },
        tables={"Per model and subset (test voices)": table},
        figures=[fig] if fig else [],
        notes=[
            "Verdict rules were fixed in the spec before the first run (DECISIONS 3); our earlier "
            "toy runs did not show the reordering gain, so this run reports what it measures.",
            "AL: per test utterance, delays = audio received (ms) when each morpheme was "
            "emitted, |X| = utterance duration, |Y| = hypothesis length (SimulEval's default); "
            "utterances with empty output are left out of AL.",
            "Exact match is the headline metric; corpus morpheme BLEU (sacrebleu, tokenize=none, "
            "effective order: items have at most 3 morphemes) is shown beside it.",
            "Run history: the first run trained 500 steps (C1 gain -0.8 points, CI [-2.5, +0.8]; "
            "C2 -2.8; C3 +35 ms; both models under-trained); the step count, not a pass rule, was "
            "raised once to 1200 for both models to use the 5-minute budget. Until trial 23 "
            "espeak-ng seeded the breath noise of the +f2/+f3 training voices from the clock, so "
            "every synthesis of the corpus differed and so did the figures: four 1200-step runs "
            "gave C1 -3.8 to -1.2 points, C2 +1.2 to +12.0 points, C3 +30 to +62 ms (same "
            "verdicts). The synthesis is seeded per utterance now: a rerun from scratch gives "
            "the same corpus and the same figures; one seed on one corpus stays noisy.",
        ],
    )
    report.runtime_s = time.time() - t0
    return report


def main(out="reports", full: bool = False, seed: int = 0) -> tuple[Path, Path]:
    """Run the reproduction and write its report into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/monoattn-transducer.md``, and the JSON one beside it.
    """
    return run(full=full, seed=seed, out=out).write(out)
