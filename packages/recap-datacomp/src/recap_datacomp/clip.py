r"""CLIP training through a small backend interface: transformers' ``CLIPModel`` (default) or
open_clip (extra ``[open_clip]``, needs torchvision; DECISIONS 15).

Both use their library's own model and symmetric contrastive loss (never hand-written here):

$$\mathcal{L} = \tfrac12\Big[\mathrm{CE}\big(\tau^{-1} T I^\top, \mathrm{id}\big) +
\mathrm{CE}\big(\tau^{-1} I T^\top, \mathrm{id}\big)\Big]$$

with L2-normalised image/text embeddings $I, T$ and learned temperature $\tau$ (Radford et al.
2021, Fig. 3; transformers ``CLIPModel(return_loss=True)``, open_clip ``ClipLoss``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np


class CLIPBackend(Protocol):
    """What :func:`train_clip` needs: ``loss``, ``encode_image``, ``encode_text``,
    ``parameters``."""

    def loss(self, images: Any, tokens: Any) -> Any: ...

    def encode_image(self, images: Any) -> Any: ...

    def encode_text(self, tokens: Any) -> Any: ...

    def parameters(self) -> Any: ...


def tiny_clip_config(
    vocab_size: int,
    *,
    image_size: int = 32,
    patch_size: int = 4,
    width: int = 128,
    layers: int = 4,
    text_width: int = 128,
    text_layers: int = 2,
    heads: int = 4,
    context_length: int = 64,
    embed_dim: int = 128,
    pad_id: int = 0,
    bos_id: int = 2,
    eos_id: int = 3,
) -> Any:
    """A tiny ``transformers.CLIPConfig`` (defaults: the spec's ViT 32 px patch 4, width 128,
    4 layers; text width 128, 2 layers, context 64)."""
    from transformers import CLIPConfig

    return CLIPConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": text_width,
            "intermediate_size": 4 * text_width,
            "num_hidden_layers": text_layers,
            "num_attention_heads": heads,
            "max_position_embeddings": context_length,
            "pad_token_id": pad_id,
            "bos_token_id": bos_id,
            "eos_token_id": eos_id,
        },
        vision_config={
            "hidden_size": width,
            "intermediate_size": 4 * width,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "image_size": image_size,
            "patch_size": patch_size,
        },
        projection_dim=embed_dim,
    )


def to_pixels(images: Any, device: Any = None) -> Any:
    """uint8 ``[B, H, W, 3]`` -> float32 ``[B, 3, H, W]`` in [-1, 1]."""
    import torch

    x = torch.as_tensor(np.asarray(images), device=device).permute(0, 3, 1, 2).float()
    return x / 127.5 - 1.0


class HFCLIPBackend:
    """transformers ``CLIPModel`` as a backend; tokens are ``[B, L]`` ids padded with ``pad_id``.

    Parameters
    ----------
    model : transformers.CLIPModel
    pad_id : int, default=0
    """

    def __init__(self, model: Any, pad_id: int = 0) -> None:
        self.model, self.pad_id = model, pad_id

    @classmethod
    def from_config(cls, config: Any, *, seed: int = 0) -> HFCLIPBackend:
        """A randomly initialised ``CLIPModel(config)`` (seeded)."""
        import torch
        from transformers import CLIPModel

        torch.manual_seed(seed)
        return cls(CLIPModel(config), pad_id=config.text_config.pad_token_id or 0)

    @property
    def device(self) -> Any:
        """The model's device."""
        return next(self.model.parameters()).device

    def parameters(self) -> Any:
        """The trainable parameters."""
        return self.model.parameters()

    def loss(self, images: Any, tokens: Any) -> Any:
        """Symmetric contrastive loss (``CLIPModel(..., return_loss=True).loss``)."""
        tokens = tokens.to(self.device)
        out = self.model(
            input_ids=tokens,
            attention_mask=(tokens != self.pad_id).long(),
            pixel_values=images.to(self.device),
            return_loss=True,
        )
        return out.loss

    def encode_image(self, images: Any) -> Any:
        """L2-normalised image embeddings ``[B, D] float32``."""
        import torch.nn.functional as F

        feats = self.model.get_image_features(pixel_values=images.to(self.device))
        feats = getattr(feats, "pooler_output", feats)
        return F.normalize(feats, dim=-1)

    def encode_text(self, tokens: Any) -> Any:
        """L2-normalised text embeddings ``[B, D] float32``."""
        import torch.nn.functional as F

        tokens = tokens.to(self.device)
        feats = self.model.get_text_features(
            input_ids=tokens, attention_mask=(tokens != self.pad_id).long()
        )
        feats = getattr(feats, "pooler_output", feats)
        return F.normalize(feats, dim=-1)


