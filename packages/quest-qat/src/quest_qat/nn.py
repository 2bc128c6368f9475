"""QuEST linear layers: fake-quantized for training, packed int4 for inference (QuEST §3, §5).

``QuESTLinear`` computes ``y = x̂_a · Ŵᵀ + b`` with both operands left in the Hadamard basis
("Half" Hadamard, ``H Hᵀ = I``); ``QuESTInt4Linear`` computes the same ``y`` from int4 weight
codes and online activation codes with the official ``gemm-quest`` epilogue.
"""

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ._validation import check_bits, check_block, check_bool, check_float_tensor
from .hadamard import _rotate
from .kernels.quest.naive import rotate_saturated
from .packing import pack_int4, unpack_int4
from .quantizer import QuESTQuantizer, _check_k, _codes, _PlainBasis


def _is_dtensor(weight) -> bool:
    """Whether `weight` is a DTensor (FSDP2 / tensor-parallel shards), without importing it."""
    return getattr(weight, "placements", None) is not None


def _is_conv1d(module) -> bool:
    """Whether `module` is transformers' ``Conv1D`` (GPT-2): ``y = x·W + b`` with W stored (K, N)
    as ``weight`` and the sizes ``nx`` = K, ``nf`` = N (``transformers.pytorch_utils``)."""
    weight = getattr(module, "weight", None)
    return (
        type(module).__name__ == "Conv1D"
        and isinstance(weight, torch.Tensor)
        and tuple(weight.shape) == (getattr(module, "nx", None), getattr(module, "nf", None))
    )


class RotatedWeight(nn.Module):
    """Full-precision weight path of a W16A* layer: ``W·blockdiag(H)`` exactly (no rounding),
    so the weight meets the rotated activations. Shape (N, K) -> (N, K)."""

    rotate = rotated_output = True
    sparse48 = False
    grid = "none"

    def __init__(self, block=128):
        super().__init__()
        self.block = block

    def forward(self, w, group=None):
        """Rotate the rows of `w` (N, K) blockwise; `group` (row-wise tensor parallelism: K split
        on Hadamard-block boundaries) changes nothing, the rotation is per block."""
        return _rotate(w, self.block)

    def extra_repr(self):
        return f"block={self.block}"


