"""A multimodal and hard-geometry zoo: PyMC models whose log evidence is known
independently of PyMC, for targets where NUTS misses part of the posterior's mass.

Every entry of :data:`MULTIMODAL_ZOO` is a :class:`~pm_evidence.zoo.entries.ZooModel`: a builder
returning ``(model, gold_log_z)``, a gold computed with NumPy/SciPy only (closed form,
enumeration or Gauss-Legendre quadrature) with its numerical error, and the joint log density
``log_joint`` written with NumPy, which ``tests/zoo/test_multimodal.py`` compares with PyMC's
``logp``.

**Convention.** Every gold is ``log Z = log int p(theta) L(theta) dtheta`` of the PyMC model as
built, i.e. what ``pm_evidence.marginal_likelihood`` estimates: the prior density is included.
For a ``pm.Potential`` on a ``Uniform`` box of volume ``V`` this is
``log int_box exp(potential) dtheta - log V``. Where a paper quotes a value, the builder's
docstring says which of the two it is:

==========================  ==================  ==================================================
entry                       gold ``log Z``      note
==========================  ==================  ==================================================
eggbox                      235.855940          = the published 235.856 (prior included); the
                                                integral over the box alone is 242.750570
gaussian_shells_2d          -1.745642           Feroz & Hobson (2008): -1.75
gaussian_shells_10d         -14.590491          Feroz & Hobson (2008): -14.59
unequal_modes_5d            -12.978661          ``2 - 5 log 20``; the potential alone
                                                integrates to ``e^2`` over the box
trimodal_mixture_1d         -4.512375           closed form (labels enumerated)
change_point                -105.685049         enumeration over tau, rates in closed form
funnel_box_10d              -36.253550          1-D quadrature over v
periodic_*, mirror_square,  see :mod:`pm_evidence.zoo.periodic`
hyperbola_branches
==========================  ==================  ==================================================

The last seven live in :mod:`pm_evidence.zoo.periodic`: sums of 1, 2 and 3
sinusoids of unknown frequencies (unordered, and ordered with the prior ``K! / V^K``; tag
``"periodic"``) and two mirror-mode models (tag ``"mirror"``).

:func:`unit_cube` gives each entry as a prior transform of the unit cube and a log-likelihood
(``Z = int_[0,1]^d L(T(u)) du``), the form nested samplers take.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry, select_entries
from pm_evidence.zoo.gold import (
    LOG_2PI,
    Gold,
    leggauss,
    log_normal_interval,
    normal_mean_log_evidence,
)
from pm_evidence.zoo.periodic import PERIODIC_ENTRIES, periodic_unit_cube

__all__ = [
    "MULTIMODAL_ZOO",
    "TRIMODAL_Y",
    "UnitCube",
    "change_point",
    "change_point_data",
    "composite_legendre",
    "eggbox",
    "funnel_box",
    "funnel_log_f",
    "gaussian_shells",
    "gaussian_shells_gold",
    "log_cap_complement",
    "log_integral_1d",
    "multimodal_zoo",
    "shell_box_log_mass",
    "trimodal_log_density",
    "trimodal_mixture",
    "unequal_modes",
    "unit_cube",
    "values",
]


def composite_legendre(edges, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and log weights of a composite Gauss-Legendre rule: ``n_nodes`` per panel between
    consecutive ``edges``."""
    edges = np.asarray(edges, dtype=float)
    z, w = leggauss(n_nodes)
    half = np.diff(edges) / 2
    mid = (edges[1:] + edges[:-1]) / 2
    nodes = (mid[:, None] + half[:, None] * z[None, :]).ravel()
    log_w = (np.log(half)[:, None] + np.log(w)[None, :]).ravel()
    return nodes, log_w


def log_integral_1d(log_f: Callable[[np.ndarray], np.ndarray], edges, n_nodes: int) -> float:
    """``log int exp(log_f(x)) dx`` by the composite rule of :func:`composite_legendre`."""
    x, log_w = composite_legendre(edges, n_nodes)
    return float(special.logsumexp(log_f(x) + log_w))


def _refined(log_f, edges, n_nodes: tuple[int, int]) -> Gold:
    """The finer rule's value; error = its change from the coarser rule (and from halving the
    panels, which the finer rule does when ``n_nodes[1] == n_nodes[0]``)."""
    coarse = log_integral_1d(log_f, edges, n_nodes[0])
    fine = log_integral_1d(log_f, edges, n_nodes[1])
    return Gold(float(fine), float(abs(fine - coarse)))


# --- eggbox -----------------------------------------------------------------------------------


def _eggbox_log_potential(x: np.ndarray, power: float) -> np.ndarray:
    """``(2 + cos(x_1 / 2) cos(x_2 / 2))^power`` at the rows of ``x``."""
    return (2.0 + np.cos(x[..., 0] / 2) * np.cos(x[..., 1] / 2)) ** power


