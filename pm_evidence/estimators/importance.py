"""Importance sampling and reverse importance sampling (Gelfand-Dey) of log Z.

References
----------
seed 000 §3 (IS and reverse IS, their mean squared errors (1) and the chi-square divergences);
seed 002 eqs. (18.44) and (18.46).
"""

from __future__ import annotations

import numpy as np

from pm_evidence.estimators.base import Estimate, as_log_weights
from pm_evidence.exceptions import OverlapError
from pm_evidence.utils import kish_ess, log_mean_exp, mcmc_ess, pareto_khat, relative_sd_of_mean

__all__ = ["importance_core", "reverse_importance_core"]


def importance_core(log_weights_reference) -> Estimate:
    r"""Importance sampling: ``Z_is = mean_i f(x_i) / p0(x_i)``, ``x_i ~ p0`` i.i.d.

    .. math:: \hat Z_{is} = \frac1n \sum_i w_i,\quad w_i = f(x_0^i)/p_0(x_0^i)
       \qquad(\text{seed 000 §3; seed 002 eq. 18.44})

    The standard error of ``log Z_is`` is ``sd(w) / (sqrt(n) mean(w))`` (delta method on seed 002
    eq. 18.46). Unbiased for ``Z``, but ``log Z_is`` tends to *under*-estimate when the weights are
    heavy-tailed (``p0`` more peaked or lighter-tailed than the target).

    Parameters
    ----------
    log_weights_reference : array_like
        ``log f(x) - log p0(x)`` at draws from ``p0`` (any shape; ``-inf`` is a zero weight).
    """
    lw = as_log_weights(
        log_weights_reference, what="log weights at reference draws", allow_neg_inf=True
    ).ravel()
    if np.all(lw == -np.inf):
        raise OverlapError(
            "Every reference draw has zero target density (log f = -inf): the reference does "
            "not overlap the target. Use a reference fitted to posterior draws."
        )
    n = lw.size
    ess = kish_ess(lw)
    return Estimate(
        log_z=float(log_mean_exp(lw)),
        se=relative_sd_of_mean(lw, n),
        diagnostics={
            "n_reference": n,
            "ess_reference": ess,
            "ess_fraction": ess / n,
            "pareto_k": pareto_khat(lw),
        },
    )


def reverse_importance_core(log_weights_target) -> Estimate:
    r"""Reverse importance sampling (weighted harmonic mean; Gelfand & Dey 1994).

    .. math:: \hat Z_{ris} = \Big[\frac1n \sum_i p_0(x_1^i)/f(x_1^i)\Big]^{-1},
       \quad x_1^i \sim p = f/Z \qquad(\text{seed 000 §3})

    ``1 / Z_ris`` is an importance-sampling estimate of ``1/Z``, so ``log Z_ris`` tends to
    *over*-estimate; its variance is infinite when ``p0`` has heavier tails than the target.
    The standard error uses the MCMC effective sample size of ``v = p0/f`` across chains.

    Parameters
    ----------
    log_weights_target : array_like, shape (chain, draw) or (draw,)
        ``log f(x) - log p0(x)`` at draws from the target: finite, or ``+inf`` where ``p0`` is
        zero (a reference with bounded support, such as Gelfand & Dey's truncated normal).
    """
    inv = as_log_weights(
        -np.asarray(log_weights_target, dtype=float),
        what="reverse log weights log p0 - log f at target draws",
        allow_neg_inf=True,
    )  # log (p0 / f); -inf where p0 = 0
    inv = inv if inv.ndim == 2 else inv.reshape(1, -1)
    if not np.any(np.isfinite(inv)):
        raise OverlapError(
            "The reference is zero at every target draw: reverse importance sampling has no "
            "weight to average. Fit the reference to the posterior draws."
        )
    ess = mcmc_ess(np.exp(inv - inv.max()))
    n = inv.size
    return Estimate(
        log_z=float(-log_mean_exp(inv)),
        se=relative_sd_of_mean(inv, ess),
        diagnostics={
            "n_target": n,
            "ess_target": ess,
            "ess_inverse_weights": kish_ess(inv),
            "pareto_k": pareto_khat(inv, r_eff=ess / n if np.isfinite(ess) else 1.0),
        },
    )
