"""The high-dimensional zoo (``pm_evidence.zoo.highdim``): each model's ``log_joint`` is PyMC's
``logp``, and each gold agrees with a second computation made another way.

No sampler; each model is compiled once. Tolerances: log densities to 1e-10 relative (all
parameters float64); golds to 1e-8 nats where both sides are quadrature or closed forms, and
to 4 combined standard errors for the importance-sampling gold.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, linalg, special, stats

from pm_evidence.zoo import highdim as hd
from pm_evidence.zoo.testing import Gold, ZooModel, hierarchical_log_evidence_given_tau

ENTRIES = {entry.name: entry for entry in hd.HIGHDIM_ZOO}
N_PARAMETERS = {
    "hierarchical_normal_200": 202,
    "hierarchical_normal_1000": 1002,
    "poisson_glmm": 102,
    "logistic_regression_wide": 51,
    "latent_gp_regression": 100,
}


def test_registry():
    assert list(ENTRIES) == list(N_PARAMETERS)
    for entry in hd.HIGHDIM_ZOO:
        assert isinstance(entry, ZooModel) and "highdim" in entry.tags
        gold = entry.gold()
        assert isinstance(gold, Gold) and np.isfinite(gold.log_z) and gold.error < 0.005
        if "quadrature" in entry.gold_method:
            assert gold.error < 1e-6  # as the main zoo's quadrature golds


@pytest.mark.filterwarnings("ignore:Cannot cache compiled function")
@pytest.mark.parametrize("entry", hd.HIGHDIM_ZOO, ids=lambda m: m.name)
def test_log_joint_is_pymc_logp(entry, compiled):
    """``model.logp(jacobian=False)`` equals the hand-written ``log_joint`` at the initial point
    and two perturbations of it; the Jacobian term is ``sum log(value)`` of the log-transformed
    scales (HalfNormal); the builder's gold is the entry's gold."""
    cm = compiled(entry)  # PyMC's logp, compiled once (tests.zoo_support)
    assert cm.log_z == entry.gold().log_z
    start = cm.initial_point()
    assert sum(np.size(v) for v in start.values()) == N_PARAMETERS[entry.name]
    transformed = [t for t in cm.transforms if t is not None]
    assert all(t.name == "log" for t in transformed)
    log_transformed = [n for n, t in zip(cm.names, cm.transforms, strict=True) if t is not None]
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.3, 0.6):
        point = {k: v + scale * rng.normal(size=np.shape(v)) for k, v in start.items()}
        logp, logp_nojac, values = cm(point)
        mine = entry.log_joint(values)
        assert np.isfinite(mine)
        assert abs(logp_nojac - mine) <= 1e-10 * (1 + abs(mine)), (entry.name, logp_nojac, mine)
        jacobian = sum(float(np.sum(np.log(values[name]))) for name in log_transformed)
        assert abs((logp - logp_nojac) - jacobian) < 1e-10


# --------------------------------------------------------------------------------- golds
@pytest.mark.parametrize("n_groups", [200, 1000])
def test_hierarchical_normal_gold(n_groups):
    """The marginal given ``tau`` against a dense multivariate normal of ``theta`` and ``mu``
    integrated out, and the 1-D integral by QUADPACK over ``tau`` on its natural scale."""
    entry = ENTRIES[f"hierarchical_normal_{n_groups}"]
    y, sigma = hd.hierarchical_normal_data(n_groups, 50)
    mu_sd, tau_scale = 5.0, 5.0
    for tau in (0.3, 2.5):
        cov = np.diag(sigma**2 + tau**2) + mu_sd**2
        chol = np.linalg.cholesky(cov)
        white = linalg.solve_triangular(chol, y, lower=True)
        dense = -0.5 * (n_groups * np.log(2 * np.pi) + white @ white)
        dense -= np.sum(np.log(np.diag(chol)))
        mine = hierarchical_log_evidence_given_tau(np.array([tau]), y, sigma, mu_sd)[0]
        assert abs(mine - dense) < 1e-8

    gold = entry.gold()

    def integrand(tau):
        log_f = hierarchical_log_evidence_given_tau(np.array([tau]), y, sigma, mu_sd)[0]
        return np.exp(log_f + stats.halfnorm.logpdf(tau, scale=tau_scale) - gold.log_z)

    value, abserr = integrate.quad(integrand, 0.0, np.inf, epsabs=0, epsrel=1e-11, limit=200)
    assert abserr / value < 1e-9
    assert abs(np.log(value)) < 1e-8


def _glmm_setup():
    group, y = hd.poisson_glmm_data(100, 10, 52)
    return group, y, hd.poisson_glmm_statistics(100, 10, 52)


def test_glmm_group_integrals_against_quadpack_on_the_raw_counts():
    """Sum over the 100 groups of ``log int N(u | 0, s^2) prod_i Poisson(y_gi | e^(b0 + u)) du``
    by QUADPACK on each group's own counts, against the adaptive Gauss-Hermite integrals per
    distinct total (which also checks the reduction to totals), at two ``(b0, s)``."""
    group, y, statistics = _glmm_setup()
    log_factorial = special.gammaln(y + 1.0)
    for b0, s in ((1.0, 0.5), (0.6, 1.2)):
        total = 0.0
        for g in range(100):
            counts, lf = y[group == g], log_factorial[group == g]
            shift = np.sum(counts * b0 - np.exp(b0) - lf)

            def f(u, counts=counts, lf=lf, shift=shift, b0=b0, s=s):
                eta = b0 + u
                log_lik = np.sum(counts * eta - np.exp(eta) - lf)  # Poisson, one term per count
                log_prior = -0.5 * (u / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi)
                return np.exp(log_lik + log_prior - shift)

            value, abserr = integrate.quad(f, -12 * s, 12 * s, epsabs=0, epsrel=1e-12, limit=200)
            assert abserr / value < 1e-10
            total += np.log(value) + shift
        point = np.array([[b0, np.log(s)]])
        priors = stats.norm.logpdf(b0, 0, 2.0) + stats.halfnorm.logpdf(s, scale=1.0) + np.log(s)
        mine = hd.poisson_glmm_log_density(point, 10, statistics, 2.0, 1.0, 32)[0] - priors
        assert abs(mine - total) < 1e-9


def test_glmm_gold_by_the_trapezoid_rule_on_the_natural_scale():
    """The outer integral over ``(b0, s)`` (no log scale, no Laplace box) by the trapezoid
    rule on ``[0.3, 1.8] x [0.15, 1.6]``, whose edges lie more than 40 nats below the peak;
    for a smooth integrand negligible at the edges the rule converges geometrically (80 and
    120 points per axis agree to 1e-10)."""
    _, _, statistics = _glmm_setup()
    gold = ENTRIES["poisson_glmm"].gold()
    values = []
    for n_points in (80, 120):
        b0 = np.linspace(0.3, 1.8, n_points)
        s = np.linspace(0.15, 1.6, n_points)
        log_f = np.array(
            [
                hd.poisson_glmm_log_density(
                    np.column_stack([np.full(n_points, b), np.log(s)]), 10, statistics, 2.0, 1.0, 32
                )
                - np.log(s)  # the density in (b0, s)
                for b in b0
            ]
        )
        edges = np.concatenate([log_f[[0, -1]].ravel(), log_f[:, [0, -1]].ravel()])
        assert edges.max() < log_f.max() - 40
        w_b0 = np.full(n_points, b0[1] - b0[0])
        w_s = np.full(n_points, s[1] - s[0])
        w_b0[[0, -1]] /= 2
        w_s[[0, -1]] /= 2
        values.append(special.logsumexp(log_f + np.log(w_b0)[:, None] + np.log(w_s)[None, :]))
    assert abs(values[0] - values[1]) < 1e-10
    assert abs(values[1] - gold.log_z) < 1e-8


def test_logistic_gold_recomputed_at_lower_precision():
    """The stored importance-sampling gold against a fresh, cheaper run (5e4 draws, other
    seed): within 4 combined SEs, and that check has power (SE below 0.02)."""
    entry = ENTRIES["logistic_regression_wide"]
    assert entry.gold() == hd.LOGISTIC_WIDE_GOLD
    assert hd.LOGISTIC_WIDE_GOLD.error <= 0.005
    quick = hd.logistic_regression_wide_importance(
        n_draws=50_000, adapt_draws=20_000, n_adapt=4, random_seed=3
    )
    assert quick.se < 0.02 and quick.ess_fraction > 0.1
    combined = np.hypot(quick.se, hd.LOGISTIC_WIDE_GOLD.error)
    assert abs(quick.log_z - hd.LOGISTIC_WIDE_GOLD.log_z) < 4 * combined


def test_latent_gp_gold_by_the_posterior_identity():
    """``log p(y) = log p(y | f) + log p(f) - log p(f | y)`` at the posterior mean, with the
    posterior in precision form (``K^-1 + I / sigma^2``), never forming ``K + sigma^2 I``."""
    sigma = 0.3
    cov, y = hd.latent_gp_data(100, 1.0, 1.0, sigma, 1e-6, 80)
    precision = np.linalg.inv(cov) + np.eye(100) / sigma**2
    chol = np.linalg.cholesky(precision)
    mean = np.linalg.solve(precision, y / sigma**2)
    log_posterior_at_mean = -50 * np.log(2 * np.pi) + np.sum(np.log(np.diag(chol)))
    log_joint = ENTRIES["latent_gp_regression"].log_joint({"f": mean})
    identity = log_joint - log_posterior_at_mean
    assert abs(identity - ENTRIES["latent_gp_regression"].gold().log_z) < 1e-8
