"""Score an ImageNet classifier on a LAION-C folder with the official superclass rule.

Layout (Zenodo 14051887, ``laionc/data.py``): ``<root>/<distortion>/intensity_level_<k>/
<superclass>/*``; images are loaded with ``Resize((224, 224))`` + ``ToTensor`` (written out
with Pillow, DECISIONS 8) and scored by :class:`laion_c.superclass.SuperclassHead`: softmax,
mean member probability per superclass, argmax, truth = parent folder name
(``laionc/evaluation.py``). Unlike the official loop, nothing is skipped silently: a missing cell
or an unknown superclass folder raises.

Under ``torchrun`` (``torch.distributed`` initialised) each rank scores the strided shard
``files[rank::world]`` — unpadded, unlike ``DistributedSampler`` which pads with duplicates — and
the ``(correct, total)`` counts of every cell are summed with ``all_reduce``.
"""

from __future__ import annotations

import csv
import io
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from icml25_core import check_scalar, progress

from ._image import read_rgb, resize_exact
from .params import DISTORTIONS, LEVELS, check_level, resolve
from .superclass import SuperclassHead, resolve_mapping
from .tiles import IMAGE_SUFFIXES
from .uncertainty import mean_interval as _mean_interval
from .uncertainty import wilson_interval

INPUT_SIZE = 224


@dataclass
class Results:
    """Accuracies per (distortion, level) cell, with their confidence intervals.

    Attributes
    ----------
    accuracy : dict of (str, int) to float
        Top-1 superclass accuracy of each cell.
    counts : dict of (str, int) to (int, int)
        ``(correct, total)`` of each cell.
    model : str
        Name written in the CSV's ``model`` column.
    confidence : float in (0, 1), default=0.95
        Level of the intervals: Wilson score per cell, stratified Wilson for means
        (:mod:`laion_c.uncertainty`).
    """

    accuracy: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    model: str = "model"
    confidence: float = 0.95

    @classmethod
    def from_counts(cls, counts: dict, model: str = "model", confidence: float = 0.95) -> Results:
        """Results from ``{(name, level): (correct, total)}``.

        Raises
        ------
        ValueError
            If a count is not a pair of ints with ``0 <= correct <= total`` and ``total >= 1``,
            or `confidence` is outside (0, 1).
        """
        check_scalar(confidence, "confidence", low=0, high=1, inclusive="neither")
        checked = {}
        for cell, pair in counts.items():
            try:
                correct, total = pair
            except (TypeError, ValueError):
                raise ValueError(
                    f"`counts`[{cell!r}] must be a pair (correct, total), got {pair!r}"
                ) from None
            ints = all(
                isinstance(v, numbers.Integral) and not isinstance(v, bool)
                for v in (correct, total)
            )
            if not ints or not 0 <= correct <= total or total < 1:
                raise ValueError(
                    f"`counts`[{cell!r}] must be ints with 0 <= correct <= total and total >= 1, "
                    f"got {pair!r}"
                )
            checked[cell] = (int(correct), int(total))
        accuracy = {cell: c / t for cell, (c, t) in checked.items()}
        return cls(accuracy, checked, model, float(confidence))

    def mean(self) -> float:
        """ "Avg. Accuracy": the unweighted mean over the cells (paper Table 2, [inferred])."""
        if not self.accuracy:
            raise ValueError("no cell was scored")
        return float(np.mean(list(self.accuracy.values())))

    def level_means(self) -> dict[int, float]:
        """Mean accuracy over the distortions at each level."""
        levels = sorted({level for _, level in self.accuracy})
        return {
            k: float(np.mean([a for (_, lv), a in self.accuracy.items() if lv == k]))
            for k in levels
        }

    def intervals(self) -> dict[tuple[str, int], tuple[float, float]]:
        """Wilson score interval of every cell at level :attr:`confidence`
        (:func:`laion_c.uncertainty.wilson_interval`, Wilson 1927).

        Returns
        -------
        dict of (str, int) to (float, float)
            ``(low, high)`` in [0, 1] per cell.
        """
        out = {}
        for cell, (correct, total) in self.counts.items():
            low, high = wilson_interval(correct, total, confidence=self.confidence)
            out[cell] = (float(low), float(high))
        return out

    def mean_interval(self, cells=None) -> tuple[float, float]:
        """Stratified Wilson interval of the unweighted mean of `cells` (default: all, i.e. of
        :meth:`mean`) at level :attr:`confidence` (:func:`laion_c.uncertainty.mean_interval`,
        Yan & Su 2010).

        Raises
        ------
        ValueError
            If no cell was scored or a cell of `cells` was not.
        """
        cells = list(self.counts) if cells is None else list(cells)
        missing = [cell for cell in cells if cell not in self.counts]
        if not cells or missing:
            raise ValueError(f"`cells` must be scored cells, got none or unscored {missing}")
        correct, total = zip(*(self.counts[cell] for cell in cells), strict=True)
        return _mean_interval(correct, total, confidence=self.confidence)

    def level_intervals(self) -> dict[int, tuple[float, float]]:
        """:meth:`mean_interval` of the cells of each level (the intervals of
        :meth:`level_means`)."""
        levels = sorted({level for _, level in self.counts})
        return {k: self.mean_interval([c for c in self.counts if c[1] == k]) for k in levels}

    def to_csv(self, path=None) -> str:
        """The official CSV (columns ``model, augmentation, intensity_level, accuracy``).

        Written to `path` when given; the text is returned either way.
        """
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["model", "augmentation", "intensity_level", "accuracy"])
        for (name, level), acc in self.accuracy.items():
            writer.writerow([self.model, name, level, f"{acc:.6f}"])
        text = buffer.getvalue()
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def to_markdown(self) -> str:
        """A distortion x level table of accuracies (%) with their intervals, row means and the
        overall mean ("Avg."), each followed by ``[low, high]`` (level :attr:`confidence`)."""
        names = list(dict.fromkeys(name for name, _ in self.accuracy))
        levels = sorted({level for _, level in self.accuracy})
        intervals = self.intervals()

        def cell(value, interval):
            low, high = interval
            return f"{100 * value:.1f} [{100 * low:.1f}, {100 * high:.1f}]"

        lines = [
            "| distortion | " + " | ".join(f"L{k}" for k in levels) + " | mean |",
            "|---" * (len(levels) + 2) + "|",
        ]
        for name in names:
            row = [(name, k) for k in levels if (name, k) in self.accuracy]
            cells = [
                cell(self.accuracy[(name, k)], intervals[(name, k)])
                if (name, k) in self.accuracy
                else "—"
                for k in levels
            ]
            mean = float(np.mean([self.accuracy[c] for c in row]))
            lines.append(
                f"| {name} | " + " | ".join(cells) + f" | {cell(mean, self.mean_interval(row))} |"
            )
        means, level_ci = self.level_means(), self.level_intervals()
        lines.append(
            "| level mean | "
            + " | ".join(cell(means[k], level_ci[k]) for k in levels)
            + f" | {cell(self.mean(), self.mean_interval())} |"
        )
        percent = f"{100 * self.confidence:g} %"
        lines.append(
            f"\nAccuracy (%) [{percent} interval]: Wilson score per cell, stratified Wilson "
            "(effective sample size) for the means; images counted as independent trials."
        )
        return "\n".join(lines)


