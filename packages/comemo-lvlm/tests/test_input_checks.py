"""Fixes of a new user's trial (trial 18): state_dict keys, clear errors for bad inputs,
TileGrid validation and the non-cubic candidate enumeration."""

import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers import IMG_END, IMG_START, pixels, prompt, tiny_llama, tiny_vlm
from comemo_lvlm import (
    CoMemoVLM,
    PixelShuffleProjector,
    RMSNorm,
    TileGrid,
    attach_memory_path,
    attention_allocation,
    build_position_ids,
    candidate_grids,
    closest_grid,
    expand_image_tokens,
    packed_media_mask,
    rope_decay_bound,
)
from comemo_lvlm.cli import main
from comemo_lvlm.tiling import MAX_TILES
from PIL import Image

README = Path(__file__).resolve().parents[1] / "README.md"


# M1: what the README says about state_dict ------------------------------------------------


def test_state_dict_keeps_base_keys_adds_blocks_and_base_checkpoints_load_as_documented():
    lm = tiny_llama()
    base = {k: v.clone() for k, v in lm.state_dict().items()}
    path = attach_memory_path(lm, every_n=2)
    sd = lm.state_dict()
    assert all(torch.equal(sd[k], v) for k, v in base.items())  # names and values kept
    added = set(sd) - set(base)
    assert added
    assert all(k.startswith("comemo_blocks.") for k in added)
    with pytest.raises(RuntimeError, match="comemo_blocks"):
        lm.load_state_dict(base)  # strict load of a base checkpoint after attaching
    res = lm.load_state_dict(base, strict=False)
    assert set(res.missing_keys) == added
    assert res.unexpected_keys == []
    comemo_sd = {k: v.clone() for k, v in lm.state_dict().items()}
    path.detach()
    assert set(lm.state_dict()) == set(base)
    # a checkpoint saved after attaching loads strictly with the same every_n attached
    lm3 = tiny_llama(seed=2)
    attach_memory_path(lm3, every_n=2)
    lm3.load_state_dict(comemo_sd)
    # loading before attaching is strict
    lm2 = tiny_llama(seed=1)
    lm2.load_state_dict(base)
    attach_memory_path(lm2, every_n=2)
    assert all(torch.equal(lm2.state_dict()[k], v) for k, v in base.items())
    text = " ".join(README.read_text().split())
    assert "keys do not change" not in text
    assert "adds the blocks' `comemo_blocks.<layer>.*` keys" in text
    assert "`lm.load_state_dict(base_sd, strict=False)`" in text


# M2: --heatmap without matplotlib -------------------------------------------------------


def test_heatmap_without_matplotlib_is_a_usage_error(tmp_path, run_main, monkeypatch):
    img = tmp_path / "wide.png"
    Image.fromarray(np.zeros((40, 60, 3), np.uint8)).save(img)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    res = run_main(main, "positions", img, "--heatmap", tmp_path / "h.png")
    assert res.code == 2
    assert "--heatmap" in res.err
    assert "comemo-lvlm[plot]" in res.err
    assert "Traceback" not in res.err
    assert not (tmp_path / "h.png").exists()


# M3: expand_image_tokens validates like the rest of the API -------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        (dict(grids=[(0, 1)]), ValueError, "grids[0].cols"),
        (dict(grids=[(1, -2)]), ValueError, "grids[0].rows"),
        (dict(grids=[(1.5, 1)]), TypeError, "grids[0].cols"),
        (dict(grids=[(True, 1)]), TypeError, "grids[0].cols"),
        (dict(grids=[(1, 1)], T=0), ValueError, "T"),
        (dict(grids=[(1, 1)], T=2.0), TypeError, "T"),
        (dict(grids=None), TypeError, "grids"),
        (dict(prompt=None, grids=[]), TypeError, "prompt"),
        (dict(grids=[(1, 1)], placeholder=""), ValueError, "placeholder"),
        (dict(grids=[(1, 1)], context=None), TypeError, "context"),
        (dict(grids=[(1, 1), (1, 1)]), ValueError, "placeholders"),
    ],
)
def test_expand_image_tokens_bad_inputs(kwargs, exc, name):
    kw = dict(prompt="a <image> b", T=2)
    kw.update(kwargs)
    with pytest.raises(exc, match=__import__("re").escape(name)):
        expand_image_tokens(kw.pop("prompt"), kw.pop("grids"), **kw)


