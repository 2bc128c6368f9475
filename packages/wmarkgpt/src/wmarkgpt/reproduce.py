"""Reproduce WMarkGPT's claims, small, on real input (``wmarkgpt reproduce``).

A. Paper Table 1 (WQA-Real, 500 images) and the Q-score correlations, re-computed from the
   official evaluation files shipped with the library: compat mode must give the paper's numbers;
   the correct metrics stand beside them; WMarkGPT must rank first in every column.
B. "Visibility is predictable without the original": a synthetic set from real covers
   (scikit-image photos, random crops and flips) and real logos (scikit-image's logo,
   matplotlib's logo2, Pillow-rendered text), built by :func:`wmarkgpt.build_synthetic`
   (2 processes); a small CNN regresses the score from the stego alone, against a
   global-statistic baseline, on held-out cover photos.
C. Real invisible watermarks (invisible-watermark's dwtDct, dwtDctSvd, rivaGan; 32 random bits)
   on 4 real covers: bit accuracy clean and after JPEG q50 4:4:4, PSNR.

The pass rules below were written before the first run and are never moved after one
(DECISIONS 3).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from icml25_core import Claim, Report

# ---- pass rules (written before the first run) ---------------------------------------------
TABLE_TOL = 5e-5  # spec Sec. 4: BLEU-1 / ROUGE-L / ACC of the compat mode vs the paper
QSCORE_TOL = 1e-4  # spec Sec. 4: SRCC / PLCC
CNN_SRCC_MIN = 0.85  # spec Sec. 4 B (exploratory; the paper's MLLM: 0.94 at 224^2)
BASELINE_GAP_MIN = 0.20  # "the global-statistic baseline must score far lower": CNN - baseline
PSNR_TOL_DB = 0.5  # C: astronaut PSNR within 0.5 dB of the spec's 37.3 / 37.6 / 40.9 dB
JPEG_ACC_MIN = 0.9  # C: dwtDctSvd and rivaGan keep >= 0.9 bit accuracy after JPEG q50 4:4:4

PAPER_TABLE = {  # spec Sec. 4 A (paper Table 1, WQA-Real): BLEU-1, ROUGE-L, Vis. ACC
    "wmarkgpt-7b": (0.4242, 0.4180, 0.550),
    "qwen2-vl-7b-instruct": (0.3278, 0.2885, 0.156),
    "mplug-owl2-7B": (0.2791, 0.2771, 0.110),
    "qwen-vl-chat": (0.2546, 0.2532, 0.170),
    "llava_1.5_13b_hf": (0.2284, 0.2560, 0.136),
    "llava_1.5_7b_hf": (0.2366, 0.2697, 0.118),
    "Efficient-Large-Model-NVILA-8B": (0.1897, 0.2531, 0.172),
}
PAPER_QSCORE = {"real": (0.6968, 0.7498), "synthetic": (0.9409, 0.9378)}
PAPER_PSNR = {"dwtDct": 37.3, "dwtDctSvd": 37.6, "rivaGan": 40.9}


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}"


def part_a(report: Report) -> dict:
    """Table 1 and the Q-score correlations from the shipped official files."""
    from .metrics import evaluate, evaluate_qscore
    from .official import OFFICIAL_MODELS, official_file

    rows, worst = {}, 0.0
    test = official_file("test")
    for model in OFFICIAL_MODELS:
        answers = official_file("answers", model)
        compat = evaluate(answers, test, compat="wmarkgpt")
        correct = evaluate(answers, test)
        rows[model] = (compat, correct)
        got = (compat.bleu1, compat.rouge_l, compat.acc)
        worst = max(worst, *(abs(g - p) for g, p in zip(got, PAPER_TABLE[model], strict=True)))
    header = (
        "| Model | BLEU-1 (paper / compat) | ROUGE-L (paper / compat) | ACC (paper / compat) "
        "| BLEU-1 | ROUGE-L (rouge-score) | ACC (exact) | corpus BLEU-4 |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [header]
    for model, (c, k) in rows.items():
        p = PAPER_TABLE[model]
        lines.append(
            f"| {OFFICIAL_MODELS[model]} | {p[0]:.4f} / {_fmt(c.bleu1)} | {p[1]:.4f} / "
            f"{_fmt(c.rouge_l)} | {p[2]:.3f} / {_fmt(c.acc, 3)} | {_fmt(k.bleu1)} | "
            f"{_fmt(k.rouge_l)} | {_fmt(k.acc, 3)} | {_fmt(k.bleu4)} |"
        )
    report.tables["Table 1 (WQA-Real, 500): paper, compat, correct metrics"] = "\n".join(lines)
    report.claims.append(
        Claim.judge(
            "Compat mode re-computes paper Table 1 (BLEU-1, ROUGE-L, Vis. ACC) for all 7 models "
            "from the official answers",
            "Table 1 (21 numbers, spec Sec. 4 A)",
            f"largest |compat - paper| = {worst:.2e}",
            worst <= TABLE_TOL,
            f"every |difference| <= {TABLE_TOL}",
        )
    )
    q = {
        "real": evaluate_qscore(official_file("qscore-real")),
        "synthetic": evaluate_qscore(official_file("qscore-synthetic")),
    }
    qdiff = max(abs(a - b) for s in q for a, b in zip(q[s], PAPER_QSCORE[s], strict=True))
    report.claims.append(
        Claim.judge(
            "Q-score (softmax over the 5 level-word logits, weights 5..1) correlates with human "
            "(Real) and synthetic scores",
            "SRCC / PLCC: Real 0.6968 / 0.7498, Synthetic 0.9409 / 0.9378",
            f"Real {q['real'][0]:.4f} / {q['real'][1]:.4f}, Synthetic {q['synthetic'][0]:.4f} / "
            f"{q['synthetic'][1]:.4f}",
            qdiff <= QSCORE_TOL,
            f"every |difference| <= {QSCORE_TOL}",
        )
    )
    columns = {
        "compat BLEU-1": lambda r: r[0].bleu1,
        "compat ROUGE-L": lambda r: r[0].rouge_l,
        "compat ACC": lambda r: r[0].acc,
        "BLEU-1": lambda r: r[1].bleu1,
        "ROUGE-L (rouge-score)": lambda r: r[1].rouge_l,
        "ACC (exact)": lambda r: r[1].acc,
        "corpus BLEU-4": lambda r: r[1].bleu4,
    }
    not_first = []
    for name, get in columns.items():
        best = max(rows, key=lambda m: get(rows[m]))
        ours = get(rows["wmarkgpt-7b"])
        if best != "wmarkgpt-7b" and get(rows[best]) >= ours:
            not_first.append(f"{name} (best {OFFICIAL_MODELS[best]})")
    report.claims.append(
        Claim.judge(
            "WMarkGPT-7B ranks first in every column, paper and correct metrics alike",
            "first in every column of Table 1",
            "first in all 7 columns" if not not_first else "not first in: " + ", ".join(not_first),
            not not_first,
            "strictly highest value in each of the 7 columns",
            note="the strongest baseline per column is named where WMarkGPT is not first",
        )
    )
    return {
        "table": {m: {"compat": c.as_dict(), "correct": k.as_dict()} for m, (c, k) in rows.items()},
        "qscore": q,
    }


# ---- B: synthetic set, CNN vs global statistics ---------------------------------------------


def real_covers() -> dict[str, np.ndarray]:
    """RGB uint8 photos of scikit-image (greyscale ones converted to RGB)."""
    from skimage import data

    covers = {
        "astronaut": data.astronaut(),
        "coffee": data.coffee(),
        "chelsea": data.chelsea(),
        "rocket": data.rocket(),
        "motorcycle": data.stereo_motorcycle()[0],
        "hubble_deep_field": data.hubble_deep_field(),
        "immunohistochemistry": data.immunohistochemistry(),
        "camera": data.camera(),
        "coins": data.coins(),
        "moon": data.moon(),
        "page": data.page(),
        "brick": data.brick(),
        "grass": data.grass(),
        "gravel": data.gravel(),
        "retina": data.retina(),
        "colorwheel": data.colorwheel(),
    }
    out = {}
    for name, img in covers.items():
        img = np.asarray(img)
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        out[name] = np.ascontiguousarray(img[..., :3]).astype(np.uint8)
    return out


def real_logos(size: tuple[int, int]) -> list:
    """Real logos: scikit-image's ``logo.png``, matplotlib's ``logo2.png`` and Pillow text."""
    import matplotlib.cbook as cbook
    from PIL import Image, ImageDraw, ImageFont
    from skimage import data

    from .synth import prepare_logo

    logos = [
        prepare_logo(data.logo(), size=size, name="skimage-logo"),
        prepare_logo(
            np.asarray(
                Image.open(str(cbook.get_sample_data("logo2.png", asfileobj=False))).convert("RGBA")
            ),
            size=size,
            name="matplotlib-logo2",
        ),
    ]
    font = ImageFont.load_default(size=48)
    for k, (text, colour) in enumerate(
        [
            ("WMarkGPT", (255, 255, 255)),
            ("(c) 2025", (20, 20, 20)),
            ("SAMPLE", (220, 30, 30)),
            ("ICML", (30, 60, 220)),
        ]
    ):
        canvas = Image.new("RGBA", (300, 80), (0, 0, 0, 0))
        ImageDraw.Draw(canvas).text((8, 8), text, font=font, fill=(*colour, 255))
        logos.append(prepare_logo(np.asarray(canvas), size=size, name=f"text-{k}"))
    return logos


def _global_features(images: np.ndarray) -> np.ndarray:
    """Global statistics of each image: channel means and std, gradient energy, saturation."""
    x = images.astype(np.float64) / 255
    gy, gx = np.abs(np.diff(x, axis=1)).mean((1, 2, 3)), np.abs(np.diff(x, axis=2)).mean((1, 2, 3))
    sat = (x.max(-1) - x.min(-1)).mean((1, 2))
    return np.column_stack([x.mean((1, 2)), x.std((1, 2)), gx, gy, sat])


def part_b(
    report: Report,
    out: Path,
    *,
    n_images: int,
    side: int,
    epochs: int,
    seed: int = 0,
    workers: int = 2,
    progress: bool = True,
) -> dict:
    import torch
    from PIL import Image
    from scipy.stats import spearmanr

    from .dataset import build_synthetic

    rng = np.random.default_rng(seed)
    photos = real_covers()
    test_sources = {"chelsea", "hubble_deep_field", "grass"}  # held-out photos
    names = sorted(photos)
    covers = []
    for i in range(n_images):
        src = names[i % len(names)]
        img = photos[src]
        H, W = img.shape[:2]
        c = int(rng.integers(min(H, W) // 3, min(H, W) + 1))
        y, x = int(rng.integers(0, H - c + 1)), int(rng.integers(0, W - c + 1))
        resized = Image.fromarray(img[y : y + c, x : x + c]).resize(
            (side, side), Image.Resampling.BICUBIC
        )
        crop = np.asarray(resized)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        covers.append((src, np.ascontiguousarray(crop)))
    logos = real_logos((side, side))
    folder = out / "wmarkgpt-synthetic"
    t0 = time.perf_counter()
    records = build_synthetic(
        covers, logos, n_images, folder, seed=seed, size=None, workers=workers, progress=progress
    )
    build_s = time.perf_counter() - t0
    images = np.stack([np.asarray(Image.open(folder / r["image"])) for r in records])
    scores = np.array([r["gt_score"] for r in records])
    is_test = np.array([r["id"].rsplit("-", 1)[0] in test_sources for r in records])
    Xtr, Xte, ytr, yte = images[~is_test], images[is_test], scores[~is_test], scores[is_test]

    # global-statistic baseline: least squares on global features (the strongest we tried: one)
    F = _global_features(images)
    A = np.column_stack([F, np.ones(len(F))])
    coef, *_ = np.linalg.lstsq(A[~is_test], ytr, rcond=None)
    base_srcc = float(spearmanr(A[is_test] @ coef, yte)[0])

    torch.manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveMaxPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 1),
    )
    to_t = lambda a: torch.from_numpy(a).permute(0, 3, 1, 2).float() / 255  # noqa: E731
    xtr, xte = to_t(Xtr), to_t(Xte)
    ttr = torch.from_numpy(ytr).float()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3)
    steps = epochs * int(np.ceil(len(xtr) / 64))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    from tqdm.auto import tqdm

    t1 = time.perf_counter()
    gen = torch.Generator().manual_seed(seed)
    with tqdm(total=steps, desc="wmarkgpt CNN", disable=not progress) as bar:
        for _ in range(epochs):
            perm = torch.randperm(len(xtr), generator=gen)
            for k in range(0, len(xtr), 64):
                idx = perm[k : k + 64]
                loss = torch.nn.functional.mse_loss(net(xtr[idx]).squeeze(1), ttr[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                bar.update()
    train_s = time.perf_counter() - t1
    with torch.no_grad():
        raw = torch.cat([net(xte[k : k + 256]).squeeze(1) for k in range(0, len(xte), 256)])
    pred = raw.numpy().astype(np.float64)
    cnn_srcc = float(spearmanr(pred, yte)[0])
    report.claims.append(
        Claim.judge(
            "Visibility is predictable from the watermarked image alone (no original): a small CNN "
            "on stego images",
            "WMarkGPT (MLLM) SRCC 0.9409 on WQA-Synthetic at 224^2 (Q-score file)",
            f"CNN held-out SRCC {cnn_srcc:.3f} ({len(yte)} images of held-out photos, {side}^2)",
            cnn_srcc >= CNN_SRCC_MIN,
            f"SRCC >= {CNN_SRCC_MIN} (exploratory)",
            note=f"{len(ytr)} training images; {epochs} epochs, {train_s:.0f} s",
        )
    )
    report.claims.append(
        Claim.judge(
            "The no-reference judgement needs more than global image statistics",
            "not in the paper (spec Sec. 4 B: the baseline must score far lower)",
            f"global-statistic baseline SRCC {base_srcc:.3f} vs CNN {cnn_srcc:.3f}",
            cnn_srcc - base_srcc >= BASELINE_GAP_MIN,
            f"CNN - baseline >= {BASELINE_GAP_MIN}",
            note="baseline: least squares on channel means/stds, gradient energy and saturation",
        )
    )
    return {
        "cnn_srcc": cnn_srcc,
        "baseline_srcc": base_srcc,
        "n_train": len(ytr),
        "n_test": len(yte),
        "build_s": build_s,
        "train_s": train_s,
        "pred": pred.tolist(),
        "truth": yte.tolist(),
    }


# ---- C: real invisible watermarks -----------------------------------------------------------


def part_c(report: Report, *, seed: int = 0) -> dict:
    from skimage import data

    from .invisible import METHODS, bit_accuracy, decode_invisible, embed_invisible, jpeg, psnr

    covers = {
        "astronaut": data.astronaut(),
        "coffee": data.coffee(),
        "chelsea": data.chelsea(),
        "rocket": data.rocket(),
    }
    rng = np.random.default_rng(seed)
    rows, results = [], {}
    for method in METHODS:
        for name, img in covers.items():
            bits = rng.integers(0, 2, 32).astype(bool)
            stego = embed_invisible(img, bits, method)
            clean = bit_accuracy(decode_invisible(stego, 32, method), bits)
            attacked = bit_accuracy(decode_invisible(jpeg(stego, 50, "4:4:4"), 32, method), bits)
            results[method, name] = (psnr(img, stego), clean, attacked)
            rows.append(
                f"| {method} | {name} {img.shape[1]}x{img.shape[0]} | "
                f"{results[method, name][0]:.2f} | {clean:.3f} | {attacked:.3f} |"
            )
    report.tables["Real invisible watermarks (32 bits; JPEG q50, 4:4:4)"] = "\n".join(
        [
            "| Method | Cover | PSNR (dB) | bit acc. clean | bit acc. JPEG q50 |",
            "| --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    clean_all = min(v[1] for v in results.values())
    failed = [f"{m}/{n}" for (m, n), v in results.items() if v[1] < 1.0]
    report.claims.append(
        Claim.judge(
            "Real invisible watermarks round-trip: bit accuracy 1.0 on clean images",
            "spec Sec. 4 C: 1.0 clean for dwtDct, dwtDctSvd, rivaGan",
            f"lowest clean bit accuracy {clean_all:.3f}"
            + (f" (below 1 on {', '.join(failed)})" if failed else ""),
            clean_all == 1.0,
            "1.0 for all 3 methods on all 4 covers",
        )
    )
    astro = {m: results[m, "astronaut"][0] for m in METHODS}
    report.claims.append(
        Claim.judge(
            "The marks are invisible: PSNR on astronaut as measured by the spec",
            "37.3 / 37.6 / 40.9 dB (dwtDct / dwtDctSvd / rivaGan, spec Sec. 4 C)",
            " / ".join(f"{astro[m]:.2f}" for m in METHODS) + " dB",
            all(abs(astro[m] - PAPER_PSNR[m]) <= PSNR_TOL_DB for m in METHODS),
            f"each within {PSNR_TOL_DB} dB",
        )
    )
    robust = {m: float(np.mean([results[m, n][2] for n in covers])) for m in METHODS}
    report.claims.append(
        Claim.judge(
            "dwtDctSvd and rivaGan survive JPEG q50 with 4:4:4 chroma",
            "spec Sec. 4 C (JPEG q50, 4:4:4); DEPNOTES: dwtDct does not",
            ", ".join(f"{m} {robust[m]:.3f}" for m in METHODS) + " (mean bit accuracy)",
            min(robust["dwtDctSvd"], robust["rivaGan"]) >= JPEG_ACC_MIN,
            f"mean bit accuracy >= {JPEG_ACC_MIN} for dwtDctSvd and rivaGan",
            note="dwtDct is reported, not judged",
        )
    )
    return {f"{m}/{n}": v for (m, n), v in results.items()}


def _scatter(path: Path, b: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .metrics import expected_score
    from .official import official_file

    with __import__("gzip").open(official_file("qscore-real"), "rt") as f:
        q = json.load(f)
    from .levels import VISIBILITY_LEVELS

    logits = np.array([[v["logits"][w] for w in VISIBILITY_LEVELS] for v in q.values()])
    gt = np.array([v["gt_score"] for v in q.values()])
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    axes[0].scatter(gt, expected_score(logits), s=6, alpha=0.5)
    axes[0].set(
        title="WMarkGPT Q-score, WQA-Real (official logits)",
        xlabel="human gt_score",
        ylabel="predicted score",
    )
    axes[1].scatter(b["truth"], b["pred"], s=6, alpha=0.5, color="C1")
    axes[1].set(
        title="Small CNN, synthetic held-out photos",
        xlabel="score 5 - 20w",
        ylabel="predicted score",
    )
    for ax in axes:
        ax.plot([0, 5], [0, 5], "k--", lw=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(
    full: bool = False,
    out="reports",
    progress: bool = True,
    *,
    n_images: int | None = None,
    epochs: int | None = None,
    parts: str = "ABC",
) -> Report:
    """Measure the paper's claims (parts A, B, C of the module docstring) and return the report.

    Parameters
    ----------
    full : bool, default=False
        B at 112^2 with 6,000 images and more epochs instead of 3,000 at 64^2.
    out : path, default="reports"
        Folder of the report, the plot and the synthetic set (resumable).
    progress : bool, default=True
    n_images, epochs : int, optional
        Override B's size (tests).
    parts : str, default="ABC"
        Which parts to run.

    Returns
    -------
    icml25_core.Report
        One claim per pass rule, each written before the first run.
    """
    import torch

    torch.set_num_threads(2)
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    side = 112 if full else 64
    n_images = n_images or (6000 if full else 3000)
    epochs = epochs or (12 if full else 8)
    report = Report(
        library="wmarkgpt",
        title="WMarkGPT: official Table 1 re-computed, no-reference visibility, invisible marks",
        setup={
            "seed": 0,
            "synthetic_images": n_images,
            "side": side,
            "cnn_epochs": epochs,
            "data": "official WQA-Real files (Apache-2.0, shipped trimmed); scikit-image "
            "photos; skimage/matplotlib/Pillow logos",
            "torch_threads": 2,
        },
    )
    details: dict = {}
    if "A" in parts:
        details["A"] = part_a(report)
    if "B" in parts:
        details["B"] = part_b(
            report, out, n_images=n_images, side=side, epochs=epochs, progress=progress
        )
        try:
            _scatter(out / "wmarkgpt.png", details["B"])
            report.figures.append("wmarkgpt.png")
        except ImportError:  # pragma: no cover - matplotlib missing
            pass
    if "C" in parts:
        details["C"] = part_c(report)
    report.notes.append(
        "Part B's synthetic images sit in <out>/wmarkgpt-synthetic (a rerun reuses them). The "
        "LLM-Score column of Table 1 needs an API and is not recomputed."
    )
    if "B" in details:
        details["B"] = {k: v for k, v in details["B"].items() if k not in ("pred", "truth")}
    (out / "wmarkgpt-extra").mkdir(
        exist_ok=True
    )  # not beside the reports: *.json there are reports
    (out / "wmarkgpt-extra" / "details.json").write_text(json.dumps(details, indent=1, default=str))
    report.notes.append("Every number of the run: <out>/wmarkgpt-extra/details.json.")
    report.runtime_s = time.perf_counter() - start
    return report


def main(out="reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write its report into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/wmarkgpt.md``, and the JSON one beside it.
    """
    return run(full=full, out=out).write(out)
