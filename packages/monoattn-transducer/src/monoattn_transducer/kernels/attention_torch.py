"""Expected monotonic attention in plain PyTorch (the reference kernel).

MILk's expected soft attention (Arivazhagan et al. 2019; fairseq ``expected_soft_attention``;
spec section 2): for an alignment ``p[u, t]`` over frames and energies ``e[u, j]``,

.. math::

    w_{u,j} = \\exp(e_{u,j}) \\sum_{t \\ge j} \\frac{p_{u,t}}{\\sum_{l \\le t} \\exp(e_{u,l})}

in fp32, the row maximum subtracted and ``eps`` added to the exponentials (official).
"""

import torch

__all__ = ["expected_attention_torch"]


def expected_attention_torch(
    alignment: torch.Tensor, energy: torch.Tensor, mask: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``[N, R, T]`` weights from ``[N, R, T]`` alignment and energies; `mask` True = padding."""
    cd = torch.float64 if energy.dtype == torch.float64 else torch.float32
    e = energy.to(cd)
    p = alignment.to(cd)
    if mask is not None:
        e = e.masked_fill(mask, float("-inf"))
    m = e.max(-1, keepdim=True).values
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    ex = torch.exp(e - m) + eps
    if mask is not None:
        ex = ex.masked_fill(mask, 0.0)
        p = p.masked_fill(mask, 0.0)
    csum = torch.cumsum(ex, -1)
    ratio = p / csum.clamp_min(torch.finfo(cd).tiny)
    rev = torch.flip(torch.cumsum(torch.flip(ratio, [-1]), -1), [-1])
    return ex * rev
