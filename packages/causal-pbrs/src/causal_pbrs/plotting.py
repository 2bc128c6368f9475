"""Figures of the reproduction (matplotlib, from the ``[plot]`` extra, imported lazily)."""

from __future__ import annotations

import numpy as np


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError('plots need matplotlib: pip install "causal-pbrs[plot]"') from error
    return plt


def plot_regret_curves(results, settings, labels, path):
    """Cumulative gap regret (log y) per environment: official configuration solid, mean over
    seeds with the seeds' range shaded; the time-indexed causal run dashed."""
    plt = _pyplot()
    envs = settings.envs
    fig, axes = plt.subplots(1, len(envs), figsize=(6 * len(envs), 4.2), squeeze=False)
    for ax, name in zip(axes[0], envs, strict=True):
        first = results[f"{name}-s{settings.seeds[0]}"]
        x = np.asarray(first["marks"]) + 1
        styles = [("official", m, "-") for m in labels] + [
            ("paper", "causal", "--"),
            ("paper", "zero", ":"),
        ]
        for i, (config, method, style) in enumerate(styles):
            key = f"{config}/{method}"
            curves = np.array(
                [results[f"{name}-s{s}"]["runs"][key]["curve"] for s in settings.seeds]
            )
            curves = np.maximum(curves, 1e-2)  # log scale: an all-zero start stays visible
            color = f"C{i % len(labels)}" if config == "official" else "black"
            label = labels[method] + ("" if config == "official" else f" ({config})")
            ax.plot(x, curves.mean(axis=0), style, color=color, label=label, linewidth=1.6)
            if config == "official" and len(settings.seeds) > 1:
                ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=color, alpha=0.15)
        ax.set(
            yscale="log",
            xlabel="episode",
            ylabel="cumulative gap regret",
            title=f"{name} ({len(settings.seeds)} seeds)",
        )
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize="x-small", loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_potential_maps(maps, shape, path, hidden=None):
    """Heatmaps of V*_1 and of each potential at the first step on the grid; `hidden` cells
    (walls, lava, goal) are left blank."""
    plt = _pyplot()
    names = list(maps)
    values = [np.asarray(maps[n], dtype=float).reshape(shape) for n in names]
    if hidden is not None:
        values = [np.where(np.asarray(hidden).reshape(shape), np.nan, v) for v in values]
    low = min(np.nanmin(v) for v in values)
    fig, axes = plt.subplots(1, len(names), figsize=(2.6 * len(names), 2.9))
    for ax, name, v in zip(axes, names, values, strict=True):
        image = ax.imshow(v, cmap="viridis", vmin=low, vmax=0.0)
        ax.set_title(name, fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(image, ax=axes, shrink=0.8, label="value at h = 1")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
