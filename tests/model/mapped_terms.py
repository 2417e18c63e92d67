"""What the tests of the sampler's maps share: a mapped density's gradients against central
differences of its own terms, draws' means against exact ones within their Monte Carlo
error, and ``auto`` at defaults against an exact log Z."""

from __future__ import annotations

import warnings

import numpy as np

import pm_evidence as pme


def assert_terms_gradients(density, y: np.ndarray, atol: float, h: float = 1e-6) -> None:
    """``density.terms_grad_function``'s prior and likelihood gradients at ``y (n, dim)``
    equal central differences (step ``h``) of its prior and likelihood terms within ``atol``."""
    _, _, g_prior, g_lik = density.terms_grad_function(y)
    for k in range(y.shape[1]):
        step = np.zeros(y.shape[1])
        step[k] = h
        up, down = density.terms_grad_function(y + step), density.terms_grad_function(y - step)
        assert np.allclose((up[0] - down[0]) / (2 * h), g_prior[:, k], atol=atol)
        assert np.allclose((up[1] - down[1]) / (2 * h), g_lik[:, k], atol=atol)


def assert_means_within_mc_error(checks) -> None:
    """For each ``(values (chain, draw), exact)`` of ``checks``, the draws' mean within 4 Monte
    Carlo SEs of ``exact`` (the SE from the draws' bulk ESS)."""
    from arviz_stats.base import array_stats

    for values, exact in checks:
        ess = float(array_stats.ess(values, chain_axis=0, draw_axis=1))
        assert abs(values.mean() - exact) < 4 * values.std() / np.sqrt(ess)


def auto_within_its_se(model, log_z: float):
    """``auto`` at defaults on ``model`` (seed 1, any warning an error): reliable and within
    max(4 SE, 0.05) of the exact ``log_z``. Returns the result."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    assert ev.reliable
    assert abs(ev.log_z - log_z) < max(4 * ev.se, 0.05)
    return ev
