"""Attach CoMemo's memory path to any Hugging Face decoder through forward pre-hooks.

Before decoder layer ``i`` with ``(i + 1) % every_n == 0`` (official ``MixinConfig``, k = 4) a
:class:`~comemo_lvlm.memory.GatedCrossAttentionBlock` updates the hidden states. The blocks are
registered as ``lm.comemo_blocks`` (a ``ModuleDict`` keyed by layer index): every key of the
base model's ``state_dict`` keeps its name and value, and the blocks *add* ``comemo_blocks.*``
keys (so a strict ``lm.load_state_dict(base_checkpoint)`` after attaching reports them missing:
load base weights before attaching, or with ``strict=False``). The per-batch media live in a
context object set by :meth:`MemoryPath.condition`, never in module attributes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .memory import GatedCrossAttentionBlock

__all__ = ["MemoryContext", "MemoryPath", "attach_memory_path", "find_decoder_layers"]


@dataclass
class MemoryContext:
    """Per-forward inputs of the memory blocks.

    Attributes
    ----------
    media : torch.Tensor of float, shape (B, M, D_media)
    text_positions : torch.Tensor of int64, shape (B, L)
    media_positions : torch.Tensor of int64, shape (B, M)
    media_mask : torch.Tensor of bool, shape (B, L, M), or None
    """

    media: torch.Tensor
    text_positions: torch.Tensor
    media_positions: torch.Tensor
    media_mask: torch.Tensor | None


def find_decoder_layers(lm: nn.Module) -> nn.ModuleList:
    """The decoder layer list of a transformers causal LM (``model.layers`` and the like).

    Raises
    ------
    ValueError
        When no ``ModuleList`` of decoder layers is found.
    """
    for path in (
        "model.layers",
        "layers",
        "model.decoder.layers",
        "transformer.h",
        "gpt_neox.layers",
    ):
        obj: Any = lm
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList) and len(obj) > 0:
            return obj
    raise ValueError(f"lm ({type(lm).__name__}) has no decoder layer list (model.layers, ...)")


def _in_backward() -> bool:
    fn = getattr(torch._C, "_current_graph_task_id", None)
    return fn is not None and fn() != -1


class MemoryPath:
    """Handle of an attached memory path (returned by :func:`attach_memory_path`).

    Attributes
    ----------
    lm : torch.nn.Module
        The wrapped language model.
    blocks : torch.nn.ModuleDict
        ``lm.comemo_blocks``: layer index (str) -> GatedCrossAttentionBlock.
    layer_indices : tuple of int
        Decoder layers preceded by a block.
    media_visibility : str
        ``"all"`` or ``"preceding"`` (used by :class:`~comemo_lvlm.model.CoMemoVLM`).
    """

    def __init__(
        self,
        lm: nn.Module,
        blocks: nn.ModuleDict,
        layer_indices: tuple[int, ...],
        media_visibility: str,
    ) -> None:
        self.lm = lm
        self.blocks = blocks
        self.layer_indices = layer_indices
        self.media_visibility = media_visibility
        self._ctx: MemoryContext | None = None
        self._last_ctx: MemoryContext | None = None
        self._handles: list[Any] = []

    def _hook(self, index: int) -> Any:
        def pre_hook(module: nn.Module, args: tuple, kwargs: dict) -> Any:
            ctx = self._ctx
            if ctx is None and _in_backward():
                ctx = self._last_ctx  # gradient-checkpointing recompute after the context closed
            if ctx is None:
                return None
            block = self.blocks[str(index)]
            if args:
                x = block(
                    args[0], ctx.media, ctx.text_positions, ctx.media_positions, ctx.media_mask
                )
                return (x, *args[1:]), kwargs
            x = block(
                kwargs["hidden_states"],
                ctx.media,
                ctx.text_positions,
                ctx.media_positions,
                ctx.media_mask,
            )
            return args, {**kwargs, "hidden_states": x}

        return pre_hook

    @contextlib.contextmanager
    def condition(
        self,
        media: torch.Tensor,
        text_positions: torch.Tensor,
        media_positions: torch.Tensor,
        media_mask: torch.Tensor | None = None,
    ) -> Iterator[MemoryContext]:
        """Make the blocks read these media during the forwards inside the ``with``.

        Parameters
        ----------
        media : torch.Tensor of float, shape (B, M, D_media)
            Any float dtype; the blocks cast it to the hidden states' dtype.
        text_positions : torch.Tensor of int64, shape (B, L)
            Ids of the tokens of this forward (L = 1 in a cached decode step).
        media_positions : torch.Tensor of int64, shape (B, M)
        media_mask : torch.Tensor of bool, shape (B, L, M), optional

        Raises
        ------
        RuntimeError
            After :meth:`detach`.
        TypeError
            ``media`` is not a float tensor.
        """
        if not self._handles:
            raise RuntimeError("this MemoryPath was detached")
        if not isinstance(media, torch.Tensor) or not media.is_floating_point():
            raise TypeError(
                f"media must be a float tensor, got {getattr(media, 'dtype', type(media).__name__)}"
            )
        ctx = MemoryContext(media, text_positions, media_positions, media_mask)
        previous = self._ctx
        self._ctx = ctx
        try:
            yield ctx
        finally:
            self._ctx = previous
            self._last_ctx = ctx

    def detach(self) -> None:
        """Remove the hooks and ``lm.comemo_blocks``; the model is the bare base again."""
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if hasattr(self.lm, "comemo_blocks"):
            del self.lm.comemo_blocks
        if getattr(self.lm, "comemo_memory_path", None) is self:
            del self.lm.comemo_memory_path
        self._ctx = self._last_ctx = None


def _rope_base(config: Any) -> float:
    theta = getattr(config, "rope_theta", None)
    if theta is None:
        params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
        if isinstance(params, dict):
            theta = params.get("rope_theta")
    return float(theta) if theta is not None else 10000.0


def attach_memory_path(
    lm: nn.Module,
    *,
    every_n: int = 4,
    media_visibility: str = "all",
    **block_overrides: Any,
) -> MemoryPath:
    """Add CoMemo's gated cross-attention blocks before every ``every_n``-th decoder layer.

    Parameters
    ----------
    lm : transformers.PreTrainedModel
        A causal LM (Llama, Qwen2, InternLM2, ...) with ``config.hidden_size``,
        ``num_attention_heads``, ``intermediate_size`` and ``rope_theta``.
    every_n : int, default=4
        k: a block before layer i when ``(i + 1) % k == 0`` (official ``MixinConfig``).
    media_visibility : {"all", "preceding"}, default="all"
        Which images a text token reads: all of its sample's (official) or those before it.
    **block_overrides
        Keyword arguments of :class:`GatedCrossAttentionBlock` (``d_model``, ``n_heads``,
        ``head_dim``, ``d_ff``, ``d_media``, ``rope_base``, ``eps``, ``gate_init``); defaults
        from ``lm.config`` (give them all for a model without a transformers config).

    Returns
    -------
    MemoryPath

    Notes
    -----
    ``lm.state_dict()`` keeps every base key unchanged and gains ``comemo_blocks.<layer>.*``
    keys. Load a base (non-CoMemo) checkpoint before attaching, or after it with
    ``lm.load_state_dict(sd, strict=False)`` (the returned ``missing_keys`` are then exactly the
    ``comemo_blocks.*`` keys). :meth:`MemoryPath.detach` removes the added keys.

    Raises
    ------
    ValueError
        ``every_n`` < 1 or larger than the number of layers (no block), bad visibility, an
        already attached path, unknown overrides.
    """
    if isinstance(every_n, bool) or not isinstance(every_n, int) or every_n < 1:
        raise ValueError(f"every_n must be a positive int, got {every_n!r}")
    if media_visibility not in ("all", "preceding"):
        raise ValueError(f"media_visibility must be 'all' or 'preceding', got {media_visibility!r}")
    if hasattr(lm, "comemo_blocks"):
        raise ValueError("lm already has a memory path attached (lm.comemo_blocks)")
    layers = find_decoder_layers(lm)
    indices = tuple(i for i in range(len(layers)) if (i + 1) % every_n == 0)
    if not indices:
        raise ValueError(f"every_n={every_n} leaves no block in a model of {len(layers)} layers")
    allowed = {"d_model", "d_media", "n_heads", "head_dim", "d_ff", "rope_base", "eps", "gate_init"}
    unknown = set(block_overrides) - allowed
    if unknown:
        raise ValueError(f"unknown block_overrides {sorted(unknown)}; allowed: {sorted(allowed)}")
    cfg = getattr(lm, "config", None)
    d_model = int(block_overrides.pop("d_model", getattr(cfg, "hidden_size", 0)))
    n_heads = int(block_overrides.pop("n_heads", getattr(cfg, "num_attention_heads", 0)))
    head_dim = block_overrides.pop("head_dim", getattr(cfg, "head_dim", None))
    if head_dim is None and n_heads:
        head_dim = d_model // n_heads
    kwargs: dict[str, Any] = dict(
        d_model=d_model,
        d_media=int(block_overrides.pop("d_media", d_model)),
        n_heads=n_heads,
        head_dim=int(head_dim or 0),
        d_ff=int(block_overrides.pop("d_ff", getattr(cfg, "intermediate_size", 0))),
        rope_base=float(block_overrides.pop("rope_base", _rope_base(cfg))),
        **block_overrides,
    )
    ref = next(lm.parameters())
    blocks = nn.ModuleDict({str(i): GatedCrossAttentionBlock(**kwargs) for i in indices}).to(
        device=ref.device, dtype=ref.dtype
    )
    lm.comemo_blocks = blocks
    path = MemoryPath(lm, blocks, indices, media_visibility)
    for i in indices:
        path._handles.append(layers[i].register_forward_pre_hook(path._hook(i), with_kwargs=True))
    vars(lm)["comemo_memory_path"] = path  # plain attribute, not a module: no state_dict entry
    return path
