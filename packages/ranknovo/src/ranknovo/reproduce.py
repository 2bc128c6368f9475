"""Reproduce RankNovo's headline claim, small, on real spectra.

Run by ``ranknovo reproduce [--out reports] [--full]`` or ``nox -s reproduce -- ranknovo``; both
write ``reports/ranknovo.md`` and its JSON twin (plus ``ranknovo_bars.png`` with matplotlib).

Input: the 128 annotated mouse spectra and the mouse FASTA of the casanovo 5.2.1 sdist (bundled in
``ranknovo/data``). The base models' weights are unreachable, so six simulated base models
(:class:`ranknovo.simulate.BaseModelSimulator`, calibrated on the simulator alone before the
first RankNovo run) propose candidates; a tiny RankNovo trained for a fixed time on synthetic
b/y spectra of FASTA tryptic peptides (the 128 test peptides excluded) reranks them.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from icml25_core import Claim, Report, Verdict, data_path, progress, seed_everything

from .data import CandidateSet, collate, preprocess, read_mgf
from .metrics import aa_match, evaluate
from .model import RankNovo
from .simulate import HELDOUT_ERRORS, BaseModelSimulator, digest_fasta, synthetic_spectrum
from .train import fit, make_loader
from .vocab import Vocab

# ---- pass rules, written before the first run and never moved -------------------------------
PASS_DELTA_POINTS = 1.5  # mean peptide-recall gain over the best base model (points)
PASS_P_VALUE = 0.05  # one-sided paired sign test over spectrum x seed
FAIL_DELTA_POINTS = 0.0  # Δ <= 0: not reproduced; in between: inconclusive
PAPER = "0.738 vs best base 0.708 peptide recall, +3.0 points (README / Tab. 1, 9-species)"
# ---- setup (default run <= 5 min on 2 cores) --------------------------------------------------
SEED = 2007
CANDIDATE_SEEDS = 10
N_TRAIN = 4000
# Fixed epoch counts (never a wall-time box: the result must not depend on the machine's load).
# The first two runs used a 150 s box and got 2 and 3 epochs under different loads; 3 is the
# count the less loaded run reached (README, Reproduction, says what each run gave).
EPOCHS = 3
FULL_EPOCHS = 5
SMALL: dict = dict(dim=64, heads=4, ff=128, enc_layers=2, dec_layers=2, dropout=0.1)
FULL: dict = dict(dim=128, heads=4, ff=256, enc_layers=4, dec_layers=4, dropout=0.1)


def _sign_test(wins: int, losses: int) -> float:
    """One-sided exact sign test P(X >= wins), X ~ Bin(wins + losses, 1/2)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(wins, n + 1)) / 2.0**n


def _training_set(vocab, sim, peptides, rng, n):
    picks = rng.choice(len(peptides), size=min(n, len(peptides)), replace=False)
    spectra, prec, cands, truths = [], [], [], []
    for i in progress(picks, desc="synthetic training spectra", unit="spectrum"):
        pep = peptides[int(i)]
        z = 3 if rng.random() < 0.1 else 2
        spec = synthetic_spectrum(pep, z, vocab, rng)
        c, _ = sim.candidates(pep, z, rng)
        spectra.append(preprocess(spec))
        prec.append([spec.precursor_mz, z])
        cands.append(c)
        truths.append(pep)
    return CandidateSet(spectra, prec, cands, truths, vocab)


def _rerank(model, spectra, prec, cands, vocab, batch=64):
    ds = CandidateSet(spectra, prec, cands, None, vocab)
    out = []
    for s in range(0, len(ds), batch):
        b = collate([ds[i] for i in range(s, min(s + batch, len(ds)))])
        best, _ = model.rerank(b["spectra"], b["precursors"], b["tokens"])
        out.extend(best.tolist())
    return out