def test_expand_image_tokens_still_expands():
    out = expand_image_tokens("a <image> b", [(2, 1)], T=2, context="C")
    assert out == "a <img>" + "C" * 12 + "</img> b"
    assert expand_image_tokens("x", []) == "x"


# M4: dtype errors are clear, or the input is cast -----------------------------------------


def test_projector_casts_float_inputs_and_refuses_integers():
    torch.manual_seed(0)
    proj = PixelShuffleProjector(8, 16)
    x = torch.randn(2, 16, 8)
    ref = proj(x)
    assert proj(x.double()).dtype == torch.float32
    torch.testing.assert_close(proj(x.double()), ref)
    torch.testing.assert_close(proj(x.half()), ref, atol=1e-2, rtol=1e-2)
    with pytest.raises(TypeError, match="x must be a float tensor"):
        proj(x.long())


def test_condition_casts_float_media_and_refuses_integer_media():
    lm = tiny_llama()
    path = attach_memory_path(lm, every_n=2, gate_init=0.5)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    tp = torch.arange(5)[None]
    mp = torch.arange(6)[None]
    media = torch.randn(1, 6, 64)

    def run(m):
        with path.condition(m, tp, mp), torch.no_grad():
            return lm(input_ids=ids, position_ids=tp, attention_mask=torch.ones_like(ids)).logits

    ref = run(media)
    torch.testing.assert_close(run(media.double()), ref)
    torch.testing.assert_close(run(media.half()), ref, atol=2e-2, rtol=2e-2)
    with pytest.raises(TypeError, match="media must be a float tensor"):
        run(media.long())


def test_packed_media_mask_refuses_non_integer_lengths():
    with pytest.raises(TypeError, match=r"sample_lens\[0\]"):
        packed_media_mask([3.5], [1])
    with pytest.raises(TypeError, match=r"media_lens\[1\]"):
        packed_media_mask([1, 2], [1, "2"])
    with pytest.raises(TypeError, match="sample_lens"):
        packed_media_mask([True], [1])
    got = packed_media_mask([np.int64(2), torch.tensor(1)], [1, 2])
    assert got.tolist() == [[True, False, False], [True, False, False], [False, True, True]]


def test_forward_names_pixel_values_for_wrong_channels_and_overflow():
    model, _ = tiny_vlm(every_n=2)
    grids = [TileGrid(1, 1)]
    ids = prompt(grids)[None]
    px = pixels(grids)
    with pytest.raises(ValueError, match="pixel_values must have 3 channels"):
        model(ids, px[:, :1], [grids])
    with pytest.raises(ValueError, match="pixel_values"):
        model(ids, px * 1e30, [grids])


# L5: TileGrid validates its fields --------------------------------------------------------


def test_tilegrid_validates_and_converts():
    with pytest.raises(ValueError, match="cols must be >= 1"):
        TileGrid(-1, 2)
    with pytest.raises(ValueError, match="rows must be >= 1"):
        TileGrid(2, 0)
    with pytest.raises(TypeError, match="cols must be an int"):
        TileGrid(1.5, 2)
    with pytest.raises(TypeError, match="cols must be an int"):
        TileGrid(True, 2)
    g = TileGrid(np.int64(3), 2)
    assert g == (3, 2)
    assert type(g.cols) is int
    assert g.n_images == 7
    assert pickle.loads(pickle.dumps(g)) == g
    assert TileGrid(*g) == g
    assert g._replace(rows=1) == (3, 1)


# L6: candidate enumeration is not cubic; absurd max_num is refused -------------------------


def _official_candidates(min_num, max_num):
    targets = set(
        (i, j)
        for n in range(min_num, max_num + 1)
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if min_num <= i * j <= max_num
    )
    return sorted(targets, key=lambda x: x[0] * x[1])


def test_candidate_grids_order_equals_official_loop():
    for max_num in range(1, 41):
        for min_num in range(1, max_num + 1):
            got = [tuple(g) for g in candidate_grids(min_num, max_num)]
            assert got == _official_candidates(min_num, max_num), (min_num, max_num)
    for min_num in (1, 5, 60):
        got = [tuple(g) for g in candidate_grids(min_num, 120)]
        assert got == _official_candidates(min_num, 120)


