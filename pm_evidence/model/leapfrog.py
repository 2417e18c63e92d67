r"""The leapfrog step of HMC, written once for both engines: over NumPy on the rows of many
chains (around the model's compiled function, one call per step) and over PyTensor's graph
(compiled whole, several steps per call: by JAX on the device, or by Numba).

For a position ``x``, a momentum ``p`` and the map ``M^{-1/2}`` of the mass matrix (Neal 2011,
eq. 5.18-5.20, with ``p`` standardized)

.. math::
    x_l = x_{l-1} + \epsilon M^{-1/2} p_{l-1/2}, \qquad
    p_{l+1/2} = p_{l-1/2} + \phi\, \epsilon M^{-1/2\,T} \nabla \log f(x_l),

``phi`` 1, or 1/2 at the trajectory's last step (its first half kick is the caller's). The
callers: the posterior draws (:mod:`pm_evidence.model.batched_hmc`), and the tempered and
annealed samplers' HMC at per-point ``beta`` (:func:`pm_evidence.tempering.kernels.hmc_step`
and its compiled form, :mod:`pm_evidence.tempering.compiled`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "kinetic_energy", "leapfrog_maps", "leapfrog_step", "metropolis_acceptance", "point_acceptance",
]  # fmt: skip


def leapfrog_maps(scale, factor, e):
    """The position step ``p -> e diag(scale) F p`` and the kick ``(g, phi) -> phi e F^T
    diag(scale) g`` (``factor`` ``F``, one ``(dim, dim)`` for every row or ``(n, dim, dim)``,
    one per NumPy row, or ``None`` for a diagonal metric). Operators only, so
    the same arithmetic holds for NumPy rows (``scale (n, dim)``, ``e (n, 1)``) and for
    PyTensor graphs of rows or of one point (``e`` a scalar). ``phi`` is 1 or 1/2, a power of
    two: ``(phi e) g`` is exactly ``phi (e g)``."""
    if factor is None:
        step = e * scale

        def kick(g, fraction):  # a full kick on NumPy's rows without the product 1.0 * step
            if isinstance(fraction, float) and fraction == 1.0:
                return step * g
            return fraction * step * g

        return (lambda p: step * p), kick
    if getattr(factor, "ndim", 2) == 3:  # NumPy rows, one factor per row (chain)
        return (
            lambda p: e * (scale * np.einsum("cij,cj->ci", factor, p)),
            lambda g, fraction: fraction * e * np.einsum("cji,cj->ci", factor, scale * g),
        )
    return (
        lambda p: e * (scale * (p @ factor.T)),
        lambda g, fraction: fraction * e * ((scale * g) @ factor),
    )


def leapfrog_step(xp, evaluate, gradient, move, kick, x, p, start, diverged, fraction):
    """One leapfrog step (module text): ``xp`` is ``numpy`` or ``pytensor.tensor``,
    ``evaluate(x)`` the model's terms at ``x`` (a compiled call, or symbolic terms) and
    ``gradient(terms)`` ``grad log f`` from them.

    A position that leaves the finite numbers is a divergence: the point is moved back to
    ``start``, where it is evaluated instead (the model never sees a non-finite point), and
    stays flagged in ``diverged``; the caller rejects it. Returns ``(x, p, terms,
    diverged)``."""
    x = x + move(p)
    if xp is np:  # the rows checked one by one only where their sum is not finite
        if not math.isfinite(np.sum(x)):
            diverged = diverged | ~np.all(np.isfinite(x), axis=-1)
        if diverged.any():
            x = np.where(diverged[..., None], start, x)
    else:
        diverged = diverged | ~xp.all(xp.isfinite(x), axis=-1)
        x = xp.where(diverged[..., None], start, x)
    terms = evaluate(x)
    return x, p + kick(gradient(terms), fraction), terms, diverged


def point_acceptance(xp, h0, p, kick, gradient, log_f, diverged):
    r"""The acceptance probability ``min(1, exp(H_0 - H_l))`` of a trajectory's point ``x_l``,
    were it the trajectory's end: ``p`` is the momentum before the step that reached it
    (``p_{l-1/2}``), so its full-step momentum is ``p_l = p + (phi = 1/2) kick``, and ``H_l =
    |p_l|^2 / 2 - log f(x_l)``; 0 where the chain diverged or the energy is not finite. Over
    ``xp`` (NumPy rows, or PyTensor) as :func:`leapfrog_step`."""
    p_point = p + kick(gradient, 0.5)
    energy = kinetic_energy(xp, p_point) - log_f
    accept = xp.exp(xp.minimum(0.0, h0 - energy))
    return xp.where(diverged | ~xp.isfinite(energy), 0.0, accept)


def kinetic_energy(xp, p):
    """``|p|^2 / 2`` of each row (or of one point's momentum), over ``xp`` as
    :func:`leapfrog_step`: the energy is ``H = kinetic_energy(p) - log f(x)``."""
    return 0.5 * xp.sum(p * p, axis=-1)


def metropolis_acceptance(xp, h0, p, log_f, diverged, divergence_energy: float):
    r"""The acceptance probability ``min(1, exp(H_0 - H_L))`` of a trajectory's end (``p`` its
    momentum after the last half kick, ``log f`` its log density) and whether it diverged:
    a trajectory that left the finite numbers, or whose energy error ``H_L - H_0`` is not
    finite or exceeds ``divergence_energy``, diverged and is accepted with probability 0.
    Over ``xp`` as :func:`leapfrog_step`. Returns ``(acceptance probability, diverged)``."""
    energy_error = (kinetic_energy(xp, p) - log_f) - h0
    diverged = diverged | ~xp.isfinite(energy_error) | (energy_error > divergence_energy)
    return xp.where(diverged, 0.0, xp.exp(xp.minimum(0.0, -energy_error))), diverged
