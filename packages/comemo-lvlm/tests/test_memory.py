"""Memory path (spec tests 6, 7): gate 0 is the identity, masking, no NaN, hooks keep keys."""

import pytest
import torch
from _helpers import IMG_END, IMG_START, T, pixels, prompt, tiny_llama, tiny_vlm
from comemo_lvlm import GatedCrossAttentionBlock, TileGrid, attach_memory_path


def _block(gate=0.5, d_media=32):
    torch.manual_seed(0)
    return GatedCrossAttentionBlock(32, d_media, 2, 16, 64, rope_base=1e6, gate_init=gate)


def test_gate_zero_logits_bit_identical_to_base():
    model, path = tiny_vlm(every_n=2)
    grids = [TileGrid(2, 2), TileGrid(1, 1)]
    ids = prompt(grids)[None]
    with torch.no_grad():
        wrapped = model(ids, pixels(grids), [grids]).logits
        path.detach()
        base = model(ids, pixels(grids), [grids]).logits
    assert torch.equal(wrapped, base)


def test_state_dict_keys_unchanged_and_detach_restores():
    lm = tiny_llama()
    keys = set(lm.state_dict())
    path = attach_memory_path(lm, every_n=2)
    new = set(lm.state_dict())
    assert keys <= new
    assert all(k.startswith("comemo_blocks.") for k in new - keys)
    assert path.layer_indices == (1, 3)
    path.detach()
    assert set(lm.state_dict()) == keys


def test_only_gates_get_gradient_at_init():
    model, path = tiny_vlm(every_n=2)
    model.train()
    grids = [TileGrid(2, 1)]
    ids = prompt(grids)[None]
    out = model(ids, pixels(grids), [grids], labels=ids)
    out.loss.backward()
    for name, p in path.blocks.named_parameters():
        nonzero = p.grad is not None and bool(p.grad.abs().sum() > 0)
        assert nonzero == name.endswith("_gate"), name


def test_fully_masked_rows_give_zero_update_and_no_nan():
    blk = _block()
    x = torch.randn(2, 4, 32, requires_grad=True)
    media = torch.randn(2, 6, 32)
    mask = torch.ones(2, 4, 6, dtype=torch.bool)
    mask[0, 1] = False
    mask[1] = False
    pos_t, pos_m = torch.arange(4).expand(2, 4), torch.arange(6).expand(2, 6)
    out = blk(x, media, pos_t, pos_m, mask)
    assert torch.isfinite(out).all()
    assert torch.equal(out[0, 1], x[0, 1])
    assert torch.equal(out[1], x[1])
    assert not torch.equal(out[0, 0], x[0, 0])
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in blk.parameters() if p.grad is not None)


def test_masked_media_do_not_influence_output():
    blk = _block()
    x, media = torch.randn(1, 3, 32), torch.randn(1, 6, 32)
    mask = torch.zeros(1, 3, 6, dtype=torch.bool)
    mask[..., :4] = True
    tp, mp = torch.arange(3)[None], torch.arange(6)[None]
    a = blk(x, media, tp, mp, mask)
    media2 = media.clone()
    media2[:, 4:] += 10
    torch.testing.assert_close(blk(x, media2, tp, mp, mask), a, atol=0, rtol=0)
    # equals attending only to the visible tokens
    torch.testing.assert_close(blk(x, media[:, :4], tp, mp[:, :4]), a, atol=1e-6, rtol=0)


def test_preceding_visibility_hides_later_images_in_full_model():
    model, _ = tiny_vlm(every_n=2, gate=0.5, media_visibility="preceding")
    grids = [TileGrid(1, 1), TileGrid(1, 1)]
    ids = prompt(grids, pre=4, mid=3, post=3)[None]
    px = pixels(grids)
    px2 = px.clone()
    px2[1] += 1.0  # change the second image only
    s2 = (ids[0] == IMG_START).nonzero()[1, 0].item()
    with torch.no_grad():
        a = model(ids, px, [grids]).logits
        b = model(ids, px2, [grids]).logits
    torch.testing.assert_close(a[:, :s2], b[:, :s2], atol=0, rtol=0)
    assert not torch.allclose(a[:, -1], b[:, -1])


