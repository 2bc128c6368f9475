"""Whole-model behaviour: cached decode == recompute (spec test 8), Llama/Qwen2 + round trip
(spec test 11), projector, prompt expansion, and bad input."""

import pytest
import torch
from _helpers import IMG_CTX, IMG_END, IMG_START, T, pixels, prompt, tiny_llama, tiny_vlm
from comemo_lvlm import PixelShuffleProjector, TileGrid, attach_memory_path, expand_image_tokens


def _recompute(model, ids, px, grids, am, n):
    """Greedy decoding by a full forward over the whole sequence at every step."""
    cur, cur_am, logits = ids, am, []
    for _ in range(n):
        lg = model(cur, px, grids, attention_mask=cur_am).logits[:, -1]
        logits.append(lg)
        cur = torch.cat([cur, lg.argmax(-1)[:, None]], 1)
        cur_am = torch.cat([cur_am, torch.ones_like(cur_am[:, :1])], 1)
    return cur[:, ids.shape[1] :], logits


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("layout", ["exact", "comemo_compat"])
def test_cached_generate_equals_recompute_under_dhr(arch, layout):
    model, _ = tiny_vlm(every_n=2, gate=0.5, arch=arch)
    model.layout = layout
    g0, g1 = [TileGrid(2, 2), TileGrid(1, 1)], [TileGrid(3, 1)]
    a, b = prompt(g0, seed=3), prompt(g1, seed=4)
    pad = len(a) - len(b)
    ids = torch.stack([a, torch.cat([torch.zeros(pad, dtype=torch.long), b])])
    am = torch.ones_like(ids)
    am[1, :pad] = 0
    px = torch.cat([pixels(g0, 3), pixels(g1, 4)])
    with torch.no_grad():
        res = model.generate(ids, px, [g0, g1], attention_mask=am, max_new_tokens=8)
        toks, logits = _recompute(model, ids, px, [g0, g1], am, 8)
    assert torch.equal(res.sequences, toks)
    for s, r in zip(res.scores, logits, strict=True):
        torch.testing.assert_close(s, r.float(), atol=1e-4, rtol=0)


def test_generate_eos_and_sampling_are_reproducible():
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    grids = [TileGrid(2, 1)]
    ids = prompt(grids)[None]
    greedy = model.generate(ids, pixels(grids), [grids], max_new_tokens=4)
    eos = int(greedy.sequences[0, 1])
    res = model.generate(
        ids, pixels(grids), [grids], max_new_tokens=6, eos_token_id=eos, pad_token_id=0
    )
    stop = (res.sequences[0] == eos).nonzero()[0, 0]
    assert (res.sequences[0, stop + 1 :] == 0).all()
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    s1 = model.generate(
        ids, pixels(grids), [grids], max_new_tokens=5, do_sample=True, top_k=5, generator=g1
    )
    s2 = model.generate(
        ids, pixels(grids), [grids], max_new_tokens=5, do_sample=True, top_k=5, generator=g2
    )
    assert torch.equal(s1.sequences, s2.sequences)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_save_reload_round_trip(arch, tmp_path):
    model, path = tiny_vlm(every_n=2, gate=0.3, arch=arch)
    with torch.no_grad():
        for p in path.blocks.parameters():
            p.add_(0.01 * torch.randn_like(p))
    grids = [TileGrid(2, 2)]
    ids = prompt(grids)[None]
    with torch.no_grad():
        want = model(ids, pixels(grids), [grids]).logits
    path.detach()
    model.language_model.save_pretrained(tmp_path / "lm")
    torch.save(path.blocks.state_dict(), tmp_path / "blocks.pt")
    torch.save(model.projector.state_dict(), tmp_path / "proj.pt")
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(tmp_path / "lm").eval()
    new_path = attach_memory_path(lm, every_n=2)
    new_path.blocks.load_state_dict(torch.load(tmp_path / "blocks.pt"))
    model2, _ = tiny_vlm(every_n=2, arch=arch)
    model2.language_model = lm
    model2.vision_model = model.vision_model
    model2.projector.load_state_dict(torch.load(tmp_path / "proj.pt"))
    with torch.no_grad():
        got = model2(ids, pixels(grids), [grids]).logits
    torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


