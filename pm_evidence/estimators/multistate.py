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

The minimum is found by Newton's method with a backtracking line search for up to 300 rungs
(scipy's ``trust-exact`` if that fails), and beyond by Newton-CG with exact Hessian-vector
products (no ``K x K`` matrix). The
standard error of ``log Z_K`` is the cluster-robust sandwich ``sum_u (v . G_u + L_u)^2`` over
independent units (chains), with ``v = H^{-1} e_K``, ``G_u`` unit ``u``'s score and ``L_u`` its
influence on ``log nu_K - log nu_1`` (zero for rungs of fixed size).

Cost: the draws are reduced once to a few quadrature points. Every sum over draws in ``F``, its
gradient, Hessian and Hessian-vector products is ``sum_i omega_i g(Delta_i)`` for a function
``g`` of ``Delta`` alone (``log sum_k e^{a_k + beta_k Delta}``, ``softmax_k``, their products).
Every such ``g`` is analytic in the strip ``|Im Delta| < pi / (2 max_k beta_k)``: there every
term ``e^{beta_k Delta}`` has a positive real part, so their sum has no zero. The draws are
grouped in bins of width ``h = 1 / (16 max_k beta_k)``; on a bin, ``g`` is interpolated at the
``P = 8`` Chebyshev points, and the bin's sum becomes ``sum_j W_bj g(x_bj)`` with weights from
the bin's Chebyshev moments ``sum_i omega_i T_q(t_i)`` (interpolatory quadrature; ``t_i`` is the
draw's place in the bin, scaled to ``[-1, 1]``). Inside the Bernstein ellipse of the bin whose
half-height is ``1 / max beta`` (``rho = 32 + sqrt(32^2 + 1) = 64``), ``|g|`` stays below
``1 / cos 1 < 2`` for the softmax, so the error is below ``4 * 2 * rho^-P / (rho - 1) < 1e-15``
of the total weight whatever ``a`` is: the reduction is exact to rounding (tested against the
plain sums). A bin with at most ``P`` draws keeps them. Each Newton pass then costs
``O(m K)`` for ``m`` points (about ``P`` per occupied bin) instead of ``O(n K)``; the draws are
read only twice, once to take the moments and once to evaluate the SE's per-draw projections
(by the same interpolant). On a default tempered run hundreds of thousands of draws become a
few thousand points, and MBAR costs a small fraction of the run (measured: docs/benchmarks.rst,
Measurements behind the defaults).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.linalg import LinearOperator, cg

from pm_evidence.core.exceptions import ConvergenceError, EvidenceInputError

__all__ = ["MultistateObjective", "MultistateSolution", "QuadraturePoints", "solve_multistate"]

CHUNK = 2**21  # entries of a (point x rung) matrix held at once
EXPLICIT_HESSIAN_MAX_RUNGS = 300
BINS_PER_UNIT = 16  # bins of width 1 / (BINS_PER_UNIT max beta)
CHEBYSHEV_POINTS = 8  # P: error below rho^-P with rho = 2 BINS_PER_UNIT + sqrt(...) = 64
MAX_STEP = 10.0  # largest change of any log Z_k in one Newton step
# cells of width h numbered by a dense array when the draws span at most this many
DENSE_CELL_SPAN = 2**24


class MultistateSolution(NamedTuple):
    log_z: np.ndarray  # (K,), log Z_1 = 0
    se: float  # standard error of log Z_K
    n_iter: int
    gradient_norm: float


def _chebyshev_rows(t: np.ndarray, n_terms: int) -> np.ndarray:
    """``(n_terms, len(t))``: ``T_q(t)`` by the three-term recurrence."""
    rows = np.empty((n_terms, t.size))
    rows[0] = 1.0
    if n_terms > 1:
        rows[1] = t
    for q in range(2, n_terms):
        np.multiply(rows[q - 1], 2.0 * t, out=rows[q])
        rows[q] -= rows[q - 2]
    return rows


# T_r(t) = sum_q CHEBYSHEV_IN_POWERS[r, q] t^q (coefficients up to 2^(P-2) in size, so Chebyshev
# moments from power moments of t in [-1, 1] lose at most about two digits)
CHEBYSHEV_IN_POWERS = np.array(
    [
        np.pad(coefficients, (0, CHEBYSHEV_POINTS - coefficients.size))
        for coefficients in map(np.polynomial.chebyshev.cheb2poly, np.eye(CHEBYSHEV_POINTS))
    ]
)
CHEBYSHEV_NODES = np.cos(np.pi * (np.arange(CHEBYSHEV_POINTS) + 0.5) / CHEBYSHEV_POINTS)
# values at the nodes -> Chebyshev coefficients: f @ C^-1 with C[q, j] = T_q(t_j)
VALUES_TO_CHEBYSHEV = np.linalg.inv(_chebyshev_rows(CHEBYSHEV_NODES, CHEBYSHEV_POINTS))


class QuadraturePoints:
    """Finite draws ``(Delta_i, omega_i)`` reduced to points ``x_j`` and weights ``W_j`` with
    ``sum_j W_j g(x_j) = sum_i omega_i g(Delta_i)`` to rounding for every ``g`` the objective
    needs (module docstring); :meth:`at_draws` takes ``g`` at the points back to every draw.

    The draws are read in a few vector passes (their cells, one ``bincount`` per power for the
    power moments ``sum_i omega_i t_i^q`` of every bin, later Horner's rule for the interpolants
    at every draw) with few fresh arrays: draws of sparse cells go to an extra bin whose moments
    are dropped, so no array of draws is ever subset."""

    def __init__(self, delta: np.ndarray, omega: np.ndarray | float, width: float):
        n_points = CHEBYSHEV_POINTS
        self.n_draws = delta.size
        scaled = delta * (1.0 / width)
        floor = np.floor(scaled)
        t = scaled  # reused: t in [-1, 1), the draw's place in its cell, as precise as Delta
        t -= floor
        t *= 2.0
        t -= 1.0
        low = floor.min() if delta.size else 0.0
        floor -= low
        if not delta.size or floor.max() < DENSE_CELL_SPAN:
            index = floor.astype(np.intp)
            counts = np.bincount(index)
            cells = low + np.arange(counts.size)
        else:  # draws spread over very many cells: number the occupied ones
            cells, index, counts = np.unique(floor, return_inverse=True, return_counts=True)
            cells += low
        is_bin = counts > n_points  # at most as many draws as points: keep the draws
        n_bins = int(np.sum(is_bin))
        bin_number = np.where(is_bin, np.cumsum(is_bin) - 1, n_bins)  # n_bins: the kept draws
        self.bin_of = np.take(bin_number, index, mode="clip")  # "clip": no bounds check
        self.t = t
        has_direct = np.any((counts > 0) & ~is_bin)
        self.direct = (
            np.flatnonzero(self.bin_of == n_bins) if has_direct else np.empty(0, dtype=np.intp)
        )
        constant = np.ndim(omega) == 0
        moments = np.empty((n_bins + 1, n_points))
        if constant:  # MBAR: every draw counts the same
            moments[:, 0] = np.bincount(self.bin_of, minlength=n_bins + 1)
            row = t.copy()
        else:
            row = omega.copy()
            moments[:, 0] = np.bincount(self.bin_of, weights=row, minlength=n_bins + 1)
            row *= t
        for q in range(1, n_points):  # power moments sum_i omega_i t_i^q
            if q > 1:
                row *= t
            moments[:, q] = np.bincount(self.bin_of, weights=row, minlength=n_bins + 1)
        if constant:
            moments *= omega
        # interpolatory weights: W_b = C^-1 m_b for Chebyshev moments m_b
        node_w = (moments[:n_bins] @ CHEBYSHEV_IN_POWERS.T) @ VALUES_TO_CHEBYSHEV.T
        node_x = width * (cells[is_bin][:, None] + 0.5 + 0.5 * CHEBYSHEV_NODES[None, :])
        self.n_nodes = n_bins * n_points
        self.points = np.concatenate([node_x.ravel(), delta[self.direct]])
        direct_w = np.full(self.direct.size, omega) if constant else omega[self.direct]
        self.weights = np.concatenate([node_w.ravel(), direct_w])

    def at_draws(self, values: np.ndarray) -> np.ndarray:
        """``g`` at every draw from ``g`` at the points: the bins' interpolants (power
        coefficients, Horner's rule), the kept draws' own values."""
        chebyshev = values[: self.n_nodes].reshape(-1, CHEBYSHEV_POINTS) @ VALUES_TO_CHEBYSHEV
        power = np.zeros((CHEBYSHEV_POINTS, chebyshev.shape[0] + 1))  # last: the kept draws'
        power[:, :-1] = (chebyshev @ CHEBYSHEV_IN_POWERS).T  # row q: coefficients of t^q
        out = np.take(power[-1], self.bin_of, mode="clip")
        term = np.empty(self.n_draws)
        for q in range(CHEBYSHEV_POINTS - 2, -1, -1):
            out *= self.t
            out += np.take(power[q], self.bin_of, out=term, mode="clip")  # "clip": unbuffered
        out[self.direct] = values[self.n_nodes :]
        return out


class MultistateObjective:
    """``F``, its gradient, Hessian and Hessian-vector products (module docstring), from the
    draws' quadrature points."""

    def __init__(self, delta, betas, omega, nu):
        """``omega``: per-draw weights, or one float when every draw has the same weight."""
        self.betas, self.nu = betas, nu
        self.n_rungs = betas.size
        uniform = np.ndim(omega) == 0
        if (uniform or np.all(omega > 0)) and np.all(delta > -np.inf):  # MBAR: all finite
            finite, outside = slice(None), np.empty(0, dtype=int)
        else:
            keep = np.arange(delta.size) if uniform else np.flatnonzero(omega > 0)  # 0: no term
            outside = keep[delta[keep] == -np.inf]  # only the beta = 0 rung (0) has a term
            finite = keep[delta[keep] > -np.inf]
        self.finite, self.outside = finite, outside
        self.w_outside = float(omega * outside.size if uniform else np.sum(omega[outside]))
        finite_omega = omega if uniform else omega[finite]
        width = 1.0 / (BINS_PER_UNIT * np.max(np.abs(betas)))
        self.quadrature = QuadraturePoints(delta[finite], finite_omega, width)
        self.points, self.weights = self.quadrature.points, self.quadrature.weights
        self.step = max(1, CHUNK // self.n_rungs)
        self._last = None
        self._last_hessian = None

    def _probabilities(self, a):
        """Per chunk of points: its slice, ``log sum_k e^{a_k + beta_k x_j}`` and the softmax."""
        for start in range(0, self.points.size, self.step):
            sl = slice(start, start + self.step)
            logits = a[None, :] + np.multiply.outer(self.points[sl], self.betas)
            top = logits.max(axis=1, keepdims=True)  # finite: finite points, finite a
            lse = np.log(np.sum(np.exp(logits - top), axis=1)) + top[:, 0]
            yield sl, lse, np.exp(logits - lse[:, None])

    def _value_and_counts(self, a):
        """``F(a)`` and ``sum_i omega_i p_ik`` (the gradient's and the Hessian's diagonal), kept
        for the last ``a`` (Newton asks for the Hessian where it last asked for the value)."""
        if self._last is not None and np.array_equal(self._last[0], a):
            return self._last[1], self._last[2]
        value = self.w_outside * a[0] - np.dot(self.nu, a)
        counts = np.zeros(self.n_rungs)
        for sl, lse, p in self._probabilities(a):
            value += np.dot(self.weights[sl], lse)
            counts += self.weights[sl] @ p
        counts[0] += self.w_outside
        self._last = (a.copy(), value, counts)
        return value, counts

    # ------------------------------------------------------------------ objective
    def value_and_grad(self, a_free):
        a = np.concatenate([[0.0], a_free])
        value, counts = self._value_and_counts(a)
        return value, (counts - self.nu)[1:]

    def hessian(self, a_free, *, reuse_within: float = 0.0):
        """Explicit ``(K-1) x (K-1)`` Hessian ``sum_i omega_i (diag p_i - p_i p_i^T)``; the last
        one computed is returned when ``a`` moved by at most ``reuse_within`` since (it changes
        by about as much, relatively)."""
        a = np.concatenate([[0.0], a_free])
        if self._last_hessian is not None and (
            np.max(np.abs(self._last_hessian[0] - a)) <= reuse_within
        ):
            return self._last_hessian[1]
        out = np.diag(self._value_and_counts(a)[1])
        for sl, _, p in self._probabilities(a):
            out -= (p * self.weights[sl, None]).T @ p
        out[0, 0] -= self.w_outside
        self._last_hessian = (a.copy(), out[1:, 1:])
        return out[1:, 1:]

    def hessp(self, a_free, v_free):
        a = np.concatenate([[0.0], a_free])
        v = np.concatenate([[0.0], v_free])
        out = self._value_and_counts(a)[1] * v
        for sl, _, p in self._probabilities(a):
            out -= (self.weights[sl] * (p @ v)) @ p
        out[0] -= self.w_outside * v[0]
        return out[1:]

    def projections(self, a_free, v_full, n_draws: int) -> np.ndarray:
        """``p_i . v`` for every draw, in the caller's order (0 for draws of zero weight)."""
        a = np.concatenate([[0.0], a_free])
        at_points = np.concatenate(
            [p @ v_full for _, _, p in self._probabilities(a)] or [np.empty(0)]
        )
        out = np.zeros(n_draws)
        out[self.finite] = self.quadrature.at_draws(at_points)
        out[self.outside] = v_full[0]
        return out


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
    if delta.size != rung.size or (rung.size and (rung.min() < 0 or rung.max() >= n_rungs)):
        raise EvidenceInputError("delta and rung must have equal length, with 0 <= rung < K.")
    if betas.ndim != 1 or np.any(np.diff(betas) <= 0):
        raise EvidenceInputError("betas must be a 1-D array increasing strictly.")
    if not np.all(delta < np.inf) or (betas[0] != 0.0 and np.any(delta == -np.inf)):  # NaN: False
        raise EvidenceInputError(
            "Delta must be finite, or -inf (a draw outside the target's support) only with a "
            "rung at beta = 0."
        )
    counts = np.bincount(rung, minlength=n_rungs).astype(float)
    if np.any(counts == 0):
        empty = np.flatnonzero(counts == 0)
        raise ConvergenceError(  # the run's outcome, not the user's input
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
        nu = np.bincount(rung, weights=omega, minlength=n_rungs)
    else:
        omega = 1.0 / delta.size  # every draw alike
        nu = counts / delta.size
    objective = MultistateObjective(delta, betas, omega, nu)

    log_nu = np.log(nu)
    start = None if log_z0 is None else np.asarray(log_z0, dtype=float)
    if start is None or start.shape != (n_rungs,) or not np.all(np.isfinite(start)):
        start = np.zeros(n_rungs)  # only a starting point: any finite one converges
    a0 = (log_nu - log_nu[0] - start)[1:]
    a_free, n_iter, message, grad = None, 0, "", None
    if n_rungs <= EXPLICIT_HESSIAN_MAX_RUNGS:  # Newton steps with the full Hessian
        a_free, n_iter, grad = _newton(objective, a0, tol, maxiter)
        if a_free is None:  # not converged: a trust region copes with a near-singular Hessian
            result = minimize(
                objective.value_and_grad, a0, jac=True, hess=objective.hessian,
                method="trust-exact", options={"gtol": tol, "maxiter": maxiter},
            )  # fmt: skip
            a_free, n_iter, message, grad = result.x, n_iter + int(result.nit), result.message, None
    else:  # Hessian-vector products only: no K x K matrix
        result = minimize(
            objective.value_and_grad, a0, jac=True, hessp=objective.hessp,
            method="trust-ncg", options={"gtol": tol, "maxiter": maxiter},
        )  # fmt: skip
        a_free, n_iter, message = result.x, int(result.nit), result.message
    grad = objective.value_and_grad(a_free)[1] if grad is None else grad
    grad_norm = float(np.max(np.abs(grad)))
    if grad_norm > 1e-6:
        raise ConvergenceError(
            f"The multistate equation did not converge ({message}; max |score| = "
            f"{grad_norm:.3g}). The rungs may not overlap: add rungs or draws."
        )
    a = np.concatenate([[0.0], a_free])
    log_z = log_nu - log_nu[0] - a

    se = _sandwich_se(objective, a_free, rung, counts, unit, weighted, omega)
    return MultistateSolution(log_z, se, n_iter, grad_norm)


def _newton(objective: MultistateObjective, a0, tol: float, maxiter: int):
    """Newton's method on the convex ``F``: steps capped at ``MAX_STEP`` (the Hessian is nearly
    singular far from the solution, where some rungs get no probability), a backtracking
    (Armijo) line search, and, once ``F`` changes by no more than its rounding, steps accepted
    when they shrink the gradient. Returns ``(a, iterations, gradient)`` once
    ``|grad F| < tol``, or ``(None, iterations, None)``."""
    a = np.array(a0, dtype=float)
    value, grad = objective.value_and_grad(a)
    for iteration in range(maxiter + 1):
        norm = np.linalg.norm(grad)
        if norm < tol:
            return a, iteration, grad
        hessian = objective.hessian(a)
        ridge = 1e-12 * max(float(np.max(np.diag(hessian))), 1e-300)
        try:
            step = -np.linalg.solve(hessian + ridge * np.eye(grad.size), grad)
        except np.linalg.LinAlgError:
            return None, iteration, None
        step *= min(1.0, MAX_STEP / max(float(np.max(np.abs(step))), 1e-300))
        slope, t = float(np.dot(grad, step)), 1.0
        while True:
            new_value, new_grad = objective.value_and_grad(a + t * step)
            if new_value <= value + 1e-4 * t * slope:
                break
            rounding = abs(new_value - value) <= 1e-13 * max(1.0, abs(value))
            if rounding and np.linalg.norm(new_grad) < norm:
                break
            t /= 2.0
            if t < 1e-10:
                return None, iteration, None
        a, value, grad = a + t * step, new_value, new_grad
    return None, maxiter, None


def _sandwich_se(objective, a_free, rung, counts, unit, weighted, omega) -> float:
    n_rungs = objective.betas.size
    n_free = n_rungs - 1
    e_last = np.zeros(n_free)
    e_last[-1] = 1.0
    if n_rungs <= EXPLICIT_HESSIAN_MAX_RUNGS:
        # Newton's last Hessian, a step of at most 1e-6 away: the SE to about 1e-6, relatively
        v = np.linalg.solve(objective.hessian(a_free, reuse_within=1e-6), e_last)
    else:
        operator = LinearOperator((n_free, n_free), matvec=lambda v: objective.hessp(a_free, v))
        v, info = cg(operator, e_last, rtol=1e-10, maxiter=10 * n_free + 100)
        if info != 0:
            return float("nan")
    unit = np.arange(rung.size) if unit is None else np.asarray(unit).ravel()
    m_u = np.bincount(unit) if unit.dtype.kind in "iu" and unit.min() >= 0 else None
    if m_u is None or not np.all(m_u > 0):  # labels other than 0..U-1, each used: number them
        _, unit, m_u = np.unique(unit, return_inverse=True, return_counts=True)
    n_units = m_u.size
    # per-draw score omega_i (p_i - centre_i), projected on v: centre = e_k(i) (random labels)
    # or the rung's weighted mean of p (weights normalized within a rung)
    nu = objective.nu
    v_full = np.concatenate([[0.0], v])
    proj = objective.projections(a_free, v_full, rung.size)
    if weighted:
        mean_pv = np.bincount(rung, weights=omega * proj, minlength=n_rungs) / nu
        proj -= mean_pv[rung]
        proj *= omega
        influence = np.bincount(unit, weights=proj, minlength=n_units)
    else:  # omega = 1 / n
        proj -= v_full[rung]
        influence = np.bincount(unit, weights=proj, minlength=n_units) * omega
        # log nu_K - log nu_1 from the labels: (n_uK - nu_K m_u) / n_K - (n_u1 - nu_1 m_u) / n_1
        total = rung.size
        for k, sign in ((n_rungs - 1, 1.0), (0, -1.0)):
            n_uk = np.bincount(unit[rung == k], minlength=n_units)
            influence += sign * (n_uk - counts[k] / total * m_u) / counts[k]
    correction = n_units / (n_units - 1) if n_units > 1 else np.nan
    return float(np.sqrt(correction * np.sum(influence**2)))
