"""``from_smc``: PyMC's SMC result as an ``Evidence`` (``pm_evidence.interop.pymc_smc``)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import pm_evidence as pme


def _smc_tree(stats):
    ds = xr.Dataset({"log_marginal_likelihood": (("chain", "stage"), stats)})
    return xr.DataTree.from_dict({"/sample_stats": ds})


def test_from_smc_reads_final_stage_per_chain():
    stats = np.array([[np.nan, np.nan, -10.0], [np.nan, np.nan, -10.2]], dtype=object)
    ev = pme.from_smc(_smc_tree(stats))
    assert ev.method == "smc"
    assert ev.log_z == pytest.approx(-10.1)
    assert ev.se == pytest.approx(np.std([-10.0, -10.2], ddof=1) / np.sqrt(2))
    ragged = np.empty(2, dtype=object)
    ragged[0], ragged[1] = [np.nan, -9.0], [np.nan, np.nan, -9.4]
    ds = xr.Dataset({"log_marginal_likelihood": ("chain", ragged)})
    ev = pme.from_smc(xr.DataTree.from_dict({"/sample_stats": ds}))
    assert ev.log_z == pytest.approx(-9.2)
