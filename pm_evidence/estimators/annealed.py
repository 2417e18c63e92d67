r"""Estimators on annealed draws: AIS, reverse AIS (RAISE) and annealed discriminance sampling.

All are pure functions of AIS log weights and ``Delta(x) = log f(x) - log p0(x)`` at the draws;
the sampler lives in :mod:`pm_evidence.tempering.samplers`.
"""

from __future__ import annotations

import itertools

import numpy as np

from pm_evidence.core.exceptions import OverlapError
from pm_evidence.core.utils import (
    kish_ess,
    log_mean_exp,
    pareto_khat,
    relative_sd_of_mean,
)
from pm_evidence.estimators.base import Estimate, as_log_weights, nonfinite_weight_diagnostics
from pm_evidence.estimators.multistate import solve_multistate
from pm_evidence.estimators.ratio_matching import solve_weighted_ratio_matching_rows

__all__ = ["ads_binary_core", "ads_multinomial_core", "ais_core", "raise_core"]

# numbers per array while ADS solves blocks of rung pairs at once: half a megabyte, so that a
# block's arrays stay in cache (measured: docs/benchmarks.rst, Measurements behind the defaults)
ROWS_PER_BLOCK_NUMBERS = 2**16


def _weight_diagnostics(log_weights: np.ndarray) -> dict:
    n = log_weights.size
    ess = kish_ess(log_weights)
    return {
        "n_chains": n,
        "ess": ess,
        "ess_fraction": ess / n,
        "pareto_k": pareto_khat(log_weights),
    }


def _require_some_weight(log_weights: np.ndarray, what: str) -> None:
    if np.all(log_weights == -np.inf):
        raise OverlapError(
            f"Every {what} is zero (log weight -inf): no chain reached a point where both the "
            f"reference and the target have positive density, so there is no estimate of log Z. "
            f"Use a reference that covers the target's support, or more rungs."
        )


def ais_core(log_weights, batch_sizes=None) -> Estimate:
    r"""AIS estimate ``log Z = log mean_i w_i`` over independent chains (seed 001; seed 000 eq. (8)).

    ``E[w] = Z`` exactly, so ``log Z`` is biased *downward* (Jensen): a stochastic lower bound.
    The SE is the delta-method ``sd(w) / (sqrt(N) mean(w))``, reliable only when the weight ESS
    is not tiny and the weights' tail is not too heavy (``pareto_k``, Vehtari et al. 2024).
    ``batch_sizes``: where consecutive batches of chains started from different distributions
    (:mod:`~pm_evidence.path.start_allocation`), their sizes, in order; the SE is then that of a
    sample stratified by batch, ``sqrt(sum_b n_b s_b^2) / (N mean(w))`` with ``s_b^2`` the
    sample variance of batch ``b``'s weights, so that the batches' different means do not count
    as noise. Raises :class:`~pm_evidence.core.exceptions.OverlapError` when every weight is
    zero.
    """
    nan = nonfinite_weight_diagnostics(log_weights)
    log_weights = as_log_weights(log_weights, what="AIS log weights", allow_neg_inf=True)
    _require_some_weight(log_weights, "AIS weight")
    if batch_sizes is None:
        se = relative_sd_of_mean(log_weights, log_weights.size)
    else:
        se = _batch_stratified_se(log_weights, batch_sizes)
    return Estimate(
        float(log_mean_exp(log_weights)), se, {**_weight_diagnostics(log_weights), **nan}
    )


def _batch_stratified_se(log_weights: np.ndarray, batch_sizes) -> float:
    """The delta-method SE of ``log mean w`` over batches sampled apart (:func:`ais_core`)."""
    w = np.exp(log_weights - np.max(log_weights))
    bounds = np.concatenate([[0], np.cumsum(batch_sizes)])
    if bounds[-1] != w.size:
        raise ValueError(f"batch sizes {tuple(batch_sizes)} do not add up to {w.size} chains")
    within = sum(
        w[a:b].size * np.var(w[a:b], ddof=1) for a, b in itertools.pairwise(bounds) if b - a > 1
    )
    return float(np.sqrt(within) / (w.size * np.mean(w)))


def raise_core(log_weights_reverse) -> Estimate:
    r"""Reverse AIS: ``log Z = -log mean_i w_i`` with ``w_i`` the reverse-annealing weights from
    posterior draws to ``p0`` (Burda et al. 2015; seed 004 §3.2).

    ``E[w] = 1/Z`` when the chains start from the exact posterior, so ``log Z`` is then biased
    *upward*: a stochastic upper bound, the other slice of the sandwich with AIS. From MCMC
    draws the identity holds only approximately: an estimate, not a bound.
    """
    nan = nonfinite_weight_diagnostics(log_weights_reverse)
    log_weights_reverse = as_log_weights(
        log_weights_reverse, what="reverse AIS log weights", allow_neg_inf=True
    )
    _require_some_weight(log_weights_reverse, "reverse AIS weight")
    return Estimate(
        -float(log_mean_exp(log_weights_reverse)),
        relative_sd_of_mean(log_weights_reverse, log_weights_reverse.size),
        {**_weight_diagnostics(log_weights_reverse), **nan},
    )


