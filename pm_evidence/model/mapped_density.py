r"""The target in a sampler's own coordinates: batched HMC's chains move ``y``, the model's
density is evaluated at ``x(y)``, and its terms carry the map's Jacobian,

.. math::
    \log f_Y(y) = \log f\bigl(x(y)\bigr) + \log \left|\det \frac{\partial x}{\partial y}\right|,

so that draws of ``f_Y`` mapped back by ``x(y)`` are draws of ``f``: the same posterior and the
same ``Z``. The maps: :class:`~pm_evidence.model.circular_map.CircularMap` (periodic
coordinates moved on circles) and :class:`~pm_evidence.model.funnel_map.FunnelMap` (a funnel's
coordinates rescaled by their driver). A map gives ``sampler_dim``, ``to_model``, ``to_map``,
``sampler_names`` (the circle) and ``mapped_terms``; a :class:`MappedDensity` can itself be
mapped again.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MappedDensity"]


class MappedDensity:
    """``target`` (anything with ``dim`` and ``terms_grad_function``: the model's
    :class:`~pm_evidence.model.log_density.LogDensity` or another :class:`MappedDensity`) in
    ``sampler_map``'s coordinates, as batched HMC reads it. Each call evaluates ``target`` at
    ``x(y)``."""

    def __init__(self, target, sampler_map):
        self.target, self.map = target, sampler_map
        self.dim = sampler_map.sampler_dim(target.dim)

    def terms_grad_function(self, y: np.ndarray):
        """``(log prior + log Jacobian, log likelihood, their gradients)`` at ``y (n, dim)``.
        A point whose ``x(y)`` is not finite (an overflowing scale, an angle at the seam) is
        not passed to the model: its log density is ``-inf`` (HMC rejects it), its gradient
        0."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            x = self.map.to_model(y)
        finite = np.all(np.isfinite(x), axis=1)
        if finite.all():
            return self.map.mapped_terms(y, self.target.terms_grad_function(x))
        x = np.where(finite[:, None], x, x[finite][:1] if finite.any() else 0.0)
        log_prior, log_lik, g_prior, g_lik = self.map.mapped_terms(
            y, self.target.terms_grad_function(x)
        )
        rejected = ~finite
        return (
            np.where(rejected, -np.inf, log_prior), np.where(rejected, -np.inf, log_lik),
            np.where(rejected[:, None], 0.0, g_prior), np.where(rejected[:, None], 0.0, g_lik),
        )  # fmt: skip
