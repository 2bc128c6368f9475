r"""RoPE-DHR position ids (CoMemo §3.2; official ``calculate_subimage_indices``).

For an image whose ``<img>`` marker sits at position :math:`s`, let :math:`b = s + 1`. The
thumbnail's :math:`T\times T` tokens keep the ids :math:`b + T r + c`; every tile token is
mapped onto the thumbnail cell covering the same image region, so an image of any resolution
spends exactly :math:`T^2` ids. ``</img>`` gets :math:`b + T^2` and later text is shifted down
by :math:`T^2` times the tiles seen so far (thumbnails excluded).

$$
\mathrm{pos}(\text{tile }(i,j),\ r, c) = b + T\left\lfloor\frac{T j + r}{Y}\right\rfloor
  + \left\lfloor\frac{T i + c}{X}\right\rfloor
$$

(``layout="exact"``, the paper's description: tile column ``i``, row ``j``, every thumbnail
cell receives exactly X*Y tile tokens). ``layout="comemo_compat"`` reproduces the released
code bit for bit: tiles enumerated column-major, cells from ``np.linspace`` over a width
``T/X - 1e-6`` truncated by ``int()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch

from .tiling import TileGrid

__all__ = ["LAYOUTS", "MODES", "PositionPlan", "build_position_ids", "image_position_ids"]

LAYOUTS = ("exact", "comemo_compat")
MODES = ("dhr", "plain")


def _as_grid(grid: Any, name: str = "grid") -> TileGrid:
    if (
        type(grid) is TileGrid
        and type(grid[0]) is int
        and type(grid[1]) is int
        and grid[0] >= 1
        and grid[1] >= 1
    ):
        return grid
    if isinstance(grid, TileGrid) or (isinstance(grid, (tuple, list)) and len(grid) == 2):
        cols, rows = grid
    else:
        raise TypeError(f"{name} must be a TileGrid or a (cols, rows) pair, got {grid!r}")
    for what, v in (("cols", cols), ("rows", rows)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}.{what} must be an int, got {type(v).__name__}")
        if v < 1:
            raise ValueError(f"{name}.{what} must be >= 1, got {v}")
    return TileGrid(int(cols), int(rows))


def _check_T(T: Any) -> int:
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)):
        raise TypeError(f"T must be an int, got {type(T).__name__}")
    if T < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    return int(T)


def _check_choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return str(value)


@lru_cache(maxsize=512)
def _pattern(cols: int, rows: int, T: int, layout: str) -> np.ndarray:
    """Offsets (relative to b) of one image's tokens: tiles in sequence order, then thumbnail."""
    thumb = np.arange(T * T, dtype=np.int64)
    if cols * rows == 1:
        out = thumb
    elif layout == "exact":
        t = np.arange(cols * rows)
        i, j = t % cols, t // cols  # tile column, row (row-major crop order)
        r = np.arange(T)
        cell_r = (T * j[:, None] + r[None, :]) // rows  # [tiles, T]
        cell_c = (T * i[:, None] + r[None, :]) // cols  # [tiles, T]
        tiles = T * cell_r[:, :, None] + cell_c[:, None, :]  # [tiles, T(r), T(c)]
        out = np.concatenate([tiles.reshape(-1), thumb])
    else:  # comemo_compat: column-major tile loop, linspace + int() truncation
        w = T / cols - 1e-6
        h = T / rows - 1e-6
        blocks = []
        for ci in range(cols):
            cc = np.linspace(ci * w, (ci + 1) * w, T).astype(np.int64)
            for rj in range(rows):
                rr = np.linspace(rj * h, (rj + 1) * h, T).astype(np.int64)
                blocks.append((rr[:, None] * T + cc[None, :]).reshape(-1))
        out = np.concatenate([*blocks, thumb])
    out.setflags(write=False)
    return out