def ads_binary_core(delta, log_weights, betas) -> Estimate:
    r"""Annealed discriminance sampling, binary-sequential version (seed 000 Alg. 1, eqs. (6)-(9)).

    For each pair of neighbouring rungs, ``log r_{k+1} = log Z_{k+1}/Z_k`` is the root of the
    weighted ratio-matching equation (eq. (9)) between AIS's weighted draws at rung ``k`` and
    ``k+1``, with ``log f_{k+1}/f_k = (beta_{k+1} - beta_k) Delta``; ``log Z = sum_k log r_k``
    (eq. (7)).

    Parameters
    ----------
    delta, log_weights : array_like (K, N)
        ``Delta`` and the AIS log weight of chain ``i``'s point after the transitions at rung
        ``k`` (:class:`~pm_evidence.tempering.samplers.AnnealingTrace` with ``store=True``).
    betas : array_like (K,)

    Notes
    -----
    The standard error linearizes every ratio's estimating equation over the ``N`` independent
    chains (the weights are ratio estimators, so each chain's influence is centred at its rung's
    weighted mean) and sums the influences along the chain: neighbouring ratios share draws, so
    their errors are correlated and are not simply added in quadrature.
    """
    delta = np.asarray(delta, dtype=float)
    log_weights = np.asarray(log_weights, dtype=float)
    betas = np.asarray(betas, dtype=float)
    n_rungs, n_chains = delta.shape
    log_ratios = np.zeros(n_rungs - 1)
    influence = np.zeros(n_chains)
    information = np.zeros(n_rungs - 1)
    block = max(1, ROWS_PER_BLOCK_NUMBERS // n_chains)
    for first in range(0, n_rungs - 1, block):  # pairs (k, k + 1), k in [first, last)
        last = min(first + block, n_rungs - 1)
        pairs = slice(first, last)
        d_beta = np.diff(betas[first : last + 1])[:, None]
        log_l0, log_l1 = d_beta * delta[first:last], d_beta * delta[first + 1 : last + 1]
        rows = log_weights[first : last + 1]
        w = rows - rows.max(axis=1, keepdims=True)
        np.exp(w, out=w)  # some weight is > 0 at every rung (AIS checks)
        w /= w.sum(axis=1, keepdims=True)
        w0, w1 = w[:-1], w[1:]
        # from the importance-sampling ratio of rung k's weighted draws (AIS's increment)
        log_ratios[pairs], pi1, pi0 = solve_weighted_ratio_matching_rows(log_l1, log_l0, w1, w0)
        # sums without per-draw temporaries: m0 = sum w0 pi0, m1 = sum w1 pi1, the information
        # sum w0 pi0 (1 - pi0) + sum w1 pi1 (1 - pi1), and the chains' scores
        # w0 (pi0 - m0) - w1 ((1 - pi1) - (1 - m1)) divided by the information, summed over pairs
        m0 = np.einsum("ij,ij->i", w0, pi0)
        m1 = np.einsum("ij,ij->i", w1, pi1)
        info = m0 + m1 - np.einsum("ij,ij,ij->i", w0, pi0, pi0)
        info -= np.einsum("ij,ij,ij->i", w1, pi1, pi1)
        inverse = 1.0 / info
        influence += np.einsum("i,ij,ij->j", inverse, w0, pi0)
        influence += np.einsum("i,ij,ij->j", inverse, w1, pi1)
        influence -= (m0 * inverse) @ w0 + (m1 * inverse) @ w1
        information[pairs] = info
    se = float(np.sqrt(n_chains / (n_chains - 1) * np.sum(influence**2)))
    return Estimate(
        float(log_ratios.sum()),
        se,
        {"n_chains": n_chains, "n_rungs": n_rungs, "min_gamma": float(np.min(information) / 2)},
    )


def ads_multinomial_core(delta, log_weights, betas, *, log_z0=None) -> Estimate:
    r"""Annealed discriminance sampling, multinomial version (seed 000 Alg. 2, eq. (5)).

    Maximizes the weighted conditional likelihood of the rung labels of all AIS draws jointly, a
    convex problem in ``log c`` solved by :func:`~pm_evidence.estimators.multistate.solve_multistate`
    (Newton's method up to 300 rungs, Newton-CG beyond); SE by the chain-clustered sandwich.
    """
    delta = np.asarray(delta, dtype=float)
    n_rungs, n_chains = delta.shape
    rung = np.repeat(np.arange(n_rungs), n_chains)
    unit = np.tile(np.arange(n_chains), n_rungs)
    sol = solve_multistate(
        delta.ravel(), rung, betas, log_weights=np.asarray(log_weights).ravel(), unit=unit,
        log_z0=log_z0,
    )  # fmt: skip
    return Estimate(
        float(sol.log_z[-1]),
        sol.se,
        {"n_chains": n_chains, "n_rungs": n_rungs, "n_iter": sol.n_iter},
    )
