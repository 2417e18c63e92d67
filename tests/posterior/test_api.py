"""Every estimator against exact log Z on conjugate models, tolerance from its own SE."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.model.log_density import as_target
from pm_evidence.zoo import testing

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
        inverse_gamma_case.model, idata=inverse_gamma_case.idata, reference="warp3", random_seed=3
    )
    assert_within_se(ev, inverse_gamma_case.exact)
    # warp-3 matches skewness: on this skewed posterior it is more precise than "normal"
    ev_normal = pme.bridge_sampling(
        inverse_gamma_case.model, idata=inverse_gamma_case.idata, reference="normal", random_seed=3
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
        reference="warp3",
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
        reference="normal",  # one reference for both, so their weights at the draws agree
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


def _exact_posterior_draws(case, rng, chains=4, draws=500):
    """I.i.d. draws of the normal-inverse-gamma regression's exact posterior
    (``sigma2 | y ~ IG(a_n, b_n)``, ``beta | sigma2, y ~ N(m_n, sigma2 V_n)``), flat and
    unconstrained ``(chain, draw, dim)``; the prior's ``a = 3, b = 2, v0 = 1`` as built by
    ``testing.regression_inverse_gamma``."""
    model = case.model
    X = model["regression_inverse_gamma::X"].get_value()
    y = np.asarray(model.rvs_to_values[model["regression_inverse_gamma::y"]].data)
    a, b, v0 = 3.0, 2.0, 1.0
    precision = X.T @ X + np.eye(X.shape[1]) / v0
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y
    a_n, b_n = a + y.size / 2, b + (y @ y - mean @ precision @ mean) / 2
    sigma2 = b_n / rng.gamma(a_n, size=(chains, draws))
    z = rng.standard_normal((chains, draws, X.shape[1])) @ np.linalg.cholesky(cov).T
    beta = mean + np.sqrt(sigma2)[..., None] * z
    target = as_target(model)
    values = {"regression_inverse_gamma::sigma2": sigma2, "regression_inverse_gamma::beta": beta}
    return target.to_unconstrained(values, batch_ndim=2)


@pytest.mark.parametrize("reference", ["normal", "auto"])
def test_bridge_se_matches_spread_of_independent_runs(inverse_gamma_case, reference):
    """The bridge SE (Frühwirth-Schnatter's RE²) against the spread of 40 runs that redraw both
    the posterior draws (exact, i.i.d.) and the reference draws: neither term of the error is
    held fixed. ``"normal"``: 16 reference draws per posterior draw. ``"auto"``: on this skewed
    posterior the pilot chooses warp-3 (``pm_evidence.posterior.bridge_reference``), whose reference
    draws cost two evaluations each: half as many, less the posterior draws' reflections."""
    rng = np.random.default_rng(2026)
    evs = [
        pme.bridge_sampling(
            inverse_gamma_case.model,
            idata=_exact_posterior_draws(inverse_gamma_case, rng),
            random_seed=s,
            reference=reference,
            progressbar=False,
        )
        for s in range(40)
    ]
    log_z = np.array([e.log_z for e in evs])
    se = float(np.sqrt(np.mean([e.se**2 for e in evs])))
    spread = float(np.std(log_z, ddof=1))
    # the sample SD of 40 runs is within +-35% of the true SD with probability > 0.997
    assert 0.65 < spread / se < 1.35, (spread, se)
    assert abs(log_z.mean() - inverse_gamma_case.exact) < 4 * spread / np.sqrt(log_z.size)
    d = evs[0].diagnostics
    assert all(e.method == "bridge" for e in evs)
    if reference == "normal":
        assert d["n_reference"] == 16 * d["n_target"] and "reference_choice" not in d
    else:
        chosen = [e.diagnostics["reference_choice"] for e in evs]
        assert chosen.count("warp3") >= 36, chosen
        assert d["reference"] == d["proposal"] == "warp3"
        assert d["n_reference"] == (16 - 1) * d["n_target"] // 2
        assert d["predicted_se_warp3"] < d["predicted_se_normal"]
        # the prediction is the SE of the run it chose, up to the pilot's noise
        assert d["predicted_se_warp3"] == pytest.approx(evs[0].se, rel=0.3)


def test_bridge_balances_its_reference_draws_where_their_side_of_the_error_dominates(
    inverse_gamma_case,
):
    """With 100 exact posterior draws (50 in the estimate) the SE is above
    ``draws.BALANCING_SE`` and the reference side of the error is the larger at 16 reference
    draws per posterior draw: more are drawn (``draws.balanced_reference_draws``), and the SE of
    the balanced estimate still matches the spread of 40 runs redrawing both samples."""
    rng = np.random.default_rng(2027)
    evs = [
        pme.bridge_sampling(
            inverse_gamma_case.model,
            idata=_exact_posterior_draws(inverse_gamma_case, rng, chains=2, draws=50),
            reference="normal",
            random_seed=s,
            progressbar=False,
        )
        for s in range(40)
    ]
    n_target = evs[0].diagnostics["n_target"]
    balanced = [e.diagnostics["n_reference"] > 16 * n_target for e in evs]
    assert np.mean(balanced) > 0.5
    for e in evs:
        d = e.diagnostics
        assert 16 * n_target <= d["n_reference"] <= 16 * 16 * n_target
        assert d["re2_reference"] + d["re2_target"] == pytest.approx(e.se**2)
    log_z = np.array([e.log_z for e in evs])
    se = float(np.sqrt(np.mean([e.se**2 for e in evs])))
    spread = float(np.std(log_z, ddof=1))
    assert se > pme.draws.BALANCING_SE
    assert 0.65 < spread / se < 1.35, (spread, se)
    assert abs(log_z.mean() - inverse_gamma_case.exact) < 4 * spread / np.sqrt(log_z.size)


def test_balanced_reference_draws_rule():
    from pm_evidence.model.draws import balanced_reference_draws

    # reference side 3 times the posterior side, SE 0.02: three times the draws
    assert balanced_reference_draws(1000, 3e-4, 1e-4, dim=5) == 3000
    # capped at 16 times, and by memory (MAX_REFERENCE_NUMBERS / dim)
    assert balanced_reference_draws(1000, 1.0, 1e-4, dim=5) == 16_000
    assert balanced_reference_draws(1000, 1.0, 1e-4, dim=10_000) == 2000
    # the posterior side the larger, or an SE below BALANCING_SE: unchanged
    assert balanced_reference_draws(1000, 1e-4, 3e-4, dim=5) == 1000
    assert balanced_reference_draws(1000, 3e-6, 1e-6, dim=5) == 1000


def test_truncated_normal_reference_is_normalized_and_bounded(rng):
    """Gelfand-Dey's reference: zero outside the 95% ellipsoid, integrates to one inside."""
    from pm_evidence.references import TruncatedNormalReference

    draws = rng.normal([1.0, -2.0], [0.5, 2.0], size=(4000, 2))
    ref = TruncatedNormalReference.fit(draws)
    x = ref.sample(rng, 20_000)
    assert np.all(np.isfinite(ref.logpdf(x)))  # every draw inside the ellipsoid
    # E_N[q / N] = P(inside) / mass = 1 under the untruncated normal
    untruncated = pme.references.MultivariateNormalReference(ref.mean, ref.chol)
    y = untruncated.sample(rng, 200_000)
    ratio = np.exp(ref.logpdf(y) - untruncated.logpdf(y))
    assert ratio.mean() == pytest.approx(1.0, abs=4 * ratio.std() / np.sqrt(y.shape[0]))
    assert np.isneginf(ref.logpdf(ref.mean + 10 * ref.chol[:, 0])).all()


def test_reverse_is_defaults_to_a_chosen_truncated_normal(inverse_gamma_case):
    case = inverse_gamma_case
    ev = pme.reverse_importance_sampling(case.model, idata=case.idata, random_seed=4)
    assert ev.diagnostics["reference"] in ("normal", "truncated_normal")
    candidates = pme.posterior.reverse_reference.REVERSE_REFERENCE_CANDIDATES
    assert (ev.diagnostics["reference_scale"], ev.diagnostics["reference_mass"]) in candidates
    assert "chi-square" in ev.diagnostics["reference_reason"]
    assert ev.reliable
    assert_within_se(ev, case.exact)
    for method in ("is", "ais"):
        with pytest.raises(pme.EvidenceInputError, match="bounded support"):
            pme.marginal_likelihood(
                case.model, idata=case.idata, method=method, reference="truncated_normal"
            )


def test_chi_square_to_target_matches_closed_form(rng):
    """``1 + chi^2(N(0, s^2) || N(0, 1)) = 1 / (s sqrt(2 - s^2))``, from reference draws and
    target draws of an unnormalized ``f = 3 N(0, 1)`` (the constant cancels)."""
    from scipy import stats

    s, n = 0.7, 200_000
    x0, x1 = rng.normal(0.0, s, n), rng.normal(0.0, 1.0, n)

    def log_ratio(x):
        return stats.norm.logpdf(x, 0.0, s) - (np.log(3.0) + stats.norm.logpdf(x))

    estimate = pme.estimators.chi_square_to_target(log_ratio(x0), log_ratio(x1))
    exact = 1 / (s * np.sqrt(2 - s**2)) - 1
    v0, v1 = np.exp(log_ratio(x0)), np.exp(log_ratio(x1))  # delta-method SE of the ratio
    rel_se = np.hypot(v0.std() / v0.mean(), v1.std() / v1.mean()) / np.sqrt(n)
    assert estimate == pytest.approx(exact, abs=4 * rel_se * (1 + exact))


@pytest.mark.slow  # about 20 s: 40 runs; the fast SE-vs-spread checks of IS and bridge are above
def test_reverse_is_se_matches_spread_on_eight_schools():
    """Eight schools with exact posterior draws: the posterior of log tau has a lighter right
    tail than any normal, so Gelfand & Dey's 95% truncated normal gives reverse weights whose
    variance the target draws cannot see (chi^2 about 1e270; 4.8 SE high in one of 30 runs).
    At the default reference (a truncated normal chosen by its estimated chi^2) and with the
    reference-side chi^2 in the SE, the SE matches the spread of 40 runs that redraw
    everything, and no unflagged run is more than 4 SE off."""
    model, exact = testing.hierarchical_noncentered()
    target = as_target(model)
    rng = np.random.default_rng(2026)
    evs = []
    for seed in range(40):
        values = testing.hierarchical_noncentered_posterior_draws(rng, chains=4, draws=500)
        draws = target.to_unconstrained(values, batch_ndim=2)
        evs.append(pme.reverse_importance_sampling(model, idata=draws, random_seed=seed))
    reliable = [e for e in evs if e.reliable]
    assert len(reliable) >= 37  # a flag is allowed, and must stay rare
    err = np.array([e.log_z for e in reliable]) - exact
    se = np.array([e.se for e in reliable])
    assert np.max(np.abs(err) / se) < Z_MAX
    # the sample SD of 40 runs is within +-35% of the true SD with probability > 0.997
    assert 0.65 < np.std(err, ddof=1) / np.sqrt(np.mean(se**2)) < 1.35
    assert abs(err.mean()) < 4 * np.std(err, ddof=1) / np.sqrt(err.size)


def test_reverse_is_flags_a_reference_the_target_draws_cannot_judge():
    """The same model with Gelfand & Dey's fixed 95% truncated normal: the reference-side
    chi^2 is far above the target-side one, so the SE says so, or the result is flagged."""
    model, exact = testing.hierarchical_noncentered()
    target = as_target(model)
    values = testing.hierarchical_noncentered_posterior_draws(np.random.default_rng(5))
    draws = target.to_unconstrained(values, batch_ndim=2)
    ev = pme.reverse_importance_sampling(
        model, idata=draws, reference="truncated_normal", random_seed=1
    )
    d = ev.diagnostics
    assert d["chi2_reference"] > 100 * d["chi2_target"]
    assert not ev.reliable and any("reference draws" in w for w in ev.warnings)
    assert abs(ev.log_z - exact) < Z_MAX * ev.se
    # seed 000's combinations with one normal for both halves: the reverse half's check
    # comes from the IS half's draws, so its infinite variance shows in its SE or a flag
    shared = pme.is_ris_combination(
        model, idata=draws, rule="selection", reference="normal", random_seed=1
    )
    assert shared.diagnostics["selected"] == "is" or not shared.reliable
    # by default each half has its own reference
    combined = pme.is_ris_combination(model, idata=draws, rule="weighted", random_seed=1)
    d = combined.diagnostics
    assert (d["reference_is"], d["reference_ris"]) == ("student_t", "truncated_normal")
    assert combined.reliable
    assert abs(combined.log_z - exact) < Z_MAX * combined.se