class QuESTLinear(nn.Module):
    """A linear layer whose weight and input are QuEST fake-quantized in train and eval mode.

    Parameters
    ----------
    weight : nn.Parameter of shape (N, K), or (K, N) when `transposed`
        Reused as is (the same Parameter object, so optimizers and state_dict keys survive).
    bias : nn.Parameter of shape (N,), optional
    w_quantizer : QuESTQuantizer
        Weight quantizer (rows of W).
    a_quantizer : QuESTQuantizer, optional
        Activation quantizer (tokens); None keeps activations in full precision (rotated when the
        weight quantizer works in the rotated basis).
    transposed : bool, default=False
        The weight is stored (K, N), as in transformers' GPT-2 ``Conv1D`` (``y = x·W + b``); the
        quantizers see its transpose, the rows of the (N, K) weight.

    Attributes
    ----------
    tp_style, tp_mesh : ParallelStyle and DeviceMesh, or None
        Set by :class:`~quest_qat.parallel.QuESTColwiseParallel` /
        :class:`~quest_qat.parallel.QuESTRowwiseParallel`, whose forward then runs.

    Raises
    ------
    ValueError
        If the two quantizers disagree on `half`/`rotate`/`block` (their bases must match).
    TypeError
        If `transposed` is not a bool.
    """

    def __init__(self, weight, bias, w_quantizer, a_quantizer=None, *, transposed=False):
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
        self.transposed = check_bool(transposed, "transposed")
        self.out_features, self.in_features = weight.shape[::-1] if transposed else weight.shape
        self.tp_style: Any = None  # a quest_qat.parallel style
        self.tp_mesh: Any = None  # its DeviceMesh

    @classmethod
    def from_linear(cls, linear: nn.Module, w_quantizer, a_quantizer=None) -> "QuESTLinear":
        """Wrap `linear` (an ``nn.Linear``, or transformers' GPT-2 ``Conv1D``, whose (K, N) weight
        is used transposed), reusing its weight and bias Parameters.

        Raises
        ------
        TypeError
            If `linear` is neither an ``nn.Linear`` nor a ``Conv1D``, or a quantizer is not one of
            this library's quantizer modules (a :class:`~quest_qat.QuESTConfig` is refused with a
            pointer to ``prepare_``).
        ValueError
            If K is not a multiple of the weight quantizer's block, or the quantizers disagree.
        """
        transposed = _is_conv1d(linear)
        if not (isinstance(linear, nn.Linear) or transposed):
            raise TypeError(
                "`linear` must be an nn.Linear or a transformers Conv1D, got "
                f"{type(linear).__name__}"
            )
        _check_quantizer(w_quantizer, "w_quantizer")
        if a_quantizer is not None:
            _check_quantizer(a_quantizer, "a_quantizer")
        weight = linear.get_parameter("weight")
        _check_k(
            weight.t() if transposed else weight,
            w_quantizer.block,
            w_quantizer.rotate,
            w_quantizer.sparse48,
            "weight",
        )
        return cls(weight, linear.bias, w_quantizer, a_quantizer, transposed=transposed)

    def weight_nk(self) -> torch.Tensor:
        """The weight as (N, K), differentiable (a contiguous transposed copy for a ``Conv1D``
        layer, so that the row statistics run in the same order as for an ``nn.Linear``)."""
        return self.weight.t().contiguous() if self.transposed else self.weight

    def forward(self, x):
        """x (..., K) -> (..., N); the output has x's dtype: the quantized weight and the bias are
        cast to it (mixed precision: fp32 master weights, bf16 input), where ``nn.Linear`` would
        raise on a dtype mismatch.

        Raises
        ------
        TypeError, ValueError
            If `x` is not a floating tensor whose last dimension is ``in_features``.
        ValueError
            If the weight is a sharded DTensor that no QuEST parallel style set up (FSDP2 gathers
            it before the forward; tensor parallelism goes through
            :class:`~quest_qat.parallel.QuESTColwiseParallel` /
            :class:`~quest_qat.parallel.QuESTRowwiseParallel`).
        """
        if self.tp_style is not None:
            return self.tp_style.parallel_forward(self, x)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"`x` must end in K={self.in_features}, got shape {tuple(x.shape)}")
        if _is_dtensor(self.weight):
            raise ValueError(
                "the weight of this QuESTLinear is a sharded DTensor: shard it with "
                "torch.distributed.tensor.parallel.parallelize_module and "
                "quest_qat.parallel.QuESTColwiseParallel (N) or QuESTRowwiseParallel (K), or "
                "with FSDP2 fully_shard, which gathers it for the forward"
            )
        return self.linear(x, self.weight_nk(), self.bias)

    def linear(self, x, weight, bias, group=None):
        """``x̂_a · Ŵᵀ + b`` for an (N, K) `weight` (QuEST §3, "Half" Hadamard: both operands in
        the rotated basis); `group` splits K over its ranks (row-wise tensor parallelism: the
        quantizers take σ of the whole rows, the caller sums the partial products)."""
        w = self.w_quantizer(weight, group=group) if group is not None else self.w_quantizer(weight)
        if self.a_quantizer is not None:
            x = self.a_quantizer(x, group=group) if group is not None else self.a_quantizer(x)
        elif self.w_quantizer.rotated_output:
            x = rotate_saturated(x, self.w_quantizer.block)
        return F.linear(x, w.to(x.dtype), None if bias is None else bias.to(x.dtype))

    def extra_repr(self):
        text = f"in_features={self.in_features}, out_features={self.out_features}"
        return text + (", transposed=True" if self.transposed else "")


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


