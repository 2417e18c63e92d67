"""Gold values of the multimodal zoo (``pm_evidence.zoo.multimodal``) checked by independent
routes.

* The function each gold integrates is PyMC's: ``model.logp(jacobian=False)`` equals the entry's
  NumPy ``log_joint`` at a few points (and at every tested state of the change point), and the
  Jacobian term of PyMC's interval transforms equals the log volume of the backward map by
  finite differences.
* The numerics, each by a second route: the eggbox by the trapezoid rule over one period and by
  Monte Carlo; the 2-D shells by 2-D quadrature of the joint over the box, the 10-D shells'
  radial integral by Gaussian moments and the cap formula by Monte Carlo; the unequal modes by
  1-D quadrature per axis; the trimodal mixture by quadrature over ``mu`` (two rules and
  QUADPACK); the change point by QUADPACK over each rate for every ``tau``; the funnel by
  Monte Carlo of its box probability. Monte Carlo tolerances are 4 standard errors.
* The unit-cube forms (for nested samplers) equal ``log_joint - log prior``.

No sampler; each model is compiled once.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_evidence.zoo import multimodal as zm
from pm_evidence.zoo import testing
from pm_evidence.zoo.multimodal import MULTIMODAL_ZOO, multimodal_zoo, unit_cube
from pm_evidence.zoo.testing import Gold

TAU_STATES = (1, 20, 36, 59)  # change point: states visited by the log-joint check


def _entry(name):
    return multimodal_zoo([name])[0]


def _points(cm, n=4, seed=0):
    """The initial point and random unconstrained perturbations (scale 1), crossed with the
    tested states of the discrete variables."""
    rng = np.random.default_rng(seed)
    start = cm.initial_point()
    states = [{}]
    if cm.entry.name == "change_point":
        key = next(k for k in start if k.endswith("tau"))
        states = [{key: np.asarray(t, dtype=start[key].dtype)} for t in TAU_STATES]
    for i in range(n):
        scale = 0.0 if i == 0 else 1.0
        base = {
            k: v + scale * rng.normal(size=np.shape(v)) if v.dtype.kind == "f" else v
            for k, v in start.items()
        }
        for state in states:
            yield base | state


@pytest.mark.parametrize("entry", MULTIMODAL_ZOO, ids=lambda m: m.name)
def test_log_joint_is_pymc_logp(entry, compiled):
    """The gold integrates the function PyMC defines: the NumPy ``log_joint`` equals PyMC's
    ``logp(jacobian=False)``, and PyMC's Jacobian term is the log volume of its transform."""
    cm = compiled(entry)
    n_points = 0
    for point in _points(cm):
        logp, logp_nojac, values = cm(point)
        mine = entry.log_joint(values)
        assert np.isfinite(logp_nojac) and np.isfinite(mine)
        assert abs(logp_nojac - mine) <= 1e-10 * (1 + abs(mine)), (
            f"{entry.name}: PyMC logp {logp_nojac!r} vs log_joint {mine!r} at {values}"
        )
        assert abs((logp - logp_nojac) - cm.jacobian_log_volume(point)) < 1e-5
        n_points += 1
    assert n_points >= 4


def test_registry_and_convention():
    names = [m.name for m in MULTIMODAL_ZOO]
    assert names == [
        "eggbox",
        "gaussian_shells_2d",
        "gaussian_shells_10d",
        "unequal_modes_5d",
        "trimodal_mixture_1d",
        "change_point",
        "funnel_box_10d",
        "periodic_1f",
        "periodic_2f",
        "periodic_2f_ordered",
        "periodic_3f",
        "periodic_3f_ordered",
        "mirror_square",
        "hyperbola_branches",
    ]
    for entry in MULTIMODAL_ZOO:
        gold = entry.gold()
        assert isinstance(gold, Gold) and np.isfinite(gold.log_z)
        # the periodic golds' error is dominated by a bound on the mass their scan leaves out
        assert gold.error < (1e-6 if "periodic" in entry.tags else 1e-9), entry.name
        assert entry.build()[1] == gold.log_z  # the builder's value is the registered gold
    assert {m.name for m in multimodal_zoo(tags=["phase_transition"])} == {"unequal_modes_5d"}
    assert {m.name for m in multimodal_zoo(tags=["funnel"])} == {"funnel_box_10d"}
    with pytest.raises(KeyError, match="not_a_model"):
        multimodal_zoo(["not_a_model"])
    # the published values (rounded to 0.01 or 0.001), in PyMC's convention (prior included)
    assert abs(_entry("eggbox").gold().log_z - 235.856) < 5e-4
    assert abs(_entry("gaussian_shells_2d").gold().log_z - (-1.75)) < 5e-3
    assert abs(_entry("gaussian_shells_10d").gold().log_z - (-14.59)) < 5e-3
    # unequal modes: issue 23's "log Z = 2" is the integral of the potential over the box
    assert abs(_entry("unequal_modes_5d").gold().log_z + 5 * np.log(20.0) - 2.0) < 1e-12