def test_pixel_shuffle_groups_2x2_neighbours():
    proj = PixelShuffleProjector(3, 8)
    x = torch.arange(2 * 16 * 3, dtype=torch.float32).reshape(2, 16, 3)
    grid = x.reshape(2, 4, 4, 3)
    captured = {}
    proj.mlp[0].register_forward_hook(lambda m, i, o: captured.setdefault("in", i[0]))
    out = proj(x)
    assert out.shape == (2, 4, 8)
    got = captured["in"]
    for n in range(2):
        for ty in range(2):
            for tx in range(2):
                want = torch.cat(
                    [grid[n, 2 * ty + dy, 2 * tx + dx] for dy in range(2) for dx in range(2)]
                )
                assert torch.equal(got[n, ty * 2 + tx], want)


def test_expand_image_tokens_counts():
    s = expand_image_tokens("a <image> b <image>", [TileGrid(2, 1), (1, 1)], T=2)
    assert s.count("<IMG_CONTEXT>") == (3 + 1) * 4
    assert s.count("<img>") == 2
    with pytest.raises(ValueError, match="placeholders"):
        expand_image_tokens("a <image>", [], T=2)


def test_model_and_generate_reject_bad_input():
    model, _ = tiny_vlm()
    grids = [TileGrid(1, 1)]
    ids = prompt(grids)[None]
    with pytest.raises(ValueError, match="pixel_values is required"):
        model(ids, None, [grids])
    with pytest.raises(ValueError, match="pixel_values has 2 tiles"):
        model(ids, pixels([TileGrid(2, 1)])[:2], [grids])
    with pytest.raises(TypeError, match="input_ids"):
        model(ids.float(), pixels(grids), [grids])
    with pytest.raises(TypeError, match="pixel_values"):
        model(ids, pixels(grids).to(torch.uint8), [grids])
    with pytest.raises(TypeError, match=r"grids\[0\]\[0\]"):
        model(ids, pixels(grids), grids)  # a flat list instead of one list per row
    am = torch.ones_like(ids)
    am[0, -1] = 0
    with pytest.raises(ValueError, match="left padding"):
        model.generate(ids, pixels(grids), [grids], attention_mask=am)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(ids, pixels(grids), [grids], max_new_tokens=0)
    with pytest.raises(ValueError, match="temperature"):
        model.generate(ids, pixels(grids), [grids], temperature=0.0)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(ids, pixels(grids), [grids], top_k=0)
    with pytest.raises(ValueError, match="scale"):
        PixelShuffleProjector(3, 8, scale=0.3)
    with pytest.raises(ValueError, match="square"):
        PixelShuffleProjector(3, 8)(torch.randn(1, 15, 3))
    from comemo_lvlm import CoMemoVLM

    with pytest.raises(ValueError, match="position_mode"):
        CoMemoVLM(
            None,
            None,
            tiny_llama(),
            image_token_id=IMG_CTX,
            img_start_id=IMG_START,
            img_end_id=IMG_END,
            position_mode="x",
        )
    with pytest.raises(ValueError, match="differ"):
        CoMemoVLM(None, None, tiny_llama(), image_token_id=1, img_start_id=1, img_end_id=2)
    assert T == 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (DECISIONS 13)")
def test_runs_on_cuda_where_the_model_is():
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    model = model.cuda()
    grids = [TileGrid(2, 1)]
    ids = prompt(grids)[None].cuda()
    with torch.no_grad():
        res = model.generate(ids, pixels(grids).cuda(), [grids], max_new_tokens=4)
        toks, _ = _recompute(model, ids, pixels(grids).cuda(), [grids], torch.ones_like(ids), 4)
    assert res.sequences.device.type == "cuda"
    assert torch.equal(res.sequences, toks)


def test_official_compat_decode_drifts_from_recompute():
    # regression for the official decode: memory queries rotated by the uncompressed length
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    grids = [TileGrid(3, 2)]
    ids = prompt(grids)[None]
    with torch.no_grad():
        ours = model.generate(ids, pixels(grids), [grids], max_new_tokens=4)
        official = model.generate(ids, pixels(grids), [grids], max_new_tokens=4, compat_decode=True)
        _, ref = _recompute(model, ids, pixels(grids), [grids], torch.ones_like(ids), 4)
    torch.testing.assert_close(ours.scores[1], ref[1], atol=1e-4, rtol=0)
    assert (official.scores[1] - ref[1]).abs().max() > 1e-3
