"""The golds of ``pm_evidence.zoo.periodic`` (issue 36, part 5) by second routes.

* The amplitude-marginal likelihood ``p(y | f)`` equals SciPy's multivariate normal density
  ``N(y; 0, sigma^2 I + X X^T)``, and the look-up evaluations of the scan equal it.
* One frequency: the trapezoid rule on 10^6 points over the whole box (brute force).
* Two and three frequencies: the scan + quadrature with other cells, sub-cells, node counts and
  margin (three: slow).
* Ordered frequencies: PyMC's prior density of the ordered model is ``K! / V^K`` on the ordered
  region (a proper prior), so both models have one gold.
* The mirror modes: QUADPACK over ``theta > 0`` doubled; the hyperbola by 2-D Gauss-Legendre
  over ``(a, b)`` (no closed form in ``b``).

(``tests/zoo/test_multimodal.py`` checks every entry's ``log_joint`` against PyMC's ``logp`` and
its unit-cube form.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from pm_evidence.zoo import periodic as zp
from pm_evidence.zoo.multimodal import multimodal_zoo, unit_cube


def _entry(name):
    return multimodal_zoo([name])[0]


def _data(name):
    kwargs = _entry(name).gold.keywords
    t, y = zp.periodic_data(
        kwargs["freqs"],
        kwargs["amplitudes"],
        kwargs["n"],
        kwargs["sigma"],
        kwargs["seed"],
        kwargs["t_max"],
    )
    return t, y, kwargs["sigma"]


def _dense_log_marginal(f, t, y, sigma):
    phase = 2 * np.pi * np.outer(t, f)
    x = np.concatenate([np.sin(phase), np.cos(phase)], axis=1)
    cov = sigma**2 * np.eye(t.size) + x @ x.T
    return stats.multivariate_normal.logpdf(y, np.zeros(t.size), cov)


@pytest.mark.parametrize("name", ["periodic_1f", "periodic_2f", "periodic_3f"])
def test_amplitude_marginal_is_the_gaussian_density(name):
    t, y, sigma = _data(name)
    k = len(_entry(name).gold.keywords["freqs"])
    rng = np.random.default_rng(3)
    f = rng.uniform(0.2, 12.0, size=(5, k))
    mine = zp.signal_log_marginal(f, t, y, sigma)
    dense = [_dense_log_marginal(row, t, y, sigma) for row in f]
    np.testing.assert_allclose(mine, dense, rtol=0, atol=1e-9)
    # the scan's look-up tables give the same values on a grid of frequencies
    phi = np.linspace(0.2, 12.0, 37)
    idx = rng.integers(0, phi.size, size=(6, k))
    looked_up = zp.log_marginal_at(zp.tables(phi, t, y, sigma), idx)
    np.testing.assert_allclose(
        looked_up, zp.signal_log_marginal(phi[idx], t, y, sigma), rtol=0, atol=1e-9
    )
    # and so do the per-cell Gram blocks of the quadrature stage
    nodes = np.array([[1.0, 1.3], [2.0, 2.2], [5.1, 5.5]])[:, :, None] * np.ones(1)
    feats = (np.sin(2 * np.pi * nodes * t), np.cos(2 * np.pi * nodes * t))
    rows = np.array([[0, 1, 2][:k], [2, 2, 1][:k]])
    combos = np.stack(np.meshgrid(*([np.arange(2)] * k), indexing="ij"), -1).reshape(-1, k)
    cells = zp.log_marginal_cells(feats, rows, combos, y, sigma)
    points = nodes[rows[:, None, :], combos[None, :, :], 0]  # (rows, combos, k)
    expected = zp.signal_log_marginal(points.reshape(-1, k), t, y, sigma).reshape(cells.shape)
    np.testing.assert_allclose(cells, expected, rtol=0, atol=1e-9)


def test_cell_multiplicities():
    idx = np.array([[0, 1, 2], [1, 1, 2], [3, 3, 3], [0, 2, 2]])
    np.testing.assert_array_equal(zp.multiplicity(idx), [6, 3, 1, 3])
    np.testing.assert_array_equal(zp.multiplicity(np.array([[0, 1], [4, 4]])), [2, 1])
    # the ordered cells with their multiplicities cover the grid once
    for k, g in ((1, 7), (2, 7), (3, 7)):
        cells = zp.ordered_cells(g, k)
        assert zp.multiplicity(cells).sum() == g**k
        assert np.all(np.diff(cells, axis=1) >= 0)


def test_one_frequency_by_brute_force():
    """The trapezoid rule on 10^6 + 1 equally spaced frequencies over the whole box (spacing
    1.2e-5, a thousandth of a mode's standard deviation)."""
    entry = _entry("periodic_1f")
    gold = entry.gold()
    t, y, sigma = _data("periodic_1f")
    f = np.linspace(0.2, 12.0, 1_000_001)
    log_f = zp.signal_log_marginal(f[:, None], t, y, sigma, chunk=100_000)
    log_w = np.full(f.size, np.log(f[1] - f[0]))
    log_w[[0, -1]] -= np.log(2.0)
    brute = special.logsumexp(log_f + log_w) - np.log(11.8)
    assert gold.error < 1e-7
    assert abs(brute - gold.log_z) < 1e-7
    # the posterior: one main mode about 0.05 wide (sd about 0.014) and local modes that hold
    # about a fifth of the mass
    post = np.exp(log_f - log_f.max())
    post /= post.sum()
    main = np.abs(f - f[np.argmax(log_f)]) < 0.05
    assert 0.7 < post[main].sum() < 0.9


def test_two_frequencies_by_a_second_scheme():
    """Scan cells of 0.01 (not 0.02), 2 x 2 sub-cells (not 4 x 4), 8 and 12 nodes (not 6 and
    10) and a margin of 40 nats (not 30)."""
    gold = _entry("periodic_2f").gold()
    t, y, sigma = _data("periodic_2f")
    second = zp.log_z_frequencies(
        t, y, sigma, 2, 0.2, 12.0, cell=0.01, split=2, nodes=(8, 12), margin=40.0
    )
    assert gold.error < 1e-6 and second.error < 1e-6
    assert abs(second.log_z - gold.log_z) < 1e-6


@pytest.mark.slow
def test_three_frequencies_by_a_second_scheme():
    """Scan cells of 0.03 (not 0.04), 3 x 3 x 3 sub-cells, 8 and 12 nodes, margin 45 nats
    (a minute or two)."""
    gold = _entry("periodic_3f").gold()
    t, y, sigma = _data("periodic_3f")
    second = zp.log_z_frequencies(
        t, y, sigma, 3, 0.2, 12.0, cell=0.03, split=3, nodes=(8, 12), margin=45.0
    )
    assert gold.error < 1e-6 and second.error < 1e-6
    assert abs(second.log_z - gold.log_z) < 1e-6


@pytest.mark.parametrize("k", [2, 3])
def test_ordered_prior_is_proper_and_gold_shared(k, compiled):
    """PyMC's log density of ``f`` in the ordered model (the ``Uniform`` terms plus the
    ``log K!`` potential, no Jacobian) is ``log(K! / V^K)`` on the ordered region, whose volume
    is ``V^K / K!``: the prior has mass 1, as in the unordered model, and the likelihood is
    symmetric in the labels, so the two golds are one."""
    ordered, unordered = _entry(f"periodic_{k}f_ordered"), _entry(f"periodic_{k}f")
    assert ordered.gold() == unordered.gold()
    cm = compiled(ordered)
    point = cm.initial_point()
    _, logp_nojac, values = cm(point)
    a, b = values["a"], values["b"]
    t, y, sigma = _data(f"periodic_{k}f")
    mean = zp.signal(values["f"], a, b, t)
    rest = stats.norm.logpdf(np.r_[a, b]).sum() + stats.norm.logpdf(y, mean, sigma).sum()
    assert abs((logp_nojac - rest) - (math.lgamma(k + 1) - k * np.log(11.8))) < 1e-9
    assert np.all(np.diff(values["f"]) > 0)


def test_ordered_unit_cube_is_the_order_statistics():
    """The ordered form sorts the uniforms: its frequencies are increasing and the first of two
    has the law of the minimum, ``P(f_1 <= x) = 1 - (1 - (x - 0.2) / 11.8)^2``."""
    form = unit_cube(_entry("periodic_2f_ordered"))
    u = np.random.default_rng(5).random((40_000, form.dim))
    theta = form.transform(u)
    assert np.all(np.diff(theta[:, :2], axis=1) >= 0)
    x = 3.0
    p = 1 - (1 - (x - 0.2) / 11.8) ** 2
    se = np.sqrt(p * (1 - p) / len(u))
    assert abs(np.mean(theta[:, 0] <= x) - p) < 4 * se


def test_mirror_square_by_quadpack():
    """QUADPACK on ``theta > 0``, doubled (the joint is even in ``theta``)."""
    entry = _entry("mirror_square")
    gold = entry.gold()
    kw = entry.gold.keywords

    def joint(theta):
        return np.exp(
            zp.mirror_log_density(np.array([theta]), kw["y"], kw["sigma"], kw["prior_sd"])[0]
            - gold.log_z
        )

    value, abserr = integrate.quad(
        joint, 0.0, 30.0, points=[1.2, 1.6], limit=400, epsabs=1e-13, epsrel=1e-12
    )
    assert abserr < 1e-8
    assert abs(np.log(2 * value)) < 1e-8 and gold.error < 1e-12


def test_hyperbola_by_quadrature_in_two_dimensions():
    """2-D composite Gauss-Legendre of the joint (SciPy densities, ``b`` not integrated in
    closed form) over ``[-16, 16]^2``, cells of 0.2."""
    entry = _entry("hyperbola_branches")
    gold = entry.gold()
    y = np.asarray(entry.gold.keywords["y"])
    edges = np.linspace(-16.0, 16.0, 161)
    z, w = np.polynomial.legendre.leggauss(12)
    half = np.diff(edges) / 2
    x = (((edges[1:] + edges[:-1]) / 2)[:, None] + half[:, None] * z).ravel()
    log_w = (np.log(half)[:, None] + np.log(w)).ravel()
    prior = stats.norm.logpdf(x, 0.0, 2.0) + log_w
    total = []
    for i in range(0, x.size, 240):
        ab = x[i : i + 240, None] * x[None, :]
        log_lik = np.sum(stats.norm.logpdf(y[:, None, None], ab, 1.0), axis=0)
        total.append(special.logsumexp(log_lik + prior[i : i + 240, None] + prior[None, :]))
    assert abs(special.logsumexp(total) - gold.log_z) < 1e-8 and gold.error < 1e-12
    # two branches of equal mass: the joint is symmetric under (a, b) -> (-a, -b)
    assert (
        abs(
            zp.hyperbola_branches_log_joint({"a": 1.3, "b": 2.1}, **entry.gold.keywords)
            - zp.hyperbola_branches_log_joint({"a": -1.3, "b": -2.1}, **entry.gold.keywords)
        )
        < 1e-12
    )
