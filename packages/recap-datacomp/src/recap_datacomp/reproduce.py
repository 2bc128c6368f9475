"""Reproduce the paper's claims, small (spec section 4; DECISIONS 16).

Part A, real photos: ten scikit-image photos packed into 3 webdataset shards (file names as
alt-text), recaptioned by a tiny random LLaVA built offline; the run is killed after shard 0 and
in the middle of shard 1, then resumed: every table must equal an uninterrupted run
(``pyarrow.Table.equals``).

Part B, synthetic data: the paper's qualitative mix-ratio trade-off (more recaptions: better
long-text retrieval, worse short-prompt zero-shot) on :func:`shapes_corpus` with a tiny
transformers CLIP trained at p in {0, 0.5, 0.8, 1.0}. This is the qualitative claim on synthetic
data, not the paper's COCO/Flickr30K numbers (no captioner or CLIP with weights ships offline).

Run by ``recap-datacomp reproduce [--out reports] [--full]`` or
``nox -s reproduce -- recap-datacomp``; writes ``reports/recap-datacomp.{md,json}`` and a plot.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import Claim, Report

# Pass rules, written before the first run (spec section 4); never moved after it.
RULE_RESUME = "every shard table after kill + resume equals the uninterrupted run (Table.equals)"
MIN_T2I_GAIN = 0.15  # (1) t2i R@1(p=0.8) - R@1(p=0) >= 15 points
# (2) zero-shot top-1 acc(p=1.0) < acc(p=0.5)
NEAR_BEST = 0.05  # (3) p=0.8 within 5 points of the best p on both long-text t2i R@1 and zero-shot
PS = (0.0, 0.5, 0.8, 1.0)

# Part B's setup, fixed before the first run (smaller than the spec's ~40 s/p CLIP: the 2 cores
# are shared with other jobs; see the README).
B_TRAIN, B_TEST, B_ZS = 3000, 500, 480
B_STEPS, B_BATCH, B_LR = 300, 64, 2e-3
B_MODEL = {"width": 48, "layers": 1, "patch_size": 4, "text_width": 48, "text_layers": 1,
           "heads": 2, "context_length": 48, "embed_dim": 48}  # fmt: skip

PHOTOS = (
    "astronaut", "coffee", "chelsea", "rocket", "motorcycle_left", "motorcycle_right",
    "hubble_deep_field", "retina", "immunohistochemistry", "colorwheel",
)  # fmt: skip


def _photo(name: str) -> np.ndarray:
    import skimage.data as data

    if name == "motorcycle_left":
        return data.stereo_motorcycle()[0]
    if name == "motorcycle_right":
        return data.stereo_motorcycle()[1]
    return getattr(data, name)()[..., :3]


class _Kill(BaseException):
    """A simulated kill inside the captioner."""


class _KillAfter:
    def __init__(self, captioner: Any, calls: int) -> None:
        self.captioner, self.calls, self.run_config = captioner, calls, captioner.run_config

    def __call__(self, images: list, prompts: list | None = None) -> list[str]:
        if self.calls == 0:
            raise _Kill()
        self.calls -= 1
        return self.captioner(images, prompts)


def part_a(report: Report, work: Path) -> dict[str, Any]:
    """Pipeline on real photos: kill + resume equals an uninterrupted run."""
    import pyarrow.parquet as pq
    from PIL import Image

    from .metrics import caption_stats
    from .pipeline import recaption_shards
    from .shards import encode_image, write_shard
    from .synthetic import vocabulary
    from .tiny import tiny_llava_captioner

    sizes = (4, 3, 3)
    shards, k = [], 0
    for s, size in enumerate(sizes):
        samples = []
        for name in PHOTOS[k : k + size]:
            img = np.asarray(Image.fromarray(_photo(name)).resize((256, 256)))
            samples.append(
                {
                    "__key__": f"{s:05d}_{name}",
                    "jpg": encode_image(img),
                    "txt": f"{name}.png",
                    "json": json.dumps({"url": f"skimage://{name}"}).encode(),
                }
            )
        k += size
        path = work / f"{s:05d}.tar"
        write_shard(str(path), samples)
        shards.append(str(path))
    captioner = tiny_llava_captioner(vocabulary(), seed=0, max_new_tokens=24, batch_size=2)
    kw: dict[str, Any] = {"batch_size": 2, "checkpoint_every": 2, "show_progress": True}
    t0 = time.perf_counter()
    clean = recaption_shards(shards, work / "clean", captioner, **kw)
    clean_s = time.perf_counter() - t0
    # shard 0 = calls 1-2, shard 1 = calls 3-4: kill at call 4 (after shard 0 and 1 part of 1)
    try:
        recaption_shards(shards, work / "resumed", _KillAfter(captioner, 3), **kw)
        killed = False
    except _Kill:
        killed = True
    parts_left = sorted(p.name for p in (work / "resumed" / ".parts").rglob("part-*"))
    resumed = recaption_shards(shards, work / "resumed", captioner, **kw)
    equal = []
    for shard in shards:
        stem = Path(shard).stem
        a = pq.read_table(work / "clean" / f"{stem}.parquet")
        b = pq.read_table(work / "resumed" / f"{stem}.parquet")
        keys = b.column("key").to_pylist()
        equal.append(bool(a.equals(b)) and len(keys) == len(set(keys)))
    ok = killed and all(equal)
    table = pq.read_table(work / "clean" / "00000.parquet").to_pylist()
    rows = [pq.read_table(work / "clean" / f"{Path(s).stem}.parquet") for s in shards]
    re_caps = [c for t in rows for c in t.column("re_caption").to_pylist()]
    org_caps = [c for t in rows for c in t.column("org_caption").to_pylist()]
    stats_re, stats_org = caption_stats(re_caps), caption_stats(org_caps)
    report.claims.append(
        Claim.judge(
            "A. A recaptioning run killed mid-way resumes to exactly the uninterrupted output "
            "(real photos, 3 shards)",
            "resumable pipeline (img2dataset#333/#452 pitfalls; spec section 9)",
            f"killed={killed}, parts kept at the kill: {len(parts_left)}, "
            f"tables equal: {sum(equal)}/{len(equal)}",
            ok,
            RULE_RESUME,
            note=f"shards finished by the resumed run: {len(resumed.shards_done)} of 3 "
            f"(shard 0 was already done and skipped: {len(resumed.shards_skipped)})",
        )
    )
    report.tables["A. Pipeline on the scikit-image photos (tiny random LLaVA)"] = (
        "| quantity | value |\n|---|---|\n"
        f"| images / shards | 10 / 3 |\n"
        f"| uninterrupted run | {clean_s:.2f} s, {clean.images_per_second:.1f} img/s |\n"
        f"| mean words, re_caption vs org_caption | {stats_re['mean_tokens']:.1f} vs "
        f"{stats_org['mean_tokens']:.1f} (paper: ≈49.4 vs ≈10 tokens, LLaMA-3 LLaVA) |\n"
        f'| first row | {table[0]["key"]}: "{table[0]["re_caption"][:60]}" |'
    )
    return {"equal": equal, "killed": killed, "clean_s": clean_s, "stats_re": stats_re}


def _train_eval(p: float, seed: int, data: Any, progress: bool) -> dict[str, float]:
    import torch

    from .clip import HFCLIPBackend, embed, tiny_clip_config, to_pixels, train_clip
    from .metrics import retrieval_metrics, zero_shot_accuracy
    from .mixing import use_recaption
    from .synthetic import vocabulary
    from .tiny import WordTokenizer

    train, test, zs = data
    tok = WordTokenizer(vocabulary(), context_length=B_MODEL["context_length"])
    backend = HFCLIPBackend.from_config(tiny_clip_config(len(tok), **B_MODEL), seed=seed)
    rng = np.random.default_rng(seed)
    pixels = to_pixels(train.images)
    keys = [f"train-{i:06d}" for i in range(B_TRAIN)]
    per_epoch = B_TRAIN // B_BATCH

    def batches():
        step = 0
        while True:
            epoch = step // per_epoch
            idx = rng.choice(B_TRAIN, size=B_BATCH, replace=False)
            texts = [
                train.recaptions[i]
                if use_recaption(p, seed, epoch, keys[i])
                else train.alt_texts[i]
                for i in idx
            ]
            yield pixels[torch.as_tensor(idx)], tok(texts)
            step += 1

    train_clip(backend, batches(), steps=B_STEPS, lr=B_LR, warmup=20, show_progress=progress)
    img, txt = embed(backend, to_pixels(test.images), tok(test.recaptions))
    r = retrieval_metrics(img, txt, np.arange(B_TEST), ks=(1, 5))
    zimg, cls = embed(
        backend, to_pixels(zs.images), tok([f"a photo of a {c}" for c in zs.class_names])
    )
    acc = zero_shot_accuracy(zimg, cls, zs.labels, ks=(1,))
    return {**r, "zs_top1": acc["top1"]}


def part_b(report: Report, seeds: list[int], progress: bool) -> dict[str, Any]:
    """Mix-ratio trade-off on the synthetic structured-scene corpus."""
    from .synthetic import shapes_corpus

    results: dict[float, list[dict[str, float]]] = {p: [] for p in PS}
    for seed in seeds:
        data = (
            shapes_corpus(B_TRAIN, seed=1000 + seed),
            shapes_corpus(B_TEST, seed=2000 + seed),
            shapes_corpus(B_ZS, seed=3000 + seed, max_objects=1),
        )
        for p in PS:
            t0 = time.perf_counter()
            results[p].append(_train_eval(p, seed, data, progress))
            if progress:
                print(
                    f"[part B] seed {seed} p={p}: {results[p][-1]} "
                    f"({time.perf_counter() - t0:.0f} s)"
                )
    mean = {p: {k: float(np.mean([r[k] for r in rs])) for k in rs[0]} for p, rs in results.items()}
    sd = {
        p: {k: float(np.std([r[k] for r in rs], ddof=1)) if len(rs) > 1 else 0.0 for k in rs[0]}
        for p, rs in results.items()
    }

    def se(v: float, n: int) -> float:
        return float(np.sqrt(max(v * (1 - v), 1e-12) / n))

    gain = mean[0.8]["t2i_R@1"] - mean[0.0]["t2i_R@1"]
    gain_se = np.hypot(se(mean[0.8]["t2i_R@1"], B_TEST), se(mean[0.0]["t2i_R@1"], B_TEST))
    report.claims.append(
        Claim.judge(
            "B1 (synthetic, qualitative). Training on recaptions (p=0.8) improves long-text "
            "text-to-image retrieval over alt-text only (p=0)",
            "+3.1 % average retrieval on COCO/Flickr30K (abstract; paper's data, not this corpus)",
            f"t2i R@1 {mean[0.0]['t2i_R@1']:.3f} -> {mean[0.8]['t2i_R@1']:.3f} "
            f"(gain {gain:+.3f} ± {gain_se:.3f} binomial s.e.)",
            bool(gain >= MIN_T2I_GAIN),
            f"gain >= {MIN_T2I_GAIN}",
        )
    )
    report.claims.append(
        Claim.judge(
            "B2 (synthetic, qualitative). Zero-shot classification with short prompts drops as "
            "p -> 1",
            "ImageNet zero-shot does not improve and drops as p -> 1 (project page)",
            f"zero-shot top-1 p=0.5: {mean[0.5]['zs_top1']:.3f}, p=1.0: {mean[1.0]['zs_top1']:.3f} "
            f"(± {se(mean[1.0]['zs_top1'], B_ZS):.3f} s.e.)",
            bool(mean[1.0]["zs_top1"] < mean[0.5]["zs_top1"]),
            "acc(p=1.0) < acc(p=0.5)",
        )
    )
    best_r = max(m["t2i_R@1"] for m in mean.values())
    best_z = max(m["zs_top1"] for m in mean.values())
    near = mean[0.8]["t2i_R@1"] >= best_r - NEAR_BEST and mean[0.8]["zs_top1"] >= best_z - NEAR_BEST
    report.claims.append(
        Claim.judge(
            "B3 (synthetic, qualitative). p=0.8 is a good trade-off: near the best p of this run "
            "on "
            "both long-text retrieval and zero-shot",
            "p=0.8 chosen for Recap-CLIP (project page)",
            f"p=0.8: t2i R@1 {mean[0.8]['t2i_R@1']:.3f} (best {best_r:.3f}), zero-shot "
            f"{mean[0.8]['zs_top1']:.3f} (best {best_z:.3f})",
            bool(near),
            f"within {NEAR_BEST} of the best p on both",
        )
    )
    rows = "\n".join(
        f"| {p} | {mean[p]['t2i_R@1']:.3f} ± {sd[p]['t2i_R@1']:.3f} | {mean[p]['i2t_R@1']:.3f} | "
        f"{mean[p]['t2i_R@5']:.3f} | {mean[p]['zs_top1']:.3f} ± {sd[p]['zs_top1']:.3f} |"
        for p in PS
    )
    report.tables["B. Mix ratio p on the synthetic corpus (mean ± sd over seeds)"] = (
        "| p | t2i R@1 | i2t R@1 | t2i R@5 | zero-shot top-1 |\n|---|---|---|---|---|\n" + rows
    )
    return {"mean": {str(k): v for k, v in mean.items()}, "sd": {str(k): v for k, v in sd.items()}}


def _plot(path: Path, mean: dict[str, dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ps = [float(p) for p in mean]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(ps, [mean[p]["t2i_R@1"] for p in mean], "o-", label="long-text t2i R@1")
    ax.plot(ps, [mean[p]["i2t_R@1"] for p in mean], "s-", label="long-text i2t R@1")
    ax.plot(ps, [mean[p]["zs_top1"] for p in mean], "^-", label="short-prompt zero-shot top-1")
    ax.set_xlabel("p (share of recaptions)")
    ax.set_title("synthetic shapes corpus, tiny CLIP")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(
    full: bool = False, out: str | Path = "reports", progress: bool = True, parts: str = "AB"
) -> Report:
    """Measure the paper's claims (parts A and B of the module docstring) and return the report.

    Parameters
    ----------
    full : bool, default=False
        Part B over 3 seeds (mean ± sd) instead of 1.
    out : path, default="reports"
        Folder of the plot.
    progress : bool, default=True
    parts : str, default="AB"
        Which parts to run (tests run "A").

    Returns
    -------
    icml25_core.Report
        One claim per pass rule, each written before the first run.
    """
    import torch

    torch.set_num_threads(1)  # 2 threads spin on a shared 2-core box (measured 25x slower)
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [0, 1, 2] if full else [0]
    report = Report(
        library="recap-datacomp",
        title="Recap-DataComp-1B: part B is the paper's QUALITATIVE mix-ratio claim on SYNTHETIC "
        "data (not its COCO/Flickr numbers); part A runs the pipeline on real photos",
        setup={
            "part_A": "10 scikit-image photos (256x256 JPEG q90) in 3 shards; tiny random LLaVA "
            "(offline, word-level vocabulary), greedy, 24 new tokens, batch 2, parts of 2 rows",
            "part_B": {
                "train": B_TRAIN,
                "test": B_TEST,
                "zero_shot_test": B_ZS,
                "steps": B_STEPS,
                "batch": B_BATCH,
                "lr": B_LR,
                "clip": B_MODEL,
                "p": list(PS),
                "seeds": seeds,
            },
            "torch_threads": 1,
        },
    )
    details: dict[str, Any] = {}
    if "A" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            details["A"] = part_a(report, Path(tmp))
    if "B" in parts:
        details["B"] = part_b(report, seeds, progress)
        try:
            _plot(out / "recap-datacomp.png", details["B"]["mean"])
            report.figures.append("recap-datacomp.png")
        except ImportError:  # pragma: no cover - matplotlib missing
            pass
        report.notes.append(
            "Part B is the qualitative claim on synthetic data: 32x32 scenes of 1-3 coloured "
            "shapes; recaption = full structured description, alt-text = 50 % one noun, 20 % "
            "wrong colour, 15 % junk tokens, 15 % correct short phrase. It is not the paper's "
            "COCO/Flickr30K or ImageNet numbers."
        )
    report.runtime_s = time.perf_counter() - start
    return report


def main(out: str | Path = "reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write its report into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/recap-datacomp.md``, and the JSON one beside it.
    """
    return run(full=full, out=out).write(out)