def test_candidate_grids_large_max_num_is_fast_and_absurd_is_refused():
    t0 = time.perf_counter()
    grids = candidate_grids(1, MAX_TILES)
    closest_grid(1000, 10, max_num=MAX_TILES)
    assert time.perf_counter() - t0 < 30  # the cubic loop took hours here
    assert len(grids) == sum(MAX_TILES // x for x in range(1, MAX_TILES + 1))
    with pytest.raises(ValueError, match="max_num must be <= 10000"):
        candidate_grids(1, MAX_TILES + 1)
    with pytest.raises(ValueError, match="max_num"):
        closest_grid(100, 100, max_num=10**9)


def test_closest_grid_accepts_numpy_ints():
    assert closest_grid(np.int64(900), 300) == closest_grid(900, 300) == (3, 1)


# L7: loose type checks -------------------------------------------------------------------


def _ids_one_image():
    return torch.tensor([[5, IMG_START] + [1] * 16 + [IMG_END, 6]])


def test_build_position_ids_refuses_float_ids_and_lengths():
    ids = _ids_one_image()
    kw = dict(img_start_id=IMG_START, img_end_id=IMG_END, T=4)
    with pytest.raises(TypeError, match="img_start_id must be an int"):
        build_position_ids(ids, [[(1, 1)]], **{**kw, "img_start_id": float(IMG_START)})
    with pytest.raises(TypeError, match=r"sample_lens\[0\]\[0\]"):
        build_position_ids(ids, [[(1, 1)]], sample_lens=[[1.0, 19.0]], **kw)
    with pytest.raises(ValueError, match="img_start_id and img_end_id must differ"):
        build_position_ids(ids, [[(1, 1)]], **{**kw, "img_end_id": IMG_START})
    plan = build_position_ids(ids, [[(1, 1)]], sample_lens=[[np.int64(1), 19]], **kw)
    assert plan.position_ids.shape == (1, 20)


def test_rope_decay_bound_attention_allocation_rmsnorm_types():
    with pytest.raises(TypeError, match="delta"):
        rope_decay_bound("1")
    assert rope_decay_bound(np.float32(0.0), head_dim=4) == pytest.approx(1.5)
    with pytest.raises(TypeError, match="attn must be a float tensor"):
        attention_allocation(torch.ones(1, 1, 2, 2, dtype=torch.long), {"a": (0, 1)})
    with pytest.raises(ValueError, match="dim must be a positive int"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(4, eps=float("nan"))


def test_generate_refuses_bad_eos_and_pad_ids():
    model, _ = tiny_vlm(every_n=2)
    ids = torch.tensor([[5, 6, 7]])
    with pytest.raises(ValueError, match="eos_token_id must be < the vocabulary size 64"):
        model.generate(ids, max_new_tokens=2, eos_token_id=1000)
    with pytest.raises(ValueError, match="pad_token_id must be a non-negative int"):
        model.generate(ids, max_new_tokens=2, pad_token_id=-1)
    assert model.generate(ids, max_new_tokens=2, eos_token_id=3).sequences.shape[0] == 1


def test_comemovlm_checks_token_ids_and_T():
    model, _ = tiny_vlm(every_n=2)
    parts = (model.vision_model, model.projector, model.language_model)
    special = dict(image_token_id=61, img_start_id=62, img_end_id=63)
    with pytest.raises(TypeError, match="T must be an int"):
        CoMemoVLM(*parts, **special, T=4.0)
    with pytest.raises(ValueError, match="img_start_id must be a non-negative int"):
        CoMemoVLM(*parts, **{**special, "img_start_id": 62.0})


# L8: an empty tile range is blamed on the bounds --------------------------------------------


def test_min_tiles_above_max_tiles_names_the_bounds():
    ids = _ids_one_image()
    with pytest.raises(ValueError, match=r"max_tiles \(2\) must be >= min_tiles \(3\)"):
        build_position_ids(
            ids,
            [[(1, 1)]],
            img_start_id=IMG_START,
            img_end_id=IMG_END,
            T=4,
            min_tiles=3,
            max_tiles=2,
        )
