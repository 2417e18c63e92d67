r"""Funnels found in posterior draws, and the coordinates that take them away: a partial
non-centering learned from the draws.

In a funnel the scale of some coordinates follows another one: in Neal's funnel ``x_i | v ~
N(0, e^v)``, in a centered hierarchy ``theta_j | tau ~ N(mu, tau^2)``. HMC's step size is one
per chain, tuned where most of the mass is (the funnel's mouth), so its chains do not enter the
neck, where the scale of ``x`` is a hundredth of the mouth's; the draws miss that mass and
their diagnostics do not see it (measured: docs/benchmarks.rst, "Centered hierarchies").
Where the model is written with a ``Normal(mu, tau)`` latent, the model itself is rewritten
(:mod:`pm_evidence.model.noncentering`); a funnel written any other way (a ``pm.Potential``,
another family) is found here, in the draws.

**The test.** Each chain's moves are read (its repeated draws left out). For each coordinate
``u`` whose value correlates with another coordinate's log distance from its median (a screen
that costs one matrix product; the test below costs ``dim^2`` medians), the draws are cut into
``FUNNEL_BINS`` bins of equal count by ``x_u``; in each bin, each other coordinate's spread is
its median absolute deviation about each chain's own median in the bin (so that correlation
alone, which moves the location with ``x_u``, is not a funnel, nor are chains held in modes of
different widths: the spread must change along each chain's path). Where ``log MAD_j`` is close to a line in
the bins' mean ``x_u`` (the share of its variance over the bins the line explains at least
``FUNNEL_MIN_R2``) and the line's scale changes by more than ``FUNNEL_MIN_RATIO`` over the
bins, coordinate ``j`` is *driven* by ``u`` with slope ``a_j``; each driven coordinate takes
the driver it fits best, a driver is kept where the median share over the coordinates it drives
is at least ``FUNNEL_DRIVER_R2`` (a funnel's spreads follow a line; modes along ``x_u`` give
steps), and a coordinate that drives others is not rescaled itself.

**A neck, or modes joined through one.** In a funnel the chains agree on where the driven
coordinates are, whatever depth of the funnel each has reached: their bulk R-hat (of the draws'
ranks, Vehtari et al. 2021) is near 1 (1.00-1.05 in the first draws of the funnel in a box,
ten seeds; the tail R-hat, of the spreads, is not asked: chains at different depths differ in
spread, and it was up to 1.22 there). Chains held apart in different modes of the driven coordinates, joined
only where the driver is small (an orbit's period, free at low amplitude, where the chains
hop between its aliases or hold one; 2.3-2.5 on the eccentric orbits), show the same spread
following the driver, but a rescaling does not join modes: a driver whose driven coordinates'
median bulk R-hat is above ``FUNNEL_MAX_RHAT`` is no funnel's. Their draws are flagged by their own R-hat as before; the run in a map's
coordinates cost there two to three times the first draws and was not the estimate
(docs/benchmarks.rst, "A neck, or modes").

**The map** (Papaspiliopoulos, Roberts and Skold 2007, partial non-centering; its weights
learned from the draws as Gorinova, Moore and Hoffman 2020 learn theirs by variational
inference): for each driven ``j``

.. math::
    x_j = m_j + e^{a_j (y_{u_j} - c_j)}\, y_j, \qquad x_k = y_k \text{ otherwise},

``m_j`` the median of ``x_j``, ``c_j`` the mean of the driver, so that HMC moves ``y``, where
the driven coordinates' scale no longer follows their driver. The map is triangular (drivers
are not rescaled), so ``log |det dx/dy| = sum_j a_j (y_{u_j} - c_j)``, and the density HMC
samples is ``f_Y(y) = f(x(y)) |det dx/dy|``
(:class:`~pm_evidence.model.mapped_density.MappedDensity`): its draws mapped back are
draws of ``f``, the same posterior; ``Z`` is unchanged. On Neal's funnel in a box the draws'
mass below ``v = -5`` goes from none to the gold's 5% (docs/benchmarks.rst).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pm_evidence.core.utils import rhat_by_coordinate

__all__ = [
    "FUNNEL_BINS",
    "FUNNEL_DRIVER_R2",
    "FUNNEL_MAX_DRAWS",
    "FUNNEL_MAX_RHAT",
    "FUNNEL_MIN_R2",
    "FUNNEL_MIN_RATIO",
    "FUNNEL_OTHERS_MAX_RHAT",
    "FUNNEL_SCREEN_CORR",
    "FunnelMap",
    "fit_funnel_map",
]

FUNNEL_BINS = 10  # bins of equal count along each candidate driver
FUNNEL_MIN_R2 = 0.5  # the share of the bins' log-spread variance the line must explain
# ... and its median over the coordinates one driver drives: the funnel in a box 0.98, its
# first draws' worst coordinate 0.76; modes along a coordinate (periodic signals: 0.5-0.6) give
# steps, not a line.
FUNNEL_DRIVER_R2 = 0.8
# The line's scale must change by more than this over the bins: a step size ten times too
# long at one end. Measured on the first draws of every continuous zoo model of at most 250
# parameters, from PyMC's jittered starts: the funnel in a box 25-200; the circular orbit's
# period against its jitter 480 (its chains move between period modes as the jitter grows;
# ``method="bridge"`` is flagged there with the map and without, from ``auto``'s starts it is
# not found); the ordered periodic signal 5.5, the ordered means 3.7, every other model below
# 2.6.
FUNNEL_MIN_RATIO = 10.0
# A driver whose driven coordinates' median bulk R-hat is above this holds chains apart in
# modes, not in a neck's mouth: the funnel in a box's first draws 1.00-1.05 over ten seeds; the
# eccentric orbits' periods 2.3-2.5, the two-planet orbit with correlated noise's GP rotation
# period 1.31 (its run in the map's coordinates cost 40% of the first draws and was fitted
# again, to another driver, by the second: docs/benchmarks.rst, "A neck, or modes").
FUNNEL_MAX_RHAT = 1.2
# ... and draws whose chains sit this far apart in a coordinate the map neither rescales nor
# reads hold modes that a rescaling cannot join (the two-planet orbits' periods: 1.9-2.8); a
# driver is left out, its chains at different depths of the funnel (the funnel in a box's
# 1.11-1.32 over ten seeds).
FUNNEL_OTHERS_MAX_RHAT = 1.5
# The test reads at most this many draws (evenly thinned).
FUNNEL_MAX_DRAWS = 4096
# A driver is tested only where its value correlates with another coordinate's log distance
# from its median by at least this much, draw by draw. The weakest funnel the test accepts
# (a scale ratio of FUNNEL_MIN_RATIO over bins spanning about 3.2 SDs of the driver, each
# draw's log distance scattered by log|N(0, 1)|'s SD of 1.1) correlates by about 0.5.
FUNNEL_SCREEN_CORR = 0.25
_MIN_DRAWS_PER_BIN = 40
_MIN_CHAIN_DRAWS = 5  # a chain's draws in a bin that its own median is taken over


@dataclass(frozen=True)
class FunnelMap:
    """The map of the module text: coordinates ``driven`` rescaled by ``exp(slope (y[driver]
    - center))`` about ``location``; all arrays of one entry per driven coordinate."""

    driven: np.ndarray
    driver: np.ndarray
    slope: np.ndarray
    center: np.ndarray
    location: np.ndarray

    def _scale(self, y: np.ndarray) -> np.ndarray:
        return np.exp(self.slope * (y[..., self.driver] - self.center))

    def to_model(self, y: np.ndarray) -> np.ndarray:
        """``x(y)``: points ``(..., dim)`` of the map's coordinates in the model's."""
        x = np.array(y, dtype=float)
        x[..., self.driven] = self.location + self._scale(y) * y[..., self.driven]
        return x

    def to_map(self, x: np.ndarray) -> np.ndarray:
        """``y(x)``, the inverse of :meth:`to_model` (a driver is the same in both)."""
        y = np.array(x, dtype=float)
        y[..., self.driven] = (x[..., self.driven] - self.location) / self._scale(x)
        return y

    def log_jacobian(self, y: np.ndarray) -> np.ndarray:
        """``log |det dx/dy| = sum_j a_j (y_{u_j} - c_j)`` at points ``(n, dim)``."""
        return np.sum(self.slope * (y[..., self.driver] - self.center), axis=-1)

    def pull_back(self, y: np.ndarray, gradient: np.ndarray, jacobian: bool) -> np.ndarray:
        """``grad_y`` of a term whose gradient in ``x`` at ``x(y)`` is ``gradient`` (the chain
        rule through the map; ``jacobian``: plus the log Jacobian's gradient)."""
        scale = self._scale(y)
        out = np.array(gradient, dtype=float)
        out[:, self.driven] = gradient[:, self.driven] * scale
        through = gradient[:, self.driven] * self.slope * scale * y[:, self.driven]
        if jacobian:
            through = through + self.slope
        np.add.at(out.T, self.driver, through.T)  # a driver gathers its driven coordinates'
        return out

    def sampler_dim(self, model_dim: int) -> int:
        """The dimension of ``y``: the model's."""
        return model_dim

    def mapped_terms(self, y: np.ndarray, terms: tuple) -> tuple:
        """The model's terms ``(log prior, log likelihood, their gradients)`` at ``x(y)`` as
        terms of ``f_Y`` at ``y``: the log Jacobian goes with the prior."""
        log_prior, log_lik, g_prior, g_lik = terms
        return (
            log_prior + self.log_jacobian(y),
            log_lik,
            self.pull_back(y, g_prior, jacobian=True),
            self.pull_back(y, g_lik, jacobian=False),
        )

    def describe(self, names: list[str]) -> str:
        """The map in words, by the model's coordinate names (``beta[3]``) grouped by
        variable: ``"x_interval__ (9 coordinates) by v_interval__"``."""
        groups: dict[tuple[str, str], int] = {}
        for j, u in zip(self.driven.tolist(), self.driver.tolist(), strict=True):
            key = (names[j].split("[")[0], names[u])
            groups[key] = groups.get(key, 0) + 1
        return "; ".join(
            f"{variable} ({count} coordinate{'s' * (count > 1)}) by {driver}"
            for (variable, driver), count in groups.items()
        )


def _bin_log_spreads(x: np.ndarray, chain: np.ndarray, u: int):
    """The bins' mean ``x_u`` ``(bins,)`` and each coordinate's log spread in them ``(bins,
    dim)``: the median absolute deviation about each chain's own median in the bin (chains
    with at least ``_MIN_CHAIN_DRAWS`` draws there), so that chains held in modes of different
    widths along ``x_u`` show no funnel, and chains that move along it do. ``None`` where a bin
    has too few such draws."""
    edges = np.quantile(x[:, u], np.linspace(0.0, 1.0, FUNNEL_BINS + 1))
    which = np.clip(np.searchsorted(edges, x[:, u], side="right") - 1, 0, FUNNEL_BINS - 1)
    centers, spreads = [], []
    for b in range(FUNNEL_BINS):
        deviations = []
        for c in np.unique(chain[which == b]):
            inside = x[(which == b) & (chain == c)]
            if inside.shape[0] >= _MIN_CHAIN_DRAWS:
                deviations.append(np.abs(inside - np.median(inside, axis=0)))
        if sum(d.shape[0] for d in deviations) < _MIN_DRAWS_PER_BIN:
            return None
        centers.append(x[which == b, u].mean())
        spreads.append(np.median(np.concatenate(deviations), axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(centers), np.log(np.asarray(spreads))


def _screened_drivers(x: np.ndarray) -> np.ndarray:
    """The coordinates worth the binned test as drivers: those whose value correlates with
    some other coordinate's log distance from its median by at least ``FUNNEL_SCREEN_CORR``
    (one product of ``(n, dim)`` matrices, where the binned test costs ``dim^2`` medians)."""
    distance = np.abs(x - np.median(x, axis=0))
    floor = np.maximum(np.quantile(distance, 0.01, axis=0), np.finfo(float).tiny)
    log_distance = np.log(np.maximum(distance, floor))

    def standardized(a):
        spread = a.std(axis=0)
        return (a - a.mean(axis=0)) / np.where(spread > 0, spread, np.inf)

    corr = standardized(x).T @ standardized(log_distance) / x.shape[0]  # (driver, driven)
    np.fill_diagonal(corr, 0.0)
    return np.flatnonzero(np.max(np.abs(corr), axis=1) >= FUNNEL_SCREEN_CORR)


def fit_funnel_map(draws: np.ndarray) -> FunnelMap | None:
    """The :class:`FunnelMap` of the draws ``(chain, draw, dim)`` (module text), or ``None``
    where no coordinate's scale follows another's, or where those that do are held apart in
    modes (their chains' R-hat above ``FUNNEL_MAX_RHAT``, or above ``FUNNEL_OTHERS_MAX_RHAT``
    in a coordinate that neither drives nor is driven)."""
    draws = np.asarray(draws, dtype=float)
    n_chains, n_draws, dim = draws.shape
    # a chain's repeated draws (rejected transitions; a chain stuck in the neck) say nothing
    # of the spread: each chain's moves only
    moved = np.ones((n_chains, n_draws), dtype=bool)
    moved[:, 1:] = np.any(draws[:, 1:] != draws[:, :-1], axis=-1)
    x, chain = draws[moved], np.nonzero(moved)[0]
    if dim < 2 or x.shape[0] < FUNNEL_BINS * _MIN_DRAWS_PER_BIN:
        return None
    step = max(1, x.shape[0] // FUNNEL_MAX_DRAWS)
    x, chain = x[::step], chain[::step]
    best_r2 = np.zeros(dim)
    driver, slope, center = np.full(dim, -1), np.zeros(dim), np.zeros(dim)
    for u in _screened_drivers(x):
        bins = _bin_log_spreads(x, chain, u)
        if bins is None:
            continue
        centers, log_spread = bins
        dc = centers - centers.mean()
        with np.errstate(invalid="ignore"):
            a = dc @ (log_spread - log_spread.mean(axis=0)) / (dc @ dc)
            residual = log_spread - log_spread.mean(axis=0) - np.outer(dc, a)
            r2 = 1.0 - residual.var(axis=0) / log_spread.var(axis=0)
        ratio = np.abs(a) * (centers[-1] - centers[0])
        found = np.isfinite(r2) & (r2 >= FUNNEL_MIN_R2) & (ratio > np.log(FUNNEL_MIN_RATIO))
        found &= (np.arange(dim) != u) & (r2 > best_r2)
        best_r2 = np.where(found, r2, best_r2)
        driver, slope = np.where(found, u, driver), np.where(found, a, slope)
        center = np.where(found, centers.mean(), center)
    # the bulk R-hat: chains at different locations (modes), not at different depths of one
    # funnel (whose spreads differ, and would raise the tail R-hat); 1 where a coordinate is
    # constant
    rhat = np.nan_to_num(rhat_by_coordinate(draws, method="z_scale"), nan=1.0)
    for u in np.unique(driver[driver >= 0]):  # a driver convinces by most of its coordinates
        line_like = np.median(best_r2[driver == u]) >= FUNNEL_DRIVER_R2
        if not line_like or np.median(rhat[driver == u]) > FUNNEL_MAX_RHAT:
            driver[driver == u] = -1
    driven = np.flatnonzero((driver >= 0) & ~np.isin(np.arange(dim), driver))
    if driven.size == 0:
        return None
    others = np.setdiff1d(np.arange(dim), np.union1d(driven, driver[driven]))
    if others.size and np.max(rhat[others]) > FUNNEL_OTHERS_MAX_RHAT:
        return None
    return FunnelMap(
        driven=driven, driver=driver[driven], slope=slope[driven], center=center[driven],
        location=np.median(x[:, driven], axis=0),
    )  # fmt: skip
