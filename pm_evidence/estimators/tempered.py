r"""Estimators on simulated-tempering output: RTS, its count version, TI (Riemann, trapezoid,
TI-RB) and MBAR.

All are pure functions of per-unit sums (or per-draw ``Delta`` and rung labels for MBAR) from
:class:`~pm_evidence.tempering.samplers.TemperingTrace`; units are independent chains. Standard
errors linearize the estimator over units (a ratio of sums per rung) and use the spread across
units, as seed 004 App. B suggests ("estimated from c_k estimates on many parallel chains").
"""

from __future__ import annotations

import numpy as np

from pm_evidence.core.exceptions import ConvergenceError, EvidenceInputError
from pm_evidence.core.utils import normalized_weights, warn_user
from pm_evidence.estimators.base import Estimate
from pm_evidence.estimators.multistate import solve_multistate

__all__ = ["TI_QUADRATURE", "mbar_core", "rts_core", "rts_log_z", "rts_partial_update", "ti_core"]

TI_QUADRATURE = ("trapezoid", "riemann")
"""The quadrature rules of :func:`ti_core` over the rungs (its ``corrected`` adds the end
correction to the trapezoid rule)."""


def rts_log_z(c_hat, log_r, log_zhat) -> np.ndarray:
    r"""RTS estimate of every ``log Z_k`` (seed 004 eq. (12)):
    ``Z_k = Zhat_k (r_1 / r_k) (c_k / c_1)``, normalized so that ``log Z_1 = 0``."""
    c_hat = np.asarray(c_hat, dtype=float)
    with np.errstate(divide="ignore"):
        log_z = np.asarray(log_zhat) - np.asarray(log_r) + np.log(c_hat)
    return log_z - log_z[0]


def rts_partial_update(log_zhat, c_hat, log_r, alpha: float) -> np.ndarray:
    r"""Partial RTS update of every ``log Zhat_k`` (seed 004 eq. (24)), for tracking a slowly
    changing model: ``Zhat^(t+1) = Zhat^(t) ((r_1 / r_k)(c_k / c_1))^alpha``, i.e.

    .. math:: \log \hat Z_k^{(t+1)} = (1 - \alpha) \log \hat Z_k^{(t)}
              + \alpha \log \hat Z_k^{\mathrm{RTS}},

    with ``log Z^RTS`` from eq. (12) on this step's ``c_hat`` (normalized to ``log Z_1 = 0``).
    ``alpha = 1`` is the full update; the paper uses 0.2 (0.05 to 0.5 worked as well).
    """
    if not 0.0 < alpha <= 1.0:
        raise EvidenceInputError(f"alpha must be in (0, 1], got {alpha}.")
    log_zhat = np.asarray(log_zhat, dtype=float)
    log_zhat = log_zhat - log_zhat[0]
    return (1.0 - alpha) * log_zhat + alpha * rts_log_z(c_hat, log_r, log_zhat)


def _units_check(sums: np.ndarray) -> int:
    n_units = sums.shape[0]
    if n_units < 2:
        raise EvidenceInputError(
            "A standard error from the spread across chains needs at least 2 independent units; "
            "run at least 2 chains (or time batches)."
        )
    return n_units


def rts_core(c_sum, n_iterations, log_r, log_zhat, *, pseudo_count: float = 0.0) -> Estimate:
    r"""Rao-Blackwellized tempered sampling estimate of ``log Z = log Z_K`` (seed 004 eqs. (9), (12)).

    ``c_k = sum_u c_sum[u, k] / sum_u n_u`` estimates ``q(beta_k)`` (eq. (9)); eq. (12) turns the
    ``c``'s into ``log Z_k``. The variance is eq. (16),
    ``var c_1 / c_1^2 + var c_K / c_K^2 - 2 cov(c_1, c_K) / (c_1 c_K)``, with the (co)variances
    of the ``c``'s from their spread over independent units.

    ``pseudo_count > 0`` with ``c_sum`` = counts gives the non-Rao-Blackwellized tempered-sampling
    estimator of the paper's comparisons (``c_k propto counts + 0.1``, seed 004 §4.3).
    """
    c_sum = np.asarray(c_sum, dtype=float)
    n_iterations = np.asarray(n_iterations, dtype=float)
    n_units = _units_check(c_sum)
    n_rungs = c_sum.shape[1]
    total = n_iterations.sum()
    c_hat = (c_sum.sum(axis=0) + pseudo_count) / (total + pseudo_count * n_rungs)
    log_z = rts_log_z(c_hat, log_r, log_zhat)
    influence = np.zeros(n_units)
    for k, sign in ((n_rungs - 1, 1.0), (0, -1.0)):
        influence += sign * (c_sum[:, k] - c_hat[k] * n_iterations) / (total * c_hat[k])
    se = float(np.sqrt(n_units / (n_units - 1) * np.sum(influence**2)))
    r = normalized_weights(log_r)
    return Estimate(
        float(log_z[-1]),
        se,
        {
            "n_units": n_units,
            "n_iterations": int(total),
            "max_abs_r_minus_c": float(np.max(np.abs(r - c_hat))),
            "min_occupancy_ratio": float(np.min(c_hat / r)),
        },
    )


