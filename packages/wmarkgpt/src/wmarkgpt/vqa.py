"""WQA question-answer records: the 30 description questions, the position rule, prompts for an
LLM describer, a deterministic stand-in description, and the LLaVA / ShareGPT record formats.

Sources: the 30 questions are ``question_list`` of the official ``evaluate/iqa_eval.py``
(TanSongBai/WMarkGPT@2d812b4, Apache-2.0; shipped as ``data/description_questions.json`` with
``data/NOTICE``); the task's answer format (orientation, position relative to objects,
appearance, "The watermark visibility is: {level}") is the paper's Sec. 3 and the official
answers; record formats are LLaVA's ``playground/data`` JSON (``id``, ``image``,
``conversations`` of ``from``/``value`` turns, ``<image>`` in the first human turn) and
LLaMA-Factory's multimodal ShareGPT (``messages`` of ``role``/``content`` + ``images``, with its
``dataset_info.json`` entry, ``data/README.md`` of hiyouga/LLaMA-Factory).
"""

from __future__ import annotations

import json
from typing import Any

from icml25_core import as_generator, check_choice, check_scalar, data_path

from .levels import VISIBILITY_LEVELS

__all__ = [
    "DESCRIPTION_QUESTIONS",
    "POSITION_LABELS",
    "description_prompt",
    "llamafactory_dataset_info",
    "position_qa",
    "relative_position",
    "template_description",
    "to_record",
]

#: The 30 description questions of the official ``evaluate/iqa_eval.py`` (Apache-2.0).
DESCRIPTION_QUESTIONS: tuple[str, ...] = tuple(
    json.loads(data_path("wmarkgpt", "data", "description_questions.json").read_text("utf-8"))
)

#: The 9 single-word answers of WQA-Position (paper Sec. 3).
POSITION_LABELS: tuple[str, ...] = (
    "Top-left",
    "Top-right",
    "Bottom-left",
    "Bottom-right",
    "Center",
    "Middle-left",
    "Middle-right",
    "Middle-top",
    "Middle-bottom",
)

_GRID = {  # (column, row) of the 3x3 partition -> label; 0 = before, 1 = inside, 2 = after
    (0, 0): "Top-left",
    (1, 0): "Middle-top",
    (2, 0): "Top-right",
    (0, 1): "Middle-left",
    (1, 1): "Center",
    (2, 1): "Middle-right",
    (0, 2): "Bottom-left",
    (1, 2): "Middle-bottom",
    (2, 2): "Bottom-right",
}

FORMAT_LINE = "The watermark visibility is: {level}"


def _box(box, name: str) -> tuple[float, float, float, float]:
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be (x0, y0, x1, y1), got {box!r}") from None
    if not (x0 < x1 and y0 < y1):
        raise ValueError(f"`{name}` {tuple(box)} is empty (need x0 < x1 and y0 < y1)")
    return x0, y0, x1, y1


def relative_position(wm_box, obj_box) -> str:
    """Where the watermark's centre lies relative to an object's box (WQA-Position label).

    The object box's edges cut the plane into 3 x 3 cells (y grows downward); the cell holding
    the watermark box's centre gives the label: inside -> "Center", above-left -> "Top-left",
    directly above -> "Middle-top", and so on.

    Parameters
    ----------
    wm_box, obj_box : sequence of 4 numbers
        ``(x0, y0, x1, y1)`` with exclusive ends (the object box covers ``[x0, x1)``).

    Returns
    -------
    str
        One of `POSITION_LABELS`.

    Raises
    ------
    ValueError
        If a box is not 4 numbers with x0 < x1 and y0 < y1.

    Notes
    -----
    Ours: the paper does not publish WQA-Position's geometric rule [unverified]; this rule is
    documented as the library's.

    Examples
    --------
    >>> relative_position((0, 0, 10, 10), (20, 20, 40, 40))
    'Top-left'
    """
    wx0, wy0, wx1, wy1 = _box(wm_box, "wm_box")
    ox0, oy0, ox1, oy1 = _box(obj_box, "obj_box")
    cx, cy = (wx0 + wx1) / 2, (wy0 + wy1) / 2
    col = 0 if cx < ox0 else (1 if cx < ox1 else 2)
    row = 0 if cy < oy0 else (1 if cy < oy1 else 2)
    return _GRID[col, row]


