r"""The multistate (multinomial-classification) estimating equation shared by MBAR and the
multinomial annealed discriminance sampling.

Draws ``x_i`` carry a label ``k(i)`` (the rung they were drawn at) and a weight ``omega_i``; the
rungs' densities are ``f_k = p0 exp(beta_k Delta)``. With ``a_k`` free (``a_1 = 0``) minimize the
convex function

.. math:: F(a) = \sum_i \omega_i \log\sum_k e^{a_k + \beta_k\Delta_i} - \sum_k \nu_k a_k,
          \qquad \nu_k = \sum_{i: k(i)=k} \omega_i,

whose stationarity condition ``sum_i omega_i softmax(a + beta Delta_i)_k = nu_k`` is the score of
the conditional likelihood of the labels. Then ``log Z_k = log nu_k - log nu_1 - a_k``.

* MBAR / reverse logistic regression (seed 004 eq. (18); Geyer 1994): ``omega_i = 1``, so
  ``nu_k = n_k`` and ``a_k = log n_k - log Z_k``.
* Multinomial ADS (seed 000 eq. (5), Alg. 2): ``omega_i`` are AIS weights normalized within each
  rung, so every rung has total weight 1 and ``a_k = -log c_k``.

The minimum is found by Newton's method in a trust region (scipy ``trust-exact``) for up to 300
rungs, and beyond by Newton-CG with exact Hessian-vector products (no ``K x K`` matrix, cost
``O(n K)`` per product). The standard error of ``log Z_K`` is the
cluster-robust sandwich ``sum_u (v . G_u + L_u)^2`` over independent units (chains), with
``v = H^{-1} e_K`` from conjugate gradients, ``G_u`` unit ``u``'s score and ``L_u`` its influence
on ``log nu_K - log nu_1`` (zero for rungs of fixed size).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import logsumexp, softmax

from pm_evidence.exceptions import ConvergenceError, EvidenceInputError
from pm_evidence.tempering.path import tempered_log_density

__all__ = ["MultistateSolution", "solve_multistate"]

CHUNK = 2**21  # entries of the (draw x rung) matrix held at once
EXPLICIT_HESSIAN_MAX_RUNGS = 300


class MultistateSolution(NamedTuple):
    log_z: np.ndarray  # (K,), log Z_1 = 0
    se: float  # standard error of log Z_K
    n_iter: int
    gradient_norm: float


class _Objective:
    """``F``, its gradient and Hessian-vector products, computed in chunks of draws."""

    def __init__(self, delta, betas, omega, nu):
        self.delta, self.betas, self.omega, self.nu = delta, betas, omega, nu
        self.step = max(1, CHUNK // betas.size)

    def _chunks(self):
        for start in range(0, self.delta.size, self.step):
            yield slice(start, start + self.step)

    def _logits(self, a, sl):
        return tempered_log_density(0.0, self.delta[sl, None], self.betas[None, :]) + a

    def value_and_grad(self, a_free):
        a = np.concatenate([[0.0], a_free])
        value, grad = 0.0, np.zeros_like(a)
        for sl in self._chunks():
            logits = self._logits(a, sl)
            lse = logsumexp(logits, axis=1)
            value += np.dot(self.omega[sl], lse)
            grad += self.omega[sl] @ np.exp(logits - lse[:, None])
        value -= np.dot(self.nu, a)
        grad -= self.nu
        return value, grad[1:]

    def probabilities(self, a_free, sl):
        return softmax(self._logits(np.concatenate([[0.0], a_free]), sl), axis=1)

    def hessian(self, a_free):
        """Explicit ``(K-1) x (K-1)`` Hessian ``sum_i omega_i (diag p_i - p_i p_i^T)``."""
        n_rungs = self.betas.size
        out = np.zeros((n_rungs, n_rungs))
        for sl in self._chunks():
            p = self.probabilities(a_free, sl)
            weighted = p * self.omega[sl, None]
            out += np.diag(weighted.sum(axis=0)) - weighted.T @ p
        return out[1:, 1:]

    def hessp(self, a_free, v_free):
        v = np.concatenate([[0.0], v_free])
        out = np.zeros_like(v)
        for sl in self._chunks():
            p = self.probabilities(a_free, sl)
            pv = p @ v
            out += self.omega[sl] @ (p * v) - (self.omega[sl] * pv) @ p
        return out[1:]


def solve_multistate(
    delta,
    rung,
    betas,
    *,
    log_weights=None,
    unit=None,
    log_z0=None,
    tol: float = 1e-10,
    maxiter: int = 200,
) -> MultistateSolution:
    r"""Solve the multistate equation for ``log Z_k`` of every rung.

    Parameters
    ----------
    delta : array_like (n,)
        ``Delta = log f - log p0`` at every draw (pooled over rungs).
    rung : array_like of int (n,)
        The rung each draw was drawn at (0 is ``p0``, ``K - 1`` the target).
    betas : array_like (K,)
    log_weights : array_like (n,), optional
        Unnormalized log importance weights (AIS); normalized within each rung. Without them
        every draw counts once (MBAR).
    unit : array_like of int (n,), optional
        Independent unit (chain) of every draw, for the standard error; default: every draw its
        own unit.
    log_z0 : array_like (K,), optional
        Starting value (e.g. a cheaper estimate).
    """
    delta = np.asarray(delta, dtype=float).ravel()
    rung = np.asarray(rung, dtype=int).ravel()
    betas = np.asarray(betas, dtype=float)
    n_rungs = betas.size
    if delta.size != rung.size or np.any((rung < 0) | (rung >= n_rungs)):
        raise EvidenceInputError("delta and rung must have equal length, with 0 <= rung < K.")
    counts = np.bincount(rung, minlength=n_rungs).astype(float)
    if np.any(counts == 0):
        empty = np.flatnonzero(counts == 0)
        raise EvidenceInputError(
            f"Rungs {empty[:10].tolist()} have no draws; the multistate equation cannot identify "
            f"their normalizing constants. Run longer or use fewer rungs."
        )
    weighted = log_weights is not None
    if weighted:
        log_weights = np.asarray(log_weights, dtype=float).ravel()
        top = np.full(n_rungs, -np.inf)
        np.maximum.at(top, rung, log_weights)
        scaled = np.exp(log_weights - top[rung])
        omega = scaled / np.bincount(rung, weights=scaled, minlength=n_rungs)[rung] / n_rungs
    else:
        omega = np.full(delta.size, 1.0 / delta.size)
    nu = np.bincount(rung, weights=omega, minlength=n_rungs)
    objective = _Objective(delta, betas, omega, nu)

    log_nu = np.log(nu)
    a0 = np.zeros(n_rungs - 1) if log_z0 is None else (log_nu - log_nu[0] - np.asarray(log_z0))[1:]
    if n_rungs <= EXPLICIT_HESSIAN_MAX_RUNGS:  # Newton steps with the full Hessian
        result = minimize(
            objective.value_and_grad, a0, jac=True, hess=objective.hessian,
            method="trust-exact", options={"gtol": tol, "maxiter": maxiter},
        )  # fmt: skip
    else:  # Hessian-vector products only: O(n K) memory and time per product
        result = minimize(
            objective.value_and_grad, a0, jac=True, hessp=objective.hessp,
            method="trust-ncg", options={"gtol": tol, "maxiter": maxiter},
        )  # fmt: skip
    a_free = result.x
    grad_norm = float(np.max(np.abs(objective.value_and_grad(a_free)[1])))
    if grad_norm > 1e-6:
        raise ConvergenceError(
            f"The multistate equation did not converge ({result.message}; max |score| = "
            f"{grad_norm:.3g}). The rungs may not overlap: add rungs or draws."
        )
    a = np.concatenate([[0.0], a_free])
    log_z = log_nu - log_nu[0] - a

    se = _sandwich_se(objective, a_free, rung, counts, unit, weighted)
    return MultistateSolution(log_z, se, int(result.nit), grad_norm)


def _sandwich_se(objective, a_free, rung, counts, unit, weighted) -> float:
    n_rungs = objective.betas.size
    n_free = n_rungs - 1
    e_last = np.zeros(n_free)
    e_last[-1] = 1.0
    if n_rungs <= EXPLICIT_HESSIAN_MAX_RUNGS:
        v = np.linalg.solve(objective.hessian(a_free), e_last)
    else:
        operator = LinearOperator((n_free, n_free), matvec=lambda v: objective.hessp(a_free, v))
        v, info = cg(operator, e_last, rtol=1e-10, maxiter=10 * n_free + 100)
        if info != 0:
            return float("nan")
    unit = np.arange(rung.size) if unit is None else np.asarray(unit).ravel()
    _, unit = np.unique(unit, return_inverse=True)
    n_units = unit.max() + 1
    # per-draw score omega_i (p_i - centre_i), projected on v: centre = e_k(i) (random labels)
    # or the rung's weighted mean of p (weights normalized within a rung)
    omega, nu = objective.omega, objective.nu
    proj = np.zeros(rung.size)
    v_full = np.concatenate([[0.0], v])
    for sl in objective._chunks():
        proj[sl] = objective.probabilities(a_free, sl) @ v_full
    if weighted:
        mean_pv = np.bincount(rung, weights=omega * proj, minlength=n_rungs) / nu
        score = omega * (proj - mean_pv[rung])
        influence = np.bincount(unit, weights=score, minlength=n_units)
    else:
        score = omega * (proj - v_full[rung])
        influence = np.bincount(unit, weights=score, minlength=n_units)
        # log nu_K - log nu_1 from the labels: (n_uK - nu_K m_u) / n_K - (n_u1 - nu_1 m_u) / n_1
        total = rung.size
        m_u = np.bincount(unit, minlength=n_units)
        for k, sign in ((n_rungs - 1, 1.0), (0, -1.0)):
            n_uk = np.bincount(unit, weights=(rung == k).astype(float), minlength=n_units)
            influence += sign * (n_uk - counts[k] / total * m_u) / counts[k]
    correction = n_units / (n_units - 1) if n_units > 1 else np.nan
    return float(np.sqrt(correction * np.sum(influence**2)))
