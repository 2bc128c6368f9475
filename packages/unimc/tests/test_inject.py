import pytest
import torch
from unimc import (
    ConditionTokens,
    GatedConditionAttention,
    TinyDiT,
    condition_dropout,
    inject_conditions,
)


def _tokens(tokenizer, conds, seed=0):
    return tokenizer(*conds(seed=seed))


def test_gated_mode_is_identity_at_init_bit_for_bit(tokenizer, conds, live_dit):
    dit = live_dit(0, depth=3)
    x, t = torch.randn(2, 3, 16, 16), torch.rand(2)
    base = dit(x, t)
    h = inject_conditions(dit, d_cond=32)
    with h.condition(_tokens(tokenizer, conds)):
        assert torch.equal(dit(x, t), base)


def test_gate_zero_only_gates_get_gradients(tokenizer, conds, live_dit):
    dit = live_dit(0, depth=2)
    h = inject_conditions(dit, d_cond=32)  # backbone frozen
    x, t = torch.randn(2, 3, 16, 16), torch.rand(2)
    with h.condition(_tokens(tokenizer, conds)):
        dit(x, t).pow(2).sum().backward()
    for layer in h.layers:
        for name, p in layer.named_parameters():
            if name in ("gamma", "beta"):
                assert p.grad is not None, name
                assert p.grad.abs() > 0, name
            else:
                assert p.grad is None or torch.count_nonzero(p.grad) == 0, name
    for p in tokenizer.parameters():
        assert p.grad is None or torch.count_nonzero(p.grad) == 0
    assert all(p.grad is None for n, p in dit.named_parameters() if "fuser" not in n)


def test_joint_mode_is_not_identity_at_init(tokenizer, conds, live_dit):
    dit = live_dit(0, depth=2)
    x, t = torch.randn(2, 3, 16, 16), torch.rand(2)
    base = dit(x, t)
    h = inject_conditions(dit, d_cond=32, mode="joint")
    with h.condition(_tokens(tokenizer, conds)):
        assert not torch.allclose(dit(x, t), base)
    h.remove()
    assert torch.equal(dit(x, t), base)


def test_module_list_post_block_hook(tokenizer, conds):
    torch.manual_seed(0)
    blocks = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(2))

    def run(z):
        for b in blocks:
            z = b(z)
        return z

    z = torch.randn(2, 5, 32)
    base = run(z)
    h = inject_conditions(blocks, d_cond=32, d_model=32, n_heads=4)
    with h.condition(_tokens(tokenizer, conds)):
        assert torch.equal(run(z), base)
        h.layers[0].gamma.data.fill_(1.0)
        assert not torch.allclose(run(z), base)
    assert torch.equal(run(z), base)  # no condition active: hooks pass through
    h.remove()
    assert not hasattr(blocks[0], "unimc_fuser")


def _tiny_diffusers_dit():
    tr = pytest.importorskip("diffusers.models.transformers.dit_transformer_2d")
    torch.manual_seed(0)
    return tr.DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=8,
        in_channels=4,
        num_layers=2,
        sample_size=8,
        patch_size=2,
        norm_num_groups=1,
    ).eval()  # fmt: skip  (train mode drops class labels at random)


def test_inject_into_diffusers_dit_identity_and_remove(tokenizer, conds):
    m = _tiny_diffusers_dit()
    lat, ts, cl = torch.randn(2, 4, 8, 8), torch.tensor([1, 10]), torch.tensor([0, 1])
    state = {k: v.clone() for k, v in m.state_dict().items()}
    base = m(lat, timestep=ts, class_labels=cl).sample
    h = inject_conditions(m, d_cond=32)
    assert all(isinstance(b.fuser, GatedConditionAttention) for b in m.transformer_blocks)
    calls = []
    hooks = [
        b.fuser.register_forward_hook(lambda *a: calls.append(1)) for b in m.transformer_blocks
    ]
    with h.condition(_tokens(tokenizer, conds)):
        out = m(lat, timestep=ts, class_labels=cl).sample
    assert torch.equal(out, base)
    assert len(calls) == 2  # once per block
    for hk in hooks:
        hk.remove()
    for layer in h.layers:
        layer.gamma.data.fill_(0.5)
    with h.condition(_tokens(tokenizer, conds)):
        assert not torch.allclose(m(lat, timestep=ts, class_labels=cl).sample, base)
    h.remove()
    assert not hasattr(m.transformer_blocks[0], "fuser")
    assert all(p.requires_grad for p in m.parameters())
    assert m.state_dict().keys() == state.keys()
    assert torch.equal(m(lat, timestep=ts, class_labels=cl).sample, base)


