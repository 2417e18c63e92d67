"""Gold values of the model zoo (``pm_evidence.zoo.testing``) checked by independent routes.

* The function each gold integrates is PyMC's: ``model.logp(jacobian=False)`` at a few points
  equals the entry's hand-written ``log_joint`` (NumPy/SciPy), and the Jacobian term
  ``logp(jacobian=True) - logp(jacobian=False)`` equals the log volume factor of PyMC's
  backward transform measured by finite differences; so ``int exp(model.logp) du`` over the
  unconstrained space is the integral of ``log_joint`` that the gold computes.
* The numerics: quadrature grids of two sizes agree, the quadrature helper reproduces a
  closed form, SciPy's adaptive quadrature agrees with the Gauss-Legendre golds, closed forms
  agree with Monte Carlo, enumeration with a Poisson-binomial count, Gaussian marginals with
  dense ``multivariate_normal``, and the LKJ prior density integrates to 1.

No MCMC; each model is compiled once (one PyTensor function per model).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_evidence.zoo import testing
from pm_evidence.zoo.testing import ZOO, Gold, zoo
from tests.zoo_support import short_name

ZOO_WITH_JOINT = [m for m in ZOO if m.log_joint is not None]

# Discrete states visited by the log-joint check (all states of the all-discrete models).
DISCRETE_STATES = {
    "bernoulli_switch": [{"z": 0}, {"z": 1}],
    "poisson_latent_count": [{"k": 0}, {"k": 3}, {"k": 9}],
    "bernoulli_only": [{"z": np.array(s)} for s in itertools.product((0, 1), repeat=3)],
    "categorical_only": [{"c1": a, "c2": b} for a in range(3) for b in range(4)],
}

# PyMC's normal log-CDF (dist_math.normal_lcdf) scales z by 1 / pt.sqrt(2.0), where the
# literal 2.0 is a float32 constant (PyTensor's cast policy), so z carries a relative error
# FLOAT32_SQRT2 ~ 1.7e-8. Each log-CDF term then differs from SciPy's log_ndtr by at most
# |z d log Phi(z) / dz| FLOAT32_SQRT2 <= (z^2 + |z|) FLOAT32_SQRT2 <= 20 FLOAT32_SQRT2 for the
# |z| < 4 met here. Number of log-CDF terms per model:
FLOAT32_SQRT2 = abs(float(np.float32(np.sqrt(2.0))) / np.sqrt(2.0) - 1.0)
CDF_TERMS = {"truncated_normal_likelihood": 60, "censored_normal": 30, "truncated_prior": 2}


def _points(compiled_model, n_continuous=3, seed=0):
    """The initial point and random perturbations of its continuous coordinates, crossed with
    the model's discrete states."""
    rng = np.random.default_rng(seed)
    start = compiled_model.initial_point()
    prefix = {short_name(k): k for k in start}
    continuous = []
    for i in range(n_continuous):
        scale = 0.0 if i == 0 else 0.3
        continuous.append(
            {
                k: v + scale * rng.normal(size=np.shape(v)) if v.dtype.kind == "f" else v
                for k, v in start.items()
            }
        )
    states = DISCRETE_STATES.get(compiled_model.entry.name, [{}])
    has_continuous = any(v.dtype.kind == "f" for v in start.values())
    for state in states:
        for base in continuous if has_continuous else continuous[:1]:
            yield base | {prefix[k]: np.asarray(v) for k, v in state.items()}


@pytest.mark.filterwarnings("ignore:Cannot cache compiled function")  # 1e6-array constant
@pytest.mark.parametrize("entry", ZOO_WITH_JOINT, ids=lambda m: m.name)
def test_log_joint_is_pymc_logp(entry, compiled):
    """The key check: the gold integrates the function PyMC defines (up to the Jacobian of
    the value transform, checked numerically)."""
    cm = compiled(entry)
    cdf_tol = CDF_TERMS.get(entry.name, 0) * 20 * FLOAT32_SQRT2
    n_points = 0
    for point in _points(cm):
        logp, logp_nojac, values = cm(point)
        mine = entry.log_joint(values)
        assert np.isfinite(logp_nojac) and np.isfinite(mine)
        assert abs(logp_nojac - mine) <= 1e-10 * (1 + abs(mine)) + 1e-12 + cdf_tol, (
            f"{entry.name}: PyMC logp {logp_nojac!r} vs log_joint {mine!r} at {values}"
        )
        log_volume = cm.jacobian_log_volume(point)
        assert abs((logp - logp_nojac) - log_volume) < 1e-6, (
            f"{entry.name}: PyMC Jacobian term {logp - logp_nojac!r} vs finite differences "
            f"{log_volume!r}"
        )
        n_points += 1
    assert n_points >= 3


