r"""The ratio-matching estimating equation shared by discriminance sampling and bridge sampling.

With ``l(x) = f(x) / p0(x)``, target draws ``x_1^i ~ f/Z`` (``n1`` of them) and reference draws
``x_0^j ~ p0`` (``n0``), and sample-size weights ``s1 + s0 = 1``, define the classifier

.. math:: \pi_c(x) = \frac{s_1 l(x)}{s_1 l(x) + s_0 c}
          = \operatorname{expit}\big(\log l(x) + \log s_1 - \log s_0 - \log c\big).

Discriminance sampling (seed 000 eq. (3), generalized to unequal sizes by the offset
``log(s1/s0)``) and the optimal bridge of Meng & Wong (1996, eq. 4.1) both estimate ``Z`` as
the root in ``c`` of

.. math:: h(\log c) = s_0\,\overline{\pi_c}^{(0)} - s_1\,\overline{(1-\pi_c)}^{(1)} = 0,

where bars are sample means over reference (0) and target (1) draws. With ``s_k = n_k/(n_0+n_1)``
this is exactly the conditional-likelihood score ``sum_i pi_c(x^i) = n1`` of seed 000 §4; the
Meng-Wong fixed point ``c = mean0[l/(s1 l + s0 c)] / mean1[1/(s1 l + s0 c)]`` is the same equation
rearranged. ``h`` decreases in ``log c``, so the root is unique whenever the two samples overlap.

This module solves it two ways: a bracketing root finder in ``log c`` (scipy's ``brentq``), and
the Meng-Wong iteration, which raises :class:`~pm_evidence.core.exceptions.ConvergenceError` when it
does not converge; and, for many weighted equations at once (annealed discriminance sampling's
rung pairs), by a safeguarded Newton iteration vectorized over rows
(``solve_weighted_ratio_matching_rows``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from pm_evidence.core.exceptions import ConvergenceError, EvidenceInputError, OverlapError
from pm_evidence.core.utils import log_sum_exp, normalized_weights

__all__ = [
    "RatioMatchingSolution",
    "classifier_probabilities",
    "solve_ratio_matching",
    "solve_weighted_ratio_matching_rows",
]

SOLVERS = ("bracket", "iterate")


class RatioMatchingSolution(NamedTuple):
    """Root ``log_c`` of the ratio-matching equation and the classifier at the root."""

    log_c: float
    n_iter: int
    pi_target: np.ndarray  # pi_c(x) at target draws, same shape as the input
    pi_reference: np.ndarray  # pi_c(x) at reference draws
    log_s1: float
    log_s0: float
    gamma: float  # estimated E[var(y | x)] = mean of pi (1 - pi) over the pooled draws


def classifier_probabilities(log_l, log_c, log_s1, log_s0) -> np.ndarray:
    """``pi_c(x) = expit(log l(x) + log s1 - log s0 - log c)``."""
    return expit(np.asarray(log_l) + log_s1 - log_s0 - log_c)


def _estimating_function(
    log_c, log_l_target, log_l_reference, log_s1, log_s0, w_target=None, w_reference=None
) -> float:
    pi0 = classifier_probabilities(log_l_reference, log_c, log_s1, log_s0)
    pi1 = classifier_probabilities(log_l_target, log_c, log_s1, log_s0)
    mean0 = pi0.mean() if w_reference is None else np.dot(w_reference, pi0)
    mean1 = (1.0 - pi1).mean() if w_target is None else np.dot(w_target, 1.0 - pi1)
    return float(np.exp(log_s0) * mean0 - np.exp(log_s1) * mean1)


def _bracket(log_l_target, log_l_reference, log_s1, log_s0, args) -> tuple[float, float]:
    finite = np.concatenate([log_l_target.ravel(), log_l_reference[np.isfinite(log_l_reference)]])
    offset = log_s1 - log_s0
    lo, hi = finite.min() + offset - 40.0, finite.max() + offset + 40.0
    for _ in range(20):  # widen until the sign changes (it always does eventually)
        if _estimating_function(lo, *args) > 0 and _estimating_function(hi, *args) < 0:
            return lo, hi
        lo, hi = lo - 40.0, hi + 40.0
    raise ConvergenceError("Could not bracket the root of the ratio-matching equation.")


def _meng_wong_iteration(log_l_target, log_l_reference, log_s1, log_s0, log_c0, tol, maxiter):
    """Fixed-point iteration of Meng & Wong (1996, eq. 4.1) in log space, on ``log c - log_c0``.

    The iterates are taken relative to the starting value, so that they are of order one and
    the absolute ``tol`` can be met at any ``log Z``: at ``log Z = -1.4e6`` consecutive doubles
    are 2.3e-10 apart, and iterates of ``log c`` itself alternated between two of them, never
    within 1e-10 of each other (a normal mean with a million observations)."""
    shift = log_c0
    log_l_target, log_l_reference = log_l_target - shift, log_l_reference - shift
    log_c = 0.0
    history = []
    for it in range(1, maxiter + 1):
        denom0 = np.logaddexp(log_s1 + log_l_reference, log_s0 + log_c)
        denom1 = np.logaddexp(log_s1 + log_l_target, log_s0 + log_c)
        numerator = log_sum_exp(log_l_reference - denom0) - np.log(log_l_reference.size)
        denominator = log_sum_exp(-denom1) - np.log(log_l_target.size)
        new = float(numerator - denominator)
        if not np.isfinite(new):
            raise ConvergenceError(
                f"The bridge iteration produced a non-finite value at iteration {it} "
                f"(last log c = {shift + log_c:.6g}); the reference and target barely overlap."
            )
        history.append(new)
        if abs(new - log_c) < tol:
            return shift + new, it
        log_c = new
    raise ConvergenceError(
        f"The bridge-sampling iteration did not converge in {maxiter} iterations "
        f"(tolerance {tol:g} on log Z); last iterates of log Z: "
        f"{[round(shift + v, 6) for v in history[-3:]]}. Increase maxiter, use more draws, or "
        f"try reference='warp3'."
    )


def solve_ratio_matching(
    log_l_target,
    log_l_reference,
    *,
    n_target_effective: float | None = None,
    solver: str = "bracket",
    tol: float = 1e-10,
    maxiter: int = 1000,
    min_overlap: float = 1.0,
    log_weights_target=None,
    log_weights_reference=None,
) -> RatioMatchingSolution:
    """Solve the ratio-matching equation for ``log c = log Z``.

    Parameters
    ----------
    log_l_target : array_like
        ``log f - log p0`` at target draws (finite), any shape (e.g. ``(chain, draw)``).
    log_l_reference : array_like
        ``log f - log p0`` at reference draws; ``-inf`` allowed.
    n_target_effective : float, optional
        Effective number of target draws used in ``s1 = n1 / (n1 + n0)`` (R's bridgesampling
        ``use_neff``); default: the actual number.
    solver : {"bracket", "iterate"}
        ``brentq`` on ``log c`` or the Meng-Wong fixed-point iteration.
    tol, maxiter
        Absolute tolerance on ``log c`` and iteration cap (``iterate`` only; ``bracket`` uses
        ``xtol=tol``).
    min_overlap : float
        Raise :class:`OverlapError` when ``sum pi (1 - pi)`` over the pooled draws, the effective
        number of draws the classifier cannot tell apart, is below this.
    log_weights_target, log_weights_reference : array_like, optional
        Importance weights of weighted samples (e.g. AIS's, seed 000 eq. (9)): sample means
        become weighted means with the normalized weights, and the two samples get equal total
        weight (``s1 = s0 = 1/2``). ``bracket`` solver only.

    Returns
    -------
    RatioMatchingSolution
    """
    if solver not in SOLVERS:
        raise EvidenceInputError(
            f"Requested solver {solver!r} but it must be one of {list(SOLVERS)}."
        )
    log_l_target = np.asarray(log_l_target, dtype=float)
    log_l_reference = np.asarray(log_l_reference, dtype=float)
    weighted = log_weights_target is not None or log_weights_reference is not None
    if weighted:
        if solver != "bracket":
            raise EvidenceInputError("Weighted samples need solver='bracket'.")
        n1 = n0 = 1.0
        w1 = normalized_weights(
            np.zeros(log_l_target.size) if log_weights_target is None else log_weights_target
        )
        w0 = normalized_weights(
            np.zeros(log_l_reference.size)
            if log_weights_reference is None
            else log_weights_reference
        )
    else:
        n1 = float(log_l_target.size if n_target_effective is None else n_target_effective)
        n0 = float(log_l_reference.size)
        w1 = w0 = None
    log_s1, log_s0 = np.log(n1 / (n1 + n0)), np.log(n0 / (n1 + n0))
    flat1, flat0 = log_l_target.ravel(), log_l_reference.ravel()
    args = (flat1, flat0, log_s1, log_s0, w1, w0)

    if solver == "bracket":
        lo, hi = _bracket(flat1, flat0, log_s1, log_s0, args)
        log_c, info = brentq(_estimating_function, lo, hi, args=args, xtol=tol, full_output=True)
        n_iter = info.iterations
    else:
        finite0 = flat0[np.isfinite(flat0)]
        # geometric bridge as the starting value: log mean0 sqrt(l) - log mean1 1/sqrt(l)
        log_c0 = float(
            log_sum_exp(finite0 / 2)
            - np.log(flat0.size)
            - (log_sum_exp(-flat1 / 2) - np.log(flat1.size))
        )
        log_c, n_iter = _meng_wong_iteration(flat1, flat0, log_s1, log_s0, log_c0, tol, maxiter)

    pi1 = classifier_probabilities(log_l_target, log_c, log_s1, log_s0)
    pi0 = classifier_probabilities(log_l_reference, log_c, log_s1, log_s0)
    if weighted:  # weighted sums, scaled to the number of draws
        overlap = float(
            log_l_target.size * np.dot(w1, (pi1 * (1 - pi1)).ravel())
            + log_l_reference.size * np.dot(w0, (pi0 * (1 - pi0)).ravel())
        )
    else:
        overlap = float(np.sum(pi1 * (1 - pi1)) + np.sum(pi0 * (1 - pi0)))
    if overlap < min_overlap:
        raise OverlapError(
            f"The reference and the target do not overlap: the classifier separates the two "
            f"samples almost perfectly (sum of pi(1-pi) = {overlap:.3g} < {min_overlap}), so "
            f"log Z is not identified by these draws. Use a reference closer to the posterior, "
            f"or more draws."
        )
    gamma = overlap / (log_l_target.size + log_l_reference.size)
    return RatioMatchingSolution(
        float(log_c), int(n_iter), pi1, pi0, float(log_s1), float(log_s0), gamma
    )


def solve_weighted_ratio_matching_rows(
    log_l_target,
    log_l_reference,
    weights_target,
    weights_reference,
    *,
    log_c0=None,
    tol: float = 1e-10,
    maxiter: int = 200,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Row by row, the root of the weighted ratio-matching equation with ``s1 = s0 = 1/2``.

    Row ``m`` solves

    .. math:: g_m(t) = \sum_j w^{(0)}_{mj}\,\pi(\ell^{(0)}_{mj} - t)
              - \sum_i w^{(1)}_{mi}\,\big(1 - \pi(\ell^{(1)}_{mi} - t)\big) = 0,
       \qquad \pi = \operatorname{expit},

    the equation :func:`solve_ratio_matching` solves with ``log_weights_*`` (one row of
    annealed discriminance sampling's binary version, seed 000 eq. (9)), for all rows at once:
    Newton's method with the exact derivative
    ``g'(t) = -sum w0 pi0 (1 - pi0) - sum w1 pi1 (1 - pi1) < 0``, kept inside a bracket that
    every evaluation narrows (``g`` decreases in ``t``) and replaced by bisection when it would
    leave it. Converged when a step is below ``tol``.

    Cost: the exponentials are taken once, ``X = exp(l - max_row l)``, and every Newton step
    evaluates ``pi(l - t) = X / (X + exp(t - max_row l))`` with one addition and one division per
    draw (rows where ``exp(t - max l)`` under- or overflows use ``expit`` directly).

    Parameters
    ----------
    log_l_target, log_l_reference : array_like (M, N1), (M, N0)
        ``log f_1 - log f_0`` at the target's and the reference's draws of each row;
        ``-inf`` allowed.
    weights_target, weights_reference : array_like (M, N1), (M, N0)
        Normalized weights (each row sums to 1).
    log_c0 : array_like (M,), optional
        Starting values; default: the importance-sampling estimates
        ``log sum_j w0_j exp(l0_j)`` from the reference's draws.

    Returns
    -------
    (log_c, pi_target, pi_reference)
        Roots ``(M,)`` (each within ``tol`` of the exact root) and the classifier
        ``pi(l - log_c)`` at both samples.
    """
    l1 = np.asarray(log_l_target, dtype=float)
    l0 = np.asarray(log_l_reference, dtype=float)
    w1 = np.asarray(weights_target, dtype=float)
    w0 = np.asarray(weights_reference, dtype=float)
    top0, top1 = l0.max(axis=1), l1.max(axis=1)
    low = np.minimum(l0.min(axis=1), l1.min(axis=1))
    if np.any(low == -np.inf):  # rows with -inf: the smallest finite value
        both = np.concatenate([l1, l0], axis=1)
        low = np.where(np.isfinite(both), both, np.inf).min(axis=1)
    high = np.maximum(top0, top1)
    if not np.all(np.isfinite(low) & np.isfinite(high)):
        raise OverlapError("A row of the ratio-matching equation has no finite log ratio.")
    top0[top0 == -np.inf], top1[top1 == -np.inf] = 0.0, 0.0  # a row of -inf: pi = 0 there
    lo, hi = low - 40.0, high + 40.0  # pi is 1 or 0 to 4e-18 beyond these
    x0, x1 = l0 - top0[:, None], l1 - top1[:, None]
    np.exp(x0, out=x0)
    np.exp(x1, out=x1)
    if log_c0 is None:
        with np.errstate(divide="ignore"):
            log_c0 = top0 + np.log(np.einsum("ij,ij->i", w0, x0))
    t = np.clip(np.asarray(log_c0, dtype=float), lo, hi)
    t = np.where(np.isfinite(t), t, (lo + hi) / 2)
    total1 = w1.sum(axis=1)
    pi0, pi1 = np.empty_like(l0), np.empty_like(l1)
    active = np.ones(t.size, dtype=bool)
    for _ in range(maxiter):
        t_rows = t[active]
        if active.all():  # every row, in place
            rows = slice(None)
            p0 = _classifier(x0, l0, t_rows, top0, out=pi0)
            p1 = _classifier(x1, l1, t_rows, top1, out=pi1)
            v0, v1 = w0, w1
        else:  # the rows still active
            rows = np.flatnonzero(active)
            p0 = _classifier(x0[rows], l0[rows], t_rows, top0[rows])
            p1 = _classifier(x1[rows], l1[rows], t_rows, top1[rows])
            pi0[rows], pi1[rows] = p0, p1
            v0, v1 = w0[rows], w1[rows]
        # sum w pi and sum w pi^2 per row, without per-draw temporaries
        s0, s1 = np.einsum("ij,ij->i", v0, p0), np.einsum("ij,ij->i", v1, p1)
        q0, q1 = np.einsum("ij,ij,ij->i", v0, p0, p0), np.einsum("ij,ij,ij->i", v1, p1, p1)
        g = s0 - (total1[rows] - s1)
        slope = -(s0 - q0) - (s1 - q1)
        lo[rows] = np.where(g > 0, t_rows, lo[rows])
        hi[rows] = np.where(g < 0, t_rows, hi[rows])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = g / slope
        newton = t_rows - step
        inside = np.isfinite(newton) & (newton > lo[rows]) & (newton < hi[rows])
        new = np.where(inside, newton, (lo[rows] + hi[rows]) / 2)
        # converged: a Newton step below tol (also when rounding puts t - step on the bracket's
        # edge, which would otherwise bisect), a bracket narrower than tol, or an exact zero
        done = (np.abs(step) < tol) | (np.abs(new - t_rows) < tol) | (g == 0)
        # a finished row keeps the t it was evaluated at (within tol of the root), so pi0 and
        # pi1 are its classifier exactly
        t[rows] = np.where(done, t_rows, new)
        active[np.arange(t.size)[rows][done]] = False
        if not active.any():
            break
    else:
        raise ConvergenceError(
            f"The weighted ratio-matching equation did not converge in {maxiter} steps for "
            f"{int(active.sum())} of {t.size} rows."
        )
    return t, pi1, pi0


def _classifier(x, log_l, t, top, out=None) -> np.ndarray:
    """``expit(log_l - t)`` row by row from ``x = exp(log_l - top)``: ``x / (x + exp(t - top))``;
    rows whose ``exp(t - top)`` is 0 or infinite are computed directly."""
    shift = np.exp(t - top)
    out = np.add(x, shift[:, None], out=out)
    np.divide(x, out, out=out)
    bad = ~((shift > 0) & np.isfinite(shift))
    if np.any(bad):
        out[bad] = expit(log_l[bad] - t[bad, None])
    return out