def test_inject_into_diffusers_pixart_identity(tokenizer, conds):
    tr = pytest.importorskip("diffusers.models.transformers.pixart_transformer_2d")
    torch.manual_seed(0)
    m = tr.PixArtTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
        num_layers=2, cross_attention_dim=16, sample_size=8, patch_size=2,
        caption_channels=12, norm_num_groups=1,
    ).eval()  # fmt: skip
    lat = torch.randn(2, 4, 8, 8)
    enc = torch.randn(2, 5, 12)
    kw = {
        "timestep": torch.tensor([3, 7]),
        "added_cond_kwargs": {"resolution": None, "aspect_ratio": None},
    }
    base = m(lat, encoder_hidden_states=enc, **kw).sample
    h = inject_conditions(m, d_cond=32, blocks=[1])
    with h.condition(_tokens(tokenizer, conds)):
        assert torch.equal(m(lat, encoder_hidden_states=enc, **kw).sample, base)


def test_condition_dropout_masks_whole_samples(tokenizer, conds):
    tok = _tokens(tokenizer, conds)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(condition_dropout(tok, 0.0, g).mask, tok.mask)
    assert not condition_dropout(tok, 1.0, g).mask.any()
    many = ConditionTokens(
        tok.tokens.repeat(500, 1, 1), tok.mask.repeat(500, 1) | True, tok.owner.repeat(500, 1)
    )
    dropped = ~condition_dropout(many, 0.1, g).mask.any(1)
    assert 0.05 < dropped.float().mean() < 0.15


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"mode": "cross"}, ValueError, "mode"),
        ({"d_cond": 0}, ValueError, "d_cond"),
        ({"blocks": [7]}, ValueError, "blocks"),
        ({"blocks": "first"}, ValueError, "blocks"),
        ({"mode": "joint", "dit": "list"}, ValueError, "joint"),
        ({"dit": "linear"}, TypeError, "dit"),
    ],
)
def test_inject_bad_input(kwargs, err, match):
    kw = {"d_cond": 8, **kwargs}
    dit = kw.pop("dit", "tiny")
    model = {
        "tiny": lambda: TinyDiT(image_size=8, patch_size=4, d_model=16, depth=2, n_heads=2),
        "list": lambda: torch.nn.ModuleList([torch.nn.Linear(16, 16)]),
        "linear": lambda: torch.nn.Linear(2, 2),
    }[dit]()
    if dit == "list":
        kw.update(d_model=16, n_heads=2)
    with pytest.raises(err, match=match):
        inject_conditions(model, **kw)


def test_inject_twice_rejected():
    dit = TinyDiT(image_size=8, patch_size=4, d_model=16, depth=1, n_heads=2)
    inject_conditions(dit, d_cond=8, freeze=False)
    with pytest.raises(ValueError, match="already"):
        inject_conditions(dit, d_cond=8, freeze=False)


@pytest.mark.parametrize(
    ("args", "err", "match"),
    [
        ((torch.randn(1, 4, 15), torch.randn(1, 2, 8)), ValueError, "x"),
        ((torch.randn(1, 4, 16), torch.randn(2, 2, 8)), ValueError, "condition tokens"),
        (
            (torch.randn(1, 4, 16), torch.randn(1, 2, 8), torch.ones(1, 3, dtype=torch.bool)),
            ValueError,
            "mask",
        ),
    ],
)
def test_gated_layer_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        GatedConditionAttention(16, 2, 8)(*args)


def test_condition_dropout_bad_p(tokenizer, conds):
    with pytest.raises(ValueError, match="p"):
        condition_dropout(_tokens(tokenizer, conds), 1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_runs_on_cuda(tokenizer, conds):
    dev = torch.device("cuda")
    dit = TinyDiT(image_size=16, patch_size=4, d_model=32, depth=2, n_heads=4).to(dev)
    tokenizer.to(dev)
    x, t = torch.randn(2, 3, 16, 16, device=dev), torch.rand(2, device=dev)
    base = dit(x, t)
    h = inject_conditions(dit, d_cond=32, freeze=False)  # fresh model: zero output layer
    c, b, k, m = (a.to(dev) for a in conds())
    with h.condition(tokenizer(c, b, k, m)):
        assert torch.equal(dit(x, t), base)
