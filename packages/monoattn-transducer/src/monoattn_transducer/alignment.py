"""Prior alignments and chunk synchronisation of the posterior (MonoAttn's two-pass step).

Source: Ma et al., ICML 2025, Sec. 3.2-3.3; official
``monotonic_transducer_chunk_diagonal_prior.py``
(spec section 2). Differences kept on purpose (spec section 9): each sample uses its own ``U_b``,
``T_b`` and chunk count (the official code uses batch maxima), padded rows are 0 (not
``1/T_max``), and a partial last chunk puts its mass on the last valid frame (not on padding).
"""

import math
from typing import Any

import torch

from icml25_core import check_choice, check_scalar, check_tensor

__all__ = ["alignment_prior", "chunk_synchronize"]

_INTS = (torch.int32, torch.int64)


def _lengths(x: Any, name: str, low: int) -> torch.Tensor:
    check_tensor(x, name, ndim=1, dtype=_INTS)
    if int(x.min()) < low:
        raise ValueError(f"`{name}` must be >= {low}, got min {int(x.min())}")
    return x.to(torch.int64)


def _chunk_end(frame: torch.Tensor, chunk_frames: int, t_len: torch.Tensor) -> torch.Tensor:
    """Last encoder frame of the chunk holding `frame`, capped at the sample's last valid frame."""
    end = (frame // chunk_frames + 1) * chunk_frames - 1
    return torch.minimum(end, t_len - 1)


def alignment_prior(
    kind: str,
    enc_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    chunk_frames: int | None = None,
    alpha: float = 1.0,
    enc_frames: int | None = None,
    max_target_length: int | None = None,
    device: Any = None,
) -> torch.Tensor:
    r"""Prior alignment of the first (no-grad) pass, ``[B, U+1, T_enc]``.

    Row 0 is the BOS state: all mass on the first chunk's last frame (frame 0 without chunks).
    Row ``u = 1..U_b`` is the prior of the emission frame of ``y_u`` (index ``i = u - 1``):

    $$p_{u}(c)\propto\exp\bigl(-a\,\lvert i - c\,U_b/C_b\rvert\bigr),\ c<C_b$$

    placed on chunk ``c``'s last frame; ``diagonal`` is ``∝ exp(-a |i - t U_b / T_b|)`` over frames
    ``t < T_b``; ``uniform`` is ``1 / T_b``. Rows ``u > U_b`` are 0. (Official ``--alpha``
    ``a = 1``; spec section 2.)

    Parameters
    ----------
    kind : {"chunk_diagonal", "diagonal", "uniform"}
    enc_lengths : torch.Tensor, int ``[B]``
        Encoder frames per sample, ``>= 1``.
    target_lengths : torch.Tensor, int ``[B]``
        Labels per sample, ``>= 0``; ``U = max``.
    chunk_frames : int, optional
        Encoder frames per chunk; required for ``chunk_diagonal``.
    alpha : float, default=1.0
        Sharpness ``a`` (official default).
    enc_frames : int, optional
        ``T_enc`` of the output (default ``max(enc_lengths)``).
    max_target_length : int, optional
        ``U`` of the output (default ``max(target_lengths)``; e.g. ``targets.shape[1]``).
    device : torch.device, optional
        Default: the lengths' device.

    Returns
    -------
    torch.Tensor, float32 ``[B, U+1, T_enc]``; rows ``0..U_b`` sum to 1.

    Raises
    ------
    ValueError
        Unknown `kind`, lengths out of range, missing/invalid `chunk_frames`, `alpha` < 0.
    """
    check_choice(kind, "kind", ("chunk_diagonal", "diagonal", "uniform"))
    t_len = _lengths(enc_lengths, "enc_lengths", 1)
    u_len = _lengths(target_lengths, "target_lengths", 0)
    if t_len.shape != u_len.shape:
        raise ValueError("`enc_lengths` and `target_lengths` must have the same length")
    check_scalar(alpha, "alpha", low=0)
    if kind == "chunk_diagonal" and chunk_frames is None:
        raise ValueError("`chunk_frames` is required for kind='chunk_diagonal'")
    if chunk_frames is not None:
        check_scalar(chunk_frames, "chunk_frames", kind=int, low=1)
    T = int(t_len.max()) if enc_frames is None else enc_frames
    check_scalar(T, "enc_frames", kind=int, low=int(t_len.max()))
    dev = t_len.device if device is None else torch.device(device)
    t_len, u_len = t_len.to(dev), u_len.to(dev)
    U = int(u_len.max()) if max_target_length is None else max_target_length
    check_scalar(U, "max_target_length", kind=int, low=int(u_len.max()))
    B = t_len.shape[0]
    t = torch.arange(T, device=dev)[None, None, :].to(torch.float32)
    i = torch.arange(U + 1, device=dev)[None, :, None].to(torch.float32) - 1  # row u -> y_u
    tb = t_len[:, None, None].to(torch.float32)
    ub = u_len[:, None, None].to(torch.float32)
    valid_t = t < tb
    if kind == "uniform":
        score = torch.zeros(B, U + 1, T, device=dev)
        ok = valid_t.expand(B, U + 1, T)
    elif kind == "diagonal":
        score = -alpha * (i - t * ub / tb).abs()
        ok = valid_t.expand(B, U + 1, T)
    else:
        assert chunk_frames is not None
        n_chunks = torch.div(t_len + chunk_frames - 1, chunk_frames, rounding_mode="floor")
        cb = n_chunks[:, None, None].to(torch.float32)
        c = torch.div(t, chunk_frames, rounding_mode="floor")
        score = -alpha * (i - c * ub / cb).abs()
        last = _chunk_end(t.to(torch.int64), chunk_frames, t_len[:, None, None])
        ok = (valid_t & (t.to(torch.int64) == last)).expand(B, U + 1, T)
    score = score.masked_fill(~ok, float("-inf"))
    prior = torch.softmax(score, -1)
    rows = torch.arange(U + 1, device=dev)[None, :, None]
    prior = prior.masked_fill((rows > u_len[:, None, None]) | (rows == 0), 0.0)
    bos = 0 if chunk_frames is None else torch.clamp(t_len - 1, max=chunk_frames - 1)
    bos_frame = torch.as_tensor(bos, device=dev).expand(B)
    prior[torch.arange(B, device=dev), 0, bos_frame] = 1.0
    return prior


def chunk_synchronize(
    posterior: torch.Tensor,
    enc_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    chunk_frames: int,
    downsample: int,
    enc_frames: int | None = None,
) -> torch.Tensor:
    r"""Move the posterior's mass onto chunk-final encoder frames, BOS row prepended.

    $$\tilde p_{u}(t)=\sum_{i:\ \mathrm{end}(i\cdot s)=t} P(\tau_u=i)$$

    where decision frame ``i`` is encoder frame ``i·s`` (``s`` = `downsample`) and
    ``end(j)`` is the last frame of ``j``'s chunk, capped at ``T_b - 1`` (official chunk sync,
    with its padded-frame bug fixed: spec section 9). Row 0 (BOS) is ``δ`` at decision frame 0.

    Parameters
    ----------
    posterior : torch.Tensor, float ``[B, T_dec, U]``
        ``P(τ_u = i)`` from :func:`~monoattn_transducer.rnnt.emission_posterior`.
    enc_lengths : torch.Tensor, int ``[B]``
        Encoder frames per sample (``>= 1``); decision frames ``ceil(T_b / s) <= T_dec``.
    target_lengths : torch.Tensor, int ``[B]``
        ``0 <= U_b <= U``.
    chunk_frames : int
        Encoder frames per chunk, a multiple of `downsample`.
    downsample : int
        Decision stride (official ``transducer_downsample``, 4).
    enc_frames : int, optional
        ``T_enc`` of the output (default ``max(enc_lengths)``).

    Returns
    -------
    torch.Tensor, float32 ``[B, U+1, T_enc]``; mass per row preserved.

    Raises
    ------
    ValueError
        If ``chunk_frames % downsample != 0``, shapes or lengths do not match, or NaN/negative.
    """
    check_scalar(chunk_frames, "chunk_frames", kind=int, low=1)
    check_scalar(downsample, "downsample", kind=int, low=1)
    if chunk_frames % downsample:
        raise ValueError(
            f"`chunk_frames` ({chunk_frames}) must be a multiple of `downsample` ({downsample})"
        )
    check_tensor(posterior, "posterior", ndim=3, allow_empty=True,
                 dtype=(torch.float16, torch.bfloat16, torch.float32, torch.float64))  # fmt: skip
    B, T_dec, U = posterior.shape
    if B == 0 or T_dec == 0:
        raise ValueError(f"`posterior` must have B, T_dec >= 1, got {tuple(posterior.shape)}")
    t_len = _lengths(enc_lengths, "enc_lengths", 1)
    u_len = _lengths(target_lengths, "target_lengths", 0)
    if t_len.shape != (B,) or u_len.shape != (B,):
        raise ValueError(f"`enc_lengths` and `target_lengths` must have shape ({B},)")
    if int(u_len.max()) > U:
        raise ValueError(f"`target_lengths` must be <= {U}")
    need = math.ceil(int(t_len.max()) / downsample)
    if need > T_dec:
        raise ValueError(f"`posterior` needs >= {need} decision frames for `enc_lengths`")
    if bool((posterior < 0).any()):
        raise ValueError("`posterior` must be >= 0")
    T = int(t_len.max()) if enc_frames is None else enc_frames
    check_scalar(T, "enc_frames", kind=int, low=int(t_len.max()))
    dev = posterior.device
    t_len, u_len = t_len.to(dev), u_len.to(dev)
    dec = torch.arange(T_dec, device=dev)[None, :]  # [1, T_dec]
    target = _chunk_end(dec * downsample, chunk_frames, t_len[:, None])  # [B, T_dec]
    dec_valid = dec * downsample < t_len[:, None]
    p = posterior.to(torch.float32).masked_fill(~dec_valid[:, :, None], 0.0)
    rows = torch.arange(U, device=dev)[None, None, :]
    p = p.masked_fill(rows >= u_len[:, None, None], 0.0)
    out = torch.zeros(B, U + 1, T, device=dev)
    idx = target.clamp(min=0)[:, None, :].expand(B, U, T_dec)
    out[:, 1:].scatter_add_(2, idx, p.transpose(1, 2))
    bos = _chunk_end(torch.zeros(B, dtype=torch.int64, device=dev), chunk_frames, t_len)
    out[torch.arange(B, device=dev), 0, bos] = 1.0
    return out