def test_zero_sum_transform_spans_the_plane_isometrically(compiled):
    """PyMC's zerosum backward map is linear with J J^T = I - 11^T / n and J^T J = I: the
    prior of ``a`` is ``s^2 (I - 11^T / n)``, as the closed-form gold assumes."""
    cm = compiled(zoo(["zero_sum_normal"])[0])
    start = cm.initial_point()
    key = next(k for k in start if k.endswith("a_zerosum__"))
    n_free = start[key].size
    J = np.column_stack(
        [cm(start | {key: np.eye(n_free)[i]})[2]["a"] for i in range(n_free)]
    )  # the map is linear and sends 0 to 0
    n = n_free + 1
    np.testing.assert_allclose(J.T @ J, np.eye(n_free), atol=1e-12)
    np.testing.assert_allclose(J @ J.T, np.eye(n) - 1.0 / n, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# numerics of the gold values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry", [m for m in ZOO_WITH_JOINT if "quadrature" in m.gold_method], ids=lambda m: m.name
)
def test_quadrature_grids_agree(entry):
    """Coarse vs fine grid and box vs widened box agree to 1e-6 nats (far below 0.01)."""
    gold = entry.gold()
    assert isinstance(gold, Gold)
    assert np.isfinite(gold.log_z)
    assert gold.error < 1e-6


def test_quadrature_helper_reproduces_a_closed_form():
    """The machinery of the 1-D golds (Laplace box, Gauss-Legendre over log sigma^2, the
    Woodbury Gaussian marginal) on the normal-inverse-gamma regression, whose log Z is a
    multivariate t in closed form."""
    a, b, v0 = 3.0, 2.0, 1.0
    _, exact = testing.regression_inverse_gamma(a=a, b=b, v0=v0)
    rng = np.random.default_rng(2)  # the builder's data (seed 2)
    n, d = 40, 3
    X = rng.normal(size=(n, d))
    y = X @ np.array([1.0, -0.5, 0.25]) + rng.normal(0, 0.8, size=n)

    def log_f(t):  # t = log sigma^2
        sigma2 = np.exp(t[:, 0])
        sigma = np.sqrt(sigma2)
        return (
            testing.regression_log_evidence(y, X, sigma, sigma * np.sqrt(v0))
            + stats.invgamma.logpdf(sigma2, a, scale=b)
            + t[:, 0]
        )

    gold = testing.quadrature(log_f, [testing.laplace_frame(log_f, [0.0])], (64, 128))
    assert gold.error < 1e-8
    assert abs(gold.log_z - exact) < 1e-8


def test_gaussian_marginals_match_dense_covariances():
    """The sufficient-statistic, Woodbury and Sherman-Morrison marginals at fixed scales (the
    special case "sigma fixed" of the 1-D golds) against dense multivariate normals."""
    y = testing.normal_halfnormal_sigma_data(20, 23)
    for sigma in (0.4, 1.3, 5.0):
        cov = sigma**2 * np.eye(y.size) + 4.0 * np.ones((y.size, y.size))
        dense = stats.multivariate_normal(np.full(y.size, 0.5), cov).logpdf(y)
        assert abs(testing.normal_mean_log_evidence(y, sigma, 0.5, 2.0) - dense) < 1e-10
    X, y = testing.regression_halfnormal_sigma_data(40, 3, 24)
    for sigma in (0.3, 1.0, 3.0):
        cov = sigma**2 * np.eye(y.size) + 0.49 * X @ X.T
        dense = stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)
        assert abs(testing.regression_log_evidence(y, X, np.array([sigma]), 0.7)[0] - dense) < 1e-9
    y8, s8 = np.array(testing.EIGHT_SCHOOLS_Y), np.array(testing.EIGHT_SCHOOLS_SIGMA)
    for tau in (0.0, 4.0, 20.0):
        cov = np.diag(s8**2 + tau**2) + 25.0
        dense = stats.multivariate_normal(np.zeros(8), cov).logpdf(y8)
        mine = testing.hierarchical_log_evidence_given_tau(np.array([tau]), y8, s8, 5.0)[0]
        assert abs(mine - dense) < 1e-10


