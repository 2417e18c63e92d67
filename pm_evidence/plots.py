"""Plots of Evidence results (matplotlib imported lazily: an optional dependency).

Every function takes keyword-only options after its data, draws on ``ax`` when given (else on a
new figure with a constrained layout, so that labels are never clipped) and returns the
matplotlib ``Axes``. Tables from :func:`pm_evidence.compare` are drawn by
``arviz_plots.plot_compare`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from pm_evidence.compare import bayes_factor, evidence_mapping
from pm_evidence.core.evidence import Evidence, format_estimate
from pm_evidence.core.exceptions import EvidenceInputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "plot_bayes_factor",
    "plot_evidence",
    "plot_occupancy",
    "plot_prior_robustness",
    "plot_transition_matrix",
]


def _pyplot(caller: str):
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(f"{caller} needs matplotlib: pip install 'pm_evidence[plot]'.") from err
    return plt


def _new_axes(plt, figsize):
    """Axes on a new figure whose constrained layout keeps long tick labels inside it."""
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


_TEMPERED_PARAMETERS = """Parameters
    ----------
    evidence : Evidence
        A result of a tempered method (``"rts"``, ``"ti"`` or ``"mbar"``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure if omitted.

    Returns
    -------
    matplotlib.axes.Axes
    """


def _tempered_plot(function):
    """The docstring of a plot of a tempered run completed with its shared parameters."""
    if function.__doc__:  # None under python -OO
        function.__doc__ = function.__doc__.replace("{parameters}", _TEMPERED_PARAMETERS)
    return function


def _tempering_axes(evidence: Evidence, needed: str, caller: str, ax, figsize):
    """``(pyplot, the result's sample_stats, axes)`` of a plot of a tempered run: an error where
    the result has no ``needed`` statistic, and a new figure where ``ax`` is None."""
    plt = _pyplot(caller)
    stats = evidence.sample_stats
    if needed not in stats:
        raise ValueError(
            f"This result (method {evidence.method!r}) has no {needed!r} in sample_stats; "
            f"occupancy and transition plots need a tempered method ('rts', 'ti' or 'mbar')."
        )
    return plt, stats, _new_axes(plt, figsize) if ax is None else ax


@_tempered_plot
def plot_occupancy(evidence: Evidence, *, ax: Axes | None = None) -> Axes:
    """Occupancy ``c_k`` of every rung against the prior ``r_k`` (seed 004 §2.4, Fig. 1).

    With good ``Zhat_k``'s, ``c_k ~ r_k`` on every rung (the dashed line). A rung far below
    ``r_k`` is rarely visited: the tempered chains do not cross it, and ``log Z`` estimates
    that rely on it are poor. The count-based occupancy is drawn too: far noisier than the
    Rao-Blackwellized ``c_k``.

    {parameters}"""
    _, stats, ax = _tempering_axes(evidence, "occupancy", "plot_occupancy", ax, (6, 3.5))
    rung = np.arange(stats.sizes["rung"])
    ax.plot(rung, stats["occupancy_counts"], ".", color="0.6", label="counts")
    ax.plot(rung, stats["occupancy"], "-", color="C0", label="$\\hat c_k$ (Rao-Blackwellized)")
    ax.plot(rung, stats["prior_r"], "--", color="C3", label="$r_k$ (target)")
    ax.set_xlabel("rung k (beta increasing)")
    ax.set_ylabel("occupancy")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best")
    return ax


@_tempered_plot
def plot_transition_matrix(evidence: Evidence, *, ax: Axes | None = None) -> Axes:
    """Empirical ``beta`` transition matrix of the tempered chains (seed 004 App. F).

    Row ``j``: where chains at rung ``j`` moved next (rows normalized). A healthy run shows a
    band around the diagonal all the way along; a "knot" -- a rung where the band pinches and
    chains rarely cross -- signals a reference ``p0`` poorly matched to the target and estimates
    that will be poor.

    {parameters}"""
    _, stats, ax = _tempering_axes(evidence, "transitions", "plot_transition_matrix", ax, (4.5, 4))
    counts = np.asarray(stats["transitions"])
    rows = counts.sum(axis=1, keepdims=True)
    probs = np.divide(counts, rows, out=np.zeros_like(counts), where=rows > 0)
    image = ax.imshow(np.log10(probs + 1e-4), origin="lower", cmap="viridis", vmin=-4, vmax=0)
    ax.figure.colorbar(image, ax=ax, label="log10 P(k -> k')")
    ax.set_xlabel("next rung k'")
    ax.set_ylabel("rung k")
    return ax


def plot_evidence(
    evidences: Mapping[str, Evidence] | Sequence[Evidence] | Evidence,
    *,
    prob: float = 0.95,
    reference: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Forest plot of log Z estimates with their normal-approximation intervals.

    Parameters
    ----------
    evidences : dict of str to Evidence, list of Evidence, EvidenceSet or Evidence
        E.g. one entry per method, or per model: whatever :func:`~pm_evidence.compare` accepts
        (a list is labelled by model name, as there), or a single result.
    prob : float
        Interval probability (from each result's ``se``).
    reference : float, optional
        A known value of log Z to draw as a vertical line (e.g. the exact one).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure (constrained layout: long labels are not clipped) if
        omitted.

    Returns
    -------
    matplotlib.axes.Axes
    """
    plt = _pyplot("plot_evidence")
    if isinstance(evidences, Evidence):
        evidences = {evidences.method: evidences}
    else:
        evidences = evidence_mapping(evidences, minimum=1)
    if ax is None:
        longest = max((len(str(label)) for label in evidences), default=0)
        ax = _new_axes(plt, (max(6.0, 3.5 + 0.08 * longest), 1.0 + 0.45 * len(evidences)))
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
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_xlabel(f"log Z ({prob:.0%} interval from the SE)")
    return ax


# Evidence categories of a Bayes factor, as bounds on BF10 >= 1 (symmetric for BF01).
# Jeffreys (1961, App. B), with the labels of Lee & Wagenmakers (2013) used by JASP;
# Kass & Raftery (1995, Sec. 3.2), whose bounds are on 2 log BF = 2, 6, 10.
BF_CATEGORIES = {
    "jeffreys": (
        (1.0, "anecdotal"),
        (3.0, "moderate"),
        (10.0, "strong"),
        (30.0, "very strong"),
        (100.0, "extreme"),
    ),
    "kass_raftery": (
        (1.0, "bare mention"),
        (float(np.exp(1.0)), "positive"),
        (float(np.exp(3.0)), "strong"),
        (float(np.exp(5.0)), "very strong"),
    ),
}


def plot_bayes_factor(
    ev1: Evidence,
    ev0: Evidence,
    *,
    prob: float = 0.95,
    categories: str = "jeffreys",
    check_data: bool = True,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """The log Bayes factor ``log BF10`` with its interval, over the usual evidence categories.

    The point is ``log Z1 - log Z0``; the bar its normal-approximation interval from the
    combined standard error ``sqrt(se1^2 + se0^2)`` (Monte Carlo error only). Shaded bands mark
    the evidence categories for H1 (right of 0) and for H0 (left). The value and half-width
    are printed to two significant digits of the half-width
    (``pm_evidence.core.evidence.format_estimate``), so a small error is not shown as ``0.00``.

    Parameters
    ----------
    ev1, ev0 : Evidence or xarray.DataTree
        Log evidences of H1 and H0, as for :func:`pm_evidence.bayes_factor`.
    prob : float
        Probability of the interval.
    categories : {"jeffreys", "kass_raftery"}
        ``"jeffreys"``: BF 1-3 anecdotal, 3-10 moderate, 10-30 strong, 30-100 very strong,
        above 100 extreme (Jeffreys 1961, labels of Lee & Wagenmakers 2013);
        ``"kass_raftery"``: 2 log BF 0-2 not worth more than a bare mention, 2-6 positive,
        6-10 strong, above 10 very strong (Kass & Raftery 1995).
    check_data : bool
        Refuse two models fitted to different observed data.
    labels : (str, str), optional
        Names of the two models, H1's first, for the axis label and title. Default: each
        result's ``model_name`` where it has one, else ``"H1"`` and ``"H0"``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure if omitted.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    EvidenceInputError
        For unknown ``categories``, a ``prob`` outside (0, 1), ``labels`` that are not two
        non-empty strings, or models fitted to different data (with ``check_data``).

    Examples
    --------
    >>> pm_evidence.plot_bayes_factor(ev1, ev2, labels=("pooled", "separate"))  # doctest: +SKIP
    """
    _check_categories(categories, prob)
    if labels is not None and (
        isinstance(labels, str)
        or len(labels) != 2
        or not all(isinstance(name, str) and name for name in labels)
    ):
        raise EvidenceInputError(
            f"labels must be two non-empty strings, H1's name first, got {labels!r}: e.g. "
            f"labels=('pooled', 'separate')."
        )
    bf = bayes_factor(ev1, ev0, check_data=check_data)
    plt = _pyplot("plot_bayes_factor")
    log_bf = float(bf["log_bayes_factor"].sel(bf_type="BF10"))
    half = float(_z_value(prob) * bf["log_bayes_factor_se"])
    limit = _category_limit(categories, abs(log_bf) + half)
    if ax is None:
        ax = _new_axes(plt, (7, 2.8))
    _category_bands(ax, categories, limit, vertical=True)
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.errorbar(log_bf, 0.35, xerr=half, fmt="o", capsize=4, color="C0", zorder=3)
    ax.set_xlim(-limit, limit)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    h1, h0 = labels if labels is not None else (bf.attrs["H1"] or "H1", bf.attrs["H0"] or "H0")
    ax.set_xlabel(
        f"log BF10 = log Z({h1}) - log Z({h0}) = {format_estimate(log_bf, half)} "
        f"({prob:.0%} interval)"
    )
    ax.set_title(f"← favours {h0}    |    favours {h1} →", fontsize="medium")
    return ax


def _check_categories(categories: str, prob: float) -> None:
    if categories not in BF_CATEGORIES:
        raise EvidenceInputError(
            f"Requested categories {categories!r} but it must be one of {list(BF_CATEGORIES)}."
        )
    if not 0 < prob < 1:
        raise EvidenceInputError(f"prob must be in (0, 1), got {prob!r}.")


def _z_value(prob: float) -> float:
    """The half-width of a central normal interval of probability ``prob``, in SEs."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 + prob / 2))


def _category_limit(categories: str, reach: float) -> float:
    """The axis limit on ``|log BF|``: every category up to the one holding ``reach`` (the
    farthest interval end), and a margin beyond it."""
    bounds = [np.log(b) for b, _ in BF_CATEGORIES[categories]]
    return 1.08 * max(reach, bounds[-1] + 0.6 * (bounds[-1] - bounds[-2]))


def _category_bands(ax, categories: str, limit: float, *, vertical: bool) -> None:
    """Shade the evidence categories on ``ax`` out to ``|log BF| = limit``: blue for H1
    (``log BF > 0``), red for H0, each labelled; ``vertical``: the log BF is the x axis (bands
    across it), else the y axis (labels at the right end)."""
    bounds = [np.log(b) for b, _ in BF_CATEGORIES[categories]]
    shades = np.linspace(0.96, 0.78, len(bounds))
    edges = [*bounds, limit]
    span = ax.axvspan if vertical else ax.axhspan
    for (_, label), lo, hi, shade in zip(
        BF_CATEGORIES[categories], edges[:-1], edges[1:], shades, strict=True
    ):
        for sign, colour in ((1, (shade, shade, 1.0)), (-1, (1.0, shade, shade))):
            span(sign * lo, sign * hi, color=colour, zorder=0, linewidth=0)
            narrow = hi - lo < 0.16 * limit
            if vertical:
                where = {"x": sign * (lo + hi) / 2, "y": 0.97, "ha": "center", "va": "top"}
                where |= {"transform": ax.get_xaxis_transform(), "rotation": 90 if narrow else 0}
            else:
                where = {"x": 0.99, "y": sign * (lo + hi) / 2, "ha": "right", "va": "center"}
                where |= {"transform": ax.get_yaxis_transform()}
            ax.text(s=label, fontsize="small", color="0.25", **where)


def plot_prior_robustness(
    robustness,
    *,
    model: str | Sequence[str] | None = None,
    prob: float = 0.95,
    categories: str = "jeffreys",
    xscale: str = "log",
    ax: Axes | None = None,
) -> Axes:
    """The log Bayes factor against the prior scale, over the evidence categories: the
    Bayes factor robustness check of JASP (Wagenmakers et al. 2018, Fig. 6).

    One line per model against the reference model of :func:`pm_evidence.prior_robustness`,
    with its normal-approximation interval from ``log_bf_se`` (Monte Carlo error only) as a
    band; a hollow marker is a scale where the result carries warnings (``reliable`` False).
    The bands are the evidence categories of :func:`plot_bayes_factor`, for the model (above 0)
    and for the reference (below).

    Parameters
    ----------
    robustness : xarray.Dataset
        What :func:`pm_evidence.prior_robustness` returned (also once saved and loaded).
    model : str or list of str, optional
        The model(s) to draw; default every model but the reference.
    prob : float
        Probability of the interval.
    categories : {"jeffreys", "kass_raftery"}
        As :func:`plot_bayes_factor`.
    xscale : str
        The scale of the x axis (``"log"``, default, or ``"linear"``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure if omitted.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    EvidenceInputError
        For a ``robustness`` that is not a result of :func:`pm_evidence.prior_robustness`, an
        unknown ``model`` or ``categories``, or a ``prob`` outside (0, 1).

    Examples
    --------
    >>> check = pm_evidence.prior_robustness(build_models, np.geomspace(0.1, 10, 7))  # doctest: +SKIP
    >>> pm_evidence.plot_prior_robustness(check)  # doctest: +SKIP
    """
    _check_categories(categories, prob)
    needed = {"log_bf", "log_bf_se", "reliable"}
    if not (
        isinstance(robustness, xr.Dataset)
        and needed <= set(robustness.data_vars)
        and {"scale", "model"} <= set(robustness.dims)
        and "reference" in robustness.attrs
    ):
        raise EvidenceInputError(
            f"robustness must be the Dataset that pm_evidence.prior_robustness returned (dims "
            f"scale and model, variables {sorted(needed)}, attrs reference), got a "
            f"{type(robustness).__name__}."
        )
    reference = robustness.attrs["reference"]
    names = [str(n) for n in robustness["model"].values]
    if model is None:
        chosen = [n for n in names if n != reference]
    else:
        chosen = [model] if isinstance(model, str) else list(model)
        unknown = [n for n in chosen if n not in names]
        if unknown:
            raise EvidenceInputError(
                f"Requested model {unknown[0]!r} but it must be one of {names}."
            )
    plt = _pyplot("plot_prior_robustness")
    z = _z_value(prob)
    scale = robustness["scale"].to_numpy()
    curves = {n: robustness.sel(model=n) for n in chosen}
    reach = max(
        (float(np.nanmax(np.abs(c["log_bf"]) + z * c["log_bf_se"])) for c in curves.values()),
        default=0.0,
    )
    limit = _category_limit(categories, reach if np.isfinite(reach) else 0.0)
    if ax is None:
        ax = _new_axes(plt, (7, 4))
    _category_bands(ax, categories, limit, vertical=False)
    ax.axhline(0.0, color="0.3", linewidth=0.8)
    for k, (name, curve) in enumerate(curves.items()):
        colour = f"C{k}"
        log_bf, half = curve["log_bf"].to_numpy(), z * curve["log_bf_se"].to_numpy()
        reliable = curve["reliable"].to_numpy().astype(bool)
        ax.fill_between(scale, log_bf - half, log_bf + half, color=colour, alpha=0.25, lw=0)
        ax.plot(scale, log_bf, "-", color=colour, label=f"{name} vs {reference}")
        ax.plot(scale[reliable], log_bf[reliable], "o", color=colour)
        ax.plot(scale[~reliable], log_bf[~reliable], "o", mfc="white", color=colour)
    ax.set_xscale(xscale)
    ax.set_ylim(-limit, limit)
    ax.set_xlabel("prior scale")
    ax.set_ylabel(f"log BF = log Z(model) - log Z({reference})")
    ax.set_title(
        f"prior robustness ({prob:.0%} intervals; hollow: the result carries warnings)",
        fontsize="medium",
    )
    ax.legend(loc="lower left", fontsize="small")
    return ax
