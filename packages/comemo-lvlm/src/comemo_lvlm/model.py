r"""A LLaVA/InternVL-style LVLM with CoMemo's two image paths (context + memory).

The projector output :math:`V \in \mathbb{R}^{(XY + [XY>1])T^2 \times D}` replaces the
``<IMG_CONTEXT>`` embeddings (context path) and is read by the gated blocks attached with
:func:`~comemo_lvlm.attach.attach_memory_path` (memory path). Position ids come from
:func:`~comemo_lvlm.positions.build_position_ids`; :meth:`CoMemoVLM.generate` keeps them in its
own KV-cached loop (next id = last id + 1 for self-attention and memory queries), because
transformers' ``generate`` rebuilds ``position_ids`` from the attention mask and would undo DHR.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from .positions import _as_grid, _check_ids, _check_T, build_position_ids
from .tiling import TileGrid

__all__ = ["CoMemoVLM", "GenerationResult", "PixelShuffleProjector", "expand_image_tokens"]


class PixelShuffleProjector(nn.Module):
    r"""Pixel shuffle (scale 0.5) then InternVL's MLP projector.

    ``LayerNorm(4 D_v) -> Linear(4 D_v, D) -> GELU -> Linear(D, D)``: each 2x2 group of ViT
    patches becomes one token, so a 448 px tile with 14 px patches gives T = 16, T^2 = 256.

    Parameters
    ----------
    d_vision : int
        ViT width D_v.
    d_model : int
        LLM width D.
    scale : float, default=0.5
        Down-sampling factor per side; 1/scale must be an integer.
    """

    def __init__(self, d_vision: int, d_model: int, scale: float = 0.5) -> None:
        super().__init__()
        if not (0 < scale <= 1) or abs(1 / scale - round(1 / scale)) > 1e-9:
            raise ValueError(f"scale must be 1/r for an integer r >= 1, got {scale}")
        for name, v in (("d_vision", d_vision), ("d_model", d_model)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.r = round(1 / scale)
        self.d_vision = d_vision
        width = d_vision * self.r * self.r
        self.mlp = nn.Sequential(
            nn.LayerNorm(width), nn.Linear(width, d_model), nn.GELU(), nn.Linear(d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ViT patch tokens (CLS removed) to LLM tokens.

        Parameters
        ----------
        x : torch.Tensor of float, shape (N, P^2, D_v)
            P divisible by 1/scale. Cast to the projector's parameter dtype when it differs
            (outside autocast), so a float64 or float16 input works with float32 weights.

        Returns
        -------
        torch.Tensor, shape (N, (P*scale)^2, D)

        Raises
        ------
        ValueError
            Wrong rank/width or a non-square patch count.
        TypeError
            ``x`` is not a float tensor.
        """
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_vision:
            raise ValueError(
                f"x must have shape (N, P^2, {self.d_vision}), got {tuple(getattr(x, 'shape', ()))}"
            )
        if not x.is_floating_point():
            raise TypeError(f"x must be a float tensor (ViT features), got {x.dtype}")
        w_dtype = next(self.mlp.parameters()).dtype
        if x.dtype != w_dtype and not torch.is_autocast_enabled(x.device.type):
            x = x.to(w_dtype)
        n, pp, d = x.shape
        p = math.isqrt(pp)
        if p * p != pp or p % self.r:
            raise ValueError(f"x's {pp} patches are not a square grid divisible by {self.r}")
        t, r = p // self.r, self.r
        x = x.reshape(n, t, r, t, r, d).permute(0, 1, 3, 2, 4, 5).reshape(n, t * t, r * r * d)
        return self.mlp(x)


