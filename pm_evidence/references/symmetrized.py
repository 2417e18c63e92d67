"""A reference averaged over a finite group of volume-preserving maps (label switching).

References
----------
Frühwirth-Schnatter (2004), eq. (11).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import log_sum_exp
from pm_evidence.references.base import Reference, _zero_nonfinite_rows


@dataclass(frozen=True, eq=False)
class SymmetrizedReference(Reference):
    r"""A reference averaged over a finite group of volume-preserving maps:
    ``q_G(x) = (1/|G|) sum_g q(g x)``.

    Each ``g`` is an affine map ``x -> A_g x + c_g`` with ``|det A_g| = 1`` and the maps form a
    group, so ``q(g x)`` is the density of ``g^{-1} X`` for ``X ~ q`` and ``q_G`` is a normalized
    mixture: a draw picks ``g`` uniformly and returns ``g X`` (the group is closed under
    inversion). For a target invariant under the group, ``f(g x) = f(x)``, the weights
    ``f / q_G`` are invariant too, so bridge sampling, DS, IS and reverse IS with ``q_G`` are
    valid whether the posterior draws visit one mirror mode or all of them, where ``q`` fitted
    to one mode would count one mode's mass, ``Z / |G|`` (label switching: see
    :mod:`pm_evidence.model.modes`; Frühwirth-Schnatter 2004, eq. (11)).

    Parameters
    ----------
    base : Reference
        The reference ``q`` (e.g. fitted to posterior draws relabelled into one mirror image).
    actions : tuple of callable
        The group's elements as maps of points ``(..., dim)`` (the identity among them), e.g.
        :attr:`pm_evidence.model.modes.SymmetryGroup.actions`; each needs a ``transpose`` method
        (``A_g^T v``) for :meth:`grad_logpdf`.
    name : str, optional
        Default ``"symmetrized_" + base.name``.
    """

    base: Reference
    actions: tuple
    name: str = ""

    def __post_init__(self):
        if not self.actions:
            raise EvidenceInputError("SymmetrizedReference needs at least one group element.")
        if not self.name:
            object.__setattr__(self, "name", f"symmetrized_{self.base.name}")

    @property
    def dim(self) -> int:
        return self.base.dim

    @property
    def size(self) -> int:
        """Number of group elements ``|G|``."""
        return len(self.actions)

    @property
    def has_gradient(self) -> bool:
        """Whether the base reference has a gradient (:meth:`grad_logpdf` needs it)."""
        return self.base.has_gradient

    def _component_logpdfs(self, x) -> np.ndarray:
        """``log q(g x)`` for every ``g``: shape ``(|G|, ...)``."""
        x = np.asarray(x, dtype=float)
        return np.stack([self.base.logpdf(action(x)) for action in self.actions])

    def logpdf(self, x):
        return log_sum_exp(self._component_logpdfs(x), axis=0) - np.log(self.size)

    def grad_logpdf(self, x):
        """``sum_g r_g(x) A_g^T grad log q(g x)`` with responsibilities ``r_g = q(g x) / sum``;
        zero at a point with a non-finite coordinate."""
        x = np.asarray(x, dtype=float)
        log_q = self._component_logpdfs(x)
        with np.errstate(invalid="ignore"):  # -inf - (-inf) at non-finite points, zeroed below
            weights = np.exp(log_q - log_sum_exp(log_q, axis=0))
            grad = np.zeros_like(x)
            for weight, action in zip(weights, self.actions, strict=True):
                grad += weight[..., None] * action.transpose(self.base.grad_logpdf(action(x)))
        return _zero_nonfinite_rows(x, grad)

    def sample(self, rng, n):
        z = self.base.sample(rng, n)
        which = rng.integers(self.size, size=n)
        out = np.empty_like(z)
        for k, action in enumerate(self.actions):
            rows = which == k
            if np.any(rows):
                out[rows] = action(z[rows])
        return out
