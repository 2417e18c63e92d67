r"""The target in a sampler's own coordinates: batched HMC's chains move ``y``, the model's
density is evaluated at ``x(y)``, and its terms carry the map's Jacobian,

.. math::
    \log f_Y(y) = \log f\bigl(x(y)\bigr) + \log \left|\det \frac{\partial x}{\partial y}\right|,

so that draws of ``f_Y`` mapped back by ``x(y)`` are draws of ``f``: the same posterior and the
same ``Z``. The maps: :class:`~pm_evidence.model.circular_map.CircularMap` (periodic
coordinates moved on circles) and :class:`~pm_evidence.model.funnel_map.FunnelMap` (a funnel's
coordinates rescaled by their driver). A map gives ``sampler_dim``, ``to_model``, ``to_map``,
``sampler_names`` and ``mapped_terms``; a :class:`MappedDensity` can itself be mapped again.
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
        """``(log prior + log Jacobian, log likelihood, their gradients)`` at ``y (n, dim)``."""
        return self.map.mapped_terms(y, self.target.terms_grad_function(self.map.to_model(y)))

    def to_model(self, y: np.ndarray) -> np.ndarray:
        """Points ``y`` as points of the model's own coordinates (through every map)."""
        x = self.map.to_model(y)
        return self.target.to_model(x) if isinstance(self.target, MappedDensity) else x

    def to_map(self, x: np.ndarray) -> np.ndarray:
        """The model's points ``x`` as points ``y`` (the inverse of :meth:`to_model`)."""
        inner = self.target.to_map(x) if isinstance(self.target, MappedDensity) else x
        return self.map.to_map(inner)
