"""Centered hierarchical models (funnels) with gold ``log Z``, each gold computed by two
independent schemes that agree far below its stated error.

In the centered form the group effects are drawn around the population mean with a free
scale, ``theta_j ~ N(mu, tau^2)``: as ``tau -> 0`` the effects are pinned to ``mu``, and the
posterior is a funnel (Neal 2003) whose neck samplers that move with one step size avoid. The
non-centered form ``theta_j = mu + tau z_j`` has the same ``log Z``; the funnel is only in the
coordinates. Each builder returns ``(model, gold_log_z)`` like those of
:mod:`pm_evidence.zoo.testing`, and :data:`FUNNEL_ZOO` lists them as zoo entries. The gold
values use NumPy and SciPy only.

**Convention.** Every gold is ``log Z = log int p(theta) p(y | theta) dtheta`` of the PyMC
model as built, prior density included (what ``pm_evidence.marginal_likelihood`` estimates).

* :func:`eight_schools_centered`: Rubin's eight schools, ``mu ~ N(0, 5^2)``,
  ``tau ~ HalfNormal(5)``, ``theta_j ~ N(mu, tau^2)``, ``y_j ~ N(theta_j, sigma_j^2)``;
  gold ``-31.036239``.
* :func:`eight_schools_student_t_centered`: the eight schools with Student-t effects,
  ``theta_j ~ StudentT(4, mu, tau)`` (a robust hierarchy); gold ``-31.135021``.
* :func:`poisson_lognormal_centered`: 20 groups of Poisson counts with exposures, rates
  ``lambda_j ~ LogNormal(mu, tau)``, ``mu ~ N(0, 2^2)``, ``tau ~ HalfNormal(1)``; gold
  ``-33.132965``.
* :func:`beta_binomial_centered`: 20 groups of binomial counts (the rat tumours of Gelman
  et al., simulated), ``theta_j ~ Beta(mu kappa, (1 - mu) kappa)``, ``mu ~ Beta(2, 2)``,
  ``kappa ~ Exponential(1 / 20)``; gold ``-49.304008``.
* :func:`thirty_groups_centered`: 30 groups of one observation each (``sigma_j = 1``, true
  ``tau = 0.3``), ``mu ~ N(0, 1)``, ``tau ~ HalfCauchy(1)``; gold ``-44.788125``.
* :func:`varying_slopes_centered`: 20 groups of 3 observations, correlated intercepts and
  slopes ``(a_j, b_j) ~ MvNormal(mu, L L^T)`` with an LKJ prior on the Cholesky factor ``L``;
  gold ``-106.192304``.
* The fourth funnel is Neal's, in a box: ``funnel_box_10d``
  (``pm_evidence.zoo.multimodal.funnel_box``, registered in
  ``pm_evidence.zoo.multimodal.MULTIMODAL_ZOO``), gold ``-36.253550``.

Gold values. For the two one-scale models ``theta`` and ``mu`` integrate out in closed form,
``y | tau ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``, and

    ``Z = int_0^inf p(tau) N(y; 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T) dtau``

by QUADPACK on ``(0, inf)`` at relative tolerance 1e-12, the normal density by a dense
Cholesky factorization (``scheme="quadpack"``, the gold), and by composite Gauss-Legendre in
``t = log tau`` (Jacobian ``tau``), the normal density by Sherman-Morrison
(``scheme="legendre"``): they agree to 1e-12. For the varying slopes ``(a_j, b_j)`` and ``mu``
integrate out in closed form given ``(s_1, s_2, rho)`` (:func:`varying_slopes_log_marginal`),
then a 3-D product Gauss-Legendre rule over ``(log s_1, log s_2, atanh rho)``
(``scheme="log"``, the gold) and over ``(s_1, s_2, rho)`` itself (``scheme="direct"``): they
agree to 1e-13. For the Student-t effects each school's ``theta_j`` integrates out as a scale
mixture of normals, ``t_nu(theta; mu, tau) = int Gamma(lam; nu / 2, nu / 2) N(theta; mu, tau^2 /
lam) dlam``, so that ``p(y_j | mu, tau) = int Gamma(lam) N(y_j; mu, sigma_j^2 + tau^2 / lam)
dlam`` (composite Gauss-Legendre in ``log lam``, checked against QUADPACK over ``theta``
itself), then a 2-D product Gauss-Legendre rule over ``(mu, log tau)`` (``scheme="log_tau"``,
the gold) and over ``(mu, tau)`` (``scheme="tau"``): they agree to 1e-12. For the Poisson
counts each group's log rate integrates out against its normal, ``p(y_j | mu, tau) = int N(u; 0,
1) Poisson(y_j; E_j e^{mu + tau u}) du``, by Gauss-Hermite (``scheme="hermite"``, the gold) or by
composite Gauss-Legendre over ``u`` in ``[-12, 12]`` (``scheme="legendre"``), then a 2-D product
Gauss-Legendre rule over ``(mu, log tau)``: they agree to 1e-9. For the binomial counts each
group's rate integrates out in closed form (the beta-binomial), then a 2-D product
Gauss-Legendre rule over ``(mu, log kappa)`` (``scheme="legendre"``, the gold) or QUADPACK's
``dblquad`` over the same (``scheme="quadpack"``): they agree to 1e-12.

References: R. M. Neal (2003), Slice sampling, Annals of Statistics 31(3), 705-767, sect. 8;
D. B. Rubin (1981), Estimation in parallel randomized experiments, J. Educational Statistics
6(4), 377-401 (the eight schools); D. Lewandowski, D. Kurowicka, H. Joe (2009), Generating
random correlation matrices based on vines and extended onion method, J. Multivariate
Analysis 100(9), 1989-2001 (the LKJ density).
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
from scipy import integrate, special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import LOG_2PI, Gold, hierarchical_log_evidence_given_tau
from pm_evidence.zoo.hierarchical import EIGHT_SCHOOLS_SIGMA, EIGHT_SCHOOLS_Y
from pm_evidence.zoo.multimodal import composite_legendre

__all__ = [
    "BETA_BINOMIAL_SCHEMES",
    "FUNNEL_ZOO",
    "POISSON_LOGNORMAL_SCHEMES",
    "SCALE_SCHEMES",
    "SLOPES_SCHEMES",
    "STUDENT_T_SCHEMES",
    "beta_binomial_centered",
    "beta_binomial_centered_gold",
    "beta_binomial_data",
    "beta_binomial_log_likelihood",
    "eight_schools_centered",
    "eight_schools_centered_gold",
    "eight_schools_student_t_centered",
    "eight_schools_student_t_centered_gold",
    "poisson_lognormal_centered",
    "poisson_lognormal_centered_gold",
    "poisson_lognormal_data",
    "student_t_school_log_marginal",
    "thirty_groups_centered",
    "thirty_groups_centered_gold",
    "thirty_groups_data",
    "varying_slopes_centered",
    "varying_slopes_centered_gold",
    "varying_slopes_data",
    "varying_slopes_log_marginal",
    "varying_slopes_prior_log_density",
]

SCALE_SCHEMES = ("quadpack", "legendre")
"""The two schemes of the one-scale golds: QUADPACK in ``tau`` (the gold) and composite
Gauss-Legendre in ``log tau``."""

STUDENT_T_SCHEMES = ("log_tau", "tau")
"""The two outer schemes of the Student-t eight schools' gold: product Gauss-Legendre in
``(mu, log tau)`` (the gold) and in ``(mu, tau)``."""

POISSON_LOGNORMAL_SCHEMES = ("hermite", "legendre")
"""The two inner schemes of the Poisson-log-normal gold: Gauss-Hermite over the standardized
log rate (the gold) and composite Gauss-Legendre over it."""

BETA_BINOMIAL_SCHEMES = ("legendre", "quadpack")
"""The two outer schemes of the hierarchical beta-binomial's gold: product Gauss-Legendre in
``(mu, log kappa)`` (the gold) and QUADPACK's ``dblquad`` over the same."""