def _scipy_quad_log(log_f, lower, upper, shift):
    """``log int exp(log_f)`` by SciPy's adaptive quadrature, with its own error estimate."""
    value, abserr = integrate.quad(
        lambda x: np.exp(log_f(x) - shift), lower, upper, epsabs=0, epsrel=1e-11, limit=200
    )
    return np.log(value) + shift, abserr / value


def test_scipy_adaptive_quadrature_agrees_in_1d():
    """QUADPACK on the natural scale (sigma, tau or mu), no Laplace box, vs the
    Gauss-Legendre golds."""
    y = testing.normal_halfnormal_sigma_data(20, 23)
    gold = testing.ZOO[[m.name for m in ZOO].index("normal_halfnormal_sigma")].gold()

    def log_f_sigma(sigma):
        return testing.normal_mean_log_evidence(y, sigma, 0.0, 2.0) + stats.halfnorm.logpdf(
            sigma, scale=2.0
        )

    value, rel = _scipy_quad_log(log_f_sigma, 0.0, 30.0, gold.log_z)
    assert rel < 1e-9 and abs(value - gold.log_z) < 1e-8

    y8, s8 = np.array(testing.EIGHT_SCHOOLS_Y), np.array(testing.EIGHT_SCHOOLS_SIGMA)
    gold = zoo(["hierarchical_noncentered"])[0].gold()

    def log_f_tau(tau):
        return testing.hierarchical_log_evidence_given_tau(np.array([tau]), y8, s8, 5.0)[
            0
        ] + stats.halfnorm.logpdf(tau, scale=5.0)

    value, rel = _scipy_quad_log(log_f_tau, 0.0, np.inf, gold.log_z)
    assert rel < 1e-9 and abs(value - gold.log_z) < 1e-8

    entry = zoo(["censored_normal"])[0]
    gold = entry.gold()
    value, rel = _scipy_quad_log(lambda mu: entry.log_joint({"mu": mu}), -10.0, 10.0, gold.log_z)
    assert rel < 1e-9 and abs(value - gold.log_z) < 1e-8


def test_scipy_adaptive_quadrature_agrees_in_2d():
    """``dblquad`` over a fixed box of the logistic-regression joint, written out afresh
    (``N(0, 2^2)`` priors), vs the 2-D Gauss-Legendre gold."""
    gold = zoo(["logistic_regression"])[0].gold()
    x, y = testing.logistic_regression_data(50, 41)

    def f(b, a):
        eta = a + b * x
        log_joint = y @ eta - np.logaddexp(0.0, eta).sum() - (a * a + b * b) / 8 - np.log(8 * np.pi)
        return np.exp(log_joint - gold.log_z)

    value, abserr = integrate.dblquad(f, -4.0, 4.0, -4.0, 6.0, epsabs=1e-10, epsrel=1e-9)
    assert abserr < 1e-8
    assert abs(np.log(value)) < 1e-8


def test_label_switching_modes_carry_equal_mass():
    """Each mirror mode holds half the evidence (the integrand is symmetric in the means)."""
    y = testing.label_switching_mixture_data(20, 3.0, 1.0, 31)

    def log_f(means):
        return testing.label_switching_mixture_log_density(means, y, 1.0, 5.0)

    low, high = y[y < 0].mean(), y[y > 0].mean()
    one = [testing.laplace_frame(log_f, [low, high], half_width=8.0)]
    other = [testing.laplace_frame(log_f, [high, low], half_width=8.0)]
    a = testing.quadrature(log_f, one, (48, 96))
    b = testing.quadrature(log_f, other, (48, 96))
    gold = zoo(["label_switching_mixture"])[0].gold()
    assert abs(a.log_z - b.log_z) < 1e-9
    assert abs(np.logaddexp(a.log_z, b.log_z) - gold.log_z) < 1e-12


def test_lkj_prior_density_integrates_to_one():
    """The density of (sd_1, sd_2, rho) used by the LKJ gold is normalized (no data: the
    likelihood term is 0), for two values of eta, by Gauss-Legendre on the natural scale."""
    zero = np.zeros((2, 2))
    for eta in (2.0, 3.5):

        def log_f(x, eta=eta):
            return testing.lkj_2d_log_density(x[:, 0], x[:, 1], x[:, 2], zero, 0, eta, 1.0)

        center, matrix = np.array([25.0, 25.0, 0.0]), np.diag([25.0, 25.0, 1.0])
        log_mass = testing.legendre_log_integral(log_f, center, matrix, 80)
        assert abs(log_mass) < 1e-8  # Exp(1) mass beyond 50 is exp(-50)


