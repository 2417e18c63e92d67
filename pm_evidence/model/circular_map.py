r"""Periodic coordinates found in the model, and the circles batched HMC moves them on.

A phase ``phi ~ pm.Uniform(0, 2 pi)`` that enters the likelihood only through ``sin`` and
``cos`` (an orbit's phase, a signal's) has a posterior on a circle, but PyMC samples it as
``z = logit((phi - a) / (b - a))``: where its posterior holds mass near both ends of the
interval (a phase near 0 is a phase near ``2 pi``), HMC in ``z`` sees two long tails, towards
``-inf`` and ``+inf``, that a chain joins only through the middle. On a two-planet orbit the
outer planet's phase had a bulk ESS of 368 in 8,192 draws against 5,500-7,100 for the other
parameters, and the draws were extended twice for its R-hat (docs/benchmarks.rst, "Priors with
their own support").

**The test.** A coordinate is moved on a circle where its variable has PyMC's ``Interval``
transform, the model's density at every one of a few points (the chains' starts) is the same at
both ends of the interval (``z = +-CHECK_Z``, within ``PERIODIC_RTOL``) with the same slope
across them (read over ``SLOPE_T`` of the interval), so that the density on the circle is
continuous and smooth where the ends meet (a density symmetric about the middle of the
interval is equal at its ends too, with opposite slopes). Nothing is assumed about the model's
form. Whether the posterior has mass near the ends is not asked: the conditional density at
the seam, the other coordinates held, can be hundreds of nats below a point's own where the
marginal has mass there (a phase that trades off against another angle), and a phase on its
circle away from the seam is sampled as well as in its logit.

**The map** (Stan's unit vector, as for circular variables): each periodic ``z_k`` becomes a
point ``w = (w_1, w_2)`` of the plane, with angle ``theta = atan2(w_2, w_1)`` and radius
``r = |w|``,

.. math::
    t = \frac{\theta + \pi}{2 \pi}, \qquad z_k = \log t - \log (1 - t), \qquad
    \log f_Y(y) = \log f(x(y)) + \log \frac{dz_k}{d\theta} - \frac{(r - 1)^2}{2 \sigma^2} - \log C,

``dz/dtheta = 1 / (2 pi t (1 - t))``, ``sigma = RADIUS_SD``, ``C = int_0^inf exp(-(r -
1)^2 / (2 sigma^2)) r dr`` (so that ``r`` integrates out to 1 with the area element ``r dr
dtheta``: the same ``Z``). The radius keeps the chains away from the origin, where the angle
turns fast. ``w_1`` takes ``z_k``'s place in ``y``, the ``w_2`` follow the model's
coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

__all__ = [
    "CHECK_POINTS",
    "CHECK_Z",
    "PERIODIC_RTOL",
    "RADIUS_SD",
    "SLOPE_ATOL",
    "SLOPE_RTOL",
    "SLOPE_T",
    "CircularMap",
    "find_circular_map",
    "interval_coordinates",
    "log_radius_normalizer",
]

CHECK_Z = 30.0  # the ends of an interval: t within 1e-13 of 0 and 1
PERIODIC_RTOL = 1e-6  # |log f(+CHECK_Z) - log f(-CHECK_Z)| <= PERIODIC_RTOL (1 + |log f|)
RADIUS_SD = 0.25  # the radius's spread about 1: the origin is 4 SDs away
CHECK_POINTS = 16  # the points the test reads (the chains' starts)
SLOPE_T = 1e-5  # the slopes across the seam are read over steps of this share of the interval
# Slopes (d log f / dt, t the share of the interval) equal within SLOPE_ATOL + SLOPE_RTOL
# (|s_a| + |s_b|): the differences' rounding is about 1e-5 at log f of 1,000 nats, their
# truncation (h^2 / 3 times the third derivative) below 1e-4 for a von Mises of
# concentration 1,000.
SLOPE_ATOL = 1e-2
SLOPE_RTOL = 0.05


@cache
def log_radius_normalizer(sd: float) -> float:
    """``log C``, ``C = int_0^inf exp(-(r - 1)^2 / (2 sd^2)) r dr`` in closed form:
    ``sd^2 exp(-1 / (2 sd^2)) + sd sqrt(pi / 2) (1 + erf(1 / (sd sqrt 2)))``."""
    from scipy import special

    c = sd**2 * np.exp(-0.5 / sd**2) + sd * np.sqrt(np.pi / 2) * (
        1 + special.erf(1 / (sd * np.sqrt(2)))
    )
    return float(np.log(c))


@dataclass(frozen=True)
class CircularMap:
    """The model's periodic coordinates ``coordinates`` (logits of ``Interval`` variables)
    moved on circles (module text); ``model_dim`` the model's dimension."""

    coordinates: np.ndarray
    model_dim: int

    def sampler_dim(self, model_dim: int) -> int:
        """The dimension of ``y``: one more per periodic coordinate."""
        return model_dim + self.coordinates.size

    def sampler_names(self, names: list[str]) -> list[str]:
        """The names of ``y``'s coordinates: the model's (``w_1`` in ``z_k``'s place), then
        ``name[sin]`` for each ``w_2``."""
        return [*names, *(f"{names[k]}[sin]" for k in self.coordinates.tolist())]

    def planes(self) -> np.ndarray:
        """The sampler's indices of each periodic coordinate's ``(w_1, w_2)``: ``(k, 2)``."""
        second = self.model_dim + np.arange(self.coordinates.size)
        return np.column_stack([self.coordinates, second]).astype(int)

    def _angle(self, y: np.ndarray):
        w1, w2 = y[..., self.coordinates], y[..., self.model_dim :]
        theta = np.arctan2(w2, w1)
        # t and 1 - t each from theta, so that neither loses digits near its end
        return w1, w2, (theta + np.pi) / (2 * np.pi), (np.pi - theta) / (2 * np.pi)

    def to_model(self, y: np.ndarray) -> np.ndarray:
        """``x(y)``: points ``(..., model_dim + k)`` as the model's points ``(...,
        model_dim)``."""
        _, _, t, one_minus_t = self._angle(y)
        x = np.array(y[..., : self.model_dim], dtype=float)
        with np.errstate(divide="ignore"):
            x[..., self.coordinates] = np.log(t) - np.log(one_minus_t)
        return x

    def to_map(self, x: np.ndarray) -> np.ndarray:
        """``y(x)``, the inverse of :meth:`to_model` at radius 1."""
        theta = 2 * np.pi * (0.5 * (1 + np.tanh(0.5 * x[..., self.coordinates]))) - np.pi
        y = np.concatenate([np.array(x, dtype=float), np.sin(theta)], axis=-1)
        y[..., self.coordinates] = np.cos(theta)
        return y

    def mapped_terms(self, y: np.ndarray, terms: tuple) -> tuple:
        """The model's terms at ``x(y)`` as terms of ``f_Y`` at ``y``: ``log dz/dtheta`` and the
        radius's density go with the prior; gradients by the chain rule through
        ``theta = atan2(w_2, w_1)``."""
        log_prior, log_lik, g_prior, g_lik = terms
        w1, w2, t, one_minus_t = self._angle(y)
        r2 = w1 * w1 + w2 * w2
        r = np.sqrt(r2)
        with np.errstate(divide="ignore", invalid="ignore"):  # t = 0 or 1: -inf, rejected
            log_dz = -np.log(2 * np.pi) - np.log(t) - np.log(one_minus_t)
            dz = 1.0 / (2 * np.pi * t * one_minus_t)
        radius = -((r - 1) ** 2) / (2 * RADIUS_SD**2) - log_radius_normalizer(RADIUS_SD)

        def pull(g, jacobian: bool):
            with np.errstate(divide="ignore", invalid="ignore"):
                d_theta = g[:, self.coordinates] * dz
                if jacobian:
                    d_theta = d_theta + (1 / one_minus_t - 1 / t) / (2 * np.pi)
                g_w1, g_w2 = -d_theta * w2 / r2, d_theta * w1 / r2
                if jacobian:
                    d_r = -(r - 1) / RADIUS_SD**2
                    g_w1, g_w2 = g_w1 + d_r * w1 / r, g_w2 + d_r * w2 / r
            out = np.concatenate([np.array(g, dtype=float), g_w2], axis=1)
            out[:, self.coordinates] = g_w1
            return out

        return (
            log_prior + np.sum(log_dz + radius, axis=1),
            log_lik,
            pull(g_prior, True),
            pull(g_lik, False),
        )

    def describe(self, names: list[str]) -> str:
        """The periodic coordinates by the model's names, grouped by variable."""
        groups: dict[str, int] = {}
        for k in self.coordinates.tolist():
            variable = names[k].split("[")[0]
            groups[variable] = groups.get(variable, 0) + 1
        return ", ".join(
            f"{variable}" + (f" ({count} coordinates)" if count > 1 else "")
            for variable, count in groups.items()
        )