SLOPES_SCHEMES = ("log", "direct")
"""The two schemes of the varying-slopes gold: product Gauss-Legendre in
``(log s_1, log s_2, atanh rho)`` (the gold) and in ``(s_1, s_2, rho)``."""


def _check_scheme(scheme: str, allowed: tuple[str, ...]) -> None:
    if scheme not in allowed:
        raise ValueError(f"Requested scheme {scheme!r} but it must be one of {list(allowed)}.")


# --- one scale: y_j ~ N(theta_j, sigma_j^2), theta_j ~ N(mu, tau^2) ----------------------------


def _log_marginal_dense(tau: float, y, sigma, mu_sd) -> float:
    """``log N(y; 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)`` by a dense Cholesky factor."""
    cov = np.diag(sigma**2 + tau**2) + mu_sd**2
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def _scale_log_z(y, sigma, mu_sd, tau_prior, scheme: str) -> Gold:
    """``log int_0^inf p(tau) N(y; 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T) dtau``.

    ``"quadpack"``: adaptive quadrature on ``(0, inf)`` (QUADPACK's ``qagi``, relative
    tolerance 1e-12) of the integrand scaled by its largest value on a grid of ``tau``; the
    error is QUADPACK's estimate, relative to the integral.

    ``"legendre"``: composite Gauss-Legendre in ``t = log tau`` over ``[-40, 6]`` (33 panels,
    16 vs 32 nodes), the integrand ``p(e^t) m(e^t) e^t``. The omitted ends are bounded by
    ``e^-40 p(0) max m / Z`` below and ``P(tau > e^6) m(e^6) / Z`` above (``m`` decreases
    beyond ``e^6``, far above every ``|y_j|``); the error is the change between the two rules
    plus these bounds.
    """
    y, sigma = np.asarray(y, dtype=float), np.asarray(sigma, dtype=float)
    if scheme == "quadpack":

        def log_f(tau):
            return _log_marginal_dense(tau, y, sigma, mu_sd) + tau_prior.logpdf(tau)

        peak = max(log_f(t) for t in np.linspace(1e-6, 20.0, 400))
        value, abserr = integrate.quad(
            lambda t: np.exp(log_f(t) - peak), 0, np.inf, epsabs=0, epsrel=1e-12, limit=500
        )
        return Gold(float(np.log(value) + peak), float(abserr / value))

    lo, hi = -40.0, 6.0
    edges = np.concatenate([[lo, -30.0, -20.0, -14.0, -10.0], np.arange(-8.0, hi + 0.1, 0.5)])

    def log_g(t):
        tau = np.exp(t)
        return hierarchical_log_evidence_given_tau(tau, y, sigma, mu_sd) + tau_prior.logpdf(tau) + t

    values = []
    for n_nodes in (16, 32):
        t, log_w = composite_legendre(edges, n_nodes)
        values.append(float(special.logsumexp(log_g(t) + log_w)))
    coarse, fine = values
    grid = np.exp(np.linspace(lo, hi, 2001))
    log_m = hierarchical_log_evidence_given_tau(grid, y, sigma, mu_sd)
    log_tails = (
        lo + tau_prior.logpdf(0.0) + np.max(log_m),
        tau_prior.logsf(np.exp(hi)) + log_m[-1],
    )
    tails = float(np.sum(np.exp(np.array(log_tails) - fine)))
    return Gold(fine, abs(fine - coarse) + tails)


def _scale_model(name, y, sigma, mu_sd, tau_dist):
    """``mu ~ N(0, mu_sd^2)``, ``tau ~ tau_dist``, ``theta_j ~ N(mu, tau^2)``,
    ``y_j ~ N(theta_j, sigma_j^2)``, centered."""
    with pm.Model(name=name) as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd))
        tau = tau_dist("tau")
        theta = pm.Normal("theta", mu, tau, shape=y.size)
        pm.Normal("y", theta, sigma, observed=y)
    return model


def _scale_log_joint(values, y, sigma, mu_sd, tau_prior) -> float:
    mu, tau = float(values["mu"]), float(values["tau"])
    theta = np.asarray(values["theta"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, mu_sd)
        + tau_prior.logpdf(tau)
        + stats.norm.logpdf(theta, mu, tau).sum()
        + stats.norm.logpdf(y, theta, sigma).sum()
    )


@functools.cache
def eight_schools_centered_gold(
    mu_sd: float = 5.0, tau_scale: float = 5.0, scheme: str = "quadpack"
) -> Gold:
    """Gold ``log Z`` of :func:`eight_schools_centered` by one of :data:`SCALE_SCHEMES`
    (see the module docstring; ``"quadpack"`` is the gold)."""
    _check_scheme(scheme, SCALE_SCHEMES)
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    return _scale_log_z(y, sigma, mu_sd, stats.halfnorm(scale=tau_scale), scheme)