def _objects(objects) -> list[tuple[str, tuple[float, float, float, float]]]:
    out = []
    for item in objects:
        try:
            name, box = item
        except (TypeError, ValueError):
            raise ValueError(f"`objects` must hold (name, box) pairs, got {item!r}") from None
        if not isinstance(name, str) or not name:
            raise ValueError(f"`objects` names must be non-empty str, got {name!r}")
        out.append((name, _box(box, "objects")))
    return out


def position_qa(wm_box, objects, *, rng=None, max_questions: int | None = None) -> list[dict]:
    """WQA-Position questions for one image: one per object, single-word answers.

    Parameters
    ----------
    wm_box : sequence of 4 numbers
    objects : sequence of (str, box)
        Object names (e.g. COCO categories) and boxes.
    rng : int, Generator or None
        Seed of the order and subset of objects asked.
    max_questions : int, optional
        Ask about at most this many objects (0 asks none).

    Returns
    -------
    list of dict
        ``{"question", "answer", "object"}``; the answer is :func:`relative_position`.

    Raises
    ------
    ValueError
        If a box is malformed, `objects` is empty or `max_questions` is negative.
    """
    if max_questions is not None:
        check_scalar(max_questions, "max_questions", kind=int, low=0)
    objs = _objects(objects)
    if not objs:
        raise ValueError("`objects` is empty: a position question needs an object")
    gen = as_generator(rng)
    order = gen.permutation(len(objs))
    if max_questions is not None:
        order = order[: int(max_questions)]
    labels = ", ".join(POSITION_LABELS)
    qa = []
    for k in order:
        name, box = objs[int(k)]
        question = (
            f"Where is the watermark located relative to the {name}? Answer with one of: {labels}."
        )
        qa.append({"question": question, "answer": relative_position(wm_box, box), "object": name})
    return qa


def _overlap(wm, obj) -> str:
    ix = min(wm[2], obj[2]) - max(wm[0], obj[0])
    iy = min(wm[3], obj[3]) - max(wm[1], obj[1])
    if ix <= 0 or iy <= 0:
        return "away from"
    if wm[0] >= obj[0] and wm[1] >= obj[1] and wm[2] <= obj[2] and wm[3] <= obj[3]:
        return "inside"
    return "partially overlapping"


def description_prompt(objects, wm_box, level: str, image_size=(224, 224)) -> str:
    """The instruction for the user's own LLM describer (the paper uses gpt-4o-2024-11-20).

    Parameters
    ----------
    objects : sequence of (str, box)
    wm_box : sequence of 4 numbers
    level : str
        One of `VISIBILITY_LEVELS`.
    image_size : tuple of int, default=(224, 224)
        ``(width, height)``.

    Returns
    -------
    str
        A prompt giving the object boxes, the watermark box and the level, asking for one
        paragraph without coordinates that ends with "The watermark visibility is: {level}.".

    Raises
    ------
    ValueError
        If `level` is unknown or a box is malformed.

    Notes
    -----
    Source: paper Sec. 3 (the describer sees the image, object boxes, watermark box and level;
    coordinates are banned from the text). The wording is ours: the official prompt is not
    published.
    """
    check_choice(level, "level", VISIBILITY_LEVELS)
    objs = _objects(objects)
    wm = _box(wm_box, "wm_box")
    lines = [f"- {name}: box {tuple(round(v) for v in box)}" for name, box in objs]
    return (
        "You see a watermarked image of "
        f"{image_size[0]}x{image_size[1]} pixels. Boxes are (x0, y0, x1, y1), y downward.\n"
        f"Objects:\n{chr(10).join(lines) or '- none'}\n"
        f"Watermark box: {tuple(round(v) for v in wm)}\n"
        f"Watermark visibility level: {level}\n"
        "Write one cohesive paragraph that describes the watermark's orientation, its position "
        "relative to the objects (inside, partially overlapping, or near the edge of them), and "
        "its appearance or texture. Never mention coordinates or numbers. End with exactly: "
        f"'{FORMAT_LINE.format(level=level)}.'"
    )