# ---------------------------------------------------------------------------------------------
# the numerics, by second routes
# ---------------------------------------------------------------------------------------------


def test_eggbox_by_the_trapezoid_rule_over_one_period():
    """``cos(x / 2)`` runs over ``[-1, 1]`` once in every interval of length ``2 pi``, so the
    integral over ``[0, 10 pi]^2`` is 25/4 of the integral over one period ``[0, 4 pi)^2``,
    where the trapezoid rule converges exponentially (periodic analytic integrand)."""
    gold = _entry("eggbox").gold().log_z
    values = []
    for n in (1000, 1500):
        c = np.cos(np.arange(n) * 4 * np.pi / n / 2)
        log_f = (2 + np.outer(c, c)) ** 5
        log_period = special.logsumexp(log_f) + 2 * np.log(4 * np.pi / n)
        values.append(log_period + np.log(25 / 4) - 2 * np.log(10 * np.pi))
    assert abs(values[0] - values[1]) < 1e-10
    assert abs(values[1] - gold) < 1e-9


def test_eggbox_by_prior_monte_carlo():
    """``Z`` is the mean likelihood under the uniform prior: 400,000 prior draws, 4 SE."""
    entry = _entry("eggbox")
    form = unit_cube(entry)
    rng = np.random.default_rng(7)
    log_l = form.log_likelihood(form.transform(rng.random((400_000, 2))))
    shift = log_l.max()
    w = np.exp(log_l - shift)
    estimate = np.log(w.mean()) + shift
    se = w.std(ddof=1) / np.sqrt(w.size) / w.mean()
    assert se < 0.1  # the check has power
    assert abs(estimate - entry.gold().log_z) < 4 * se


def test_gaussian_shells_2d_by_quadrature_over_the_box():
    """2-D composite Gauss-Legendre over the whole box of the joint written afresh (cells of
    width 0.05, half a shell width), two node counts."""
    gold = _entry("gaussian_shells_2d").gold().log_z
    edges = np.linspace(-6.0, 6.0, 241)

    def log_joint(x1, x2):
        terms = []
        for c in (-3.5, 3.5):
            d = np.sqrt((x1 - c) ** 2 + x2**2)
            terms.append(stats.norm.logpdf(d, 2.0, 0.1))
        return np.logaddexp(*terms) - 2 * np.log(12.0)

    values = []
    for n in (6, 10):
        x, log_w = zm.composite_legendre(edges, n)
        grid = log_joint(x[:, None], x[None, :]) + log_w[:, None] + log_w[None, :]
        values.append(special.logsumexp(grid))
    assert abs(values[0] - values[1]) < 1e-7
    assert abs(values[1] - gold) < 1e-7