def image_position_ids(
    grid: TileGrid | tuple[int, int], bias: int, *, T: int = 16, layout: str = "exact"
) -> torch.Tensor:
    """RoPE-DHR ids of one image's tokens (tiles in sequence order, then the thumbnail).

    Parameters
    ----------
    grid : TileGrid or (int, int)
        (X cols, Y rows) of the dynamic tiling.
    bias : int
        b, the position id right after ``<img>`` (official ``position_bias``); >= 0.
    T : int, default=16
        Tokens per tile side after pixel shuffle (448/14/2 = 16, official ``ORIGINAL_SIZE``).
    layout : {"exact", "comemo_compat"}, default="exact"
        ``"exact"``: the paper's mapping (row-major tiles, integer cells). ``"comemo_compat"``:
        bit-exact with the released checkpoints (transposed tile order, linspace quirk).

    Returns
    -------
    torch.Tensor of int64, shape ((X*Y + [X*Y>1]) * T^2,)
        All in ``[b, b + T^2 - 1]``.

    Raises
    ------
    ValueError
        Bad grid, negative bias, unknown layout.
    TypeError
        Non-integer bias or T.
    """
    g = _as_grid(grid)
    T = _check_T(T)
    _check_choice("layout", layout, LAYOUTS)
    if isinstance(bias, bool) or not isinstance(bias, (int, np.integer)):
        raise TypeError(f"bias must be an int, got {type(bias).__name__}")
    if bias < 0:
        raise ValueError(f"bias must be >= 0, got {bias}")
    return torch.from_numpy(_pattern(g.cols, g.rows, T, layout) + int(bias))


@dataclass
class PositionPlan:
    """Positions of a batch for the context (self-attention) and memory (cross-attention) paths.

    Attributes
    ----------
    position_ids : torch.Tensor of int64, shape (B, L)
        Self-attention RoPE ids (padding: 1, never attended).
    media_position_ids : torch.Tensor of int64, shape (B, M)
        RoPE ids of each media token = the id of its context token; M = the row maximum.
    media_owner : torch.Tensor of int64, shape (B, M)
        Packed-sample index owning each media token; -1 marks padding media.
    media_index : torch.Tensor of int64, shape (B, M)
        Column in ``input_ids`` of each media token's context token (0 for padding).
    media_start : torch.Tensor of int64, shape (B, M)
        Column of the owning image's ``<img>`` marker (L for padding).
    text_owner : torch.Tensor of int64, shape (B, L)
        Packed-sample index of each token; -1 for padding.
    cu_seqlens : torch.Tensor of int32, shape (n_samples + 1,)
        Cumulative sample lengths over the valid tokens of the flattened batch (flash-attn
        varlen convention).
    """

    position_ids: torch.Tensor
    media_position_ids: torch.Tensor
    media_owner: torch.Tensor
    media_index: torch.Tensor
    media_start: torch.Tensor
    text_owner: torch.Tensor
    cu_seqlens: torch.Tensor

    def media_mask(self, visibility: str = "all") -> torch.Tensor:
        """Which media tokens each text token may read, shape (B, L, M), bool.

        ``"all"``: every image of the token's own (packed) sample (official: ``text_time``
        is always 0). ``"preceding"``: only images whose ``<img>`` lies before the token.
        """
        _check_choice("visibility", visibility, ("all", "preceding"))
        t = self.text_owner[:, :, None]
        m = self.media_owner[:, None, :]
        mask = (t == m) & (m >= 0) & (t >= 0)
        if visibility == "preceding":
            cols = torch.arange(self.text_owner.shape[1], device=mask.device)
            mask = mask & (self.media_start[:, None, :] < cols[None, :, None])
        return mask


_AR_CACHE: list[np.ndarray] = [np.arange(1 << 16, dtype=np.int64)]
_AR_CACHE[0].setflags(write=False)


def _arange(n: int) -> np.ndarray:
    """A read-only int64 ``arange`` of at least ``n`` elements, grown on demand."""
    if _AR_CACHE[0].size < n:
        _AR_CACHE[0] = np.arange(max(n, 2 * _AR_CACHE[0].size), dtype=np.int64)
        _AR_CACHE[0].setflags(write=False)
    return _AR_CACHE[0]


