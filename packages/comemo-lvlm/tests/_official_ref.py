"""Reference ports of the official code, written for these tests only (never imported by the
library). Sources, read for facts:

- LALBJ/CoMemo ``comemo/model/comemo_chat/modeling_comemo_chat.py``:
  ``calculate_subimage_indices`` (``ORIGINAL_SIZE = 16`` becomes the argument ``T``) and the
  RoPE-DHR branch of ``CoMemoChatModel.chat`` that assembles ``position_ids`` from it.
- OpenGVLab/InternVL (= LALBJ/CoMemo ``comemo/train/dataset.py``): ``find_closest_aspect_ratio``
  and ``dynamic_preprocess``.

Each port keeps the official control flow statement by statement (Python loops, ``np.linspace``,
``int()``), which is what makes it a reference and slow.
"""

from __future__ import annotations

import numpy as np


def ref_calculate_subimage_indices(X: int, Y: int, position_bias: int, T: int = 16) -> list[int]:
    out: list[int] = []
    if X > 1 or Y > 1:
        sub_w = T / X - 1e-6
        sub_h = T / Y - 1e-6
        for i in range(X):
            for j in range(Y):
                x0, x1 = i * sub_w, (i + 1) * sub_w
                y0, y1 = j * sub_h, (j + 1) * sub_h
                out.extend(
                    int(row) * T + int(col) + position_bias
                    for row in np.linspace(y0, y1, T)
                    for col in np.linspace(x0, x1, T)
                )
    out.extend((np.arange(0, T * T) + position_bias).tolist())
    return out


def ref_chat_position_ids(
    input_ids: list[int],
    grids: list[tuple[int, int]],
    img_start_id: int,
    img_end_id: int,
    T: int = 16,
) -> tuple[list[int], list[int]]:
    """The multi-image RoPE-DHR branch of ``chat``: (position_ids, media_position_ids)."""
    ids = np.asarray(input_ids)
    position_bias = np.where(ids == img_start_id)[0] + 1
    img_end_idx = np.where(ids == img_end_id)[0]
    seq_len = ids.shape[0]
    media: list[int] = []
    pos: list[int] = []
    cum = 0
    for i in range(len(position_bias)):
        bias = int(position_bias[i])
        X, Y = grids[i]
        n_patches = X * Y + (1 if X * Y > 1 else 0)
        cur = ref_calculate_subimage_indices(X, Y, bias - cum, T)
        media.extend(cur)
        if i == 0:
            pos = list(range(bias)) + cur
        else:
            pos = pos + [p - cum for p in range(int(img_end_idx[i - 1]), bias)] + cur
        cum += T * T * (n_patches - 1)
    pos = pos + [p - cum for p in range(int(img_end_idx[-1]), seq_len)]
    return pos, media


def ref_find_closest_aspect_ratio(aspect_ratio, target_ratios, width, height, image_size):
    best_diff = float("inf")
    best = (1, 1)
    area = width * height
    ties = 0
    for ratio in target_ratios:
        diff = abs(aspect_ratio - ratio[0] / ratio[1])
        if diff < best_diff:
            best_diff = diff
            best = ratio
        elif diff == best_diff:
            ties += 1
            if area > 0.5 * image_size * image_size * ratio[0] * ratio[1]:
                best = ratio
    return best, ties


def ref_dynamic_preprocess(image, min_num=1, max_num=12, image_size=448, use_thumbnail=True):
    w0, h0 = image.size
    aspect = w0 / h0
    targets = set(
        (i, j)
        for n in range(min_num, max_num + 1)
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if min_num <= i * j <= max_num
    )
    targets = sorted(targets, key=lambda x: x[0] * x[1])
    (X, Y), ties = ref_find_closest_aspect_ratio(aspect, targets, w0, h0, image_size)
    tw, th = image_size * X, image_size * Y
    resized = image.resize((tw, th))
    tiles = []
    for i in range(X * Y):
        box = (
            (i % (tw // image_size)) * image_size,
            (i // (tw // image_size)) * image_size,
            ((i % (tw // image_size)) + 1) * image_size,
            ((i // (tw // image_size)) + 1) * image_size,
        )
        tiles.append(resized.crop(box))
    if use_thumbnail and len(tiles) != 1:
        tiles.append(image.resize((image_size, image_size)))
    return tiles, (X, Y), ties
