"""What the tests of the sampler's maps share: a mapped density's gradients against central
differences of its own terms."""

from __future__ import annotations

import numpy as np


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