@functools.cache
def _eggbox_gold(power: float, width: float, n_panels: int = 40) -> Gold:
    """Tensor-product composite Gauss-Legendre over the box: ``n_panels`` panels per axis
    (width ``pi / 4`` for the default box, about 8 standard deviations of a peak), 16 and 32
    nodes per panel; the error is the change between the two."""
    edges = np.linspace(0.0, width, n_panels + 1)
    values = []
    for n in (16, 32):
        x, log_w = composite_legendre(edges, n)
        c = np.cos(x / 2)
        log_f = (2.0 + np.outer(c, c)) ** power
        values.append(float(special.logsumexp(log_f + log_w[:, None] + log_w[None, :])))
    log_box = -2 * np.log(width)
    return Gold(float(values[1] + log_box), float(abs(values[1] - values[0])))


def _eggbox_log_joint(values, power, width):
    x = np.asarray(values["x"], dtype=float)
    if np.any((x < 0) | (x > width)):
        return -np.inf
    return float(_eggbox_log_potential(x, power) - 2 * np.log(width))


def eggbox(power: float = 5.0, width: float = 10 * np.pi):
    """The eggbox: ``x ~ Uniform(0, width)^2`` and ``pm.Potential`` ``(2 + cos(x_1 / 2)
    cos(x_2 / 2))^power``; 18 modes of height ``exp(3^5)`` and width about 0.1 in the default
    box ``[0, 10 pi]^2`` (whole ones inside, halves and quarters on the edges).

    Convention: ``log Z = log int_box exp(potential) dx - 2 log(width)`` (prior density
    included) ``= 235.855940`` for the defaults. That is the published 235.856 (quoted e.g. by
    dynesty's eggbox example; the target is that of Feroz, Hobson and Bridges 2009), which is
    the log of the mean likelihood under the uniform prior; the integral over the box alone is
    ``log Z + 2 log(10 pi) = 242.750570``.

    Gold (quadrature 2-D): composite Gauss-Legendre, 40 x 40 panels of width ``pi / 4`` with 16
    and 32 nodes per panel per axis (1.6M points); the error is the change between the two
    (2e-11 nats, rounding of a sum near exp(243)). Checked in the tests against the trapezoid
    rule over one full period
    ``[0, 4 pi)^2`` (exponentially accurate for a periodic integrand; the box is 25/4 periods by
    symmetry) and against Monte Carlo.

    References: F. Feroz, M. P. Hobson and M. Bridges (2009), MultiNest, MNRAS 398, 1601-1614.
    """
    with pm.Model(name="eggbox") as model:
        x = pm.Uniform("x", np.float64(0.0), np.float64(width), shape=2)
        half = np.float64(0.5)
        c = pt.cos(x[0] * half) * pt.cos(x[1] * half)
        pm.Potential("eggbox", (np.float64(2.0) + c) ** np.float64(power))
    return model, _eggbox_gold(power, width).log_z


# --- Gaussian shells --------------------------------------------------------------------------


def _shell_log_density(x, center, radius, width):
    """``log circ(x; c, r, w) = log N(|x - c| | r, w^2)`` at the rows of ``x`` (Feroz & Hobson
    2008: the normalization ``1 / sqrt(2 pi w^2)`` in every dimension)."""
    distance = np.sqrt(np.sum((x - center) ** 2, axis=-1))
    return -0.5 * ((distance - radius) / width) ** 2 - np.log(width) - 0.5 * LOG_2PI


def _shell_centers(dim, separation):
    centers = np.zeros((2, dim))
    centers[:, 0] = [-separation / 2, separation / 2]
    return centers


def _shells_log_potential(x, dim, radius, width, separation):
    c1, c2 = _shell_centers(dim, separation)
    return np.logaddexp(
        _shell_log_density(x, c1, radius, width), _shell_log_density(x, c2, radius, width)
    )


def log_cap_complement(rho, gap, dim):
    """``log`` of the fraction of the sphere of radius ``rho`` around a shell's centre that lies
    inside the box, when the nearest wall is ``gap`` away along the first axis and every other
    wall out of reach: ``1 - P(u_1 < -gap / rho)`` for ``u`` uniform on ``S^{dim-1}``, with the
    cap ``P(u_1 < -t) = I_{1 - t^2}((dim - 1) / 2, 1 / 2) / 2``."""
    rho = np.asarray(rho, dtype=float)
    t = np.clip(gap / np.maximum(rho, 1e-300), 0.0, 1.0)
    cap = np.where(rho > gap, 0.5 * special.betainc((dim - 1) / 2, 0.5, 1 - t**2), 0.0)
    return np.log1p(-cap)