def eight_schools_centered(mu_sd: float = 5.0, tau_scale: float = 5.0):
    """Eight schools, centered: ``mu ~ N(0, mu_sd^2)``, ``tau ~ HalfNormal(tau_scale)``,
    ``theta_j ~ N(mu, tau^2)``, ``y_j ~ N(theta_j, sigma_j^2)``, ``J = 8`` (Rubin 1981).

    Convention: prior density included. The non-centered twin is
    :func:`pm_evidence.zoo.hierarchical.hierarchical_noncentered`, with the same ``log Z``.

    Gold (closed form + 1-D quadrature): ``mu`` and ``theta`` integrate out,
    ``y | tau ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``; then
    ``Z = int_0^inf HalfNormal(tau; tau_scale) N(y | tau) dtau`` by QUADPACK (relative
    tolerance 1e-12), checked by composite Gauss-Legendre in ``log tau``:
    ``-31.036239406061`` for the defaults.
    """
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    model = _scale_model(
        "eight_schools_centered", y, sigma, mu_sd,
        lambda name: pm.HalfNormal(name, np.float64(tau_scale)),
    )  # fmt: skip
    return model, eight_schools_centered_gold(mu_sd=mu_sd, tau_scale=tau_scale).log_z


def _eight_schools_log_joint(values, mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    return _scale_log_joint(values, y, sigma, mu_sd, stats.halfnorm(scale=tau_scale))


# --- one scale, Student-t effects: theta_j ~ t_nu(mu, tau) -------------------------------------


def student_t_school_log_marginal(y_j, sigma_j, mu, tau, nu: float, n_nodes: int = 8):
    """``log p(y_j | mu, tau) = log int t_nu(theta; mu, tau) N(y_j; theta, sigma_j^2) dtheta``
    at arrays ``mu``, ``tau`` (broadcast), through the Student-t as a scale mixture of normals:
    ``int Gamma(lam; nu / 2, rate nu / 2) N(y_j; mu, sigma_j^2 + tau^2 / lam) dlam``, by
    composite Gauss-Legendre in ``log lam`` over ``[-40, 8]`` (the integrand is smooth there,
    and below ``e^-40`` and above ``e^8`` the Gamma density leaves nothing for ``nu = 4``)."""
    edges = np.concatenate([[-40.0, -25.0, -15.0, -10.0], np.arange(-8.0, 8.01, 1.0)])
    log_lam, log_w = composite_legendre(edges, n_nodes)
    lam = np.exp(log_lam)
    log_mix = stats.gamma.logpdf(lam, nu / 2, scale=2 / nu) + log_lam + log_w
    mu, tau = np.asarray(mu, dtype=float)[..., None], np.asarray(tau, dtype=float)[..., None]
    sd = np.sqrt(sigma_j**2 + tau**2 / lam)
    return special.logsumexp(log_mix + stats.norm.logpdf(y_j, mu, sd), axis=-1)


@functools.cache
def eight_schools_student_t_centered_gold(
    nu: float = 4.0, mu_sd: float = 5.0, tau_scale: float = 5.0, scheme: str = "log_tau"
) -> Gold:
    """Gold ``log Z`` of :func:`eight_schools_student_t_centered` by one of
    :data:`STUDENT_T_SCHEMES` (module docstring): the schools' marginals
    (:func:`student_t_school_log_marginal`) times the priors of ``mu`` and ``tau``, by a
    product Gauss-Legendre rule over ``mu`` in ``[-40, 40]`` (8 prior SDs) and ``log tau`` in
    ``[-30, log 40]`` (``"log_tau"``, Jacobian ``tau``) or ``tau`` in ``[0, 40]`` (``"tau"``),
    8 nodes a panel; the error is the change with 16 nodes a panel, plus the prior mass
    outside the box (below ``e^-32`` of it)."""
    _check_scheme(scheme, STUDENT_T_SCHEMES)
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    tau_prior = stats.halfnorm(scale=tau_scale)

    def log_z(n_nodes: int) -> float:
        mu, log_w_mu = composite_legendre(np.linspace(-40.0, 40.0, 9), n_nodes)
        if scheme == "log_tau":
            edges = np.concatenate(
                [[-30.0, -20.0, -12.0], np.arange(-8.0, 3.01, 1.0), [np.log(40)]]
            )
            log_tau, log_w_tau = composite_legendre(edges, n_nodes)
            tau, log_w_tau = np.exp(log_tau), log_w_tau + log_tau
        else:
            edges = np.concatenate([[0.0, 0.05, 0.2, 0.5], np.arange(1.0, 40.01, 1.0)])
            tau, log_w_tau = composite_legendre(edges, n_nodes)
        m, t = np.meshgrid(mu, tau, indexing="ij")
        log_f = stats.norm.logpdf(m, 0.0, mu_sd) + tau_prior.logpdf(t)
        for y_j, sigma_j in zip(y, sigma, strict=True):
            log_f = log_f + student_t_school_log_marginal(y_j, sigma_j, m, t, nu, n_nodes)
        return float(special.logsumexp(log_f + log_w_mu[:, None] + log_w_tau[None, :]))

    coarse, fine = log_z(8), log_z(16)
    outside = stats.norm.sf(40.0, 0.0, mu_sd) * 2 + tau_prior.sf(40.0)
    return Gold(fine, abs(fine - coarse) + float(outside))


def eight_schools_student_t_centered(nu: float = 4.0, mu_sd: float = 5.0, tau_scale: float = 5.0):
    """Eight schools with Student-t effects, centered: ``mu ~ N(0, mu_sd^2)``,
    ``tau ~ HalfNormal(tau_scale)``, ``theta_j ~ StudentT(nu, mu, tau)``,
    ``y_j ~ N(theta_j, sigma_j^2)``: a robust hierarchy, whose funnel is the normal one's.

    Convention: prior density included. Gold (module docstring): ``-31.135020735755`` for the
    defaults.
    """
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    with pm.Model(name="eight_schools_student_t_centered") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd))
        tau = pm.HalfNormal("tau", np.float64(tau_scale))
        theta = pm.StudentT("theta", nu=np.float64(nu), mu=mu, sigma=tau, shape=y.size)
        pm.Normal("y", theta, sigma, observed=y)
    gold = eight_schools_student_t_centered_gold(nu=nu, mu_sd=mu_sd, tau_scale=tau_scale)
    return model, gold.log_z


