r"""Gated injection of condition tokens into a DiT.

Source: the gated self-attention is GLIGEN's (Li et al., CVPR 2023, Eq. (8); diffusers
``GatedSelfAttentionDense``). That UniMC injects its tokens this way is OUR reconstruction: the
paper (Guo et al., ICML 2025) says instance and keypoint tokens condition a DiT but its method
section and code are unpublished. ``mode="joint"`` (tokens appended to the block's own
self-attention, MM-DiT style) is the other plausible reading.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

from .tokens import ConditionTokens

__all__ = [
    "GatedConditionAttention",
    "JointConditionProjection",
    "InjectionHandle",
    "inject_conditions",
    "condition_dropout",
]

Mode = Literal["gated", "joint"]
JOINT_KEY = "unimc_joint"


class _GEGLU(nn.Module):
    def __init__(self, d: int, mult: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(d, 2 * mult * d)
        self.out = nn.Linear(mult * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, g = self.proj(x).chunk(2, dim=-1)
        return self.out(a * F.gelu(g))


def _split_tokens(
    tokens: ConditionTokens | torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if isinstance(tokens, ConditionTokens):
        return tokens.tokens, tokens.mask if mask is None else mask
    if isinstance(tokens, dict):  # GLIGEN-style dict
        return tokens["tokens"], tokens.get("mask", mask)
    return tokens, mask


class GatedConditionAttention(nn.Module):
    r"""GLIGEN's gated self-attention over image tokens and condition tokens.

    $$
    x \leftarrow x + \tanh(\gamma)\,\mathrm{Attn}\big(\mathrm{LN}([x;\ W_c h])\big)_{[:, :N_x]},
    \qquad x \leftarrow x + \tanh(\beta)\,\mathrm{FF}(\mathrm{LN}(x))
    $$

    with a key-padding mask over $h$ (image tokens are always keys). $\gamma = \beta = 0$ at
    init, so the layer is exactly the identity (``torch.equal``) and, after one backward pass,
    only $\gamma$ and $\beta$ receive non-zero gradients. Attention is
    ``torch.nn.functional.scaled_dot_product_attention`` with a boolean mask.

    This module is the FSDP wrap unit of the scale-out path and is called as a diffusers
    ``BasicTransformerBlock.fuser``: ``forward(hidden_states, objs)``.

    Parameters
    ----------
    d_model : int
        Width of the image tokens $x$.
    n_heads : int
        Attention heads (must divide `d_model`).
    d_cond : int
        Width of the condition tokens $h$ (projected by $W_c$ to `d_model`).
    gate_init : float, default=0.0
        Initial $\gamma$ and $\beta$ (GLIGEN: 0).

    Raises
    ------
    ValueError
        If a width is < 1 or `n_heads` does not divide `d_model`.
    """

    def __init__(self, d_model: int, n_heads: int, d_cond: int, gate_init: float = 0.0) -> None:
        super().__init__()
        for name, val in (("d_model", d_model), ("n_heads", n_heads), ("d_cond", d_cond)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"`{name}` must be an int >= 1; got {val!r}")
        if d_model % n_heads:
            raise ValueError(f"`n_heads`={n_heads} must divide `d_model`={d_model}")
        self.d_model, self.n_heads, self.d_cond = d_model, n_heads, d_cond
        self.linear = nn.Linear(d_cond, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = _GEGLU(d_model)
        # shape [1], not scalar: FSDP2 cannot shard 0-d parameters
        self.gamma = nn.Parameter(torch.full((1,), float(gate_init)))
        self.beta = nn.Parameter(torch.full((1,), float(gate_init)))

    def forward(
        self,
        x: torch.Tensor,
        objs: ConditionTokens | torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Apply the gated layer.

        Parameters
        ----------
        x : Tensor, shape [B, N_x, d_model], floating
            Image tokens.
        objs : ConditionTokens or Tensor, shape [B, M, d_cond]
            Condition tokens (a :class:`ConditionTokens` brings its own mask).
        mask : Tensor, shape [B, M], bool, optional
            True for real condition tokens; default all True.

        Returns
        -------
        Tensor, shape [B, N_x, d_model], dtype of `x`

        Raises
        ------
        ValueError
            If shapes disagree.
        """
        h, m = _split_tokens(objs, mask)
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"`x` must have shape [B, N, {self.d_model}]; got {tuple(x.shape)}")
        if h.ndim != 3 or h.shape[0] != x.shape[0] or h.shape[-1] != self.d_cond:
            raise ValueError(
                f"condition tokens must have shape [{x.shape[0]}, M, {self.d_cond}]; got "
                f"{tuple(h.shape)}"
            )
        b, n, d = x.shape
        hh = self.linear(h.to(x.dtype))
        z = self.norm1(torch.cat([x, hh], 1))
        q, k, v = self.qkv(z).view(b, -1, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        q = q[:, :, :n]
        attn_mask = None
        if m is not None:
            if tuple(m.shape) != tuple(h.shape[:2]) or m.dtype != torch.bool:
                raise ValueError("`mask` must be a bool tensor of shape [B, M]")
            keys = torch.cat(
                [torch.ones(b, n, dtype=torch.bool, device=x.device), m.to(x.device)], 1
            )
            attn_mask = keys[:, None, None, :]
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        a = self.proj(a.transpose(1, 2).reshape(b, n, d))
        x = x + self.gamma.tanh() * a
        x = x + self.beta.tanh() * self.ff(self.norm2(x))
        return x


class JointConditionProjection(nn.Module):
    """Projection of condition tokens for ``mode="joint"`` (appended to a block's attention).

    Parameters
    ----------
    d_model : int
        Block width.
    d_cond : int
        Condition token width.
    """

    def __init__(self, d_model: int, d_cond: int) -> None:
        super().__init__()
        self.linear = nn.Linear(d_cond, d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Project ``[B, M, d_cond]`` tokens to ``[B, M, d_model]``."""
        return self.linear(tokens)


class _PassFuser(nn.Module):
    """Identity ``fuser`` for diffusers blocks left out of `blocks` (they still get the kwargs)."""

    def forward(self, x: torch.Tensor, objs: Any = None) -> torch.Tensor:
        return x


def _model_kind(dit: nn.Module) -> str:
    if isinstance(dit, nn.ModuleList):
        return "blocks"
    blocks = getattr(dit, "transformer_blocks", None)
    if isinstance(blocks, nn.ModuleList) and len(blocks) and hasattr(blocks[0], "attn1"):
        return "diffusers"
    if isinstance(blocks, nn.ModuleList) and getattr(dit, "_unimc_protocol", False):
        return "tiny"
    raise TypeError(
        "`dit` must be a diffusers DiTTransformer2DModel / PixArtTransformer2DModel, a "
        "unimc.TinyDiT or an nn.ModuleList of blocks; got " + type(dit).__name__
    )


def _widths(dit: nn.Module, kind: str, d_model: int | None, n_heads: int | None) -> tuple[int, int]:
    if d_model is not None and n_heads is not None:
        return d_model, n_heads
    cfg = getattr(dit, "config", None)
    if kind == "diffusers" and cfg is not None:
        heads = int(cfg.num_attention_heads)
        return heads * int(cfg.attention_head_dim), heads
    if kind == "tiny":
        return int(dit.d_model), int(dit.n_heads)  # type: ignore[arg-type]
    raise ValueError("`d_model` and `n_heads` are required for an nn.ModuleList of blocks")


class InjectionHandle:
    """What :func:`inject_conditions` returns: conditions the model, lists and removes layers.

    Attributes
    ----------
    layers : list of nn.Module
        The injected layers, one per selected block (registered inside the model, so
        ``model.parameters()``, ``state_dict`` and FSDP see them).
    mode : str
        ``"gated"`` or ``"joint"``.
    """

    def __init__(self, dit: nn.Module, kind: str, mode: str, blocks: list[nn.Module], attr: str):
        self.dit, self.kind, self.mode, self._blocks, self._attr = dit, kind, mode, blocks, attr
        self.layers: list[nn.Module] = [getattr(b, attr) for b in blocks]
        self._active: ConditionTokens | None = None
        self._hooks: list[Any] = []
        self._frozen: list[nn.Parameter] = []
        self._blocks_pass: list[nn.Module] = []
        if kind == "blocks":
            for blk, layer in zip(blocks, self.layers, strict=True):
                self._hooks.append(blk.register_forward_hook(self._make_post_hook(layer)))
        else:
            self._hooks.append(dit.register_forward_pre_hook(self._pre_hook, with_kwargs=True))

    def _make_post_hook(self, layer: nn.Module):
        def hook(module, args, output):
            if self._active is None:
                return output
            if isinstance(output, tuple):
                return (layer(output[0], self._active), *output[1:])
            return layer(output, self._active)

        return hook

    def _pre_hook(self, module, args, kwargs):
        if self._active is None:
            return None
        cak = dict(kwargs.get("cross_attention_kwargs") or {})
        if self.mode == "gated":
            cak["gligen"] = {"objs": self._active}
        else:
            cak[JOINT_KEY] = self._active
        kwargs = dict(kwargs)
        kwargs["cross_attention_kwargs"] = cak
        return args, kwargs

    @contextlib.contextmanager
    def condition(self, tokens: ConditionTokens) -> Iterator[InjectionHandle]:
        """Context manager: calls of the model inside it see `tokens`.

        Parameters
        ----------
        tokens : ConditionTokens
            From :class:`unimc.ConditionTokenizer` (batch size = the model's batch).

        Raises
        ------
        TypeError
            If `tokens` is not a ConditionTokens.
        """
        if not isinstance(tokens, ConditionTokens):
            raise TypeError("`tokens` must be a unimc.ConditionTokens")
        prev, self._active = self._active, tokens
        try:
            yield self
        finally:
            self._active = prev

    def parameters(self) -> Iterator[nn.Parameter]:
        """Parameters of the injected layers (what is trained besides the tokenizer)."""
        for layer in self.layers:
            yield from layer.parameters()

    def named_parameters(self) -> Iterator[tuple[str, nn.Parameter]]:
        """``(name, parameter)`` of the injected layers, named as in the model (e.g.
        ``transformer_blocks.0.fuser.gamma``)."""
        ids = {id(p) for p in self.parameters()}
        for name, p in self.dit.named_parameters():
            if id(p) in ids:
                yield name, p

    def remove(self) -> None:
        """Remove the hooks and layers and unfreeze the backbone: the model is as before."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        for blk in self._blocks:
            delattr(blk, self._attr)
        for blk in self._blocks_pass:
            delattr(blk, "fuser")
        self._blocks_pass.clear()
        for p in self._frozen:
            p.requires_grad_(True)
        self._frozen.clear()
        self.layers = []


#: Final output layer of each supported model kind (TinyDiT, diffusers DiT, PixArt).
_OUTPUT_LAYERS = ("out", "proj_out_2", "proj_out")


def _zero_output_layer(dit: nn.Module) -> str | None:
    """Name of the model's final output layer if its weight is all zeros (a fresh adaLN-Zero
    model), else None."""
    for name in _OUTPUT_LAYERS:
        layer = getattr(dit, name, None)
        w = getattr(layer, "weight", None)
        if isinstance(layer, nn.Module) and isinstance(w, torch.Tensor):
            return name if not bool(torch.count_nonzero(w.detach())) else None
    return None


def inject_conditions(
    dit: nn.Module,
    *,
    d_cond: int,
    mode: Mode = "gated",
    blocks: str | Sequence[int] = "all",
    d_model: int | None = None,
    n_heads: int | None = None,
    freeze: bool = True,
) -> InjectionHandle:
    """Add UniMC-style condition injection to a DiT, in place (torchao-style surgery).

    * diffusers ``DiTTransformer2DModel`` / ``PixArtTransformer2DModel``: a
      :class:`GatedConditionAttention` is assigned as each selected ``BasicTransformerBlock``'s
      ``fuser`` (the slot diffusers runs right after self-attention for GLIGEN), and a forward
      pre-hook passes ``cross_attention_kwargs={"gligen": {"objs": tokens}}`` while
      :meth:`InjectionHandle.condition` is active.
    * :class:`unimc.TinyDiT`: the same ``fuser`` slot (or, for ``mode="joint"``, a projection
      whose output joins the block's self-attention and is dropped after it).
    * any ``nn.ModuleList`` of blocks: a forward hook applies the gated layer after each WHOLE
      block (not after its self-attention); give `d_model` and `n_heads`.

    Parameters
    ----------
    dit : nn.Module
        The model (see above).
    d_cond : int
        Width of the condition tokens (``ConditionTokenizer.d_model``).
    mode : {"gated", "joint"}, default="gated"
        ``"gated"`` is the identity at init (gates 0). ``"joint"`` (TinyDiT only) appends the
        tokens to the block's attention: NOT an identity at init.
    blocks : "all" or sequence of int, default="all"
        Which blocks get a layer.
    d_model, n_heads : int, optional
        Block width and heads; read from the model's config when possible.
    freeze : bool, default=True
        Freeze the backbone (``requires_grad=False``); only injected layers train. Meant for
        a PRETRAINED backbone: a freshly built adaLN-Zero model (e.g. a new :class:`TinyDiT`)
        has an all-zero final layer, so with a frozen backbone its output ignores everything
        upstream and the injected layers and tokenizer get zero gradients forever. Such a
        model gets a ``UserWarning``; use ``freeze=False`` to train it from scratch.

    Returns
    -------
    InjectionHandle

    Raises
    ------
    TypeError
        If `dit` is not a supported model.
    ValueError
        On an unknown `mode`, bad `blocks`, `"joint"` on a non-TinyDiT model, or a model already
        injected.

    Warns
    -----
    UserWarning
        With ``freeze=True`` on a model whose final output layer is all zeros (see `freeze`).
    """
    if mode not in ("gated", "joint"):
        raise ValueError(f"`mode` must be 'gated' or 'joint'; got {mode!r}")
    if isinstance(d_cond, bool) or not isinstance(d_cond, int) or d_cond < 1:
        raise ValueError(f"`d_cond` must be an int >= 1; got {d_cond!r}")
    kind = _model_kind(dit)
    if mode == "joint" and kind != "tiny":
        raise ValueError("`mode`='joint' is implemented for unimc.TinyDiT only")
    all_blocks = dit if kind == "blocks" else getattr(dit, "transformer_blocks")  # noqa: B009
    assert isinstance(all_blocks, nn.ModuleList)
    if blocks == "all":
        idx = list(range(len(all_blocks)))
    elif isinstance(blocks, str):
        raise ValueError(f"`blocks` must be 'all' or a sequence of ints; got {blocks!r}")
    else:
        idx = [int(i) for i in blocks]
        if not idx or any(not 0 <= i < len(all_blocks) for i in idx) or len(set(idx)) != len(idx):
            raise ValueError(f"`blocks` must be distinct indices in [0, {len(all_blocks)})")
    dm, nh = _widths(dit, kind, d_model, n_heads)
    attr = "unimc_joint" if mode == "joint" else ("fuser" if kind != "blocks" else "unimc_fuser")
    chosen = [all_blocks[i] for i in idx]
    for blk in chosen:
        if isinstance(getattr(blk, attr, None), nn.Module):
            raise ValueError("`dit` already has injected layers; call handle.remove() first")
    frozen = []
    if freeze and kind != "blocks" and (zero := _zero_output_layer(dit)) is not None:
        warnings.warn(
            f"inject_conditions(freeze=True): the model's output layer `{zero}` is all zeros "
            "(a freshly initialised adaLN-Zero model), so a frozen backbone's output does not "
            "depend on the injected layers and they get zero gradients; load pretrained "
            "weights first or pass `freeze`=False",
            UserWarning,
            stacklevel=2,
        )
    if freeze:
        frozen = [p for p in dit.parameters() if p.requires_grad]
        for p in frozen:
            p.requires_grad_(False)
    ref = next(dit.parameters(), None)
    for blk in chosen:
        layer: nn.Module
        if mode == "gated":
            layer = GatedConditionAttention(dm, nh, d_cond)
        else:
            layer = JointConditionProjection(dm, d_cond)
        if ref is not None:
            layer.to(device=ref.device, dtype=ref.dtype)
        if attr in blk.__dict__:  # a plain ``None`` slot (TinyDiT)
            del blk.__dict__[attr]
        blk.add_module(attr, layer)
    handle = InjectionHandle(dit, kind, mode, chosen, attr)
    handle._frozen = frozen
    if kind == "diffusers":
        for i, blk in enumerate(all_blocks):
            if i not in idx and not hasattr(blk, "fuser"):
                blk.add_module("fuser", _PassFuser())
                handle._blocks_pass.append(blk)
    return handle


def condition_dropout(
    tokens: ConditionTokens, p: float, generator: torch.Generator | None = None
) -> ConditionTokens:
    """Drop the whole condition of each sample with probability `p` (for classifier-free guidance).

    A dropped sample's mask becomes all False (no condition token is attended to). The
    probability 0.1 is our default (GLIGEN/UniMC do not publish theirs for this layout). Use a
    per-rank `generator` under DDP/FSDP.

    Parameters
    ----------
    tokens : ConditionTokens
        Tokens of a batch.
    p : float
        Drop probability in [0, 1].
    generator : torch.Generator, optional
        Random source (on the tokens' device).

    Returns
    -------
    ConditionTokens
        Same tokens, new mask.

    Raises
    ------
    ValueError
        If `p` is outside [0, 1] or not finite.
    """
    if not isinstance(tokens, ConditionTokens):
        raise TypeError("`tokens` must be a unimc.ConditionTokens")
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"`p` must be a float in [0, 1]; got {p!r}")
    b = tokens.mask.shape[0]
    keep = torch.rand(b, generator=generator, device=tokens.mask.device) >= p
    return ConditionTokens(tokens.tokens, tokens.mask & keep[:, None], tokens.owner)
