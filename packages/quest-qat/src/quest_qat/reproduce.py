"""Reproduce QuEST's headline claim, small, on real text (spec §4).

A randomly initialised ``transformers`` Llama (byte vocabulary, hidden 128, 2 layers) is trained
on the Debian ``fortunes`` corpus in full precision, with QuEST W4A4 and W2A2, and with the
paper's two straight-through baselines at W2A2; the report compares validation losses (nats per
byte, quantizers on), checks that the converted int4 model computes the fake-quantized loss, the
Hadamard's effect on real activations, the scaling-law refit and the Gaussian grid table.

Run by ``quest-qat reproduce [--out reports] [--full] [--data PATH]`` or
``nox -s reproduce -- quest-qat``; writes ``<out>/quest-qat.{md,json}`` and a loss-curve figure.
Finished runs are kept in ``<out>/.checkpoints/quest-qat/`` and reused when the job is restarted.
"""

import copy
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize_scalar
from torch import nn

from icml25_core import Claim, Report, ResultStore, progress, seed_everything

from . import __version__
from .api import QuESTConfig, convert_, prepare_
from .data import load_fortunes, load_text, split_bytes
from .grid import gaussian_mse, optimal_gaussian_scale
from .hadamard import block_hadamard
from .nn import QuESTLinear
from .quantizer import AbsMaxSTEQuantizer, STEQuantizer, TrustQuantizer, quest_quantize
from .scaling_law import ScalingLaw, load_paper_runs
from .training import evaluate, tiny_llama, train

# Pass rules, written before the first run (spec §4) and never moved after it.
GAP_ABSMAX = 0.10  # (a) QuEST W2A2 beats AbsMax-STE W2A2 by at least this (nats/byte)
GAP_FP_W4A4 = 0.08  # (c) QuEST W4A4 - FP at most this
CONVERT_TOL = 1e-4  # (d) converted int4 loss = fake-quant loss within this
MSE_HT_FACTOR = 1.25  # (e) 4-bit MSE with HT <= this x the Gaussian optimum 0.011543
EFF_TOL = 2e-3  # (f) refit efficiencies within this of the paper's
PAPER_ALPHA = (0.7978845587, 1.4935346200, 2.0510683541, 2.5139305786, 2.9160938834,
               3.2765972826, 3.6010497188, 3.8849386788)  # fmt: skip
PAPER_MSE = (0.3633802, 0.1188461, 0.0374397, 0.0115429, 0.0034952, 0.0010400, 0.0003044,
             0.0000878)  # fmt: skip
PAPER_EFF = {"1": 0.020505, "2": 0.151871, "3": 0.433126, "4": 0.691832, "8": 1.016193,
             "fp4": 0.629639, "2.5": 0.381222}  # fmt: skip

QUICK: dict[str, Any] = dict(steps=250, seeds=(0,), batch=16, seq=64, lr=3e-3)
FULL: dict[str, Any] = dict(steps=600, seeds=(0, 1), batch=16, seq=64, lr=3e-3)


def _swap_all(model: nn.Module, make) -> nn.Module:
    """Swap every transformer linear layer (not lm_head) for a QuESTLinear of `make()` pairs."""
    for fqn, module in list(model.named_modules()):
        if type(module) is nn.Linear and not fqn.endswith("lm_head"):
            w_q, a_q = make()
            parent, _, child = fqn.rpartition(".")
            setattr(
                model.get_submodule(parent),
                child,
                QuESTLinear(module.weight, module.bias, w_q, a_q),
            )
    return model


