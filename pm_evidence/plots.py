"""Plots of Evidence results (matplotlib imported lazily: an optional dependency)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pm_evidence.evidence import Evidence

__all__ = ["plot_evidence", "plot_occupancy", "plot_transition_matrix"]


def _pyplot(caller: str):
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(f"{caller} needs matplotlib: pip install 'pm_evidence[plot]'.") from err
    return plt


def _tempering_stats(evidence: Evidence, needed: str):
    stats = evidence.sample_stats
    if needed not in stats:
        raise ValueError(
            f"This result (method {evidence.method!r}) has no {needed!r} in sample_stats; "
            f"occupancy and transition plots need a tempered method ('rts', 'ti' or 'mbar')."
        )
    return stats


def plot_occupancy(evidence: Evidence, *, ax=None):
    """Occupancy ``c_k`` of every rung against the prior ``r_k`` (seed 004 §2.4, Fig. 1).

    With good ``Zhat_k``'s, ``c_k ~ r_k`` on every rung (the dashed line). A rung far below
    ``r_k`` is rarely visited: the tempered chains do not cross it, and ``log Z`` estimates
    that rely on it are poor. The count-based occupancy is drawn too: far noisier than the
    Rao-Blackwellized ``c_k``.
    """
    plt = _pyplot("plot_occupancy")
    stats = _tempering_stats(evidence, "occupancy")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    rung = np.arange(stats.sizes["rung"])
    ax.plot(rung, stats["occupancy_counts"], ".", color="0.6", label="counts")
    ax.plot(rung, stats["occupancy"], "-", color="C0", label="$\\hat c_k$ (Rao-Blackwellized)")
    ax.plot(rung, stats["prior_r"], "--", color="C3", label="$r_k$ (target)")
    ax.set_xlabel("rung k (beta increasing)")
    ax.set_ylabel("occupancy")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best")
    return ax


def plot_transition_matrix(evidence: Evidence, *, ax=None):
    """Empirical ``beta`` transition matrix of the tempered chains (seed 004 App. F).

    Row ``j``: where chains at rung ``j`` moved next (rows normalized). A healthy run shows a
    band around the diagonal all the way along; a "knot" -- a rung where the band pinches and
    chains rarely cross -- signals a reference ``p0`` poorly matched to the target and estimates
    that will be poor.
    """
    plt = _pyplot("plot_transition_matrix")
    stats = _tempering_stats(evidence, "transitions")
    counts = np.asarray(stats["transitions"])
    rows = counts.sum(axis=1, keepdims=True)
    probs = np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4))
    image = ax.imshow(np.log10(probs + 1e-4), origin="lower", cmap="viridis", vmin=-4, vmax=0)
    ax.figure.colorbar(image, ax=ax, label="log10 P(k -> k')")
    ax.set_xlabel("next rung k'")
    ax.set_ylabel("rung k")
    return ax


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
    plt = _pyplot("plot_evidence")
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
