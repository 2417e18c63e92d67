"""Group means in the zoo: three fixed group means written with ``pm.Data``, ``coords`` and
``dims``, and the non-centered eight-schools model, with exact draws of its posterior.

Gold values: a sum of conjugate normal-mean evidences for the group means; for eight schools,
``mu`` and the school effects integrate out in closed form given ``tau``
(:func:`~pm_evidence.zoo.gold.hierarchical_log_evidence_given_tau`), and ``tau`` by 1-D
Gauss-Legendre quadrature over ``[0, 12 tau_scale]`` plus a bound on the prior tail beyond.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
from scipy import stats

from pm_evidence.zoo.entries import ZooModel, entry
from pm_evidence.zoo.gold import (
    Gold,
    hierarchical_log_evidence_given_tau,
    normal_mean_log_evidence,
    quadrature,
)

__all__ = [
    "EIGHT_SCHOOLS_SIGMA",
    "EIGHT_SCHOOLS_Y",
    "HIERARCHICAL_ENTRIES",
    "data_coords_dims",
    "data_coords_dims_data",
    "hierarchical_noncentered",
    "hierarchical_noncentered_posterior_draws",
]


# --- fixed group means with pm.Data, coords and dims ---------------------------------------------


_GROUPS = ("a", "b", "c")


def data_coords_dims_data(n_per, sigma, seed):
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(len(_GROUPS)), n_per)
    return group, rng.normal(np.array([-1.0, 0.5, 2.0])[group], sigma)


@functools.cache
def _data_coords_dims_gold(n_per, sigma, tau, seed):
    group, y = data_coords_dims_data(n_per, sigma, seed)
    log_z = sum(normal_mean_log_evidence(y[group == g], sigma, 0.0, tau) for g in range(3))
    return Gold(float(log_z), 0.0)


def _data_coords_dims_log_joint(values, n_per, sigma, tau, seed):
    group, y = data_coords_dims_data(n_per, sigma, seed)
    alpha = np.asarray(values["alpha"], dtype=float)
    return float(
        stats.norm.logpdf(alpha, 0.0, tau).sum() + stats.norm.logpdf(y, alpha[group], sigma).sum()
    )


def data_coords_dims(n_per: int = 10, sigma: float = 1.0, tau: float = 2.0, seed: int = 37):
    """Group means written with ``pm.Data``, ``coords`` and ``dims``:
    ``alpha_g ~ N(0, tau^2)`` over dim ``group`` (3 levels), ``y_i ~ N(alpha_{g_i}, sigma^2)``
    over dim ``obs_id``, with the group index and ``y`` as ``pm.Data``.

    Gold (closed form): a sum over groups of conjugate normal-mean evidences.
    """
    group, y = data_coords_dims_data(n_per, sigma, seed)
    coords = {"group": list(_GROUPS), "obs_id": np.arange(y.size)}
    with pm.Model(name="data_coords_dims", coords=coords) as model:
        group_idx = pm.Data("group_idx", group, dims="obs_id")
        y_data = pm.Data("y_data", y, dims="obs_id")
        alpha = pm.Normal("alpha", np.float64(0.0), np.float64(tau), dims="group")
        pm.Normal("y", alpha[group_idx], np.float64(sigma), observed=y_data, dims="obs_id")
    return model, _data_coords_dims_gold(n_per, sigma, tau, seed).log_z


# --- eight schools, non-centered -----------------------------------------------------------------


EIGHT_SCHOOLS_Y = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
EIGHT_SCHOOLS_SIGMA = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)


@functools.cache
def _hierarchical_noncentered_gold(mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    tau_max = 12.0 * tau_scale  # HalfNormal mass beyond: 2 (1 - Phi(12)) ~ 4e-33

    def log_f(tau):
        tau = tau[:, 0]
        return hierarchical_log_evidence_given_tau(tau, y, sigma, mu_sd) + stats.halfnorm.logpdf(
            tau, scale=tau_scale
        )

    gold = quadrature(log_f, [([tau_max / 2], [[tau_max / 2]])], (200, 400), widen=None)
    # omitted tail <= P(tau > tau_max) * sup_tau p(y | tau) / Z
    grid = np.linspace(0.0, tau_max, 2001)
    log_l_max = float(np.max(hierarchical_log_evidence_given_tau(grid, y, sigma, mu_sd)))
    log_tail = float(np.log(2.0) + stats.norm.logsf(12.0)) + log_l_max
    return Gold(gold.log_z, gold.error + float(np.exp(log_tail - gold.log_z)))


def _hierarchical_noncentered_log_joint(values, mu_sd, tau_scale):
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    mu, tau = float(values["mu"]), float(values["tau"])
    raw = np.asarray(values["theta_raw"], dtype=float)
    return float(
        stats.norm.logpdf(mu, 0.0, mu_sd)
        + stats.halfnorm.logpdf(tau, scale=tau_scale)
        + stats.norm.logpdf(raw).sum()
        + stats.norm.logpdf(y, mu + tau * raw, sigma).sum()
    )


def hierarchical_noncentered(mu_sd: float = 5.0, tau_scale: float = 5.0):
    """Eight schools, non-centered: ``mu ~ N(0, mu_sd^2)``, ``tau ~ HalfNormal(tau_scale)``,
    ``theta_raw_j ~ N(0, 1)``, ``y_j ~ N(mu + tau theta_raw_j, sigma_j^2)``, ``J = 8``.

    Gold (1-D quadrature): ``mu`` and ``theta_raw`` integrate out in closed form,
    ``y | tau ~ N(0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)``; the integral over
    ``tau in [0, 12 tau_scale]`` is Gauss-Legendre (200 vs 400 nodes; the integrand is smooth
    in ``tau``, including at 0), plus a bound on the omitted prior tail.
    """
    with pm.Model(name="hierarchical_noncentered") as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(mu_sd))
        tau = pm.HalfNormal("tau", np.float64(tau_scale))
        raw = pm.Normal("theta_raw", np.float64(0.0), np.float64(1.0), shape=8)
        pm.Normal(
            "y", mu + tau * raw, np.array(EIGHT_SCHOOLS_SIGMA), observed=np.array(EIGHT_SCHOOLS_Y)
        )
    return model, _hierarchical_noncentered_gold(mu_sd, tau_scale).log_z


def hierarchical_noncentered_posterior_draws(
    rng: np.random.Generator,
    chains: int = 4,
    draws: int = 1000,
    mu_sd: float = 5.0,
    tau_scale: float = 5.0,
) -> dict[str, np.ndarray]:
    """Exact i.i.d. draws of :func:`hierarchical_noncentered`'s posterior, ``(chain, draw)``.

    ``tau | y`` by inverting its CDF on a grid of 400,000 points over ``(0, 12 tau_scale]``
    (the density ``HalfNormal(tau) N(y | 0, diag(sigma^2 + tau^2) + mu_sd^2 11^T)`` is smooth
    and positive at 0); then ``mu | tau, y`` (normal: ``y_j ~ N(mu, sigma_j^2 + tau^2)``) and
    ``theta_raw_j | mu, tau, y`` (normal, precision ``1 + tau^2 / sigma_j^2``). Keyed by the
    model's variable names, for :meth:`~pm_evidence.LogDensity.to_unconstrained` with
    ``batch_ndim=2``.
    """
    y, sigma = np.array(EIGHT_SCHOOLS_Y), np.array(EIGHT_SCHOOLS_SIGMA)
    grid = np.linspace(0.0, 12.0 * tau_scale, 400_001)[1:]
    log_p = hierarchical_log_evidence_given_tau(grid, y, sigma, mu_sd)
    log_p = log_p + stats.halfnorm.logpdf(grid, scale=tau_scale)
    cdf = np.cumsum(np.exp(log_p - log_p.max()))
    tau = np.interp(rng.uniform(size=(chains, draws)), cdf / cdf[-1], grid)
    var = sigma**2 + tau[..., None] ** 2
    precision_mu = 1 / mu_sd**2 + np.sum(1 / var, axis=-1)
    mu = np.sum(y / var, axis=-1) / precision_mu + rng.standard_normal(tau.shape) / np.sqrt(
        precision_mu
    )
    precision_raw = 1 + tau[..., None] ** 2 / sigma**2
    mean_raw = tau[..., None] * (y - mu[..., None]) / sigma**2 / precision_raw
    raw = mean_raw + rng.standard_normal(mean_raw.shape) / np.sqrt(precision_raw)
    prefix = "hierarchical_noncentered::"
    return {f"{prefix}mu": mu, f"{prefix}tau": tau, f"{prefix}theta_raw": raw}


HIERARCHICAL_ENTRIES: tuple[ZooModel, ...] = (
    entry(
        "data_coords_dims",
        data_coords_dims,
        "closed form",
        {"data"},
        _data_coords_dims_gold,
        _data_coords_dims_log_joint,
    ),
    entry(
        "hierarchical_noncentered",
        hierarchical_noncentered,
        "quadrature 1-D (tau) of a closed-form marginal",
        {"bounded", "hierarchical"},
        _hierarchical_noncentered_gold,
        _hierarchical_noncentered_log_joint,
    ),
)
"""The group-mean models of :data:`pm_evidence.zoo.testing.ZOO`.

:meta hide-value:
"""
