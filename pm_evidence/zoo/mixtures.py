"""Mixtures in the zoo: the 2-D energy of seed 003 and the equal mixture of two 10-D Gaussians
of seed 004 (App. E.1), each written as a ``pm.Potential``, and a two-component
``pm.NormalMixture`` whose exchangeable labels give two mirror modes. Harder multimodal targets
are in ``pm_evidence.zoo.multimodal``.

Gold values: in closed form for the two potentials (prior times likelihood is a normalized
density up to a known constant, so ``log Z`` is ``log 2 pi`` and 0); for the label-switching
mixture, 2-D Gauss-Legendre quadrature over one Laplace box per mode, the boxes checked to be
disjoint (:func:`~pm_evidence.zoo.gold.quadrature`).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    LOG_2PI,
    laplace_frame,
    quadrature,
)

__all__ = [
    "MIXTURE_ENTRIES",
    "gaussian_mixture_10d",
    "label_switching_mixture",
    "label_switching_mixture_data",
    "label_switching_mixture_log_density",
    "mixture_energy_2d",
]


# --- mixtures written as potentials --------------------------------------------------------------


def mixture_energy_2d():
    """Seed 003's 2-D energy ``U(x) = -log(N([-2,0], I)/2 + N([2,0], 4I)/2) - log(2 pi)``,
    written as a ``pm.Potential`` on flat ``x``: ``Z = int exp(-U) = 2 pi``, ``log Z = 1.8379``."""
    with pm.Model(name="mixture_energy") as model:
        x = pm.Flat("x", shape=2)
        d2 = x[1] ** 2
        log_f = pt.logaddexp(
            -((x[0] + 2) ** 2 + d2) / 2 - np.log(2.0),
            -((x[0] - 2) ** 2 + d2) / 8 - np.log(8.0),
        )
        pm.Potential("minus_energy", log_f)
    return model, float(np.log(2 * np.pi))


def gaussian_mixture_10d(separation: float = 5.0, variance: float = 0.5, prior_var: float = 30.0):
    """Seed 004 App. E.1: an equal mixture of two 10-D Gaussians with covariance ``0.5 I``,
    ``separation`` apart along the first axis, with prior (reference) ``N(0, 30 I)``.

    The model is ``x ~ N(0, 30 I)`` plus a potential ``log mixture(x) - log prior(x)``, so that
    prior x likelihood is the normalized mixture: ``log Z = 0`` exactly.
    """
    dim = 10
    shift = np.zeros(dim)
    shift[0] = separation
    with pm.Model(name="gaussian_mixture") as model:
        x = pm.Normal("x", np.float64(0.0), np.float64(np.sqrt(prior_var)), shape=dim)
        norm = -0.5 * dim * np.log(2 * np.pi * variance)
        comp0 = norm - pt.sum(x**2) / (2 * variance)
        comp1 = norm - pt.sum((x - shift) ** 2) / (2 * variance)
        log_mixture = pt.logaddexp(comp0, comp1) - np.log(2.0)
        log_prior = -0.5 * dim * np.log(2 * np.pi * prior_var) - pt.sum(x**2) / (2 * prior_var)
        pm.Potential("mixture_over_prior", log_mixture - log_prior)
    return model, 0.0


# --- label switching -----------------------------------------------------------------------------


def label_switching_mixture_data(n_per, separation, sigma, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [rng.normal(-separation, sigma, size=n_per), rng.normal(separation, sigma, size=n_per)]
    )


def label_switching_mixture_log_density(means, y, sigma, tau):
    """Joint log density at rows ``(m_1, m_2)``:
    ``prod_i [N(y_i | m_1, sigma^2) + N(y_i | m_2, sigma^2)] / 2`` times the priors."""
    z = (y[None, :, None] - means[:, None, :]) / sigma
    comp = -0.5 * z**2 - np.log(sigma) - 0.5 * LOG_2PI  # log N(y_i | m_k, sigma^2), (m, n, 2)
    log_lik = np.sum(special.logsumexp(comp, axis=-1) - np.log(2.0), axis=-1)
    return log_lik + np.sum(stats.norm.logpdf(means, 0.0, tau), axis=-1)


@functools.cache
def _label_switching_mixture_gold(n_per, separation, sigma, tau, seed):
    y = label_switching_mixture_data(n_per, separation, sigma, seed)

    def log_f(means):
        return label_switching_mixture_log_density(means, y, sigma, tau)

    # the two mirror modes, one box each (the boxes are disjoint: see the docstring)
    low, high = y[y < 0].mean(), y[y > 0].mean()
    boxes = [
        laplace_frame(log_f, [low, high], half_width=8.0),
        laplace_frame(log_f, [high, low], half_width=8.0),
    ]
    for (c1, m1), (c2, m2) in itertools.combinations(boxes, 2):
        reach = np.abs(m1).sum(axis=1) + np.abs(m2).sum(axis=1)
        if np.all(np.abs(c1 - c2) < 1.3 * reach):
            raise RuntimeError("the quadrature boxes of the two modes overlap")
    return quadrature(log_f, boxes, (48, 96))


def _label_switching_mixture_log_joint(values, n_per, separation, sigma, tau, seed):
    y = label_switching_mixture_data(n_per, separation, sigma, seed)
    means = np.asarray(values["means"], dtype=float)[None, :]
    return float(label_switching_mixture_log_density(means, y, sigma, tau)[0])


def label_switching_mixture(
    n_per: int = 20, separation: float = 3.0, sigma: float = 1.0, tau: float = 5.0, seed=31
):
    """``y_i ~ 0.5 N(m_1, sigma^2) + 0.5 N(m_2, sigma^2)`` (``pm.NormalMixture``),
    ``m_1, m_2 ~ N(0, tau^2)`` i.i.d.: exchangeable components, so the posterior has two
    mirror modes ``(a, b)`` and ``(b, a)`` for data in two clusters at ``-+separation``.

    Gold (2-D quadrature): Gauss-Legendre over one box of +-8 Laplace standard deviations per
    mode (48 vs 96 nodes, widened 1.3x; the widened boxes are checked to be disjoint, and the
    mass outside them, e.g. both means in one cluster, is below ``exp(-100)`` relative).
    """
    y = label_switching_mixture_data(n_per, separation, sigma, seed)
    with pm.Model(name="label_switching_mixture") as model:
        means = pm.Normal("means", np.float64(0.0), np.float64(tau), shape=2)
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=means, sigma=np.float64(sigma), observed=y)
    return model, _label_switching_mixture_gold(n_per, separation, sigma, tau, seed).log_z


MIXTURE_ENTRIES: tuple[ZooModel, ...] = (
    entry("mixture_energy_2d", mixture_energy_2d, "closed form", {"potential", "multimodal"}),
    entry("gaussian_mixture_10d", gaussian_mixture_10d, "closed form", {"potential", "multimodal"}),
    entry(
        "label_switching_mixture",
        label_switching_mixture,
        "quadrature 2-D (one box per mode)",
        {"multimodal", "mixture"},
        _label_switching_mixture_gold,
        _label_switching_mixture_log_joint,
    ),
)
"""The mixtures of :data:`pm_evidence.zoo.testing.ZOO`.

:meta hide-value:
"""
