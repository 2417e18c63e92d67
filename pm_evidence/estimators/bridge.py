"""Bridge sampling with the optimal bridge function (Meng & Wong 1996).

References
----------
Meng & Wong (1996), eq. (4.1), the iterative scheme; Frühwirth-Schnatter (2004), the relative
mean-squared error; Gronau et al. (2017), R's bridgesampling (split draws, ``use_neff``);
seed 002 (bridges between p0 and p1); seed 000 §2 (its relation to discriminance sampling).
"""

from __future__ import annotations

import numpy as np

from pm_evidence.core.utils import mcmc_ess
from pm_evidence.estimators.base import Estimate, as_two_samples, nonfinite_weight_diagnostics
from pm_evidence.estimators.ratio_matching import classifier_probabilities, solve_ratio_matching

__all__ = [
    "bridge_core",
    "fruhwirth_schnatter_re2",
    "fruhwirth_schnatter_terms",
    "predicted_re2",
]


def fruhwirth_schnatter_re2(pi_target: np.ndarray, pi_reference: np.ndarray) -> tuple[float, float]:
    r"""Approximate relative mean-squared error of ``Z_bridge`` (Frühwirth-Schnatter 2004).

    With ``f1 = p/(s1 p + s2 g)`` at the ``N2`` reference draws and ``f2 = g/(s1 p + s2 g)`` at
    the ``N1`` target draws (``p`` the normalized target, ``g`` the reference), which are
    ``pi / s1`` and ``(1 - pi) / s2`` in terms of the classifier of the ratio-matching equation,

    .. math:: RE^2 = \frac{1}{N_2}\frac{\widehat{\operatorname{var}}(f_1)}{\bar f_1^2}
              + \frac{\rho_{f_2}(0)}{N_1}\frac{\widehat{\operatorname{var}}(f_2)}{\bar f_2^2},

    where ``rho_f2(0)`` (the normalized spectral density at frequency 0) is the integrated
    autocorrelation time ``N1 / ESS(f2)``. ``sqrt(RE^2)`` is the standard error of ``log Z``.

    Returns ``(re2, ess_f2)``; :func:`fruhwirth_schnatter_terms` gives the two terms apart.
    """
    reference_side, target_side, ess = fruhwirth_schnatter_terms(pi_target, pi_reference)
    return reference_side + target_side, ess


def fruhwirth_schnatter_terms(
    pi_target: np.ndarray, pi_reference: np.ndarray
) -> tuple[float, float, float]:
    """The two terms of :func:`fruhwirth_schnatter_re2`: ``(reference side, target side,
    ess_f2)``, the first falling like ``1 / N2``, the second like ``1 / ESS(f2)``."""
    pi_target = np.asarray(pi_target, dtype=float)
    f1 = np.asarray(pi_reference, dtype=float).ravel()
    f2 = 1.0 - pi_target
    n2, n1 = f1.size, f2.size
    ess = mcmc_ess(f2) if f2.ndim == 2 else float(n1)
    reference_side = np.var(f1, ddof=1) / (n2 * np.mean(f1) ** 2)
    target_side = (n1 / ess) * np.var(f2, ddof=1) / (n1 * np.mean(f2) ** 2)
    return float(reference_side), float(target_side), float(ess)


