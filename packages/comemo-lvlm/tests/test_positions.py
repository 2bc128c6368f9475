"""RoPE-DHR position ids: spec tests 1-3 against the official port and hand-written values."""

import numpy as np
import pytest
import torch
from _official_ref import ref_calculate_subimage_indices, ref_chat_position_ids
from comemo_lvlm import TileGrid, build_position_ids, candidate_grids, image_position_ids

S, E, C = 101, 102, 100  # <img>, </img>, <IMG_CONTEXT>
ALL_GRIDS = candidate_grids(1, 12)


@pytest.mark.parametrize("bias", [0, 7, 1000])
def test_compat_layout_equals_official_port_every_grid(bias):
    for g in ALL_GRIDS:
        ours = image_position_ids(g, bias, T=16, layout="comemo_compat").tolist()
        assert ours == ref_calculate_subimage_indices(g.cols, g.rows, bias, 16), g


def _ids(grids, text_lens, T):
    """text_lens[0] text, then per image <img> ctx </img> text_lens[k+1]."""
    out = [5] * text_lens[0]
    for k, g in enumerate(grids):
        out += [S] + [C] * (g.n_images * T * T) + [E] + [6] * text_lens[k + 1]
    return out


@pytest.mark.parametrize(
    "grids",
    [
        [TileGrid(3, 2)],
        [TileGrid(1, 1), TileGrid(4, 3)],
        [TileGrid(2, 5), TileGrid(2, 2), TileGrid(1, 1)],
    ],
)
def test_compat_sequence_equals_official_chat_assembly(grids):
    T = 16
    ids = _ids(grids, [10] + [3] * len(grids), T)
    want_pos, want_media = ref_chat_position_ids(ids, [tuple(g) for g in grids], S, E, T)
    plan = build_position_ids(
        torch.tensor([ids]), [grids], img_start_id=S, img_end_id=E, T=T, layout="comemo_compat"
    )
    assert plan.position_ids[0].tolist() == want_pos
    assert plan.media_position_ids[0].tolist() == want_media