def _student_t_schools_log_joint(values, nu, mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    mu, tau = float(values["mu"]), float(values["tau"])
    theta = np.asarray(values["theta"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, mu_sd)
        + stats.halfnorm.logpdf(tau, scale=tau_scale)
        + stats.t.logpdf(theta, nu, mu, tau).sum()
        + stats.norm.logpdf(y, theta, sigma).sum()
    )


# --- Poisson counts, log-normal rates: lambda_j ~ LogNormal(mu, tau) ----------------------------


def poisson_lognormal_data(n_groups: int = 20, seed: int = 11):
    """``(y, exposure)``: exposures ``U(0.5, 2)``, true log rates ``N(0.5, 0.3^2)``, one Poisson
    count per group."""
    rng = np.random.default_rng(seed)
    exposure = rng.uniform(0.5, 2.0, n_groups)
    return rng.poisson(np.exp(rng.normal(0.5, 0.3, n_groups)) * exposure), exposure


@functools.cache
def poisson_lognormal_centered_gold(
    n_groups: int = 20, seed: int = 11, mu_sd: float = 2.0, tau_scale: float = 1.0,
    scheme: str = "hermite",
) -> Gold:  # fmt: skip
    """Gold ``log Z`` of :func:`poisson_lognormal_centered` by one of
    :data:`POISSON_LOGNORMAL_SCHEMES` (module docstring): each group's marginal, then a product
    Gauss-Legendre rule over ``mu`` in ``[-16, 16]`` (8 prior SDs, panels of 0.25 where the
    posterior is) and ``log tau`` in ``[-30, 2]`` (Jacobian ``tau``; ``P(tau > e^2)`` is
    ``7e-13``), 12 nodes a panel (80 Hermite nodes, or 12 Legendre nodes on each of 12 panels,
    inside); the error is the change from half as many nodes everywhere, plus the prior mass
    outside the box."""
    _check_scheme(scheme, POISSON_LOGNORMAL_SCHEMES)
    y, exposure = poisson_lognormal_data(n_groups, seed)
    tau_prior = stats.halfnorm(scale=tau_scale)

    def log_z(n_nodes: int) -> float:  # n_nodes a panel outside; 80 or 40 Hermite nodes inside
        if scheme == "hermite":
            u, w = special.roots_hermitenorm(80 if n_nodes > 6 else 40)
            log_w_u = np.log(w / np.sqrt(2 * np.pi))
        else:
            u, log_w_u = composite_legendre(np.linspace(-12.0, 12.0, 13), n_nodes)
            log_w_u = log_w_u + stats.norm.logpdf(u)
        mu_edges = np.concatenate([[-16.0, -8.0, -4.0, -2.0], np.arange(-1.0, 2.01, 0.25),
                                   [4.0, 8.0, 16.0]])  # fmt: skip
        mu, log_w_mu = composite_legendre(mu_edges, n_nodes)
        edges = np.concatenate([[-30.0, -20.0, -12.0], np.arange(-8.0, 2.01, 0.5)])
        log_tau, log_w_tau = composite_legendre(edges, n_nodes)
        m, t = np.meshgrid(mu, np.exp(log_tau), indexing="ij")
        log_f = stats.norm.logpdf(m, 0.0, mu_sd) + tau_prior.logpdf(t)
        log_rate = m[..., None] + t[..., None] * u
        for y_j, e_j in zip(y, exposure, strict=True):
            log_mean = np.log(e_j) + log_rate
            log_pmf = y_j * log_mean - np.exp(log_mean) - special.gammaln(y_j + 1.0)
            log_f = log_f + special.logsumexp(log_w_u + log_pmf, axis=-1)
        weights = log_w_mu[:, None] + (log_w_tau + log_tau)[None, :]
        return float(special.logsumexp(log_f + weights))

    coarse, fine = log_z(6), log_z(12)
    outside = stats.norm.sf(16.0, 0.0, mu_sd) * 2 + tau_prior.sf(np.exp(2.0))
    return Gold(fine, abs(fine - coarse) + float(outside))


def poisson_lognormal_centered(
    n_groups: int = 20, seed: int = 11, mu_sd: float = 2.0, tau_scale: float = 1.0
):  # fmt: skip
    """Poisson counts with log-normal rates, centered: ``mu ~ N(0, mu_sd^2)``,
    ``tau ~ HalfNormal(tau_scale)``, ``lambda_j ~ LogNormal(mu, tau)``,
    ``y_j ~ Poisson(E_j lambda_j)`` (:func:`poisson_lognormal_data`): a Poisson GLMM written on
    the rates, whose funnel is in ``(log lambda, log tau)``.

    Convention: prior density included. Gold (module docstring): ``-33.132965`` for the
    defaults.
    """
    y, exposure = poisson_lognormal_data(n_groups, seed)
    with pm.Model(name="poisson_lognormal_centered") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd))
        tau = pm.HalfNormal("tau", np.float64(tau_scale))
        rate = pm.LogNormal("rate", mu, tau, shape=n_groups)
        pm.Poisson("y", rate * exposure, observed=y)
    gold = poisson_lognormal_centered_gold(n_groups, seed, mu_sd, tau_scale)
    return model, gold.log_z


def _poisson_lognormal_log_joint(values, n_groups, seed, mu_sd, tau_scale):
    y, exposure = poisson_lognormal_data(n_groups, seed)
    mu, tau = float(values["mu"]), float(values["tau"])
    rate = np.asarray(values["rate"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, mu_sd)
        + stats.halfnorm.logpdf(tau, scale=tau_scale)
        + stats.lognorm.logpdf(rate, tau, scale=np.exp(mu)).sum()
        + stats.poisson.logpmf(y, rate * exposure).sum()
    )


# --- binomial counts, beta rates: theta_j ~ Beta(mu kappa, (1 - mu) kappa) -----------------------


def beta_binomial_data(n_groups: int = 20, seed: int = 71):
    """``(y, n)``: trials ``n_j`` uniform on 15..49, true rates ``Beta(1.8, 10.2)`` (mean 0.15,
    ``kappa = 12``), one binomial count per group."""
    rng = np.random.default_rng(seed)
    trials = rng.integers(15, 50, n_groups)
    return rng.binomial(trials, rng.beta(1.8, 10.2, n_groups)), trials


