"""``auto`` at defaults on priors with their own support (``pm_evidence.zoo.support``).

* a normal cut by an ``Interval`` transform (PyMC's prior is then not renormalized): the
  exploration draws the cut prior by rejection and divides by its exact mass;
* a circular radial-velocity orbit whose period and jitter have ``CustomDist`` Jeffreys and
  modified-Jeffreys priors, each with an ``Interval`` transform: no cut, so the prior is a
  reference and the exploration finds the narrow period mode.

Each within max(4 SE, 0.05) of its gold, not flagged, explored.
"""

from __future__ import annotations

import pytest

import pm_evidence as pme
from pm_evidence.zoo.support import SUPPORT_ZOO

ENTRIES = {entry.name: entry for entry in SUPPORT_ZOO}


@pytest.mark.parametrize("name", ["cut_normal", "circular_rv"])
def test_auto_at_defaults_is_right_and_explores(name):
    model, gold = ENTRIES[name].build()
    ev = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    assert "exploration" not in ev.diagnostics  # set only where the exploration was skipped
    assert ev.diagnostics["exploration_n_modes"] >= 1
    assert ev.reliable, ev.warnings
    assert abs(ev.log_z - gold) < max(4 * ev.se, 0.05), (ev.log_z - gold, ev.se)
