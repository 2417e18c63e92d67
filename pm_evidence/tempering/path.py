r"""The geometric path between a normalized reference ``p0`` and the target ``f``.

.. math:: \log f_\beta(x) = \log p_0(x) + \beta\,\Delta(x), \qquad
          \Delta(x) = \log f(x) - \log p_0(x),

seed 004 eq. (2) (seed 001 writes the same path from the other end). ``Z_0 = 1`` because ``p0``
is normalized, and ``Z_1 = Z = p(y | M)``. When ``p0`` is the model's prior, ``Delta`` is the log
likelihood and ``f_beta`` is prior x likelihood^beta, the power posterior.

Every estimator of this package's annealed and tempered family needs only ``Delta`` at the draws
and the ``beta``'s; the samplers need ``log f_beta`` and, for HMC, its gradient.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.backend import is_on_device, to_device
from pm_evidence.references import PriorReference, Reference, Warp3Reference

__all__ = ["GeometricPath", "PathState", "state_on_device", "state_on_host", "tempered_log_density"]


class PathState(NamedTuple):
    """Points ``x (n, dim)`` with ``log p0``, ``Delta`` and (for HMC) their gradients."""

    x: np.ndarray
    log_p0: np.ndarray
    delta: np.ndarray
    grad_log_p0: np.ndarray | None = None
    grad_delta: np.ndarray | None = None


def state_on_device(state: PathState) -> PathState:
    """``state`` with its arrays on JAX's device, where a sampler keeps its chains between the
    device's calls (:func:`~pm_evidence.tempering.kernels.resident_chains`); arrays already
    there stay."""
    return PathState(*(a if a is None or is_on_device(a) else to_device(a) for a in state))


def state_on_host(state: PathState) -> PathState:
    """``state`` with its arrays as NumPy's: copied from the device, once, at the end of a
    sampler's run that kept them there."""
    return PathState(*(None if a is None else np.asarray(a) for a in state))


def tempered_log_density(log_p0: np.ndarray, delta: np.ndarray, beta) -> np.ndarray:
    """``log p0 + beta * Delta``, with ``0 * (-inf) = 0`` (a point outside the target's support
    still has the reference's density at ``beta = 0``)."""
    beta = np.asarray(beta, dtype=float)
    with np.errstate(invalid="ignore"):
        scaled = np.where(beta == 0.0, 0.0, beta * delta)
    return log_p0 + scaled


def _step_scale(reference: Reference) -> np.ndarray:
    r"""HMC's per-coordinate step factors on a path from ``reference``: its marginal scales
    divided by their geometric mean (ones where it has none, as the prior).

    HMC with leapfrog steps ``eps s_j`` on coordinate ``j`` is HMC with identity mass on
    ``z = x / s`` (a diagonal mass matrix ``diag(s)^{-2}``): the reference, fitted to the
    posterior, whitens the scales, and one step size suits every coordinate. Dividing by the
    geometric mean keeps ``eps`` in the units it had without preconditioning (the step sizes the
    pilot and the ladders start from and adapt).
    """
    scale = reference.marginal_scale()
    if scale is None:
        return np.ones(reference.dim)
    scale = np.asarray(scale, dtype=float)
    if scale.shape != (reference.dim,) or not np.all(np.isfinite(scale) & (scale > 0)):
        return np.ones(reference.dim)
    return scale / np.exp(np.mean(np.log(scale)))