def predicted_re2(
    log_l_target,
    log_l_reference,
    log_z: float,
    n_reference: int,
    n_target_effective: float | None = None,
) -> float:
    r"""The relative mean-squared error :func:`fruhwirth_schnatter_re2` predicts for the bridge
    estimate with ``n_reference`` reference draws, from a smaller pilot set of them.

    Both sides of the error depend on ``N2``: the reference side falls like ``1 / N2``, and the
    optimal bridge's sample-size weights ``s1 = N1 / (N1 + N2)``, ``s2 = N2 / (N1 + N2)`` move
    the classifier ``pi(x) = s1 l(x) / (s1 l(x) + s2 Z)`` at both samples. With ``Z`` fixed at
    the pilot's estimate ``log_z``, ``pi`` is evaluated at the pilot's draws with the weights
    of ``N2 = n_reference``, and the two terms of :func:`fruhwirth_schnatter_terms` are taken
    from those draws, the reference side rescaled from the pilot's size to ``n_reference``.

    Parameters
    ----------
    log_l_target : array_like, shape (chain, draw) or (draw,)
        ``log f - log g`` at the target draws (as for :func:`bridge_core`).
    log_l_reference : array_like
        ``log f - log g`` at the pilot's i.i.d. reference draws.
    log_z : float
        The pilot's estimate (:func:`bridge_core` on these two samples).
    n_reference : int
        The number of reference draws to predict the error for.
    n_target_effective : float, optional
        As for :func:`bridge_core`.

    Returns
    -------
    float
        The predicted ``RE^2`` (``sqrt`` of it: the predicted SE of ``log Z``).
    """
    log_l_target, log_l_reference = as_two_samples(log_l_target, log_l_reference)
    n1 = float(log_l_target.size if n_target_effective is None else n_target_effective)
    n0 = float(n_reference)
    log_s1, log_s0 = np.log(n1 / (n1 + n0)), np.log(n0 / (n1 + n0))
    pi_target = classifier_probabilities(log_l_target, log_z, log_s1, log_s0)
    pi_reference = classifier_probabilities(log_l_reference, log_z, log_s1, log_s0)
    reference_side, target_side, _ = fruhwirth_schnatter_terms(pi_target, pi_reference)
    return float(reference_side * log_l_reference.size / n0 + target_side)


def bridge_core(
    log_l_target,
    log_l_reference,
    *,
    n_target_effective: float | None = None,
    tol: float = 1e-10,
    maxiter: int = 1000,
) -> Estimate:
    r"""Optimal-bridge estimate of ``log Z`` by the Meng-Wong iteration.

    .. math:: \hat r^{(t+1)} = \frac{\frac1{N_2}\sum_j l(\tilde x_j)/(s_1 l(\tilde x_j) + s_2\hat r^{(t)})}
                                   {\frac1{N_1}\sum_i 1/(s_1 l(x_i) + s_2\hat r^{(t)})},
       \qquad l = f/g,

    iterated until ``|log r(t+1) - log r(t)| < tol``; raises
    :class:`~pm_evidence.core.exceptions.ConvergenceError` otherwise. The fixed point is the root of
    the ratio-matching equation (:mod:`~pm_evidence.estimators.ratio_matching`), the same one
    discriminance sampling solves. ``s1`` uses ``n_target_effective`` when given.

    Parameters
    ----------
    log_l_target : array_like, shape (chain, draw) or (draw,)
        ``log f - log g`` at the target draws held out for estimation.
    log_l_reference : array_like
        ``log f - log g`` at i.i.d. reference draws.
    """
    nan = nonfinite_weight_diagnostics(log_l_reference)
    log_l_target, log_l_reference = as_two_samples(log_l_target, log_l_reference)
    sol = solve_ratio_matching(
        log_l_target,
        log_l_reference,
        n_target_effective=n_target_effective,
        solver="iterate",
        tol=tol,
        maxiter=maxiter,
    )
    reference_side, target_side, ess = fruhwirth_schnatter_terms(sol.pi_target, sol.pi_reference)
    re2 = reference_side + target_side
    cv = float(np.sqrt(re2))
    return Estimate(
        sol.log_c,
        cv,
        {
            "n_target": log_l_target.size,
            "n_reference": log_l_reference.size,
            "n_target_effective": float(
                log_l_target.size if n_target_effective is None else n_target_effective
            ),
            "ess_target": ess,
            "n_iter": sol.n_iter,
            "re2": re2,
            "re2_reference": reference_side,
            "re2_target": target_side,
            "cv": cv,
            "percentage_error": 100.0 * cv,
            "gamma": sol.gamma,
            **nan,
        },
    )