def template_description(objects, wm_box, level: str, image_size=(224, 224)) -> str:
    """A deterministic stand-in description (no LLM), marked as such in its first words.

    Parameters
    ----------
    objects : sequence of (str, box)
    wm_box : sequence of 4 numbers
    level : str
        One of `VISIBILITY_LEVELS`.
    image_size : tuple of int, default=(224, 224)

    Returns
    -------
    str
        "[template] The watermark ... The watermark visibility is: {level}."

    Raises
    ------
    ValueError
        If `level` is unknown or a box is malformed.

    Notes
    -----
    Ours: for pipelines and tests without an LLM; train on real LLM descriptions
    (:func:`description_prompt`) for the paper's task.

    Examples
    --------
    >>> template_description([("cat", (0, 0, 100, 100))], (10, 10, 50, 30), "faint")[-40:]
    'cat. The watermark visibility is: faint.'
    """
    check_choice(level, "level", VISIBILITY_LEVELS)
    objs = _objects(objects)
    wm = _box(wm_box, "wm_box")
    w, h = image_size
    if not (wm[0] >= 0 and wm[1] >= 0 and wm[2] <= w and wm[3] <= h):
        raise ValueError(f"`wm_box` {tuple(wm_box)} is outside the {w}x{h} image")
    orientation = "horizontally" if wm[2] - wm[0] >= wm[3] - wm[1] else "vertically"
    near_edge = min(wm[0], wm[1], w - wm[2], h - wm[3]) < 0.1 * min(w, h)
    parts = [f"[template] The watermark is oriented {orientation}."]
    if objs:
        name, box = max(objs, key=lambda o: (o[1][2] - o[1][0]) * (o[1][3] - o[1][1]))
        parts.append(f"It lies {_overlap(wm, box)} the {name}.")
    if near_edge:
        parts.append("It sits near the edge of the image.")
    parts.append(f"{FORMAT_LINE.format(level=level)}.")
    return " ".join(parts)


def to_record(
    image: str,
    question: str,
    answer: str,
    *,
    id: str | None = None,
    visibility: str | None = None,
    gt_score: float | None = None,
    format: str = "llava",
) -> dict[str, Any]:
    """One single-turn VQA record in LLaVA or LLaMA-Factory ShareGPT form.

    Parameters
    ----------
    image : str
        Image path, relative to the image folder the trainer is given.
    question, answer : str
    id : str, optional
        Default: `image`.
    visibility : str, optional
        Level (kept as an extra key, as WQA's JSONs do).
    gt_score : float, optional
        Score (extra key).
    format : {"llava", "sharegpt"}, default="llava"
        "llava": ``{"id", "image", "conversations": [{"from": "human", "value": "<image>\\n" +
        question}, {"from": "gpt", "value": answer}]}``. "sharegpt": LLaMA-Factory's multimodal
        ShareGPT, ``{"messages": [{"role": "user", "content": "<image>" + question},
        {"role": "assistant", "content": answer}], "images": [image]}``
        (register it with :func:`llamafactory_dataset_info`).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If a text is empty, `visibility` or `format` is unknown, or `gt_score` is not a finite
        number in [0, 5].
    """
    check_choice(format, "format", ("llava", "sharegpt"))
    for name, value in (("image", image), ("question", question), ("answer", answer)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"`{name}` must be a non-empty str, got {value!r}")
    if visibility is not None:
        check_choice(visibility, "visibility", VISIBILITY_LEVELS)
    extra: dict[str, Any] = {}
    if visibility is not None:
        extra["visibility"] = visibility
    if gt_score is not None:
        check_scalar(gt_score, "gt_score", low=0, high=5)
        extra["gt_score"] = float(gt_score)
    if format == "llava":
        return {
            "id": id if id is not None else image,
            "image": image,
            "conversations": [
                {"from": "human", "value": "<image>\n" + question},
                {"from": "gpt", "value": answer},
            ],
            **extra,
        }
    return {
        "messages": [
            {"role": "user", "content": "<image>" + question},
            {"role": "assistant", "content": answer},
        ],
        "images": [image],
        **({"id": id} if id is not None else {}),
        **extra,
    }


def llamafactory_dataset_info(file_name: str) -> dict[str, Any]:
    """The ``dataset_info.json`` entry that makes LLaMA-Factory read ``format="sharegpt"`` files.

    Parameters
    ----------
    file_name : str
        The JSON file, relative to LLaMA-Factory's ``dataset_dir``.

    Returns
    -------
    dict
        ``{"file_name", "formatting": "sharegpt", "columns": {"messages", "images"}, "tags":
        {...}}`` as LLaMA-Factory's ``mllm_demo`` entry.

    Raises
    ------
    ValueError
        If `file_name` is empty.
    """
    if not isinstance(file_name, str) or not file_name:
        raise ValueError(f"`file_name` must be a non-empty str, got {file_name!r}")
    return {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "messages", "images": "images"},
        "tags": {
            "role_tag": "role",
            "content_tag": "content",
            "user_tag": "user",
            "assistant_tag": "assistant",
        },
    }
