"""Console script of ranknovo, the library for "Universal Biological Sequence Reranking for
Improved De Novo Peptide Sequencing" (ICML 2025).

  ranknovo rerank --mgf F.mgf --candidates C.tsv --model M.pt -o out.tsv [--shard i/n]
                  [--precursor-tol-ppm 20] [--default-charge 2]
  ranknovo eval --pred out.tsv --mgf F.mgf
  ranknovo train --mgf F.mgf --candidates C.tsv -o M.pt [--epochs 5] [--ckpt-dir D]
                 [--seed 0] [--lr 1e-4] [--dim 512] [--ff 1024] [--dropout 0.3]
  ranknovo pmd Q T
  ranknovo reproduce [--out DIR] [--full]

The candidates TSV has a header and the columns spectrum (0-based index in the MGF), model,
peptide (MassIVE-KB or ProForma spelling).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int, shard_spec

from ._version import __version__


def _existing(text: str) -> Path:
    p = Path(text)
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return p


def _float_type(low: float, high: float | None = None, *, low_ok: bool = True):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
        if value < low or (value == low and not low_ok) or (high is not None and value >= high):
            bound = (
                f"[{low}, {high})" if high is not None else (f">= {low}" if low_ok else f"> {low}")
            )
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
        return value

    return parse


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed: {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"seed must be in [0, 2**32 - 1], got {value}")
    return value


def _out_file(path) -> None:
    """Fail before the work, not after it, when the output's folder is missing."""
    parent = Path(path).resolve().parent
    if not parent.is_dir():
        raise ValueError(f"-o/--out: the folder {str(parent)!r} does not exist")


def build_parser():
    """The argument parser of the ``ranknovo`` console script."""
    parser, commands = console_parser("ranknovo", __version__, __doc__)
    r = commands.add_parser("rerank", help="pick one candidate per spectrum with a model")
    r.add_argument("--mgf", type=_existing, required=True, help="spectra (MGF)")
    r.add_argument("--candidates", type=_existing, required=True, help="TSV spectrum/model/peptide")
    r.add_argument("--model", type=_existing, required=True, help="model file (ranknovo train)")
    r.add_argument("-o", "--out", required=True, help="output TSV")
    r.add_argument(
        "--shard", type=shard_spec, default=(0, 1), help="i/n: rerank every n-th spectrum"
    )
    r.add_argument("--batch-size", type=positive_int, default=64)
    r.add_argument(
        "--default-charge", type=positive_int, default=None,
        help="charge of spectra without CHARGE= (default: such a spectrum is an error)",
    )  # fmt: skip
    r.add_argument(
        "--precursor-tol-ppm", type=_float_type(0.0), default=None,
        help="skip candidates whose mass misses the precursor by more than this many ppm "
        "(isotopes 0 and 1), unless none passes (default: off)",
    )  # fmt: skip
    e = commands.add_parser("eval", help="AA precision/recall and peptide recall of a TSV")
    e.add_argument("--pred", type=_existing, required=True, help="TSV with spectrum, peptide")
    e.add_argument("--mgf", type=_existing, required=True, help="annotated spectra (SEQ=)")
    e.add_argument("--compat", choices=("paper", "official"), default="paper")
    t = commands.add_parser("train", help="train a RankNovo on annotated spectra + candidates")
    t.add_argument("--mgf", type=_existing, required=True)
    t.add_argument("--candidates", type=_existing, required=True)
    t.add_argument("-o", "--out", required=True, help="model file to write")
    t.add_argument("--epochs", type=positive_int, default=5)
    t.add_argument("--batch-size", type=positive_int, default=256)
    t.add_argument("--dim", type=positive_int, default=512)
    t.add_argument("--layers", type=positive_int, default=8, help="encoder and decoder layers")
    t.add_argument("--heads", type=positive_int, default=8)
    t.add_argument("--ff", type=positive_int, default=None, help="FFN width (default: 2 * dim)")
    t.add_argument("--dropout", type=_float_type(0.0, 1.0), default=0.3)
    t.add_argument(
        "--lr", type=_float_type(0.0, low_ok=False), default=1e-4,
        help="AdamW learning rate (default 1e-4, config.yaml's value for dim 512; the "
        "reproduce uses 1e-3 for its dim-64 model)",
    )  # fmt: skip
    t.add_argument(
        "--seed", type=_seed, default=0,
        help="seed of initialisation, shuffling and dropout (default 0): the same command "
        "gives the same model",
    )  # fmt: skip
    t.add_argument(
        "--default-charge", type=positive_int, default=None,
        help="charge of spectra without CHARGE= (default: such a spectrum is an error)",
    )  # fmt: skip
    t.add_argument(
        "--ckpt-dir", default=None,
        help="write last.pt after every epoch and resume from it when present",
    )  # fmt: skip
    p = commands.add_parser("pmd", help="PMD and RMD of a candidate Q against a true peptide T")
    p.add_argument("q")
    p.add_argument("t")
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/ranknovo.md and .json.",
    )
    return parser


