"""Figures of results (``pm_evidence.plots``) and ArviZ's ``plot_compare`` on the comparison table."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError


@pytest.mark.parametrize("relative_scale", [True, False])
def test_arviz_plot_compare_accepts_the_table(relative_scale, evidences):
    import arviz as az

    table = pme.compare(evidences)
    collection = az.plot_compare(table, relative_scale=relative_scale, backend="matplotlib")
    ax = np.asarray(collection.viz["plot"]).item()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["narrow", "flagged", "wide"]
    column = "elpd_diff" if relative_scale else "elpd"
    plotted = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections])
    np.testing.assert_allclose(np.sort(plotted), np.sort(table[column].to_numpy()))
    matplotlib.pyplot.close("all")


def test_plot_bayes_factor_draws_log_bf_interval_and_categories(evidences):
    evs = evidences
    ax = pme.plot_bayes_factor(evs["narrow"], evs["wide"], prob=0.9)
    point = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(point) == 1
    np.testing.assert_allclose(
        np.asarray(point[0].get_xdata(), dtype=float), [2.5]
    )  # log BF10 = -10.0 - (-12.5)
    half = 1.6448536 * np.hypot(0.3, 0.2)
    caps = np.concatenate(
        [line.get_xdata() for line in ax.lines if line.get_marker() == "|"]
    ).astype(float)
    np.testing.assert_allclose(np.sort(caps), [2.5 - half, 2.5 + half], rtol=1e-6)
    labels = {t.get_text() for t in ax.texts}
    assert {"anecdotal", "moderate", "strong", "very strong", "extreme"} <= labels
    lo, hi = ax.get_xlim()
    assert lo < -np.log(100) and hi > 2.5 + half
    assert "narrow" in ax.get_title() and "wide" in ax.get_title()
    ax = pme.plot_bayes_factor(evs["narrow"], evs["wide"], categories="kass_raftery")
    assert "positive" in {t.get_text() for t in ax.texts}
    with pytest.raises(EvidenceInputError, match="categories 'bic'"):
        pme.plot_bayes_factor(evs["narrow"], evs["wide"], categories="bic")
    matplotlib.pyplot.close("all")


def test_plot_evidence_tick_labels_stay_inside_the_figure(evidences):
    evs = {"a rather long label for one of the methods": evidences["wide"], **evidences}
    ax = pme.plot_evidence(evs)
    figure = ax.figure
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    box = figure.bbox
    for label in [*ax.get_yticklabels(), ax.xaxis.label]:
        extent = label.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 0.5 and extent.x1 <= box.x1 + 0.5, label.get_text()
        assert extent.y0 >= box.y0 - 0.5 and extent.y1 <= box.y1 + 0.5, label.get_text()
    matplotlib.pyplot.close("all")
