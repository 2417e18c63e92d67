"""Models whose priors carry their own support: transforms that cut a distribution, and the
``CustomDist`` priors of radial-velocity work (Jeffreys and modified Jeffreys on an interval).

Each builder returns ``(model, gold_log_z)`` like those of :mod:`pm_evidence.zoo.testing`, and
``SUPPORT_ZOO`` lists them as zoo entries. The gold values use NumPy and SciPy only.

* :func:`cut_normal`: ``x ~ N(0, 1)`` declared with ``transform=Interval(-1, 1)``. PyMC's prior
  density is then the normal on ``(-1, 1)``, *not* renormalized (mass ``Phi(1) - Phi(-1)``),
  so ``Z = int_{-1}^{1} N(x; 0, 1) L(x) dx``: 1-D quadrature.
* :func:`hierarchical_cut_normal`: the cut's mass depends on a free parent, so no CDF gives it
  (the library estimates it from forward draws); 2-D quadrature.
* :func:`circular_rv`: a circular orbit ``v(t) = A sin(2 pi t / P) + B cos(2 pi t / P) + c``
  with a Jeffreys period prior and a modified-Jeffreys jitter, each a ``pm.CustomDist`` with an
  ``Interval`` transform. Given ``(P, s)`` the normal amplitudes and offset integrate out in
  closed form; the rest is 2-D quadrature in the coordinates where both priors are uniform
  (``log P`` and ``log(1 + s / s0)``), checked by a second rule of twice the panels.
* :func:`eccentric_rv`: one or two Keplerian orbits with eccentricity components
  ``h = sqrt(e) cos w`` (a ``CustomDist`` on ``(-1, 1)``) and
  ``k ~ TruncatedNormal(0, 0.3, -sqrt(1 - h^2), sqrt(1 - h^2))``, whose bounds meet as
  ``h -> +-1``. No gold: a benchmark of the same family as real radial-velocity models
  (``benchmarks/support.py``).
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.transforms import Interval
from pytensor.gradient import disconnected_grad
from scipy import integrate, special, stats

from pm_evidence.zoo.entries import entry
from pm_evidence.zoo.gold import LOG_2PI, Gold, leggauss

__all__ = [
    "CUT_Y",
    "SUPPORT_ZOO",
    "circular_log_marginal",
    "circular_rv",
    "cut_normal",
    "eccentric_rv",
    "hierarchical_cut_normal",
    "jeffreys",
    "kepler_velocity",
    "modified_jeffreys",
    "periodic_gp",
    "phase_ridge",
    "rv_data",
    "rv_gp",
    "rv_gp_data",
]


# --- priors with their own support ------------------------------------------------------------


def jeffreys(name: str, lower: float, upper: float):
    """``p(x) = 1 / (x log(upper / lower))`` on ``[lower, upper]`` as a ``pm.CustomDist`` with
    an ``Interval`` transform (draws: ``exp(U(log lower, log upper))``)."""
    log_norm = float(np.log(np.log(upper / lower)))  # the integral of 1 / x over the interval

    def logp(value, lo, hi):
        inside = pt.and_(pt.ge(value, lo), pt.le(value, hi))
        return pt.switch(inside, -pt.log(value) - log_norm, -np.inf)

    def random(lo, hi, rng=None, size=None):
        return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size))

    return pm.CustomDist(
        name, np.float64(lower), np.float64(upper), logp=logp, random=random,
        transform=Interval(np.float64(lower), np.float64(upper)),
    )  # fmt: skip


def modified_jeffreys(name: str, knee: float, upper: float):
    """``p(x) = 1 / ((x + knee) log(1 + upper / knee))`` on ``[0, upper]`` (uniform below the
    knee, Jeffreys above it) as a ``pm.CustomDist`` with an ``Interval`` transform (draws:
    ``knee ((1 + upper / knee)^U - 1)``)."""
    log_norm = float(np.log(np.log1p(upper / knee)))  # the integral of 1 / (x + knee)

    def logp(value, k, hi):
        inside = pt.and_(pt.ge(value, 0.0), pt.le(value, hi))
        return pt.switch(inside, -pt.log(value + k) - log_norm, -np.inf)

    def random(k, hi, rng=None, size=None):
        return k * np.expm1(rng.uniform(0.0, np.log1p(hi / k), size=size))

    return pm.CustomDist(
        name, np.float64(knee), np.float64(upper), logp=logp, random=random,
        transform=Interval(np.float64(0.0), np.float64(upper)),
    )  # fmt: skip


# --- a normal cut by its transform -----------------------------------------------------------

CUT_Y = (0.9, 1.4, 0.6, 1.1, 1.7, 0.8)


def _cut_normal_log_lik(x, y, sigma):
    return stats.norm.logpdf(np.asarray(y)[:, None], np.atleast_1d(x), sigma).sum(axis=0)


@functools.cache
def _cut_normal_gold(y, sigma, bound) -> Gold:
    def integrand(x):
        return np.exp(stats.norm.logpdf(x) + _cut_normal_log_lik(x, y, sigma)[0])

    value, error = integrate.quad(integrand, -bound, bound, epsabs=0, epsrel=1e-12, limit=200)
    return Gold(float(np.log(value)), float(error / value))


def cut_normal(y: tuple[float, ...] = CUT_Y, sigma: float = 1.0, bound: float = 1.0):
    """``y_i ~ N(x, sigma^2)``, ``x ~ N(0, 1)`` with ``transform=Interval(-bound, bound)``: the
    prior is the normal cut to the interval and not renormalized (mass 0.68 at ``bound=1``),
    and the data put the posterior against the upper bound.

    Gold (1-D adaptive quadrature): ``log int_{-b}^{b} N(x; 0, 1) prod_i N(y_i; x, sigma^2)``.
    """
    with pm.Model(name="cut_normal") as model:
        x = pm.Normal(
            "x", np.float64(0.0), np.float64(1.0),
            transform=Interval(np.float64(-bound), np.float64(bound)),
        )  # fmt: skip
        pm.Normal("y", x, np.float64(sigma), observed=np.asarray(y))
    return model, _cut_normal_gold(y, sigma, bound).log_z


def _cut_normal_log_joint(values, y, sigma, bound):
    x = float(values["x"])
    return float(stats.norm.logpdf(x) + _cut_normal_log_lik(x, y, sigma)[0])


@functools.cache
def _hierarchical_cut_gold(y, sigma, bound) -> Gold:
    # mu ~ N(0, 1), x | mu ~ N(mu, 1) cut to (-b, b): Z = int N(mu) int_{-b}^{b} N(x; mu) L(x)
    # = int_{-b}^{b} L(x) N(x; 0, 2) dx (the mu-integral in closed form); two rules agree
    def log_f(x):
        return stats.norm.logpdf(x, 0.0, np.sqrt(2.0)) + _cut_normal_log_lik(x, y, sigma)

    def rule(n_panels):
        edges = np.linspace(-bound, bound, n_panels + 1)
        z, w = leggauss(16)
        half = np.diff(edges) / 2
        x = ((edges[1:] + edges[:-1]) / 2)[:, None] + half[:, None] * z
        return float(
            special.logsumexp(log_f(x.ravel()) + (np.log(half)[:, None] + np.log(w)).ravel())
        )

    coarse, fine = rule(20), rule(40)
    return Gold(fine, abs(fine - coarse))


def hierarchical_cut_normal(y: tuple[float, ...] = CUT_Y, sigma: float = 1.0, bound: float = 1.0):
    """``mu ~ N(0, 1)``, ``x | mu ~ N(mu, 1)`` with ``transform=Interval(-bound, bound)``,
    ``y_i ~ N(x, sigma^2)``: a cut whose mass depends on a free parent.

    Gold: ``mu`` integrates out in closed form (``x ~ N(0, 2)`` before the cut); then 1-D
    composite Gauss-Legendre over ``x``, 20 and 40 panels of 16 nodes.
    """
    with pm.Model(name="hierarchical_cut_normal") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        x = pm.Normal(
            "x", mu, np.float64(1.0), transform=Interval(np.float64(-bound), np.float64(bound))
        )
        pm.Normal("y", x, np.float64(sigma), observed=np.asarray(y))
    return model, _hierarchical_cut_gold(y, sigma, bound).log_z


def _hierarchical_cut_log_joint(values, y, sigma, bound):
    mu, x = float(values["mu"]), float(values["x"])
    return float(
        stats.norm.logpdf(mu) + stats.norm.logpdf(x, mu, 1.0) + _cut_normal_log_lik(x, y, sigma)[0]
    )


# --- a circular orbit with Jeffreys priors ----------------------------------------------------

# (period range, jitter knee and upper bound, amplitude and offset prior sds): m/s and days
_RV_PERIODS = (2.0, 60.0)
_RV_JITTER = (1.0, 20.0)
_RV_AMPLITUDE_SD = 10.0
_RV_OFFSET_SD = 10.0


def rv_data(n: int, seed: int, period: float = 11.3, amplitude: float = 6.0, jitter: float = 1.5):
    """Times (days over 120 days), velocities (m/s) and their errors of one circular orbit."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 120.0, size=n))
    err = rng.uniform(1.0, 2.0, size=n)
    phase = 2 * np.pi * t / period
    v = amplitude * np.sin(phase + 0.7) + 1.0 + rng.normal(0.0, np.hypot(err, jitter))
    return t, v, err


