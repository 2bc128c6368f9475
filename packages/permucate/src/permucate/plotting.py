"""Matplotlib figures (optional extra ``permucate[plot]``)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
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
    y = np.arange(len(table))[::-1]
    err = np.vstack([table.importance - table.ci_low, table.ci_high - table.importance])
    colors = np.where(table.significant, "tab:blue", "tab:gray")
    ax.barh(y, table.importance, xerr=err, color=colors, capsize=2, label=f"{1 - alpha:.0%} CI")
    if truth is not None:
        ax.plot(np.asarray(truth), y, "k|", markersize=12, label="truth")
    ax.set_yticks(y, [str(i) for i in table.index])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("importance ψ̂")
    if title:
        ax.set_title(title)
    ax.legend(loc="lower right", fontsize="small")
    return ax
