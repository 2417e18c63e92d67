"""Discriminance sampling: log Z by classifying target draws against reference draws.

References
----------
seed 000 §4: the conditional-likelihood estimator, its ratio-matching condition eq. (3), and
Prop. 1 with gamma = E[var(y | x)], eq. (4).
"""

from __future__ import annotations

import numpy as np

from pm_evidence.core.utils import mcmc_ess
from pm_evidence.estimators.base import Estimate, as_two_samples, nonfinite_weight_diagnostics
from pm_evidence.estimators.ratio_matching import solve_ratio_matching

__all__ = ["discriminance_core", "discriminance_variance"]


def discriminance_variance(pi_target: np.ndarray, pi_reference: np.ndarray) -> tuple[float, float]:
    r"""Asymptotic variance of ``log Z_dis`` and the target draws' effective sample size.

    ``log c`` is an M-estimator with score ``S = sum_i pi(x^i) - n1`` over the pooled draws and
    ``dS / dlog c = -sum_i pi (1 - pi)``. The labels are fixed by design (``n1`` target and
    ``n0`` reference draws), so ``var S = n1 tau var_1(pi) + n0 var_0(pi)`` where ``tau`` is the
    integrated autocorrelation time of ``pi`` along the target chains (1 for i.i.d. draws):

    .. math:: \widehat{\operatorname{var}}(\log\hat Z) =
        \frac{n_1\tau\,\widehat{\operatorname{var}}_1(\pi) + n_0\,\widehat{\operatorname{var}}_0(\pi)}
             {\big(\sum_i \pi_i(1-\pi_i)\big)^2}.

    For i.i.d. draws with ``n0 = n1 = n`` this tends to ``(1 - 4 gamma) / (2 n gamma)``, the
    Meng-Wong (1996) variance of the optimal bridge; it agrees with seed 000 Prop. 1,
    ``(1/4 - gamma) / (2 n gamma^2)``, to first order at ``gamma -> 1/4`` (``p0 = p``), and is
    smaller when overlap is poor: Prop. 1 as printed over-states the error there (checked
    against repeated runs in ``tests/test_estimators_arrays.py``).

    ``pi_target`` of shape ``(chain, draw)`` is treated as MCMC output (ESS from ArviZ); a 1-D
    array as i.i.d.
    """
    pi_target = np.asarray(pi_target, dtype=float)
    pi_reference = np.asarray(pi_reference, dtype=float).ravel()
    n1, n0 = pi_target.size, pi_reference.size
    ess = mcmc_ess(pi_target) if pi_target.ndim == 2 else float(n1)
    tau = n1 / ess
    numerator = n1 * tau * np.var(pi_target, ddof=1) + n0 * np.var(pi_reference, ddof=1)
    information = np.sum(pi_target * (1 - pi_target)) + np.sum(pi_reference * (1 - pi_reference))
    return float(numerator / information**2), float(ess)


def discriminance_core(log_l_target, log_l_reference, *, tol: float = 1e-12) -> Estimate:
    r"""Discriminance sampling (seed 000 §4, eq. (3)), with unequal sample sizes.

    Solves :math:`\sum_i \pi_c(x^i) = n_1` over the pooled draws, where
    :math:`\pi_c(x) = n_1 f(x)/c \,/\, (n_1 f(x)/c + n_0 p_0(x))` is the probability that ``x``
    came from the target (seed 000 eq. (3) for ``n0 = n1``), by a bracketing root finder in
    ``log c``. The standard error is :func:`discriminance_variance`; ``gamma`` and the
    Prop. 1 value are reported as diagnostics.

    Parameters
    ----------
    log_l_target : array_like, shape (chain, draw) or (draw,)
        ``log f - log p0`` at target draws (MCMC if 2-D, i.i.d. if 1-D).
    log_l_reference : array_like
        ``log f - log p0`` at i.i.d. reference draws.
    """
    nan = nonfinite_weight_diagnostics(log_l_reference)
    log_l_target, log_l_reference = as_two_samples(log_l_target, log_l_reference)
    sol = solve_ratio_matching(log_l_target, log_l_reference, solver="bracket", tol=tol)
    variance, ess = discriminance_variance(sol.pi_target, sol.pi_reference)
    n1, n0 = log_l_target.size, log_l_reference.size
    gamma = sol.gamma
    diagnostics = {
        "n_target": n1,
        "n_reference": n0,
        "ess_target": ess,
        "gamma": gamma,
        "n_iter": sol.n_iter,
        **nan,
    }
    if n1 == n0 and gamma > 0:
        diagnostics["se_prop1"] = float(np.sqrt(max(0.25 - gamma, 0.0) / (gamma**2 * 2 * n1)))
    return Estimate(sol.log_c, float(np.sqrt(variance)), diagnostics)
