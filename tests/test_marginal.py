"""``method="auto"`` returns the better-supported of a pair and flags a disagreement; the cross-check
stops at the precision of the estimate it checks (``pm_evidence.marginal``, issue 13 part 6)."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.evidence import Evidence
from pm_evidence.marginal import check_precision, cross_checked


def _ev(log_z, se, method, warnings=()):
    return Evidence(log_z=log_z, se=se, method=method, warnings=warnings)


def test_cross_check_returns_the_better_supported_and_flags_a_disagreement():
    agree = cross_checked(_ev(1.00, 0.01, "bridge"), _ev(1.02, 0.02, "ais"))
    assert agree.method == "bridge" and agree.reliable
    assert agree.diagnostics["auto_other_method"] == "ais"
    assert agree.diagnostics["auto_z"] == pytest.approx(0.02 / np.hypot(0.01, 0.02))
    flagged_primary = cross_checked(_ev(1.0, 0.01, "bridge", ("low ESS",)), _ev(1.0, 0.02, "ais"))
    assert flagged_primary.method == "ais"  # an unflagged result beats a smaller SE
    with pytest.warns(UserWarning, match="disagree by"):
        apart = cross_checked(_ev(1.0, 0.01, "bridge"), _ev(1.7, 0.01, "ais"))
    assert not apart.reliable and "disagree by" in apart.warnings[-1]


def test_the_cross_check_stops_at_the_precision_of_the_estimate_it_checks():
    # AIS checking a bridge estimate of SE 0.03 stops at SE 0.03, not the default 0.005
    loose = check_precision("ais", {"draws": 500}, _ev(1.0, 0.03, "bridge"))
    assert loose["annealing"].target_se == 0.03 and loose["draws"] == 500
    # a precise estimate, a user's own annealing options, or a tempered check: unchanged
    tight = {"draws": 500}
    assert check_precision("ais", tight, _ev(1.0, 0.001, "bridge")) is tight
    given = {"target_se": 0.01}
    assert check_precision("ais", given, _ev(1.0, 0.03, "bridge")) is given
    assert check_precision("rts", tight, _ev(1.0, 0.03, "bridge")) is tight


def test_auto_is_the_default_and_says_what_it_compared(normal_mean_target):
    _, exact, target = normal_mean_target
    ev = pme.marginal_likelihood(target, random_seed=2, progressbar=False, draws=500, tune=500)
    assert ev.method == "bridge" or ev.method == "ais"
    assert ev.diagnostics["auto_pair"] == "bridge checked by ais"
    assert abs(ev.log_z - exact) < 4 * ev.se + 0.02
    assert ev.diagnostics["auto_z"] < 4
