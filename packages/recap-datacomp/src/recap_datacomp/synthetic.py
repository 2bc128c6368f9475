"""A synthetic structured-scene corpus for the mix-ratio experiment (reproduce part B).

32x32 scenes of 1-3 objects (shape x colour x size x 3x3 cell). The "recaption" is the full
structured description; the "alt-text" is web-like: 50 % one noun, 20 % a wrong colour, 15 %
junk tokens, 15 % a correct short phrase (spec section 4). Synthetic by design (DECISIONS 16):
no captioner or CLIP with weights ships offline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES = ("circle", "square", "triangle", "cross")
COLOURS = {
    "red": (220, 30, 30),
    "green": (30, 180, 40),
    "blue": (40, 60, 230),
    "yellow": (230, 210, 30),
    "magenta": (210, 40, 200),
    "cyan": (40, 200, 210),
}
SIZES = ("small", "large")
CELLS = (
    "top left",
    "top middle",
    "top right",
    "middle left",
    "center",
    "middle right",
    "bottom left",
    "bottom middle",
    "bottom right",
)
JUNK = ("img", "jpg", "dsc", "stock", "download", "free", "hd", "photo", "wallpaper", "png")
FUNCTION_WORDS = ("a", "an", "at", "the", "and", "of", "photo", "image", "with", ",")


def vocabulary() -> list[str]:
    """Every word the corpus and its zero-shot prompts use."""
    words = [*SHAPES, *COLOURS, *SIZES, *JUNK, *FUNCTION_WORDS]
    for cell in CELLS:
        words += cell.split()
    words += [str(d) for d in range(10)]
    return sorted(set(words))


@dataclass
class ShapesCorpus:
    """Images and captions of :func:`shapes_corpus`.

    Attributes
    ----------
    images : ndarray, shape (n, S, S, 3), uint8
    recaptions : list of str
        Full structured descriptions.
    alt_texts : list of str
        Web-like noisy captions.
    labels : ndarray, shape (n,), int64
        Class of the first object, ``colour_index * len(SHAPES) + shape_index``.
    class_names : list of str
        ``"{colour} {shape}"`` per class.
    """

    images: np.ndarray
    recaptions: list[str]
    alt_texts: list[str]
    labels: np.ndarray
    class_names: list[str]


def _draw(img: np.ndarray, shape: str, colour, cy: int, cx: int, r: int) -> None:
    s = img.shape[0]
    yy, xx = np.mgrid[0:s, 0:s]
    dy, dx = yy - cy, xx - cx
    if shape == "circle":
        mask = dy**2 + dx**2 <= r * r
    elif shape == "square":
        mask = (np.abs(dy) <= r - 1) & (np.abs(dx) <= r - 1)
    elif shape == "triangle":
        mask = (dy >= -r) & (dy <= r) & (np.abs(dx) <= (dy + r) / 2)
    else:  # cross
        mask = ((np.abs(dy) <= r) & (np.abs(dx) <= max(r // 3, 1))) | (
            (np.abs(dx) <= r) & (np.abs(dy) <= max(r // 3, 1))
        )
    img[mask] = colour


def shapes_corpus(
    n: int, *, seed: int, image_size: int = 32, max_objects: int = 3, min_objects: int = 1
) -> ShapesCorpus:
    """Generate `n` structured scenes with recaptions and noisy alt-texts.

    Parameters
    ----------
    n : int
        Number of scenes (>= 1).
    seed : int
        numpy ``default_rng`` seed.
    image_size : int, default=32
        Side in pixels (>= 24, divisible cells of a 3x3 grid).
    max_objects, min_objects : int, default=3, 1
        Objects per scene, each in a distinct cell.

    Returns
    -------
    ShapesCorpus

    Raises
    ------
    ValueError
        If `n` < 1, `image_size` < 24 or the object counts are out of [1, 9].
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"`n` must be an int >= 1, got {n!r}")
    if not isinstance(image_size, int) or image_size < 24:
        raise ValueError(f"`image_size` must be an int >= 24, got {image_size!r}")
    if not 1 <= min_objects <= max_objects <= 9:
        raise ValueError("`min_objects`/`max_objects` must satisfy 1 <= min <= max <= 9")
    rng = np.random.default_rng(seed)
    colours = list(COLOURS)
    cell = image_size // 3
    images = np.full((n, image_size, image_size, 3), 245, dtype=np.uint8)
    recaps, alts, labels = [], [], []
    for i in range(n):
        k = int(rng.integers(min_objects, max_objects + 1))
        cells = rng.choice(9, size=k, replace=False)
        phrases = []
        first = None
        for j, c in enumerate(cells):
            shape = SHAPES[int(rng.integers(len(SHAPES)))]
            colour = colours[int(rng.integers(len(colours)))]
            size = SIZES[int(rng.integers(2))]
            r = cell // 2 if size == "large" else max(cell // 4, 2)
            cy, cx = (int(c) // 3) * cell + cell // 2, (int(c) % 3) * cell + cell // 2
            _draw(images[i], shape, COLOURS[colour], cy, cx, r)
            phrases.append(f"a {size} {colour} {shape} at the {CELLS[int(c)]}")
            if j == 0:
                first = (colour, shape)
        assert first is not None
        recaps.append(" and ".join(phrases))
        labels.append(colours.index(first[0]) * len(SHAPES) + SHAPES.index(first[1]))
        u = rng.random()
        if u < 0.5:
            alts.append(first[1])
        elif u < 0.7:
            wrong = [c for c in colours if c != first[0]][int(rng.integers(len(colours) - 1))]
            alts.append(f"{wrong} {first[1]}")
        elif u < 0.85:
            junk = rng.choice(len(JUNK), size=3)
            alts.append(" ".join([JUNK[int(j)] for j in junk] + [str(int(rng.integers(10)))]))
        else:
            alts.append(f"{first[0]} {first[1]}")
    names = [f"{c} {s}" for c in colours for s in SHAPES]
    return ShapesCorpus(images, recaps, alts, np.asarray(labels, dtype=np.int64), names)