def test_dirichlet_categorical_against_prior_monte_carlo():
    """Closed form vs the mean likelihood over 200,000 prior draws, within 4 Monte Carlo SE."""
    entry = zoo(["dirichlet_categorical"])[0]
    n = 12
    _, exact = testing.dirichlet_categorical(n=n)
    y = testing.dirichlet_categorical_data(n, 20)
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.array(testing.DIRICHLET_CATEGORICAL_ALPHA), size=200_000)
    log_w = np.log(p[:, y]).sum(axis=1)
    w = np.exp(log_w - log_w.max())
    estimate = np.log(w.mean()) + log_w.max()
    se = w.std(ddof=1) / np.sqrt(w.size) / w.mean()  # delta method on log of the mean
    assert abs(estimate - exact) < 4 * se
    assert se < 0.05  # the check has power
    assert entry.gold().error == 0.0


def test_closed_forms_against_1d_quadrature_of_the_joint():
    """Gamma-Poisson and truncated-prior closed forms vs QUADPACK over the entry's own
    ``log_joint`` (the function checked against PyMC)."""
    entry = zoo(["gamma_poisson"])[0]
    gold = entry.gold()
    value, rel = _scipy_quad_log(lambda r: entry.log_joint({"rate": r}), 0.0, 30.0, gold.log_z)
    assert rel < 1e-9 and abs(value - gold.log_z) < 1e-8

    entry = zoo(["truncated_prior"])[0]
    gold = entry.gold()
    value, rel = _scipy_quad_log(lambda m: entry.log_joint({"mu": m}), 0.0, 1.5, gold.log_z)
    assert rel < 1e-9 and abs(value - gold.log_z) < 1e-8


def test_conjugate_normal_golds_by_the_candidate_identity():
    """``log Z = log p(y, mu) - log p(mu | y)`` at any ``mu`` (exact for a Gaussian
    posterior): the 1e5-observation model and the three groups of ``data_coords_dims``."""
    entry = zoo(["large_normal_mean_1e5"])[0]
    y = testing.large_normal_mean_data(100_000, 1.0, 40)
    m, v = testing.normal_posterior(y, 1.0, 0.0, 2.0)
    for mu in (m, m + 2 * np.sqrt(v)):
        identity = entry.log_joint({"mu": mu}) - stats.norm.logpdf(mu, m, np.sqrt(v))
        assert abs(identity - entry.gold().log_z) < 1e-9 * abs(identity)
    assert -1.5e5 < entry.gold().log_z < -1.35e5

    entry = zoo(["data_coords_dims"])[0]
    group, y = testing.data_coords_dims_data(10, 1.0, 37)
    post = [testing.normal_posterior(y[group == g], 1.0, 0.0, 2.0) for g in range(3)]
    alpha = np.array([mg + 0.1 for mg, _ in post])
    log_post = sum(
        stats.norm.logpdf(a, mg, np.sqrt(vg)) for a, (mg, vg) in zip(alpha, post, strict=True)
    )
    assert abs(entry.log_joint({"alpha": alpha}) - log_post - entry.gold().log_z) < 1e-10


def test_bernoulli_enumeration_against_poisson_binomial_count():
    """The likelihood depends on the bits only through their sum s: Z = sum_s P(s) L(s), with
    P(s) the Poisson-binomial law built by convolution."""
    p = np.array(testing.BERNOULLI_ONLY_P)
    law = np.array([1.0])
    for pj in p:
        law = np.convolve(law, [1 - pj, pj])
    y = testing.bernoulli_only_data(20, 35)
    q = 0.15 + 0.7 * np.arange(p.size + 1) / p.size
    log_lik = y.sum() * np.log(q) + (y.size - y.sum()) * np.log1p(-q)
    assert abs(special.logsumexp(log_lik, b=law) - zoo(["bernoulli_only"])[0].gold().log_z) < 1e-12


