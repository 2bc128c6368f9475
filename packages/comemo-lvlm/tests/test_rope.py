"""RoPE with explicit ids (spec test 5) and RoFormer's decay bound (spec test 9)."""

import numpy as np
import pytest
import torch
from comemo_lvlm import GatedCrossAttentionBlock, apply_rope, rope_decay_bound


def test_apply_rope_equals_transformers_llama():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    cfg = LlamaConfig(
        hidden_size=64, num_attention_heads=2, rope_theta=1e6, max_position_embeddings=8192
    )
    rot = LlamaRotaryEmbedding(cfg)
    torch.manual_seed(0)
    q = torch.randn(2, 2, 7, 32)
    pos = torch.tensor([[0, 3, 3, 17, 1000, 2047, 5000], [9, 9, 9, 1, 2, 3, 4]])
    cos, sin = rot(q, pos)
    want, _ = apply_rotary_pos_emb(q, q, cos, sin)
    torch.testing.assert_close(apply_rope(q, pos, 1e6), want, atol=1e-6, rtol=0)


def test_block_output_invariant_to_position_shift():
    torch.manual_seed(0)
    blk = GatedCrossAttentionBlock(32, 32, 2, 16, 64, rope_base=1e4, gate_init=0.7)
    x, media = torch.randn(2, 5, 32), torch.randn(2, 9, 32)
    tp = torch.randint(0, 50, (2, 5))
    mp = torch.randint(0, 50, (2, 9))
    out = blk(x, media, tp, mp)
    for c in (1, 13, 400):
        torch.testing.assert_close(blk(x, media, tp + c, mp + c), out, atol=1e-5, rtol=0)


@pytest.mark.parametrize("d", [2, 8, 64, 128])
def test_decay_bound_at_zero_and_brute_force(d):
    assert rope_decay_bound(0.0, d, 1e6) == pytest.approx((d / 2 + 1) / 2, abs=1e-12)
    for delta in (0.0, 1.0, 7.5, 148.5, 1e4):
        theta = [1e6 ** (-2 * k / d) for k in range(d // 2)]
        brute = 0.0
        for j in range(1, d // 2 + 1):
            s = sum(complex(np.cos(delta * theta[k]), np.sin(delta * theta[k])) for k in range(j))
            brute += abs(s)
        brute *= 2 / d
        assert abs(float(rope_decay_bound(delta, d, 1e6)) - brute) < 1e-10


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: apply_rope(torch.randn(1, 1, 3, 4), torch.zeros(1, 3)), TypeError, "pos"),
        (
            lambda: apply_rope(torch.randn(1, 1, 3, 4), torch.zeros(1, 2, dtype=torch.long)),
            ValueError,
            "pos",
        ),
        (
            lambda: apply_rope(torch.randn(1, 1, 3, 5), torch.zeros(1, 3, dtype=torch.long)),
            ValueError,
            "head_dim",
        ),
        (
            lambda: apply_rope(torch.randn(1, 3, 4), torch.zeros(1, 3, dtype=torch.long)),
            ValueError,
            "x",
        ),
        (
            lambda: apply_rope(
                torch.randn(1, 1, 3, 4), torch.zeros(1, 3, dtype=torch.long), base=float("nan")
            ),
            ValueError,
            "base",
        ),
        (lambda: rope_decay_bound([], 8), ValueError, "delta"),
        (lambda: rope_decay_bound(float("inf"), 8), ValueError, "delta"),
        (lambda: rope_decay_bound(1.0, 7), ValueError, "head_dim"),
        (lambda: rope_decay_bound(1.0, 8, base=0.5), ValueError, "base"),
    ],
)
def test_rope_rejects_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
