"""Every estimator against exact log Z on conjugate models, tolerance from its own SE."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme

# |estimate - exact| must be within this many of the estimator's own standard errors. The
# 1e-3 floor covers the solver tolerance only; it is far below every reported SE here.
Z_MAX = 4.0
FLOOR = 1e-3


def assert_within_se(ev, exact):
    err = ev.log_z - exact
    assert np.isfinite(ev.se) and ev.se > 0
    assert abs(err) < Z_MAX * ev.se + FLOOR, f"{ev}: error {err:.4g} vs se {ev.se:.4g}"


@pytest.mark.parametrize("method", ["is", "ris", "ds", "bridge"])
def test_method_matches_exact(exact_case, method):
    ev = pme.marginal_likelihood(
        exact_case.model, idata=exact_case.idata, method=method, random_seed=7
    )
    assert ev.method == method
    assert_within_se(ev, exact_case.exact)


def test_bridge_warp3_matches_exact(inverse_gamma_case):
    ev = pme.bridge_sampling(
        inverse_gamma_case.model, idata=inverse_gamma_case.idata, method="warp3", random_seed=3
    )
    assert_within_se(ev, inverse_gamma_case.exact)
    # warp-3 matches skewness: on this skewed posterior it is more precise than "normal"
    ev_normal = pme.bridge_sampling(
        inverse_gamma_case.model, idata=inverse_gamma_case.idata, method="normal", random_seed=3
    )
    assert ev.se < ev_normal.se


def test_importance_sampling_from_prior(beta_binomial_case):
    ev = pme.importance_sampling(beta_binomial_case.model, reference="prior", random_seed=5)
    assert ev.diagnostics["reference"] == "prior"
    assert_within_se(ev, beta_binomial_case.exact)


@pytest.mark.parametrize("rule", ["average", "weighted", "selection"])
def test_is_ris_combinations(normal_mean_case, rule):
    ev = pme.marginal_likelihood(
        normal_mean_case.model, idata=normal_mean_case.idata, method=f"is_ris_{rule}", random_seed=2
    )
    assert_within_se(ev, normal_mean_case.exact)


def test_reported_se_matches_spread_over_seeds(normal_mean_case):
    """The bridge SE is honest: the spread of estimates over reference draws is of its order."""
    evs = [
        pme.bridge_sampling(
            normal_mean_case.model, idata=normal_mean_case.idata, use_neff=False, random_seed=s
        )
        for s in range(30)
    ]
    spread = np.std([e.log_z for e in evs], ddof=1)
    se = np.mean([e.se for e in evs])
    # the spread only varies the reference draws (posterior draws fixed), so it is at most the SE
    assert spread < 1.5 * se


def test_list_of_methods_shares_posterior_draws(normal_mean_case):
    out = pme.marginal_likelihood(
        normal_mean_case.model, idata=normal_mean_case.idata, method=["ds", "bridge"], random_seed=1
    )
    assert set(out) == {"ds", "bridge"}
    a, b = out["ds"].draws["log_weight_target"], out["bridge"].draws["log_weight_target"]
    np.testing.assert_array_equal(a.values, b.values)


def test_draws_posterior_itself_inside_model_context(beta_binomial_case):
    """Without idata the method runs NUTS itself; the model comes from the context."""
    with beta_binomial_case.model:
        ev = pme.marginal_likelihood(
            method="bridge",
            random_seed=4,
            progressbar=False,
            draws=500,
            tune=500,
            chains=2,
            sample_kwargs={"cores": 1},
        )
    assert ev.draws["log_weight_target"].shape == (2, 250)
    assert_within_se(ev, beta_binomial_case.exact)


def test_bridge_repetitions(inverse_gamma_case):
    ev = pme.bridge_sampling(
        inverse_gamma_case.model,
        idata=inverse_gamma_case.idata,
        method="warp3",
        repetitions=3,
        random_seed=9,
    )
    reps = ev.draws["log_z_repetitions"]
    assert reps.dims == ("repetition",) and reps.size == 3
    assert ev.log_z == float(np.median(reps))
    assert ev.se >= ev.diagnostics["log_z_repetition_sd"]
    assert_within_se(ev, inverse_gamma_case.exact)


def test_list_of_methods_samples_once_without_idata(beta_binomial_case):
    out = pme.marginal_likelihood(
        beta_binomial_case.model,
        method=["ds", "bridge"],
        random_seed=1,
        progressbar=False,
        draws=400,
        tune=400,
        chains=2,
        sample_kwargs={"cores": 1},
    )
    np.testing.assert_array_equal(
        out["ds"].draws["log_weight_target"].values, out["bridge"].draws["log_weight_target"].values
    )
    for ev in out.values():
        assert_within_se(ev, beta_binomial_case.exact)
