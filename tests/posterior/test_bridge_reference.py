"""Bridge sampling's default reference: the normal or warp-3, chosen by a pilot's predicted
error at equal cost (``pm_evidence.posterior.bridge_reference``), and the prediction itself."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import pm_evidence as pme
from pm_evidence.estimators import bridge_core, predicted_re2


def _log_l(rng, n_target, n_reference, log_z=3.0):
    """``log f - log g`` for a target ``e^{log_z} Gamma(4)`` and a reference ``N(4, 2.5^2)``
    (a skewed target and a symmetric reference), at i.i.d. draws of each."""
    x_target = rng.gamma(4.0, size=n_target)
    x_reference = rng.normal(4.0, 2.5, size=n_reference)

    def log_l(x):
        return log_z + stats.gamma.logpdf(x, 4.0) - stats.norm.logpdf(x, 4.0, 2.5)

    return log_l(x_target), log_l(x_reference)


def test_predicted_re2_at_the_pilots_own_size_is_the_pilots_re2():
    lt, lr = _log_l(np.random.default_rng(1), 500, 500)
    pilot = bridge_core(lt, lr, tol=1e-13)
    assert predicted_re2(lt, lr, pilot.log_z, lr.size) == pytest.approx(
        pilot.diagnostics["re2"], rel=1e-6
    )


def test_predicted_re2_matches_the_spread_of_runs_with_more_reference_draws():
    """From a pilot of 500 reference draws, the error of the estimate with 16 times as many,
    against the spread of 200 such estimates (both samples redrawn)."""
    rng = np.random.default_rng(2)
    lt, lr = _log_l(rng, 500, 500)
    predicted = np.sqrt(predicted_re2(lt, lr, bridge_core(lt, lr).log_z, 8000))
    at_pilot = np.sqrt(bridge_core(lt, lr).diagnostics["re2"])
    runs = np.array([bridge_core(*_log_l(rng, 500, 8000)).log_z for _ in range(200)])
    spread = np.std(runs, ddof=1)
    # the SD of 200 runs is within +-15% of the true SD with probability > 0.995; the pilot's
    # own prediction adds its sampling error
    assert 0.75 < predicted / spread < 1.33, (predicted, spread)
    assert at_pilot / spread > 1.5  # a prediction that ignored N2 would be far off
    assert abs(runs.mean() - 3.0) < 4 * spread / np.sqrt(runs.size)


def test_symmetric_posterior_keeps_the_normal_at_its_former_cost(normal_mean_case):
    ev = pme.bridge_sampling(
        normal_mean_case.model, idata=normal_mean_case.idata, random_seed=4, progressbar=False
    )
    d = ev.diagnostics
    assert ev.method == "bridge"
    assert d["reference_choice"] == d["reference"] == "normal"
    assert d["predicted_se_normal"] < d["predicted_se_warp3"]
    assert d["n_pilot"] == d["n_target"] and d["n_reference"] == 16 * d["n_target"]
    assert abs(ev.log_z - normal_mean_case.exact) < 4 * ev.se + 1e-3


def test_a_named_reference_is_not_chosen(inverse_gamma_case):
    ev = pme.bridge_sampling(
        inverse_gamma_case.model, idata=inverse_gamma_case.idata, reference="normal",
        random_seed=4, progressbar=False,
    )  # fmt: skip
    assert ev.diagnostics["reference"] == "normal" and "reference_choice" not in ev.diagnostics
