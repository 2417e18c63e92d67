"""Importance sampling and reverse importance sampling (Gelfand-Dey) of log Z.

References
----------
seed 000 §3 (IS and reverse IS, their mean squared errors (1) and the chi-square divergences);
seed 002 eqs. (18.44) and (18.46).
"""

from __future__ import annotations

import numpy as np

from pm_evidence.core.exceptions import OverlapError
from pm_evidence.core.utils import (
    kish_ess,
    log_mean_exp,
    mcmc_ess,
    pareto_khat,
    relative_sd_of_mean,
)
from pm_evidence.estimators.base import Estimate, as_log_weights, nonfinite_weight_diagnostics

__all__ = ["chi_square_to_target", "importance_core", "reverse_importance_core"]


def importance_core(log_l_reference) -> Estimate:
    r"""Importance sampling: ``Z_is = mean_i f(x_i) / p0(x_i)``, ``x_i ~ p0`` i.i.d.

    .. math:: \hat Z_{is} = \frac1n \sum_i w_i,\quad w_i = f(x_0^i)/p_0(x_0^i)
       \qquad(\text{seed 000 §3; seed 002 eq. 18.44})

    The standard error of ``log Z_is`` is ``sd(w) / (sqrt(n) mean(w))`` (delta method on seed 002
    eq. 18.46). Unbiased for ``Z``, but ``log Z_is`` tends to *under*-estimate when the weights are
    heavy-tailed (``p0`` more peaked or lighter-tailed than the target).

    Parameters
    ----------
    log_l_reference : array_like
        ``log f(x) - log p0(x)`` at draws from ``p0`` (any shape; ``-inf`` is a zero weight).
    """
    nan = nonfinite_weight_diagnostics(log_l_reference)
    lw = as_log_weights(
        log_l_reference, what="log weights at reference draws", allow_neg_inf=True
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
            **nan,
        },
    )


def chi_square_to_target(log_ratio_reference, log_ratio_target) -> float:
    r"""Estimate of the chi-square divergence ``chi^2(p0 || p)`` from both sides.

    With ``v = p0 / f`` and ``p = f / Z``,

    .. math:: 1 + \chi^2(p_0\|p) = \int \frac{p_0^2}{p} = Z\,E_{p_0}[v]
       = \frac{E_{p_0}[v]}{E_p[v]},

    since ``E_p[v] = 1/Z`` (the identity reverse IS rests on, seed 000 §3). The numerator is
    averaged over reference draws and the denominator over target draws. ``chi^2(p0 || p)`` is
    the relative variance of one reverse weight, ``Var_p(v) / E_p[v]^2``, so this is a second
    estimate of it that does not depend on the target draws reaching the regions where ``v``
    is large: reference draws land there by construction.

    Parameters
    ----------
    log_ratio_reference : array_like
        ``log p0 - log f`` at draws from ``p0``; finite ones are used.
    log_ratio_target : array_like
        ``log p0 - log f`` at draws from the target (``-inf`` where ``p0 = 0``).
    """
    at_reference = np.asarray(log_ratio_reference, dtype=float).ravel()
    at_reference = at_reference[np.isfinite(at_reference)]
    if at_reference.size == 0:
        return float("nan")
    with np.errstate(over="ignore"):  # +inf: no overlap at all, a value the caller reports
        return float(np.expm1(log_mean_exp(at_reference) - log_mean_exp(log_ratio_target)))


def reverse_importance_core(log_l_target, log_l_reference=None) -> Estimate:
    r"""Reverse importance sampling (weighted harmonic mean; Gelfand & Dey 1994).

    .. math:: \hat Z_{ris} = \Big[\frac1n \sum_i p_0(x_1^i)/f(x_1^i)\Big]^{-1},
       \quad x_1^i \sim p = f/Z \qquad(\text{seed 000 §3})

    ``1 / Z_ris`` is an importance-sampling estimate of ``1/Z``, so ``log Z_ris`` tends to
    *over*-estimate; its variance, ``chi^2(p0 || p) / n``, is infinite when ``p0`` has mass
    where the target has (almost) none. The target draws then rarely reach the large
    ``v = p0 / f`` that carry the mean, and the sample variance of ``v`` misses them: an
    estimate high by several of its own SEs with a small Pareto k-hat (measured:
    docs/benchmarks.rst, Measurements behind the defaults). Reference draws land
    exactly there, so with ``log_l_reference`` the SE is

    .. math:: \mathrm{se} = \sqrt{\max(\hat\chi^2_{target}, \hat\chi^2_{reference})
       / \mathrm{ESS}},

    ``chi^2_target = Var(v) / mean(v)^2`` over the target draws,
    ``chi^2_reference`` from :func:`chi_square_to_target`, ``ESS`` the MCMC effective sample
    size of ``v`` across chains. The Pareto k-hat of ``v`` at the reference draws
    (``pareto_k_reference``) says whether ``chi^2_reference`` itself can be trusted: above
    0.7 the variance of the reverse weights may be infinite.

    Parameters
    ----------
    log_l_target : array_like, shape (chain, draw) or (draw,)
        ``log f(x) - log p0(x)`` at draws from the target: finite, or ``+inf`` where ``p0`` is
        zero (a reference with bounded support, such as Gelfand & Dey's truncated normal).
    log_l_reference : array_like, optional
        ``log f(x) - log p0(x)`` at draws from ``p0`` (``-inf`` where ``f = 0``: reference
        mass outside the target's support, which biases ``log Z_ris`` up by
        ``-log P0(support)``; its fraction is ``reference_outside_support``).
    """
    if np.any(np.isnan(log_l_target)):  # at target draws a NaN is an error, not a zero
        as_log_weights(log_l_target, what="log weights at target draws", allow_neg_inf=False)
    inv = as_log_weights(
        -np.asarray(log_l_target, dtype=float),
        what="reverse log weights log p0 - log f at target draws",
        allow_neg_inf=True,
    )  # log (p0 / f); -inf where p0 = 0
    inv = inv if inv.ndim == 2 else inv.reshape(1, -1)
    if not np.any(np.isfinite(inv)):
        raise OverlapError(
            "The reference is zero at every target draw: reverse importance sampling has no "
            "weight to average. Fit the reference to the posterior draws."
        )
    v = np.exp(inv - inv.max())  # p0 / f up to a constant
    ess = mcmc_ess(v)
    n = inv.size
    chi2_target = float(np.var(v, ddof=1) / np.mean(v) ** 2)
    diagnostics = {
        "n_target": n,
        "ess_target": ess,
        "ess_inverse_weights": kish_ess(inv),
        "pareto_k": pareto_khat(inv, r_eff=ess / n if np.isfinite(ess) else 1.0),
        "chi2_target": chi2_target,
    }
    chi2 = chi2_target
    if log_l_reference is not None:
        at_reference = -np.asarray(log_l_reference, dtype=float).ravel()  # log (p0 / f)
        finite = np.isfinite(at_reference)
        chi2_reference = chi_square_to_target(at_reference, inv)
        diagnostics.update(
            n_reference=at_reference.size,
            chi2_reference=chi2_reference,
            pareto_k_reference=pareto_khat(at_reference[finite]) if finite.any() else np.nan,
            reference_outside_support=float(1.0 - finite.mean()),
        )
        chi2 = max(chi2, chi2_reference) if np.isfinite(chi2_reference) else chi2
    se = float(np.sqrt(chi2 / ess))
    return Estimate(log_z=float(-log_mean_exp(inv)), se=se, diagnostics=diagnostics)