def circular_log_marginal(log_p, jitter, t, v, err):
    """``log N(v; 0, D + X Lambda X')`` given the period ``P = exp(log_p)`` and the jitter
    (arrays of one shape), with ``X = [sin, cos, 1]`` and ``Lambda`` the prior covariance of
    the amplitudes and the offset (Woodbury and the matrix determinant lemma)."""
    log_p, jitter = np.broadcast_arrays(np.asarray(log_p, float), np.asarray(jitter, float))
    phase = 2 * np.pi * t / np.exp(log_p)[..., None]
    X = np.stack([np.sin(phase), np.cos(phase), np.ones_like(phase)], axis=-1)  # (..., n, 3)
    w = 1.0 / (err**2 + jitter[..., None] ** 2)  # (..., n)
    prior_var = np.array([_RV_AMPLITUDE_SD**2, _RV_AMPLITUDE_SD**2, _RV_OFFSET_SD**2])
    A = np.einsum("...i,...ij,...ik->...jk", w, X, X) + np.diag(1.0 / prior_var)
    b = np.einsum("...i,...ij,...i->...j", w, X, v)
    chol = np.linalg.cholesky(A)
    z = np.linalg.solve(chol, b[..., None])[..., 0]
    log_det = (
        -np.sum(np.log(w), axis=-1) + np.sum(np.log(prior_var))
        + 2 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    )  # fmt: skip
    quad = np.sum(w * v**2, axis=-1) - np.sum(z**2, axis=-1)
    return -0.5 * (len(t) * LOG_2PI + log_det + quad)


