"""Brute-force references: enumerate every path of a tiny RNN-T lattice."""

import itertools

import torch


def brute_force_nll(lp: torch.Tensor, y, T: int, U: int, blank: int) -> torch.Tensor:
    """-log p(y|x) by enumerating every monotonic path of one lattice (lp: [T, U+1, V] log-probs).

    A path is an order of T-1 blank moves and U emissions, closed by the final blank at (T-1, U).
    """
    scores = []
    for pos in itertools.combinations(range(T - 1 + U), U):
        t = u = 0
        s = lp.new_zeros(())
        for k in range(T - 1 + U):
            if k in pos:
                s = s + lp[t, u, int(y[u])]
                u += 1
            else:
                s = s + lp[t, u, blank]
                t += 1
        scores.append(s + lp[T - 1, U, blank])
    return -torch.logsumexp(torch.stack(scores), 0)


def brute_force_posterior(lp: torch.Tensor, y, T: int, U: int, blank: int) -> torch.Tensor:
    """P(tau_u = t) [T, U] by enumerating paths and their emission frames."""
    post = lp.new_zeros((T, U))
    scores, frames = [], []
    for pos in itertools.combinations(range(T - 1 + U), U):
        t = u = 0
        s = lp.new_zeros(())
        fr = []
        for k in range(T - 1 + U):
            if k in pos:
                s = s + lp[t, u, int(y[u])]
                fr.append(t)
                u += 1
            else:
                s = s + lp[t, u, blank]
                t += 1
        scores.append(s + lp[T - 1, U, blank])
        frames.append(fr)
    w = torch.softmax(torch.stack(scores), 0)
    for wi, fr in zip(w, frames, strict=True):
        for u, t in enumerate(fr):
            post[t, u] += wi
    return post
