"""Anti-diagonal forward-backward over the RNN-T lattice in plain PyTorch (the reference kernel).

Cells on one anti-diagonal ``d = t + u`` depend only on the previous diagonal, so each of the
``T + U`` steps is one vectorised operation over the batch and the diagonal. The lattice is
stored "skewed": ``S[b, d, u] = X[b, d - u, u]``.

Recursions (Graves 2012, Sec. 2; spec section 2), per sample with ``T_b`` frames, ``U_b`` labels:

.. math::

    \\alpha(t,u) = \\operatorname{logaddexp}(\\alpha(t-1,u) + \\varnothing(t-1,u),
                                            \\alpha(t,u-1) + y(t,u-1)),\\quad \\alpha(0,0)=0

    \\beta(t,u) = \\operatorname{logaddexp}(\\beta(t+1,u) + \\varnothing(t,u),
                                           \\beta(t,u+1) + y(t,u)),\\quad
    \\beta(T_b-1,U_b) = \\varnothing(T_b-1,U_b)
"""

import torch

__all__ = ["lattice_masks", "lattice_torch", "skew", "unskew"]


def lattice_masks(
    T: int, U: int, t_len: torch.Tensor, u_len: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Valid blank and emission edges of a ragged batch, bool ``[B, T, U+1]`` and ``[B, T, U]``.

    A blank edge ``(t, u)`` is valid for ``t < T_b - 1, u <= U_b`` and at the terminal cell
    ``(T_b - 1, U_b)``; an emission edge for ``t < T_b, u < U_b``.
    """
    dev = t_len.device
    t = torch.arange(T, device=dev)[None, :, None]
    u = torch.arange(U + 1, device=dev)[None, None, :]
    tb = t_len[:, None, None]
    ub = u_len[:, None, None]
    blank = ((t < tb - 1) & (u <= ub)) | ((t == tb - 1) & (u == ub))
    emit = (t < tb) & (u < ub)
    return blank, emit[:, :, :U]


def skew(x: torch.Tensor, fill: float) -> torch.Tensor:
    """``[B, T, W] -> [B, T + W - 1, W]`` with ``out[b, d, u] = x[b, d - u, u]`` (else `fill`)."""
    B, T, W = x.shape
    d = torch.arange(T + W - 1, device=x.device)[:, None]
    u = torch.arange(W, device=x.device)[None, :]
    t = d - u
    ok = (t >= 0) & (t < T)
    idx = t.clamp(0, max(T - 1, 0)).expand(B, -1, -1)
    out = x.gather(1, idx) if T > 0 else x.new_full((B, T + W - 1, W), fill)
    return out.masked_fill(~ok, fill)


def unskew(s: torch.Tensor, T: int) -> torch.Tensor:
    """Inverse of :func:`skew`: ``[B, T + W - 1, W] -> [B, T, W]``."""
    B, _, W = s.shape
    t = torch.arange(T, device=s.device)[:, None]
    u = torch.arange(W, device=s.device)[None, :]
    return s.gather(1, (t + u).expand(B, -1, -1))


def lattice_torch(
    blank_lp: torch.Tensor,
    emit_lp: torch.Tensor,
    t_len: torch.Tensor,
    u_len: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward-backward of a ragged batch: ``(log_z, alpha, beta, p_blank, p_emit)``.

    Parameters
    ----------
    blank_lp : torch.Tensor, float ``[B, T, U+1]``
        ``log p(blank | t, u)``; edges outside the sample's lattice are ignored.
    emit_lp : torch.Tensor, float ``[B, T, U]``
        ``log p(y_{u+1} | t, u)``.
    t_len, u_len : torch.Tensor, int64 ``[B]``
        Frames ``T_b >= 1`` and labels ``0 <= U_b``.

    Returns
    -------
    log_z : ``[B]``; alpha, beta : ``[B, T, U+1]`` (``-inf`` outside the lattice);
    p_blank : ``[B, T, U+1]`` and p_emit : ``[B, T, U]``, the edge occupancies
    ``exp(alpha + edge + beta_next - log_z)`` (= d log Z / d edge), 0 outside the lattice.
    """
    B, T, W = blank_lp.shape
    U = W - 1
    ninf = float("-inf")
    mblank, memit = lattice_masks(T, U, t_len, u_len)
    blank = blank_lp.masked_fill(~mblank, ninf)
    emit = torch.cat([emit_lp.masked_fill(~memit, ninf), blank_lp.new_full((B, T, 1), ninf)], 2)
    bs = skew(blank, ninf)  # [B, D, W]
    es = skew(emit, ninf)
    D = T + W - 1
    # alpha, diagonal by diagonal
    alpha_s = blank.new_full((B, D, W), ninf)
    alpha_s[:, 0, 0] = 0.0
    pad = blank.new_full((B, 1), ninf)
    prev = alpha_s[:, 0]
    rows = [prev]
    for d in range(1, D):
        from_blank = prev + bs[:, d - 1]
        from_emit = torch.cat([pad, (prev + es[:, d - 1])[:, :-1]], 1)
        prev = torch.logaddexp(from_blank, from_emit)
        rows.append(prev)
    alpha_s = torch.stack(rows, 1)
    # terminal values injected on their own diagonal
    b_idx = torch.arange(B, device=blank.device)
    term_d = t_len - 1 + u_len
    term_val = blank[b_idx, t_len - 1, u_len]
    log_z = alpha_s[b_idx, term_d, u_len] + term_val
    term = blank.new_full((B, D, W), ninf)
    term[b_idx, term_d, u_len] = term_val
    nxt = blank.new_full((B, W), ninf)
    brow: list[torch.Tensor] = [nxt] * D
    for d in range(D - 1, -1, -1):
        via_blank = nxt + bs[:, d]  # beta(t+1, u) sits on diagonal d+1 at the same u
        via_emit = torch.cat([nxt[:, 1:], pad], 1) + es[:, d]  # beta(t, u+1): diag d+1, u+1
        cur = torch.logaddexp(torch.logaddexp(via_blank, via_emit), term[:, d])
        brow[d] = cur
        nxt = cur
    beta_s = torch.stack(brow, 1)
    tt = torch.arange(T, device=blank.device)[None, :, None]
    uu = torch.arange(W, device=blank.device)[None, None, :]
    outside = (tt >= t_len[:, None, None]) | (uu > u_len[:, None, None])
    alpha = unskew(alpha_s, T).masked_fill(outside, ninf)
    beta = unskew(beta_s, T).masked_fill(outside, ninf)
    # beta of the successor cells; the terminal blank leads to a virtual cell with beta = 0
    beta_next_t = torch.cat([beta[:, 1:], blank.new_full((B, 1, W), ninf)], 1)
    beta_next_t = beta_next_t.clone()
    beta_next_t[b_idx, t_len - 1, u_len] = 0.0
    lz = log_z[:, None, None]
    p_blank = torch.exp(alpha + blank + beta_next_t - lz)
    p_emit = torch.exp(alpha[:, :, :U] + emit[:, :, :U] + beta[:, :, 1:] - lz)
    p_blank = torch.nan_to_num(p_blank, nan=0.0).masked_fill(~mblank, 0.0)
    p_emit = torch.nan_to_num(p_emit, nan=0.0).masked_fill(~memit, 0.0)
    return log_z, alpha, beta, p_blank, p_emit