def _runs(full: bool) -> dict:
    """Run name -> function quantizing a fresh model in place."""
    runs = {
        "FP": lambda m: m,
        "QuEST W4A4": lambda m: prepare_(m, QuESTConfig(4, 4)),
        "QuEST W2A2": lambda m: prepare_(m, QuESTConfig(2, 2)),
        "STE W2A2": lambda m: _swap_all(m, lambda: (STEQuantizer(2), STEQuantizer(2))),
        "AbsMax-STE W2A2": lambda m: _swap_all(
            m, lambda: (AbsMaxSTEQuantizer(2), AbsMaxSTEQuantizer(2))
        ),
    }
    if full:
        runs |= {
            "QuEST W1A1 (HT, clip 1.30)": lambda m: prepare_(m, QuESTConfig(1, 1, clip_scale=1.30)),
            "no-HT trust W4A4": lambda m: _swap_all(
                m, lambda: (TrustQuantizer(4), TrustQuantizer(4))
            ),
            "QuEST FP4": lambda m: prepare_(m, QuESTConfig(4, 4, grid="fp4")),
            "QuEST 4:8 W4A4": lambda m: prepare_(m, QuESTConfig(4, 4, sparse48=True)),
        }
    return runs


def _relative_mse(model: nn.Module, val: np.ndarray, seq: int) -> tuple[float, float]:
    """4-bit MSE / mean square of the real inputs of every linear layer (not lm_head), with and
    without the Hadamard rotation, on one validation batch of the trained FP model."""
    inputs = []
    hooks = [
        m.register_forward_hook(lambda mod, args, out: inputs.append(args[0].detach()))
        for fqn, m in model.named_modules()
        if type(m) is nn.Linear and not fqn.endswith("lm_head")
    ]
    with torch.no_grad():
        model(input_ids=torch.from_numpy(val[: 16 * seq].astype(np.int64)).reshape(16, seq))
    for h in hooks:
        h.remove()
    out = []
    for rotate in (True, False):
        errs = []
        for x in inputs:
            x2 = x.reshape(-1, x.shape[-1]).float()
            xhat, _, _ = quest_quantize(x2, 4, rotate=rotate)
            ref = block_hadamard(x2) if rotate else x2
            errs.append(((xhat - ref).square().mean() / ref.square().mean()).item())
        out.append(float(np.mean(errs)))
    return out[0], out[1]


def _grid_table() -> tuple[bool, str]:
    rows, ok = [], True
    for b in range(1, 9):
        mse = gaussian_mse(b)
        best = minimize_scalar(
            lambda s, b=b: gaussian_mse(b, s), bounds=(0.3, 5.0), method="bounded",
            options={"xatol": 1e-10},
        )  # fmt: skip
        ok &= abs(optimal_gaussian_scale(b) - PAPER_ALPHA[b - 1]) < 1e-8  # 10-digit table
        ok &= abs(mse - PAPER_MSE[b - 1]) <= 5e-7 + 1e-5 * PAPER_MSE[b - 1]
        ok &= mse <= 1.002 * best.fun
        rows.append(
            f"b={b}: α {optimal_gaussian_scale(b):.6f} (argmin {best.x:.6f}), MSE {mse:.7f}"
        )
    return bool(ok), "; ".join(rows)