def shell_box_log_mass(dim, radius, width, separation, half_box, n_nodes):
    """``log int_box circ(x; c_1, r, w) dx`` for one shell by radial quadrature:
    ``int_0^inf N(rho | r, w^2) S_{d-1} rho^{d-1} (1 - cap(rho)) drho``, ``S_{d-1} =
    2 pi^{d/2} / Gamma(d/2)``, over ``rho in [r - 15 w, r + 15 w]`` (beyond: ``exp(-112)``
    relative), with a panel edge where the box starts cutting the shell."""
    gap = half_box - separation / 2
    if separation / 2 + radius + 15 * width > 2 * half_box or radius + 15 * width > half_box:
        raise ValueError("a shell reaches a second wall of the box; the cap formula needs one")
    log_area = np.log(2.0) + 0.5 * dim * np.log(np.pi) - special.gammaln(dim / 2)
    lo, hi = max(radius - 15 * width, 0.0), radius + 15 * width

    def log_f(rho):
        return (
            -0.5 * ((rho - radius) / width) ** 2
            - np.log(width)
            - 0.5 * LOG_2PI
            + log_area
            + (dim - 1) * np.log(rho)
            + log_cap_complement(rho, gap, dim)
        )

    edges = np.unique(np.clip(np.concatenate([np.linspace(lo, hi, 31), [gap]]), lo, hi))
    return log_integral_1d(log_f, edges, n_nodes)


@functools.cache
def gaussian_shells_gold(dim, radius, width, separation, half_box) -> Gold:
    """Sum of the two shells' integrals over the box (exact: the potential is the sum of the
    two densities, so no overlap term is neglected), each by :func:`shell_box_log_mass`;
    error = the change from 32 to 64 nodes per panel."""
    values = [
        np.log(2.0) + shell_box_log_mass(dim, radius, width, separation, half_box, n)
        for n in (32, 64)
    ]
    log_volume = dim * np.log(2 * half_box)
    return Gold(float(values[1] - log_volume), float(abs(values[1] - values[0])))


def _gaussian_shells_log_joint(values, dim, radius, width, separation, half_box):
    x = np.asarray(values["x"], dtype=float)
    if np.any(np.abs(x) > half_box):
        return -np.inf
    log_volume = dim * np.log(2 * half_box)
    return float(_shells_log_potential(x, dim, radius, width, separation) - log_volume)


def gaussian_shells(
    dim: int = 2,
    radius: float = 2.0,
    width: float = 0.1,
    separation: float = 7.0,
    half_box: float = 6.0,
):
    """Two Gaussian shells (Feroz & Hobson 2008): ``x ~ Uniform(-6, 6)^dim`` and
    ``pm.Potential`` ``log[circ(x; c_1) + circ(x; c_2)]`` with
    ``circ(x; c) = exp(-(|x - c| - r)^2 / (2 w^2)) / sqrt(2 pi w^2)``, ``r = 2``, ``w = 0.1``,
    centres ``(-+3.5, 0, ..., 0)``.

    Convention: prior density included, ``log Z = log int_box exp(potential) - dim log 12``
    ``= -1.745642`` (2-D) and ``-14.590491`` (10-D); the paper's analytical values are -1.75
    and -14.59 (same convention).

    Gold (quadrature 1-D per shell): the potential is the sum of the two shell densities, so
    ``Z`` is exactly the sum of their integrals over the box, and no overlap enters (the shells
    are 3 apart, 30 widths; the density of one shell on the other is below ``exp(-450)``: it
    matters only to samplers). Each integral is radial: ``int N(rho | r, w^2) S_{d-1} rho^{d-1}
    (1 - cap(rho)) drho``, where ``cap(rho)`` is the fraction of the sphere of radius ``rho``
    beyond the nearest wall (the shell's outer edge at 5.5 is 5 widths from the wall at 6; the
    cap removes 1.2e-8 of a shell's mass in 2-D, 1e-13 in 10-D) by the regularized incomplete
    beta function. Composite Gauss-Legendre over ``r +- 15 w`` (31 panels, 32 vs 64 nodes);
    error below 1e-12 nats. Checked in the tests by 2-D quadrature over the box (2-D) and Monte
    Carlo of the cap (10-D).

    References: F. Feroz and M. P. Hobson (2008), Multimodal nested sampling: an efficient and
    robust alternative to Markov chain Monte Carlo methods for astronomical data analyses,
    MNRAS 384, 449-463 (the Gaussian-shells example).
    """
    with pm.Model(name=f"gaussian_shells_{dim}d") as model:
        x = pm.Uniform("x", np.float64(-half_box), np.float64(half_box), shape=dim)
        centers = _shell_centers(dim, separation)
        terms = []
        for center in centers:
            distance = pt.sqrt(pt.sum((x - center.astype(np.float64)) ** 2))
            terms.append(
                np.float64(-0.5) * ((distance - np.float64(radius)) / np.float64(width)) ** 2
                - np.float64(np.log(width) + 0.5 * LOG_2PI)
            )
        pm.Potential("shells", pt.logaddexp(*terms))
    return model, gaussian_shells_gold(dim, radius, width, separation, half_box).log_z


