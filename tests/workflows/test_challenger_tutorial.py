"""The tutorial's script (``examples/challenger_tutorial.py``, shown by
``docs/tutorials/challenger_bayes_factor.rst``) runs, so the page cannot go stale: a reduced run
in the default suite (about 35 s of CPU), the full run of the page marked slow."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pm_evidence as pme

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "challenger_tutorial.py"


def _script():
    spec = importlib.util.spec_from_file_location("challenger_tutorial", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(outcome, out: Path, scales) -> None:
    for name in ("challenger_bayes_factor.png", "challenger_robustness.png"):
        assert (out / name).stat().st_size > 10_000
    assert outcome["reloaded"] == outcome["evidence"]["H1"]
    check = outcome["robustness"]
    np.testing.assert_array_equal(check["scale"], scales)
    assert np.isfinite(check["log_bf"]).all()
    bf = outcome["bayes_factor"]
    log_bf10 = float(bf["log_bayes_factor"].sel(bf_type="BF10"))
    # temperature matters: BF10 above 3 (moderate or more) at the main prior scale
    assert log_bf10 > np.log(3.0)
    at_main = float(check["log_bf"].sel(model="H1", scale=2.5))
    assert abs(at_main - log_bf10) < 4 * float(bf["log_bayes_factor_se"]) + 0.1


def test_the_tutorial_runs_reduced(tmp_path):
    module = _script()
    outcome = module.main(quick=True, out=tmp_path, data=tmp_path)
    _check(outcome, tmp_path, module.QUICK["scales"])
    assert isinstance(outcome["evidence"]["H1"], pme.Evidence)


@pytest.mark.slow
def test_the_tutorial_runs_in_full(tmp_path):
    module = _script()
    outcome = module.main(quick=False, out=tmp_path, data=tmp_path)
    _check(outcome, tmp_path, module.FULL["scales"])
