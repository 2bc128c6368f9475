"""QuEST linear layers: fake-quantized for training, packed int4 for inference (QuEST §3, §5).

``QuESTLinear`` computes ``y = x̂_a · Ŵᵀ + b`` with both operands left in the Hadamard basis
("Half" Hadamard, ``H Hᵀ = I``); ``QuESTInt4Linear`` computes the same ``y`` from int4 weight
codes and online activation codes with the official ``gemm-quest`` epilogue.
"""

import torch
from torch import nn
from torch.nn import functional as F

from ._validation import check_float_tensor
from .hadamard import _rotate
from .packing import int4_matmul, pack_int4
from .quantizer import QuESTQuantizer, _check_k, _codes, _PlainBasis


def _is_dtensor(weight) -> bool:
    """Whether `weight` is a DTensor (FSDP2 / tensor-parallel shards), without importing it."""
    return getattr(weight, "placements", None) is not None


def _k_sharded(weight) -> bool:
    """Whether `weight` is a DTensor sharded along K (its last dimension)."""
    placements = getattr(weight, "placements", None)
    if placements is None:
        return False
    return any(getattr(p, "dim", None) in (1, -1) for p in placements if p.is_shard())


class RotatedWeight(nn.Module):
    """Full-precision weight path of a W16A* layer: ``W·blockdiag(H)`` exactly (no rounding),
    so the weight meets the rotated activations. Shape (N, K) -> (N, K)."""

    rotate = rotated_output = True
    sparse48 = False
    grid = "none"

    def __init__(self, block=128):
        super().__init__()
        self.block = block

    def forward(self, w):
        return _rotate(w, self.block)

    def extra_repr(self):
        return f"block={self.block}"


