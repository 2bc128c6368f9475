"""The official 16-superclass scoring of LAION-C (``laionc/evaluation.py``).

A 1000-way ImageNet classifier is scored on 16 superclasses: softmax over the 1000 logits, the
superclass score is the MEAN of its member probabilities, the prediction is the argmax over the
16 scores (ties -> the first superclass in the official dict order below), the truth is the
image's parent folder name. The mean rule and the grouping follow bethgelab/model-vs-human's
16-class aggregation, with LAION-C's own member lists (285 ImageNet classes).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import torch

from icml25_core import check_array


def _ranges(*items) -> tuple[int, ...]:
    out: list[int] = []
    for item in items:
        out.extend(range(item[0], item[1] + 1) if isinstance(item, tuple) else [item])
    return tuple(out)


#: ImageNet class indices of each superclass, in the official dict order (ties go to the first).
SUPERCLASSES: dict[str, tuple[int, ...]] = {
    "fish": _ranges((0, 4), (147, 148), (393, 397)),
    "bird": _ranges(
        8, (10, 16), (18, 20), (22, 24), (80, 83), (87, 96), (98, 100), (127, 133), (135, 145)
    ),
    "snakes": _ranges((52, 55), (57, 68)),
    "dog": _ranges(
        (152, 191),
        (193, 203),
        (205, 226),
        (228, 241),
        (243, 250),
        (252, 257),
        259,
        (261, 263),
        (265, 268),
    ),
    "cat": _ranges((281, 286)),
    "butterfly": _ranges((321, 326)),
    "primate": _ranges((365, 382)),
    "instruments": (401, 402, 420, 432, 546, 558, 566, 579, 593, 594, 776, 881, 889),
    "timekeeping": (409, 530, 531, 826, 835, 892),
    "chair": (423, 559, 703, 765, 831, 857),
    "ball": (429, 430, 768, 805, 852, 890),
    "car_truck": (436, 511, 555, 569, 656, 675, 717, 734, 817, 864, 867),
    "bottle": (440, 720, 737, 898, 899, 901, 907),
    "boat": (472, 510, 554, 576, 625, 814, 914),
    "tools": (491, 499, 587, 596, 740, 784, 792),
    "fruit": _ranges((948, 951), 953, 954),
}

#: Superclass names in the official order (column ``j`` of :func:`superclass_matrix`).
NAMES: tuple[str, ...] = tuple(SUPERCLASSES)


def resolve_mapping(mapping="laion-c16", n_classes: int = 1000) -> dict[str, tuple[int, ...]]:
    """``{superclass: member class indices}`` from ``"laion-c16"`` or a user dict.

    Raises
    ------
    TypeError
        If `mapping` is neither ``"laion-c16"`` nor a mapping.
    ValueError
        If a group is empty or names a class outside ``[0, n_classes)``, or ``"laion-c16"`` is
        used with ``n_classes != 1000``.
    """
    if isinstance(mapping, str):
        if mapping != "laion-c16":
            raise ValueError(f"`mapping` must be 'laion-c16' or a dict, got {mapping!r}")
        if n_classes != 1000:
            raise ValueError(
                f"`mapping` 'laion-c16' needs the 1000 ImageNet classes, got {n_classes} columns"
            )
        return dict(SUPERCLASSES)
    if not isinstance(mapping, Mapping) or not mapping:
        raise TypeError(f"`mapping` must be 'laion-c16' or a non-empty dict, got {mapping!r}")
    out = {}
    for name, members in mapping.items():
        members = tuple(int(m) for m in np.atleast_1d(np.asarray(members)))
        if not members:
            raise ValueError(f"`mapping`[{name!r}] has no member class")
        if min(members) < 0 or max(members) >= n_classes:
            raise ValueError(f"`mapping`[{name!r}] has classes outside [0, {n_classes})")
        out[str(name)] = members
    return out


def superclass_matrix(mapping="laion-c16", n_classes: int = 1000) -> np.ndarray:
    """``M`` with ``M[c, j] = 1 / |S_j|`` if class ``c`` is in superclass ``j``, else 0.

    ``probs @ M`` gives the official superclass scores (mean of member probabilities).

    Returns
    -------
    numpy.ndarray, shape (n_classes, K), float64
    """
    groups = resolve_mapping(mapping, n_classes)
    matrix = np.zeros((n_classes, len(groups)))
    for j, members in enumerate(groups.values()):
        matrix[list(members), j] = 1.0 / len(members)
    return matrix


def aggregate(probs, mapping="laion-c16") -> np.ndarray:
    r"""Superclass scores: the mean of member probabilities (``laionc/evaluation.py``).

    $$
    \mathrm{score}_j(x) = \frac{1}{|S_j|} \sum_{c \in S_j} p_c(x)
    $$

    Parameters
    ----------
    probs : array_like, shape (N, C), float
        Class probabilities (softmax outputs): non-negative, each row summing to 1 (within
        ``1e-3``). Logits must go through a softmax first.
    mapping : "laion-c16" or dict of str to list of int

    Returns
    -------
    numpy.ndarray, shape (N, K), float64

    Raises
    ------
    ValueError
        If `probs` is not 2-D, is empty or holds NaN/inf, has negative entries or rows that do
        not sum to 1 (logits passed as probabilities), or its width does not fit `mapping`
        (1000 columns for ``"laion-c16"``).
    """
    probs = check_array(probs, "probs", ndim=2, dtype="floating", cast=np.float64)
    try:
        member = superclass_matrix(mapping, probs.shape[1]) > 0
    except ValueError as error:
        raise ValueError(
            f"`probs` of shape {probs.shape} does not fit `mapping`: {error}"
        ) from None
    # one product gives the member sums and, in the last column, the row sums for the check
    sums = probs @ np.column_stack([member, np.ones(len(member))])
    check_probabilities(probs.min(), sums[:, -1], "`probs`", "pass logits through a softmax first")
    # sum, then divide by the group size: exact ties stay ties (the official sum / len)
    return sums[:, :-1] / member.sum(axis=0)


PROB_TOLERANCE = 1e-3  # |row sum - 1| allowed for probabilities (float16 softmax rows)


def check_probabilities(low: float, sums, label: str, hint: str) -> None:
    """Raise unless a batch with smallest entry `low` and row sums `sums` is a batch of
    probability distributions.

    Parameters
    ----------
    low : float
        The smallest entry of the ``(N, C)`` batch.
    sums : numpy.ndarray or torch.Tensor, shape (N,)
        Its row sums.
    label : str
        The argument as the message names it, e.g. ``"`probs`"``.
    hint : str
        What to do instead, appended to the message.

    Raises
    ------
    ValueError
        If `low` is negative or a row sum differs from 1 by more than ``1e-3``.
    """
    if low < 0 or float(abs(sums - 1).max()) > PROB_TOLERANCE:
        problem = f"a negative entry ({low:.3g})" if low < 0 else "a row that does not sum to 1"
        raise ValueError(
            f"{label} must be probabilities (entries >= 0, rows summing to 1), got {problem}; "
            f"{hint}"
        )


def looks_like_probabilities(out) -> bool:
    """Whether every row of `out` (``(N, C)`` tensor) is non-negative and sums to 1."""
    return bool((out >= 0).all()) and float(abs(out.sum(1) - 1).max()) <= PROB_TOLERANCE


def predict(probs, mapping="laion-c16") -> np.ndarray:
    """Predicted superclass index per row: argmax of :func:`aggregate` (first on ties).

    Returns
    -------
    numpy.ndarray, shape (N,), int64
    """
    return np.argmax(aggregate(probs, mapping), axis=1).astype(np.int64)


#: What a classifier returns: ``SuperclassHead(outputs=...)`` / ``evaluate(outputs=...)``.
OUTPUTS = ("logits", "probs")


class SuperclassHead(torch.nn.Module):
    """Wrap an ImageNet classifier so it outputs the official 16 superclass scores.

    ``forward(x) = softmax(model(normalize(x))) @ M`` for logits, ``model(normalize(x)) @ M``
    for probabilities, with ``M`` from :func:`superclass_matrix`; the float32 probabilities are
    accumulated in float64 (then returned as float32), so the scores of a row do not depend on
    the batch it is in and exact ties go to the first superclass (``argmax``).

    Parameters
    ----------
    model : torch.nn.Module or callable
        Maps ``(N, 3, H, W)`` float images to ``(N, C)`` logits or probabilities (a tensor or a
        numpy array). A module is registered as a sub-module (``.to(device)`` moves it); any
        other callable is kept as it is.
    normalize : "imagenet", None or (mean, std)
        Input normalisation applied before `model`: ``"imagenet"`` = mean (0.485, 0.456, 0.406),
        std (0.229, 0.224, 0.225); ``None`` feeds [0, 1] images unchanged (official evaluation).
    mapping : "laion-c16" or dict, default="laion-c16"
    n_classes : int, default=1000
    outputs : {"logits", "probs"}, default="logits"
        What `model` returns. Logits get the official softmax; probabilities are checked
        (non-negative, rows summing to 1 within ``1e-3``) and used as they are.

    Raises
    ------
    TypeError
        If `model` is not callable.
    ValueError
        If `normalize` is malformed or `outputs` is neither "logits" nor "probs".
    """

    # registered buffers: the input normalisation and the class -> superclass membership
    mean: torch.Tensor
    std: torch.Tensor
    member: torch.Tensor
    sizes: torch.Tensor

    def __init__(
        self,
        model,
        *,
        normalize,
        mapping="laion-c16",
        n_classes: int = 1000,
        outputs: str = "logits",
    ):
        super().__init__()
        if not callable(model):
            raise TypeError(
                f"`model` must be a torch.nn.Module or a callable, got {type(model).__name__}"
            )
        if outputs not in OUTPUTS:
            raise ValueError(f"`outputs` must be one of {OUTPUTS}, got {outputs!r}")
        self.model = model
        self.outputs = outputs
        mean, std = normalization(normalize)
        self.normalize = normalize
        self.register_buffer("mean", mean.view(1, 3, 1, 1))
        self.register_buffer("std", std.view(1, 3, 1, 1))
        member = superclass_matrix(mapping, n_classes) > 0
        self.names = tuple(resolve_mapping(mapping, n_classes))
        self.register_buffer("member", torch.as_tensor(member, dtype=torch.float32))
        self.register_buffer("sizes", torch.as_tensor(member.sum(axis=0), dtype=torch.float32))

    def forward(self, x):
        """``(N, 3, H, W)`` float images in [0, 1] -> ``(N, K)`` float32 superclass scores.

        Raises
        ------
        ValueError
            If `model` does not return ``(N, n_classes)`` values or returns NaN/inf; with
            ``outputs="probs"``, if they are negative or a row does not sum to 1.
        """
        out = self.model((x - self.mean) / self.std)
        if isinstance(out, np.ndarray):
            out = torch.from_numpy(out)
        expected = (x.shape[0], self.member.shape[0])
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"`model` must return {self.outputs} of shape {expected}, got {got}")
        if not torch.isfinite(out).all():
            raise ValueError(f"`model` returned NaN or infinite {self.outputs}")
        out = out.to(self.member.device, torch.float32)
        if self.outputs == "probs":
            hint = "if the model returns logits, pass outputs='logits'"
            check_probabilities(
                float(out.min()), out.sum(1), "`model` output (outputs='probs')", hint
            )
            probs = out
        else:
            if looks_like_probabilities(out):
                warnings.warn(
                    "`model` returned non-negative rows summing to 1 with outputs='logits': if "
                    "they are probabilities pass outputs='probs' (a softmax would flatten them)",
                    UserWarning,
                    stacklevel=2,
                )
            probs = out.softmax(dim=1)
        if probs.device.type == "mps":  # no float64 there
            return (probs @ self.member) / self.sizes
        # The float32 probabilities are summed in float64: a float32 matmul rounds differently
        # for 1 row (gemv) than for a batch (gemm), so mathematically tied means (constant
        # logits) went to different superclasses for different batch sizes. In float64 the sum
        # of <= 1000 float32 values of one binade is exact, so such ties are exact and
        # ``argmax`` gives the first superclass, whatever the batch size.
        member = self.member.to(torch.float64)
        sums = probs.to(torch.float64) @ member
        return (sums / self.sizes.to(torch.float64)).to(torch.float32)


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def normalization(normalize):
    """``(mean, std)`` float32 tensors of shape (3,) for `normalize`.

    Raises
    ------
    ValueError
        If `normalize` is not "imagenet", None or a pair of 3 numbers each with std > 0.
    """
    mean: tuple[float, ...] | np.ndarray
    std: tuple[float, ...] | np.ndarray
    if normalize is None:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    elif isinstance(normalize, str):
        if normalize != "imagenet":
            raise ValueError(
                f"`normalize` must be 'imagenet', None or (mean, std), got {normalize!r}"
            )
        mean, std = IMAGENET_MEAN, IMAGENET_STD
    else:
        try:
            mean_in, std_in = normalize
            mean = check_array(mean_in, "normalize", shape=(3,), dtype="numeric")
            std = check_array(std_in, "normalize", shape=(3,), dtype="numeric")
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"`normalize` must be 'imagenet', None or (mean, std) of 3 numbers each: {error}"
            ) from None
        if (np.asarray(std) <= 0).any():
            raise ValueError("`normalize` std must be > 0")
    return torch.tensor(mean, dtype=torch.float32), torch.tensor(std, dtype=torch.float32)
