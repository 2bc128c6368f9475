"""Reproduce De-AntiFake's headline claim, small, on real speech offline.

Run by ``phonepure reproduce [--out reports] [--full]`` or ``nox -s reproduce -- phonepure``;
writes ``reports/phonepure.{md,json}`` and ``reports/phonepure.png``.

Real input: Debian ``espeak-ng`` 1.51 voices (en-us+m1..m7, +f1..f4) reading the project-written
CC0 sentence list ``data/sentences.txt``, and the Debian ``alsa-utils`` recordings
(``/usr/share/sounds/alsa``, one woman, GPL-2, read in place). Protection: AttackVC-emb against
Resemblyzer's GE2E encoder. Purifiers: AS, MS, DS, LPF, QT, AudioPure-tiny and PhonePuRe-tiny
(both trained here for a fixed number of steps, about a minute each on 2 cores).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25_core import Claim, Report, Verdict

# ---- pass rules and sizes: written before the first run, never moved after it ----------------
CLEAN_ACCEPT_MIN = 0.75  # setup valid if clean accept >= this ...
PROTECTED_ACCEPT_MAX = 0.25  # ... and protected accept <= this (spec section 4)
MARGIN_PP_OVER_AP = 0.01  # mean cosine PhonePuRe - AudioPure >= this
MARGIN_AP_OVER_PROT = 0.03  # mean cosine AudioPure - protected >= this
N_TRIALS = 80  # EER trials (40 genuine, 40 impostor), espeak
ATTACK_EPS = 0.01
ATTACK_ITERS = 40
# Training length in optimiser steps, fixed (not a wall-time box: two 40-s boxes gave 60/66 and
# 240/108 steps at load 7 and 2, so the result depended on the machine's load). Chosen on
# 2026-12-06 before the first fixed-step run, from the time budget only: the spec's 70 s per stage
# at the step rates of the earlier runs (~6 DiffWave and ~3 refiner steps/s, batch 4 and 8).
TRAIN_STEPS_DIFFWAVE = 500
TRAIN_STEPS_REFINER = 250
# --full: ~20 min per stage at those rates, 3 seeds, zero-template ablation, BPDA-EOT protection
FULL_STEPS_DIFFWAVE = 8000
FULL_STEPS_REFINER = 3500
FULL_SEEDS = 3
FULL_ATTACK_EOT = 4  # purifier draws per BPDA step (spec section 4: BPDA/EOT protection)
REFINER_BASE = 8  # tiny U-Net width
REFINER_N = 10  # PC steps (paper 30): 10 predictor + 10 corrector network calls
T_STAR = 3
T_STAR_TRAIN_PAIRS = 5
SEED = 0
# ---------------------------------------------------------------------------------------------

ZERO_TEMPLATE = "PhonePuRe-tiny, zero template"  # --full ablation: stage 2 without phonemes
BPDA = "(BPDA-EOT)"  # --full rows on the adaptive protection
ALSA_DIR = Path("/usr/share/sounds/alsa")
MALE = [f"en-us+m{i}" for i in range(1, 8)]
FEMALE = [f"en-us+f{i}" for i in range(1, 5)]
PAPER_ACC = {
    "protected": ".164 / .108 / .039",
    "AudioPure": ".451 / .777 / .712",
    "PhonePuRe": ".762 / .861 / .830",
}


def _log(msg: str) -> None:
    print(f"[phonepure reproduce] {msg}", file=sys.stderr, flush=True)


def sentences() -> list[str]:
    """The bundled CC0 sentence list (comment lines dropped)."""
    text = files("phonepure").joinpath("data/sentences.txt").read_text(encoding="utf-8")
    return [s.strip() for s in text.splitlines() if s.strip() and not s.startswith("#")]


def espeak(text: str, voice: str, workdir: Path, speed: int = 150) -> torch.Tensor:
    """Synthesise `text` with espeak-ng (22 050 Hz) and load it at 16 kHz as (T,)."""
    from .audio import load

    exe = shutil.which("espeak-ng")
    if exe is None:
        raise FileNotFoundError("espeak-ng not found: apt-get install espeak-ng alsa-utils")
    out = workdir / f"{voice.replace('+', '_')}_{abs(hash(text)) % 10**10}.wav"
    subprocess.run([exe, "-v", voice, "-s", str(speed), "-w", str(out), text], check=True)
    return load(out)[0]


def _alsa(name: str) -> torch.Tensor:
    from .audio import load

    path = ALSA_DIR / f"{name}.wav"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: apt-get install alsa-utils")
    return load(path)[0]


def _bootstrap_ci(diff: np.ndarray, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(SEED)
    means = [float(np.mean(rng.choice(diff, size=diff.size))) for _ in range(n)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def run(full: bool = False) -> Report:
    """Measure the paper's headline claim and return the report.

    Parameters
    ----------
    full : bool, default=False
        3 seeds, 8000 / 3500 training steps (about 20 min per stage on 2 cores) instead of
        500 / 250, plus the zero-template ablation and rows on a BPDA-EOT adaptive protection.

    Returns
    -------
    icml25_core.Report
        Claims with their pass rules (constants of this module, fixed before the first run).

    Raises
    ------
    FileNotFoundError
        If espeak-ng or the alsa-utils recordings are missing.
    """
    from .alignment import align_pocketsphinx
    from .audio import n_frames
    from .baselines import BASELINES, audiopure
    from .diffwave import DiffWave, DiffWavePurifier
    from .metrics import cosine, snr_db, sv_accuracy
    from .pipeline import PhonePuRe
    from .protect import attackvc_emb
    from .refiner import PhonemeGuidedRefiner, ScoreUNet
    from .sde import OUVESDE
    from .sv import GE2E, eer
    from .templates import PhonemeTemplates
    from .train import train_diffwave, train_refiner

    t0 = time.perf_counter()
    torch.manual_seed(SEED)
    seeds = [SEED + i for i in range(FULL_SEEDS)] if full else [SEED]
    train_dw = FULL_STEPS_DIFFWAVE if full else TRAIN_STEPS_DIFFWAVE
    train_rf = FULL_STEPS_REFINER if full else TRAIN_STEPS_REFINER
    sents = sentences()
    enc = GE2E.from_resemblyzer()

    def emb(w: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return enc.embed(w)

    work = Path(tempfile.mkdtemp(prefix="phonepure-"))
    try:
        # ---- 1. real speech -----------------------------------------------------------------
        _log("synthesising espeak-ng speech")
        voices = MALE + FEMALE
        per_voice: dict[str, list[tuple[str, torch.Tensor]]] = {}
        k = 0
        for v in voices:
            per_voice[v] = []
            for _ in range(8):
                s = sents[k % len(sents)]
                k += 1
                per_voice[v].append((s, espeak(s, v, work)))
        # enrolment: mean of clips 0-2; victims use clip 3; trials clips 4-7
        enrol = {
            v: torch.nn.functional.normalize(torch.stack([emb(w) for _, w in c[:3]]).mean(0), dim=0)
            for v, c in per_voice.items()
        }
        _log("EER trials")
        rng = np.random.default_rng(SEED)
        scores, labels = [], []
        gen = [(v, i) for v in voices for i in range(4, 8)]
        rng.shuffle(gen)
        for v, i in gen[: N_TRIALS // 2]:
            scores.append(cosine(emb(per_voice[v][i][1]), enrol[v]))
            labels.append(1)
        for v, i in gen[N_TRIALS // 2 : N_TRIALS]:
            u = voices[(voices.index(v) + 1 + int(rng.integers(len(voices) - 1))) % len(voices)]
            scores.append(cosine(emb(per_voice[v][i][1]), enrol[u]))
            labels.append(0)
        eer_v, thr = eer(scores, labels)
        _log(f"EER {eer_v:.3f} at threshold {thr:.3f}")

        # victims: 4 espeak + 2 alsa
        victims: list[dict[str, Any]] = []
        for v, tgt in (
            ("en-us+m1", "en-us+f1"),
            ("en-us+m2", "en-us+f2"),
            ("en-us+f3", "en-us+m3"),
            ("en-us+f4", "en-us+m4"),
        ):
            text, w = per_voice[v][3]
            victims.append(
                {
                    "name": v,
                    "text": text,
                    "wav": w,
                    "enrol": enrol[v],
                    "target": per_voice[tgt][4][1],
                }
            )
        alsa_names = [
            "Front_Left",
            "Front_Center",
            "Front_Right",
            "Rear_Left",
            "Rear_Center",
            "Rear_Right",
            "Side_Left",
            "Side_Right",
        ]
        alsa = {n: _alsa(n) for n in alsa_names}
        for group, text in (
            ("Front", "front left front center front right"),
            ("Side", "side left side right"),
        ):
            clip = torch.cat([alsa[n] for n in alsa_names if n.startswith(group)])
            rest = [emb(alsa[n]) for n in alsa_names if not n.startswith(group)]
            e = torch.nn.functional.normalize(torch.stack(rest).mean(0), dim=0)
            victims.append(
                {
                    "name": f"alsa-{group}",
                    "text": text,
                    "wav": clip,
                    "enrol": e,
                    "target": per_voice["en-us+m5"][4][1],
                }
            )

        # ---- 2. protection ------------------------------------------------------------------
        _log(
            f"protecting {len(victims)} victims (AttackVC-emb, eps {ATTACK_EPS}, {ATTACK_ITERS} it)"
        )
        g = torch.Generator().manual_seed(SEED)
        ta = time.perf_counter()
        prot = attackvc_emb(
            [v["wav"] for v in victims],
            enc.embed_many,
            [v["target"] for v in victims],
            eps=ATTACK_EPS,
            iters=ATTACK_ITERS,
            generator=g,
        )
        for vic, p in zip(victims, prot, strict=True):
            vic["prot"] = p
        _log(f"  protection took {time.perf_counter() - ta:.1f} s")

        # ---- 3. training data from other voices ---------------------------------------------
        train_voices = ["en-us+m5", "en-us+m6", "en-us+m7", "en-us+f1", "en-us+f2"]
        train_clips = []
        for v in train_voices:
            for j in range(3):
                s = sents[(k + j) % len(sents)]
                train_clips.append((s, espeak(s, v, work)))
            k += 3
        _log("aligning training speech with pocketsphinx")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            aligns = [align_pocketsphinx(w, s) for s, w in train_clips]
        n_fallback = sum("falling back" in str(c.message) for c in caught)
        templates = PhonemeTemplates.fit([w for _, w in train_clips], aligns)
        results_by_seed: list[dict[str, Any]] = []
        for seed in seeds:
            torch.manual_seed(seed)
            _log(f"seed {seed}: training tiny DiffWave for {train_dw} steps")
            dw = DiffWave(32, 32, 6, 6)
            info_dw = train_diffwave(
                dw,
                [w for _, w in train_clips],
                steps=train_dw,
                batch=4,
                seg=4000,
                t_max=8,
                seed=seed,
            )
            pur = DiffWavePurifier(dw, t_star=T_STAR)
            pur_train = DiffWavePurifier(dw, t_star=T_STAR_TRAIN_PAIRS)
            _log(f"  DiffWave: {info_dw['steps']} steps, loss {info_dw['loss']:.4f}")
            pairs = []
            gp = torch.Generator().manual_seed(seed)
            for (_, w), al in zip(train_clips, aligns, strict=True):
                snr = 5 + 15 * float(torch.rand(1, generator=gp))
                noise = torch.randn(w.shape, generator=gp)
                noise = noise * w.norm() / noise.norm() / 10 ** (snr / 20)
                noisy = (w + noise).clamp(-1, 1)
                with torch.no_grad():
                    y = pur_train(noisy, generator=gp)
                tpl = templates.render(al, n_frames(w.shape[0])) if al is not None else None
                pairs.append((w, y, tpl))
            _log(f"  training tiny refiner for {train_rf} steps")
            net = ScoreUNet(6, REFINER_BASE, 3)
            ema, info_rf = train_refiner(net, pairs, steps=train_rf, batch=8, frames=64, seed=seed)
            _log(f"  refiner: {info_rf['steps']} steps, loss {info_rf['loss']:.4f}")
            refiner = PhonemeGuidedRefiner(ema, OUVESDE(), N=REFINER_N)
            phonepure = PhonePuRe(pur, refiner, templates)

            # (method, which protected clip it purifies); --full adds the ablation rows
            methods: dict[str, tuple[Any, str]] = {
                "clean": (None, "wav"),
                "protected": (None, "prot"),
                **{n: (BASELINES[n], "prot") for n in ("AS", "MS", "DS", "LPF", "QT")},
                "AudioPure-tiny": (audiopure(pur), "prot"),
                "PhonePuRe-tiny": (phonepure, "prot"),
            }
            if full:
                methods[ZERO_TEMPLATE] = (PhonePuRe(pur, refiner, None), "prot")
                _log(f"  BPDA-EOT protection against AudioPure-tiny (EOT {FULL_ATTACK_EOT})")
                ga = torch.Generator().manual_seed(seed)
                for vic in victims:
                    vic["prot_bpda"] = attackvc_emb(
                        vic["wav"],
                        enc.embed,
                        vic["target"],
                        eps=ATTACK_EPS,
                        iters=ATTACK_ITERS,
                        purifier=pur,
                        adaptive="bpda",
                        eot=FULL_ATTACK_EOT,
                        generator=ga,
                    )
                methods[f"protected {BPDA}"] = (None, "prot_bpda")
                methods[f"AudioPure-tiny {BPDA}"] = (audiopure(pur), "prot_bpda")
                methods[f"PhonePuRe-tiny {BPDA}"] = (phonepure, "prot_bpda")
            rows: dict[str, dict[str, Any]] = {}
            for name, (fn, key) in methods.items():
                _log(f"  purifying: {name}")
                cos_p, cos_c, snrs, secs, dur = [], [], [], 0.0, 0.0
                gm = torch.Generator().manual_seed(seed)
                for vic in victims:
                    if fn is None:
                        out_p = vic[key]
                    else:
                        ts = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            if name.startswith("PhonePuRe"):
                                out_p = fn(vic[key], text=vic["text"], generator=gm)
                                out_c = fn(vic["wav"], text=vic["text"], generator=gm)
                            elif name.startswith("AudioPure"):
                                out_p = fn(vic[key], generator=gm)
                                out_c = fn(vic["wav"], generator=gm)
                            else:
                                out_p = fn(vic[key])
                                out_c = fn(vic["wav"])
                        secs += (time.perf_counter() - ts) / 2
                        dur += vic["wav"].shape[-1] / 16000
                        cos_c.append(cosine(emb(out_c.clamp(-1, 1)), vic["enrol"]))
                    cos_p.append(cosine(emb(out_p.clamp(-1, 1)), vic["enrol"]))
                    snrs.append(snr_db(vic["wav"], out_p))
                rows[name] = {
                    "cosine": float(np.mean(cos_p)),
                    "accept": sv_accuracy(cos_p, thr),
                    "clean_cosine": float(np.mean(cos_c)) if cos_c else float("nan"),
                    "snr_db": float(np.mean(snrs)) if name != "clean" else float("inf"),
                    "rtf": secs / dur if dur else float("nan"),
                    "per_victim": [float(c) for c in cos_p],
                }
            results_by_seed.append({"rows": rows, "diffwave": info_dw, "refiner": info_rf})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # ---- 4. verdicts --------------------------------------------------------------------------
    rows = results_by_seed[0]["rows"]
    names = list(rows)

    def mean_over_seeds(m: str, key: str) -> float:
        return float(np.mean([r["rows"][m][key] for r in results_by_seed]))

    table = (
        "| method | cosine to enrolment | accept rate | purified-clean cosine | SNR (dB) | RTF |\n"
    )
    table += "|---|---|---|---|---|---|\n"
    for m in names:
        table += (
            f"| {m} | {mean_over_seeds(m, 'cosine'):.3f} | {mean_over_seeds(m, 'accept'):.2f} | "
            f"{mean_over_seeds(m, 'clean_cosine'):.3f} | {mean_over_seeds(m, 'snr_db'):.1f} | "
            f"{mean_over_seeds(m, 'rtf'):.3f} |\n"
        )
    c = {m: mean_over_seeds(m, "cosine") for m in names}
    pv = {m: np.mean([r["rows"][m]["per_victim"] for r in results_by_seed], axis=0) for m in names}
    claims = []
    setup_ok = (
        rows["clean"]["accept"] >= CLEAN_ACCEPT_MIN
        and rows["protected"]["accept"] <= PROTECTED_ACCEPT_MAX
    )
    claims.append(
        Claim.judge(
            "Threat model: AttackVC-emb protection defeats GE2E verification "
            "of clean-accepted speakers",
            "protected SV accuracy .108 (AttackVC, Table 1); clean near 1",
            f"clean accept {rows['clean']['accept']:.2f}, "
            f"protected accept {rows['protected']['accept']:.2f} "
            f"(cosine {c['clean']:.3f} -> {c['protected']:.3f}; "
            f"EER {eer_v:.3f}, threshold {thr:.3f})",
            bool(setup_ok),
            f"clean accept >= {CLEAN_ACCEPT_MIN} and protected accept <= {PROTECTED_ACCEPT_MAX}",
        )
    )
    d1 = pv["PhonePuRe-tiny"] - pv["AudioPure-tiny"]
    d2 = pv["AudioPure-tiny"] - pv["protected"]
    ci1, ci2 = _bootstrap_ci(d1), _bootstrap_ci(d2)
    order_ok = bool(np.mean(d1) >= MARGIN_PP_OVER_AP and np.mean(d2) >= MARGIN_AP_OVER_PROT)
    claims.append(
        Claim.judge(
            "PhonePuRe >= AudioPure > protected (mean cosine to enrolment)",
            "SV accuracy protected / AudioPure / PhonePuRe (AntiFake/AttackVC/VoiceGuard): "
            f"{PAPER_ACC['protected']}; {PAPER_ACC['AudioPure']}; {PAPER_ACC['PhonePuRe']}",
            f"{c['PhonePuRe-tiny']:.3f} / {c['AudioPure-tiny']:.3f} / {c['protected']:.3f}; "
            f"PP-AP {np.mean(d1):+.3f} (95% CI {ci1[0]:+.3f}..{ci1[1]:+.3f}), "
            f"AP-prot {np.mean(d2):+.3f} (95% CI {ci2[0]:+.3f}..{ci2[1]:+.3f})",
            order_ok if setup_ok else False,
            f"PP - AP >= {MARGIN_PP_OVER_AP} and AP - protected >= {MARGIN_AP_OVER_PROT} "
            "(and the setup claim holds)",
            note=f"tiny models trained {train_dw} / {train_rf} steps; "
            "SV on the purified clip is a proxy for VC synthesis",
        )
    )
    base = ["AS", "MS", "DS", "LPF", "QT", "AudioPure-tiny"]
    best = max(base, key=lambda m: c[m])
    d3 = pv["PhonePuRe-tiny"] - pv[best]
    ci3 = _bootstrap_ci(d3)
    claims.append(
        Claim.judge(
            "PhonePuRe beats the strongest baseline of this run (mean cosine)",
            "PhonePuRe best in Table 1",
            f"PhonePuRe {c['PhonePuRe-tiny']:.3f} vs {best} {c[best]:.3f}: {np.mean(d3):+.3f} "
            f"(95% CI {ci3[0]:+.3f}..{ci3[1]:+.3f})",
            bool(np.mean(d3) >= MARGIN_PP_OVER_AP) and bool(setup_ok),
            f"PP - best baseline >= {MARGIN_PP_OVER_AP}",
        )
    )
    if not setup_ok:
        for cl in claims[1:]:
            cl.verdict = Verdict.NOT_REPRODUCED
            cl.note = (
                cl.note + "; " if cl.note else ""
            ) + "setup invalid: comparison not meaningful"
    report = Report(
        library="phonepure",
        title="De-AntiFake / PhonePuRe: purifying AttackVC protection (tiny scale, real speech)",
        claims=claims,
        setup={
            "victims": [v["name"] for v in victims],
            "eer": eer_v,
            "threshold": thr,
            "trials": N_TRIALS,
            "attack": {"eps": ATTACK_EPS, "iters": ATTACK_ITERS},
            "t_star": T_STAR,
            "diffwave": {"res": 32, "layers": 6, "cycle": 6, **results_by_seed[0]["diffwave"]},
            "refiner": {
                "base": REFINER_BASE,
                "levels": 3,
                "N": REFINER_N,
                **results_by_seed[0]["refiner"],
            },
            "templates": {"phones": len(templates.phones), "pocketsphinx_fallbacks": n_fallback},
            "seeds": seeds,
            "espeak_voices": voices,
            "alsa": str(ALSA_DIR),
            "torch": torch.__version__,
        },
        tables={"Per method (mean over victims)": table},
        notes=[
            "Speaker verification: Resemblyzer GE2E (Apache-2.0 weights from its wheel); "
            "threshold at the EER of espeak trials. "
            "The paper's SV model and threshold are unverified.",
            "SV on the purified clip is a proxy for the paper's voice-cloning synthesis step.",
            "AudioPure-tiny is stage 1 alone with the same tiny DiffWave (t* = 3).",
            *(
                [
                    f"--full: {len(seeds)} seeds (table: mean over seeds). "
                    f"'{ZERO_TEMPLATE}' runs stage 2 with zero templates (no phoneme guidance); "
                    f"'{BPDA}' rows purify an adaptive protection: AttackVC-emb with BPDA through "
                    f"AudioPure-tiny, EOT {FULL_ATTACK_EOT}. These rows carry no pass rule.",
                ]
                if full
                else []
            ),
        ],
    )
    report.runtime_s = time.perf_counter() - t0
    report._plot_rows = rows  # type: ignore[attr-defined]
    report._plot_thr = thr  # type: ignore[attr-defined]
    return report


def _plot(rows: dict[str, dict], thr: float, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = list(rows)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(names, [rows[n]["cosine"] for n in names], color="#4c72b0")
    ax.axhline(thr, color="red", ls="--", label=f"EER threshold {thr:.3f}")
    ax.set_ylabel("cosine to enrolment")
    lo = min(rows[n]["cosine"] for n in names)
    ax.set_ylim(max(0.0, lo - 0.1), 1.0)
    ax.legend()
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(out="reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write its report (and plot) into the directory `out`.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report, ``<out>/phonepure.md``, and the JSON one beside it.
    """
    report = run(full=full)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if _plot(report._plot_rows, report._plot_thr, out / "phonepure.png"):  # type: ignore[attr-defined]
        report.figures.append("phonepure.png")
    return report.write(out)