def expand_image_tokens(
    prompt: str,
    grids: Sequence[TileGrid | tuple[int, int]],
    T: int = 16,
    *,
    placeholder: str = "<image>",
    img_start: str = "<img>",
    img_end: str = "</img>",
    context: str = "<IMG_CONTEXT>",
) -> str:
    """Replace each ``<image>`` with ``<img>`` + (X*Y + [X*Y>1])*T^2 ``<IMG_CONTEXT>`` + ``</img>``.

    Parameters
    ----------
    prompt : str
    grids : list of TileGrid or (cols, rows) pairs of ints >= 1
        One per placeholder, in order.
    T : int, default=16
        Tokens per tile side, >= 1.
    placeholder, img_start, img_end, context : str
        Non-empty marker strings.

    Raises
    ------
    ValueError
        When the number of placeholders differs from ``len(grids)``, a grid or ``T`` is < 1, or
        a marker is empty.
    TypeError
        ``prompt`` or a marker is not a str, ``grids`` is not a list, a grid is not a pair of
        ints, ``T`` is not an int.
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    for name, marker in (
        ("placeholder", placeholder),
        ("img_start", img_start),
        ("img_end", img_end),
        ("context", context),
    ):
        if not isinstance(marker, str):
            raise TypeError(f"{name} must be a str, got {type(marker).__name__}")
        if not marker:
            raise ValueError(f"{name} must be a non-empty str, got {marker!r}")
    if not isinstance(grids, (list, tuple)):
        raise TypeError(f"grids must be a list of TileGrid, got {type(grids).__name__}")
    T = _check_T(T)
    tgs = [_as_grid(g, f"grids[{k}]") for k, g in enumerate(grids)]
    n = prompt.count(placeholder)
    if n != len(tgs):
        raise ValueError(f"prompt has {n} {placeholder!r} placeholders but grids has {len(tgs)}")
    out = prompt
    for tg in tgs:
        out = out.replace(placeholder, img_start + context * (tg.n_images * T * T) + img_end, 1)
    return out


@dataclass
class GenerationResult:
    """Output of :meth:`CoMemoVLM.generate`.

    Attributes
    ----------
    sequences : torch.Tensor of int64, shape (B, n_new)
        The new tokens (``pad_token_id`` after a row's eos).
    scores : list of torch.Tensor of float, shape (B, vocab)
        The logits of each step.
    """

    sequences: torch.Tensor
    scores: list[torch.Tensor] = field(default_factory=list)


class CoMemoVLM(nn.Module):
    """Vision encoder + projector + (memory-path-wrapped) LLM, with RoPE-DHR positions.

    Parameters
    ----------
    vision_model : torch.nn.Module
        E.g. ``transformers.CLIPVisionModel``; called as ``vision_model(pixel_values=...)``
        and read through ``.last_hidden_state`` (first token = CLS, dropped).
    projector : torch.nn.Module
        Maps (N, P^2, D_v) to (N, T^2, D), e.g. :class:`PixelShuffleProjector`.
    language_model : transformers.PreTrainedModel
        A causal LM, optionally with :func:`attach_memory_path` already applied.
    image_token_id, img_start_id, img_end_id : int
        ``<IMG_CONTEXT>``, ``<img>``, ``</img>``.
    position_mode : {"dhr", "plain"}, default="dhr"
    layout : {"exact", "comemo_compat"}, default="exact"
    T : int, default=16
        Tokens per tile side after the projector.
    """

    def __init__(
        self,
        vision_model: nn.Module,
        projector: nn.Module,
        language_model: nn.Module,
        *,
        image_token_id: int,
        img_start_id: int,
        img_end_id: int,
        position_mode: str = "dhr",
        layout: str = "exact",
        T: int = 16,
    ) -> None:
        super().__init__()
        if position_mode not in ("dhr", "plain"):
            raise ValueError(f"position_mode must be 'dhr' or 'plain', got {position_mode!r}")
        if layout not in ("exact", "comemo_compat"):
            raise ValueError(f"layout must be 'exact' or 'comemo_compat', got {layout!r}")
        for name, v in (
            ("image_token_id", image_token_id),
            ("img_start_id", img_start_id),
            ("img_end_id", img_end_id),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be a non-negative int, got {v!r}")
        T = _check_T(T)
        ids = {image_token_id, img_start_id, img_end_id}
        if len(ids) != 3:
            raise ValueError("image_token_id, img_start_id and img_end_id must differ")
        self.vision_model = vision_model
        self.projector = projector
        self.language_model = language_model
        self.image_token_id = image_token_id
        self.img_start_id = img_start_id
        self.img_end_id = img_end_id
        self.position_mode = position_mode
        self.layout = layout
        self.T = T

    @property
    def memory(self) -> Any:
        """The attached :class:`~comemo_lvlm.attach.MemoryPath`, or None."""
        return getattr(self.language_model, "comemo_memory_path", None)

    def encode_images(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """ViT (CLS dropped) + projector: (N, 3, H, W) -> (N, T^2, D)."""
        if not isinstance(pixel_values, torch.Tensor) or pixel_values.dim() != 4:
            raise ValueError(
                f"pixel_values must have shape (N, 3, H, W), got "
                f"{tuple(getattr(pixel_values, 'shape', ()))}"
            )
        if not pixel_values.is_floating_point():
            raise TypeError(
                f"pixel_values must be a float tensor (normalised pixels), got {pixel_values.dtype}"
            )
        if not bool(torch.isfinite(pixel_values).all()):
            raise ValueError("pixel_values contains NaN or inf")
        n_ch = getattr(getattr(self.vision_model, "config", None), "num_channels", None)
        if isinstance(n_ch, int) and pixel_values.shape[1] != n_ch:
            raise ValueError(
                f"pixel_values must have {n_ch} channels (the vision model's num_channels), "
                f"got shape {tuple(pixel_values.shape)}; convert images to RGB first"
            )
        hidden = self.vision_model(pixel_values=pixel_values).last_hidden_state[:, 1:]
        feats = self.projector(hidden)
        if feats.shape[1] != self.T * self.T:
            raise ValueError(f"projector gives {feats.shape[1]} tokens per tile, T^2 = {self.T**2}")
        if not bool(torch.isfinite(feats).all()):
            raise ValueError(
                "the image features (vision_model + projector output) contain NaN or inf: "
                "check pixel_values' scale (normalised pixels) and the model dtype's range"
            )
        return feats

    def _prepare(
        self,
        input_ids: torch.Tensor,
        pixel_values: torch.Tensor | None,
        grids: Sequence[Sequence[Any]] | None,
        attention_mask: torch.Tensor | None,
        sample_lens: Sequence[Sequence[int]] | None,
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None, torch.Tensor, torch.Tensor | None]:
        input_ids = _check_ids(input_ids)
        B, L = input_ids.shape
        grids = [[] for _ in range(B)] if grids is None else grids
        plan = build_position_ids(
            input_ids,
            grids,
            img_start_id=self.img_start_id,
            img_end_id=self.img_end_id,
            T=self.T,
            mode=self.position_mode,
            layout=self.layout,
            attention_mask=attention_mask,
            sample_lens=sample_lens,
        )
        embeds = cast(Any, self.language_model).get_input_embeddings()(input_ids)
        is_img = input_ids == self.image_token_id
        n_ctx = int(is_img.sum())
        n_want = sum(TileGrid(*g).n_images for row in grids for g in row) * self.T**2
        if n_ctx != n_want:
            raise ValueError(
                f"input_ids has {n_ctx} <IMG_CONTEXT> tokens but the grids need {n_want} "
                f"(sum of tiles x T^2)"
            )
        media = None
        if n_want:
            if pixel_values is None:
                raise ValueError("pixel_values is required when input_ids contains images")
            n_tiles = sum(TileGrid(*g).n_images for row in grids for g in row)
            if pixel_values.shape[0] != n_tiles:
                raise ValueError(
                    f"pixel_values has {pixel_values.shape[0]} tiles, the grids need {n_tiles}"
                )
            feats = self.encode_images(pixel_values).reshape(-1, embeds.shape[-1])
            embeds = embeds.masked_scatter(is_img[..., None], feats.to(embeds.dtype))
            media = torch.gather(
                embeds, 1, plan.media_index[..., None].expand(-1, -1, embeds.shape[-1])
            )
        mask4d = None
        if sample_lens is not None:
            # block-diagonal causal mask for packed rows (additive, model dtype)
            same = plan.text_owner[:, :, None] == plan.text_owner[:, None, :]
            causal = torch.ones(L, L, dtype=torch.bool, device=input_ids.device).tril()
            allowed = same & causal & (plan.text_owner[:, None, :] >= 0)
            allowed = allowed | torch.eye(L, dtype=torch.bool, device=input_ids.device)
            mask4d = torch.zeros(B, 1, L, L, dtype=embeds.dtype, device=input_ids.device)
            mask4d = mask4d.masked_fill(~allowed[:, None], torch.finfo(embeds.dtype).min)
        return embeds, plan, media, plan.position_ids, mask4d

    def _memory_ctx(self, plan: Any, media: torch.Tensor | None) -> Any:
        mem = self.memory
        if mem is None or media is None:
            return _null()
        mask = plan.media_mask(mem.media_visibility)
        return mem.condition(media, plan.position_ids, plan.media_position_ids, mask)

    def forward(
        self,
        input_ids: torch.Tensor,
        pixel_values: torch.Tensor | None = None,
        grids: Sequence[Sequence[Any]] | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        *,
        sample_lens: Sequence[Sequence[int]] | None = None,
        **lm_kwargs: Any,
    ) -> Any:
        """Forward through both image paths.

        Parameters
        ----------
        input_ids : torch.Tensor of int64, shape (B, L)
        pixel_values : torch.Tensor of float, shape (N_tiles, 3, H, W), optional
            All tiles of all images of the batch, in order (tiles then thumbnail per image).
        grids : list (length B) of lists of TileGrid, optional
        attention_mask : torch.Tensor of 0/1, shape (B, L), optional
        labels : torch.Tensor of int64, shape (B, L), optional
            -100 for ignored tokens (transformers convention).
        sample_lens : list of lists of int, optional
            Packed samples per row (block-diagonal self- and cross-attention).

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutputWithPast

        Raises
        ------
        ValueError
            ``<IMG_CONTEXT>`` count differs from the grids' (both numbers), unmatched markers,
            missing or NaN pixel values.
        """
        embeds, plan, media, pos, mask4d = self._prepare(
            input_ids, pixel_values, grids, attention_mask, sample_lens
        )
        if attention_mask is None:
            # an explicit mask: with attention_mask=None and no cache, transformers (>= 4.5x)
            # reads every position-id jump as a packed-sequence boundary, which RoPE-DHR ids
            # (tile ids jump back) would trigger
            attention_mask = torch.ones_like(input_ids)
        am: Any = mask4d if mask4d is not None else attention_mask
        with self._memory_ctx(plan, media):
            return self.language_model(
                inputs_embeds=embeds,
                attention_mask=am,
                position_ids=pos,
                labels=labels,
                **lm_kwargs,
            )

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        pixel_values: torch.Tensor | None = None,
        grids: Sequence[Sequence[Any]] | None = None,
        attention_mask: torch.Tensor | None = None,
        *,
        max_new_tokens: int = 32,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        eos_token_id: int | None = None,
        pad_token_id: int = 0,
        generator: torch.Generator | None = None,
        compat_decode: bool = False,
    ) -> GenerationResult:
        """KV-cached decoding that keeps RoPE-DHR ids (next id = last id + 1).

        Parameters
        ----------
        input_ids : torch.Tensor of int64, shape (B, L)
            Left-padded prompts.
        pixel_values, grids, attention_mask
            As in :meth:`forward`.
        max_new_tokens : int, default=32
        do_sample : bool, default=False
            Greedy when False; otherwise softmax(logits / temperature) sampling (top-k).
        temperature : float, default=1.0
        top_k : int, optional
        eos_token_id : int, optional
            Rows stop after producing it; later tokens are ``pad_token_id``.
        pad_token_id : int, default=0
        generator : torch.Generator, optional
            For reproducible sampling.
        compat_decode : bool, default=False
            Reproduce the official cached decode, which rotates the memory queries by the
            uncompressed sequence length (``text_position_ids.shape[1]``) instead of last + 1;
            it drifts from a full recompute under DHR. For parity studies only.

        Returns
        -------
        GenerationResult

        Raises
        ------
        ValueError
            Right padding, bad ``max_new_tokens``/``temperature``/``top_k``, an
            ``eos_token_id``/``pad_token_id`` that is negative or outside the vocabulary.
        """
        if (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or max_new_tokens < 1
        ):
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if not (temperature > 0 and math.isfinite(temperature)):
            raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive int, got {top_k!r}")
        vocab = getattr(
            cast(Any, self.language_model).get_input_embeddings(), "num_embeddings", None
        )
        for name, tok in (("eos_token_id", eos_token_id), ("pad_token_id", pad_token_id)):
            if tok is None and name == "eos_token_id":
                continue
            if isinstance(tok, bool) or not isinstance(tok, int) or tok < 0:
                raise ValueError(f"{name} must be a non-negative int, got {tok!r}")
            if isinstance(vocab, int) and tok >= vocab:
                raise ValueError(f"{name} must be < the vocabulary size {vocab}, got {tok}")
        input_ids = _check_ids(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if bool((attention_mask[:, -1] == 0).any()):
            raise ValueError("attention_mask: generate needs left padding (last column all 1)")
        embeds, plan, media, pos, _ = self._prepare(
            input_ids, pixel_values, grids, attention_mask, None
        )
        mem = self.memory
        visible = (plan.media_owner >= 0)[:, None, :]  # a new token sees all its row's images
        with self._memory_ctx(plan, media):
            out = self.language_model(
                inputs_embeds=embeds,
                attention_mask=attention_mask,
                position_ids=pos,
                use_cache=True,
            )
        cache_kw = _cache_kw(self.language_model)
        past = _get_cache(out)
        logits = out.logits[:, -1].float()
        last = pos[:, -1]
        am = attention_mask
        B = input_ids.shape[0]
        done = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
        tokens: list[torch.Tensor] = []
        scores: list[torch.Tensor] = []
        for step in range(max_new_tokens):
            scores.append(logits)
            if do_sample:
                lg = logits / temperature
                if top_k is not None:
                    kth = torch.topk(lg, min(top_k, lg.shape[-1])).values[:, -1:]
                    lg = lg.masked_fill(lg < kth, float("-inf"))
                nxt = torch.multinomial(F.softmax(lg, -1), 1, generator=generator)[:, 0]
            else:
                nxt = logits.argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            tokens.append(nxt)
            if eos_token_id is not None:
                done = done | (nxt == eos_token_id)
            if step == max_new_tokens - 1 or bool(done.all()):
                break
            last = last + 1
            am = torch.cat([am, torch.ones_like(am[:, :1])], dim=1)
            emb = cast(Any, self.language_model).get_input_embeddings()(nxt[:, None])
            step_pos = last[:, None]
            mem_pos = step_pos
            if compat_decode:
                mem_pos = torch.full_like(step_pos, am.shape[1] - 1)
            ctx = (
                mem.condition(media, mem_pos, plan.media_position_ids, visible)
                if mem is not None and media is not None
                else _null()
            )
            with ctx:
                out = self.language_model(
                    inputs_embeds=emb,
                    attention_mask=am,
                    position_ids=step_pos,
                    use_cache=True,
                    **{cache_kw: past},
                )
            past = _get_cache(out)
            logits = out.logits[:, -1].float()
        return GenerationResult(torch.stack(tokens, dim=1), scores)


def _cache_kw(lm: nn.Module) -> str:
    """The KV-cache keyword: ``cache`` in recent transformers 5.x, else ``past_key_values``."""
    try:
        params = inspect.signature(lm.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _get_cache(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