def test_switch_and_latent_count_sums():
    """Mixed discrete golds by a second route: QUADPACK over mu for each discrete value."""
    entry = zoo(["bernoulli_switch"])[0]
    terms = []
    for z in (0, 1):
        other = 1 - z
        # the unused mean sits at its prior mean: its prior density there is a known constant
        fixed = testing.SWITCH_PRIOR_MEANS[other]
        correction = stats.norm.logpdf(fixed, fixed, testing.SWITCH_PRIOR_SDS[other])

        def log_f(mu, z=z, other=other, fixed=fixed, correction=correction):
            mus = np.empty(2)
            mus[z], mus[other] = mu, fixed
            return entry.log_joint({"z": z, "mu": mus}) - correction

        terms.append(_scipy_quad_log(log_f, -30.0, 30.0, entry.gold().log_z)[0])
    assert abs(np.logaddexp(*terms) - entry.gold().log_z) < 1e-8

    entry = zoo(["poisson_latent_count"])[0]
    gold = entry.gold()
    assert gold.error < 1e-12
    longer = testing.poisson_latent_count_gold(10, 4.0, 0.5, 1.0, 1.0, 34, k_max=800)
    assert abs(longer.log_z - gold.log_z) < 1e-13


def test_ordered_probability_of_exchangeable_normals():
    """P(x_1 < x_2 < x_3) = 1/6 for i.i.d. normals, and a Monte Carlo check off symmetry."""
    log_p = testing.log_prob_ordered3(np.zeros(3), np.ones(3), 200)
    assert abs(log_p + np.log(6.0)) < 1e-12
    m, s = np.array([-0.4, 0.2, 0.5]), np.array([0.3, 0.5, 0.2])
    rng = np.random.default_rng(3)
    draws = rng.normal(m, s, size=(400_000, 3))
    hits = np.mean((draws[:, 0] < draws[:, 1]) & (draws[:, 1] < draws[:, 2]))
    se = np.sqrt(hits * (1 - hits) / draws.shape[0])
    assert abs(np.exp(testing.log_prob_ordered3(m, s, 200)) - hits) < 4 * se


def test_registry():
    names = [m.name for m in ZOO]
    assert len(names) == len(set(names))
    assert len(ZOO_WITH_JOINT) >= 18
    assert [m.name for m in zoo(["lkj_2d", "gamma_poisson"])] == ["gamma_poisson", "lkj_2d"]
    assert {m.name for m in zoo(tags=["unbounded_discrete"])} == {"poisson_latent_count"}
    assert all("discrete" in m.tags for m in zoo(tags=["mixed_discrete"]))
    with pytest.raises(KeyError, match="not_a_model"):
        zoo(["not_a_model"])
    for entry in ZOO_WITH_JOINT:
        assert entry.gold_error < 1e-6, entry.name
    # the builder's value is the registered gold (same default arguments)
    for entry in zoo(["ordered_means", "large_normal_mean_1e6"]):
        assert entry.build()[1] == entry.gold().log_z


def _gaussian_log_integral(log_f, dim: int, h: float = 0.5) -> float:
    """``log int exp(log_f)`` over ``R^dim`` for a log-quadratic ``log_f`` (exact Laplace):
    gradient and Hessian at 0 by central differences, which are exact for a quadratic."""
    eye = np.eye(dim) * h
    f0 = log_f(np.zeros(dim))
    grad = np.array([(log_f(eye[i]) - log_f(-eye[i])) / (2 * h) for i in range(dim)])
    hess = np.empty((dim, dim))
    for i, j in itertools.product(range(dim), repeat=2):
        hess[i, j] = (
            log_f(eye[i] + eye[j])
            - log_f(eye[i] - eye[j])
            - log_f(-eye[i] + eye[j])
            + log_f(-eye[i] - eye[j])
        ) / (4 * h * h)
    mode = np.linalg.solve(-hess, grad)
    assert abs(log_f(mode) - (f0 + 0.5 * grad @ mode)) < 1e-9 * (1 + abs(f0))  # quadratic
    return log_f(mode) + 0.5 * dim * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(-hess)[1]