def test_packed_equals_per_sample_forwards():
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    g1, g2 = [TileGrid(2, 1)], [TileGrid(1, 1), TileGrid(1, 1)]
    a, b = prompt(g1, seed=1), prompt(g2, seed=2)
    pa, pb = pixels(g1, 1), pixels(g2, 2)
    with torch.no_grad():
        la = model(a[None], pa, [g1]).logits[0]
        lb = model(b[None], pb, [g2]).logits[0]
        packed = model(
            torch.cat([a, b])[None], torch.cat([pa, pb]), [g1 + g2], sample_lens=[[len(a), len(b)]]
        ).logits[0]
    torch.testing.assert_close(packed[: len(a)], la, atol=1e-5, rtol=0)
    torch.testing.assert_close(packed[len(a) :], lb, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("kw", "exc", "match"),
    [
        ({"media": torch.randn(1, 6, 16)}, ValueError, "d_media"),
        ({"media": torch.full((1, 6, 32), float("nan"))}, ValueError, "NaN"),
        ({"x": torch.randn(1, 3, 31)}, ValueError, "x"),
        ({"text_pos": torch.zeros(1, 3)}, TypeError, "text_pos"),
        ({"media_pos": torch.zeros(1, 6)}, TypeError, "media_pos"),
        ({"media_pos": torch.zeros(1, 5, dtype=torch.long)}, ValueError, "media_pos"),
        ({"media_mask": torch.ones(1, 3, 6)}, ValueError, "media_mask"),
    ],
)
def test_block_rejects_bad_input(kw, exc, match):
    blk = _block()
    args = dict(
        x=torch.randn(1, 3, 32),
        media=torch.randn(1, 6, 32),
        text_pos=torch.zeros(1, 3, dtype=torch.long),
        media_pos=torch.zeros(1, 6, dtype=torch.long),
        media_mask=None,
    )
    args.update(kw)
    with pytest.raises(exc, match=match):
        blk(**args)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"every_n": 5}, "every_n"),
        ({"every_n": 0}, "every_n"),
        ({"media_visibility": "later"}, "media_visibility"),
        ({"heads": 4}, "block_overrides"),
        ({"head_dim": 7}, "head_dim"),
    ],
)
def test_attach_rejects_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        attach_memory_path(tiny_llama(), **kw)


def test_attach_twice_and_constructor_errors():
    lm = tiny_llama()
    attach_memory_path(lm, every_n=2)
    with pytest.raises(ValueError, match="already"):
        attach_memory_path(lm, every_n=2)
    with pytest.raises(ValueError, match="n_heads"):
        GatedCrossAttentionBlock(32, 32, 0, 16, 64, rope_base=1e4)
    with pytest.raises(ValueError, match="rope_base"):
        GatedCrossAttentionBlock(32, 32, 2, 16, 64, rope_base=float("inf"))


def test_image_context_count_mismatch_names_both_numbers():
    model, _ = tiny_vlm()
    grids = [TileGrid(2, 1)]
    ids = prompt(grids)[None]
    with pytest.raises(ValueError, match=rf"{3 * T * T}.*{5 * T * T}"):
        model(ids, pixels([TileGrid(2, 2)]), [[TileGrid(2, 2)]])
    bad_ids = ids.clone()
    bad_ids[0, 2] = 61  # an extra <IMG_CONTEXT> outside the image
    with pytest.raises(ValueError, match=r"49 <IMG_CONTEXT>.*48"):
        model(bad_ids, pixels(grids), [grids])
    with pytest.raises(ValueError, match="pixel_values"):
        model(ids, pixels(grids).fill_(float("nan")), [grids])
    assert IMG_END == 63
