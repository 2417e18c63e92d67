"""Discrete parameters in the zoo: binary and categorical fields with a pairwise
``pm.Potential`` (:func:`binary_field`, :func:`categorical_chain`), all-discrete models
(:func:`bernoulli_only`, :func:`categorical_only`), and discrete latents beside a continuous
normal mean (:func:`bernoulli_switch`, and the unbounded count of
:func:`poisson_latent_count`).

Gold values: by enumerating the discrete states; where a normal mean sits beside them, its
conjugate evidence in closed form for each state
(:func:`~pm_evidence.zoo.gold.normal_mean_log_evidence`). The Poisson count's sum is truncated at
``k = 400`` and its error bounds the omitted tail.
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
    Gold,
    normal_mean_log_evidence,
)

__all__ = [
    "BERNOULLI_ONLY_P",
    "DISCRETE_ENTRIES",
    "SWITCH_PRIOR_MEANS",
    "SWITCH_PRIOR_SDS",
    "bernoulli_only",
    "bernoulli_only_data",
    "bernoulli_switch",
    "binary_field",
    "categorical_chain",
    "categorical_only",
    "poisson_latent_count",
    "poisson_latent_count_data",
    "poisson_latent_count_gold",
]


# --- discrete fields with a potential ------------------------------------------------------------


def binary_field(n: int = 6, coupling: float = 0.4, seed: int = 5):
    """``n`` Bernoulli(1/2) variables with a random pairwise ``pm.Potential``; log Z by
    enumerating all ``2^n`` states."""
    rng = np.random.default_rng(seed)
    weights = np.triu(rng.normal(0, coupling, (n, n)), 1)
    bias = rng.normal(0, 0.5, n)
    states = np.array(list(itertools.product([0, 1], repeat=n)), dtype=float)
    energy = np.einsum("si,ij,sj->s", states, weights, states) + states @ bias
    exact = float(special.logsumexp(energy) - n * np.log(2.0))
    with pm.Model(name="binary_field") as model:
        x = pm.Bernoulli("x", np.float64(0.5), shape=n)
        xf = x.astype("float64")
        pm.Potential("pairwise", xf @ weights @ xf + xf @ bias)
    return model, exact


def categorical_chain(n: int = 6, n_levels: int = 3, coupling: float = 0.8, seed: int = 12):
    """``n`` Categorical variables with ``n_levels`` values each (a Potts-like chain):
    non-uniform prior probabilities ``p``, a unary field ``h[i, x_i]`` and a pairwise term
    ``J[x_i, x_{i+1}]`` between neighbours as a ``pm.Potential``; log Z by enumerating all
    ``n_levels^n`` states."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(n_levels, 3.0))
    pairwise = rng.normal(0.0, coupling, (n_levels, n_levels))
    unary = rng.normal(0.0, 0.5, (n, n_levels))
    states = np.array(list(itertools.product(range(n_levels), repeat=n)))
    log_prior = np.log(p)[states].sum(axis=1)
    energy = unary[np.arange(n), states].sum(axis=1) + pairwise[states[:, :-1], states[:, 1:]].sum(
        axis=1
    )
    exact = float(special.logsumexp(log_prior + energy))
    with pm.Model(name="categorical_chain") as model:
        x = pm.Categorical("x", p=p, shape=n)
        pair = pt.as_tensor(pairwise)[x[:-1], x[1:]].sum()
        field = pt.as_tensor(unary)[np.arange(n), x].sum()
        pm.Potential("potts", pair + field)
    return model, exact


# --- discrete latent variables -------------------------------------------------------------------

SWITCH_PRIOR_MEANS = (-2.0, 2.0)
SWITCH_PRIOR_SDS = (1.0, 3.0)
_SWITCH_NOISE_SDS = (1.0, 2.0)


def _bernoulli_switch_data(n, seed):
    return np.random.default_rng(seed).normal(0.5, 1.5, size=n)


@functools.cache
def _bernoulli_switch_gold(n, p, seed):
    y = _bernoulli_switch_data(n, seed)
    # given z, mu_z is a conjugate normal mean and the other mean integrates to 1
    terms = [
        np.log(1 - p)
        + normal_mean_log_evidence(
            y, _SWITCH_NOISE_SDS[0], SWITCH_PRIOR_MEANS[0], SWITCH_PRIOR_SDS[0]
        ),
        np.log(p)
        + normal_mean_log_evidence(
            y, _SWITCH_NOISE_SDS[1], SWITCH_PRIOR_MEANS[1], SWITCH_PRIOR_SDS[1]
        ),
    ]
    return Gold(float(special.logsumexp(terms)), 0.0)


