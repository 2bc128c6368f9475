"""``permucate``: variable importance for a CATE from a CSV file, and the paper's reproduction."""

from __future__ import annotations

import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__

LEARNERS = ("dr-linear", "dr-hgb", "causal-forest")


def make_learner(name, random_state):
    """The CLI's learner choices. ``dr-linear`` is ``None``: PermuCATE's default learner, seeded
    from ``random_state`` exactly as ``PermuCATE(random_state=seed)`` in Python."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from .learners import dr_learner

    if name == "dr-linear":
        return None
    if name == "dr-hgb":
        hgb = HistGradientBoostingRegressor(random_state=random_state)
        return dr_learner(outcome_model=hgb, random_state=random_state)
    from econml.dml import CausalForestDML

    return CausalForestDML(discrete_treatment=True, random_state=random_state)


def _check_output(path, option, suffixes):
    path = Path(path)
    if path.is_dir():
        raise SystemExit(f"permucate run: {option} {path} is a folder; give a file name")
    if path.suffix.lower() not in suffixes:
        raise SystemExit(f"permucate run: {option} must end in {' or '.join(suffixes)}: {path}")
    if not path.parent.is_dir():
        raise SystemExit(f"permucate run: {option}: folder {path.parent} does not exist")


def run(args):
    import pandas as pd

    from .estimator import PermuCATE

    _check_output(args.out, "--out", (".csv", ".json"))
    if Path(args.out).resolve() == Path(args.data).resolve():
        raise SystemExit("permucate run: --out would overwrite the input data")
    if args.plot:
        _check_output(args.plot, "--plot", (".png", ".pdf", ".svg"))
    if args.treatment == args.outcome:
        raise SystemExit("permucate run: --treatment and --outcome name the same column")
    if {args.treatment, args.outcome} & set(args.covariates or []):
        raise SystemExit("permucate run: --covariates must not include the treatment or outcome")
    try:
        frame = pd.read_csv(args.data)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise SystemExit(f"permucate run: cannot read {args.data}: {err}") from err
    missing = [
        c for c in (args.treatment, args.outcome, *(args.covariates or [])) if c not in frame
    ]
    if missing:
        raise SystemExit(f"permucate run: columns {missing} not in {args.data} ({list(frame)})")
    if frame.empty:
        raise SystemExit(f"permucate run: {args.data} has no rows")
    covariates = args.covariates or [
        c for c in frame if c not in (args.treatment, args.outcome, "Unnamed: 0")
    ]
    if not args.covariates and "Unnamed: 0" in frame:
        print("permucate run: column 'Unnamed: 0' looks like a saved row index: not a covariate")
    text = [c for c in covariates if not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise SystemExit(f"permucate run: covariates must be numeric; encode {text} first")
    est = PermuCATE(
        make_learner(args.learner, args.seed),
        risk=args.risk,
        n_permutations=args.n_permutations,
        cv=args.cv,
        n_repeats=args.n_repeats,
        n_jobs=args.n_jobs,
        random_state=args.seed,
    )
    try:
        est.fit(frame[covariates], frame[args.treatment].to_numpy(), frame[args.outcome].to_numpy())
    except (ValueError, TypeError) as err:
        raise SystemExit(f"permucate run: {err}") from err
    table = est.summary(adjust=args.adjust)
    print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    if args.out.lower().endswith(".json") and isinstance(table.index, pd.MultiIndex):
        # Several arms: one record per (contrast, feature).
        table.reset_index().to_json(args.out, orient="records", indent=2, double_precision=15)
    elif args.out.lower().endswith(".json"):
        table.to_json(args.out, orient="index", indent=2, double_precision=15)
    else:
        table.to_csv(args.out)
    print(f"wrote {args.out}")
    if args.plot:
        est.plot().figure.savefig(args.plot, dpi=120, bbox_inches="tight")
        print(f"wrote {args.plot}")


def build_parser():
    """The argument parser of the ``permucate`` console script."""
    parser, sub = console_parser(
        "permucate",
        __version__,
        "PermuCATE: which covariates drive treatment-effect heterogeneity, with p-values "
        "(Paillard et al., ICML 2025).",
    )
    r = sub.add_parser("run", help="importance of each covariate for the CATE of a CSV file")
    r.add_argument("data", help="CSV file with one row per unit")
    r.add_argument(
        "--treatment",
        required=True,
        help="discrete treatment column: 0/1, or integer arms (one importance per arm against "
        "the lowest)",
    )
    r.add_argument("--outcome", required=True, help="outcome column")
    r.add_argument("--covariates", nargs="+", help="covariate columns (default: all others)")
    r.add_argument("--learner", choices=LEARNERS, default="dr-linear", help="default: dr-linear")
    r.add_argument("--risk", choices=("dr", "r"), default="dr", help="default: dr")
    r.add_argument("--n-permutations", type=int, default=50, help="default: 50")
    r.add_argument("--cv", type=int, default=5, help="cross-fitting folds (default: 5)")
    r.add_argument(
        "--n-repeats",
        type=positive_int,
        default=1,
        help="repetitions of the cross-fitting on new splits (default: 1)",
    )
    r.add_argument(
        "--adjust",
        choices=("holm", "bh"),
        help="adjust the p-values for multiplicity (Holm: FWER; BH: FDR)",
    )
    r.add_argument("--n-jobs", type=int, default=1, help="default: 1")
    r.add_argument("--seed", type=int, default=0, help="default: 0")
    r.add_argument("--out", default="importance.csv", help=".csv or .json (importance.csv)")
    r.add_argument("--plot", help="also save a bar chart (.png/.pdf/.svg); needs permucate[plot]")
    r.set_defaults(func=run)
    p = add_reproduce_command(
        sub,
        help="the paper's claims on Hines DGP3 and IHDP",
        full_help="the paper's sizes (hours on 2 cores)",
    )
    p.add_argument("--n-jobs", type=positive_int, default=2, help="parallel seeds (default: 2)")
    p.set_defaults(func=lambda a: _reproduce(a))
    return parser


def _reproduce(args):
    from .reproduce import main

    main(out=args.out, full=args.full, n_jobs=args.n_jobs)


def main(argv=None):
    args = build_parser().parse_args(argv)
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