def beta_binomial_log_likelihood(y, trials, mu, kappa):
    """``sum_j log BetaBinomial(y_j; n_j, mu kappa, (1 - mu) kappa)``, broadcast over ``mu`` and
    ``kappa``."""
    a, b = (mu * kappa)[..., None], ((1.0 - mu) * kappa)[..., None]
    log_choose = special.gammaln(trials + 1.0) - special.gammaln(y + 1.0) - special.gammaln(
        trials - y + 1.0
    )
    return np.sum(log_choose + special.betaln(y + a, trials - y + b) - special.betaln(a, b), -1)


@functools.cache
def beta_binomial_centered_gold(
    n_groups: int = 20, seed: int = 71, mu_prior: float = 2.0, kappa_mean: float = 20.0,
    scheme: str = "legendre",
) -> Gold:  # fmt: skip
    """Gold ``log Z`` of :func:`beta_binomial_centered` by one of :data:`BETA_BINOMIAL_SCHEMES`
    (module docstring): the beta-binomial marginal of each group, then ``mu`` over ``(0, 1)``
    and ``log kappa`` over ``[-16, log 2000]`` (Jacobian ``kappa``; the prior leaves
    ``6e-9`` below and ``e^-100`` above), 12 Gauss-Legendre nodes a panel on panels that are
    fine where the posterior is (the error is the change from 6 nodes a panel, plus the prior
    mass outside), or ``dblquad`` at relative tolerance 1e-11."""
    _check_scheme(scheme, BETA_BINOMIAL_SCHEMES)
    y, trials = beta_binomial_data(n_groups, seed)
    mu_dist, kappa_dist = stats.beta(mu_prior, mu_prior), stats.expon(scale=kappa_mean)
    lo, hi = -16.0, float(np.log(2000.0))

    def log_f(mu, log_kappa):
        kappa = np.exp(log_kappa)
        return (mu_dist.logpdf(mu) + kappa_dist.logpdf(kappa) + log_kappa
                + beta_binomial_log_likelihood(y, trials, mu, kappa))  # fmt: skip

    outside = float(kappa_dist.cdf(np.exp(lo)) + kappa_dist.sf(np.exp(hi)))
    if scheme == "quadpack":
        shift = -float(log_f(np.array(0.15), np.array(2.5)))  # near the mode: no underflow
        value, _ = integrate.dblquad(
            lambda t, m: np.exp(log_f(np.array(m), np.array(t)) + shift), 0.0, 1.0, lo, hi,
            epsabs=0.0, epsrel=1e-11,
        )  # fmt: skip
        return Gold(float(np.log(value) - shift), 1e-11 + outside)

    def log_z(n_nodes: int) -> float:
        mu_edges = np.concatenate([[0.0, 0.02, 0.05], np.arange(0.075, 0.301, 0.025),
                                   [0.4, 0.6, 0.8, 1.0]])  # fmt: skip
        mu, log_w_mu = composite_legendre(mu_edges, n_nodes)
        edges = np.concatenate([[lo, -8.0, -4.0], np.arange(-2.0, 6.01, 0.5), [hi]])
        log_kappa, log_w_kappa = composite_legendre(edges, n_nodes)
        m, t = np.meshgrid(mu, log_kappa, indexing="ij")
        weights = log_w_mu[:, None] + log_w_kappa[None, :]
        return float(special.logsumexp(log_f(m, t) + weights))

    coarse, fine = log_z(6), log_z(12)
    return Gold(fine, abs(fine - coarse) + outside)


def beta_binomial_centered(
    n_groups: int = 20, seed: int = 71, mu_prior: float = 2.0, kappa_mean: float = 20.0
):  # fmt: skip
    """Binomial counts with beta rates, centered (the rat tumours' hierarchy): ``mu ~ Beta(2,
    2)``, ``kappa ~ Exponential(1 / kappa_mean)``, ``theta_j ~ Beta(mu kappa, (1 - mu) kappa)``,
    ``y_j ~ Binomial(n_j, theta_j)`` (:func:`beta_binomial_data`). As ``kappa`` grows the rates
    are pinned to ``mu`` (a funnel in ``(logit theta, log kappa)``); as it falls toward 0 the
    prior's rates pile onto 0 and 1, where about 1% of its forward draws round to the edge.

    Convention: prior density included. Gold (module docstring): ``-49.304008`` for the
    defaults.
    """
    y, trials = beta_binomial_data(n_groups, seed)
    with pm.Model(name="beta_binomial_centered") as model:
        mu = pm.Beta("mu", np.float64(mu_prior), np.float64(mu_prior))
        kappa = pm.Exponential("kappa", np.float64(1.0 / kappa_mean))
        theta = pm.Beta("theta", mu * kappa, (1.0 - mu) * kappa, shape=n_groups)
        pm.Binomial("y", trials, theta, observed=y)
    gold = beta_binomial_centered_gold(n_groups, seed, mu_prior, kappa_mean)
    return model, gold.log_z


def _beta_binomial_log_joint(values, n_groups, seed, mu_prior, kappa_mean):
    y, trials = beta_binomial_data(n_groups, seed)
    mu, kappa = float(values["mu"]), float(values["kappa"])
    theta = np.asarray(values["theta"], dtype=float)
    return float(
        stats.beta.logpdf(mu, mu_prior, mu_prior)
        + stats.expon.logpdf(kappa, scale=kappa_mean)
        + stats.beta.logpdf(theta, mu * kappa, (1.0 - mu) * kappa).sum()
        + stats.binom.logpmf(y, trials, theta).sum()
    )


def thirty_groups_data(n_groups: int = 30, tau_true: float = 0.3, seed: int = 30):
    """``(y, sigma)``: one observation per group, ``theta_j ~ N(0.5, tau_true^2)``,
    ``y_j ~ N(theta_j, 1)``."""
    rng = np.random.default_rng(seed)
    sigma = np.ones(n_groups)
    return rng.normal(rng.normal(0.5, tau_true, n_groups), sigma), sigma