def test_gaussian_shells_radial_integral_and_cap():
    """The radial integral without the box is ``S_{d-1} E[rho^{d-1}]`` for ``rho ~ N(r, w^2)``
    (noncentral moments of a normal, exact up to the tail below 0), and the cap fraction
    ``P(u_1 < -t)`` of the sphere matches Monte Carlo where it is large."""
    r, w = 2.0, 0.1
    for dim in (2, 10):
        k = dim - 1
        moments = [0.0 if j % 2 else special.factorial2(j - 1) if j else 1.0 for j in range(k + 1)]
        e_rho = sum(special.comb(k, j) * r ** (k - j) * w**j * moments[j] for j in range(k + 1))
        log_area = np.log(2.0) + 0.5 * dim * np.log(np.pi) - special.gammaln(dim / 2)
        no_box = zm.shell_box_log_mass(dim, r, w, 7.0, 600.0, 64)
        assert abs(no_box - (log_area + np.log(e_rho))) < 1e-10
        gold = zm.gaussian_shells_gold(dim, r, w, 7.0, 6.0).log_z
        assert -1e-7 < gold - (np.log(2.0) + no_box - dim * np.log(12.0)) <= 0.0

    rng = np.random.default_rng(11)
    u = rng.normal(size=(200_000, 10))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    for t in (0.1, 0.4):
        hits = np.mean(u[:, 0] < -t)
        se = np.sqrt(hits * (1 - hits) / u.shape[0])
        cap = -np.expm1(zm.log_cap_complement(np.array([1.0]), t, 10)[0])
        assert abs(cap - hits) < 4 * se


def test_unequal_modes_by_quadrature_per_axis():
    """Each component's mass in the box is a product over axes of 1-D integrals, computed by
    composite Gauss-Legendre (not by the normal CDF)."""
    gold = _entry("unequal_modes_5d").gold().log_z
    edges = np.linspace(-10.0, 10.0, 401)
    narrow = zm.log_integral_1d(lambda x: stats.norm.logpdf(x, 1.0, 0.05), edges, 16)
    wide = zm.log_integral_1d(lambda x: stats.norm.logpdf(x, -1.0, 1.0), edges, 16)
    log_z = 2.0 + np.logaddexp(np.log(0.3) + 5 * narrow, np.log(0.7) + 5 * wide) - 5 * np.log(20)
    assert abs(log_z - gold) < 1e-10


def test_trimodal_mixture_by_quadrature_over_mu():
    """The closed form (labels enumerated) vs Gauss-Legendre of two orders and QUADPACK over
    ``mu``, with the joint the entry writes (checked against PyMC above)."""
    entry = _entry("trimodal_mixture_1d")
    gold = entry.gold().log_z
    y, w, delta = zm.TRIMODAL_Y, (0.2, 0.5, 0.3), (-4.0, 0.0, 4.0)

    def log_f(mu):
        return zm.trimodal_log_density(mu, y, w, delta, 0.7, 4.0)

    edges = np.linspace(-30.0, 30.0, 121)
    coarse, fine = (zm.log_integral_1d(log_f, edges, n) for n in (16, 32))
    assert abs(coarse - fine) < 1e-12 and abs(fine - gold) < 1e-10
    value, abserr = integrate.quad(
        lambda m: np.exp(log_f(np.array([m]))[0] - gold), -40, 40, points=[-4, 0, 4], limit=200
    )
    assert abserr < 1e-9 and abs(np.log(value)) < 1e-9
    # the posterior is trimodal with the masses the docstring states
    mu = np.linspace(-12, 12, 24_001)
    post = np.exp(log_f(mu) - gold) * (mu[1] - mu[0])
    masses = [post[mu < -2].sum(), post[(mu > -2) & (mu < 2)].sum(), post[mu > 2].sum()]
    np.testing.assert_allclose(masses, [0.17, 0.76, 0.07], atol=0.01)


def test_change_point_by_quadrature_over_the_rates():
    """For every ``tau`` the rates integrate separately: adaptive Gauss-Kronrod quadrature
    (QUADPACK's rule, all segments at once) over each rate of the Poisson likelihood times the
    Gamma prior (SciPy densities, not the closed form), summed over tau."""
    entry = _entry("change_point")
    gold = entry.gold().log_z
    n = 60
    y = zm.change_point_data(n, 36, (3.0, 1.5), 51)
    taus = np.arange(1, n)
    before = np.arange(n)[None, :] < taus[:, None]  # (tau, t): y_t is in the first segment
    segments = np.stack([before, ~before])  # (2, tau, t): the segment before tau, after it

    def log_f(lam):
        """Each segment's log likelihood at rate ``lam`` plus the log prior: ``(2, n - 1)``."""
        return segments @ stats.poisson.logpmf(y, lam) + stats.gamma.logpdf(lam, 2.0)

    modes = (1 + segments @ y) / (1 + segments.sum(axis=2))
    # log f of each segment at its own mode: the integrand's scale, which cancels below
    shift = (segments * stats.poisson.logpmf(y, modes[..., None])).sum(axis=2)
    shift += stats.gamma.logpdf(modes, 2.0)
    value, _ = integrate.quad_vec(
        lambda lam: np.exp(log_f(lam) - shift), 0, 40, epsrel=1e-12, norm="max", limit=2000
    )
    terms = (np.log(value) + shift).sum(axis=0) - np.log(n - 1)
    assert abs(special.logsumexp(terms) - gold) < 1e-8


