"""Centered hierarchies computed in non-centered coordinates where the groups are weakly
informed (``pm_evidence.model.noncentering``).

The centered eight schools (``theta ~ N(mu, tau)``) has the same log Z as the non-centered
one of the zoo (a change of variables with its Jacobian): checked here that the adapter's
density is the non-centered model's density point by point, that ``pm.set_data`` on the user's
model still reaches it, that well-informed groups stay centered, and that ``auto`` at defaults
gets the gold (it came back low by 2-4 of its SEs, marked reliable, before).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence import LogDensity
from pm_evidence.model.noncentering import funnel_candidates, noncentered_model
from pm_evidence.model.prior import restricting_transforms
from pm_evidence.zoo.funnels import eight_schools_student_t_centered, poisson_lognormal_centered
from pm_evidence.zoo.testing import EIGHT_SCHOOLS_SIGMA, EIGHT_SCHOOLS_Y, hierarchical_noncentered

SIGMA = np.array(EIGHT_SCHOOLS_SIGMA)


def _centered_eight_schools():
    with pm.Model(coords={"school": list("abcdefgh")}) as model:
        y = pm.Data("y_obs", np.array(EIGHT_SCHOOLS_Y))
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, dims="school")
        pm.Normal("y", theta, SIGMA, observed=y, dims="school")
    return model


def _noncentered_log_density(values, y):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        z = pm.Normal("z", 0.0, 1.0, shape=8)
        pm.Normal("y", mu + tau * z, SIGMA, observed=y)
    logp = model.compile_logp()
    return np.array([
        logp({"mu": mu, "tau_log__": np.log(tau), "z": (theta - mu) / tau})
        for mu, tau, theta in zip(values["mu"], values["tau"], values["theta"], strict=True)
    ])  # fmt: skip


def test_the_centered_model_is_computed_as_the_noncentered_one_and_follows_set_data():
    model = _centered_eight_schools()
    target = LogDensity.for_model(model)
    assert target.noncentered == ("theta",)
    assert LogDensity.for_model(model) is target  # compiled once per model, kept on the model
    x = target.sample_prior(np.random.default_rng(0), 4)
    values = target.to_constrained(x)
    log_prior, log_lik = target.evaluate(x)
    mine = _noncentered_log_density(values, np.array(EIGHT_SCHOOLS_Y))
    np.testing.assert_allclose(log_prior + log_lik, mine, rtol=1e-12)
    with model:
        pm.set_data({"y_obs": np.array(EIGHT_SCHOOLS_Y) + 5.0})
    log_prior, log_lik = target.evaluate(x)
    mine = _noncentered_log_density(values, np.array(EIGHT_SCHOOLS_Y) + 5.0)
    np.testing.assert_allclose(log_prior + log_lik, mine, rtol=1e-12)


def test_well_informed_groups_stay_centered_and_the_option_turns_it_off():
    rng = np.random.default_rng(3)
    group = np.repeat(np.arange(20), 200)
    with pm.Model() as informed:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=20)
        pm.Normal("y", theta[group], 0.8, observed=rng.normal(1.0, 0.9, group.size))
    assert [rv.name for rv in funnel_candidates(informed)] == ["theta"]
    assert noncentered_model(informed) == (informed, ())
    assert LogDensity(_centered_eight_schools(), reparametrize=False).noncentered == ()


@pytest.mark.parametrize("seed", [1, 2])
def test_auto_at_defaults_gets_the_centered_eight_schools(seed):
    gold = hierarchical_noncentered()[1]  # the same integral
    ev = pme.marginal_likelihood(_centered_eight_schools(), random_seed=seed, progressbar=False)
    assert ev.diagnostics["noncentered"] == ["theta"]
    assert ev.reliable
    assert abs(ev.log_z - gold) < max(4 * ev.se, 0.05) and abs(ev.log_z - gold) < 4 * ev.se


FAMILIES = {  # PyMC's location-scale families, and their standard member's keyword arguments
    "StudentT": (pm.StudentT, {"nu": 3.0}),
    "Laplace": (pm.Laplace, {}),
    "Cauchy": (pm.Cauchy, {}),
    "Logistic": (pm.Logistic, {}),
    "Gumbel": (pm.Gumbel, {}),
}
LOCATION_SCALE_NAMES = {"StudentT": ("mu", "sigma"), "Laplace": ("mu", "b"),
                        "Cauchy": ("alpha", "beta"), "Logistic": ("mu", "s"),
                        "Gumbel": ("mu", "beta")}  # fmt: skip


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_location_scale_family_is_noncentered_with_its_jacobian(family):
    """The rewritten centered model's log density in its new coordinates ``z`` is the
    non-centered model's, ``theta = mu + tau z`` with ``z`` of the family at (0, 1): the same
    prior, the Jacobian ``tau`` per element included."""
    dist, extra = FAMILIES[family]
    loc, scale = LOCATION_SCALE_NAMES[family]
    y = np.array(EIGHT_SCHOOLS_Y)

    def build(centered):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfNormal("tau", 5.0)
            if centered:
                theta = dist("theta", **extra, **{loc: mu, scale: tau}, shape=8)
            else:
                theta = mu + tau * dist("z", **extra, **{loc: 0.0, scale: 1.0}, shape=8)
            pm.Normal("y", theta, SIGMA, observed=y)
        return model

    rewritten, names = noncentered_model(build(True))
    assert names == ("theta",)
    rng = np.random.default_rng(7)
    new, plain = rewritten.compile_logp(), build(False).compile_logp()
    for _ in range(3):
        point = {"mu": rng.normal(), "tau_log__": rng.normal(), "z": rng.normal(size=8)}
        mine = new({"mu": point["mu"], "tau_log__": point["tau_log__"],
                    "theta_noncentered__": point["z"]})  # fmt: skip
        np.testing.assert_allclose(mine, plain(point), rtol=1e-9)  # theta = mu + tau z, and back


POISSON_COUNTS = np.array([3, 0, 2, 5, 1, 2, 4, 1])


def _poisson_lognormal(centered: bool, y=POISSON_COUNTS):
    """Group rates ``LogNormal(mu, tau)`` (centered) or ``exp(mu + tau z)`` (not), Poisson
    counts."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        if centered:
            rate = pm.LogNormal("rate", mu, tau, shape=y.size)
        else:
            rate = pm.math.exp(mu + tau * pm.Normal("z", 0.0, 1.0, shape=y.size))
        pm.Poisson("y", rate, observed=y)
    return model


