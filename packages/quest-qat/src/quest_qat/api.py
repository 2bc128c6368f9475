"""Model surgery in the torchao style: ``prepare_(model, QuESTConfig())`` before training,
``convert_(model)`` after it (QuEST §3: every transformer linear layer is quantized; embeddings,
the LM head, norms and attention stay in full precision). Layers are chosen by role: the output
head is found through ``get_output_embeddings()`` (transformers' API) when the model has it.
"""

import warnings
from dataclasses import asdict, dataclass

from torch import nn

from ._validation import check_bits, check_block, check_bool, check_positive
from .grid import GRIDS
from .nn import (
    QuESTInt4Linear,
    QuESTInt8Linear,
    QuESTLinear,
    RotatedWeight,
    _is_conv1d,
    check_convertible,
    converted_class,
)
from .quantizer import QuESTQuantizer

ON_INCOMPATIBLE = ("raise", "skip")


@dataclass
class QuESTConfig:
    """What :func:`prepare_` swaps in.

    Parameters
    ----------
    w_bits : int or None, default=4
        Weight bits, 1..8 (None: full precision, W16A*; :func:`convert_` keeps such layers).
    a_bits : int or None, default=4
        Activation bits, 1..8 (None: full precision, W4A16; :func:`convert_` makes weight-only
        integer layers).
    block : int or "auto", default=128
        Hadamard block (paper: 128). "auto" (our extension) takes the largest power of 2 <= 128
        that divides each layer's K.
    trust : float, default=1.0
        Trust factor s (units of Δ/2); ``inf`` = STE.
    clip_scale : float, optional
        Clip mode factor c (1 bit defaults to the paper's 1.30).
    grid : {"int", "fp4"}, default="int"
    sparse48 : bool, default=False
        4:8 sparse weights (2.5 bits/param).
    on_incompatible : {"raise", "skip"}, default="raise"
        What to do with a layer whose K is not a multiple of `block`.

    Raises
    ------
    TypeError
        If `sparse48` is not a bool.
    ValueError
        For any argument outside the ranges above, ``grid="fp4"`` with a bit-width other
        than 4, or ``sparse48=True`` with ``w_bits=None`` (nothing to prune).
    """

    w_bits: int | None = 4
    a_bits: int | None = 4
    block: int | str = 128
    trust: float = 1.0
    clip_scale: float | None = None
    grid: str = "int"
    sparse48: bool = False
    on_incompatible: str = "raise"

    def __post_init__(self):
        if self.w_bits is None and self.a_bits is None:
            raise ValueError("`w_bits` and `a_bits` cannot both be None: nothing to quantize")
        if self.w_bits is not None:
            check_bits(self.w_bits, "w_bits")
        if self.a_bits is not None:
            check_bits(self.a_bits, "a_bits")
        if self.block != "auto":
            check_block(self.block)
        check_positive(self.trust, "trust", allow_inf=True)
        if self.clip_scale is not None:
            check_positive(self.clip_scale, "clip_scale")
        if self.grid not in GRIDS:
            raise ValueError(f"`grid` must be one of {GRIDS}, got {self.grid!r}")
        for name in ("w_bits", "a_bits"):
            bits = getattr(self, name)
            if self.grid == "fp4" and bits not in (None, 4):
                raise ValueError(f"grid='fp4' needs {name}=4 (or None), got {bits}")
        check_bool(self.sparse48, "sparse48")
        if self.sparse48 and self.w_bits is None:
            raise ValueError(
                "`sparse48` prunes the quantized weight: it needs `w_bits` (1-8), got w_bits=None"
            )
        if self.on_incompatible not in ON_INCOMPATIBLE:
            raise ValueError(
                f"`on_incompatible` must be one of {ON_INCOMPATIBLE}, got {self.on_incompatible!r}"
            )

    def to_dict(self) -> dict:
        """The config as a plain dict (``QuESTConfig(**d)`` rebuilds it)."""
        return asdict(self)


def _auto_block(k: int) -> int:
    block = 128
    while k % block:
        block //= 2
    return block


def _tied_ids(model: nn.Module) -> set[int]:
    """ids of Parameters reachable from more than one module (tied weights)."""
    owners: dict[int, int] = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            owners[id(p)] = owners.get(id(p), 0) + 1
    return {pid for pid, n in owners.items() if n > 1}


def _quantizer(bits, block, config, which):
    if bits is None:
        return None
    return QuESTQuantizer(
        bits, block, config.trust, config.clip_scale, True, config.grid,
        config.sparse48 and which == "w",
    )  # fmt: skip