def run(full: bool = False, data=None, out="reports") -> Report:
    """Train the spec's tiny Llama at several precisions and judge the paper's claims.

    Parameters
    ----------
    full : bool, default=False
        600 steps x 2 seeds plus W1A1, no-HT, FP4 and 4:8 runs (about 30 minutes) instead of
        the 250-step quick run (under 5 minutes on 2 cores).
    data : str or Path, optional
        Any text file instead of the Debian fortunes corpus.
    out : str or Path, default="reports"
        Where finished runs are stored for resuming (``<out>/.checkpoints/quest-qat/``).

    Returns
    -------
    icml25_core.Report

    Raises
    ------
    FileNotFoundError
        If the fortunes corpus (Debian package ``fortunes``) or `data` is missing.
    """
    start = time.perf_counter()
    try:
        import transformers  # noqa: F401  (fail before any work when the extra is missing)
    except ImportError as err:
        raise ImportError(
            "the reproduction needs transformers: pip install quest-qat[reproduce]"
        ) from err
    cfg = FULL if full else QUICK
    text = load_fortunes() if data is None else load_text(data)
    train_data, val_data = split_bytes(text)
    counts = np.bincount(train_data, minlength=256).astype(float)
    p = counts / counts.sum()
    vcounts = np.bincount(val_data, minlength=256)
    unigram = float(-(vcounts * np.log(np.where(p > 0, p, 1e-12))).sum() / vcounts.sum())
    store_dir = Path(out) / ".checkpoints" / "quest-qat"
    store = ResultStore(
        store_dir / "runs.jsonl",
        config={**cfg, "full": full, "bytes": len(text), "version": __version__},
    )
    runs = _runs(full)
    total = len(runs) * len(cfg["seeds"]) * cfg["steps"]
    results: dict[str, list[float]] = {}
    curves: dict[str, list] = {}
    with progress(total=total, desc="quest-qat reproduce", unit="step") as bar:
        for name, quantize in runs.items():
            for seed in cfg["seeds"]:
                key = f"{name}|{seed}"
                state_file = store_dir / f"{name.replace(' ', '_').replace(':', '')}-{seed}.pt"
                if key not in store:
                    seed_everything(seed)
                    model = quantize(tiny_llama(seed))
                    curve = train(
                        model, train_data, steps=cfg["steps"], batch=cfg["batch"],
                        seq=cfg["seq"], lr=cfg["lr"], seed=seed, on_step=lambda _: bar.update(),
                    )  # fmt: skip
                    val = evaluate(model, val_data, batch=cfg["batch"], seq=cfg["seq"])
                    if seed == 0 and name in ("FP", "QuEST W4A4"):
                        torch.save(model.state_dict(), state_file)
                    store.put(key, {"val": val, "curve": curve})
                else:
                    bar.update(cfg["steps"])
                rec = store.get(key)
                results.setdefault(name, []).append(rec["val"])
                curves.setdefault(name, []).append(rec["curve"])
    loss = {k: float(np.mean(v)) for k, v in results.items()}

    # (d) the converted int4 model computes the fake-quantized loss
    w4 = prepare_(tiny_llama(0), QuESTConfig(4, 4))
    w4.load_state_dict(torch.load(store_dir / "QuEST_W4A4-0.pt", weights_only=True))
    fake = evaluate(w4, val_data, batch=cfg["batch"], seq=cfg["seq"])
    converted = evaluate(convert_(copy.deepcopy(w4)), val_data, batch=cfg["batch"], seq=cfg["seq"])
    # (e) Hadamard normalisation on the real inputs of the trained FP model
    fp = tiny_llama(0)
    fp.load_state_dict(torch.load(store_dir / "FP-0.pt", weights_only=True))
    mse_ht, mse_noht = _relative_mse(fp, val_data, cfg["seq"])
    # (f) scaling-law refit on the official runs
    law = ScalingLaw("quick").fit(load_paper_runs())
    per_bit = law.efficiency_per_bit()
    best_bits = max((k for k in per_bit if k != "16"), key=lambda k: per_bit[k])
    eff_err = max(abs(law.eff_[k] - PAPER_EFF[k]) for k in PAPER_EFF)
    grid_ok, grid_text = _grid_table()

    q2, q4, fpl = loss["QuEST W2A2"], loss["QuEST W4A4"], loss["FP"]
    ste, absmax = loss["STE W2A2"], loss["AbsMax-STE W2A2"]
    claims = [
        Claim.judge(
            "QuEST W2A2 trains better than the AbsMax-STE W2A2 baseline",
            "QuEST < STE at every bit-width (§4, Fig. 3); spec calibration 2.445 vs 2.711",
            f"{q2:.4f} vs {absmax:.4f} (gap {absmax - q2:.4f})",
            bool(absmax - q2 >= GAP_ABSMAX),
            f"gap >= {GAP_ABSMAX}",
        ),
        Claim.judge(
            "QuEST W2A2 trains better than the paper's STE (α_b·RMS grid) at W2A2",
            "30M on C4, W4A4: QuEST 3.272 vs STE 3.792 (§4)",
            f"{q2:.4f} vs {ste:.4f} (gap {ste - q2:.4f})",
            bool(q2 < ste),
            "QuEST < STE (uncalibrated at this scale)",
        ),
        Claim.judge(
            "QuEST W4A4 stays close to full precision",
            "30M on C4: W4A4 3.272 vs BF16 3.207 (§4); spec calibration 2.406 vs 2.370",
            f"{q4:.4f} - {fpl:.4f} = {q4 - fpl:.4f}",
            bool(q4 - fpl <= GAP_FP_W4A4),
            f"gap <= {GAP_FP_W4A4}",
        ),
        Claim.judge(
            "The packed int4 model computes the fake-quantized loss",
            "gemm-quest reproduces the QAT forward (§5)",
            f"|{converted:.6f} - {fake:.6f}| = {abs(converted - fake):.2e}",
            bool(abs(converted - fake) <= CONVERT_TOL),
            f"<= {CONVERT_TOL:g}",
        ),
        Claim.judge(
            "The Hadamard makes real activations Gaussian enough for the 4-bit optimum",
            "Gaussian 4-bit MSE 0.011543 (§3); no-HT MSE reported, unverified",
            f"HT {mse_ht:.5f}, no HT {mse_noht:.5f}",
            bool(mse_ht <= MSE_HT_FACTOR * 0.011543),
            f"HT <= {MSE_HT_FACTOR} x 0.011543",
        ),
        Claim.judge(
            "The scaling-law refit puts the best efficiency per bit at 4 bits",
            "eff·16/P peaks at 4 bits (2.77), Fig. 1; notebook eff values",
            f"argmax {best_bits} ({per_bit[best_bits]:.3f}); max |Δeff| {eff_err:.2e}",
            bool(best_bits == "4" and eff_err <= EFF_TOL),
            f"argmax = 4 and |Δeff| <= {EFF_TOL}",
        ),
        Claim.judge(
            "The MSE-optimal Gaussian scales and errors hold",
            "official OPTIMAL_GAUSSIAN_SCALES, MSE 0.36338 ... 0.0000878",
            grid_text,
            grid_ok,
            "α = 10-digit table ± 1e-8, MSE = table ± 1e-5 rel, MSE <= 1.002 x min",
            "α_1 = sqrt(2/π) exactly, 2.1e-9 above the official 10-digit constant; the first "
            "run compared at 1e-9, below the table's precision, and was corrected.",
        ),
    ]
    table = "\n".join(
        ["| run | val loss (nats/byte) |", "|---|---|"]
        + [f"| {k} | {v:.4f} |" for k, v in loss.items()]
        + [f"| unigram baseline | {unigram:.4f} |"]
    )
    report = Report(
        library="quest-qat",
        title="QuEST: stable low-bit training, tiny Llama on fortunes",
        claims=claims,
        setup={
            "data": "Debian fortunes" if data is None else str(data),
            "bytes": len(text),
            "model": "transformers LlamaForCausalLM, vocab 256, hidden 128, MLP 512, 2 layers, "
            "4 heads, untied, random init",
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
            "optimizer": "AdamW (0.9, 0.95), wd 0.1 on matrices, 10% warmup, cosine to "
            "0.1 lr, clip 1",
            "validation": "20 fixed batches, quantizers on",
            "torch": torch.__version__,
            "quest_qat": __version__,
            "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, no GPU"
            if not torch.cuda.is_available()
            else torch.cuda.get_device_name(),
        },
        tables={"validation loss": table},
        notes=[
            "Weight decay also shrinks the entries the trust mask excludes (faithful to the "
            "official code).",
            "Small-scale run: the STE baseline (b) was not calibrated before the run; its "
            "verdict is reported as measured.",
        ],
    )
    figure = _plot(curves, Path(out))
    if figure:
        report.figures.append(figure)
    report.runtime_s = time.perf_counter() - start
    return report


def _plot(curves, out: Path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, runs in curves.items():
        steps = [s for s, _ in runs[0]]
        mean = np.mean([[v for _, v in r] for r in runs], axis=0)
        ax.plot(steps, mean, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats/byte)")
    ax.set_title("tiny Llama on fortunes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "quest-qat_loss.png", dpi=120)
    plt.close(fig)
    return "quest-qat_loss.png"


def main(out="reports", full: bool = False, data=None) -> tuple[Path, Path]:
    """Run the reproduction and write its report into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/quest-qat.md``, and the JSON one beside it.
    """
    return run(full=full, data=data, out=out).write(out)
