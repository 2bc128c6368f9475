"""Console script of quest-qat, the library for "QuEST: Stable Training of LLMs with 1-Bit Weights
and Activations" (ICML 2025).

Commands: ``reproduce`` (the paper's headline claim on real text), ``grid`` (the MSE-optimal
Gaussian scales), ``fit-scaling`` (refit the paper's scaling law on its 104 runs), ``bench``
(time the layer against nn.Linear).
"""

import argparse

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__


def _features(text: str) -> int:
    """argparse type: a positive multiple of the Hadamard block 128."""
    value = positive_int(text)
    if value % 128:
        raise argparse.ArgumentTypeError(f"must be a multiple of 128 (the block), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``quest-qat`` console script."""
    parser, commands = console_parser("quest-qat", __version__, __doc__)
    reproduce = add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/quest-qat.md and .json.",
        full_help="600 steps x 2 seeds and the ablations (~30 min)",
    )
    reproduce.add_argument(
        "--data", default=None, help="any text file instead of the Debian fortunes corpus"
    )
    commands.add_parser("grid", help="print α_b and the Gaussian MSE for b = 1..8")
    fit = commands.add_parser("fit-scaling", help="refit the scaling law on the official runs")
    fit.add_argument("--starts", choices=("quick", "paper"), default="quick")
    bench = commands.add_parser("bench", help="time QuESTLinear fwd+bwd against nn.Linear")
    bench.add_argument("--m", type=positive_int, default=1024, help="tokens (default 1024)")
    bench.add_argument(
        "--k", type=_features, default=1024,
        help="in = out features, a multiple of 128 (default 1024)",
    )  # fmt: skip
    return parser


def _grid() -> None:
    from .grid import gaussian_mse, optimal_gaussian_scale

    print("bits  alpha_b       MSE")
    for b in range(1, 9):
        print(f"{b:>4}  {optimal_gaussian_scale(b):.10f}  {gaussian_mse(b):.7f}")


def _fit(starts: str) -> None:
    from .scaling_law import ScalingLaw, load_paper_runs

    law = ScalingLaw(starts).fit(load_paper_runs())
    print(f"A {law.A_:.5f}  alpha {law.alpha_:.6f}  B {law.B_:.4f}  beta {law.beta_:.6f}  "
          f"E {law.E_:.3g}  log-SSE {law.sse_:.7f}")  # fmt: skip
    for label, eff in law.eff_.items():
        print(f"eff({label}) = {eff:.6f}")


def _bench(m: int, k: int) -> None:
    import time

    import torch
    from torch import nn

    from .api import QuESTConfig, prepare_

    x = torch.randn(m, k)
    times = []
    for name in ("nn.Linear", "QuESTLinear W4A4"):
        model = nn.Sequential(nn.Linear(k, k))
        if name != "nn.Linear":
            prepare_(model, QuESTConfig())
        model(x).sum().backward()
        start = time.perf_counter()
        for _ in range(5):
            model(x).sum().backward()
        times.append((time.perf_counter() - start) / 5)
        print(f"{name:<18} fwd+bwd {times[-1] * 1e3:8.2f} ms")
    ratio = times[1] / times[0]
    print(f"overhead           {ratio:8.2f}x (fixed costs dominate small shapes)")


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from .data import check_text_path

        if args.data is not None:  # a one-line error, not a traceback from inside the run
            try:
                check_text_path(args.data)
            except (OSError, ValueError) as err:
                raise SystemExit(f"quest-qat reproduce: {err}") from None
        from . import reproduce  # imported here so that `--help` stays fast

        try:
            markdown, _ = reproduce.main(args.out, full=args.full, data=args.data)
        except (ImportError, FileNotFoundError) as err:
            raise SystemExit(f"quest-qat reproduce: {err}") from None
        print(f"wrote {markdown} (and .json)")
    elif args.command == "grid":
        _grid()
    elif args.command == "fit-scaling":
        _fit(args.starts)
    elif args.command == "bench":
        _bench(args.m, args.k)
    return 0