@pytest.mark.parametrize("T", [4, 16])
def test_exact_layout_cells_hit_xy_times_and_contain_centres(T):
    for g in ALL_GRIDS:
        if g.n_tiles == 1:
            continue
        b = 7
        ids = image_position_ids(g, b, T=T).numpy()
        tiles = ids[: g.n_tiles * T * T] - b
        counts = np.bincount(tiles, minlength=T * T)
        assert (counts == g.n_tiles).all(), g
        # image-space centre of tile token (tile t, r, c), in thumbnail-cell units
        t = np.arange(g.n_tiles)[:, None, None]
        r = np.arange(T)[None, :, None]
        c = np.arange(T)[None, None, :]
        cy = ((t // g.cols) * T + r + 0.5) * T / (T * g.rows)
        cx = ((t % g.cols) * T + c + 0.5) * T / (T * g.cols)
        cell = tiles.reshape(g.n_tiles, T, T)
        row, col = cell // T, cell % T
        assert ((row <= cy) & (cy < row + 1) & (col <= cx) & (cx < col + 1)).all(), g
        total = (g.n_tiles + 1) * (T * T * (T * T - 1) // 2 + T * T * b)
        assert int(ids.sum()) == total


@pytest.mark.parametrize("layout", ["exact", "comemo_compat"])
def test_budget_ids_in_range_end_marker_and_last_position(layout):
    T = 16
    grids = [TileGrid(3, 2), TileGrid(1, 1), TileGrid(4, 3)]
    ids = _ids(grids, [10, 4, 5, 20], T)
    plan = build_position_ids(
        torch.tensor([ids]), [grids], img_start_id=S, img_end_id=E, T=T, layout=layout
    )
    pos = plan.position_ids[0]
    arr = torch.tensor(ids)
    starts = torch.nonzero(arr == S)[:, 0]
    ends = torch.nonzero(arr == E)[:, 0]
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        b = int(pos[s]) + 1
        seg = pos[s + 1 : e]
        assert int(seg.min()) >= b
        assert int(seg.max()) <= b + T * T - 1
        assert int(pos[e]) == b + T * T
    L = len(ids)
    assert int(pos[-1]) == L - 1 - T * T * sum(g.n_tiles for g in grids if g.n_tiles > 1)


# Hand-written: T=2, grid X=2 cols, Y=1 row; tokens t <img> 12 ctx </img> t
HAND_EXACT = [0, 1, 2, 2, 4, 4, 3, 3, 5, 5, 2, 3, 4, 5, 6, 7]
HAND_COMPAT = [0, 1, 2, 2, 4, 4, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize(
    ("layout", "want"), [("exact", HAND_EXACT), ("comemo_compat", HAND_COMPAT)]
)
def test_hand_written_single_image(layout, want):
    ids = _ids([TileGrid(2, 1)], [1, 1], 2)
    plan = build_position_ids(
        torch.tensor([ids]), [[TileGrid(2, 1)]], img_start_id=S, img_end_id=E, T=2, layout=layout
    )
    assert plan.position_ids[0].tolist() == want
    assert plan.media_position_ids[0].tolist() == want[2:14]


def test_hand_written_multi_image_and_left_padding():
    g = [TileGrid(2, 1), TileGrid(1, 1)]
    ids = _ids(g, [1, 1, 1], 2)
    want = [*HAND_EXACT, 8, 9, 10, 11, 12, 13, 14]
    short = _ids([TileGrid(1, 1)], [1, 1], 2)  # t <img> 4 ctx </img> t
    pad = len(ids) - len(short)
    batch = torch.tensor([ids, [0] * pad + short])
    am = torch.tensor([[1] * len(ids), [0] * pad + [1] * len(short)])
    plan = build_position_ids(
        batch, [g, [TileGrid(1, 1)]], img_start_id=S, img_end_id=E, T=2, attention_mask=am
    )
    assert plan.position_ids[0].tolist() == want
    assert plan.position_ids[1].tolist() == [1] * pad + [0, 1, 2, 3, 4, 5, 6, 7]
    assert plan.media_position_ids[1].tolist()[:4] == [2, 3, 4, 5]
    assert plan.media_owner[1].tolist() == [0] * 4 + [-1] * 12
    # right padding gives the same ids on the valid tokens
    batch_r = torch.tensor([ids, short + [0] * pad])
    am_r = torch.tensor([[1] * len(ids), [1] * len(short) + [0] * pad])
    plan_r = build_position_ids(
        batch_r, [g, [TileGrid(1, 1)]], img_start_id=S, img_end_id=E, T=2, attention_mask=am_r
    )
    assert plan_r.position_ids[1].tolist() == [0, 1, 2, 3, 4, 5, 6, 7] + [1] * pad


def test_packed_row_equals_separate_rows():
    g1, g2 = [TileGrid(2, 1)], [TileGrid(1, 1), TileGrid(2, 2)]
    a, b = _ids(g1, [2, 3], 2), _ids(g2, [1, 2, 2], 2)
    packed = build_position_ids(
        torch.tensor([a + b]),
        [g1 + g2],
        img_start_id=S,
        img_end_id=E,
        T=2,
        sample_lens=[[len(a), len(b)]],
    )
    pa = build_position_ids(torch.tensor([a]), [g1], img_start_id=S, img_end_id=E, T=2)
    pb = build_position_ids(torch.tensor([b]), [g2], img_start_id=S, img_end_id=E, T=2)
    assert (
        packed.position_ids[0].tolist() == pa.position_ids[0].tolist() + pb.position_ids[0].tolist()
    )
    assert packed.media_position_ids[0].tolist() == (
        pa.media_position_ids[0].tolist() + pb.media_position_ids[0].tolist()
    )
    assert packed.cu_seqlens.tolist() == [0, len(a), len(a) + len(b)]
    mask = packed.media_mask()[0]
    na = len(pa.media_position_ids[0])
    assert mask[: len(a), :na].all()
    assert not mask[: len(a), na:].any()
    assert mask[len(a) :, na:].all()
    assert not mask[len(a) :, :na].any()


def test_preceding_visibility_masks_later_images():
    g = [TileGrid(1, 1), TileGrid(1, 1)]
    ids = _ids(g, [2, 2, 2], 2)
    plan = build_position_ids(torch.tensor([ids]), [g], img_start_id=S, img_end_id=E, T=2)
    pre = plan.media_mask("preceding")[0]
    s2 = ids.index(S, 3)
    assert not pre[:2].any()  # text before any image sees nothing
    assert pre[s2, :4].all()
    assert not pre[s2, 4:].any()
    assert pre[-1].all()
    assert plan.media_mask("all")[0].all()


def test_plain_mode_is_arange_and_media_is_the_slice():
    g = [TileGrid(2, 2)]
    ids = _ids(g, [3, 4], 2)
    plan = build_position_ids(
        torch.tensor([ids]), [g], img_start_id=S, img_end_id=E, T=2, mode="plain"
    )
    assert plan.position_ids[0].tolist() == list(range(len(ids)))
    assert plan.media_position_ids[0].tolist() == list(range(4, 4 + 20))


def _bad(**kw):
    base = dict(
        input_ids=torch.tensor([_ids([TileGrid(2, 1)], [1, 1], 2)]),
        grids=[[TileGrid(2, 1)]],
        img_start_id=S,
        img_end_id=E,
        T=2,
    )
    base.update(kw)
    ids = base.pop("input_ids")
    grids = base.pop("grids")
    return build_position_ids(ids, grids, **base)


@pytest.mark.parametrize(
    ("kw", "exc", "match"),
    [
        ({"input_ids": torch.tensor([[5, S, C, C, E]]).float()}, TypeError, "input_ids"),
        ({"input_ids": torch.tensor([5, S, E])}, ValueError, "input_ids"),
        (
            {"input_ids": torch.zeros((1, 0), dtype=torch.long), "grids": [[]]},
            ValueError,
            "input_ids",
        ),
        ({"input_ids": torch.tensor([[5, S] + [C] * 12 + [6]])}, ValueError, "unmatched"),
        (
            {"input_ids": torch.tensor([[5, S] + [C] * 11 + [E, 6]])},
            ValueError,
            "11 <IMG_CONTEXT>.*needs 12",
        ),
        ({"grids": [[TileGrid(2, 1), TileGrid(1, 1)]]}, ValueError, "grids"),
        ({"grids": [[(0, 1)]]}, ValueError, "cols"),
        ({"grids": []}, ValueError, "grids"),
        ({"mode": "rope"}, ValueError, "mode"),
        ({"layout": "paper"}, ValueError, "layout"),
        ({"T": 0}, ValueError, "T"),
        ({"attention_mask": torch.ones(1, 3, dtype=torch.long)}, ValueError, "attention_mask"),
        ({"attention_mask": torch.full((1, 16), 2)}, ValueError, "attention_mask"),
        ({"sample_lens": [[3, 3]]}, ValueError, "sample_lens"),
        ({"max_tiles": 1}, ValueError, r"grids\[0\]\[0\].*outside"),
        ({"min_tiles": 3}, ValueError, "min_tiles=3"),
        ({"sample_lens": [[3, 13]]}, ValueError, "sample boundary"),
    ],
)
def test_build_position_ids_rejects_bad_input(kw, exc, match):
    with pytest.raises(exc, match=match):
        _bad(**kw)


@pytest.mark.parametrize(
    ("args", "kw", "exc", "match"),
    [
        (((0, 2), 0), {}, ValueError, "cols"),
        (((2, 2), -1), {}, ValueError, "bias"),
        (((2, 2), 1.5), {}, TypeError, "bias"),
        (((2, 2), 0), {"layout": "x"}, ValueError, "layout"),
        (((2, 2), 0), {"T": 2.0}, TypeError, "T"),
        (("22", 0), {}, TypeError, "grid"),
    ],
)
def test_image_position_ids_rejects_bad_input(args, kw, exc, match):
    with pytest.raises(exc, match=match):
        image_position_ids(*args, **kw)