def test_funnel_by_monte_carlo_of_the_box_probability():
    """``int_box exp(potential) = P(|v| <= 10, |x_i| <= 20)`` for ``v ~ N(0, 9)``,
    ``x_i | v ~ N(0, e^v)``: 400,000 draws from the funnel itself, 4 binomial SE."""
    gold = _entry("funnel_box_10d").gold().log_z
    log_volume = np.log(20.0) + 9 * np.log(40.0)
    rng = np.random.default_rng(13)
    v = rng.normal(0.0, 3.0, size=400_000)
    x = rng.normal(size=(v.size, 9)) * np.exp(v / 2)[:, None]
    inside = (np.abs(v) <= 10) & np.all(np.abs(x) <= 20, axis=1)
    p = inside.mean()
    se = np.sqrt(p * (1 - p) / v.size) / p  # of log p (delta method)
    assert se < 0.01
    assert abs(np.log(p) - (gold + log_volume)) < 4 * se
    # a second quadrature: QUADPACK over v
    value, _ = integrate.quad(
        lambda t: np.exp(zm.funnel_log_f(t, 10, 3.0, 20.0)), -10, 10, epsrel=1e-12, limit=200
    )
    assert abs(np.log(value) - log_volume - gold) < 1e-10


# ---------------------------------------------------------------------------------------------
# the unit-cube forms
# ---------------------------------------------------------------------------------------------


def _log_prior(entry, theta):
    """The prior density of the unit-cube transform's output, written out per entry."""
    name = entry.name
    if name == "eggbox":
        return -2 * np.log(10 * np.pi)
    if name.startswith("gaussian_shells"):
        return -theta.size * np.log(12.0)
    if name == "unequal_modes_5d":
        return -5 * np.log(20.0)
    if name == "funnel_box_10d":
        return -np.log(20.0) - 9 * np.log(40.0)
    if name == "trimodal_mixture_1d":
        return stats.norm.logpdf(theta[0], 0.0, 4.0)
    if name == "change_point":
        return -np.log(59.0) + stats.gamma.logpdf(theta[1:], 2.0).sum()
    if name.startswith("periodic"):  # f uniform (sorted: K! / V^K), amplitudes N(0, 1)
        k = theta.size // 3
        log_f = -k * np.log(11.8) + (special.gammaln(k + 1) if "ordered" in name else 0.0)
        return log_f + stats.norm.logpdf(theta[k:]).sum()
    if name in ("mirror_square", "hyperbola_branches"):
        return stats.norm.logpdf(theta, 0.0, 2.0).sum()
    raise AssertionError(name)


@pytest.mark.parametrize("entry", MULTIMODAL_ZOO, ids=lambda m: m.name)
def test_unit_cube_form_is_log_joint_minus_log_prior(entry):
    form = unit_cube(entry)
    rng = np.random.default_rng(17)
    u = rng.random((5, form.dim))
    theta = form.transform(u)
    log_l = form.log_likelihood(theta)
    assert theta.shape == (5, form.dim) and log_l.shape == (5,)
    for row, value in zip(theta, log_l, strict=True):
        values = zm.values(row, form.names)
        if "tau" in values:
            assert values["tau"] == int(values["tau"]) and 1 <= values["tau"] <= 59
        expected = entry.log_joint(values) - _log_prior(entry, row)
        assert abs(value - expected) < 1e-9 * (1 + abs(expected))


def test_unit_cube_rejects_other_entries():
    with pytest.raises(KeyError, match="unit-cube"):
        unit_cube(testing.zoo(["gamma_poisson"])[0])