def _fill_empty(means: np.ndarray, betas: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """Impute the means of empty rungs by linear interpolation in ``beta`` (seed 004 §4.3)."""
    if empty.all():
        raise EvidenceInputError("Every rung is empty; no draws to integrate.")
    filled = means.copy()
    filled[empty] = np.interp(betas[empty], betas[~empty], means[~empty])
    return filled


def ti_core(
    betas, weight_sum, delta_sum, *, rule: str = "trapezoid", corrected: bool = False,
    delta2_sum=None,
) -> Estimate:  # fmt: skip
    r"""Thermodynamic integration ``log Z = int_0^1 E_beta[Delta] d beta`` (seed 004 eq. (20)).

    ``mu_k = E_{beta_k}[Delta]`` is ``sum_u delta_sum[u, k] / sum_u weight_sum[u, k]``: with
    counts and sums of ``Delta`` per rung it is plain TI on tempered draws; with ``c_sum`` and
    ``rb_delta_sum`` it is TI-RB (eq. (21)); with AIS weights it is TI on annealed draws. Rules:

    * ``"riemann"``: right Riemann sum ``sum_k h_k mu_k`` (as the AIS log weight, eq. (23));
    * ``"trapezoid"``: ``sum_k h_k (mu_{k-1} + mu_k) / 2``;
    * ``corrected=True`` (trapezoid only): the trapezoid rule with its Euler-Maclaurin end
      correction,
      ``- sum_k h_k^2 (v_k - v_{k-1}) / 12``, where ``v_k = Var_{beta_k}[Delta]`` is the slope
      of the integrand (``d mu / d beta = Var_beta[Delta]``), estimated from the same draws
      (``delta2_sum``: sums of ``Delta^2`` with the same weights). This is the cubic-Hermite
      rule of Friel, Hurn & Wyse (2014, "Improving power posterior estimation of statistical
      evidence", eq. (6)): its error falls like ``h^4`` instead of ``h^2``.

    Empty rungs are imputed by linear interpolation. The SE linearizes the estimate over
    units and covers the Monte Carlo error only: the discretization error that remains (a sum
    of KL divergences between neighbouring rungs for the trapezoid rule, Calderhead & Girolami
    2009) is *not* included; the correction removes most of it on a smooth path.
    """
    if rule == "corrected":  # the old spelling of trapezoid with the correction
        warn_user("ti_core(rule='corrected') is deprecated: pass rule='trapezoid', corrected=True.",
                  FutureWarning)  # fmt: skip
        rule, corrected = "trapezoid", True
    if rule not in TI_QUADRATURE:
        raise EvidenceInputError(
            f"Requested rule {rule!r} but it must be one of {list(TI_QUADRATURE)}."
        )
    if corrected and rule != "trapezoid":
        raise EvidenceInputError("corrected=True corrects the trapezoid rule; pass rule='trapezoid'.")
    if corrected and delta2_sum is None:
        raise EvidenceInputError("corrected=True needs delta2_sum, the sums of Delta^2.")
    betas = np.asarray(betas, dtype=float)
    weight_sum = np.asarray(weight_sum, dtype=float)
    delta_sum = np.asarray(delta_sum, dtype=float)
    n_units = _units_check(weight_sum)
    totals = weight_sum.sum(axis=0)
    empty = totals <= 0
    safe = np.where(empty, 1.0, totals)
    means = _fill_empty(delta_sum.sum(axis=0) / safe, betas, empty)
    d_beta = np.diff(betas)
    h = np.zeros(betas.size)  # quadrature weight of each rung's mean
    if rule == "riemann":
        h[1:] = d_beta
    else:
        h[1:] += d_beta / 2
        h[:-1] += d_beta / 2
    # influence of each unit on each rung's mean (ratio of sums, linearized)
    influence_means = (delta_sum - means * weight_sum) / safe
    log_z = float(np.dot(h, means))
    influence = influence_means[:, ~empty] @ h[~empty]
    if corrected:
        delta2_sum = np.asarray(delta2_sum, dtype=float)
        second = _fill_empty(delta2_sum.sum(axis=0) / safe, betas, empty)
        variances = np.maximum(second - means**2, 0.0)
        g = np.zeros(betas.size)  # correction = g . variances
        g[1:] -= d_beta**2 / 12
        g[:-1] += d_beta**2 / 12
        log_z += float(np.dot(g, variances))
        influence_second = (delta2_sum - second * weight_sum) / safe
        influence_var = influence_second - 2.0 * means * influence_means
        influence += influence_var[:, ~empty] @ g[~empty]
    se = float(np.sqrt(n_units / (n_units - 1) * np.sum(influence**2)))
    return Estimate(
        log_z,
        se,
        {"rule": rule, "n_units": n_units, "n_empty_rungs": int(empty.sum())},
    )


def mbar_core(delta, rung, betas, *, unit=None, log_z0=None) -> Estimate:
    r"""MBAR (seed 004 eq. (18); Shirts & Chodera 2008) on draws labelled by rung.

    Maximizes eq. (18) (a convex problem in ``log Z``) by Newton's method
    (:func:`~pm_evidence.estimators.multistate.solve_multistate`); the SE is the sandwich over
    independent ``unit`` s (chains), which also covers the randomness of the rung counts under
    simulated tempering.

    Rungs without draws are left out: MBAR's mixture is over the sampled rungs only, and the
    estimate of ``log Z_K - log Z_1`` stays consistent (diagnostics ``n_dropped_rungs`` and
    ``first_dropped_rung``, -1 when none). The two ends must have draws; otherwise
    :class:`~pm_evidence.core.exceptions.ConvergenceError` is raised (the run did not reach
    them: a failure of that run, which a list of methods leaves out with a warning).
    """
    delta = np.asarray(delta, dtype=float).ravel()
    rung = np.asarray(rung, dtype=int).ravel()
    betas = np.asarray(betas, dtype=float)
    if rung.size and (rung.min() < 0 or rung.max() >= betas.size):
        raise EvidenceInputError(f"rung labels must lie in 0..{betas.size - 1}.")
    counts = np.bincount(rung, minlength=betas.size)
    empty = np.flatnonzero(counts == 0)
    if counts[0] == 0 or counts[-1] == 0:  # the run's outcome, not the user's input
        raise ConvergenceError(
            f"MBAR needs draws at both ends of the ladder (beta = 0 and beta = 1); rungs "
            f"{empty[:10].tolist()} have none. The tempered chains did not reach "
            f"{'beta = 1' if counts[-1] == 0 else 'beta = 0'}: run longer, or use RTS, whose "
            f"Rao-Blackwellized occupancies need no draws at a rung."
        )
    kept = np.flatnonzero(counts > 0)
    new_label = np.cumsum(counts > 0) - 1  # old rung -> position among the kept rungs
    if log_z0 is not None:
        log_z0 = np.asarray(log_z0, dtype=float)[kept]
    labels = new_label[rung] if empty.size else rung
    sol = solve_multistate(delta, labels, betas[kept], unit=unit, log_z0=log_z0)
    return Estimate(
        float(sol.log_z[-1]),
        sol.se,
        {
            "n_draws": int(delta.size),
            "n_iter": sol.n_iter,
            "n_dropped_rungs": int(empty.size),
            "first_dropped_rung": int(empty[0]) if empty.size else -1,
        },
    )
