"""Matplotlib figures (optional extra ``permucate[plot]``)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise ImportError("plotting needs matplotlib: pip install 'permucate[plot]'") from err
    return plt


def plot_importances(table, ax=None, title=None, alpha=0.05, truth=None):
    """Horizontal bars of ``table.importance`` with ``[ci_low, ci_high]`` error bars.

    Parameters
    ----------
    table : DataFrame
        Output of ``summary()``.
    ax : matplotlib Axes, default=None
    title : str, default=None
    alpha : float, default=0.05
        Level used in the legend.
    truth : array-like of shape (G,), default=None
        True importances, drawn as markers when given.

    Returns
    -------
    matplotlib Axes
    """
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.35 * len(table) + 1.5))
    if not hasattr(ax, "barh"):
        raise TypeError(f"`ax` must be a matplotlib Axes or None, got {type(ax).__name__}")
    y = np.arange(len(table))[::-1]
    err = np.vstack([table.importance - table.ci_low, table.ci_high - table.importance])
    significant = np.asarray(table.significant, dtype=bool)
    for mask, color, label in (
        (significant, "tab:blue", f"one-sided p < {alpha:g}"),
        (~significant, "tab:gray", f"p >= {alpha:g}"),
    ):
        if mask.any():
            ax.barh(y[mask], table.importance[mask], color=color, label=label)
    ax.errorbar(table.importance, y, xerr=err, fmt="none", ecolor="black", capsize=2,
                label=f"two-sided {1 - alpha:.0%} CI")  # fmt: skip
    if truth is not None:
        ax.plot(np.asarray(truth), y, "r|", markersize=14, markeredgewidth=2, label="truth")
    # Several arms: a (contrast, feature) index, labelled "feature (contrast)".
    labels = [f"{i[1]} ({i[0]})" if isinstance(i, tuple) else str(i) for i in table.index]
    ax.set_yticks(y, labels)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("importance ψ̂")
    if title:
        ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return ax
