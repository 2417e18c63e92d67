"""Periodic signals and mirror modes: multimodal PyMC models whose posterior
is not a mixture, with a gold ``log Z`` computed without PyMC.

* **Sums of sinusoids** with 1, 2 and 3 unknown frequencies,
  ``y_i = sum_k [a_k sin(2 pi f_k t_i) + b_k cos(2 pi f_k t_i)] + e_i``, ``e_i ~ N(0, sigma^2)``
  with ``sigma`` known, ``a_k, b_k ~ N(0, 1)``, ``f_k ~ Uniform(0.2, 12)``, at ``n`` times drawn
  uniformly on ``[0, 10]`` (fixed seed). The posterior of the frequencies has modes about 0.05
  wide in the 11.8-wide box with many local modes beside them (the aliases of irregular
  sampling, 0.1 apart and beyond) and, with unordered frequencies, ``K!`` copies of every mode
  (label switching). With one frequency (40 points, noise sd 1) the main mode (sd 0.014)
  holds about 80% of the mass and the local modes the rest, a few percent each; with two (60
  points) and three (90 points), noise sd 0.6, every signal is clear and the local modes are
  20 nats and more below the main ones.
  The ordered variants declare ``f`` with ``transform=ordered`` and add
  ``pm.Potential(log K!)``: PyMC's density of ``f`` is the uniform density *restricted* to
  ``f_1 < ... < f_K`` and not renormalized (the transform only adds its Jacobian), and the
  potential makes it the proper prior ``K! / V^K`` on that region. Since the likelihood is
  symmetric in the labels, the ordered model's ``log Z`` equals the unordered one's.
* **Mirror modes**: ``y ~ N(theta^2, 0.5^2)`` (modes at ``+-sqrt(y)``) and ``y ~ N(a b, 1)``
  (two branches of the hyperbola ``a b = y``).

==========================  ==================  ==================================================
entry                       gold ``log Z``      gold
==========================  ==================  ==================================================
periodic_1f                 -65.219689          amplitudes exact, frequency by scan + quadrature
periodic_2f(_ordered)       -67.252728          amplitudes exact, 2-D scan + quadrature
periodic_3f(_ordered)       -106.315160         amplitudes exact, 3-D scan + quadrature
mirror_square               -4.649580           1-D quadrature over theta
hyperbola_branches          -7.835362           b exact, 1-D quadrature over a
==========================  ==================  ==================================================

**Gold of the periodic signals.** The amplitudes enter linearly, so given the frequencies they
integrate out exactly: ``p(y | f) = N(y; 0, sigma^2 I + X(f) X(f)^T)`` with ``X(f)`` the
``n x 2K`` design of sines and cosines, evaluated through ``A = sigma^2 I + X^T X`` (Woodbury:
``log det = (n - 2K) log sigma^2 + log det A`` and ``y^T C^-1 y = (y^T y - b^T A^-1 b) /
sigma^2``, ``b = X^T y``). Then ``Z = V^-K int_box p(y | f) df``, by :func:`log_z_frequencies`:

1. *Scan*: ``log p(y | f)`` at the centres of the cells of a grid over the box (cell ``h_0``:
   0.01, 0.02, 0.04 for ``K`` = 1, 2, 3), only on cells with ordered indices
   ``i_1 <= ... <= i_K``: the integrand is symmetric, so the integral over a cell equals that
   over any permutation of it and each cell counts with the number of its distinct
   permutations (exact, whether or not the model orders the frequencies).
2. *Refine*: each cell within ``margin + drop(h_0)`` nats of the scan's maximum is cut into
   ``4^K`` sub-cells, scanned again; each sub-cell within ``margin + drop(h_0 / 4)`` of the
   maximum is integrated by tensor Gauss-Legendre (6 and 10 nodes per axis).
   ``drop(h) = kappa K (h / 2)^2 / 2`` bounds how far ``log p`` can fall from a peak to the
   nearest cell centre, ``kappa`` being twice the largest curvature of ``log p`` along a
   frequency axis at the highest mode (the modes are the narrowest where the signal is the
   strongest); ``margin = 20 + 5 K`` nats.
3. *Error*: the change from 6 to 10 nodes plus the bound ``V^K exp(max - margin) / Z`` on the
   mass left out (each left-out point is below ``exp(max - margin)`` by the argument of item 2).

Checked in ``tests/zoo/test_periodic.py`` by a second scheme (other cell sizes, nodes and
margin) and, for one frequency, by brute force (the trapezoid rule on 10^6 points).

References: G. L. Bretthorst (1988), Bayesian Spectrum Analysis and Parameter Estimation,
Lecture Notes in Statistics 48, Springer (the amplitudes of a sum of sinusoids integrated out).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import optimize, special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import LOG_2PI, Gold, leggauss, normal_mean_log_evidence

__all__ = [
    "PERIODIC_ENTRIES",
    "hyperbola_branches",
    "log_marginal_at",
    "log_marginal_cells",
    "log_z_frequencies",
    "mirror_log_density",
    "mirror_square",
    "multiplicity",
    "ordered_cells",
    "periodic_signal",
    "periodic_unit_cube",
    "signal",
    "signal_log_marginal",
    "tables",
]


def default_margin(n_freq: int) -> float:
    """Nats below the scan's maximum beyond which a cell is left out (its bound is in the
    error): ``20 + 5 K``, enough for a left-out share below 1e-6 when the modes are about
    0.01 wide in the 11.8-wide box."""
    return 20.0 + 5.0 * n_freq


# --- periodic signals: data and the amplitude-marginal likelihood ------------------------------


@functools.cache
def periodic_data(
    freqs: tuple[float, ...],
    amplitudes: tuple[tuple[float, float], ...],
    n: int,
    sigma: float,
    seed: int,
    t_max: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Times (sorted, uniform on ``[0, t_max]``) and observations of a sum of sinusoids with
    amplitudes ``(a_k, b_k)`` of ``sin`` and ``cos``, plus ``N(0, sigma^2)`` noise."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, t_max, n))
    y = sigma * rng.standard_normal(n)
    for f, (a, b) in zip(freqs, amplitudes, strict=True):
        y += a * np.sin(2 * np.pi * f * t) + b * np.cos(2 * np.pi * f * t)
    t.setflags(write=False)
    y.setflags(write=False)
    return t, y


def _cholesky_terms(gram: list[list[np.ndarray]], b: list[np.ndarray]):
    """``log det A`` and ``b^T A^-1 b`` for a batch of small symmetric positive definite
    matrices given entry by entry (``gram[i][j]``, ``i >= j``, arrays of one shape): Cholesky
    written out elementwise, much faster than ``np.linalg`` on millions of 6 x 6 matrices."""
    d = len(b)
    low: dict[tuple[int, int], np.ndarray] = {}
    log_det = np.zeros_like(b[0])
    for j in range(d):
        s = gram[j][j] - sum((low[j, k] ** 2 for k in range(j)), np.zeros_like(b[0]))
        low[j, j] = np.sqrt(s)
        log_det = log_det + 2 * np.log(low[j, j])
        for i in range(j + 1, d):
            s = gram[i][j] - sum((low[i, k] * low[j, k] for k in range(j)), np.zeros_like(b[0]))
            low[i, j] = s / low[j, j]
    quad = np.zeros_like(b[0])
    w: list[np.ndarray] = []
    for i in range(d):
        s = b[i] - sum((low[i, k] * w[k] for k in range(i)), np.zeros_like(b[0]))
        w.append(s / low[i, i])
        quad = quad + w[i] ** 2
    return log_det, quad


def _log_marginal_from_gram(gram, b, yy, n, sigma):
    """``log N(y; 0, sigma^2 I + X X^T)`` from ``X^T X + sigma^2 I`` (entrywise), ``X^T y``
    and ``y^T y`` (Woodbury)."""
    d = len(b)
    log_det_a, quad = _cholesky_terms(gram, b)
    s2 = sigma**2
    return -0.5 * (n * LOG_2PI + (n - d) * np.log(s2) + log_det_a + (yy - quad) / s2)


def signal_log_marginal(
    freqs: np.ndarray, t: np.ndarray, y: np.ndarray, sigma: float, chunk: int = 20_000
) -> np.ndarray:
    """``log p(y | f) = log N(y; 0, sigma^2 I + X(f) X(f)^T)`` at the rows of ``freqs``
    (``(m, K)``): the amplitudes ``a_k, b_k ~ N(0, 1)`` integrated out."""
    freqs = np.atleast_2d(np.asarray(freqs, dtype=float))
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    m, k = freqs.shape
    out = np.empty(m)
    for start in range(0, m, chunk):
        phase = 2 * np.pi * freqs[start : start + chunk, :, None] * t
        cols = [f(phase[:, j]) for j in range(k) for f in (np.sin, np.cos)]
        gram = [[None] * (2 * k) for _ in range(2 * k)]
        for i in range(2 * k):
            for j in range(i + 1):
                gram[i][j] = np.einsum("mn,mn->m", cols[i], cols[j])
            gram[i][i] = gram[i][i] + sigma**2
        b = [c @ y for c in cols]
        out[start : start + chunk] = _log_marginal_from_gram(gram, b, y @ y, t.size, sigma)
    return out


# --- the frequency integral ---------------------------------------------------------------------


def ordered_cells(g: int, k: int) -> np.ndarray:
    """Index tuples ``i_1 <= ... <= i_k`` of a ``g^k`` grid, as an ``(m, k)`` array."""
    if k == 1:
        return np.arange(g)[:, None]
    if k == 2:
        return np.stack(np.triu_indices(g), axis=1)
    blocks = []
    for i in range(g):
        j, l_ = np.triu_indices(g - i)
        blocks.append(np.stack([np.full(j.size, i), j + i, l_ + i], axis=1))
    if k == 3:
        return np.concatenate(blocks)
    raise ValueError(f"Requested {k} frequencies but the scan supports 1, 2 or 3.")


def multiplicity(idx: np.ndarray) -> np.ndarray:
    """Number of distinct permutations of each (sorted) index tuple: ``k! / prod(r_j!)``."""
    k = idx.shape[1]
    out = np.full(len(idx), float(math.factorial(k)))
    runs = np.ones(len(idx))
    for j in range(1, k):
        same = idx[:, j] == idx[:, j - 1]
        runs = np.where(same, runs + 1, 1.0)
        out = out / np.where(same, runs, 1.0)
    return out


class _Tables(NamedTuple):
    """Cross products of the sines and cosines at a set of frequencies ``phi``: ``cross[r, s]
    [i, j] = sum_n u_r(phi_i t_n) u_s(phi_j t_n)`` (``u_0 = sin``, ``u_1 = cos`` of
    ``2 pi phi t``) and ``proj[r][i] = sum_n u_r(phi_i t_n) y_n``."""

    cross: dict
    proj: tuple
    yy: float
    n: int
    sigma: float


def tables(phi, t, y, sigma) -> _Tables:
    phase = 2 * np.pi * np.asarray(phi, dtype=float)[:, None] * t
    feats = (np.sin(phase), np.cos(phase))
    cross = {(r, s): feats[r] @ feats[s].T for r in range(2) for s in range(2)}
    return _Tables(cross, tuple(f @ y for f in feats), float(y @ y), t.size, sigma)


def log_marginal_at(tables: _Tables, idx: np.ndarray, chunk: int = 1 << 15) -> np.ndarray:
    """``log p(y | f)`` at ``f = phi[idx]`` (rows of an ``(m, K)`` index array) by look-ups in
    the tables: no sine is evaluated per point."""
    m, k = idx.shape
    d = 2 * k
    out = np.empty(m)
    for start in range(0, m, chunk):
        rows = idx[start : start + chunk]
        gram = [[None] * d for _ in range(d)]
        for p, q in itertools.product(range(k), repeat=2):
            for r, s in itertools.product(range(2), repeat=2):
                i, j = 2 * p + r, 2 * q + s
                if i >= j:
                    gram[i][j] = tables.cross[r, s][rows[:, p], rows[:, q]]
        for i in range(d):
            gram[i][i] = gram[i][i] + tables.sigma**2
        b = [tables.proj[r][rows[:, p]] for p in range(k) for r in range(2)]
        out[start : start + chunk] = _log_marginal_from_gram(
            gram, b, tables.yy, tables.n, tables.sigma
        )
    return out


def _log_marginal_on(phi, idx, t, y, sigma) -> np.ndarray:
    """``log p(y | f)`` at ``f = phi[idx]``: by look-up tables when they are small (up to 2,500
    frequencies: 200 MB), else point by point."""
    if len(phi) <= 2500 and idx.shape[1] > 1:
        return log_marginal_at(tables(phi, t, y, sigma), idx)
    return signal_log_marginal(np.asarray(phi)[idx], t, y, sigma)


def log_marginal_cells(feats, rows, combos, y, sigma) -> np.ndarray:
    """``log p(y | f)`` at every node tuple ``combos`` (``(c, K)``) of each sub-cell ``rows``
    (``(m, K)`` indices into ``feats``, the sines and cosines at each cell's nodes): an
    ``(m, c)`` array."""
    k = rows.shape[1]
    d = 2 * k
    f = [[feats[r][rows[:, p]] for r in range(2)] for p in range(k)]  # (m, nodes, times)
    gram = [[None] * d for _ in range(d)]
    for p in range(k):
        for q in range(p + 1):
            for r, s in itertools.product(range(2), repeat=2):
                i, j = 2 * p + r, 2 * q + s
                if i < j:
                    continue
                if p == q:
                    block = np.einsum("mit,mit->mi", f[p][r], f[q][s])
                    gram[i][j] = block[:, combos[:, p]]
                else:
                    block = np.einsum("mit,mjt->mij", f[p][r], f[q][s])
                    gram[i][j] = block[:, combos[:, p], combos[:, q]]
    for i in range(d):
        gram[i][i] = gram[i][i] + sigma**2
    b = [(f[p][r] @ y)[:, combos[:, p]] for p in range(k) for r in range(2)]
    return _log_marginal_from_gram(gram, b, float(y @ y), y.size, sigma)


def _curvature(log_f: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, lower, upper):
    """The highest mode near ``x0`` (Nelder-Mead) and the largest curvature ``-d^2 log_f /
    dx_j^2`` there (central differences)."""
    res = optimize.minimize(
        lambda x: -log_f(x[None])[0],
        x0,
        method="Nelder-Mead",
        options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 4000},
    )
    mode = np.clip(res.x, lower, upper)
    h = 1e-4
    eye = np.eye(mode.size) * h
    points = np.concatenate([mode[None], mode + eye, mode - eye])
    v = log_f(points)
    k = mode.size
    curv = -(v[1 : 1 + k] + v[1 + k :] - 2 * v[0]) / h**2
    return mode, float(max(curv.max(), 1.0))


def log_z_frequencies(
    t: np.ndarray,
    y: np.ndarray,
    sigma: float,
    n_freq: int,
    lower: float,
    upper: float,
    *,
    cell: float,
    split: int = 4,
    nodes: tuple[int, int] = (6, 10),
    margin: float | None = None,
) -> Gold:
    """``log Z = log V^-K int_[lower, upper]^K p(y | f) df`` for the sum of ``K = n_freq``
    sinusoids with ``N(0, 1)`` amplitudes integrated out (scan, refine, Gauss-Legendre: see
    the module docstring); ``cell`` is the scan's cell width, ``split`` the sub-cells per
    axis of a kept cell, ``nodes`` the two Gauss-Legendre orders per axis, ``margin`` the
    nats below the maximum beyond which mass is bounded rather than integrated.

    Returns
    -------
    Gold
        The finer rule's value; error = change from the coarser rule + the bound on the mass
        left out (relative, as nats).
    """
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    k = n_freq
    margin = default_margin(k) if margin is None else margin
    n_cells = int(np.ceil((upper - lower) / cell - 1e-9))
    h0 = (upper - lower) / n_cells
    cells = ordered_cells(n_cells, k)
    values = _log_marginal_on(lower + h0 * (np.arange(n_cells) + 0.5), cells, t, y, sigma)

    def log_f(f):
        return signal_log_marginal(f, t, y, sigma)

    best = cells[np.argmax(values)]
    mode, kappa = _curvature(log_f, lower + h0 * (best + 0.5), lower, upper)
    kappa *= 2.0  # safety: a lobe elsewhere may be somewhat narrower

    def drop(h):
        return 0.5 * kappa * k * (h / 2) ** 2

    top = max(values.max(), float(log_f(mode[None])[0]))
    keep = values >= top - margin - drop(h0)
    cells, mult = cells[keep], multiplicity(cells[keep])

    # the kept cells' sub-cells, as indices into the fine grid of width h1
    h1 = h0 / split
    n_fine = n_cells * split
    offsets = np.stack(np.meshgrid(*([np.arange(split)] * k), indexing="ij"), -1).reshape(-1, k)
    sub = (split * cells[:, None, :] + offsets[None]).reshape(-1, k)
    sub_mult = np.repeat(mult, len(offsets))
    sub_values = _log_marginal_on(lower + h1 * (np.arange(n_fine) + 0.5), sub, t, y, sigma)
    top = max(top, sub_values.max())
    keep = sub_values >= top - margin - drop(h1)
    sub, sub_mult = sub[keep], sub_mult[keep]

    # Gauss-Legendre over the kept sub-cells: the sines and cosines at the nodes of each
    # sub-cell in use, per axis, and the Gram matrices of all node tuples of a sub-cell from
    # products of those (no sine evaluated per point)
    used, position = np.unique(sub, return_inverse=True)
    position = position.reshape(sub.shape)
    results = []
    for n_nodes in nodes:
        z, w = leggauss(n_nodes)
        nodes_f = lower + h1 * (used[:, None] + 0.5 * (1 + z[None]))
        phase = 2 * np.pi * nodes_f[..., None] * t
        feats = (np.sin(phase), np.cos(phase))  # (cells in use, nodes, times)
        combos = np.stack(np.meshgrid(*([np.arange(n_nodes)] * k), indexing="ij"), -1)
        combos = combos.reshape(-1, k)
        log_w = np.sum(np.log(w)[combos], axis=-1) + k * np.log(h1 / 2)
        per_cell = np.empty(len(sub))
        step = max(1, (1 << 17) // len(combos))
        for start in range(0, len(sub), step):
            rows = position[start : start + step]
            per_cell[start : start + step] = special.logsumexp(
                log_marginal_cells(feats, rows, combos, y, sigma) + log_w, axis=1
            )
        results.append(float(special.logsumexp(per_cell + np.log(sub_mult))))
    log_volume = k * np.log(upper - lower)
    log_int = results[1]
    log_rest = log_volume + top - margin - log_int  # left-out mass / integral
    error = abs(results[1] - results[0]) + float(np.exp(log_rest))
    return Gold(float(log_int - log_volume), float(error))


# Scan cell per number of frequencies: about a fifth of the 0.1-wide lobes of a 10-long record
# for K = 1, 2; coarser for K = 3, where the refinement and the drop bound carry the detail.
_CELLS = {1: 0.01, 2: 0.02, 3: 0.04}


@functools.cache
def _periodic_gold(freqs, amplitudes, n, sigma, seed, t_max, lower, upper) -> Gold:
    t, y = periodic_data(freqs, amplitudes, n, sigma, seed, t_max)
    k = len(freqs)
    return log_z_frequencies(t, y, sigma, k, lower, upper, cell=_CELLS[k])


def periodic_gold(freqs, amplitudes, n, sigma, ordered, seed, t_max, lower, upper) -> Gold:
    """Gold of :func:`periodic_signal`: the same for ordered and unordered frequencies (the
    ordered prior is ``K! / V^K`` on ``f_1 < ... < f_K``, the likelihood symmetric)."""
    del ordered
    return _periodic_gold(freqs, amplitudes, n, sigma, seed, t_max, lower, upper)


def signal(values_f, values_a, values_b, t):
    f = np.atleast_1d(np.asarray(values_f, dtype=float))
    a = np.atleast_1d(np.asarray(values_a, dtype=float))
    b = np.atleast_1d(np.asarray(values_b, dtype=float))
    phase = 2 * np.pi * f[..., :, None] * t
    return np.sum(a[..., :, None] * np.sin(phase) + b[..., :, None] * np.cos(phase), axis=-2)


def periodic_log_joint(values, freqs, amplitudes, n, sigma, ordered, seed, t_max, lower, upper):
    """``log p(y, f, a, b)`` of :func:`periodic_signal` (with ``log K!`` when ordered)."""
    t, y = periodic_data(freqs, amplitudes, n, sigma, seed, t_max)
    f = np.atleast_1d(np.asarray(values["f"], dtype=float))
    k = f.size
    if np.any((f < lower) | (f > upper)) or (ordered and np.any(np.diff(f) <= 0)):
        return -np.inf
    a, b = np.atleast_1d(values["a"]), np.atleast_1d(values["b"])
    log_prior = -k * np.log(upper - lower) + stats.norm.logpdf(np.r_[a, b]).sum()
    if ordered:
        log_prior += special.gammaln(k + 1)
    mean = signal(f, a, b, t)
    return float(log_prior + stats.norm.logpdf(y, mean, sigma).sum())


def periodic_signal(
    freqs: tuple[float, ...] = (2.35,),
    amplitudes: tuple[tuple[float, float], ...] = ((0.8, -0.5),),
    n: int = 40,
    sigma: float = 1.0,
    ordered: bool = False,
    seed: int = 3,
    t_max: float = 10.0,
    lower: float = 0.2,
    upper: float = 12.0,
):
    """A sum of ``K = len(freqs)`` sinusoids of unknown frequencies:
    ``f ~ Uniform(0.2, 12)^K``, ``a, b ~ N(0, 1)^K``, ``y_i ~ N(sum_k a_k sin(2 pi f_k t_i) +
    b_k cos(2 pi f_k t_i), sigma^2)``; data simulated at ``freqs`` and ``amplitudes`` (seed
    ``seed``, ``n`` times uniform on ``[0, t_max]``).

    With ``ordered=True``, ``f`` is declared with ``transform=ordered`` (chained by PyMC after
    the interval transform) and ``pm.Potential("order_prior", log K!)`` makes the prior the
    proper ``K! / V^K`` on ``f_1 < ... < f_K``; ``log Z`` is then that of the unordered model.

    Gold (amplitudes exact, frequencies by scan + refine + Gauss-Legendre; see the module
    docstring).
    """
    t, y = periodic_data(freqs, amplitudes, n, sigma, seed, t_max)
    k = len(freqs)
    tag = f"periodic_{k}f" + ("_ordered" if ordered else "")
    with pm.Model(name=tag) as model:
        kwargs = {}
        if ordered:
            kwargs = {
                "transform": pm.distributions.transforms.ordered,
                "initval": np.linspace(lower, upper, k + 2)[1:-1],
            }
        f = pm.Uniform("f", np.float64(lower), np.float64(upper), shape=k, **kwargs)
        a = pm.Normal("a", np.float64(0.0), np.float64(1.0), shape=k)
        b = pm.Normal("b", np.float64(0.0), np.float64(1.0), shape=k)
        if ordered:
            pm.Potential("order_prior", pt.constant(np.float64(special.gammaln(k + 1))))
        phase = np.float64(2 * np.pi) * f[:, None] * t[None, :]
        mean = pt.sum(a[:, None] * pt.sin(phase) + b[:, None] * pt.cos(phase), axis=0)
        pm.Normal("y", mean, np.float64(sigma), observed=np.asarray(y))
    return model, periodic_gold(
        freqs, amplitudes, n, sigma, ordered, seed, t_max, lower, upper
    ).log_z


# --- mirror modes --------------------------------------------------------------------------------

_MIRROR_Y = (2.1, 1.6, 2.6, 1.9)
_HYPERBOLA_Y = (2.7, 3.4, 2.2, 3.1, 2.9)


def mirror_log_density(theta, y, sigma, prior_sd):
    theta = np.asarray(theta, dtype=float)[..., None]
    log_lik = np.sum(stats.norm.logpdf(np.asarray(y), theta**2, sigma), axis=-1)
    return log_lik + stats.norm.logpdf(theta[..., 0], 0.0, prior_sd)


def _composite(log_f, lo, hi, n_panels, n_nodes) -> float:
    edges = np.linspace(lo, hi, n_panels + 1)
    z, w = leggauss(n_nodes)
    half = np.diff(edges) / 2
    x = ((edges[1:] + edges[:-1]) / 2)[:, None] + half[:, None] * z
    log_w = np.log(half)[:, None] + np.log(w)
    return float(special.logsumexp(log_f(x.ravel()) + log_w.ravel()))


@functools.cache
def mirror_square_gold(y, sigma, prior_sd) -> Gold:
    """1-D composite Gauss-Legendre over ``theta in [-12 s, 12 s]`` (``s`` the prior sd: the
    prior beyond is below ``exp(-72)``), 200 panels; error = change from 16 to 32 nodes plus
    the prior tail mass times the likelihood's maximum."""
    values = [
        _composite(
            lambda x: mirror_log_density(x, y, sigma, prior_sd),
            -12 * prior_sd,
            12 * prior_sd,
            200,
            n,
        )
        for n in (16, 32)
    ]
    log_lmax = -len(y) * (np.log(sigma) + 0.5 * LOG_2PI)
    tail = np.exp(np.log(2 * stats.norm.sf(12)) + log_lmax - values[1])
    return Gold(values[1], abs(values[1] - values[0]) + float(tail))


def mirror_square_log_joint(values, y, sigma, prior_sd):
    return float(mirror_log_density(values["theta"], y, sigma, prior_sd))


def mirror_square(y: tuple[float, ...] = _MIRROR_Y, sigma: float = 0.5, prior_sd: float = 2.0):
    """Two mirror modes: ``theta ~ N(0, 2^2)``, ``y_i ~ N(theta^2, 0.5^2)``, four observations
    near 2, so the posterior has two equal modes at ``theta ~ +-1.44`` (sd about 0.09),
    separated by 30 sds.

    Gold (quadrature 1-D over ``theta``): composite Gauss-Legendre; checked in the tests by
    QUADPACK on ``theta > 0`` doubled (the density is even).
    """
    with pm.Model(name="mirror_square") as model:
        theta = pm.Normal("theta", np.float64(0.0), np.float64(prior_sd))
        pm.Normal("y", theta**2, np.float64(sigma), observed=np.asarray(y, dtype=np.float64))
    return model, mirror_square_gold(y, sigma, prior_sd).log_z


def _hyperbola_log_f(a, y, sigma, prior_sd):
    """``log [N(a | 0, s^2) int N(y | a b, sigma^2) N(b | 0, s^2) db]``: given ``a``, ``c = a b
    ~ N(0, (s a)^2)`` is a normal mean."""
    a = np.asarray(a, dtype=float)
    return stats.norm.logpdf(a, 0.0, prior_sd) + normal_mean_log_evidence(
        np.asarray(y), sigma, 0.0, prior_sd * np.abs(a)
    )


@functools.cache
def hyperbola_branches_gold(y, sigma, prior_sd) -> Gold:
    """``b`` integrated in closed form for each ``a``, then 1-D composite Gauss-Legendre over
    ``a in [-12 s, 12 s]`` (200 panels); error = change from 16 to 32 nodes plus the tail."""
    values = [
        _composite(
            lambda a: _hyperbola_log_f(a, y, sigma, prior_sd), -12 * prior_sd, 12 * prior_sd, 200, n
        )
        for n in (16, 32)
    ]
    log_lmax = -len(y) * (np.log(sigma) + 0.5 * LOG_2PI)
    tail = np.exp(np.log(2 * stats.norm.sf(12)) + log_lmax - values[1])
    return Gold(values[1], abs(values[1] - values[0]) + float(tail))


def hyperbola_branches_log_joint(values, y, sigma, prior_sd):
    a, b = float(values["a"]), float(values["b"])
    return float(
        stats.norm.logpdf([a, b], 0.0, prior_sd).sum()
        + stats.norm.logpdf(np.asarray(y), a * b, sigma).sum()
    )


def hyperbola_branches(
    y: tuple[float, ...] = _HYPERBOLA_Y, sigma: float = 1.0, prior_sd: float = 2.0
):
    """Two hyperbola branches: ``a, b ~ N(0, 2^2)``, ``y_i ~ N(a b, 1)``, five observations
    near 2.9: the posterior lies along ``a b ~ 2.9`` in the quadrants ``a, b > 0`` and
    ``a, b < 0`` (equal mass, a curved ridge each).

    Gold (closed form in ``b``, quadrature 1-D over ``a``); checked in the tests by 2-D
    Gauss-Legendre over ``(a, b)``.
    """
    with pm.Model(name="hyperbola_branches") as model:
        a = pm.Normal("a", np.float64(0.0), np.float64(prior_sd))
        b = pm.Normal("b", np.float64(0.0), np.float64(prior_sd))
        pm.Normal("y", a * b, np.float64(sigma), observed=np.asarray(y, dtype=np.float64))
    return model, hyperbola_branches_gold(y, sigma, prior_sd).log_z


# --- the entries and their unit-cube forms ------------------------------------------------------

_TWO = {
    "freqs": (1.4, 3.9),
    "amplitudes": ((1.0, -0.5), (0.3, 0.8)),
    "n": 60,
    "sigma": 0.6,
    "seed": 5,
}
_THREE = {
    "freqs": (0.9, 2.6, 5.3),
    "amplitudes": ((1.0, -0.5), (0.3, 0.8), (-0.7, 0.6)),
    "n": 90,
    "sigma": 0.6,
    "seed": 7,
}
_PERIODIC = {"multimodal", "periodic", "bounded"}

PERIODIC_ENTRIES: tuple[ZooModel, ...] = (
    entry(
        "periodic_1f",
        periodic_signal,
        "closed form (amplitudes) + scan/quadrature 1-D",
        _PERIODIC,
        periodic_gold,
        periodic_log_joint,
    ),
    entry(
        "periodic_2f",
        periodic_signal,
        "closed form (amplitudes) + scan/quadrature 2-D",
        _PERIODIC,
        periodic_gold,
        periodic_log_joint,
        **_TWO,
    ),
    entry(
        "periodic_2f_ordered",
        periodic_signal,
        "closed form (amplitudes) + scan/quadrature 2-D",
        _PERIODIC | {"ordered"},
        periodic_gold,
        periodic_log_joint,
        ordered=True,
        **_TWO,
    ),
    entry(
        "periodic_3f",
        periodic_signal,
        "closed form (amplitudes) + scan/quadrature 3-D",
        _PERIODIC,
        periodic_gold,
        periodic_log_joint,
        **_THREE,
    ),
    entry(
        "periodic_3f_ordered",
        periodic_signal,
        "closed form (amplitudes) + scan/quadrature 3-D",
        _PERIODIC | {"ordered"},
        periodic_gold,
        periodic_log_joint,
        ordered=True,
        **_THREE,
    ),
    entry(
        "mirror_square",
        mirror_square,
        "quadrature 1-D",
        {"multimodal", "mirror"},
        mirror_square_gold,
        mirror_square_log_joint,
    ),
    entry(
        "hyperbola_branches",
        hyperbola_branches,
        "closed form (b) + quadrature 1-D",
        {"multimodal", "mirror", "curved"},
        hyperbola_branches_gold,
        hyperbola_branches_log_joint,
    ),
)
"""Periodic signals with 1, 2 (unordered, ordered) and 3 (unordered, ordered) frequencies and
the two mirror-mode models; registered in ``MULTIMODAL_ZOO``."""


def _normal_log_lik(y, mean, sigma):
    """``sum_i log N(y_i | mean_i, sigma^2)`` over the last axis, without SciPy's per-call
    overhead (nested samplers call it once per point)."""
    r = (y - mean) / sigma
    return -0.5 * np.sum(r * r, axis=-1) - y.shape[-1] * (np.log(sigma) + 0.5 * LOG_2PI)


def periodic_unit_cube(
    builder, kwargs: dict
) -> tuple[int, Callable, Callable, tuple[str, ...]] | None:
    """``(dim, transform, log_likelihood, names)`` of an entry of :data:`PERIODIC_ENTRIES` as
    nested samplers take it (``Z = int_[0,1]^dim L(T(u)) du``), or None for another builder.

    Ordered frequencies are the sorted uniforms: the order statistics of ``K`` uniforms on
    ``[lower, upper]`` have the density ``K! / V^K`` on ``f_1 < ... < f_K``, the ordered
    model's prior.
    """
    if builder is periodic_signal:
        t, y = periodic_data(
            kwargs["freqs"],
            kwargs["amplitudes"],
            kwargs["n"],
            kwargs["sigma"],
            kwargs["seed"],
            kwargs["t_max"],
        )
        k, lower, upper, sigma = (
            len(kwargs["freqs"]),
            kwargs["lower"],
            kwargs["upper"],
            kwargs["sigma"],
        )
        ordered = kwargs["ordered"]

        def transform(u):
            u = np.atleast_2d(np.asarray(u, dtype=float))
            f = lower + (upper - lower) * u[:, :k]
            if ordered:
                f = np.sort(f, axis=1)
            return np.concatenate([f, special.ndtri(u[:, k:])], axis=1)

        def log_likelihood(theta):
            theta = np.atleast_2d(theta)
            mean = signal(theta[:, :k], theta[:, k : 2 * k], theta[:, 2 * k :], t)
            return _normal_log_lik(y, mean, sigma)

        return 3 * k, transform, log_likelihood, ("f",) * k + ("a",) * k + ("b",) * k

    if builder in (mirror_square, hyperbola_branches):
        y, sigma, prior_sd = np.asarray(kwargs["y"]), kwargs["sigma"], kwargs["prior_sd"]
        dim = 1 if builder is mirror_square else 2

        def transform(u):
            return prior_sd * special.ndtri(np.atleast_2d(np.asarray(u, dtype=float)))

        def log_likelihood(theta):
            theta = np.atleast_2d(theta)
            mean = theta[:, 0] ** 2 if dim == 1 else theta[:, 0] * theta[:, 1]
            return _normal_log_lik(y, mean[:, None], sigma)

        return dim, transform, log_likelihood, ("theta",) if dim == 1 else ("a", "b")
    return None