@functools.cache
def thirty_groups_centered_gold(
    n_groups: int = 30,
    tau_true: float = 0.3,
    seed: int = 30,
    mu_sd: float = 1.0,
    tau_scale: float = 1.0,
    scheme: str = "quadpack",
) -> Gold:
    """Gold ``log Z`` of :func:`thirty_groups_centered` by one of :data:`SCALE_SCHEMES`
    (see the module docstring; ``"quadpack"`` is the gold)."""
    _check_scheme(scheme, SCALE_SCHEMES)
    y, sigma = thirty_groups_data(n_groups, tau_true, seed)
    return _scale_log_z(y, sigma, mu_sd, stats.halfcauchy(scale=tau_scale), scheme)


def thirty_groups_centered(
    n_groups: int = 30,
    tau_true: float = 0.3,
    seed: int = 30,
    mu_sd: float = 1.0,
    tau_scale: float = 1.0,
):
    """Many weakly informed groups, centered: one observation per group
    (:func:`thirty_groups_data`, ``sigma_j = 1``, true ``tau = 0.3``);
    ``mu ~ N(0, mu_sd^2)``, ``tau ~ HalfCauchy(tau_scale)``, ``theta_j ~ N(mu, tau^2)``,
    ``y_j ~ N(theta_j, 1)``. The data barely separate ``tau`` from 0: the posterior is a
    deep funnel.

    Convention: prior density included.

    Gold (closed form + 1-D quadrature): as :func:`eight_schools_centered`, with
    ``p(tau) = 2 / (pi tau_scale (1 + (tau / tau_scale)^2))``: ``-44.788125374092`` for the
    defaults.
    """
    y, sigma = thirty_groups_data(n_groups, tau_true, seed)
    model = _scale_model(
        "thirty_groups_centered", y, sigma, mu_sd,
        lambda name: pm.HalfCauchy(name, np.float64(tau_scale)),
    )  # fmt: skip
    gold = thirty_groups_centered_gold(
        n_groups=n_groups, tau_true=tau_true, seed=seed, mu_sd=mu_sd, tau_scale=tau_scale
    )
    return model, gold.log_z


def _thirty_groups_log_joint(values, n_groups, tau_true, seed, mu_sd, tau_scale):
    y, sigma = thirty_groups_data(n_groups, tau_true, seed)
    return _scale_log_joint(values, y, sigma, mu_sd, stats.halfcauchy(scale=tau_scale))


# --- varying intercepts and slopes with an LKJ prior ---------------------------------------------

_SLOPES_X = np.array([-1.0, 0.0, 1.0])  # the design of every group
_SLOPES_TRUTH = (np.array([1.0, -0.5]), np.array([0.5, 0.5]), 0.4)  # mu, group sds, rho


def varying_slopes_data(n_groups: int = 20, sigma: float = 1.0, seed: int = 20):
    """``(x, group, y)``: 3 observations per group at ``x = -1, 0, 1``,
    ``(a_j, b_j) ~ N((1, -0.5), Sigma)`` with group sds 0.5 and 0.5 and correlation 0.4, and
    ``y_ij ~ N(a_j + b_j x_ij, sigma^2)``."""
    rng = np.random.default_rng(seed)
    mu, sds, rho = _SLOPES_TRUTH
    cov = np.outer(sds, sds) * np.array([[1.0, rho], [rho, 1.0]])
    ab = rng.multivariate_normal(mu, cov, size=n_groups)
    x = np.tile(_SLOPES_X, n_groups)
    group = np.repeat(np.arange(n_groups), _SLOPES_X.size)
    y = rng.normal(ab[group, 0] + ab[group, 1] * x, sigma)
    return x, group, y


def varying_slopes_log_marginal(
    s1, s2, rho, n_groups: int = 20, sigma: float = 1.0, mu_sd: float = 2.0, seed: int = 20
) -> np.ndarray:
    """``log p(y | s_1, s_2, rho)`` of :func:`varying_slopes_centered`, ``(a_j, b_j)`` and
    ``mu`` integrated out in closed form; ``s1``, ``s2`` and ``rho`` broadcast.

    Every group has the same design ``X`` (rows ``(1, x)``, ``x = -1, 0, 1``). Per group,
    ``y_j = X beta_j + e_j`` factors into the least-squares fit
    ``hat beta_j = (X^T X)^-1 X^T y_j ~ N(beta_j, V)``, ``V = sigma^2 (X^T X)^-1``, and the
    residual sum of squares ``RSS_j``:
    ``N(y_j; X beta_j, sigma^2 I) = (2 pi sigma^2)^(-(3 - 2) / 2) |X^T X|^(-1/2)
    exp(-RSS_j / (2 sigma^2)) N(hat beta_j; beta_j, V)``. With ``beta_j = mu + u_j``,
    ``u_j ~ N(0, Sigma)`` and ``mu ~ N(0, P)``, ``P = mu_sd^2 I``, the ``hat beta_j`` are
    ``N(mu, S)``, ``S = Sigma + V``, around a common ``mu``; with their mean ``bar beta`` and
    scatter ``W = sum_j (hat beta_j - bar beta)(hat beta_j - bar beta)^T`` (``J`` groups):
    ``log p(hat beta) = -J log(2 pi) - (J - 1)/2 log|S| - 1/2 log|S + J P|
    - 1/2 tr(S^-1 W) - J/2 bar beta^T (S + J P)^-1 bar beta``.
    ``Sigma = [[s_1^2, rho s_1 s_2], [rho s_1 s_2, s_2^2]]``.
    """
    _, _, y = varying_slopes_data(n_groups, sigma, seed)
    X = np.stack([np.ones_like(_SLOPES_X), _SLOPES_X], axis=-1)
    xtx = X.T @ X
    Y = y.reshape(n_groups, _SLOPES_X.size)
    beta_hat = np.linalg.solve(xtx, X.T @ Y.T).T  # (J, 2)
    rss = float(np.sum((Y - beta_hat @ X.T) ** 2))
    bar = beta_hat.mean(axis=0)
    W = (beta_hat - bar).T @ (beta_hat - bar)
    V = sigma**2 * np.linalg.inv(xtx)
    n_resid = y.size - 2 * n_groups  # one residual degree of freedom per group
    log_resid = (
        -0.5 * n_resid * (LOG_2PI + 2 * np.log(sigma))
        - 0.5 * n_groups * np.linalg.slogdet(xtx)[1]
        - 0.5 * rss / sigma**2
    )
    s1, s2, rho = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (s1, s2, rho)))
    a, c, b = s1**2 + V[0, 0], s2**2 + V[1, 1], rho * s1 * s2 + V[0, 1]  # S = [[a, b], [b, c]]
    det_s = a * c - b * b
    tr_w = (c * W[0, 0] - 2 * b * W[0, 1] + a * W[1, 1]) / det_s
    p = n_groups * mu_sd**2  # S + J P = [[a + p, b], [b, c + p]]
    det_t = (a + p) * (c + p) - b * b
    quad = n_groups * ((c + p) * bar[0] ** 2 - 2 * b * bar[0] * bar[1] + (a + p) * bar[1] ** 2)
    log_beta = (
        -n_groups * LOG_2PI
        - 0.5 * (n_groups - 1) * np.log(det_s)
        - 0.5 * np.log(det_t)
        - 0.5 * tr_w
        - 0.5 * quad / det_t
    )
    return log_resid + log_beta


