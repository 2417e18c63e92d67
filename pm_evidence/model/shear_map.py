r"""A phase that follows the angle of two other coordinates, and the sheared circle batched
HMC moves it on.

An orbit written with the mean anomaly's phase ``phi`` and the eccentricity vector ``(h, k) =
sqrt(e) (cos w, sin w)`` is measured, at small eccentricity, only through the mean longitude
``phi + w``: its posterior is a ridge ``phi = lambda - atan2(k, h)`` that turns faster the
nearer ``(h, k)`` lies to the origin. In the coordinates PyMC samples, and on the phase's
circle (:mod:`~pm_evidence.model.circular_map`), the ridge's curvature sets the leapfrog step
and its length the trajectory: on a two-planet orbit with correlated noise, in the metric's
units, the log density's Hessian at the draws had a largest eigenvalue of about 300 (median
over draws) against at most 2.5 for the draws' correlation, and the kept transitions took 48
leapfrog steps of 0.06 against 18 of 0.18 with the orbit written in its mean longitude
(measured: docs/benchmarks.rst, "The phase's ridge"). A model written with the mean longitude
has no ridge; this map takes it away from a model written without it.

**The map.** A phase ``p`` moved on a circle is the angle ``theta = atan2(w_2, w_1)`` of a
point ``w`` of the plane (:class:`~pm_evidence.model.circular_map.CircularMap`). Its shear by
the angle of the coordinates ``(a, b)`` (two other coordinates of the sampler) is

.. math::
    w = R(\varphi)\, w', \qquad \varphi = s\, \mathrm{atan2}(y_b, y_a), \qquad
    \theta = \theta' + \varphi,

``R`` a rotation and ``s = +-1``; the chains move ``w'``. The map is a rotation of the plane
whose angle depends only on coordinates it leaves alone, so its Jacobian is triangular with
rotations on the diagonal: ``|det| = 1``, the same density values and the same ``Z``. The
gradient is pulled back by the chain rule: ``g_w' = R(varphi)^T g_w`` and ``g_a' = g_a + s D
(-y_b / r^2)``, ``g_b' = g_b + s D y_a / r^2``, with ``D = w_1 g_{w_2} - w_2 g_{w_1}`` the
derivative along the angle and ``r^2 = y_a^2 + y_b^2``. On the ridge, ``theta'`` is the mean
longitude (where ``(y_a, y_b)`` are, as the logits of symmetric intervals are, about
proportional to ``(h, k)`` near the origin).

**The test.** Nothing about the model says which coordinates a phase follows, so the map is
read from draws: for each phase on a circle, each pair ``(a, b)`` of the model's other
coordinates and each sign ``s``, the phase's spread ``V = 1 - |mean exp(i (theta - s
atan2(y_b, y_a)))|`` (the circular variance, within each chain and averaged over chains, so
that chains in different modes do not count as spread) against ``V_0``, the phase's own.
The phase is sheared by the pair that spreads it least, where its own spread is at least
``SHEAR_MIN_SPREAD`` (a phase known to a fraction of a radian has no ridge worth a map) and the
pair's is at most ``1 / SHEAR_GAIN`` of it. On the two-planet orbit with correlated noise, in
tuning's last slow window, the outer planet's phase had ``V_0 = 0.39`` and ``V = 0.098`` with
its own ``(h, k)``, the next pair 0.25; in the kept draws 0.40, 0.038 and 0.20. The inner
planet's, its eccentricity well measured, had ``V_0 = 0.034`` in the kept draws: left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SHEAR_GAIN", "SHEAR_MIN_SPREAD", "ShearMap", "find_shear_map", "phase_spread"]

# A phase is sheared where the best pair's angle cuts its circular variance by this factor. On
# the two-planet orbit the outer planet's ridge pair cut it 4.0 times in tuning's last slow
# window and 10 times in the kept draws; on phases with no strong ridge (its inner planet, the
# one-planet orbit) the best pair cut it 1.3 to 2.5 times, in tuning and in the kept draws,
# some of them pairs with no part in a ridge (an eccentricity component and the jitter).
SHEAR_GAIN = 3.0
# A phase whose circular variance is below this (a circular SD of about 0.32 rad) is left alone.
SHEAR_MIN_SPREAD = 0.05


def phase_spread(theta: np.ndarray) -> np.ndarray:
    """The circular variance ``1 - |mean exp(i theta)|`` of angles ``theta (draws, chains,
    ...)`` within each chain, averaged over the chains: ``(...)``."""
    resultant = np.abs(np.mean(np.exp(1j * theta), axis=0))
    return 1.0 - np.mean(resultant, axis=0)


@dataclass(frozen=True)
class ShearMap:
    """Planes ``planes (k, 2)`` (the sampler's indices of ``w_1, w_2`` of each sheared phase)
    rotated by ``signs (k,)`` times the angle of the coordinates ``pairs (k, 2)`` (indices
    ``a, b``): module text. The sampler's coordinates are the same in number as the
    target's."""

    planes: np.ndarray
    pairs: np.ndarray
    signs: np.ndarray

    def sampler_dim(self, model_dim: int) -> int:
        """The dimension of the sampler's coordinates: the target's."""
        return model_dim

    def sampler_names(self, names: list[str]) -> list[str]:
        """The names of the sampler's coordinates: the target's."""
        return list(names)

    def _rotation(self, y: np.ndarray):
        a, b = y[..., self.pairs[:, 0]], y[..., self.pairs[:, 1]]
        phi = self.signs * np.arctan2(b, a)
        return a, b, np.cos(phi), np.sin(phi)

    def _rotated(self, y: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        out = np.array(y, dtype=float)
        w1, w2 = y[..., self.planes[:, 0]], y[..., self.planes[:, 1]]
        out[..., self.planes[:, 0]] = cos * w1 - sin * w2
        out[..., self.planes[:, 1]] = sin * w1 + cos * w2
        return out

    def to_model(self, y: np.ndarray) -> np.ndarray:
        """The target's points ``w = R(varphi) w'`` of the sampler's points ``y (..., dim)``."""
        _, _, cos, sin = self._rotation(y)
        return self._rotated(y, cos, sin)

    def to_map(self, x: np.ndarray) -> np.ndarray:
        """The sampler's points of the target's ``x``: the inverse rotation (``a, b`` are the
        same in both)."""
        _, _, cos, sin = self._rotation(x)
        return self._rotated(x, cos, -sin)

    def mapped_terms(self, y: np.ndarray, terms: tuple) -> tuple:
        """The target's terms at ``to_model(y)`` as the sampler's: the values as they are
        (``|det| = 1``), the gradients pulled back by the chain rule (module text)."""
        log_prior, log_lik, g_prior, g_lik = terms
        a, b, cos, sin = self._rotation(y)
        x = self._rotated(y, cos, sin)
        w1, w2 = x[:, self.planes[:, 0]], x[:, self.planes[:, 1]]
        r2 = a * a + b * b
        with np.errstate(divide="ignore", invalid="ignore"):
            da = np.where(r2 > 0, -self.signs * b / r2, 0.0)
            db = np.where(r2 > 0, self.signs * a / r2, 0.0)

        def pull(g):
            g = np.asarray(g, dtype=float)
            g1, g2 = g[:, self.planes[:, 0]], g[:, self.planes[:, 1]]
            along = w1 * g2 - w2 * g1  # d log f / d theta
            out = g.copy()
            out[:, self.planes[:, 0]] = cos * g1 + sin * g2
            out[:, self.planes[:, 1]] = -sin * g1 + cos * g2
            np.add.at(out, (slice(None), self.pairs[:, 0]), along * da)
            np.add.at(out, (slice(None), self.pairs[:, 1]), along * db)
            return out

        return log_prior, log_lik, pull(g_prior), pull(g_lik)

    def describe(self, names: list[str]) -> str:
        """Each sheared phase and the pair whose angle it follows, by the model's names."""
        return ", ".join(
            f"{names[p]} by the angle of ({names[a]}, {names[b]})"
            for p, (a, b) in zip(self.planes[:, 0].tolist(), self.pairs.tolist(), strict=True)
        )


def find_shear_map(window: np.ndarray, planes: np.ndarray, others: np.ndarray):
    """The :class:`ShearMap` that draws ``window (draws, chains, dim)`` call for (module
    text), or ``None``: ``planes (k, 2)`` the indices of each phase's ``w_1, w_2`` on its
    circle, ``others`` the coordinates whose pairs are tried (the model's coordinates, not the
    circles')."""
    window = np.asarray(window, dtype=float)
    others = np.asarray(others, dtype=int)
    if others.size < 2 or len(planes) == 0 or not np.all(np.isfinite(window)):
        return None
    first, second = np.triu_indices(others.size, k=1)
    a, b = others[first], others[second]
    alpha = np.arctan2(window[..., b], window[..., a])  # (draws, chains, pairs)
    chosen = []
    for w1, w2 in np.asarray(planes, dtype=int).tolist():
        theta = np.arctan2(window[..., w2], window[..., w1])
        own = float(phase_spread(theta))
        if own < SHEAR_MIN_SPREAD:
            continue
        spreads = np.stack(
            [phase_spread(theta[..., None] - s * alpha) for s in (1.0, -1.0)]
        )  # (sign, pairs)
        sign, pair = np.unravel_index(int(np.argmin(spreads)), spreads.shape)
        if SHEAR_GAIN * spreads[sign, pair] <= own:
            chosen.append((w1, w2, a[pair], b[pair], 1.0 - 2.0 * sign))
    if not chosen:
        return None
    rows = np.asarray(chosen)
    return ShearMap(rows[:, :2].astype(int), rows[:, 2:4].astype(int), rows[:, 4].astype(float))