# --- unequal modes (a phase transition in beta) -----------------------------------------------


def _unequal_modes_log_potential(x, weight, narrow_sd, wide_sd, log_scale):
    """``log_scale + log[w N(x | +1, narrow_sd^2 I) + (1 - w) N(x | -1, wide_sd^2 I)]``."""
    narrow = np.sum(stats.norm.logpdf(x, 1.0, narrow_sd), axis=-1)
    wide = np.sum(stats.norm.logpdf(x, -1.0, wide_sd), axis=-1)
    return log_scale + np.logaddexp(np.log(weight) + narrow, np.log1p(-weight) + wide)


@functools.cache
def _unequal_modes_gold(dim, weight, narrow_sd, wide_sd, half_box, log_scale) -> Gold:
    """Closed form: each component's mass in the box is a product of normal intervals."""
    log_narrow = dim * log_normal_interval(
        (-half_box - 1.0) / narrow_sd, (half_box - 1.0) / narrow_sd
    )
    log_wide = dim * log_normal_interval((-half_box + 1.0) / wide_sd, (half_box + 1.0) / wide_sd)
    log_mass = np.logaddexp(np.log(weight) + log_narrow, np.log1p(-weight) + log_wide)
    return Gold(float(log_scale + log_mass - dim * np.log(2 * half_box)), 0.0)


def _unequal_modes_log_joint(values, dim, weight, narrow_sd, wide_sd, half_box, log_scale):
    x = np.asarray(values["x"], dtype=float)
    if np.any(np.abs(x) > half_box):
        return -np.inf
    log_potential = _unequal_modes_log_potential(x, weight, narrow_sd, wide_sd, log_scale)
    return float(log_potential - dim * np.log(2 * half_box))


def unequal_modes(
    dim: int = 5,
    weight: float = 0.3,
    narrow_sd: float = 0.05,
    wide_sd: float = 1.0,
    half_box: float = 10.0,
    log_scale: float = 2.0,
):
    """Two modes of unequal width: ``x ~ Uniform(-10, 10)^dim`` and ``pm.Potential``
    ``log(e^2 [0.3 N(x | +1, 0.05^2 I) + 0.7 N(x | -1, I)])``.

    A trap for tempering: along ``p(x) L(x)^beta`` the narrow mode (30% of the mass at
    ``beta = 1``) holds almost none of it until ``beta`` is close to 1, then takes it over
    abruptly (a first-order phase transition); a sampler started from the wide mode misses it
    and returns ``2 + log 0.7 - ...``, 0.357 nats low.

    Convention: ``log Z = 2 - dim log 20 + log(0.3 m_1 + 0.7 m_2) = -12.978661`` for the
    defaults, with the prior density ``20^-5`` included; ``m_k`` (each within ``1e-18`` of 1)
    is the component's mass inside the box. Without the prior density, the integral of the
    potential over the box is ``log Z + 5 log 20 = 2``.

    Gold (closed form): ``m_k = prod_i [Phi((10 - mu_k) / s_k) - Phi((-10 - mu_k) / s_k)]``;
    error 0 (rounding). Checked in the tests by 1-D Gauss-Legendre quadrature per axis.

    References: J. Skilling (2006), Nested sampling for general Bayesian computation, Bayesian
    Analysis 1(4), 833-860 (phase changes: a narrow spike on a broad background defeats
    thermodynamic integration; this target is of that kind).
    """
    with pm.Model(name=f"unequal_modes_{dim}d") as model:
        x = pm.Uniform("x", np.float64(-half_box), np.float64(half_box), shape=dim)
        narrow = pt.sum(
            pm.logp(pm.Normal.dist(np.float64(1.0), np.float64(narrow_sd)), x)
        ) + np.float64(np.log(weight))
        wide = pt.sum(
            pm.logp(pm.Normal.dist(np.float64(-1.0), np.float64(wide_sd)), x)
        ) + np.float64(np.log1p(-weight))
        pm.Potential("modes", np.float64(log_scale) + pt.logaddexp(narrow, wide))
    return model, _unequal_modes_gold(dim, weight, narrow_sd, wide_sd, half_box, log_scale).log_z


# --- a 1-D location model with a three-component mixture likelihood ---------------------------

TRIMODAL_Y = (-0.25, 0.35)