def read_candidates(path) -> dict[int, list[tuple[str, str]]]:
    """Read a candidates TSV into {spectrum index: [(model, peptide), ...]}.

    Raises
    ------
    ValueError
        On missing columns or a bad spectrum index (the message names file and line).
    """
    out: dict[int, list[tuple[str, str]]] = {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        need = {"spectrum", "peptide"}
        if reader.fieldnames is None or not need <= set(reader.fieldnames):
            raise ValueError(f"{path}: needs the columns spectrum, model, peptide")
        for line, row in enumerate(reader, start=2):
            try:
                idx = int(row["spectrum"])
            except (TypeError, ValueError):
                raise ValueError(f"{path}, line {line}: spectrum {row['spectrum']!r}") from None
            if idx < 0:
                raise ValueError(f"{path}, line {line}: negative spectrum index {idx}")
            out.setdefault(idx, []).append((row.get("model") or "", row["peptide"]))
    return out


def _check_indices(cands, spectra, path) -> None:
    for idx in cands:
        if idx >= len(spectra):
            raise ValueError(f"{path}: spectrum {idx} but the MGF has {len(spectra)}")


def _check_charges(spectra, keys, mgf, max_charge: int) -> None:
    for k in keys:
        if spectra[k].charge > max_charge:
            raise ValueError(
                f"{Path(mgf).name}, spectrum {k}: charge {spectra[k].charge} > the model's "
                f"max_charge={max_charge}"
            )


def _rerank(args) -> int:
    import torch

    from .data import CandidateSet, collate, preprocess, read_mgf
    from .model import RankNovo

    _out_file(args.out)
    spectra = read_mgf(args.mgf, default_charge=args.default_charge)
    cands = read_candidates(args.candidates)
    if not cands:
        raise ValueError(f"{args.candidates}: no candidate rows (empty candidate list)")
    _check_indices(cands, spectra, args.candidates)
    model = RankNovo.load(args.model)
    model.eval()
    i, n = args.shard
    keys = [k for k in sorted(cands) if k % n == i]
    _check_charges(spectra, keys, args.mgf, model.max_charge)
    rows = []
    with torch.no_grad():
        for s in range(0, len(keys), args.batch_size):
            part = keys[s : s + args.batch_size]
            ds = CandidateSet(
                [preprocess(spectra[k]) for k in part],
                [[spectra[k].precursor_mz, spectra[k].charge] for k in part],
                [[pep for _, pep in cands[k]] for k in part],
                vocab=model.vocab,
                max_len=model.max_len,
                max_charge=model.max_charge,
            )
            b = collate([ds[j] for j in range(len(ds))], model.vocab.pad_id)
            best, scores = model.rerank(
                b["spectra"], b["precursors"], b["tokens"], precursor_tol_ppm=args.precursor_tol_ppm
            )
            for j, k in enumerate(part):
                mdl, pep = cands[k][int(best[j])]
                rows.append((k, mdl, pep, float(scores[j, int(best[j])])))
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(["spectrum", "model", "peptide", "pmd_pred"])
        w.writerows(rows)
    print(f"wrote {len(rows)} spectra to {args.out}")
    return 0


def _eval(args) -> int:
    from .data import read_mgf
    from .metrics import evaluate

    spectra = read_mgf(args.mgf, default_charge=1)
    preds = {k: v[0][1] for k, v in read_candidates(args.pred).items()}
    trues, ps = [], []
    for s in spectra:
        if s.peptide is None:
            continue
        trues.append(s.peptide)
        ps.append(preds.get(s.index))
    if not trues:
        raise ValueError(f"{args.mgf}: no SEQ= annotations to evaluate against")
    res = evaluate(preds=ps, trues=trues, compat=args.compat)
    for k, v in res.items():
        print(f"{k}\t{v:.4f}" if isinstance(v, float) else f"{k}\t{v}")
    return 0


def _train(args) -> int:
    from icml25_core import seed_everything

    from .data import CandidateSet, preprocess, read_mgf
    from .model import RankNovo
    from .train import fit, make_loader

    _out_file(args.out)
    spectra = read_mgf(args.mgf, default_charge=args.default_charge)
    cands = read_candidates(args.candidates)
    _check_indices(cands, spectra, args.candidates)
    keys = [k for k in sorted(cands) if spectra[k].peptide]
    if not keys:
        raise ValueError("no annotated spectrum (SEQ=) has candidates")
    _check_charges(spectra, keys, args.mgf, 10)
    seed_everything(args.seed)
    ds = CandidateSet(
        [preprocess(spectra[k]) for k in keys],
        [[spectra[k].precursor_mz, spectra[k].charge] for k in keys],
        [[p for _, p in cands[k]] for k in keys],
        [spectra[k].peptide for k in keys],
    )
    model = RankNovo(
        dim=args.dim, heads=args.heads, ff=args.ff or 2 * args.dim, enc_layers=args.layers,
        dec_layers=args.layers, dropout=args.dropout,
    )  # fmt: skip
    fit(model, make_loader(ds, args.batch_size), epochs=args.epochs, lr=args.lr,
        ckpt_dir=args.ckpt_dir, log=print)  # fmt: skip
    model.save(args.out)
    print(f"wrote {args.out}")
    return 0


def _pmd(args) -> int:
    from .mass import pmd, rmd

    print(f"PMD\t{pmd(args.q, args.t):.6f}")
    print("RMD\t" + " ".join(f"{x:.6f}" for x in rmd(args.q, args.t)))
    return 0


def main(argv=None) -> int:
    """Run the console script; returns the exit status (2 on bad input, with a one-line message)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    handlers = {"rerank": _rerank, "eval": _eval, "train": _train, "pmd": _pmd}
    try:
        return handlers[args.command](args)
    except ValueError as exc:
        parser.exit(2, f"ranknovo {args.command}: error: {exc}\n")
    return 1  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