def _uniform_box_log_integral(log_f, lo, hi, panels, n_nodes=8, chunk=4096) -> float:
    """``log`` of the mean of ``exp(log_f(u, v))`` over the box ``lo <= (u, v) <= hi``,
    composite Gauss-Legendre with ``panels = (n_u, n_v)``."""
    z, w = leggauss(n_nodes)
    nodes, log_w = [], []
    for a, b, m in zip(lo, hi, panels, strict=True):
        edges = np.linspace(a, b, m + 1)
        half = np.diff(edges) / 2
        nodes.append((((edges[1:] + edges[:-1]) / 2)[:, None] + half[:, None] * z).ravel())
        log_w.append((np.log(half / (b - a))[:, None] + np.log(w)).ravel())
    v_grid, log_wv = nodes[1], log_w[1]
    pieces = []
    for i in range(0, len(nodes[0]), chunk // len(v_grid) + 1):
        u = nodes[0][i : i + chunk // len(v_grid) + 1]
        values = log_f(u[:, None], v_grid[None, :]) + log_w[0][i : i + len(u), None] + log_wv
        pieces.append(special.logsumexp(values))
    return float(special.logsumexp(pieces))


@functools.cache
def _circular_rv_gold(n, seed) -> Gold:
    t, v, err = rv_data(n, seed)
    knee, s_max = _RV_JITTER

    def log_f(log_p, u):  # u = log(1 + s / knee): the modified Jeffreys prior is uniform in u
        return circular_log_marginal(log_p, knee * np.expm1(u), t, v, err)

    lo, hi = (np.log(_RV_PERIODS[0]), 0.0), (np.log(_RV_PERIODS[1]), np.log1p(s_max / knee))
    coarse = _uniform_box_log_integral(log_f, lo, hi, (500, 3))
    fine = _uniform_box_log_integral(log_f, lo, hi, (1000, 6))
    return Gold(fine, abs(fine - coarse))


def circular_rv(n: int = 40, seed: int = 65):
    """One circular orbit: ``v_i ~ N(A sin(2 pi t_i / P) + B cos(2 pi t_i / P) + c,
    err_i^2 + s^2)`` with ``P`` Jeffreys on [2, 60] days and the jitter ``s`` modified
    Jeffreys (knee 1, upper 20 m/s), both ``pm.CustomDist`` with an ``Interval`` transform;
    ``A, B ~ N(0, 10^2)``, ``c ~ N(0, 10^2)``. The period's posterior is narrow (0.2 % of its
    range) with aliases around it.

    Gold: ``A, B, c`` integrate out in closed form given ``(P, s)``; then composite
    Gauss-Legendre over ``(log P, log(1 + s))``, where both priors are uniform: 500 x 3 and
    1,000 x 6 panels of 8 x 8 nodes, the error their difference.
    """
    t, v, err = rv_data(n, seed)
    with pm.Model(name="circular_rv") as model:
        period = jeffreys("period", *_RV_PERIODS)
        jitter = modified_jeffreys("jitter", *_RV_JITTER)
        amp = pm.Normal("amp", np.float64(0.0), np.float64(_RV_AMPLITUDE_SD), shape=2)
        offset = pm.Normal("offset", np.float64(0.0), np.float64(_RV_OFFSET_SD))
        phase = 2 * np.pi * t / period
        mean = amp[0] * pt.sin(phase) + amp[1] * pt.cos(phase) + offset
        pm.Normal("v", mean, pt.sqrt(err**2 + jitter**2), observed=v)
    return model, _circular_rv_gold(n, seed).log_z


def _circular_rv_log_joint(values, n, seed):
    t, v, err = rv_data(n, seed)
    period, jitter = float(values["period"]), float(values["jitter"])
    amp, offset = np.asarray(values["amp"], float), float(values["offset"])
    knee, s_max = _RV_JITTER
    phase = 2 * np.pi * t / period
    mean = amp[0] * np.sin(phase) + amp[1] * np.cos(phase) + offset
    return float(
        -np.log(period) - np.log(np.log(_RV_PERIODS[1] / _RV_PERIODS[0]))
        - np.log(jitter + knee) - np.log(np.log1p(s_max / knee))
        + stats.norm.logpdf(amp, 0.0, _RV_AMPLITUDE_SD).sum()
        + stats.norm.logpdf(offset, 0.0, _RV_OFFSET_SD)
        + stats.norm.logpdf(v, mean, np.hypot(err, jitter)).sum()
    )  # fmt: skip


# --- eccentric orbits ------------------------------------------------------------------------


def kepler_velocity(t, period, semi_amp, h, k, phase0):
    """Radial velocity of a Keplerian orbit with ``sqrt(e) cos w = h``, ``sqrt(e) sin w = k``.

    Kepler's equation ``E - e sin E = M``: 16 fixed-point steps ``E <- M + e sin E`` (each uses
    ``E`` once, so the graph stays a chain; unrolled Newton steps use it three times, a graph
    that PyTensor's rewrites take very long to optimize) and two Newton steps (an error of 1e-10
    at ``e = 0.7``), with no gradient through any of them but the last; at the root the last
    step's derivative is the implicit one, ``dE = (dM + sin E de) / (1 - e cos E)``. ``t`` is
    counted from the middle of the data, where the phase and the period are least correlated."""
    e = h**2 + k**2
    omega = pt.arctan2(k, h)
    mean_anomaly = 2 * np.pi * t / period + phase0
    fixed_e, fixed_m = disconnected_grad(e), disconnected_grad(mean_anomaly)

    def newton(ecc, e, m):
        return ecc - (ecc - e * pt.sin(ecc) - m) / (1 - e * pt.cos(ecc))

    root = fixed_m
    for _ in range(16):
        root = fixed_m + fixed_e * pt.sin(root)
    root = disconnected_grad(newton(root, fixed_e, fixed_m))
    ecc_anomaly = newton(root, e, mean_anomaly)
    true_anomaly = 2 * pt.arctan2(
        pt.sqrt(1 + e) * pt.sin(ecc_anomaly / 2), pt.sqrt(1 - e) * pt.cos(ecc_anomaly / 2)
    )
    return semi_amp * (pt.cos(true_anomaly + omega) + e * pt.cos(omega))


def phase_ridge(concentration: float = 50.0, center: float = 0.4, sd: float = 0.5):
    """An orbit's phase at small eccentricity, reduced to its ridge: ``phi ~ Uniform(0, 2
    pi)``, ``h, k ~ N(0, sd)`` and data that measure only the mean longitude ``lambda = phi +
    atan2(k, h)`` (a von Mises of the given ``concentration`` about ``center``, as a
    ``pm.Potential``). Integrating ``phi`` first gives ``I_0(concentration)`` at every ``(h,
    k)``: ``log Z = log I_0(concentration)``, returned as the gold, and ``h, k`` keep their
    prior. The posterior is the ridge ``phi = lambda - atan2(k, h)``
    (:mod:`~pm_evidence.model.shear_map`)."""
    with pm.Model(name="phase_ridge") as model:
        phi = pm.Uniform("phi", np.float64(0.0), np.float64(2 * np.pi))
        h = pm.Normal("h", np.float64(0.0), np.float64(sd))
        k = pm.Normal("k", np.float64(0.0), np.float64(sd))
        pm.Potential("longitude", concentration * pt.cos(phi + pt.arctan2(k, h) - center))
    return model, float(np.log(special.i0e(concentration)) + concentration)


def eccentric_rv_data(n: int, seed: int, n_planets: int):
    """Times, velocities and errors of ``n_planets`` eccentric orbits (periods 11.3 and 37 d)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 200.0, size=n))
    err = rng.uniform(1.0, 2.0, size=n)
    v = np.full(n, 1.0)
    orbits = ((11.3, 7.0, 0.3, 1.0, 2.5), (37.0, 5.0, 0.2, 2.5, 1.5))  # P, K, e, w, phase
    for period, amp, e, w, phase in orbits[:n_planets]:
        mean_anomaly = 2 * np.pi * (t - t.mean()) / period + phase  # phase at the middle
        ecc = mean_anomaly.copy()
        for _ in range(50):
            ecc -= (ecc - e * np.sin(ecc) - mean_anomaly) / (1 - e * np.cos(ecc))
        nu = 2 * np.arctan2(np.sqrt(1 + e) * np.sin(ecc / 2), np.sqrt(1 - e) * np.cos(ecc / 2))
        v += amp * (np.cos(nu + w) + e * np.cos(w))
    return t, v + rng.normal(0.0, np.hypot(err, 1.5)), err


def eccentric_rv(n: int = 60, seed: int = 66, n_planets: int = 1):
    """``n_planets`` Keplerian orbits with ``P`` Jeffreys (per planet, on [2, 20] and [20, 80]
    days), semi-amplitude modified Jeffreys (knee 1, upper 30 m/s), ``h`` a ``CustomDist``
    uniform on (-1, 1) with an ``Interval`` transform and ``k ~ TruncatedNormal(0, 0.3,
    -sqrt(1 - h^2), sqrt(1 - h^2))``, a uniform phase, a modified-Jeffreys jitter and a normal
    offset. No gold (returned as NaN): a benchmark of real radial-velocity priors."""
    t, v, err = eccentric_rv_data(n, seed, n_planets)
    with pm.Model(name=f"eccentric_rv_{n_planets}") as model:
        mean = _orbits(t - t.mean(), n_planets)
        jitter = modified_jeffreys("jitter", 1.0, 20.0)
        pm.Normal("v", mean, pt.sqrt(err**2 + jitter**2), observed=v)
    return model, float("nan")


def _uniform_logp(value, lo, hi):
    inside = pt.and_(pt.ge(value, lo), pt.le(value, hi))
    return pt.switch(inside, -pt.log(hi - lo), -np.inf)


def _uniform_random(lo, hi, rng=None, size=None):
    return rng.uniform(lo, hi, size=size)


def _orbits(t, n_planets: int):
    """:func:`eccentric_rv`'s offset and orbits (their priors as its docstring gives them) in
    the model of the context, and their velocity at the times ``t``."""
    period_ranges = ((2.0, 20.0), (20.0, 80.0))
    mean = pm.Normal("offset", np.float64(0.0), np.float64(10.0))
    for j in range(n_planets):
        period = jeffreys(f"period_{j}", *period_ranges[j])
        semi_amp = modified_jeffreys(f"semi_amp_{j}", 1.0, 30.0)
        h = pm.CustomDist(
            f"h_{j}", np.float64(-1.0), np.float64(1.0), logp=_uniform_logp,
            random=_uniform_random, transform=Interval(np.float64(-1.0), np.float64(1.0)),
        )  # fmt: skip
        bound = pt.sqrt(1 - h**2)
        k = pm.TruncatedNormal(
            f"k_{j}", np.float64(0.0), np.float64(0.3), lower=-bound, upper=bound
        )
        phase0 = pm.Uniform(f"phase_{j}", np.float64(0.0), np.float64(2 * np.pi))
        mean = mean + kepler_velocity(t, period, semi_amp, h, k, phase0)
    return mean


def _quasi_periodic(lag, amplitude, decay, period, smoothness, xp=np):
    """The quasi-periodic kernel of stellar activity:
    ``a^2 exp(-lag^2 / (2 decay^2) - 2 sin^2(pi lag / period) / smoothness^2)``."""
    return amplitude**2 * xp.exp(
        -(lag**2) / (2 * decay**2) - 2 * xp.sin(np.pi * lag / period) ** 2 / smoothness**2
    )


RV_GP_TRUTH = {"amplitude": 4.0, "decay": 40.0, "rotation": 25.0, "smoothness": 0.6}


def rv_gp_data(n: int, seed: int, n_planets: int):
    """The orbits of ``eccentric_rv_data`` plus stellar activity: a draw of a Gaussian
    process with the quasi-periodic kernel (``RV_GP_TRUTH``) at the ``n`` times."""
    t, v, err = eccentric_rv_data(n, seed, n_planets)
    lag = t[:, None] - t[None, :]
    cov = _quasi_periodic(lag, *RV_GP_TRUTH.values()) + 1e-9 * np.eye(n)
    activity = np.linalg.cholesky(cov) @ np.random.default_rng(seed + 1).normal(size=n)
    return t, v + activity, err


def rv_gp(n: int = 200, seed: int = 67, n_planets: int = 2):
    """:func:`eccentric_rv`'s orbits and priors with correlated noise: the velocities are
    ``MvNormal(orbits, K + diag(err^2 + jitter^2))`` with the quasi-periodic kernel ``K``
    (amplitude ``HalfNormal(5)``, decay ``Uniform(10, 100)`` days, rotation period
    ``Uniform(15, 35)`` days, smoothness ``Uniform(0.3, 1.5)``), on ``n`` simulated
    observations (:func:`rv_gp_data`): ``6 + 5 n_planets`` parameters, and a Cholesky
    factorization of an ``n x n`` matrix per point, the costly log density of real
    radial-velocity work. No gold (returned as NaN): a benchmark of speed and agreement."""
    t, v, err = rv_gp_data(n, seed, n_planets)
    lag = t[:, None] - t[None, :]
    with pm.Model(name=f"rv_gp_{n_planets}") as model:
        mean = _orbits(t - t.mean(), n_planets)
        jitter = modified_jeffreys("jitter", 1.0, 20.0)
        amplitude = pm.HalfNormal("gp_amplitude", np.float64(5.0))
        decay = pm.Uniform("gp_decay", np.float64(10.0), np.float64(100.0))
        rotation = pm.Uniform("gp_rotation", np.float64(15.0), np.float64(35.0))
        smoothness = pm.Uniform("gp_smoothness", np.float64(0.3), np.float64(1.5))
        cov = _quasi_periodic(lag, amplitude, decay, rotation, smoothness, xp=pt)
        cov = cov + pt.diag(err**2 + jitter**2)
        pm.MvNormal("v", mean, cov=cov, observed=v)
    return model, float("nan")


def periodic_gp(n: int = 200, seed: int = 6):
    """PyMC's own periodic Gaussian process: ``pm.gp.cov.Periodic`` (period ``Uniform(5,
    20)``, length scale ``HalfNormal(1)``) times ``ExpQuad`` (length scale 30) with amplitude
    ``HalfNormal(2)`` in ``pm.gp.Marginal`` with noise ``HalfNormal(1)``, on ``n`` times over
    300 days: 4 parameters, the kernel's sines of the lags on the full matrix (it sums over an
    input axis). No gold (returned as NaN): a model of speed, for
    :mod:`~pm_evidence.model.trig_differences`."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 300.0, size=n))
    with pm.Model(name="periodic_gp") as model:
        period = pm.Uniform("period", 5.0, 20.0)
        ls = pm.HalfNormal("ls", 1.0)
        eta = pm.HalfNormal("eta", 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        cov = eta**2 * pm.gp.cov.Periodic(1, period=period, ls=ls) * pm.gp.cov.ExpQuad(1, 30.0)
        gp = pm.gp.Marginal(cov_func=cov)
        y = np.sin(t / 2) + rng.normal(size=n)
        gp.marginal_likelihood("y", X=t[:, None], y=y, sigma=sigma)
    return model, float("nan")


SUPPORT_ZOO = (
    entry(
        "cut_normal", cut_normal, "quadrature 1-D (adaptive)", {"cut"},
        _cut_normal_gold, _cut_normal_log_joint,
    ),
    entry(
        "hierarchical_cut_normal", hierarchical_cut_normal,
        "closed form + quadrature 1-D", {"cut", "hierarchical"},
        _hierarchical_cut_gold, _hierarchical_cut_log_joint,
    ),
    entry(
        "circular_rv", circular_rv, "closed form + quadrature 2-D (log P, log(1 + s))",
        {"custom_dist", "bounded", "multimodal"}, _circular_rv_gold, _circular_rv_log_joint,
    ),
)  # fmt: skip