def _swappable(module: nn.Module) -> bool:
    """A plain ``nn.Linear`` or transformers' GPT-2 ``Conv1D`` (its (K, N) weight is used
    transposed); ``nn.Linear`` subclasses may override forward and are left alone."""
    return type(module) is nn.Linear or _is_conv1d(module)


def _output_head(model: nn.Module) -> nn.Module | None:
    """The module ``model.get_output_embeddings()`` returns (transformers' API), if any."""
    getter = getattr(model, "get_output_embeddings", None)
    if not callable(getter):
        return None
    try:
        head = getter()
    except (NotImplementedError, AttributeError):
        return None
    return head if isinstance(head, nn.Module) else None


def prepare_(model: nn.Module, config: QuESTConfig | None = None, filter_fn=None) -> nn.Module:
    """Swap the ``nn.Linear`` (and transformers ``Conv1D``) layers of `model` for
    :class:`QuESTLinear`, in place.

    Parameters
    ----------
    model : nn.Module
    config : QuESTConfig, optional
        Defaults to ``QuESTConfig()`` (W4A4, block 128, trust 1).
    filter_fn : callable (module, fqn) -> bool, optional
        Swap only where it returns True (as torchao's ``quantize_``). The output head is always
        skipped: the module ``model.get_output_embeddings()`` returns (transformers models,
        whatever its name, e.g. GPT-NeoX's former ``embed_out``) and any layer named
        ``lm_head``; so are layers whose weight is tied to another module.

    Returns
    -------
    nn.Module
        `model`, whose swapped layers keep the same weight/bias Parameters (state_dict keys and
        optimizer state survive). A second call finds no ``nn.Linear`` left and changes nothing.

    Raises
    ------
    TypeError
        If `model` is not an nn.Module, is itself a bare ``nn.Linear`` (it cannot be swapped in
        place: wrap it in ``nn.Sequential`` or use ``QuESTLinear.from_linear``), `config` is
        not a QuESTConfig, or a layer to swap has a non-floating (e.g. int8) weight (the message
        names the layer).
    ValueError
        If a layer's K is not a multiple of the block (message names the layer, K and block)
        and ``on_incompatible="raise"``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    config = QuESTConfig() if config is None else config
    if not isinstance(config, QuESTConfig):
        raise TypeError(f"`config` must be a QuESTConfig, got {type(config).__name__}")
    if _swappable(model):
        raise TypeError(
            f"`model` is a bare {'Conv1D' if _is_conv1d(model) else 'nn.Linear'}, which prepare_ "
            "cannot replace in place: "
            "wrap it (nn.Sequential(linear)) or use "
            "QuESTLinear.from_linear(linear, QuESTQuantizer(...))"
        )
    if filter_fn is not None and not callable(filter_fn):
        raise TypeError("`filter_fn` must be callable (module, fqn) -> bool")
    tied = _tied_ids(model)
    head = _output_head(model)
    targets = []
    for fqn, module in model.named_modules():
        if not _swappable(module) or module is head or fqn.split(".")[-1] == "lm_head":
            continue
        if id(module.weight) in tied or (filter_fn is not None and not filter_fn(module, fqn)):
            continue
        targets.append((fqn, module))
    swapped = 0
    for fqn, module in targets:
        layer = _swap_linear(module, config, fqn)
        if layer is not None:
            _set(model, fqn, layer)
            swapped += 1
    if swapped == 0:
        warnings.warn(f"prepare_ swapped no layer: {_why_nothing(model)}", stacklevel=2)
    return model


def _why_nothing(model: nn.Module) -> str:
    """What :func:`prepare_` found instead of a layer to swap (for its warning)."""
    quest = sum(
        isinstance(m, QuESTLinear | QuESTInt4Linear | QuESTInt8Linear) for m in model.modules()
    )
    # nn.Linear subclasses may override forward, so they are not swapped.
    others = sorted(
        {
            type(m).__name__
            for m in model.modules()
            if isinstance(m, nn.Linear) and type(m) is not nn.Linear
        }
    )
    reasons = ["no nn.Linear or Conv1D left outside the output head, tied layers and filter_fn"]
    if quest:
        reasons.append(f"the model already holds {quest} QuEST layers")
    if others:
        reasons.append(
            f"layers of type {', '.join(others)} are not plain nn.Linear and are not swapped"
        )
    return "; ".join(reasons)


def _swap_linear(linear: nn.Module, config: QuESTConfig, fqn: str = "") -> QuESTLinear | None:
    """The :class:`QuESTLinear` that `config` makes of one `linear` (``nn.Linear`` or GPT-2
    ``Conv1D``; the swap of :func:`prepare_`).

    Returns None when K is not a multiple of the block and ``on_incompatible="skip"``; raises
    ValueError naming `fqn`, K and the block when ``on_incompatible="raise"``.
    """
    weight = linear.get_parameter("weight")
    if not weight.dtype.is_floating_point:
        where = f"layer {fqn!r}: " if fqn else ""
        raise TypeError(
            f"{where}the weight must be floating (fp16/bf16/fp32/fp64) to be QuEST-quantized, "
            f"got {weight.dtype} (an already quantized layer? prepare_ the float model)"
        )
    k = weight.shape[0] if _is_conv1d(linear) else weight.shape[1]
    block = _auto_block(k) if config.block == "auto" else int(config.block)
    if k % block:
        if config.on_incompatible == "skip":
            return None
        where = f"layer {fqn!r}: " if fqn else ""
        raise ValueError(
            f"{where}in_features K={k} is not a multiple of block={block} "
            "(use block='auto' or on_incompatible='skip')"
        )
    wq = _quantizer(config.w_bits, block, config, "w")
    aq = _quantizer(config.a_bits, block, config, "a")
    return QuESTLinear.from_linear(linear, wq or RotatedWeight(block), aq)


def _set(model, fqn, layer):
    parent_name, _, child = fqn.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, layer)


def convert_(model: nn.Module) -> nn.Module:
    """Replace every :class:`QuESTLinear` of a prepared `model` with its integer form.

    Weights of 1-4 bits become :class:`QuESTInt4Linear` (packed two per byte), 5-8 bits
    :class:`QuESTInt8Linear`. With activation codes (``a_bits`` 1-8) the layer runs an integer
    GEMM (int4 kernel or ``torch._int_mm``) and the gemm-quest epilogue; with ``a_bits=None``
    (W4A16, W8A16) it is weight-only: the activations are rotated but stay in their float dtype.
    Each layer then gives its fake-quantized output to float rounding (weight-only: bit for bit).

    Returns
    -------
    nn.Module
        `model`, converted in place.

    Raises
    ------
    TypeError
        If `model` is not an nn.Module, or is itself a bare :class:`QuESTLinear` (it cannot be
        replaced in place: use ``QuESTInt4Linear.from_quest(layer)``).
    NotImplementedError
        W16A* (``w_bits=None``: the weight is not quantized, keep the QuESTLinear), FP4 grids
        (training only), the AbsMax/LSQ/PACT baselines, ``half=False``, or a sharded (DTensor)
        weight (FSDP2 ``fully_shard`` or tensor parallelism: convert an unsharded copy loaded
        from a full state dict). The message lists the configurations that convert.
    ValueError
        If a weight holds NaN or infinity, or K is too large for an exact int32 GEMM.

    Every layer is checked before any is replaced, so a refusal leaves `model` unchanged; the
    message names the layer.

    Warns
    -----
    UserWarning
        If `model` holds no :class:`QuESTLinear` (not prepared, or already converted).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    if isinstance(model, QuESTLinear):
        raise TypeError(
            "`model` is a bare QuESTLinear, which convert_ cannot replace in place: wrap it "
            "(nn.Sequential(layer)) or use QuESTInt4Linear.from_quest(layer)"
        )
    layers = [(fqn, m) for fqn, m in model.named_modules() if isinstance(m, QuESTLinear)]
    if not layers:
        warnings.warn(
            "convert_ found no QuESTLinear to convert (call prepare_ first; already converted?)",
            stacklevel=2,
        )
    for fqn, layer in layers:  # check all first: a refusal leaves the model unchanged
        try:
            check_convertible(layer)
        except (NotImplementedError, ValueError) as err:
            raise type(err)(f"layer {fqn!r}: {err} (the model was left unchanged)") from None
    for fqn, layer in layers:
        _set(model, fqn, converted_class(layer).from_quest(layer))
    return model


def mask_stats(model: nn.Module) -> dict[str, dict[str, float]]:
    """Fraction of trusted entries in the last forward of each QuEST layer.

    Returns
    -------
    dict
        ``{fqn: {"weight": rate, "activation": rate}}`` (NaN before the first forward or for a
        full-precision operand). QuEST §5 reports ~1-2% untrusted entries at 4 bits.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    out = {}
    for fqn, m in model.named_modules():
        if isinstance(m, QuESTLinear):
            rates = {}
            for name, q in (("weight", m.w_quantizer), ("activation", m.a_quantizer)):
                rate = getattr(q, "mask_rate", None)
                rates[name] = float("nan") if rate is None else float(rate)
            out[fqn] = rates
    return out