def varying_slopes_prior_log_density(
    s1, s2, rho, eta: float = 2.0, sd_rate: float = 1.0
) -> np.ndarray:
    """PyMC's prior of the ``LKJCholeskyCov`` factor in ``(s_1, s_2, rho)`` coordinates:
    ``Exp(s_1; sd_rate) Exp(s_2; sd_rate) (1 - rho^2)^(eta - 1) / B(1/2, eta)``, the 2-D LKJ
    density of ``rho`` (``(rho + 1) / 2 ~ Beta(eta, eta)``); normalized on
    ``(0, inf)^2 x (-1, 1)``.

    The packed factor ``(L_11, L_21, L_22) = (s_1, s_2 rho, s_2 sqrt(1 - rho^2))`` has the
    density this one divided by the Jacobian ``s_2 / sqrt(1 - rho^2)`` of that map; the
    tests compare it with ``model.logp``.
    """
    s1, s2, rho = (np.asarray(v, dtype=float) for v in (s1, s2, rho))
    return (
        stats.expon.logpdf(s1, scale=1 / sd_rate)
        + stats.expon.logpdf(s2, scale=1 / sd_rate)
        + (eta - 1) * np.log1p(-(rho**2))
        - special.betaln(0.5, eta)
    )


def _log_sech2(r):
    """``log(1 - tanh(r)^2)`` without cancellation."""
    r = np.abs(r)
    return 2.0 * (np.log(2.0) - r - np.log1p(np.exp(-2.0 * r)))


def _product_log_integral(log_f, axes, chunk: int = 1 << 20) -> float:
    """``log sum_{i, j, k} w_i w_j w_k f(u_i, v_j, r_k)`` over three 1-D rules ``axes``
    (nodes and log weights), in chunks of about ``chunk`` points."""
    (u, wu), (v, wv), (r, wr) = axes
    rows = max(1, chunk // (v.size * r.size))
    pieces = []
    for i in range(0, u.size, rows):
        values = log_f(u[i : i + rows, None, None], v[None, :, None], r[None, None, :])
        log_w = wu[i : i + rows, None, None] + wv[None, :, None] + wr[None, None, :]
        pieces.append(special.logsumexp(values + log_w))
    return float(special.logsumexp(pieces))


@functools.cache
def varying_slopes_centered_gold(
    n_groups: int = 20,
    eta: float = 2.0,
    sd_rate: float = 1.0,
    mu_sd: float = 2.0,
    sigma: float = 1.0,
    seed: int = 20,
    scheme: str = "log",
) -> Gold:
    """Gold ``log Z`` of :func:`varying_slopes_centered` by one of :data:`SLOPES_SCHEMES`:
    ``Z = int p(s_1, s_2, rho) p(y | s_1, s_2, rho)`` with the prior of
    :func:`varying_slopes_prior_log_density` and the marginal of
    :func:`varying_slopes_log_marginal`.

    ``"log"`` (the gold): a product of composite Gauss-Legendre rules over
    ``t_i = log s_i in [-30, log 40]`` (12 panels each) and ``r = atanh rho in [-8, 8]``
    (10 panels), Jacobian ``s_1 s_2 (1 - rho^2)``. ``"direct"``: the same over
    ``s_i in [0, 40]`` (12 panels) and ``rho in [-1, 1]`` (8 panels), where the integrand is
    smooth up to the edges. Each rule takes 8 and 12 nodes per panel; the error is their
    difference plus ``P_out max L / Z``, with ``max L`` the largest marginal on a grid of
    ``[0, 10]^2 x [-0.999, 0.999]`` and ``P_out`` the prior mass outside the box:
    ``2 (1 - exp(-sd_rate e^-30)) + 2 exp(-40 sd_rate) + 2 P(rho > tanh 8)`` for ``"log"``,
    ``2 exp(-40 sd_rate)`` for ``"direct"``.
    """
    _check_scheme(scheme, SLOPES_SCHEMES)
    s_max = 40.0

    def log_l(s1, s2, rho):
        return varying_slopes_log_marginal(s1, s2, rho, n_groups, sigma, mu_sd, seed)

    if scheme == "log":
        t_edges = [-30.0, -20, -12, -7, -4, -2.5, -1.5, -0.75, 0, 0.75, 1.5, 2.5, np.log(s_max)]
        r_edges = [-8.0, -4, -2, -1, -0.5, 0, 0.5, 1, 2, 4, 8]

        def log_f(t1, t2, r):
            s1, s2, rho = np.exp(t1), np.exp(t2), np.tanh(r)
            log_prior = varying_slopes_prior_log_density(s1, s2, rho, eta, sd_rate)
            return log_l(s1, s2, rho) + log_prior + t1 + t2 + _log_sech2(r)

        rho_out = 2 * stats.beta.sf((np.tanh(r_edges[-1]) + 1) / 2, eta, eta)
        p_out = 2 * -np.expm1(-sd_rate * np.exp(t_edges[0])) + 2 * np.exp(-sd_rate * s_max)
        p_out += rho_out
    else:
        t_edges = [0.0, 0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 15, s_max]
        r_edges = np.linspace(-1.0, 1.0, 9)

        def log_f(s1, s2, rho):
            return log_l(s1, s2, rho) + varying_slopes_prior_log_density(s1, s2, rho, eta, sd_rate)

        p_out = 2 * np.exp(-sd_rate * s_max)
    values = []
    for n_nodes in (8, 12):
        t = composite_legendre(t_edges, n_nodes)
        values.append(_product_log_integral(log_f, (t, t, composite_legendre(r_edges, n_nodes))))
    coarse, fine = values
    s, rho = np.linspace(0.0, 10.0, 101), np.linspace(-0.999, 0.999, 101)
    log_l_max = float(np.max(log_l(s[:, None, None], s[None, :, None], rho[None, None, :])))
    tail = float(p_out * np.exp(log_l_max - fine))
    return Gold(fine, abs(fine - coarse) + tail)


def varying_slopes_centered(
    n_groups: int = 20,
    eta: float = 2.0,
    sd_rate: float = 1.0,
    mu_sd: float = 2.0,
    sigma: float = 1.0,
    seed: int = 20,
):
    """Correlated varying intercepts and slopes, centered, with an LKJ prior:
    ``y_ij ~ N(a_j + b_j x_ij, sigma^2)`` (``sigma`` known), ``x_ij in {-1, 0, 1}``,
    ``(a_j, b_j) ~ MvNormal(mu, L L^T)``, ``mu ~ N(0, mu_sd^2 I_2)`` and
    ``L ~ LKJCholeskyCov(n=2, eta, sd_dist=Exponential(sd_rate))``; 20 groups of 3
    observations (:func:`varying_slopes_data`: true group sds 0.5, correlation 0.4), each
    group weakly informed: 45 parameters, a funnel in each group sd.

    Convention: prior density included. PyMC's density of the packed factor
    ``(L_11, L_21, L_22)`` is ``Exp(s_1) Exp(s_2) LKJ(rho; eta)`` carried to ``L`` by the
    change of variables ``s_1 = L_11``, ``s_2 = |(L_21, L_22)|``, ``rho = L_21 / s_2``
    (:func:`varying_slopes_prior_log_density`); the tests compare the joint density with
    ``model.logp`` at random points.

    Gold (closed form + 3-D quadrature): the group effects and ``mu`` integrate out given
    ``(s_1, s_2, rho)`` (:func:`varying_slopes_log_marginal`); then product Gauss-Legendre
    over ``(log s_1, log s_2, atanh rho)``, checked by the same in ``(s_1, s_2, rho)``
    (:func:`varying_slopes_centered_gold`): ``-106.192303622`` for the defaults.
    """
    x, group, y = varying_slopes_data(n_groups, sigma, seed)
    with pm.Model(name="varying_slopes_centered") as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol",
            n=2,
            eta=np.float64(eta),
            sd_dist=pm.Exponential.dist(np.float64(sd_rate), shape=2),
            compute_corr=True,
        )
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd), shape=2)
        ab = pm.MvNormal("ab", mu=mu, chol=chol, shape=(n_groups, 2))
        pm.Normal("y", ab[group, 0] + ab[group, 1] * x, np.float64(sigma), observed=y)
    gold = varying_slopes_centered_gold(
        n_groups=n_groups, eta=eta, sd_rate=sd_rate, mu_sd=mu_sd, sigma=sigma, seed=seed
    )
    return model, gold.log_z


