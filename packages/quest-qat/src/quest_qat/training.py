"""The small byte-level Llama training loop of the reproduction (QuEST §4 recipe, scaled down).

AdamW (β = (0.9, 0.95), weight decay on matrices only), linear warmup over the first 10% of
steps then cosine decay to 0.1·lr, gradient clipping at 1.0 (official ``src/optim/base.py``
defaults).
"""

import math
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: Spec §4 model: byte vocabulary, hidden 128, MLP 512, 2 layers, 4 heads, untied.
LLAMA_KWARGS: dict[str, Any] = dict(
    vocab_size=256, hidden_size=128, intermediate_size=512, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=4, rms_norm_eps=1e-5, tie_word_embeddings=False,
    max_position_embeddings=64,
)  # fmt: skip


def tiny_llama(seed: int = 0) -> nn.Module:
    """A randomly initialised ``transformers`` ``LlamaForCausalLM`` of the spec's size (RoPE θ 1e4).

    Raises
    ------
    ImportError
        If transformers is missing (``pip install quest-qat[reproduce]``).
    """
    try:
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as err:
        raise ImportError(
            "the reproduction needs transformers: pip install quest-qat[reproduce]"
        ) from err
    config = LlamaConfig(**LLAMA_KWARGS)
    rope_parameters = getattr(config, "rope_parameters", None)  # transformers >= 5
    if rope_parameters is not None:
        rope_parameters["rope_theta"] = 10000.0
    else:
        config.rope_theta = 10000.0
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def batches(data: np.ndarray, batch: int, seq: int, rng: np.random.Generator):
    """Endless random windows ``(x, y)`` of shape (batch, seq), int64, y shifted by one byte."""
    tokens = torch.from_numpy(data.astype(np.int64))
    while True:
        starts = torch.from_numpy(rng.integers(0, len(data) - seq - 1, size=batch))
        idx = starts[:, None] + torch.arange(seq + 1)
        win = tokens[idx]
        yield win[:, :-1], win[:, 1:]


def lm_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean next-byte cross-entropy in nats."""
    logits = model(input_ids=x).logits if hasattr(model, "config") else model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


@torch.no_grad()
def evaluate(model: nn.Module, val: np.ndarray, *, n_batches=20, batch=16, seq=64) -> float:
    """Mean loss over `n_batches` fixed validation batches (seed 1234), quantizers on."""
    was_training = model.training
    model.eval()
    gen = batches(val, batch, seq, np.random.default_rng(1234))
    losses = [lm_loss(model, *next(gen)).item() for _ in range(n_batches)]
    model.train(was_training)
    return float(np.mean(losses))


def lr_at(step: int, steps: int, lr: float, warmup_frac: float = 0.1, final: float = 0.1) -> float:
    """Linear warmup over ``warmup_frac·steps``, then cosine from `lr` to ``final·lr``."""
    warmup = max(1, int(warmup_frac * steps))
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * t)))


def make_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.1):
    """AdamW with decay on parameters of 2+ dimensions only."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    other = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def train(
    model: nn.Module,
    train_data: np.ndarray,
    *,
    steps: int = 250,
    batch: int = 16,
    seq: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 25,
    on_step=None,
) -> list[tuple[int, float]]:
    """Train `model` in place; returns ``[(step, training loss)]`` every `log_every` steps.

    `on_step(step)` is called after each step (progress bars).
    """
    torch.manual_seed(seed)
    opt = make_optimizer(model, lr)
    gen = batches(train_data, batch, seq, np.random.default_rng(seed))
    curve = []
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, lr)
        x, y = next(gen)
        loss = lm_loss(model, x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % log_every == 0 or step == steps - 1:
            curve.append((step, float(loss.item())))
        if on_step is not None:
            on_step(step)
    return curve