def trimodal_log_density(mu, y, weights, offsets, sigma, prior_sd):
    """Joint log density at an array ``mu``:
    ``N(mu | 0, prior_sd^2) prod_i sum_k w_k N(y_i | mu + delta_k, sigma^2)``."""
    mu = np.asarray(mu, dtype=float)[..., None, None]
    y = np.asarray(y, dtype=float)[:, None]
    comp = stats.norm.logpdf(y, mu + np.asarray(offsets), sigma) + np.log(weights)
    log_lik = np.sum(special.logsumexp(comp, axis=-1), axis=-1)
    return log_lik + stats.norm.logpdf(mu[..., 0, 0], 0.0, prior_sd)


@functools.cache
def _trimodal_mixture_gold(y, weights, offsets, sigma, prior_sd) -> Gold:
    """Closed form by enumerating the component labels ``k_1..k_n`` (``3^n`` terms): given the
    labels, ``y - delta_k ~ N(0, sigma^2 I + prior_sd^2 11^T)``."""
    y, weights, offsets = np.asarray(y), np.asarray(weights), np.asarray(offsets)
    terms = [
        np.sum(np.log(weights[list(labels)]))
        + normal_mean_log_evidence(y - offsets[list(labels)], sigma, 0.0, prior_sd)
        for labels in itertools.product(range(len(weights)), repeat=len(y))
    ]
    return Gold(float(special.logsumexp(terms)), 0.0)


def _trimodal_mixture_log_joint(values, y, weights, offsets, sigma, prior_sd):
    return float(trimodal_log_density(values["mu"], y, weights, offsets, sigma, prior_sd))


def trimodal_mixture(
    y: tuple[float, ...] = TRIMODAL_Y,
    weights: tuple[float, ...] = (0.2, 0.5, 0.3),
    offsets: tuple[float, ...] = (-4.0, 0.0, 4.0),
    sigma: float = 0.7,
    prior_sd: float = 4.0,
):
    """A location model with a three-component normal-mixture likelihood of unequal weights:
    ``mu ~ N(0, 4^2)``, ``y_i ~ 0.2 N(mu - 4, 0.7^2) + 0.5 N(mu, 0.7^2) + 0.3 N(mu + 4, 0.7^2)``
    (``pm.NormalMixture``), two observations near 0.

    The posterior of ``mu`` is trimodal, at ``mu ~ 0, -4, +4`` (both observations explained by
    the middle, right or left component), with masses about 0.76, 0.17 and 0.07: missing both
    minor modes costs 0.27 nats, missing the smallest 0.08.

    Gold (closed form, labels enumerated): ``Z = sum_{k_1, k_2} w_{k_1} w_{k_2}
    N(y - delta_k | 0, sigma^2 I + 4^2 11^T)`` (9 terms); error 0 (rounding). Checked in the
    tests by 1-D Gauss-Legendre quadrature over ``mu`` and by QUADPACK.
    """
    y_arr = np.asarray(y, dtype=np.float64)
    with pm.Model(name="trimodal_mixture_1d") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(prior_sd))
        pm.NormalMixture(
            "y",
            w=np.asarray(weights, dtype=np.float64),
            mu=mu + np.asarray(offsets, dtype=np.float64),
            sigma=np.float64(sigma),
            observed=y_arr,
        )
    return model, _trimodal_mixture_gold(y, weights, offsets, sigma, prior_sd).log_z


# --- a change-point model ---------------------------------------------------------------------