def test_a_lognormal_is_noncentered_in_place_of_its_log_transform():
    """``z = (log theta - mu) / tau``: the rewritten model's density is the non-centered model's
    (Jacobian ``tau theta`` per element), and in PyMC's coordinates (``log theta``, with its
    Jacobian ``theta``) it is the centered model's own."""
    centered = _poisson_lognormal(True)
    rewritten, names = noncentered_model(centered)
    assert names == ("rate",)
    new, plain = rewritten.compile_logp(), _poisson_lognormal(False).compile_logp()
    target = LogDensity(centered)
    own = centered.compile_logp()
    rng = np.random.default_rng(8)
    for _ in range(3):
        mu, log_tau, z = rng.normal(), rng.normal(), rng.normal(size=8)
        at = {"mu": mu, "tau_log__": log_tau}
        np.testing.assert_allclose(
            new({**at, "rate_noncentered__": z}), plain({**at, "z": z}), rtol=1e-9
        )
        log_rate = mu + np.exp(log_tau) * z
        values = {"mu": [mu], "tau": [np.exp(log_tau)], "rate": np.exp(log_rate)[None]}
        x = target.to_unconstrained(values)
        np.testing.assert_allclose(x[0, [target.coordinate_names.index("mu")]], mu, rtol=1e-12)
        np.testing.assert_allclose(
            target.pymc_log_density(x)[0], own({**at, "rate_log__": log_rate}), rtol=1e-9
        )


@pytest.mark.parametrize("seed", [1, 2])
def test_auto_at_defaults_gets_the_centered_student_t_schools(seed):
    """Student-t effects (``pm.StudentT``, a location-scale family) are non-centered as the
    normal ones are. Centered, ``auto`` came back low on ten seeds of ten, marked reliable,
    three of them by 4.6 to 5.0 of its SEs (seed 2: 0.035 low, SE 0.007)."""
    model, gold = eight_schools_student_t_centered()
    ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
    assert ev.diagnostics["noncentered"] == ["eight_schools_student_t_centered::theta"]
    assert ev.reliable
    assert abs(ev.log_z - gold) < max(4 * ev.se, 0.05) and abs(ev.log_z - gold) < 4 * ev.se