class GeometricPath:
    """``f_beta = p0^(1 - beta) f^beta`` for a PyMC model's log-density.

    Parameters
    ----------
    target : LogDensity
        The model's batched log-density.
    reference : Reference
        Normalized ``p0`` on the flat unconstrained space. :class:`PriorReference` uses the
        model's own prior/likelihood split (``Delta`` = log likelihood, no extra evaluations);
        fitted references need ``logpdf`` (and, for HMC, ``grad_logpdf``: ``has_gradient``).
    via_gradient : bool, optional
        Evaluate the model by its value-and-gradient function (:meth:`LogDensity.evaluate
        <pm_evidence.LogDensity.evaluate>`), as a gradient-based kernel compiles it anyway;
        default: where the model has continuous entries and its values are not taken apart
        from its gradient (:attr:`~pm_evidence.LogDensity.values_apart`: a costly point).
    """

    def __init__(self, target, reference: Reference, *, via_gradient: bool | None = None):
        if isinstance(reference, Warp3Reference):
            raise EvidenceInputError(
                "warp3 is a bridge-sampling construction (a symmetrized target), not a reference "
                "for an annealing path. Use reference='prior', 'student_t' or 'normal'."
            )
        if reference.dim != target.dim:
            raise EvidenceInputError(
                f"The reference has dimension {reference.dim} but the model's flat vector has "
                f"{target.dim}."
            )
        self.target = target
        self.reference = reference
        # values from the value-and-gradient function (LogDensity.evaluate) where the path's
        # kernel compiles it anyway: the caller says (make_plan: its kernel needs gradients);
        # None: wherever the model has continuous entries (HMC, the default kernel there) and a
        # point costs too little for a value-only function to pay (LogDensity.values_apart)
        if via_gradient is None:
            via_gradient = not target.discrete_mask.all() and not target.values_apart
        self.via_gradient = bool(via_gradient)
        # compiled HMC transitions bound to this path's reference parameters, by leapfrog
        # steps (pm_evidence.tempering.compiled.hmc_transition_function)
        self.bound_transitions: dict = {}
        self.is_prior = isinstance(reference, PriorReference)
        self.step_scale = _step_scale(reference)

    @property
    def dim(self) -> int:
        return self.target.dim

    def evaluate(self, x: np.ndarray, *, with_grad: bool = False, resident: bool = False):
        """``PathState`` at points ``x (n, dim)``; one batched compiled call. With
        ``resident`` (a path from the prior on JAX's backend; ``x`` NumPy's or JAX's) the
        state is left on the device, for a sampler that keeps its points there
        (:func:`~pm_evidence.tempering.kernels.resident_chains`)."""
        if resident:
            return self._on_device(x, with_grad)
        x = np.asarray(x, dtype=float)
        if with_grad:  # all-binary models: gradients of the relaxed log-density (for GWG)
            grad_fn = (
                self.target.evaluate_with_relaxed_grad
                if self.target.discrete_mask.all()
                else self.target.evaluate_with_grad
            )
            log_prior, log_lik, g_prior, g_lik = grad_fn(x)
        else:
            log_prior, log_lik = self.target.evaluate(x, via_gradient=self.via_gradient)
            g_prior = g_lik = None
        if self.is_prior:  # log p0 = log prior + c, Delta = log lik - c (c: ordered variables)
            c = self.reference.log_normalizer
            return PathState(x, log_prior + c, log_lik - c, g_prior, g_lik)
        if not with_grad:
            log_p0 = self.reference.logpdf(x)
            return PathState(x, log_p0, log_prior + log_lik - log_p0)
        if not self.reference.has_gradient:
            raise EvidenceInputError(
                f"HMC needs the gradient of the reference's log-density, and the "
                f"{self.reference.name!r} reference has none (has_gradient=False). Use "
                f"kernel='rwm'."
            )
        log_p0, g_p0 = self.reference.logpdf_and_grad(x)
        return PathState(x, log_p0, log_prior + log_lik - log_p0, g_p0, g_prior + g_lik - g_p0)

    def _on_device(self, x, with_grad: bool) -> PathState:
        if not self.is_prior or self.target.discrete_mask.all():
            raise ValueError("Only a path from the prior of a continuous model is evaluated on "
                             "the device and left there.")  # fmt: skip
        x = x if is_on_device(x) else to_device(np.asarray(x, dtype=float))
        c = self.reference.log_normalizer
        if with_grad:
            log_prior, log_lik, g_prior, g_lik = self.target.evaluate_with_grad(x, resident=True)
            return PathState(x, log_prior + c, log_lik - c, g_prior, g_lik)
        log_prior, log_lik = self.target.evaluate(
            x, via_gradient=self.via_gradient, resident=True
        )
        return PathState(x, log_prior + c, log_lik - c)

    def sample_reference(self, rng: np.random.Generator, n: int, *, with_grad: bool = False):
        """``n`` exact draws from ``p0`` (``beta = 0``) as a ``PathState``."""
        return self.evaluate(self.reference.sample(rng, n), with_grad=with_grad)
