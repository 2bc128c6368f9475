"""Training recipe helpers (spec test 10) and the attention-allocation diagnostic."""

import math

import pytest
import torch
from _helpers import tiny_vlm
from comemo_lvlm import (
    STAGES,
    attention_allocation,
    freeze_for_stage,
    len2weight,
    packed_media_mask,
)


def _groups(model):
    out = {}
    for name, p in model.named_parameters():
        if name.startswith("vision_model."):
            key = "vit"
        elif name.startswith("projector."):
            key = "projector"
        elif ".comemo_blocks." in f".{name}":
            key = "gate" if name.endswith("_gate") else "memory"
        else:
            key = "llm"
        out.setdefault(key, set()).add(p.requires_grad)
    return out


@pytest.mark.parametrize(
    ("stage", "want"),
    [
        (
            1,
            {"vit": {False}, "llm": {False}, "projector": {True}, "memory": {True}, "gate": {True}},
        ),
        (
            2,
            {
                "vit": {False},
                "llm": {False},
                "projector": {True},
                "memory": {True},
                "gate": {False},
            },
        ),
        (3, {"vit": {True}, "llm": {True}, "projector": {True}, "memory": {True}, "gate": {True}}),
    ],
)
def test_freeze_for_stage_sets_exactly_the_expected_flags(stage, want):
    model, _ = tiny_vlm()
    assert freeze_for_stage(model, stage) is model
    assert _groups(model) == want


def test_stages_hyperparameters_from_shell_scripts():
    assert STAGES[1]["lr"] == STAGES[2]["lr"] == 1e-4
    assert STAGES[3]["lr"] == 4e-5
    assert STAGES[3]["scheduler"] == "cosine"
    assert STAGES[1]["max_steps"] == 10_000
    assert all(s["weight_decay"] == 0.01 for s in STAGES.values())


@pytest.mark.parametrize("x", [1, 4, 9, 100, 16384])
def test_len2weight_closed_forms(x):
    assert len2weight(x, "token") == 1.0
    assert len2weight(x, "sample") == pytest.approx(1 / x, abs=0)
    assert len2weight(x, "square") == pytest.approx(1 / math.sqrt(x), abs=0)
    for mode in ("token", "sample", "square"):
        assert len2weight(0, mode) == 0.0


def test_packed_media_mask_is_block_diagonal():
    m = packed_media_mask([2, 3], [1, 2])
    want = torch.tensor([[1, 0, 0], [1, 0, 0], [0, 1, 1], [0, 1, 1], [0, 1, 1]], dtype=torch.bool)
    assert torch.equal(m, want)


def test_attention_allocation_sums_segments():
    attn = torch.softmax(torch.randn(2, 3, 6, 6), -1)
    out = attention_allocation(attn, {"a": (0, 2), "b": (2, 5), "c": (5, 6)})
    total = out["a"] + out["b"] + out["c"]
    torch.testing.assert_close(total, torch.ones(2, 3), atol=1e-6, rtol=0)
    torch.testing.assert_close(out["b"], attn[:, :, -1, 2:5].sum(-1))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: freeze_for_stage(tiny_vlm()[0], 4), "stage"),
        (lambda: freeze_for_stage(torch.nn.Linear(2, 2), 1), "vision_model"),
        (lambda: len2weight(-1), "x"),
        (lambda: len2weight(3, "cube"), "mode"),
        (lambda: packed_media_mask([1], [1, 2]), "sample_lens"),
        (lambda: packed_media_mask([-1], [1]), "non-negative"),
        (lambda: attention_allocation(torch.ones(2, 2), {"a": (0, 1)}), "attn"),
        (
            lambda: attention_allocation(torch.full((1, 1, 2, 2), float("nan")), {"a": (0, 1)}),
            "finite",
        ),
        (lambda: attention_allocation(torch.ones(1, 1, 2, 2) / 2, {"a": (0, 3)}), "segments"),
        (lambda: attention_allocation(torch.ones(1, 1, 2, 2) / 2, {}), "segments"),
    ],
)
def test_training_helpers_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
