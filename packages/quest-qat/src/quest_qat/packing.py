"""Int4 packing and the reference int4 GEMM (official ``gemm-quest`` layout).

Two signed 4-bit codes per byte: the low nibble holds the even column, the high nibble the odd
one (two's complement), so codes ``[1, -2]`` pack to ``0xE1``.
"""

import torch


def _check_codes(codes, name):
    if not isinstance(codes, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(codes).__name__}")
    if codes.dtype != torch.int8:
        raise TypeError(f"`{name}` must have dtype torch.int8, got {codes.dtype}")
    if codes.dim() == 0:
        raise ValueError(f"`{name}` must have at least one dimension")


def pack_int4(codes) -> torch.Tensor:
    """Pack int8 codes in [-8, 7] two per byte.

    Parameters
    ----------
    codes : Tensor of shape (..., K), int8, values in [-8, 7], K even

    Returns
    -------
    Tensor of shape (..., K/2), uint8
        ``(codes[..., 0::2] & 0xF) | (codes[..., 1::2] & 0xF) << 4``.

    Raises
    ------
    TypeError
        If `codes` is not an int8 tensor.
    ValueError
        If K is odd or a code lies outside [-8, 7].
    """
    _check_codes(codes, "codes")
    if codes.shape[-1] % 2:
        raise ValueError(f"the last dimension of `codes` must be even, got {codes.shape[-1]}")
    if codes.numel() and (codes.min() < -8 or codes.max() > 7):
        raise ValueError("`codes` must lie in [-8, 7]")
    c = codes.to(torch.int16) & 0xF
    return (c[..., 0::2] | (c[..., 1::2] << 4)).to(torch.uint8)


def unpack_int4(packed) -> torch.Tensor:
    """Inverse of :func:`pack_int4`.

    Parameters
    ----------
    packed : Tensor of shape (..., K/2), uint8

    Returns
    -------
    Tensor of shape (..., K), int8 in [-8, 7]

    Raises
    ------
    TypeError
        If `packed` is not a uint8 tensor.
    """
    if not isinstance(packed, torch.Tensor) or packed.dtype != torch.uint8:
        raise TypeError("`packed` must be a torch.uint8 tensor")
    # arithmetic shifts of the signed bytes sign-extend each nibble (two's complement)
    p = packed.view(torch.int8)
    low = torch.bitwise_right_shift(torch.bitwise_left_shift(p, 4), 4)
    high = torch.bitwise_right_shift(p, 4)
    return torch.stack([low, high], dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def int4_matmul(a_codes, qweight) -> torch.Tensor:
    """Reference int4 GEMM ``C = a_codes · unpack(qweight)ᵀ``, exact in int32.

    Parameters
    ----------
    a_codes : Tensor of shape (M, K), int8
        Activation codes.
    qweight : Tensor of shape (N, K/2), uint8
        Packed weight codes.

    Returns
    -------
    Tensor of shape (M, N), int32
        Computed as a float64 (CPU) or float32 (CUDA) matmul of the codes: exact while
        ``K·|a|·|w| <= 2**24`` (K <= 2**18 for int4 operands in float32).

    Raises
    ------
    TypeError
        For wrong dtypes.
    ValueError
        If the shapes do not agree.
    """
    _check_codes(a_codes, "a_codes")
    if not isinstance(qweight, torch.Tensor) or qweight.dtype != torch.uint8:
        raise TypeError("`qweight` must be a torch.uint8 tensor")
    if a_codes.dim() != 2 or qweight.dim() != 2 or a_codes.shape[1] != 2 * qweight.shape[1]:
        raise ValueError(
            f"`a_codes` (M, K) and `qweight` (N, K/2) disagree: {tuple(a_codes.shape)} vs "
            f"{tuple(qweight.shape)}"
        )
    w = unpack_int4(qweight)
    dtype = torch.float32 if a_codes.is_cuda else torch.float64
    return (a_codes.to(dtype) @ w.to(dtype).T).round().to(torch.int32)