def _check_ids(input_ids: Any) -> torch.Tensor:
    if not isinstance(input_ids, torch.Tensor):
        raise TypeError(f"input_ids must be a torch.Tensor, got {type(input_ids).__name__}")
    if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
        raise TypeError(f"input_ids must be an integer tensor, got {input_ids.dtype}")
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (B, L), got {tuple(input_ids.shape)}")
    if input_ids.numel() == 0:
        raise ValueError(f"input_ids must be non-empty, got shape {tuple(input_ids.shape)}")
    return input_ids


def _lens_row(row: Any, b: int) -> list[int]:
    if not isinstance(row, (list, tuple)):
        raise TypeError(f"sample_lens[{b}] must be a list of ints, got {type(row).__name__}")
    for k, x in enumerate(row):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"sample_lens[{b}][{k}] must be an int, got {type(x).__name__}")
    return [int(x) for x in row]


def build_position_ids(
    input_ids: torch.Tensor,
    grids: Sequence[Sequence[TileGrid | tuple[int, int]]],
    *,
    img_start_id: int,
    img_end_id: int,
    T: int = 16,
    mode: str = "dhr",
    layout: str = "exact",
    attention_mask: torch.Tensor | None = None,
    sample_lens: Sequence[Sequence[int]] | None = None,
    min_tiles: int = 1,
    max_tiles: int | None = None,
) -> PositionPlan:
    """Position ids for a batch of LVLM prompts with dynamic-resolution images.

    Vectorised: one cached id pattern per grid, cumulative sums for the text shift.

    Parameters
    ----------
    input_ids : torch.Tensor of int, shape (B, L)
        Token ids; each image is ``<img>``, (X*Y + [X*Y>1])*T^2 context tokens, ``</img>``.
    grids : list (length B) of lists of TileGrid
        The grid of every image of each row, in order.
    img_start_id, img_end_id : int
        Token ids of ``<img>`` and ``</img>``.
    T : int, default=16
        Tokens per tile side.
    mode : {"dhr", "plain"}, default="dhr"
        ``"plain"``: ``arange`` positions (the README suggests it for OCR-heavy data).
    layout : {"exact", "comemo_compat"}, default="exact"
        See :func:`image_position_ids`.
    attention_mask : torch.Tensor of 0/1, shape (B, L), optional
        Padding (left or right); padded tokens get id 1 and belong to no sample.
    sample_lens : list (length B) of lists of int, optional
        Packed samples: lengths of consecutive samples over each row's valid tokens (they must
        sum to the row's valid count). Positions restart at 0 per sample.
    min_tiles, max_tiles : int, optional
        Bounds on X*Y of every grid (the tiling's ``min_num`` / ``max_num``); ``max_tiles=None``
        leaves the upper end open.

    Returns
    -------
    PositionPlan

    Raises
    ------
    ValueError
        Bad shapes, unmatched ``<img>``/``</img>``, a context-token count that differs from
        the grid's (both numbers given), images crossing sample boundaries, bad mode/layout,
        equal marker ids, ``max_tiles < min_tiles``.
    TypeError
        Non-integer ``input_ids``, marker ids, ``sample_lens`` entries or tile bounds.
    """
    input_ids = _check_ids(input_ids)
    T = _check_T(T)
    _check_choice("mode", mode, MODES)
    _check_choice("layout", layout, LAYOUTS)
    for name, val in (("img_start_id", img_start_id), ("img_end_id", img_end_id)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(val).__name__}")
    if img_start_id == img_end_id:
        raise ValueError(f"img_start_id and img_end_id must differ, both are {img_start_id}")
    bounds: tuple[tuple[str, int | None], ...] = (
        ("min_tiles", min_tiles),
        ("max_tiles", max_tiles),
    )
    for name, bound in bounds:
        if bound is None and name == "max_tiles":
            continue
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(bound).__name__}")
        if bound < 1:
            raise ValueError(f"{name} must be >= 1, got {bound}")
    if max_tiles is not None and max_tiles < min_tiles:
        raise ValueError(f"max_tiles ({max_tiles}) must be >= min_tiles ({min_tiles})")
    B, L = input_ids.shape
    if not isinstance(grids, (list, tuple)) or len(grids) != B:
        raise ValueError(f"grids must be a list of {B} lists (one per row), got {grids!r}")
    ids = input_ids.detach().cpu().numpy()
    valid: np.ndarray | None = None
    if attention_mask is not None:
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask must be a tensor of shape {tuple(input_ids.shape)}, got "
                f"{getattr(attention_mask, 'shape', type(attention_mask).__name__)}"
            )
        if attention_mask.is_floating_point():
            raise TypeError(f"attention_mask must be integer or bool, got {attention_mask.dtype}")
        am = attention_mask.detach().cpu().numpy()
        if not np.isin(am, (0, 1)).all():
            raise ValueError("attention_mask must contain only 0 and 1")
        valid = am.astype(bool)
    if sample_lens is not None and (
        not isinstance(sample_lens, (list, tuple)) or len(sample_lens) != B
    ):
        raise ValueError(f"sample_lens must be a list of {B} lists, got {sample_lens!r}")

    T2 = T * T
    pos = np.ones((B, L), dtype=np.int64)
    owner = np.full((B, L), -1, dtype=np.int64)
    media_pos_rows: list[np.ndarray] = []
    media_idx_rows: list[np.ndarray] = []
    media_own_rows: list[np.ndarray] = []
    media_start_rows: list[np.ndarray] = []
    all_lens: list[int] = []
    for b in range(B):
        row = ids[b]
        v = valid[b] if valid is not None else None
        all_valid = v is None or bool(v.all())
        n_valid = L if all_valid or v is None else int(v.sum())
        lens = [n_valid] if sample_lens is None else _lens_row(sample_lens[b], b)
        if any(x < 0 for x in lens) or sum(lens) != n_valid:
            raise ValueError(
                f"sample_lens[{b}] must be non-negative and sum to the row's {n_valid} valid "
                f"tokens, got {lens}"
            )
        lens = [x for x in lens if x > 0]
        all_lens.extend(lens)
        is_s, is_e = row == img_start_id, row == img_end_id
        if v is not None and not all_valid and ((is_s & ~v).any() or (is_e & ~v).any()):
            raise ValueError(f"input_ids row {b} has <img>/</img> markers in padding")
        s_idx, e_idx = np.flatnonzero(is_s), np.flatnonzero(is_e)
        row_grids = [_as_grid(g, f"grids[{b}][{k}]") for k, g in enumerate(grids[b])]
        for k, g in enumerate(row_grids):
            if g.n_tiles < min_tiles or (max_tiles is not None and g.n_tiles > max_tiles):
                raise ValueError(
                    f"grids[{b}][{k}] = {tuple(g)} has X*Y = {g.n_tiles} tiles, outside "
                    f"[min_tiles={min_tiles}, max_tiles={max_tiles}]"
                )
        if (
            s_idx.size != e_idx.size
            or (s_idx.size and not np.all(s_idx < e_idx))
            or (s_idx.size > 1 and not np.all(e_idx[:-1] < s_idx[1:]))
        ):
            raise ValueError(
                f"input_ids row {b}: unmatched <img>/</img> markers ({s_idx.size} <img>, "
                f"{e_idx.size} </img>)"
            )
        if s_idx.size != len(row_grids):
            raise ValueError(
                f"grids[{b}] has {len(row_grids)} grids but input_ids row {b} has "
                f"{s_idx.size} images"
            )
        lens_arr = np.asarray(lens, dtype=np.int64)
        ends_v = np.cumsum(lens_arr)
        starts_v = ends_v - lens_arr
        vpos = None if all_valid or v is None else np.cumsum(v) - 1
        vs = s_idx if vpos is None else vpos[s_idx]
        ve = e_idx if vpos is None else vpos[e_idx]
        n_img = len(row_grids)
        counts = e_idx - s_idx - 1
        img_sid = np.searchsorted(ends_v, vs, side="right")
        if n_img:
            n_images = np.fromiter((g.n_images for g in row_grids), dtype=np.int64, count=n_img)
            bad = np.flatnonzero(counts != n_images * T2)
            if bad.size:
                k = int(bad[0])
                raise ValueError(
                    f"input_ids row {b} image {k}: {int(counts[k])} <IMG_CONTEXT> tokens "
                    f"between <img> and </img>, but grid {tuple(row_grids[k])} needs "
                    f"{int(n_images[k]) * T2} "
                    f"(= {int(n_images[k])} tiles incl. thumbnail x T^2 = {T2})"
                )
            if (ve - vs != e_idx - s_idx).any() or (
                img_sid != np.searchsorted(ends_v, ve, side="right")
            ).any():
                raise ValueError(
                    f"input_ids row {b}: an image is broken by padding or a sample boundary"
                )
        # walk the segments (text runs and images) of each sample: O(#segments) Python work,
        # each O(L) piece written once into preallocated rows (cached patterns / aranges)
        ar = _arange(max(n_valid, L, 1))
        pv = pos[b] if all_valid else np.empty(n_valid, dtype=np.int64)
        ov = owner[b] if all_valid else np.empty(n_valid, dtype=np.int64)
        m_total = int(counts.sum()) if n_img else 0
        mpos = np.empty(m_total, dtype=np.int64)
        midx = np.empty(m_total, dtype=np.int64)
        mown = np.empty(m_total, dtype=np.int64)
        mstart = np.empty(m_total, dtype=np.int64)
        k, o = 0, 0
        vs_l, ve_l, cnt_l = vs.tolist(), ve.tolist(), counts.tolist()
        s_l, e_l = s_idx.tolist(), e_idx.tolist()
        for smp in range(len(lens)):
            cur, stop, p = int(starts_v[smp]), int(ends_v[smp]), 0
            ov[cur:stop] = smp
            while k < n_img and vs_l[k] < stop:
                n_text = vs_l[k] - cur + 1  # text run up to and including <img>
                np.add(ar[:n_text], p, out=pv[cur : cur + n_text])
                p += n_text  # p is now b, the id right after <img>
                c = cnt_l[k]
                dst = pv[vs_l[k] + 1 : ve_l[k]]
                if mode == "dhr":
                    g = row_grids[k]
                    np.add(_pattern(g.cols, g.rows, T, layout), p, out=dst)
                    p += T2
                else:
                    np.add(ar[:c], p, out=dst)
                    p += c
                mpos[o : o + c] = dst
                midx[o : o + c] = ar[s_l[k] + 1 : e_l[k]]
                mown[o : o + c] = smp
                mstart[o : o + c] = s_l[k]
                o += c
                cur = ve_l[k]
                k += 1
            np.add(ar[: stop - cur], p, out=pv[cur:stop])
        if not all_valid and v is not None:
            cols = np.flatnonzero(v)
            pos[b, cols] = pv
            owner[b, cols] = ov
        media_pos_rows.append(mpos)
        media_idx_rows.append(midx)
        media_own_rows.append(mown)
        media_start_rows.append(mstart)
    M = max((x.size for x in media_pos_rows), default=0)

    def pad(rows: list[np.ndarray], fill: int) -> np.ndarray:
        if B == 1:
            return rows[0][None]
        out = np.full((B, M), fill, dtype=np.int64)
        for b, r in enumerate(rows):
            out[b, : r.size] = r
        return out

    dev = input_ids.device
    cu = np.concatenate([[0], np.cumsum(all_lens)]).astype(np.int32)

    def to(a: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(a)
        return t if dev.type == "cpu" else t.to(dev)

    return PositionPlan(
        position_ids=to(pos),
        media_position_ids=to(pad(media_pos_rows, 0)),
        media_owner=to(pad(media_own_rows, -1)),
        media_index=to(pad(media_idx_rows, 0)),
        media_start=to(pad(media_start_rows, L)),
        text_owner=to(owner),
        cu_seqlens=to(cu),
    )