def test_gaussian_golds_by_exact_laplace_of_the_joint():
    """Zero-sum and missing-data closed forms vs the exact Gaussian integral of the entry's
    ``log_joint``: over ``(mu, z)`` with ``a = B z`` for an orthonormal basis ``B`` of the
    zero-sum plane (built here, not PyMC's), and over ``(mu, imputed values)``."""
    entry = zoo(["zero_sum_normal"])[0]
    eigval, eigvec = np.linalg.eigh(np.eye(4) - 0.25)
    basis = eigvec[:, eigval > 0.5]  # 4 x 3, orthonormal, orthogonal to 1

    def log_f_zsn(v):
        return entry.log_joint({"mu": v[0], "a": basis @ v[1:]})

    assert abs(_gaussian_log_integral(log_f_zsn, 4) - entry.gold().log_z) < 1e-8

    entry = zoo(["missing_data"])[0]

    def log_f_missing(v):
        return entry.log_joint({"mu": v[0], "y_unobserved": v[1:]})

    assert abs(_gaussian_log_integral(log_f_missing, 6) - entry.gold().log_z) < 1e-8


def test_ordered_gold_by_quadrature_over_the_cone():
    """The ordered-means gold (unrestricted evidence times the posterior probability of the
    order) vs a direct 3-D Gauss-Legendre integral of the joint over the cone, in coordinates
    ``(x_1, x_2 - x_1, x_3 - x_2)`` (unit Jacobian), with the joint written afresh."""
    group, y = testing.ordered_means_data(8, 1.0, 38)
    sums = np.array([y[group == g].sum() for g in range(3)])
    squares = np.array([(y[group == g] ** 2).sum() for g in range(3)])
    counts = np.bincount(group)

    def log_f(v):
        x = np.cumsum(v, axis=1)  # gaps are the integration variables (>= 0 in the box)
        log_prior = np.sum(-0.5 * x**2 / 9.0 - 0.5 * np.log(2 * np.pi * 9.0), axis=1)
        log_lik = np.sum(
            -0.5 * (squares - 2 * x * sums + counts * x**2) - 0.5 * counts * np.log(2 * np.pi),
            axis=1,
        )
        return log_prior + log_lik

    means = np.array([y[group == g].mean() for g in range(3)])
    center = np.array([means[0], 3.0, 3.0])  # x_1 in +-4, both gaps in [0, 6]
    matrix = np.diag([4.0, 3.0, 3.0])
    fine = testing.legendre_log_integral(log_f, center, matrix, 96)
    coarse = testing.legendre_log_integral(log_f, center, matrix, 64)
    assert abs(fine - coarse) < 1e-9
    assert abs(fine - zoo(["ordered_means"])[0].gold().log_z) < 1e-8


def test_latent_count_sum_by_quadrature():
    """The Poisson latent-count gold vs QUADPACK over ``mu`` for each k (the joint written
    afresh: ``k ~ Poisson(4)``, ``mu ~ N(0, 1)``, ``y_i ~ N(mu + k / 2, 1)``), summed over k."""
    gold = zoo(["poisson_latent_count"])[0].gold()
    y = testing.poisson_latent_count_data(10, 0.5, 1.0, 34)

    log_pmf = stats.poisson.logpmf(np.arange(40), 4.0)

    def log_f(mu, k):
        resid = y - mu - 0.5 * k
        return (
            log_pmf[k]
            - 0.5 * mu * mu
            - 0.5 * resid @ resid
            - 0.5 * (y.size + 1) * np.log(2 * np.pi)
        )

    # P(k >= 40) under Poisson(4) is below 1e-20
    terms = [
        _scipy_quad_log(lambda mu, k=k: log_f(mu, k), -40, 40, gold.log_z)[0] for k in range(40)
    ]
    assert abs(special.logsumexp(terms) - gold.log_z) < 1e-8


def test_pima_logistic_intercept_only_gold_matches_adaptive_quadrature():
    """``pima_logistic(covariates=())`` (the intercept-only model of a comparison over
    subsets of covariates) builds, and its gold equals SciPy's adaptive 1-D quadrature of
    ``k b - n log(1 + e^b) + log N(b; 0, 10^2)``."""
    model, gold = testing.pima_logistic(covariates=())
    assert [v.name for v in model.free_RVs] == ["pima_logistic::beta"]
    design, y = testing.pima_data(())
    assert design.shape == (y.size, 1)
    k, n = y.sum(), y.size
    shift = -gold  # keeps the integrand near 1

    def integrand(b):
        return np.exp(k * b - n * np.logaddexp(0.0, b) + stats.norm.logpdf(b, 0.0, 10.0) + shift)

    value, _ = integrate.quad(integrand, -5.0, 5.0, points=[np.log(k / (n - k))])
    assert abs(np.log(value) - shift - gold) < 1e-6
