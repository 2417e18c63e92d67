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

Cost. Every sum over draws is a sum of ``exp(a_k + beta_k Delta_i)``. Grouping the draws in
bins of width ``h = 1 / (8 max_k beta_k)`` in ``Delta``, with centre ``c`` and
``delta = Delta - c``, ``exp(beta_k delta) = sum_{m < M} (beta_k delta)^m / m!`` with
``|beta_k delta| <= 1/16``, so ``M = 9`` terms leave a relative error below ``1e-16`` whatever
``a`` is: the expansion is exact to rounding. The sums over a bin's draws then factor into
``M`` moments of its draws times ``M`` moments of its rungs (the fast-multipole idea for
exponential sums), and a pass costs ``O(B K M + n M)`` for ``B`` bins instead of ``O(n K)``; a
bin with fewer than ``M`` draws is summed directly. The powers of ``delta`` are stored one row
per power and the draws sorted by bin, so each bin's sums are one vector-matrix product. MBAR on
a default tempered run (``10^5`` draws, 100 rungs, ``Delta`` spread over 500 nats) went from
11.6 s to about 0.05 s. On the 10-D mixture's default tempered run (700,000 draws, 13 rungs,
about 1.8 s) it took 0.58 s with bins of width ``1 / max beta`` (14 terms), draw-major powers
and sparse bin sums, and takes 0.17-0.27 s now (``benchmarks/estimator_overhead.py``).
"""

from __future__ import annotations

from math import factorial
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.sparse import csr_matrix
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import logsumexp

from pm_evidence.exceptions import ConvergenceError, EvidenceInputError

__all__ = ["MultistateSolution", "solve_multistate"]

CHUNK = 2**21  # entries of a (draw x rung) matrix held at once, for draws summed directly
EXPLICIT_HESSIAN_MAX_RUNGS = 300
BINS_PER_UNIT = 8  # bins of width 1 / (BINS_PER_UNIT max beta): |beta delta| <= 1/16
TAYLOR_TERMS = 9  # M: (1/16)^M / M! < 1e-16
# The Hessian only steers Newton's steps and scales the SE: 5 terms, (1/16)^5 / 5! < 1e-7
# relative to each term, keep both well below any Monte Carlo error at lower cost.
HESSIAN_TERMS = 5
MAX_STEP = 10.0  # largest change of any log Z_k in one Newton step
LOOP_MAX_BINS = 2000  # up to this many bins, per-bin products beat one repeated copy


class MultistateSolution(NamedTuple):
    log_z: np.ndarray  # (K,), log Z_1 = 0
    se: float  # standard error of log Z_K
    n_iter: int
    gradient_norm: float


class _Sums(NamedTuple):
    """Everything a pass at one ``a`` needs (module docstring): per bin ``m_b`` (largest
    ``a_k + beta_k c_b``) and ``E_bk = exp(a_k + beta_k c_b - m_b)``; per binned draw
    ``S_i = sum_k E_bk exp(beta_k delta_i)`` (so ``log sum_k exp(a_k + beta_k Delta_i) =
    m_b + log S_i``); per directly summed draw its log sum."""

    top: np.ndarray  # (B,)
    scaled: np.ndarray  # (B, K)
    s: np.ndarray  # (n_binned,)
    lse_direct: np.ndarray  # (n_direct,)


class _Objective:
    """``F``, its gradient, Hessian and Hessian-vector products (module docstring)."""

    def __init__(self, delta, betas, omega, nu):
        self.betas, self.nu = betas, nu
        self.n_rungs = betas.size
        if np.all(omega > 0) and np.all(delta > -np.inf):  # MBAR: every draw, all finite
            finite, outside = np.arange(delta.size), np.empty(0, dtype=int)
        else:
            keep = np.flatnonzero(omega > 0)  # zero weight: no term in F
            outside = keep[delta[keep] == -np.inf]  # only the beta = 0 rung (0) has a term
            finite = keep[delta[keep] > -np.inf]
        self.w_outside, self.outside = omega[outside], outside
        width = 1.0 / (BINS_PER_UNIT * np.max(np.abs(betas)))
        cell = np.floor(delta[finite] / width)
        span = cell.max() - cell.min() if cell.size else 0.0
        # a stable sort of small integers is a radix sort in NumPy: O(n) instead of O(n log n)
        keys = (cell - cell.min()).astype(np.int16) if span < 2**15 else cell
        order = np.argsort(keys, kind="stable")
        finite, cell = finite[order], cell[order]
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        sizes = np.diff(np.r_[starts, cell.size])
        is_dense = sizes >= TAYLOR_TERMS
        dense = np.repeat(is_dense, sizes)
        self.direct = finite[~dense]
        self.binned = finite[dense]
        self.n_bins = int(np.sum(is_dense))
        self.bin_sizes = sizes[is_dense]
        self.bin_of = np.repeat(np.arange(self.n_bins), self.bin_sizes)
        bin_starts = np.r_[0, np.cumsum(self.bin_sizes)[:-1]].astype(int)
        stops = bin_starts + self.bin_sizes
        self.bin_bounds = list(zip(bin_starts.tolist(), stops.tolist(), strict=True))
        self.centre = (cell[starts[is_dense]] + 0.5) * width
        offset = delta[self.binned] - np.repeat(self.centre, self.bin_sizes)
        # delta^q of every draw, one row per power (the Hessian multiplies two series:
        # q < 2 M_H - 1); rows are contiguous, so each power is one vector product
        powers = np.empty((max(TAYLOR_TERMS, 2 * HESSIAN_TERMS - 1), offset.size))
        powers[0] = 1.0
        for q in range(1, powers.shape[0]):
            np.multiply(powers[q - 1], offset, out=powers[q])
        self.offset_powers = powers  # (max(M, 2 M_H - 1), n_binned); 1 / m! goes with moments
        self.inverse_factorial = np.array([1.0 / factorial(m) for m in range(TAYLOR_TERMS)])
        self.beta_powers = betas[:, None] ** np.arange(TAYLOR_TERMS)  # (K, M), 0^0 = 1
        self.delta_direct = delta[self.direct]
        self.w_binned, self.w_direct = omega[self.binned], omega[self.direct]
        self.step = max(1, CHUNK // self.n_rungs)
        self._last = None
        self._last_hessian = None
        self._last_counts = None

    # ------------------------------------------------------------------ one pass at a
    def _sums(self, a) -> _Sums:
        if self._last is not None and np.array_equal(self._last[0], a):
            return self._last[1]
        logits = a[None, :] + np.multiply.outer(self.centre, self.betas)
        top = logits.max(axis=1) if self.n_bins else np.empty(0)
        scaled = np.exp(logits - top[:, None])
        moments = scaled @ self.beta_powers  # (B, M): sum_k E_bk beta_k^m
        s = self._series(moments)
        lse_direct = np.concatenate(
            [logsumexp(self._direct_logits(a, sl), axis=1) for sl in self._direct_chunks()]
            or [np.empty(0)]
        )
        sums = _Sums(top, scaled, s, lse_direct)
        self._last = (a.copy(), sums)
        return sums

    def _direct_chunks(self):
        for start in range(0, self.delta_direct.size, self.step):
            yield slice(start, start + self.step)

    def _direct_logits(self, a, sl):
        return a[None, :] + np.multiply.outer(self.delta_direct[sl], self.betas)

    def _series(self, moments: np.ndarray) -> np.ndarray:
        """``sum_m delta_i^m / m! moments[b(i), m]`` for every binned draw (draws are sorted by
        bin: one vector-matrix product per bin, or, with many bins, one pass over a copy of
        ``moments`` repeated per draw)."""
        powers = self.offset_powers[:TAYLOR_TERMS]
        scaled = moments * self.inverse_factorial
        if self.n_bins > LOOP_MAX_BINS:
            return np.einsum("mi,im->i", powers, np.repeat(scaled, self.bin_sizes, axis=0))
        out = np.empty(powers.shape[1])
        for b, (start, stop) in enumerate(self.bin_bounds):
            out[start:stop] = scaled[b] @ powers[:, start:stop]
        return out

    def _bin_totals(self, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``(B, q)``: per bin, the sums over its draws of ``weights[i] * rows[q, i]``."""
        if not self.n_bins:
            return np.zeros((0, rows.shape[0]))
        if self.n_bins <= LOOP_MAX_BINS:
            out = np.empty((self.n_bins, rows.shape[0]))
            for b, (start, stop) in enumerate(self.bin_bounds):
                out[b] = rows[:, start:stop] @ weights[start:stop]
            return out
        # (bin, draw) incidence, CSR: with many bins, per-bin sums are one sparse product
        indptr = np.r_[0, np.cumsum(self.bin_sizes)]
        incidence = csr_matrix(
            (weights, np.arange(weights.size), indptr), shape=(self.n_bins, weights.size)
        )
        return incidence @ rows.T

    def _weighted_p(self, a, sums: _Sums, w_binned, w_direct, w_outside) -> np.ndarray:
        """``sum_i w_i p_ik`` for any per-draw weights ``w`` (``p_i = softmax(a + beta Delta_i)``)."""
        powers = self.offset_powers[:TAYLOR_TERMS]
        mu = self._bin_totals(powers, w_binned / sums.s) * self.inverse_factorial  # (B, M)
        out = np.sum(sums.scaled * (mu @ self.beta_powers.T), axis=0)
        for sl in self._direct_chunks():
            logits = self._direct_logits(a, sl)
            out += w_direct[sl] @ np.exp(logits - sums.lse_direct[sl, None])
        out[0] += np.sum(w_outside)
        return out

    def _projections(self, a, sums: _Sums, v) -> tuple[np.ndarray, np.ndarray]:
        """``p_i . v`` for the binned and the directly summed draws."""
        moments = (sums.scaled * v) @ self.beta_powers  # (B, M)
        binned = self._series(moments) / sums.s
        direct = np.concatenate(
            [np.exp(self._direct_logits(a, sl) - sums.lse_direct[sl, None]) @ v
             for sl in self._direct_chunks()] or [np.empty(0)]
        )  # fmt: skip
        return binned, direct

    # ------------------------------------------------------------------ objective
    def value_and_grad(self, a_free):
        a = np.concatenate([[0.0], a_free])
        sums = self._sums(a)
        lse_binned = sums.top[self.bin_of] + np.log(sums.s)
        value = (
            np.dot(self.w_binned, lse_binned)
            + np.dot(self.w_direct, sums.lse_direct)
            + np.sum(self.w_outside) * a[0]
            - np.dot(self.nu, a)
        )
        return value, (self._expected_counts(a, sums) - self.nu)[1:]

    def _expected_counts(self, a, sums: _Sums) -> np.ndarray:
        """``sum_i omega_i p_ik`` (the gradient's and the Hessian's diagonal), kept for the
        last ``a`` (Newton asks for both at the same point)."""
        if self._last_counts is not None and np.array_equal(self._last_counts[0], a):
            return self._last_counts[1]
        counts = self._weighted_p(a, sums, self.w_binned, self.w_direct, self.w_outside)
        self._last_counts = (a.copy(), counts)
        return counts

    def hessian(self, a_free, *, reuse_within: float = 0.0):
        """Explicit ``(K-1) x (K-1)`` Hessian ``sum_i omega_i (diag p_i - p_i p_i^T)``; the last
        one computed is returned when ``a`` moved by at most ``reuse_within`` since (it changes
        by about as much, relatively)."""
        a = np.concatenate([[0.0], a_free])
        if self._last_hessian is not None and (
            np.max(np.abs(self._last_hessian[0] - a)) <= reuse_within
        ):
            return self._last_hessian[1]
        sums = self._sums(a)
        k = self.n_rungs
        out = np.diag(self._expected_counts(a, sums))
        if self.n_bins:
            # sum_i w_i/S_i^2 exp((beta_k + beta_l) delta_i) per bin: a Hankel matrix of moments
            rows = self.offset_powers[: 2 * HESSIAN_TERMS - 1]
            hankel = self._bin_totals(rows, self.w_binned / sums.s**2)
            j = np.arange(HESSIAN_TERMS)
            factorials = self.inverse_factorial[:HESSIAN_TERMS]
            pairs = hankel[:, j[:, None] + j[None, :]] * np.outer(factorials, factorials)
            u = sums.scaled[:, None, :] * self.beta_powers.T[None, :HESSIAN_TERMS, :]
            out -= u.reshape(-1, k).T @ (pairs @ u).reshape(-1, k)
        for sl in self._direct_chunks():
            p = np.exp(self._direct_logits(a, sl) - sums.lse_direct[sl, None])
            out -= (p * self.w_direct[sl, None]).T @ p
        out[0, 0] -= np.sum(self.w_outside)
        self._last_hessian = (a.copy(), out[1:, 1:])
        return out[1:, 1:]

    def hessp(self, a_free, v_free):
        a = np.concatenate([[0.0], a_free])
        v = np.concatenate([[0.0], v_free])
        sums = self._sums(a)
        pv_binned, pv_direct = self._projections(a, sums, v)
        diagonal = self._expected_counts(a, sums)
        outer = self._weighted_p(
            a, sums, self.w_binned * pv_binned, self.w_direct * pv_direct, self.w_outside * v[0]
        )
        return (diagonal * v - outer)[1:]

    def projections(self, a_free, v_full, n_draws: int) -> np.ndarray:
        """``p_i . v`` for every draw, in the caller's order (0 for draws of zero weight)."""
        a = np.concatenate([[0.0], a_free])
        binned, direct = self._projections(a, self._sums(a), v_full)
        out = np.zeros(n_draws)
        out[self.binned], out[self.direct], out[self.outside] = binned, direct, v_full[0]
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
    if delta.size != rung.size or np.any((rung < 0) | (rung >= n_rungs)):
        raise EvidenceInputError("delta and rung must have equal length, with 0 <= rung < K.")
    if betas.ndim != 1 or np.any(np.diff(betas) <= 0):
        raise EvidenceInputError("betas must be a 1-D array increasing strictly.")
    if np.any(np.isnan(delta) | (delta == np.inf)) or (
        betas[0] != 0.0 and np.any(delta == -np.inf)
    ):
        raise EvidenceInputError(
            "Delta must be finite, or -inf (a draw outside the target's support) only with a "
            "rung at beta = 0."
        )
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


def _newton(objective: _Objective, a0, tol: float, maxiter: int):
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
    if not (
        unit.dtype.kind in "iu" and unit.min() >= 0 and np.all(np.bincount(unit) > 0)
    ):  # labels other than 0..U-1, each used: number them so
        _, unit = np.unique(unit, return_inverse=True)
    n_units = unit.max() + 1
    # per-draw score omega_i (p_i - centre_i), projected on v: centre = e_k(i) (random labels)
    # or the rung's weighted mean of p (weights normalized within a rung)
    nu = objective.nu
    v_full = np.concatenate([[0.0], v])
    proj = objective.projections(a_free, v_full, rung.size)
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