def _plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    names = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 3.5))
    x = np.arange(len(names))
    ax.bar(x - 0.2, [r[1] for r in rows], 0.4, label="AA precision")
    ax.bar(x + 0.2, [r[2] for r in rows], 0.4, label="peptide recall")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("128 mouse spectra x 10 candidate seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _evaluate_run(model, sim, spectra, vocab, seeds, label):
    """Peptide-level correctness of every method on spectrum x seed."""
    trues = [s.peptide for s in spectra]
    pre = [preprocess(s) for s in spectra]
    prec = [[s.precursor_mz, s.charge] for s in spectra]
    m = sim.n_models
    names = [f"base {k + 1}" for k in range(m)] + ["random", "majority vote", "RankNovo", "oracle"]
    ok: dict[str, list[bool]] = {n: [] for n in names}
    preds: dict[str, list] = {n: [] for n in names}
    all_trues: list = []
    for seed in progress(range(seeds), desc=f"rerank {label}", unit="seed"):
        rng = np.random.default_rng(1000 + seed)
        cands, corr = [], []
        for s in spectra:
            c, k = sim.candidates(s.peptide, s.charge, rng)
            cands.append(c)
            corr.append(k)
        best = _rerank(model, pre, prec, cands, vocab)
        for i, (c, k) in enumerate(zip(cands, corr, strict=True)):
            choice = {f"base {j + 1}": j for j in range(m)}
            choice["random"] = int(rng.integers(m))
            keys = ["".join(x) for x in c]
            counts = {kk: keys.count(kk) for kk in keys}
            choice["majority vote"] = max(range(m), key=lambda j: (counts[keys[j]], -j))
            choice["RankNovo"] = int(best[i])
            choice["oracle"] = int(np.argmax(k)) if k.any() else 0
            for n in names:
                pred = c[choice[n]]
                preds[n].append(pred)
                ok[n].append(bool(aa_match(pred, trues[i], vocab)[1]))
            all_trues.append(trues[i])
    metrics = {n: evaluate(preds=preds[n], trues=all_trues, vocab=vocab) for n in names}
    return names, {n: np.array(v) for n, v in ok.items()}, metrics


def run(full: bool = False, out=None) -> Report:
    """Measure the headline claim (RankNovo beats the best single base model) and return the
    report.

    Parameters
    ----------
    full : bool, default=False
        dim 128, 4+4 layers, 20 min per model, 3 seeds, ``use_col=False`` ablation and a held-out
        error process (zero-shot), instead of the ≤ 5-minute default.
    out : str or os.PathLike, optional
        Folder for the bar plot (written only when given).

    Returns
    -------
    icml25_core.Report
    """
    t0 = time.perf_counter()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    vocab = Vocab.massivekb()
    mgf = data_path("ranknovo", "data", "sample_preprocessed_spectra.mgf")
    fasta = data_path("ranknovo", "data", "preprocessed_mouse.fasta")
    spectra = read_mgf(mgf)
    test_keys = {vocab.to_massivekb(s.peptide or "").replace("I", "L") for s in spectra}
    peptides = [p for p in digest_fasta(fasta) if p.replace("I", "L") not in test_keys]
    sim = BaseModelSimulator(vocab=vocab)
    epochs = FULL_EPOCHS if full else EPOCHS
    cfg = FULL if full else SMALL
    train_seeds = [SEED, SEED + 1, SEED + 2] if full else [SEED]
    report = Report(
        library="ranknovo",
        title="RankNovo: list-wise reranking beats the best single de novo model",
        setup={
            "input": "casanovo 5.2.1 sdist sample_data: 128 annotated mouse spectra (127 z=2), "
            "preprocessed_mouse.fasta (148 proteins)",
            "base models": "6 simulated (precursor-consistent, correlated errors), calibrated on "
            "the simulator alone before RankNovo's first run: best 0.698, oracle 0.877",
            "training": f"{N_TRAIN} synthetic b/y spectra of FASTA tryptic peptides (test peptides "
            f"excluded), {epochs} epochs, model {cfg}",
            "evaluation": f"{len(spectra)} real spectra x {CANDIDATE_SEEDS} candidate seeds",
            "full": full,
            "seed": SEED,
        },
    )
    results = []
    for k, seed in enumerate(train_seeds):
        seed_everything(seed)
        rng = np.random.default_rng(seed)
        train = _training_set(vocab, sim, peptides, rng, N_TRAIN * (3 if full else 1))
        loader = make_loader(train, batch_size=32, shuffle=True)
        variants = [("RankNovo", True)] + ([("RankNovo use_col=False", False)] if full else [])
        for name, use_col in variants:
            seed_everything(seed)
            model = RankNovo(**cfg, use_col=use_col, vocab=vocab)
            hist = fit(
                model, loader, epochs=epochs, lr=1e-3 if not full else 5e-4,
                log=lambda line, tag=f"{name} seed {seed}": print(f"  [{tag}] {line}", flush=True),
            )  # fmt: skip
            model.eval()
            names, ok, metrics = _evaluate_run(
                model, sim, spectra, vocab, CANDIDATE_SEEDS, f"{name} seed {seed}"
            )
            results.append((name, seed, names, ok, metrics, hist))
            if full and k == 0 and name == "RankNovo":
                held = BaseModelSimulator(
                    [(a, b, c, HELDOUT_ERRORS) for a, b, c, _ in sim.models], vocab=vocab
                )
                zs = _evaluate_run(model, held, spectra, vocab, CANDIDATE_SEEDS, "zero-shot")
                results.append(("RankNovo zero-shot errors", seed, *zs, hist))
    # ---- headline: the first RankNovo run -------------------------------------------------
    name, seed, names, ok, metrics, hist = results[0]
    base = [n for n in names if n.startswith("base")]
    best = max(base, key=lambda n: ok[n].mean())
    strongest = max([*base, "majority vote"], key=lambda n: ok[n].mean())
    rows = []
    for n in names:
        mt = metrics[n]
        rows.append((n, mt["aa_precision"], mt["peptide_recall"], mt["aa_recall"]))
    table = (
        "| method | AA precision | AA recall | peptide recall |\n|---|---|---|---|\n"
        + "\n".join(f"| {n} | {p:.3f} | {r:.3f} | {pr:.3f} |" for n, p, pr, r in rows)
    )
    report.tables["Metrics (first training seed)"] = table

    def judge(claim, ref):
        delta = 100.0 * (ok["RankNovo"].mean() - ok[ref].mean())
        wins = int((ok["RankNovo"] & ~ok[ref]).sum())
        losses = int((~ok["RankNovo"] & ok[ref]).sum())
        p = _sign_test(wins, losses)
        n = ok["RankNovo"].size
        se = 100.0 * float(np.sqrt((wins + losses) / n**2 - ((wins - losses) / n) ** 2 / n))
        measured = (
            f"RankNovo {ok['RankNovo'].mean():.3f} vs {ref} {ok[ref].mean():.3f}: "
            f"Δ = {delta:+.1f} ± {1.96 * se:.1f} points (95 %), sign test {wins}:{losses}, "
            f"p = {p:.3g}"
        )
        rule = (
            f"reproduced if Δ >= +{PASS_DELTA_POINTS} points and one-sided paired sign test "
            f"p < {PASS_P_VALUE}; not reproduced if Δ <= {FAIL_DELTA_POINTS}; else inconclusive"
        )
        if delta >= PASS_DELTA_POINTS and p < PASS_P_VALUE:
            verdict, note = Verdict.REPRODUCED, ""
        elif delta <= FAIL_DELTA_POINTS:
            verdict, note = Verdict.NOT_REPRODUCED, "RankNovo does not beat it here"
        else:
            verdict, note = Verdict.NOT_REPRODUCED, "inconclusive (between the two rules)"
        return Claim(claim, PAPER, measured, verdict, rule, note), delta, p

    for claim, ref in _comparisons(best, strongest):
        report.claims.append(judge(claim, ref)[0])
    report.notes.append(
        f"Training: {hist['epochs_done']} epochs, {hist['steps']} steps, losses "
        + ", ".join(f"{x:.3f}" for x in hist["losses"])
    )
    report.notes.append(
        "Scale: the paper trains dim 512, 8+8 layers on ~30 M MassIVE-KB PSMs with real base "
        "models; here a dim-64 2+2-layer model trains for minutes on synthetic spectra and reranks "
        "simulated candidates on 128 real spectra. A failure here says little about the paper's "
        "claim at its scale."
    )
    if full:
        extra = []
        for name, seed, names_, ok_, _metrics, _ in results:
            best_ = max((n for n in names_ if n.startswith("base")), key=lambda n: ok_[n].mean())
            extra.append(
                f"| {name} | {seed} | {ok_['RankNovo'].mean():.3f} | {ok_[best_].mean():.3f} | "
                f"{ok_['oracle'].mean():.3f} |"
            )
        report.tables["--full runs"] = (
            "| run | seed | RankNovo recall | best base | oracle |\n|---|---|---|---|---|\n"
            + "\n".join(extra)
        )
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        if _plot(rows, Path(out) / "ranknovo_bars.png"):
            report.figures.append("ranknovo_bars.png")
    report.runtime_s = time.perf_counter() - t0
    return report


def _comparisons(best: str, strongest: str) -> list[tuple[str, str]]:
    """The (claim, reference method) rows of the report, each reference once.

    Always the best single base model and majority vote; the strongest baseline of the run is
    one of the two, so its row is named after it instead of being repeated.
    """
    if strongest == "majority vote":
        return [
            ("RankNovo beats the best single base model (peptide recall)", best),
            ("RankNovo beats the strongest baseline of the run (majority vote)", "majority vote"),
        ]
    return [
        ("RankNovo beats the best single base model (peptide recall), the strongest baseline "
         "of the run", best),
        ("RankNovo beats majority vote over the six models", "majority vote"),
    ]  # fmt: skip


def main(out="reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write its report into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/ranknovo.md``, and the JSON one beside it.
    """
    return run(full=full, out=out).write(out)
