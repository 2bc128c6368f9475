"""Test helpers: a quadratic model and heterogeneous quadratics with a known optimum."""

import numpy as np
import torch


class Quadratic(torch.nn.Module):
    """``forward(A) = A @ x`` with the parameter ``x``; with :func:`half_sq_error` as the loss,
    client ``i``'s objective is ``f_i(x) = 1/2 ||A_i x - b_i||^2`` on the batch ``(A_i, b_i)``."""

    def __init__(self, d: int, dtype=torch.float64):
        super().__init__()
        self.x = torch.nn.Parameter(torch.zeros(d, dtype=dtype))

    def forward(self, a):
        return a @ self.x


def half_sq_error(out, target):
    return 0.5 * (out - target).square().sum()


def make_quadratics(num_clients=4, d=5, cond=10.0, seed=0):
    """``A_i = Q_i diag(s_i) R_i`` with singular values in ``[1, cond]`` and heterogeneous
    ``b_i``; returns float64 tensors."""
    rng = np.random.default_rng(seed)
    a_list, b_list = [], []
    for _ in range(num_clients):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        r, _ = np.linalg.qr(rng.normal(size=(d, d)))
        s = np.geomspace(1.0, cond, d)
        a_list.append(torch.tensor(q @ np.diag(s) @ r))
        b_list.append(torch.tensor(rng.normal(scale=10.0, size=d)))
    return a_list, b_list
