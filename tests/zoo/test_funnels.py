"""Gold values of the zoo of centered hierarchical models (``pm_evidence.zoo.funnels``).

* The function each gold integrates is PyMC's: ``model.logp(jacobian=False)`` equals the entry's
  ``log_joint`` (NumPy/SciPy) at random points of the unconstrained space, for every model; for
  the varying slopes this checks the LKJ prior in ``(s_1, s_2, rho)`` and its Jacobian to the
  packed Cholesky factor.
* Each gold by a second, independent scheme: QUADPACK in ``tau`` (dense normal density) against
  Gauss-Legendre in ``log tau`` (Sherman-Morrison), and the centered eight schools against the
  non-centered one of the zoo; Gauss-Legendre in ``(log s_1, log s_2, atanh rho)`` against the
  same in ``(s_1, s_2, rho)``, the closed-form marginal against a dense normal density, and the
  prior in ``(s_1, s_2, rho)`` integrating to 1.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_evidence.zoo import funnels
from pm_evidence.zoo.funnels import FUNNEL_ZOO
from pm_evidence.zoo.hierarchical import HIERARCHICAL_ENTRIES
from pm_evidence.zoo.multimodal import composite_legendre
from tests.zoo_support import assert_log_joint_is_pymc_logp

ENTRIES = {entry.name: entry for entry in FUNNEL_ZOO}


@pytest.mark.parametrize("entry", FUNNEL_ZOO, ids=lambda e: e.name)
def test_log_joint_is_pymc_logp(entry):
    assert entry.build()[1] == entry.gold().log_z
    assert_log_joint_is_pymc_logp(entry, n_points=5)


def test_the_models_are_centered_with_the_stated_parameters():
    dims = {
        "eight_schools_centered": 10,
        "eight_schools_student_t_centered": 10,
        "poisson_lognormal_centered": 22,
        "beta_binomial_centered": 22,
        "thirty_groups_centered": 32,
        "varying_slopes_centered": 45,
    }
    for name, entry in ENTRIES.items():
        model, _ = entry.build()
        assert sum(v.size for v in model.initial_point().values()) == dims[name]
        assert "funnel" in entry.tags and "hierarchical" in entry.tags
        assert entry.gold_error < 1e-6


@pytest.mark.parametrize(
    "gold", [funnels.eight_schools_centered_gold, funnels.thirty_groups_centered_gold]
)
def test_one_scale_golds_agree_between_quadpack_and_legendre_in_log_tau(gold):
    quadpack, legendre = (gold(scheme=s) for s in funnels.SCALE_SCHEMES)
    assert quadpack.log_z == pytest.approx(legendre.log_z, abs=1e-10)
    assert max(quadpack.error, legendre.error) < 1e-10


def test_centered_eight_schools_has_the_log_z_of_the_noncentered_one():
    noncentered = next(e for e in HIERARCHICAL_ENTRIES if e.name == "hierarchical_noncentered")
    centered = ENTRIES["eight_schools_centered"]
    assert centered.gold().log_z == pytest.approx(noncentered.gold().log_z, abs=1e-9)


def test_student_t_schools_gold_agrees_between_log_tau_and_tau():
    log_tau, tau = (
        funnels.eight_schools_student_t_centered_gold(scheme=s) for s in funnels.STUDENT_T_SCHEMES
    )
    assert log_tau.log_z == pytest.approx(tau.log_z, abs=1e-10)
    assert max(log_tau.error, tau.error) < 1e-8


@pytest.mark.parametrize(("mu", "tau"), [(3.0, 0.01), (0.0, 1.0), (-5.0, 8.0), (20.0, 40.0)])
def test_student_t_school_marginal_as_a_scale_mixture_is_the_integral_over_theta(mu, tau):
    """The scale mixture over ``lam`` against QUADPACK over ``theta`` itself, for a narrow
    effect distribution (``tau`` a thousandth of ``sigma_j``) and wide ones."""
    y_j, sigma_j, nu = 28.0, 15.0, 4.0
    mixture = funnels.student_t_school_log_marginal(y_j, sigma_j, mu, tau, nu)

    def integrand(theta):
        return stats.t.pdf(theta, nu, mu, tau) * stats.norm.pdf(y_j, theta, sigma_j)

    points = sorted({mu, mu - 10 * tau, mu + 10 * tau, y_j})  # the peaks, for QUADPACK
    lo, hi = min(points), max(points)
    inner, _ = integrate.quad(integrand, lo, hi, points=points, epsabs=0, epsrel=1e-12)
    tails = (
        integrate.quad(integrand, -np.inf, lo, epsabs=0, epsrel=1e-12)[0]
        + integrate.quad(integrand, hi, np.inf, epsabs=0, epsrel=1e-12)[0]
    )
    assert float(mixture) == pytest.approx(np.log(inner + tails), abs=1e-9)


def test_poisson_lognormal_gold_agrees_between_hermite_and_legendre():
    hermite, legendre = (
        funnels.poisson_lognormal_centered_gold(scheme=s) for s in funnels.POISSON_LOGNORMAL_SCHEMES
    )
    assert hermite.log_z == pytest.approx(legendre.log_z, abs=1e-8)
    assert max(hermite.error, legendre.error) < 1e-5


def test_varying_slopes_gold_agrees_between_log_and_direct_coordinates():
    log, direct = (funnels.varying_slopes_centered_gold(scheme=s) for s in funnels.SLOPES_SCHEMES)
    assert log.log_z == pytest.approx(direct.log_z, abs=1e-8)
    assert max(log.error, direct.error) < 1e-8


def test_varying_slopes_marginal_is_the_dense_normal_density():
    """``y ~ N(0, I + Z (I_J kron Sigma) Z^T + mu_sd^2 M M^T)`` with ``Z`` the block design of
    the group effects and ``M`` that of ``mu``."""
    x, group, y = funnels.varying_slopes_data()
    Z = np.zeros((y.size, 40))
    Z[np.arange(y.size), 2 * group] = 1.0
    Z[np.arange(y.size), 2 * group + 1] = x
    M = np.stack([np.ones_like(x), x], axis=-1)
    for s1, s2, rho in [(0.5, 0.3, 0.2), (1.7, 0.01, -0.95), (0.05, 2.5, 0.999)]:
        sigma = np.array([[s1**2, rho * s1 * s2], [rho * s1 * s2, s2**2]])
        cov = np.eye(y.size) + Z @ np.kron(np.eye(20), sigma) @ Z.T + 4.0 * M @ M.T
        dense = stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)
        assert funnels.varying_slopes_log_marginal(s1, s2, rho) == pytest.approx(dense, abs=1e-10)


def test_varying_slopes_prior_integrates_to_one_in_log_and_atanh_coordinates():
    t, log_wt = composite_legendre([-35.0, -25, -15, -8, -4, -2, -1, 0, 1, 2, np.log(40.0)], 16)
    r, log_wr = composite_legendre([-9.0, -4, -2, -1, 0, 1, 2, 4, 9], 16)
    t1, t2, rr = np.meshgrid(t, t, r, indexing="ij", sparse=True)
    log_w = log_wt[:, None, None] + log_wt[None, :, None] + log_wr[None, None, :]
    log_prior = funnels.varying_slopes_prior_log_density(np.exp(t1), np.exp(t2), np.tanh(rr))
    jacobian = t1 + t2 + np.log1p(-(np.tanh(rr) ** 2))
    assert special.logsumexp(log_prior + jacobian + log_w) == pytest.approx(0.0, abs=1e-10)


def test_unknown_scheme_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"'simpson'.*'quadpack', 'legendre'"):
        funnels.eight_schools_centered_gold(scheme="simpson")
    with pytest.raises(ValueError, match=r"'simpson'.*'log', 'direct'"):
        funnels.varying_slopes_centered_gold(scheme="simpson")


def test_beta_binomial_gold_agrees_between_legendre_and_quadpack():
    legendre, quadpack = (funnels.beta_binomial_centered_gold(scheme=s)
                          for s in funnels.BETA_BINOMIAL_SCHEMES)  # fmt: skip
    assert legendre.log_z == pytest.approx(quadpack.log_z, abs=1e-10)
    assert legendre.error < 1e-7


def test_the_beta_binomial_marginal_is_the_integral_over_the_rate():
    """The gold's closed form, ``sum_j log int Beta(theta; mu kappa, (1 - mu) kappa)
    Binomial(y_j; n_j, theta) dtheta``, against QUADPACK over ``theta``."""
    y, trials = funnels.beta_binomial_data()
    mu, kappa = 0.2, 7.0
    a, b = mu * kappa, (1 - mu) * kappa
    direct = sum(
        np.log(integrate.quad(lambda t, y_j=y_j, n_j=n_j: stats.beta.pdf(t, a, b)
                              * stats.binom.pmf(y_j, n_j, t), 0.0, 1.0, epsabs=0.0,
                              epsrel=1e-12)[0])
        for y_j, n_j in zip(y, trials, strict=True)
    )  # fmt: skip
    closed = funnels.beta_binomial_log_likelihood(y, trials, np.array(mu), np.array(kappa))
    assert closed == pytest.approx(direct, abs=1e-9)