class ImageFolderDataset(torch.utils.data.Dataset):
    """``(image, superclass index)`` pairs of a file list: ``Resize((224, 224))`` + ``ToTensor``,
    i.e. a float32 ``(3, 224, 224)`` tensor in [0, 1] and an int."""

    def __init__(self, files: list[Path], labels: list[int]):
        self.files, self.labels = files, labels

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index):
        resized = resize_exact(read_rgb(self.files[index], "root"), INPUT_SIZE, INPUT_SIZE)
        array = np.array(resized, dtype=np.uint8)
        tensor = torch.from_numpy(array).permute(2, 0, 1).float().div(255)
        return tensor, self.labels[index]


def scan_cell(folder: Path, names: tuple[str, ...]) -> tuple[list[Path], list[int]]:
    """Sorted image files of one cell and their superclass indices.

    Raises
    ------
    ValueError
        If a sub-folder is not a superclass name (all unknown ones are listed) or the cell has
        no image.
    """
    index = {name: j for j, name in enumerate(names)}
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir())
    unknown = [p.name for p in subfolders if p.name not in index]
    if unknown:
        raise ValueError(
            f"{folder}: unknown superclass folder(s) {unknown}; expected a subset of {list(names)}"
        )
    files, labels = [], []
    for sub in subfolders:
        for path in sorted(sub.iterdir()):
            if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
                files.append(path)
                labels.append(index[sub.name])
    if not files:
        raise ValueError(
            f"{folder} holds no image in a superclass sub-folder (expected <cell>/<superclass>/*)"
        )
    return files, labels


def _cells(root: Path, distortions, levels) -> list[tuple[str, int, Path]]:
    if not root.is_dir():
        raise FileNotFoundError(f"`root` {root} is not a directory")
    if distortions is None:
        distortions = DISTORTIONS
    elif isinstance(distortions, str):
        distortions = [distortions]
    names = list(dict.fromkeys(resolve(d) for d in distortions))
    if not names:
        raise ValueError("`distortions` must not be empty")
    levels = (
        LEVELS if levels is None else [levels] if isinstance(levels, numbers.Integral) else levels
    )
    levels = [check_level(k, "levels") for k in levels]
    if not levels:
        raise ValueError("`levels` must not be empty")
    cells = [(n, k, root / n / f"intensity_level_{k}") for n in names for k in levels]
    missing = [str(path.relative_to(root)) for _, _, path in cells if not path.is_dir()]
    if missing:
        raise FileNotFoundError(f"`root` {root} lacks the cell folder(s): {', '.join(missing)}")
    return cells


