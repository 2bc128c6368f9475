"""Invariants of RoPE-DHR, tiling and RoPE under hypothesis (profiles from icml25_core.testing)."""

import numpy as np
import torch
from comemo_lvlm import (
    TileGrid,
    apply_rope,
    build_position_ids,
    candidate_grids,
    closest_grid,
    image_position_ids,
    rope_decay_bound,
)
from hypothesis import given
from hypothesis import strategies as st

grids = st.builds(TileGrid, st.integers(1, 6), st.integers(1, 6))
S, E, C = 90, 91, 92


@given(grids, st.integers(0, 5000), st.integers(1, 8), st.sampled_from(["exact", "comemo_compat"]))
def test_image_ids_stay_in_the_thumbnail_budget(g, b, T, layout):
    ids = image_position_ids(g, b, T=T, layout=layout).numpy()
    assert ids.size == g.n_images * T * T
    assert ids.min() >= b
    assert ids.max() <= b + T * T - 1
    assert np.array_equal(ids[-T * T :], np.arange(b, b + T * T))  # thumbnail last


@given(grids, st.integers(0, 100), st.integers(1, 8))
def test_exact_layout_hits_every_cell_xy_times(g, b, T):
    ids = image_position_ids(g, b, T=T).numpy()
    tiles = ids[: g.n_tiles * T * T] - b if g.n_tiles > 1 else ids - b
    counts = np.bincount(tiles, minlength=T * T)
    assert (counts == (g.n_tiles if g.n_tiles > 1 else 1)).all()


@given(
    st.lists(grids, min_size=0, max_size=4),
    st.lists(st.integers(0, 5), min_size=5, max_size=5),
    st.integers(0, 6),
    st.integers(1, 4),
)
def test_last_position_and_padding_invariance(gs, texts, pad, T):
    ids = [7] * texts[0]
    for k, g in enumerate(gs):
        ids += [S] + [C] * (g.n_images * T * T) + [E] + [7] * texts[k + 1]
    ids += [7]
    L = len(ids)
    plan = build_position_ids(torch.tensor([ids]), [gs], img_start_id=S, img_end_id=E, T=T)
    pos = plan.position_ids[0]
    assert int(pos[-1]) == L - 1 - T * T * sum(g.n_tiles for g in gs if g.n_tiles > 1)
    padded = torch.tensor([[0] * pad + ids])
    am = torch.tensor([[0] * pad + [1] * L])
    plan_p = build_position_ids(padded, [gs], img_start_id=S, img_end_id=E, T=T, attention_mask=am)
    assert torch.equal(plan_p.position_ids[0, pad:], pos)
    assert torch.equal(plan_p.media_position_ids, plan.media_position_ids)


@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(1, 12))
def test_closest_grid_minimises_ratio_distance(w, h, max_num):
    g = closest_grid(w, h, tile=448, max_num=max_num)
    best = min(abs(w / h - c.cols / c.rows) for c in candidate_grids(1, max_num))
    assert 1 <= g.n_tiles <= max_num
    assert abs(w / h - g.cols / g.rows) == best


@given(st.integers(-50, 50), st.integers(0, 200), st.integers(0, 200))
def test_rope_scores_depend_only_on_relative_position(shift, m, n):
    g = torch.Generator().manual_seed(0)
    q, k = (
        torch.randn(1, 1, 1, 16, generator=g, dtype=torch.float64),
        torch.randn(1, 1, 1, 16, generator=g, dtype=torch.float64),
    )
    a = (
        apply_rope(q, torch.tensor([[m + 50]]), 1e4) * apply_rope(k, torch.tensor([[n + 50]]), 1e4)
    ).sum()
    b = (
        apply_rope(q, torch.tensor([[m + 50 + shift]]), 1e4)
        * apply_rope(k, torch.tensor([[n + 50 + shift]]), 1e4)
    ).sum()
    assert abs(float(a - b)) < 1e-5  # angles are computed in float32 (spec)
    assert abs(float(apply_rope(q, torch.tensor([[m]]), 1e4).norm() - q.norm())) < 1e-5


@given(st.floats(0, 1e5, allow_nan=False), st.sampled_from([2, 16, 128]))
def test_decay_bound_between_zero_and_its_value_at_zero(delta, d):
    v = float(rope_decay_bound(delta, d, 1e6))
    assert 0 <= v <= (d / 2 + 1) / 2 + 1e-9