class QuESTLinear(nn.Module):
    """A linear layer whose weight and input are QuEST fake-quantized in train and eval mode.

    Parameters
    ----------
    weight : nn.Parameter of shape (N, K)
        Reused as is (the same Parameter object, so optimizers and state_dict keys survive).
    bias : nn.Parameter of shape (N,), optional
    w_quantizer : QuESTQuantizer
        Weight quantizer (rows of W).
    a_quantizer : QuESTQuantizer, optional
        Activation quantizer (tokens); None keeps activations in full precision (rotated when the
        weight quantizer works in the rotated basis).

    Raises
    ------
    ValueError
        If the two quantizers disagree on `half`/`rotate`/`block` (their bases must match).
    """

    def __init__(self, weight, bias, w_quantizer, a_quantizer=None):
        super().__init__()
        if a_quantizer is not None and (
            a_quantizer.rotated_output != w_quantizer.rotated_output
            or (
                a_quantizer.rotate and w_quantizer.rotate and a_quantizer.block != w_quantizer.block
            )
        ):
            raise ValueError(
                "weight and activation quantizers must share `half`, `rotate` and `block`: got "
                f"W({w_quantizer.extra_repr()}) and A({a_quantizer.extra_repr()})"
            )
        self.weight = weight
        self.bias = bias
        self.w_quantizer = w_quantizer
        self.a_quantizer = a_quantizer
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]

    @classmethod
    def from_linear(cls, linear: nn.Linear, w_quantizer, a_quantizer=None) -> "QuESTLinear":
        """Wrap `linear`, reusing its weight and bias Parameters.

        Raises
        ------
        TypeError
            If `linear` is not an ``nn.Linear``, or a quantizer is not one of this library's
            quantizer modules (a :class:`~quest_qat.QuESTConfig` is refused with a pointer to
            ``prepare_``).
        ValueError
            If K is not a multiple of the weight quantizer's block, or the quantizers disagree.
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"`linear` must be an nn.Linear, got {type(linear).__name__}")
        _check_quantizer(w_quantizer, "w_quantizer")
        if a_quantizer is not None:
            _check_quantizer(a_quantizer, "a_quantizer")
        _check_k(
            linear.weight, w_quantizer.block, w_quantizer.rotate, w_quantizer.sparse48, "weight"
        )
        return cls(linear.weight, linear.bias, w_quantizer, a_quantizer)

    def forward(self, x):
        """x (..., K) -> (..., N); the output has x's dtype: the quantized weight and the bias are
        cast to it (mixed precision: fp32 master weights, bf16 input), where ``nn.Linear`` would
        raise on a dtype mismatch.

        Raises
        ------
        TypeError, ValueError
            If `x` is not a floating tensor whose last dimension is ``in_features``.
        """
        if x.shape[-1] != self.in_features:
            raise ValueError(f"`x` must end in K={self.in_features}, got shape {tuple(x.shape)}")
        if _k_sharded(self.weight):
            raise NotImplementedError(
                "QuESTLinear needs whole rows of W (the row RMS and the Hadamard span K): "
                "K-sharded tensor parallelism is not supported; shard N (Shard(0)) or use "
                "DDP/FSDP, which gather the weight"
            )
        w = self.w_quantizer(self.weight)
        if self.a_quantizer is not None:
            x = self.a_quantizer(x)
        elif self.w_quantizer.rotated_output:
            x = _rotate(x, self.w_quantizer.block)
        return F.linear(x, w.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


_QUANTIZERS = (QuESTQuantizer, _PlainBasis, RotatedWeight)


def _check_quantizer(q, name):
    if not isinstance(q, _QUANTIZERS):
        hint = (
            ": a config goes to prepare_(nn.Sequential(linear), config)"
            if type(q).__name__ in ("QuESTConfig", "QuESTAOConfig")
            else ""
        )
        raise TypeError(
            f"`{name}` must be a quantizer module (QuESTQuantizer, STEQuantizer, LSQQuantizer, "
            f"...), got {type(q).__name__}{hint}"
        )


def _native_gemm():
    try:
        import quest_qat_kernels
    except ImportError:
        return None
    return quest_qat_kernels


def int4_gemm(a_codes: torch.Tensor, qweight: torch.Tensor) -> torch.Tensor:
    """int32 ``C = a·wᵀ``: the native CUDA kernel when installed and on GPU, else the reference.

    The native kernel needs K % 64 == 0 and 16-byte aligned operands; other inputs take the
    reference (:func:`~quest_qat.int4_matmul`), which gives the same exact result.
    """
    native = _native_gemm() if a_codes.is_cuda else None
    if native is not None:
        a, w = a_codes.contiguous(), qweight.contiguous()  # alive until the launch is queued
        if a.shape[1] % 64 == 0 and a.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0:
            out = torch.empty((a.shape[0], w.shape[0]), dtype=torch.int32, device=a.device)
            native.int4_gemm(
                a.data_ptr(), w.data_ptr(), out.data_ptr(), a.shape[0], w.shape[0], a.shape[1],
                torch.cuda.current_stream().cuda_stream,
            )  # fmt: skip
            return out
    return int4_matmul(a_codes, qweight)


def check_convertible(layer) -> None:
    """Raise if :meth:`QuESTInt4Linear.from_quest` cannot convert `layer` (see its Raises)."""
    if not isinstance(layer, QuESTLinear):
        raise TypeError(f"`layer` must be a QuESTLinear, got {type(layer).__name__}")
    wq, aq = layer.w_quantizer, layer.a_quantizer
    if aq is None:
        raise NotImplementedError("convert_ needs quantized activations (a_bits=None given)")
    for name, q in (("w", wq), ("a", aq)):
        if not isinstance(q, QuESTQuantizer) or q.grid != "int" or q.bits > 4:
            raise NotImplementedError(
                f"convert_ handles int grids of 1-4 bits; {name}_quantizer is {q!r}"
            )
    if not wq.rotated_output and wq.rotate:
        raise NotImplementedError("convert_ needs half=True (operands in the rotated basis)")
    if _is_dtensor(layer.weight):
        raise NotImplementedError(
            "convert_ needs whole weights, got a sharded DTensor weight (FSDP2 fully_shard or "
            "tensor parallelism): gather a full state dict (torch.distributed.checkpoint."
            "state_dict.get_model_state_dict with StateDictOptions(full_state_dict=True)), load "
            "it into an unsharded prepared model, and convert_ that"
        )
    if not bool(torch.isfinite(layer.weight.detach()).all()):
        raise ValueError(f"the weight of {layer!r} holds NaN or infinity")


class QuESTInt4Linear(nn.Module):
    """Packed int4 QuEST linear layer for inference (official ``gemm-quest`` epilogue).

    Buffers: ``qweight`` uint8 (N, K/2) (low nibble = even column), ``w_step`` (N, 1) float32
    (float64 for a float64 model), ``w_add`` int32 (N,) ``= rowsum(q_w) + K/2``, ``bias``; with
    4:8 weights also ``w_keep`` bool (N, K). The state_dict also holds ``_extra_state``
    (``a_bits``, ``block``, ``rotate``): loading it into a layer made with other values raises.

    Forward (..., K) -> (..., N): online Hadamard, activation codes ``q_a``, step ``Δ_a`` and
    ``rowsum(q_a)``; int32 ``C = Σ_k q_a q_w``; ``y = (2C + rowsum(q_a) + w_add)·Δ_a Δ_w / 2 + b``
    in float32 (float64 for float64), which equals ``Σ (q_a+½)Δ_a (q_w+½)Δ_w``.

    Raises
    ------
    TypeError
        In forward, if `x` is not a floating tensor (integer input would give integer garbage).
    ValueError
        In forward, if `x` does not end in K. NaN/infinity is not checked (no device sync per
        call); it propagates to the output as in ``nn.Linear``. In ``load_state_dict``, if the
        checkpoint's ``a_bits``/``block``/``rotate`` differ from the layer's.
    """

    # registered buffers: packed codes, per-row scales and offsets, bias, 4:8 keep mask
    qweight: torch.Tensor
    w_step: torch.Tensor
    w_add: torch.Tensor
    bias: torch.Tensor | None
    w_keep: torch.Tensor | None

    def __init__(self, qweight, w_step, w_add, bias, *, a_bits, block, rotate, w_keep=None):
        super().__init__()
        self.register_buffer("qweight", qweight)
        self.register_buffer("w_step", w_step)
        self.register_buffer("w_add", w_add)
        self.register_buffer("bias", bias)
        self.register_buffer("w_keep", w_keep)
        self.a_bits, self.block, self.rotate = a_bits, block, rotate
        self.in_features, self.out_features = qweight.shape[1] * 2, qweight.shape[0]

    @classmethod
    def from_quest(cls, layer: QuESTLinear) -> "QuESTInt4Linear":
        """Convert a :class:`QuESTLinear` with int grids of 1-4 bits (weights and activations).

        Raises
        ------
        TypeError
            If `layer` is not a :class:`QuESTLinear`.
        NotImplementedError
            FP4 grids, more than 4 bits, full-precision activations, or a sharded (DTensor)
            weight.
        ValueError
            If the weight holds NaN or infinity.
        """
        check_convertible(layer)
        wq, aq = layer.w_quantizer, layer.a_quantizer
        w = layer.weight.detach()
        codes, step, rowsum = _codes(w, wq.bits, wq.block, wq.rotate)
        keep = None
        if wq.sparse48:
            from .kernels.quest.naive import keep_48

            keep = keep_48((codes.to(step.dtype) + 0.5) * step)
        k = w.shape[1]
        bias = None if layer.bias is None else layer.bias.detach().clone()
        return cls(
            pack_int4(codes), step, (rowsum + k // 2).to(torch.int32), bias,
            a_bits=aq.bits, block=aq.block, rotate=aq.rotate, w_keep=keep,
        )  # fmt: skip

    def forward(self, x):
        """x (..., K) floating -> (..., N) in x's dtype, computed from int codes (see the class
        docstring's "Forward").

        Raises
        ------
        TypeError, ValueError
            If `x` is not a floating tensor ending in K.
        """
        x = check_float_tensor(x, "x", finite=False)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"`x` must end in K={self.in_features}, got shape {tuple(x.shape)}")
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        codes, a_step, a_rowsum = _codes(x2, self.a_bits, self.block, self.rotate)
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        if self.w_keep is None:
            c = int4_gemm(codes, self.qweight)
            acc = 2 * c.to(dtype) + a_rowsum.to(dtype)[:, None] + self.w_add.to(dtype)[None, :]
            y = acc * (a_step.to(dtype) * self.w_step.to(dtype).T) / 2
        else:  # 4:8: Σ (2q_a+1)(2q_w+1)·keep, exact in float64, times Δ_aΔ_w/4
            from .packing import unpack_int4

            wq = (2 * unpack_int4(self.qweight).to(torch.float64) + 1) * self.w_keep
            acc = (2 * codes.to(torch.float64) + 1) @ wq.T
            y = acc.to(dtype) * (a_step.to(dtype) * self.w_step.to(dtype).T) / 4
        if self.bias is not None:
            y = y + self.bias.to(dtype)
        return y.to(x.dtype).reshape(*shape[:-1], self.out_features)

    def get_extra_state(self) -> dict:
        """The activation settings the codes were made for, saved as ``<prefix>_extra_state``."""
        return {"a_bits": self.a_bits, "block": self.block, "rotate": self.rotate}

    def set_extra_state(self, state) -> None:
        """Refuse a checkpoint converted with other activation settings (it would load silently
        and compute with the wrong activation grid or Hadamard block)."""
        mine = self.get_extra_state()
        if not isinstance(state, dict) or set(state) != set(mine):
            raise ValueError(
                f"`_extra_state` must be a dict with keys {sorted(mine)}, got {state!r}"
            )
        for key, value in mine.items():
            if state[key] != value:
                raise ValueError(
                    f"checkpoint was converted with {key}={state[key]!r}, this layer has "
                    f"{key}={value!r}: prepare_ and convert_ the model with the checkpoint's config"
                )

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"a_bits={self.a_bits}, block={self.block}"
        )
