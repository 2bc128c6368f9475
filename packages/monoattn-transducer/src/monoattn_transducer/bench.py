"""Timings of the lattice (spec section 6), shared by ``benchmarks/`` and ``monoattn-transducer
bench``: our loss (fwd+bwd) against warprnnt-numba and against a naive per-(t, u) loop."""

import time
from collections.abc import Callable

import torch

from .rnnt import rnnt_loss

__all__ = ["bench_cpu", "naive_loop_loss", "time_call"]


def time_call(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds (CUDA synchronised when available)."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def naive_loop_loss(logits, targets, t_len, u_len, blank: int = 0) -> torch.Tensor:
    """The textbook forward recursion, one Python step per (t, u) cell, autograd backward."""
    lp = logits.float().log_softmax(-1)
    out = []
    for b in range(lp.shape[0]):
        T, U = int(t_len[b]), int(u_len[b])
        alpha: dict[tuple[int, int], torch.Tensor] = {(0, 0): lp.new_zeros(())}
        for t in range(T):
            for u in range(U + 1):
                if t == 0 and u == 0:
                    continue
                terms = []
                if t > 0:
                    terms.append(alpha[(t - 1, u)] + lp[b, t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[(t, u - 1)] + lp[b, t, u - 1, targets[b, u - 1]])
                alpha[(t, u)] = torch.logsumexp(torch.stack(terms), 0)
        out.append(-(alpha[(T - 1, U)] + lp[b, T - 1, U, blank]))
    return torch.stack(out)


def bench_cpu(B: int = 8, T: int = 100, U: int = 30, V: int = 64, repeats: int = 5) -> list[str]:
    """fwd+bwd at the spec's CPU shape: ours vs warprnnt-numba (target >= 1/3) and vs the naive
    loop (target >= 5x). Returns printable lines."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, U + 1, V, generator=g, requires_grad=True)
    y = torch.randint(1, V, (B, U), generator=g)
    tl = torch.full((B,), T)
    ul = torch.full((B,), U)

    def ours():
        rnnt_loss(x, y, tl, ul, reduction="sum", backend="torch").backward()

    lines = [f"shape B={B} T={T} U={U} V={V}, fwd+bwd, torch threads={torch.get_num_threads()}"]
    t_ours = time_call(ours, repeats)
    lines.append(f"ours (torch anti-diagonal): {t_ours * 1e3:.1f} ms")
    try:
        from warprnnt_numba import RNNTLossNumba

        ref = RNNTLossNumba(blank=0, reduction="sum")
        yi, tli, uli = y.int(), tl.int(), ul.int()

        def numba():
            ref(x, yi, tli, uli).backward()

        t_ref = time_call(numba, repeats)
        lines.append(f"warprnnt-numba: {t_ref * 1e3:.1f} ms; speed ratio ours/numba = "
                     f"{t_ref / t_ours:.2f} (target >= 0.33)")  # fmt: skip
    except ImportError:
        lines.append("warprnnt-numba not installed (pip install 'monoattn-transducer[ref]')")
    xs = x[:1].detach().requires_grad_()
    t_naive = time_call(lambda: naive_loop_loss(xs, y[:1], tl[:1], ul[:1]).sum().backward(), 1, 0)
    t_naive *= B  # one utterance timed, scaled to the batch
    lines.append(f"naive per-(t,u) loop (1 utterance x {B}): {t_naive * 1e3:.0f} ms; "
                 f"ours is {t_naive / t_ours:.1f}x faster (target >= 5x)")  # fmt: skip
    return lines