def check_device(device) -> torch.device:
    """`device` as a ``torch.device`` that this torch build can use.

    Raises
    ------
    ValueError
        If `device` is not a device string / ``torch.device``, or names CUDA (MPS) where it is not
        available.
    """
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(
            f"`device` must be a torch device such as 'cpu' or 'cuda:0', got {device!r}"
        ) from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"`device` {str(device)!r}: CUDA is not available in this torch build")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"`device` {str(device)!r}: MPS is not available")
    return device


def _distributed() -> tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@torch.no_grad()
def score_folder(head, files, labels, *, batch_size=32, num_workers=0, device="cpu", desc=None):
    """``(correct, total)`` of `head` on the given files (this rank's strided shard only)."""
    rank, world = _distributed()
    files, labels = files[rank::world], labels[rank::world]
    correct = 0
    if files:
        loader = torch.utils.data.DataLoader(
            ImageFolderDataset(files, labels), batch_size=batch_size, num_workers=num_workers
        )
        for images, target in progress(
            loader, desc=desc, unit="batch", disable=rank != 0, leave=False
        ):
            scores = head(images.to(device))
            correct += int((scores.argmax(dim=1).cpu() == target).sum())
    return correct, len(files)


def evaluate(
    model,
    root,
    *,
    normalize,
    distortions=None,
    levels=None,
    batch_size: int = 32,
    num_workers: int = 0,
    device="cpu",
    mapping="laion-c16",
    model_name: str = "model",
    outputs: str = "logits",
    confidence: float = 0.95,
) -> Results:
    """Superclass top-1 accuracy of `model` on every (distortion, level) cell under `root`,
    with Wilson confidence intervals.

    Parameters
    ----------
    model : torch.nn.Module or callable
        ImageNet classifier, ``(N, 3, 224, 224)`` float tensor -> ``(N, 1000)`` logits or
        probabilities (tensor or array). A module is moved to `device`; a plain callable
        receives tensors on `device` and handles its own placement.
    root : str or Path
        LAION-C root (``<root>/<distortion>/intensity_level_<k>/<superclass>/*``).
    normalize : "imagenet", None or (mean, std)
        Required. None feeds [0, 1] tensors as the official evaluation does.
    outputs : {"logits", "probs"}, default="logits"
        What `model` returns: logits get the official softmax; probabilities are used as they
        are and must be non-negative with rows summing to 1.
    confidence : float in (0, 1), default=0.95
        Level of the intervals of the returned :class:`Results`.
    distortions : str or list of str, optional
        Default: all six.
    levels : int or list of int, optional
        Default: 1..5.
    batch_size, num_workers : int
    device : str or torch.device
    mapping : "laion-c16" or dict of str to list of int
        Superclass -> ImageNet class indices; folder names must be its keys.
    model_name : str
        The CSV's ``model`` column.

    Returns
    -------
    Results

    Raises
    ------
    FileNotFoundError
        If `root` or a cell folder is missing (all missing cells are listed).
    ValueError
        Unknown distortion or superclass folder, bad level, batch_size < 1, bad `normalize`,
        `outputs` or `confidence`, unusable `device`, an image file Pillow cannot read (named),
        a model output that is not ``(N, 1000)`` and finite, or, with ``outputs="probs"``,
        negative or not normalised.
    TypeError
        If `model` is not callable.
    """
    batch_size = int(check_scalar(batch_size, "batch_size", kind=int, low=1))
    num_workers = int(check_scalar(num_workers, "num_workers", kind=int, low=0))
    device = check_device(device)
    check_scalar(confidence, "confidence", low=0, high=1, inclusive="neither")
    head = SuperclassHead(model, normalize=normalize, mapping=mapping, outputs=outputs)
    head = head.to(device).eval()
    names = tuple(resolve_mapping(mapping))
    cells = _cells(Path(root), distortions, levels)
    counts = {}
    for name, level, folder in cells:
        files, labels = scan_cell(folder, names)
        counts[(name, level)] = score_folder(
            head, files, labels, batch_size=batch_size, num_workers=num_workers, device=device,
            desc=f"{name} L{level}",
        )  # fmt: skip
    _, world = _distributed()
    if world > 1:
        flat = torch.tensor([v for pair in counts.values() for v in pair], dtype=torch.int64)
        torch.distributed.all_reduce(flat)
        counts = {cell: (int(flat[2 * i]), int(flat[2 * i + 1])) for i, cell in enumerate(counts)}
    return Results.from_counts(counts, model_name, confidence)