def int8_gemm(a_codes: torch.Tensor, w_codes: torch.Tensor) -> torch.Tensor:
    """int32 ``C = a·wᵀ`` of int8 codes, exact: ``torch._int_mm`` (int8 × int8 → int32) where it
    runs (CPU; CUDA with M > 16 and K, N multiples of 8), else a float64 matmul of the codes.

    Parameters
    ----------
    a_codes : Tensor of shape (M, K), int8
    w_codes : Tensor of shape (N, K), int8

    Returns
    -------
    Tensor of shape (M, N), int32
        Exact while ``K·max|a|·max|w| < 2**31`` (:func:`check_convertible` checks it).
    """
    m, k = a_codes.shape
    n = w_codes.shape[0]
    if not a_codes.is_cuda or (m > 16 and k % 8 == 0 and n % 8 == 0):
        return torch._int_mm(a_codes.contiguous(), w_codes.t())
    return (a_codes.double() @ w_codes.double().T).to(torch.int32)


def int4_gemm(a_codes: torch.Tensor, qweight: torch.Tensor) -> torch.Tensor:
    """int32 ``C = a·wᵀ`` with packed int4 weights: the native CUDA kernel when installed and on
    GPU, else :func:`int8_gemm` of the unpacked codes.

    The native kernel needs K % 64 == 0 and 16-byte aligned operands; other inputs take the int8
    path, which gives the same exact result (the reference is :func:`~quest_qat.int4_matmul`).
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
    return int8_gemm(a_codes, unpack_int4(qweight))


#: What :func:`~quest_qat.convert_` converts, quoted by its refusals.
CONVERTIBLE = (
    "convert_ converts QuEST layers on int grids: W1-8A1-8 (integer GEMM: int4-packed weights "
    "when w_bits <= 4, int8 otherwise, activation codes online) and weight-only W1-8A16 "
    "(a_bits=None: int weights, activations rotated in their own float dtype); it does not "
    "convert W16A* (w_bits=None: the weight stays in full precision, so keep the QuESTLinear), "
    "FP4 grids (training only) or the AbsMax/LSQ/PACT baselines"
)


def check_convertible(layer) -> None:
    """Raise if :func:`~quest_qat.convert_` cannot convert `layer` (the configurations it
    converts are listed in ``CONVERTIBLE``).

    Raises
    ------
    TypeError
        If `layer` is not a :class:`QuESTLinear`.
    NotImplementedError
        W16A* (full-precision weight), FP4 or non-QuEST quantizers, ``half=False``, or a sharded
        (DTensor) weight; the message lists what converts.
    ValueError
        If the weight holds NaN or infinity, or ``K·2**(w_bits-1)·2**(a_bits-1) >= 2**31`` (the
        int32 accumulator could overflow).
    """
    if not isinstance(layer, QuESTLinear):
        raise TypeError(f"`layer` must be a QuESTLinear, got {type(layer).__name__}")
    wq, aq = layer.w_quantizer, layer.a_quantizer
    for name, q in (("w", wq), ("a", aq)):
        if q is not None and not (isinstance(q, QuESTQuantizer) and q.grid == "int"):
            raise NotImplementedError(f"{name}_quantizer is {q!r}: {CONVERTIBLE}")
    if wq.rotate and not wq.rotated_output:
        raise NotImplementedError(
            f"convert_ needs half=True (operands in the rotated basis): {CONVERTIBLE}"
        )
    if _is_dtensor(layer.weight):
        raise NotImplementedError(
            "convert_ needs whole weights, got a sharded DTensor weight (FSDP2 fully_shard or "
            "tensor parallelism): gather a full state dict (torch.distributed.checkpoint."
            "state_dict.get_model_state_dict with StateDictOptions(full_state_dict=True)), load "
            "it into an unsharded prepared model, and convert_ that"
        )
    if aq is not None and layer.in_features * 2 ** (wq.bits + aq.bits - 2) >= 2**31:
        raise ValueError(
            f"K={layer.in_features} is too large for an exact int32 GEMM at W{wq.bits}A{aq.bits} "
            "(K·2**(w_bits-1)·2**(a_bits-1) must stay below 2**31)"
        )
    if not bool(torch.isfinite(layer.weight.detach()).all()):
        raise ValueError(f"the weight of {layer!r} holds NaN or infinity")


class _QuESTCodesLinear(nn.Module):
    """What the converted layers share: integer weight codes with their per-row step, the
    activation path (codes with an integer GEMM, or weight-only), the bias and the state."""

    #: bits of the widest weight code the storage holds (4: packed two per byte; 8: int8)
    max_w_bits = 8
    #: weight codes per byte of ``qweight``
    codes_per_byte = 1

    # registered buffers: weight codes, per-row scales and offsets, bias, 4:8 keep mask
    qweight: torch.Tensor
    w_step: torch.Tensor
    w_add: torch.Tensor
    bias: torch.Tensor | None
    w_keep: torch.Tensor | None

    def __init__(
        self, qweight, w_step, w_add, bias, *, w_bits, a_bits, block, rotate, w_keep=None
    ):  # fmt: skip
        super().__init__()
        w_bits, a_bits, block, rotate = self.check_arguments(
            qweight, w_step, w_add, bias, w_bits=w_bits, a_bits=a_bits, block=block,
            rotate=rotate, w_keep=w_keep,
        )  # fmt: skip
        self.register_buffer("qweight", qweight)
        self.register_buffer("w_step", w_step)
        self.register_buffer("w_add", w_add)
        self.register_buffer("bias", bias)
        self.register_buffer("w_keep", w_keep)
        self.w_bits, self.a_bits, self.block, self.rotate = w_bits, a_bits, block, rotate
        self.in_features = qweight.shape[1] * self.codes_per_byte
        self.out_features = qweight.shape[0]

    #: dtype of ``qweight``: int8 codes (QuESTInt4Linear: uint8, two codes per byte)
    qweight_dtype = torch.int8

    @classmethod
    def check_arguments(
        cls, qweight, w_step, w_add, bias, *, w_bits, a_bits, block, rotate, w_keep=None,
        prefix="",
    ) -> tuple:  # fmt: skip
        """Check the constructor's arguments against each other; `prefix` (``"<layer>."``) is
        put before the tensor names in the messages (``load_quantized`` names the file's keys).

        Returns ``(w_bits, a_bits, block, rotate)`` as plain Python values.

        Raises
        ------
        TypeError
            If a tensor is not a tensor or has the wrong dtype (``qweight`` int8, uint8 for
            :class:`QuESTInt4Linear`; ``w_step`` and ``bias`` floating; ``w_add`` int32;
            ``w_keep`` bool), or `rotate` is not a bool.
        ValueError
            If a shape does not fit ``qweight`` (N, K/codes_per_byte): ``w_step`` (N, 1),
            ``w_add`` and ``bias`` (N,), ``w_keep`` (N, K); if `w_bits` is not an int in
            1..max_w_bits, `a_bits` neither None nor an int in 1..8, `block` not a power of 2
            dividing K (when `rotate`), or a weight code lies outside the `w_bits` grid
            ``[-2**(w_bits-1), 2**(w_bits-1) - 1]``.
        """
        w_bits = check_bits(w_bits, f"{prefix}w_bits", high=cls.max_w_bits)
        a_bits = None if a_bits is None else check_bits(a_bits, f"{prefix}a_bits")
        block = check_block(block, f"{prefix}block")
        rotate = check_bool(rotate, f"{prefix}rotate")
        tensors = {"qweight": qweight, "w_step": w_step, "w_add": w_add}
        tensors |= {"bias": bias, "w_keep": w_keep}
        for name, t in tensors.items():
            if t is None and name in ("bias", "w_keep"):
                continue
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"`{prefix}{name}` must be a torch.Tensor, got {type(t).__name__}")
        for name, ok, want in (
            ("qweight", qweight.dtype == cls.qweight_dtype, str(cls.qweight_dtype)),
            ("w_step", w_step.dtype.is_floating_point, "a floating dtype"),
            ("w_add", w_add.dtype == torch.int32, "torch.int32"),
            ("bias", bias is None or bias.dtype.is_floating_point, "a floating dtype"),
            ("w_keep", w_keep is None or w_keep.dtype == torch.bool, "torch.bool"),
        ):
            if not ok:
                got = getattr(tensors[name], "dtype", None)
                raise TypeError(f"`{prefix}{name}` must be {want}, got {got}")
        if qweight.dim() != 2 or 0 in qweight.shape:
            raise ValueError(
                f"`{prefix}qweight` must be a non-empty 2-D tensor, got shape "
                f"{tuple(qweight.shape)}"
            )
        n, k = qweight.shape[0], qweight.shape[1] * cls.codes_per_byte
        for name, shape in (
            ("w_step", (n, 1)),
            ("w_add", (n,)),
            ("bias", (n,)),
            ("w_keep", (n, k)),
        ):
            t = tensors[name]
            if t is not None and tuple(t.shape) != shape:
                raise ValueError(
                    f"`{prefix}{name}` must have shape {shape} (N={n}, K={k} from "
                    f"`{prefix}qweight` {tuple(qweight.shape)}), got {tuple(t.shape)}"
                )
        if rotate and k % block:
            raise ValueError(f"K={k} must be a multiple of `{prefix}block`={block} (rotate=True)")
        if qweight.device.type != "meta":
            codes = unpack_int4(qweight) if cls.codes_per_byte == 2 else qweight
            low, high = -(2 ** (w_bits - 1)), 2 ** (w_bits - 1) - 1
            c_min, c_max = (int(v) for v in torch.aminmax(codes))
            if c_min < low or c_max > high:
                raise ValueError(
                    f"`{prefix}qweight` holds codes in [{c_min}, {c_max}], outside the "
                    f"{prefix}w_bits={w_bits} grid [{low}, {high}]"
                )
        return w_bits, a_bits, block, rotate

    @classmethod
    def from_quest(cls, layer: QuESTLinear):
        """Convert a :class:`QuESTLinear` (see :func:`check_convertible` for what converts).

        Raises
        ------
        TypeError
            If `layer` is not a :class:`QuESTLinear`.
        NotImplementedError
            As :func:`check_convertible`.
        ValueError
            If the weight holds NaN or infinity, or its bits exceed this storage's
            ``max_w_bits`` (use :class:`QuESTInt8Linear`).
        """
        check_convertible(layer)
        wq, aq = layer.w_quantizer, layer.a_quantizer
        if wq.bits > cls.max_w_bits:
            raise ValueError(
                f"{cls.__name__} holds weight codes of at most {cls.max_w_bits} bits, the layer "
                f"has w_bits={wq.bits}: use QuESTInt8Linear (convert_ picks it)"
            )
        w = layer.weight_nk().detach()
        codes, step, rowsum = _codes(w, wq.bits, wq.block, wq.rotate)
        keep = None
        if wq.sparse48:
            from .kernels.quest.naive import keep_48

            keep = keep_48(codes.to(step.dtype) + 0.5)  # grid units: the fake-quant's choice
        bias = None if layer.bias is None else layer.bias.detach().clone()
        act = wq if aq is None else aq  # the activation basis: the quantizers share it
        return cls(
            cls.pack(codes), step, (rowsum + w.shape[1] // 2).to(torch.int32), bias,
            w_bits=wq.bits, a_bits=None if aq is None else aq.bits, block=act.block,
            rotate=act.rotate, w_keep=keep,
        )  # fmt: skip

    @staticmethod
    def pack(codes: torch.Tensor) -> torch.Tensor:
        """The stored form of int8 weight codes (N, K)."""
        return codes

    def weight_codes(self) -> torch.Tensor:
        """The int8 weight codes (N, K)."""
        return self.qweight

    def gemm(self, a_codes: torch.Tensor) -> torch.Tensor:
        """int32 ``Σ_k q_a q_w`` (M, N) of activation codes (M, K)."""
        return int8_gemm(a_codes, self.qweight)

    def forward(self, x):
        """x (..., K) floating -> (..., N) in x's dtype (see the class docstring's "Forward").

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
        y = self._weight_only(x2) if self.a_bits is None else self._integer(x2)
        return y.reshape(*shape[:-1], self.out_features)

    def _weight_only(self, x):
        """``x_h · ((q_w + ½)Δ_w)ᵀ + b`` in x's dtype: the fake-quantized layer's exact ops."""
        if self.rotate:
            x = rotate_saturated(x, self.block)
        w = self.weight_codes().to(self.w_step.dtype).add_(0.5).mul_(self.w_step)
        if self.w_keep is not None:
            w = w * self.w_keep
        bias = None if self.bias is None else self.bias.to(x.dtype)
        return F.linear(x, w.to(x.dtype), bias)

    def _integer(self, x):
        """gemm-quest epilogue ``(2C + Σq_a + w_add)·Δ_aΔ_w/2 + b`` of the integer GEMM C."""
        codes, a_step, a_rowsum = _codes(x, self.a_bits, self.block, self.rotate)
        dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        scale = a_step.to(dtype) * self.w_step.to(dtype).T
        if self.w_keep is None:
            c = self.gemm(codes)
            acc = 2 * c.to(dtype) + a_rowsum.to(dtype)[:, None] + self.w_add.to(dtype)[None, :]
            y = acc * scale / 2
        else:  # 4:8: Σ (2q_a+1)(2q_w+1)·keep, exact in float64, times Δ_aΔ_w/4
            wq = (2 * self.weight_codes().to(torch.float64) + 1) * self.w_keep
            acc = (2 * codes.to(torch.float64) + 1) @ wq.T
            y = acc.to(dtype) * scale / 4
        if self.bias is not None:
            y = y + self.bias.to(dtype)
        return y.to(x.dtype)

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
            f"w_bits={self.w_bits}, a_bits={self.a_bits}, block={self.block}"
        )


