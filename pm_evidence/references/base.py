"""The interface every reference distribution implements, and its rule for non-finite points.

A reference is normalized, has ``logpdf(x)`` for ``x`` of shape ``(..., dim)`` and
``sample(rng, n) -> (n, dim)``. At a point with a NaN or infinite coordinate every ``logpdf`` is
``-inf`` and every ``grad_logpdf`` zero (no error): a sampler's proposal that reaches such a
point is a rejected, counted move (:mod:`pm_evidence.tempering.kernels`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError


class Reference:
    """Interface of a normalized reference distribution on the flat unconstrained space.

    A reference with ``has_gradient = True`` implements :meth:`grad_logpdf` (HMC and GWG on a
    geometric path from it need it); the others raise. At a point with a non-finite coordinate
    ``logpdf`` is ``-inf`` and ``grad_logpdf`` zero, computed for the other points as usual.
    """

    name: str = "reference"
    dim: int
    has_gradient: ClassVar[bool] = False

    def logpdf(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def grad_logpdf(self, x: np.ndarray) -> np.ndarray:
        """Gradient of ``logpdf`` with respect to ``x``, shaped like ``x`` (only where
        ``has_gradient``)."""
        raise EvidenceInputError(
            f"The {self.name!r} reference has no gradient of its log-density (has_gradient=False)."
        )

    def logpdf_and_grad(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(logpdf(x), grad_logpdf(x))``; a reference whose two share work (a mixture's
        whitened points) computes them together."""
        return self.logpdf(x), self.grad_logpdf(x)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def marginal_scale(self) -> np.ndarray | None:
        """Each coordinate's scale ``(dim,)`` (a standard deviation, or a mixture's
        within-component one), for preconditioning HMC on a path from this reference
        (:class:`~pm_evidence.tempering.path.GeometricPath`); ``None`` where unknown."""
        return None

    def graph_parameters(self) -> tuple[np.ndarray, ...] | None:
        """Numeric inputs of :meth:`graph_logpdf`, or ``None`` when this reference has no
        symbolic log-density (then compiled transitions fall back to NumPy)."""
        return None

    @staticmethod
    def graph_logpdf(x, *parameters):  # pragma: no cover - interface
        """``logpdf`` as a PyTensor graph of a symbolic ``x (n, dim)`` and symbolic parameters
        shaped like :meth:`graph_parameters` (inputs, not constants: one compiled function
        serves every fitted reference of a kind)."""
        raise NotImplementedError


def finite_rows(x: np.ndarray) -> np.ndarray:
    """Whether every coordinate of each point of ``x (..., dim)`` is finite: shape ``(...)``.

    A point with a NaN or infinite coordinate lies outside every reference's support: its
    ``logpdf`` is ``-inf`` and its ``grad_logpdf`` zero, so that a proposal that reaches it
    (a leapfrog trajectory that diverged) is rejected and counted by the kernels rather than
    raising (:mod:`pm_evidence.tempering.kernels`).
    """
    return np.all(np.isfinite(x), axis=-1)


def _zero_nonfinite_rows(x: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``grad`` with zeros at the points of ``x`` that have a non-finite coordinate (a mixture's
    responsibilities are NaN there, ``-inf - (-inf)``); ``grad`` itself when there are none."""
    finite = finite_rows(x)
    if finite.all():
        return grad
    return np.where(finite[..., None], grad, 0.0)