def _bernoulli_switch_log_joint(values, n, p, seed):
    y = _bernoulli_switch_data(n, seed)
    z, mu = int(values["z"]), np.asarray(values["mu"], dtype=float)
    return float(
        stats.bernoulli.logpmf(z, p)
        + stats.norm.logpdf(mu, SWITCH_PRIOR_MEANS, SWITCH_PRIOR_SDS).sum()
        + stats.norm.logpdf(y, mu[z], _SWITCH_NOISE_SDS[z]).sum()
    )


def bernoulli_switch(n: int = 20, p: float = 0.3, seed: int = 33):
    """A Bernoulli switch next to continuous means: ``z ~ Bernoulli(p)``,
    ``mu_k ~ N((-2, 2)_k, (1, 3)_k^2)``, ``y_i ~ N(mu_z, (1, 2)_z^2)``.

    Gold (enumeration over ``z`` and closed form over ``mu``):
    ``Z = (1 - p) Z_0 + p Z_1``, ``Z_k`` the conjugate normal-mean evidence of branch ``k``
    (the unused mean integrates to 1).
    """
    y = _bernoulli_switch_data(n, seed)
    with pm.Model(name="bernoulli_switch") as model:
        z = pm.Bernoulli("z", np.float64(p))
        mu = pm.Normal("mu", np.array(SWITCH_PRIOR_MEANS), np.array(SWITCH_PRIOR_SDS), shape=2)
        noise = pm.math.constant(np.array(_SWITCH_NOISE_SDS))
        pm.Normal("y", mu[z], noise[z], observed=y)
    return model, _bernoulli_switch_gold(n, p, seed).log_z


def poisson_latent_count_data(n, shift, sigma, seed):
    return np.random.default_rng(seed).normal(0.3 + shift * 6, sigma, size=n)


@functools.cache
def poisson_latent_count_gold(n, rate, shift, tau, sigma, seed, k_max=400):
    y = poisson_latent_count_data(n, shift, sigma, seed)
    k = np.arange(k_max + 1)
    terms = stats.poisson.logpmf(k, rate) + normal_mean_log_evidence(y, sigma, shift * k, tau)
    log_z = float(special.logsumexp(terms))
    # tail bound: every Z_k <= sup_theta prod_i N(y_i | theta, sigma^2) = L_max
    log_l_max = float(np.sum(stats.norm.logpdf(y, y.mean(), sigma)))
    log_tail = float(stats.poisson.logsf(k_max, rate)) + log_l_max
    return Gold(log_z, float(np.exp(log_tail - log_z)))


def _poisson_latent_count_log_joint(values, n, rate, shift, tau, sigma, seed):
    y = poisson_latent_count_data(n, shift, sigma, seed)
    k, mu = int(values["k"]), float(values["mu"])
    return float(
        stats.poisson.logpmf(k, rate)
        + stats.norm.logpdf(mu, 0.0, tau)
        + stats.norm.logpdf(y, mu + shift * k, sigma).sum()
    )


def poisson_latent_count(
    n: int = 10,
    rate: float = 4.0,
    shift: float = 0.5,
    tau: float = 1.0,
    sigma: float = 1.0,
    seed: int = 34,
):
    """An unbounded discrete latent next to a continuous one: ``k ~ Poisson(rate)``,
    ``mu ~ N(0, tau^2)``, ``y_i ~ N(mu + shift k, sigma^2)``.

    Gold (truncated sum over ``k <= 400`` of ``Poisson(k) Z_k``, ``Z_k`` the conjugate
    normal-mean evidence with prior mean ``shift k``); the error bounds the omitted tail by
    ``P(k > 400) L_max / Z`` with ``L_max`` the maximum likelihood.
    """
    y = poisson_latent_count_data(n, shift, sigma, seed)
    with pm.Model(name="poisson_latent_count") as model:
        k = pm.Poisson("k", np.float64(rate))
        mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
        pm.Normal("y", mu + np.float64(shift) * k, np.float64(sigma), observed=y)
    return model, poisson_latent_count_gold(n, rate, shift, tau, sigma, seed).log_z


BERNOULLI_ONLY_P = (0.2, 0.5, 0.7)


def _bernoulli_only_success(z):
    """Success probability of the observations given the latent bits ``z`` (last axis)."""
    return 0.15 + 0.7 * np.mean(z, axis=-1)


def bernoulli_only_data(n, seed):
    return np.random.default_rng(seed).binomial(1, 0.6, size=n)


