"""Plots of Evidence results (matplotlib imported lazily: an optional dependency)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pm_evidence.evidence import Evidence

__all__ = ["plot_evidence"]


def plot_evidence(
    evidences: Mapping[str, Evidence], *, prob: float = 0.95, reference=None, ax=None
):
    """Forest plot of log Z estimates with their normal-approximation intervals.

    Parameters
    ----------
    evidences : dict of label to Evidence
        E.g. one entry per method, or per model.
    prob : float
        Interval probability (from each result's ``se``).
    reference : float, optional
        A known value of log Z to draw as a vertical line (e.g. the exact one).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "plot_evidence needs matplotlib: pip install 'pm_evidence[plot]'."
        ) from err

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(evidences)))
    labels = list(evidences)
    centres = np.array([evidences[k].log_z for k in labels])
    intervals = np.array([evidences[k].interval(prob) for k in labels])
    y = np.arange(len(labels))[::-1]
    ax.errorbar(
        centres,
        y,
        xerr=[centres - intervals[:, 0], intervals[:, 1] - centres],
        fmt="o",
        capsize=3,
        color="C0",
    )
    if reference is not None:
        ax.axvline(reference, color="C3", linestyle="--", label="reference")
        ax.legend(loc="best")
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"log Z  ({int(prob * 100)}% interval from the reported SE)")
    return ax