class QuESTInt4Linear(_QuESTCodesLinear):
    """Converted QuEST linear layer for inference, int4 weights (1-4 bits) packed two per byte.

    Buffers: ``qweight`` uint8 (N, K/2) (low nibble = even column, the gemm-quest layout);
    ``w_step`` (N, 1) float32 (float64 for a float64 model); ``w_add`` int32 (N,)
    ``= rowsum(q_w) + K/2``; ``bias``; with 4:8 weights also ``w_keep`` bool (N, K). The
    state_dict also holds ``_extra_state`` (``a_bits``, ``block``, ``rotate``): loading it into a
    layer made with other values raises. ``w_bits`` is an attribute.

    Forward (..., K) -> (..., N):

    - with activation codes (``a_bits`` 1-8): online Hadamard, activation codes ``q_a``, step
      ``Δ_a`` and ``rowsum(q_a)``; int32 ``C = Σ_k q_a q_w`` (the native CUDA kernel when
      installed, else ``torch._int_mm`` of the unpacked codes);
      ``y = (2C + rowsum(q_a) + w_add)·Δ_a Δ_w / 2 + b`` in float32 (float64 for float64), which
      equals ``Σ (q_a+½)Δ_a (q_w+½)Δ_w`` (official ``gemm-quest`` epilogue);
    - weight-only (``a_bits=None``, W4A16): ``y = x_h·((q_w+½)Δ_w)ᵀ + b`` in x's dtype, ``x_h``
      the rotated, unquantized activations: the fake-quantized layer's own operations, so the
      output equals it bit for bit. Exception: bfloat16/float16 input on the CPU (N % 16 == 0,
      K % 32 == 0, no 4:8 mask) takes torch's int4 × float kernel
      ``_weight_int4pack_mm_for_cpu`` (tinygemm layout, ``w = (q+8-8)·Δ + Δ/2``, packed on the
      first call and cached), equal to the fake-quantized output to bf16/fp16 rounding (Δ_w is
      rounded to the activation dtype).

    Raises
    ------
    TypeError
        In the constructor, for a tensor of the wrong dtype (see :meth:`check_arguments`); in
        forward, if `x` is not a floating tensor (integer input would give integer garbage).
    ValueError
        In the constructor, for shapes that do not fit ``qweight`` or bits/block out of range
        (:meth:`check_arguments`). In forward, if `x` does not end in K. NaN/infinity is not
        checked (no device sync per call); it propagates to the output as in ``nn.Linear``
        (weight-only layers included: rows holding ±inf or NaN are not saturated). In
        ``load_state_dict``, if the checkpoint's ``a_bits``/``block``/``rotate`` differ from the
        layer's.
    """

    max_w_bits = 4
    codes_per_byte = 2
    qweight_dtype = torch.uint8
    # (key, packed, scales_and_zeros, group) of the CPU int4 kernel, see _tinygemm_weights
    _tinygemm: tuple | None = None

    @staticmethod
    def pack(codes: torch.Tensor) -> torch.Tensor:
        """Two int4 codes per byte (:func:`~quest_qat.pack_int4`)."""
        return pack_int4(codes)

    def weight_codes(self) -> torch.Tensor:
        """The int8 weight codes (N, K), unpacked."""
        return unpack_int4(self.qweight)

    def _weight_only(self, x):
        """The CPU int4 × bf16/fp16 kernel where it applies (see the class docstring), else the
        exact dequantized product."""
        n, k = self.out_features, self.in_features
        if (
            x.device.type != "cpu"
            or x.dtype not in (torch.bfloat16, torch.float16)
            or self.w_keep is not None
            or n % 16
            or k % 32
        ):
            return super()._weight_only(x)
        if self.rotate:
            x = rotate_saturated(x, self.block)
        packed, scales, group = self._tinygemm_weights(x.dtype)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x.contiguous(), packed, group, scales)
        return y if self.bias is None else y + self.bias.to(x.dtype)

    def _tinygemm_weights(self, dtype):
        """``(packed, scales_and_zeros, group)`` for ``_weight_int4pack_mm_for_cpu``: unsigned
        codes ``q + 8`` in its layout, scale Δ_w and zero Δ_w/2 per row (its dequantization
        ``(u - 8)·scale + zero`` is then ``(q + ½)Δ_w``), repeated over K in groups of the largest
        of 256, 128, 64, 32 dividing K. Cached; rebuilt when ``qweight`` or ``w_step`` change
        (load_state_dict, .to)."""
        key = (dtype, self.qweight.data_ptr(), self.qweight._version, self.w_step._version)
        cache = getattr(self, "_tinygemm", None)
        if cache is None or cache[0] != key:
            k = self.in_features
            group = next(g for g in (256, 128, 64, 32) if k % g == 0)
            unsigned = self.weight_codes().to(torch.int32) + 8
            packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(unsigned, 1)
            step = self.w_step[:, 0].to(dtype)
            scales = torch.stack([step, step / 2], dim=-1).expand(k // group, -1, -1)
            cache = (key, packed, scales.contiguous(), group)
            self._tinygemm = cache
        return cache[1:]

    def gemm(self, a_codes: torch.Tensor) -> torch.Tensor:
        """int32 ``Σ_k q_a q_w`` (M, N): :func:`int4_gemm` for int4 activation codes (the native
        kernel's W4A4 design), :func:`int8_gemm` of the unpacked weights above 4 bits."""
        if self.a_bits is not None and self.a_bits <= 4:
            return int4_gemm(a_codes, self.qweight)
        return int8_gemm(a_codes, self.weight_codes())


class QuESTInt8Linear(_QuESTCodesLinear):
    """Converted QuEST linear layer for inference with int8 weight codes (5-8 bit weights).

    As :class:`QuESTInt4Linear` (same buffers, state and epilogue), except that ``qweight`` holds
    the int8 codes (N, K) unpacked and the int32 ``C = Σ_k q_a q_w`` comes from
    ``torch._int_mm`` (int8 × int8 → int32) on CPU and CUDA (exact for
    ``K·2**(w_bits-1)·2**(a_bits-1) < 2**31``). W8A8 uses it, and weight-only W8A16
    (``a_bits=None``).
    """


def converted_class(layer: QuESTLinear) -> type[_QuESTCodesLinear]:
    """:class:`QuESTInt4Linear` for weights of at most 4 bits, else :class:`QuESTInt8Linear`."""
    return QuESTInt4Linear if layer.w_quantizer.bits <= 4 else QuESTInt8Linear