def _bernoulli_only_log_joint(values, n, seed):
    y = bernoulli_only_data(n, seed)
    z = np.asarray(values["z"], dtype=int)
    q = _bernoulli_only_success(z)
    return float(
        stats.bernoulli.logpmf(z, BERNOULLI_ONLY_P).sum() + stats.bernoulli.logpmf(y, q).sum()
    )


@functools.cache
def _bernoulli_only_gold(n, seed):
    states = itertools.product((0, 1), repeat=len(BERNOULLI_ONLY_P))
    terms = [_bernoulli_only_log_joint({"z": np.array(s)}, n, seed) for s in states]
    return Gold(float(special.logsumexp(terms)), 0.0)


def bernoulli_only(n: int = 20, seed: int = 35):
    """All-discrete: ``z_j ~ Bernoulli((0.2, 0.5, 0.7)_j)``, ``y_i ~ Bernoulli(0.15 + 0.7
    mean(z))``.

    Gold (enumeration of the 8 states of ``z``).
    """
    y = bernoulli_only_data(n, seed)
    with pm.Model(name="bernoulli_only") as model:
        z = pm.Bernoulli("z", np.array(BERNOULLI_ONLY_P), shape=len(BERNOULLI_ONLY_P))
        pm.Bernoulli("y", np.float64(0.15) + np.float64(0.7) * z.mean(), observed=y)
    return model, _bernoulli_only_gold(n, seed).log_z


_CATEGORICAL_P1 = (0.2, 0.5, 0.3)
_CATEGORICAL_P2 = (0.1, 0.2, 0.3, 0.4)
_CATEGORICAL_RATES = ((0.5, 1.0, 2.0, 4.0), (1.5, 2.5, 3.5, 5.0), (3.0, 0.8, 6.0, 2.0))


def _categorical_only_data(n, seed):
    return np.random.default_rng(seed).poisson(2.7, size=n)


def _categorical_only_log_joint(values, n, seed):
    y = _categorical_only_data(n, seed)
    c1, c2 = int(values["c1"]), int(values["c2"])
    return float(
        np.log(_CATEGORICAL_P1[c1])
        + np.log(_CATEGORICAL_P2[c2])
        + stats.poisson.logpmf(y, _CATEGORICAL_RATES[c1][c2]).sum()
    )


@functools.cache
def _categorical_only_gold(n, seed):
    states = itertools.product(range(len(_CATEGORICAL_P1)), range(len(_CATEGORICAL_P2)))
    terms = [_categorical_only_log_joint({"c1": a, "c2": b}, n, seed) for a, b in states]
    return Gold(float(special.logsumexp(terms)), 0.0)


def categorical_only(n: int = 15, seed: int = 36):
    """All-discrete: ``c_1 ~ Categorical(0.2, 0.5, 0.3)``, ``c_2 ~ Categorical(0.1, 0.2, 0.3,
    0.4)``, ``y_i ~ Poisson(R[c_1, c_2])`` for a fixed 3 x 4 table of rates ``R``.

    Gold (enumeration of the 12 states).
    """
    y = _categorical_only_data(n, seed)
    with pm.Model(name="categorical_only") as model:
        c1 = pm.Categorical("c1", p=np.array(_CATEGORICAL_P1))
        c2 = pm.Categorical("c2", p=np.array(_CATEGORICAL_P2))
        rates = pm.math.constant(np.array(_CATEGORICAL_RATES))
        pm.Poisson("y", rates[c1, c2], observed=y)
    return model, _categorical_only_gold(n, seed).log_z


DISCRETE_ENTRIES: tuple[ZooModel, ...] = (
    entry("binary_field", binary_field, "enumeration", {"discrete", "potential"}),
    entry("categorical_chain", categorical_chain, "enumeration", {"discrete", "potential"}),
    entry(
        "bernoulli_switch",
        bernoulli_switch,
        "enumeration + closed form",
        {"discrete", "mixed_discrete"},
        _bernoulli_switch_gold,
        _bernoulli_switch_log_joint,
    ),
    entry(
        "poisson_latent_count",
        poisson_latent_count,
        "truncated sum + closed form",
        {"discrete", "mixed_discrete", "unbounded_discrete"},
        poisson_latent_count_gold,
        _poisson_latent_count_log_joint,
    ),
    entry(
        "bernoulli_only",
        bernoulli_only,
        "enumeration",
        {"discrete"},
        _bernoulli_only_gold,
        _bernoulli_only_log_joint,
    ),
    entry(
        "categorical_only",
        categorical_only,
        "enumeration",
        {"discrete"},
        _categorical_only_gold,
        _categorical_only_log_joint,
    ),
)
"""The models of :data:`pm_evidence.zoo.testing.ZOO` with discrete parameters.

:meta hide-value:
"""