class OpenCLIPBackend:
    """open_clip model + ``open_clip.ClipLoss`` (extra ``[open_clip]``; cannot import here).

    Parameters
    ----------
    model : open_clip.CLIP
    """

    def __init__(self, model: Any) -> None:
        import open_clip

        self.model, self.criterion = model, open_clip.ClipLoss()

    def parameters(self) -> Any:
        """The trainable parameters."""
        return self.model.parameters()

    def loss(self, images: Any, tokens: Any) -> Any:
        """``ClipLoss(image_features, text_features, logit_scale)``."""
        img, txt, scale = self.model(images, tokens)[:3]
        return self.criterion(img, txt, scale)

    def encode_image(self, images: Any) -> Any:
        """Normalised image features."""
        return self.model.encode_image(images, normalize=True)

    def encode_text(self, tokens: Any) -> Any:
        """Normalised text features."""
        return self.model.encode_text(tokens, normalize=True)


def train_clip(
    backend: Any,
    batches: Iterable[tuple[Any, Any]],
    *,
    steps: int,
    lr: float = 1e-3,
    weight_decay: float = 0.1,
    warmup: int = 10,
    show_progress: bool = False,
) -> list[float]:
    """Train `backend` with AdamW and linear warmup + cosine decay (open_clip_train defaults'
    shape) on ``(images, tokens)`` batches, cycling `batches` until `steps`.

    Under ``torch.distributed`` (torchrun) the model is wrapped in DDP.

    Returns
    -------
    list of float
        The loss per step.

    Raises
    ------
    ValueError
        If `steps` < 1 or `lr` <= 0.
    """
    import math

    import torch
    from tqdm.auto import tqdm

    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"`steps` must be an int >= 1, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"`lr` must be > 0, got {lr!r}")
    model = backend.model
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        from torch.nn.parallel import DistributedDataParallel

        backend.model = DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(steps - warmup, 1)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    losses: list[float] = []
    model.train()
    with tqdm(total=steps, desc="train clip", disable=not show_progress) as bar:
        while len(losses) < steps:
            n_before = len(losses)
            for images, tokens in batches:
                loss = backend.loss(images, tokens)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                bar.update(1)
                if len(losses) >= steps:
                    break
            if len(losses) == n_before:
                raise ValueError("`batches` yielded nothing")
    backend.model = model
    model.eval()
    return losses


def embed(backend: Any, images: Any, tokens: Any, *, batch_size: int = 256) -> tuple[Any, Any]:
    """Embeddings of pixel tensors and token tensors as float64 numpy arrays ``[N, D]``."""
    import torch

    outs_i, outs_t = [], []
    with torch.no_grad():
        for s in range(0, len(images), batch_size):
            outs_i.append(backend.encode_image(images[s : s + batch_size]).cpu().double().numpy())
        for s in range(0, len(tokens), batch_size):
            outs_t.append(backend.encode_text(tokens[s : s + batch_size]).cpu().double().numpy())
    return np.concatenate(outs_i), np.concatenate(outs_t)