def interval_coordinates(target) -> np.ndarray:
    """The flat coordinates of ``target``'s variables whose transform is PyMC's ``Interval``
    with both bounds (the logit of where each lies between them)."""
    from pymc.logprob.transforms import IntervalTransform

    model, found = target.model, []
    for variable in target.layout:
        if not variable.transformed or variable.discrete:
            continue
        rv = model[variable.name]
        transform = model.rvs_to_transforms.get(rv)
        if not isinstance(transform, IntervalTransform):
            continue
        a, b, _, _ = transform.get_a_and_b(rv.owner.inputs)
        if a is not None and b is not None:
            found.extend(range(variable.start, variable.stop))
    return np.asarray(found, dtype=int)


def find_circular_map(target, points: np.ndarray) -> CircularMap | None:
    """The :class:`CircularMap` of ``target``'s periodic coordinates (module text), checked at
    ``points (n, dim)`` (a few finite points of the posterior's region), or ``None`` where
    there are none."""
    candidates = interval_coordinates(target)
    if candidates.size == 0:
        return None
    points = np.asarray(points, dtype=float)[:CHECK_POINTS]
    periodic = [k for k in candidates.tolist() if _is_periodic(target, points, k)]
    if not periodic:
        return None
    return CircularMap(np.asarray(periodic, dtype=int), int(target.dim))