def test_bridge_on_the_lognormal_hierarchy_counts_reflections_without_a_warning():
    """At seed 10, six of warp-3's 4,096 reflections of the posterior draws overflow (a rate
    ``exp(mu + tau z)`` for a count of zero). They count as zero density, which cannot bias
    ``log Z`` by more than about ``1.5 / N`` (``pm_evidence.model.draws.target_log_weights``),
    so the result carries the count and stays reliable (over seeds 1-30 its error spread is
    0.96 of its mean SE)."""
    model, gold = poisson_lognormal_centered()
    ev = pme.bridge_sampling(model, random_seed=10, progressbar=False)
    assert ev.diagnostics["reference"] == "warp3"
    assert ev.diagnostics["n_nonfinite_reflections"] > 0
    assert ev.reliable and not ev.warnings
    assert abs(ev.log_z - gold) < 4 * ev.se


def test_the_log_density_in_pymc_coordinates_is_the_centered_models_own():
    """What ``pm.sample`` stores as ``lp`` with draws of the user's (centered) model: checked
    against draws passed as ``idata``, so it must not carry the new coordinates' Jacobian."""
    model = _centered_eight_schools()
    target = LogDensity(model)
    x = target.sample_prior(np.random.default_rng(5), 4)
    values = target.to_constrained(x)
    logp = model.compile_logp()
    mine = [
        logp({"mu": mu, "tau_log__": np.log(tau), "theta": theta})
        for mu, tau, theta in zip(values["mu"], values["tau"], values["theta"], strict=True)
    ]
    np.testing.assert_allclose(target.pymc_log_density(x), mine, rtol=1e-12)
    assert not np.allclose(target.log_density(x), mine)  # the Jacobian, 8 log tau, differs


@pytest.mark.slow  # two compiles of an LKJ model's log density: 1-2 minutes on two cores
def test_correlated_group_effects_are_noncentered_through_the_cholesky_factor():
    """``ab_j ~ MvNormal(mu, chol=L)`` with an ``LKJCholeskyCov`` prior, two observations per
    group: computed as ``z_j = L^{-1} (ab_j - mu)``, whose density is the centered one times
    ``|det L|`` per group, and ``pymc_log_density`` gives back the centered one."""
    rng = np.random.default_rng(1)
    group = np.repeat(np.arange(20), 2)
    x = rng.normal(size=group.size)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=2)
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(1.0, shape=2), compute_corr=True
        )
        ab = pm.MvNormal("ab", mu, chol=chol, shape=(20, 2))
        pm.Normal("y", ab[group, 0] + ab[group, 1] * x, 1.0, observed=rng.normal(size=group.size))
    target = LogDensity(model)
    centered = LogDensity(model, reparametrize=False)
    assert target.noncentered == ("ab",) and centered.noncentered == ()
    x_nc = target.sample_prior(rng, 4)
    values = target.to_constrained(x_nc)
    lp_centered = centered.log_density(centered.to_unconstrained(values))
    np.testing.assert_allclose(target.pymc_log_density(x_nc), lp_centered, rtol=1e-10)
    chol_matrices = np.zeros((4, 2, 2))
    chol_matrices[:, [0, 1, 1], [0, 0, 1]] = values["chol"]
    log_det = 20 * np.log(np.diagonal(chol_matrices, axis1=1, axis2=2)).sum(axis=1)
    np.testing.assert_allclose(target.log_density(x_nc) - lp_centered, log_det, rtol=1e-9)


def test_noncentered_coordinates_cut_no_prior():
    """Both non-centering transforms map onto the whole space: no variable they rewrite is a
    candidate cut of the prior (no forward draws are spent checking it)."""
    rng = np.random.default_rng(1)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0, shape=2)
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(1.0, shape=2), compute_corr=True
        )
        ab = pm.MvNormal("ab", mu, chol=chol, shape=(20, 2))
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", 0.0, tau, shape=20)
        pm.Normal("y", ab[:, 0] + ab[:, 1] + theta, 1.0, observed=rng.normal(size=20))
    rewritten, names = noncentered_model(model)
    assert set(names) == {"ab", "theta"}
    assert restricting_transforms(rewritten) == ()
