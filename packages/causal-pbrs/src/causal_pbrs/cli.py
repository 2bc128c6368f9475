"""``causal-pbrs``: bound the optimal values of a log, compare shaped and vanilla Q-UCB, and run
the paper's reproduction (Li, Zhang & Bareinboim, ICML 2025).

    causal-pbrs bound data.npz --horizon 20 --reward-max 0 --out phi.npy
    causal-pbrs run lava-extreme --episodes 4000 --seeds 3
    causal-pbrs reproduce [--out reports] [--full]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__
from .presets import NAMED_ENVS

SEEDS = (1234, 5678, 91011)
# the named environments, spelled with dashes on the command line ("lava-extreme")
ENVIRONMENTS = tuple(name.replace("_", "-") for name in NAMED_ENVS)


def _fail(message):
    raise SystemExit(f"causal-pbrs: {message}")


def bound(args):
    import numpy as np

    from .bounds import causal_upper_bound
    from .data import OfflineDataset

    out = Path(args.out)
    if out.suffix != ".npy":
        _fail(f"--out must end in .npy: {out}")
    if not out.parent.is_dir():
        _fail(f"--out: folder {out.parent} does not exist")
    if out.is_dir():
        _fail(f"--out {out} is a folder; give a file name ending in .npy")
    try:
        data = OfflineDataset.load(
            args.data, n_states=args.n_states, n_actions=args.n_actions, horizon=args.horizon
        )
        phi = causal_upper_bound(
            data,
            args.reward_max,
            stationary=args.stationary,
            unobserved=args.unobserved,
            delta=args.delta,
            reward_min=args.reward_min,
        )
    except FileNotFoundError:
        _fail(f"cannot read {args.data}: no such file")
    except (ValueError, TypeError, OSError) as error:
        flags = str(error).replace("`delta`", "--delta").replace("`reward_min`", "--reward-min")
        _fail(f"{args.data}: {flags}")
    np.save(out, phi)
    H, S = phi.shape[0] - 1, phi.shape[1]
    low, high = phi[0].min(), phi[0].max()
    print(f"{len(data)} transitions, H = {H}, S = {S}: φ_0 (h = 0) in [{low:.4g}, {high:.4g}]")
    print(f"wrote {out} (shape {phi.shape}: φ_h(s), row H = 0)")


def run(args):
    import numpy as np

    from .agents import QUCB
    from .behavior import anti_expert, expert, random_policy
    from .bounds import causal_upper_bound, combine
    from .envs import WindyGrid, make_named
    from .regret import run_batch

    if args.episodes < 1 or args.seeds < 1 or args.transitions < 1:
        _fail("--episodes, --seeds and --transitions must be >= 1")
    if args.horizon is not None and args.horizon < 1:
        _fail("--horizon must be >= 1")
    if args.out and not Path(args.out).parent.is_dir():
        _fail(f"--out: folder {Path(args.out).parent} does not exist")
    if args.out and Path(args.out).is_dir():
        _fail(f"--out {args.out} is a folder; give a file name ending in .json")
    env = make_named(args.env.replace("-", "_"), args.horizon)
    b = 0.0 if isinstance(env, WindyGrid) else env.reward_range[1]  # grids: official b = 0
    seeds = (SEEDS + tuple(range(max(0, args.seeds - len(SEEDS)))))[: args.seeds]
    S, A, H, K = env.n_states, env.n_actions, env.horizon, args.episodes
    official = args.config == "official"
    options = {"homogeneous": True, "clip": "official", "precision": 3} if official else {}
    names, agents, agent_seeds = [], [], []
    for seed in seeds:
        logs = [
            env.collect(d, args.transitions, rng=np.random.default_rng([seed, i]))
            for i, d in enumerate((expert(env), anti_expert(env), random_policy(env)))
        ]
        phi = combine(
            *(
                causal_upper_bound(
                    d, b, stationary=official, unobserved="skip" if official else "optimistic"
                )
                for d in logs
            )
        )
        if official:
            phi = np.round(phi, 1)
        for name, potential in (("vanilla", None), ("causal bound", phi), ("phi = 0", 0 * phi)):
            names.append(name)
            agents.append(QUCB(S, A, H, K, potential=potential, **options))
            agent_seeds.append(seed)
    results = run_batch(env, agents, agent_seeds, K)
    table: dict[str, list[float]] = {}
    for name, res in zip(names, results, strict=True):
        table.setdefault(name, []).append(float(res["gap_regret"].sum()))
    print(f"{args.env}: cumulative gap regret after {K} episodes ({args.config} configuration)")
    print(f"{'method':<14} {'mean':>10}  per seed ({', '.join(map(str, seeds))})")
    for name, values in table.items():
        print(f"{name:<14} {np.mean(values):>10.1f}  {', '.join(f'{v:.1f}' for v in values)}")
    if args.out:
        import json

        Path(args.out).write_text(json.dumps({"seeds": list(seeds), "gap_regret": table}, indent=2))
        print(f"wrote {args.out}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``causal-pbrs`` console script."""
    parser, commands = console_parser("causal-pbrs", __version__, __doc__)

    p = commands.add_parser(
        "bound",
        help="causal upper bound φ on V* from a log (.npz with h, s, x, y, s_next, done)",
    )
    p.add_argument("data", help=".npz written by OfflineDataset.save, or with the six arrays")
    p.add_argument("--reward-max", type=float, required=True, help="b: every reward is <= b")
    p.add_argument("--horizon", type=int, help="H (default: read from the file)")
    p.add_argument("--n-states", type=int, help="S (default: read from the file)")
    p.add_argument("--n-actions", type=int, help="A (default: read from the file)")
    p.add_argument("--stationary", action="store_true", help="official pooled-over-h bound")
    p.add_argument("--unobserved", choices=("optimistic", "skip"), default="optimistic",
                   help="default: optimistic (valid); skip = the official shortcuts")  # fmt: skip
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="valid w.p. >= 1 - delta from finite logs (needs --reward-min)",
    )
    p.add_argument("--reward-min", type=float, default=None,
                   help="smallest possible reward (with --delta)")  # fmt: skip
    p.add_argument("--out", default="phi.npy", help="output .npy, shape (H + 1, S) (phi.npy)")
    p.set_defaults(func=bound)

    r = commands.add_parser(
        "run", help="vanilla vs causal-bound-shaped Q-UCB on an environment, exact regret"
    )
    r.add_argument("env", choices=ENVIRONMENTS, help="environment")
    r.add_argument("--episodes", type=int, default=4000, help="K (default: 4000)")
    r.add_argument("--seeds", type=int, default=3, help="seeds 1234, 5678, 91011, ... (3)")
    r.add_argument("--transitions", type=int, default=100_000, help="per log (100000)")
    r.add_argument("--horizon", type=int, help="H (default: the environment's)")
    r.add_argument(
        "--config",
        choices=("paper", "official"),
        default="paper",
        help="paper: time-indexed, valid clip (default); official: the code's",
    )
    r.add_argument("--out", help="also write the regrets to this .json")
    r.set_defaults(func=run)

    q = add_reproduce_command(
        commands,
        help="the paper's claims; writes <out>/causal-pbrs.md",
        full_help="K = 20 000, FrozenLake 8x8 and CliffWalkingSlippery-v1 too",
    )
    q.set_defaults(func=_reproduce)
    return parser


def _reproduce(args):
    from . import reproduce  # imported here so that `--help` stays fast

    markdown, _ = reproduce.main(args.out, full=args.full)
    print(f"wrote {markdown} (and .json)")


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