def _circle_log_density(target, points: np.ndarray, k: int, z: float) -> np.ndarray:
    """The density on the circle, ``log f(x) - log(t (1 - t))`` (``t = sigmoid(z_k)``), at
    ``points`` with coordinate ``k`` set to ``z``."""
    moved = np.array(points)
    moved[:, k] = z
    return target.log_density(moved) + np.logaddexp(0.0, z) + np.logaddexp(0.0, -z)


def _is_periodic(target, points: np.ndarray, k: int) -> bool:
    """Whether coordinate ``k`` is moved on a circle (module text): at every point the
    density on the circle has the same value at both ends (``z = +-CHECK_Z``) and the same
    slope across them (a density symmetric about the middle, equal at the ends, has opposite
    slopes there): ``d log f / dt`` by second-order one-sided differences over steps of
    ``SLOPE_T`` at each end, equal within ``SLOPE_ATOL + SLOPE_RTOL (|s_a| + |s_b|)``."""
    h = SLOPE_T
    logit = {t: float(np.log(t) - np.log1p(-t)) for t in (h, 2 * h)}
    with np.errstate(all="ignore"):
        ends = {z: _circle_log_density(target, points, k, z) for z in (CHECK_Z, -CHECK_Z)}
        near = {
            (side, t): _circle_log_density(target, points, k, side * logit[t])
            for side in (-1, 1) for t in (h, 2 * h)
        }  # fmt: skip
    values = np.stack([*ends.values(), *near.values()])
    if not np.all(np.isfinite(values)):
        return False
    at_a, at_b = ends[-CHECK_Z], ends[CHECK_Z]
    same = np.abs(at_b - at_a) <= PERIODIC_RTOL * (1 + np.abs(at_b))
    # both read from a towards b: forward differences at a, backward at b
    slope_a = (-3 * at_a + 4 * near[(1, h)] - near[(1, 2 * h)]) / (2 * h)
    slope_b = (3 * at_b - 4 * near[(-1, h)] + near[(-1, 2 * h)]) / (2 * h)
    tolerance = SLOPE_ATOL + SLOPE_RTOL * (np.abs(slope_a) + np.abs(slope_b))
    return bool(np.all(same & (np.abs(slope_a - slope_b) <= tolerance)))