@functools.cache
def change_point_data(n: int, switch: int, rates: tuple[float, float], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return rng.poisson(np.where(t < switch, rates[0], rates[1]))


def _gamma_poisson_log_marginal(total, count, alpha, beta):
    """``log int prod_t Poisson(y_t | lam) Gamma(lam | alpha, beta) dlam`` without the
    ``prod_t 1 / y_t!`` factor: ``alpha log beta - log G(alpha) + log G(alpha + S) - (alpha + S)
    log(beta + n)``."""
    return (
        alpha * np.log(beta)
        - special.gammaln(alpha)
        + special.gammaln(alpha + total)
        - (alpha + total) * np.log(beta + count)
    )


@functools.cache
def _change_point_gold(n, switch, rates, alpha, beta, seed) -> Gold:
    y = change_point_data(n, switch, rates, seed)
    taus = np.arange(1, n)  # tau ~ DiscreteUniform(1, n - 1): y_t has rate 1 when t < tau
    before = np.cumsum(y)[taus - 1]
    after = y.sum() - before
    log_terms = _gamma_poisson_log_marginal(
        before, taus, alpha, beta
    ) + _gamma_poisson_log_marginal(after, n - taus, alpha, beta)
    log_z = special.logsumexp(log_terms) - np.log(n - 1) - special.gammaln(y + 1).sum()
    return Gold(float(log_z), 0.0)


def _change_point_log_joint(values, n, switch, rates, alpha, beta, seed):
    y = change_point_data(n, switch, rates, seed)
    tau = int(values["tau"])
    lam1, lam2 = float(values["rate_1"]), float(values["rate_2"])
    lam = np.where(np.arange(n) < tau, lam1, lam2)
    return float(
        stats.poisson.logpmf(y, lam).sum()
        + stats.gamma.logpdf([lam1, lam2], alpha, scale=1 / beta).sum()
        - (np.log(n - 1) if 1 <= tau <= n - 1 else np.inf)
    )


def change_point(
    n: int = 60,
    switch: int = 36,
    rates: tuple[float, float] = (3.0, 1.5),
    alpha: float = 2.0,
    beta: float = 1.0,
    seed: int = 51,
):
    """A Poisson change point (the coal-mining-disasters model, simulated): counts
    ``y_t ~ Poisson(rate_1)`` for ``t < tau`` and ``Poisson(rate_2)`` after, ``t = 0..n-1``;
    ``tau ~ DiscreteUniform(1, n - 1)``, ``rate_1, rate_2 ~ Gamma(2, 1)`` i.i.d. (shape,
    rate). Data drawn with the switch at 36 and rates 3 and 1.5 (seed 51).

    Gold (enumeration + closed form): for each ``tau`` the two rates integrate out as
    Gamma-Poisson marginals,
    ``log Z = logsumexp_tau [g(S_<tau, tau) + g(S_>=tau, n - tau)] - log(n - 1) -
    sum_t log y_t!`` with ``g(S, m) = a log b - log G(a) + log G(a + S) - (a + S) log(b + m)``;
    error 0 (rounding). Checked in the tests by QUADPACK over each rate for every ``tau``.

    References: R. G. Jarrett (1979), A note on the intervals between coal-mining disasters,
    Biometrika 66(1), 191-193 (the data the model was made for); the PyMC example "Getting
    started with PyMC" (the model).
    """
    y = change_point_data(n, switch, rates, seed)
    with pm.Model(name="change_point") as model:
        # int64 bounds: with Python ints PyTensor makes int8 constants and a float32 logp
        tau = pm.DiscreteUniform("tau", lower=np.int64(1), upper=np.int64(n - 1))
        rate_1 = pm.Gamma("rate_1", alpha=np.float64(alpha), beta=np.float64(beta))
        rate_2 = pm.Gamma("rate_2", alpha=np.float64(alpha), beta=np.float64(beta))
        rate = pt.switch(pt.lt(np.arange(n), tau), rate_1, rate_2)
        pm.Poisson("y", rate, observed=y)
    return model, _change_point_gold(n, switch, rates, alpha, beta, seed).log_z


# --- Neal's funnel in a box -------------------------------------------------------------------


def _funnel_log_potential(v, x, v_sd):
    """``log N(v | 0, v_sd^2) + sum_i log N(x_i | 0, e^v)``."""
    x = np.asarray(x, dtype=float)
    k = x.shape[-1]
    return (
        stats.norm.logpdf(v, 0.0, v_sd)
        - 0.5 * k * (LOG_2PI + v)
        - 0.5 * np.sum(x**2, axis=-1) * np.exp(-v)
    )


def funnel_log_f(v, dim, v_sd, x_half):
    """``log [N(v | 0, v_sd^2) P(|x_i| <= x_half | v)^(dim - 1)]``, ``x_i | v ~ N(0, e^v)``."""
    z = x_half * np.exp(-0.5 * np.asarray(v, dtype=float)) / np.sqrt(2.0)
    return stats.norm.logpdf(v, 0.0, v_sd) + (dim - 1) * np.log1p(-special.erfc(z))


@functools.cache
def _funnel_box_gold(dim, v_sd, v_half, x_half) -> Gold:
    """1-D composite Gauss-Legendre over ``v``; error = change from 8 to 32 nodes on 40
    panels."""
    edges = np.linspace(-v_half, v_half, 41)
    gold = _refined(lambda v: funnel_log_f(v, dim, v_sd, x_half), edges, (8, 32))
    log_volume = np.log(2 * v_half) + (dim - 1) * np.log(2 * x_half)
    return Gold(float(gold.log_z - log_volume), gold.error)


def _funnel_box_log_joint(values, dim, v_sd, v_half, x_half):
    v = float(values["v"])
    x = np.asarray(values["x"], dtype=float)
    if abs(v) > v_half or np.any(np.abs(x) > x_half):
        return -np.inf
    log_volume = np.log(2 * v_half) + (dim - 1) * np.log(2 * x_half)
    return float(_funnel_log_potential(v, x, v_sd) - log_volume)


def funnel_box(dim: int = 10, v_sd: float = 3.0, v_half: float = 10.0, x_half: float = 20.0):
    """Neal's funnel in a box: ``v ~ Uniform(-10, 10)``, ``x ~ Uniform(-20, 20)^(dim - 1)``
    and ``pm.Potential`` ``log N(v | 0, 3^2) + sum_i log N(x_i | 0, e^v)`` (variance ``e^v``),
    a proper target of ``dim = 10`` parameters whose posterior is the funnel cut by the box:
    ``v`` below ``-7`` (a neck of width ``e^{-3.5}``) holds about 1% of the mass; above
    ``v ~ 6`` the walls at ``+-20`` cut the mouth.

    Convention: prior density included, ``log Z = log int_{-10}^{10} N(v | 0, 9)
    erf(20 e^{-v/2} / sqrt 2)^9 dv - log 20 - 9 log 40``; ``-36.253550`` for the defaults.

    Gold (quadrature 1-D over ``v``): the ``x_i`` integrate out as normal intervals; composite
    Gauss-Legendre over ``[-10, 10]`` (40 panels, 8 vs 32 nodes), error below 1e-12 nats.
    Checked in the tests against Monte Carlo of the box probability (``v`` and ``x`` drawn from
    the funnel).

    References: R. M. Neal (2003), Slice sampling, Annals of Statistics 31(3), 705-767, sect. 8.
    """
    with pm.Model(name=f"funnel_box_{dim}d") as model:
        v = pm.Uniform("v", np.float64(-v_half), np.float64(v_half))
        x = pm.Uniform("x", np.float64(-x_half), np.float64(x_half), shape=dim - 1)
        log_v = pm.logp(pm.Normal.dist(np.float64(0.0), np.float64(v_sd)), v)
        log_x = pt.sum(pm.logp(pm.Normal.dist(np.float64(0.0), pt.exp(v * np.float64(0.5))), x))
        pm.Potential("funnel", log_v + log_x)
    return model, _funnel_box_gold(dim, v_sd, v_half, x_half).log_z


# --- the registry -----------------------------------------------------------------------------

MULTIMODAL_ZOO: tuple[ZooModel, ...] = (
    entry(
        "eggbox",
        eggbox,
        "quadrature 2-D (composite Gauss-Legendre)",
        {"multimodal", "potential", "bounded"},
        _eggbox_gold,
        _eggbox_log_joint,
    ),
    entry(
        "gaussian_shells_2d",
        gaussian_shells,
        "quadrature 1-D (radial, per shell)",
        {"multimodal", "potential", "bounded", "curved"},
        gaussian_shells_gold,
        _gaussian_shells_log_joint,
    ),
    entry(
        "gaussian_shells_10d",
        gaussian_shells,
        "quadrature 1-D (radial, per shell)",
        {"multimodal", "potential", "bounded", "curved"},
        gaussian_shells_gold,
        _gaussian_shells_log_joint,
        dim=10,
    ),
    entry(
        "unequal_modes_5d",
        unequal_modes,
        "closed form",
        {"multimodal", "potential", "bounded", "phase_transition"},
        _unequal_modes_gold,
        _unequal_modes_log_joint,
    ),
    entry(
        "trimodal_mixture_1d",
        trimodal_mixture,
        "closed form (labels enumerated)",
        {"multimodal", "mixture"},
        _trimodal_mixture_gold,
        _trimodal_mixture_log_joint,
    ),
    entry(
        "change_point",
        change_point,
        "enumeration + closed form",
        {"discrete", "mixed_discrete", "bounded", "change_point"},
        _change_point_gold,
        _change_point_log_joint,
    ),
    entry(
        "funnel_box_10d",
        funnel_box,
        "quadrature 1-D (v)",
        {"funnel", "potential", "bounded"},
        _funnel_box_gold,
        _funnel_box_log_joint,
    ),
    *PERIODIC_ENTRIES,
)
"""The multimodal zoo: eggbox, Gaussian shells (2-D, 10-D), unequal modes (5-D), a trimodal
1-D mixture, a change point, a funnel in a box, periodic signals with 1, 2 and 3 frequencies
(unordered and ordered) and two mirror-mode models."""


def multimodal_zoo(names=None, tags=None) -> tuple[ZooModel, ...]:
    """Entries of :data:`MULTIMODAL_ZOO`, optionally only those named in ``names`` and/or
    carrying any of ``tags``.

    Raises
    ------
    KeyError
        If a name is not in the collection (the message lists the known names).
    """
    return select_entries(MULTIMODAL_ZOO, names, tags)


# --- the unit-cube form (nested samplers) -----------------------------------------------------


class UnitCube(NamedTuple):
    """An entry as nested samplers take it: ``Z = int_[0,1]^dim exp(log_likelihood(T(u))) du``.

    Attributes
    ----------
    dim : int
    transform : callable
        ``transform(u) -> theta``: rows of ``u`` in ``[0, 1)^dim`` to parameter rows (the prior
        as a push-forward of the uniform law; a discrete parameter is the floor of a uniform).
    log_likelihood : callable
        ``log_likelihood(theta) -> array``: ``log_joint - log prior`` at each row.
    names : tuple of str
        The parameter of each column (a vector variable repeats its name).
    """

    dim: int
    transform: Callable[[np.ndarray], np.ndarray]
    log_likelihood: Callable[[np.ndarray], np.ndarray]
    names: tuple[str, ...]


def values(theta_row: np.ndarray, names: tuple[str, ...]) -> Mapping[str, np.ndarray]:
    out: dict[str, list] = {}
    for name, value in zip(names, theta_row, strict=True):
        out.setdefault(name, []).append(value)
    # a name met once is a scalar variable (no entry has a vector of length 1)
    return {k: np.asarray(v[0] if len(v) == 1 else v) for k, v in out.items()}


def unit_cube(entry: ZooModel) -> UnitCube:
    """The unit-cube form of a :data:`MULTIMODAL_ZOO` entry (see :class:`UnitCube`).

    Raises
    ------
    KeyError
        For an entry of another collection.
    """
    builder = entry.build.func if isinstance(entry.build, functools.partial) else entry.build
    kwargs = {
        k: p.default
        for k, p in inspect.signature(builder).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    if isinstance(entry.build, functools.partial):
        kwargs.update(entry.build.keywords)

    def box(low, high, dim):
        def transform(u):
            return low + (high - low) * np.asarray(u, dtype=float)

        return transform, dim * np.log(high - low)

    if builder in (eggbox, gaussian_shells, unequal_modes):
        if builder is eggbox:
            dim, low, high = 2, 0.0, kwargs["width"]

            def log_potential(x):
                return _eggbox_log_potential(x, kwargs["power"])
        elif builder is gaussian_shells:
            dim, low, high = kwargs["dim"], -kwargs["half_box"], kwargs["half_box"]

            def log_potential(x):
                return _shells_log_potential(
                    x, dim, kwargs["radius"], kwargs["width"], kwargs["separation"]
                )
        else:
            dim, low, high = kwargs["dim"], -kwargs["half_box"], kwargs["half_box"]

            def log_potential(x):
                return _unequal_modes_log_potential(
                    x, kwargs["weight"], kwargs["narrow_sd"], kwargs["wide_sd"], kwargs["log_scale"]
                )

        transform, _ = box(low, high, dim)
        return UnitCube(dim, transform, log_potential, ("x",) * dim)

    if builder is funnel_box:
        dim = kwargs["dim"]
        v_half, x_half = kwargs["v_half"], kwargs["x_half"]

        def transform(u):
            u = np.asarray(u, dtype=float)
            lows = np.r_[-v_half, np.full(dim - 1, -x_half)]
            return lows + 2 * np.abs(lows) * u

        def log_likelihood(theta):
            theta = np.atleast_2d(theta)
            return _funnel_log_potential(theta[:, 0], theta[:, 1:], kwargs["v_sd"])

        return UnitCube(dim, transform, log_likelihood, ("v",) + ("x",) * (dim - 1))

    if builder is trimodal_mixture:
        prior_sd = kwargs["prior_sd"]
        y, weights, offsets, sigma = (
            kwargs["y"],
            kwargs["weights"],
            kwargs["offsets"],
            kwargs["sigma"],
        )

        def transform(u):
            return stats.norm.ppf(np.asarray(u, dtype=float), 0.0, prior_sd)

        def log_likelihood(theta):
            mu = np.atleast_2d(theta)[:, 0]
            return trimodal_log_density(mu, y, weights, offsets, sigma, prior_sd) - (
                stats.norm.logpdf(mu, 0.0, prior_sd)
            )

        return UnitCube(1, transform, log_likelihood, ("mu",))

    if builder is change_point:
        n, alpha, beta = kwargs["n"], kwargs["alpha"], kwargs["beta"]
        y = change_point_data(n, kwargs["switch"], kwargs["rates"], kwargs["seed"])

        def transform(u):
            u = np.atleast_2d(np.asarray(u, dtype=float))
            tau = np.floor(1 + u[:, :1] * (n - 1))
            rates = stats.gamma.ppf(u[:, 1:], alpha, scale=1 / beta)
            return np.concatenate([tau, rates], axis=1)

        def log_likelihood(theta):
            theta = np.atleast_2d(theta)
            tau, lam1, lam2 = theta[:, :1], theta[:, 1:2], theta[:, 2:3]
            lam = np.where(np.arange(n)[None, :] < tau, lam1, lam2)
            return stats.poisson.logpmf(y[None, :], lam).sum(axis=1)

        return UnitCube(3, transform, log_likelihood, ("tau", "rate_1", "rate_2"))

    parts = periodic_unit_cube(builder, kwargs)
    if parts is not None:
        return UnitCube(*parts)

    raise KeyError(f"{entry.name!r} has no unit-cube form here (not a MULTIMODAL_ZOO entry).")