def _varying_slopes_log_joint(values, n_groups, eta, sd_rate, mu_sd, sigma, seed):
    """Joint density at the packed factor ``(L_11, L_21, L_22)``: the prior in
    ``(s_1, s_2, rho)`` minus ``log(s_2 / sqrt(1 - rho^2))``, the log-Jacobian of the map
    ``(s_1, s_2, rho) -> L``."""
    x, group, y = varying_slopes_data(n_groups, sigma, seed)
    l11, l21, l22 = np.asarray(values["chol"], dtype=float)
    s1, s2 = l11, np.hypot(l21, l22)
    rho = l21 / s2
    log_chol = (
        varying_slopes_prior_log_density(s1, s2, rho, eta, sd_rate)
        - np.log(s2)
        + 0.5 * np.log1p(-(rho**2))
    )
    mu, ab = np.asarray(values["mu"], dtype=float), np.asarray(values["ab"], dtype=float)
    L = np.array([[l11, 0.0], [l21, l22]])
    return float(
        log_chol
        + stats.norm.logpdf(mu, 0.0, mu_sd).sum()
        + stats.multivariate_normal(mu, L @ L.T).logpdf(ab).sum()
        + stats.norm.logpdf(y, ab[group, 0] + ab[group, 1] * x, sigma).sum()
    )


# --- the registry --------------------------------------------------------------------------------

FUNNEL_ZOO: tuple[ZooModel, ...] = (
    entry(
        "eight_schools_centered", eight_schools_centered,
        "closed form + quadrature 1-D (QUADPACK in tau)", {"hierarchical", "funnel", "bounded"},
        eight_schools_centered_gold, _eight_schools_log_joint,
    ),
    entry(
        "eight_schools_student_t_centered", eight_schools_student_t_centered,
        "closed form + quadrature 2-D (scale mixture; mu, log tau)",
        {"hierarchical", "funnel", "bounded"},
        eight_schools_student_t_centered_gold, _student_t_schools_log_joint,
    ),
    entry(
        "poisson_lognormal_centered", poisson_lognormal_centered,
        "closed form + quadrature 2-D (Gauss-Hermite per group; mu, log tau)",
        {"hierarchical", "funnel", "bounded", "glm"},
        poisson_lognormal_centered_gold, _poisson_lognormal_log_joint,
    ),
    entry(
        "beta_binomial_centered", beta_binomial_centered,
        "closed form + quadrature 2-D (beta-binomial per group; mu, log kappa)",
        {"hierarchical", "funnel", "bounded", "glm"},
        beta_binomial_centered_gold, _beta_binomial_log_joint,
    ),
    entry(
        "thirty_groups_centered", thirty_groups_centered,
        "closed form + quadrature 1-D (QUADPACK in tau)", {"hierarchical", "funnel", "bounded"},
        thirty_groups_centered_gold, _thirty_groups_log_joint,
    ),
    entry(
        "varying_slopes_centered", varying_slopes_centered,
        "closed form + quadrature 3-D (log s1, log s2, atanh rho)",
        {"hierarchical", "funnel", "cholesky", "bounded"},
        varying_slopes_centered_gold, _varying_slopes_log_joint,
    ),
)  # fmt: skip
"""The centered hierarchical models, as zoo entries (not in
:data:`pm_evidence.zoo.testing.ZOO`); the fourth funnel, ``funnel_box_10d``, is in
``pm_evidence.zoo.multimodal.MULTIMODAL_ZOO``.

:meta hide-value:
"""
