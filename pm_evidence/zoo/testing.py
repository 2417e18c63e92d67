"""The index of the model zoo: :data:`ZOO`, the PyMC models whose log evidence is known
exactly or to a stated numerical error, and :func:`zoo`, which selects among them.

:data:`ZOO` lists ordinary PyMC models (simplex, bounded, truncated, censored, mixture, Cholesky,
ordered, zero-sum, discrete, mixed and large ones) with a gold ``log Z`` computed independently
of PyMC: in closed form, by enumeration, or by Gauss-Legendre quadrature over one to three
parameters. Each entry also carries the model's joint log density written with NumPy/SciPy
(``log_joint``), which the tests compare with PyMC's own ``logp`` at a few points: that is what
ties the gold value to the function PyMC defines. A quadrature gold states its numerical error
(:class:`~pm_evidence.zoo.gold.Gold`).

The models live in one module per family, each saying how its gold values are computed:

====================================  =========================================================
module                                models
====================================  =========================================================
:mod:`pm_evidence.zoo.conjugate`      normal means, linear regressions, beta-binomial,
                                      Dirichlet and gamma-Poisson; a half-normal noise scale
:mod:`pm_evidence.zoo.glm`            Poisson, negative binomial and logistic regressions;
                                      the Pima logistic regression (not in :data:`ZOO`)
:mod:`pm_evidence.zoo.truncation`     truncated and censored likelihoods, a truncated prior,
                                      missing data
:mod:`pm_evidence.zoo.mixtures`       two potentials of mixtures, a label-switching mixture
:mod:`pm_evidence.zoo.discrete`       enumerable discrete parameters and latents
:mod:`pm_evidence.zoo.constrained`    a Cholesky factor (LKJ), ordered and zero-sum vectors
:mod:`pm_evidence.zoo.hierarchical`   group means with ``pm.Data``, eight schools
====================================  =========================================================

They rest on :mod:`pm_evidence.zoo.gold` (the :class:`~pm_evidence.zoo.gold.Gold` record, the
closed-form marginals and the quadrature rules) and :mod:`pm_evidence.zoo.entries` (the
:class:`~pm_evidence.zoo.entries.ZooModel` record). The builders, their data helpers and the
gold rules are re-exported here: ``from pm_evidence.zoo.testing import normal_mean`` works.

Each builder returns ``(model, exact_log_z)``. Distribution parameters are passed as float64
(STYLE habit 9) so that PyTensor does not downcast them.
"""

from __future__ import annotations

from collections.abc import Iterable

from pm_evidence.zoo.conjugate import (
    CONJUGATE_ENTRIES,
    DIRICHLET_CATEGORICAL_ALPHA,
    beta_binomial,
    dirichlet_categorical,
    dirichlet_categorical_data,
    dirichlet_multinomial,
    gamma_poisson,
    large_normal_mean,
    large_normal_mean_data,
    linear_regression,
    normal_halfnormal_sigma,
    normal_halfnormal_sigma_data,
    normal_mean,
    peaked_normal_mean,
    regression_halfnormal_sigma,
    regression_halfnormal_sigma_data,
    regression_inverse_gamma,
)
from pm_evidence.zoo.constrained import (
    CONSTRAINED_ENTRIES,
    lkj_2d,
    lkj_2d_log_density,
    log_prob_ordered3,
    ordered_means,
    ordered_means_data,
    zero_sum_normal,
)
from pm_evidence.zoo.discrete import (
    BERNOULLI_ONLY_P,
    DISCRETE_ENTRIES,
    SWITCH_PRIOR_MEANS,
    SWITCH_PRIOR_SDS,
    bernoulli_only,
    bernoulli_only_data,
    bernoulli_switch,
    binary_field,
    categorical_chain,
    categorical_only,
    poisson_latent_count,
    poisson_latent_count_data,
    poisson_latent_count_gold,
)
from pm_evidence.zoo.entries import (
    ZooModel,
    entry,
    select_entries,
)
from pm_evidence.zoo.glm import (
    GLM_ENTRIES,
    PIMA_COVARIATES,
    logistic_regression,
    logistic_regression_data,
    negative_binomial_regression,
    pima_data,
    pima_logistic,
    poisson_regression,
)
from pm_evidence.zoo.glm import _pima_logistic_gold as _pima_logistic_gold
from pm_evidence.zoo.gold import (
    LOG_2PI,
    Gold,
    hierarchical_log_evidence_given_tau,
    laplace_frame,
    legendre_log_integral,
    leggauss,
    log_normal_interval,
    log_scale_gold,
    normal_mean_log_evidence,
    normal_posterior,
    quadrature,
    regression_log_evidence,
)
from pm_evidence.zoo.hierarchical import (
    EIGHT_SCHOOLS_SIGMA,
    EIGHT_SCHOOLS_Y,
    HIERARCHICAL_ENTRIES,
    data_coords_dims,
    data_coords_dims_data,
    hierarchical_noncentered,
    hierarchical_noncentered_posterior_draws,
)
from pm_evidence.zoo.mixtures import (
    MIXTURE_ENTRIES,
    gaussian_mixture_10d,
    label_switching_mixture,
    label_switching_mixture_data,
    label_switching_mixture_log_density,
    mixture_energy_2d,
)
from pm_evidence.zoo.truncation import (
    TRUNCATION_ENTRIES,
    censored_normal,
    missing_data,
    truncated_normal_likelihood,
    truncated_prior,
)

__all__ = [
    "BERNOULLI_ONLY_P",
    "DIRICHLET_CATEGORICAL_ALPHA",
    "EIGHT_SCHOOLS_SIGMA",
    "EIGHT_SCHOOLS_Y",
    "LOG_2PI",
    "PIMA_COVARIATES",
    "SWITCH_PRIOR_MEANS",
    "SWITCH_PRIOR_SDS",
    "ZOO",
    "Gold",
    "ZooModel",
    "bernoulli_only",
    "bernoulli_only_data",
    "bernoulli_switch",
    "beta_binomial",
    "binary_field",
    "categorical_chain",
    "categorical_only",
    "censored_normal",
    "data_coords_dims",
    "data_coords_dims_data",
    "dirichlet_categorical",
    "dirichlet_categorical_data",
    "dirichlet_multinomial",
    "entry",
    "gamma_poisson",
    "gaussian_mixture_10d",
    "hierarchical_log_evidence_given_tau",
    "hierarchical_noncentered",
    "hierarchical_noncentered_posterior_draws",
    "label_switching_mixture",
    "label_switching_mixture_data",
    "label_switching_mixture_log_density",
    "laplace_frame",
    "large_normal_mean",
    "large_normal_mean_data",
    "legendre_log_integral",
    "leggauss",
    "linear_regression",
    "lkj_2d",
    "lkj_2d_log_density",
    "log_normal_interval",
    "log_prob_ordered3",
    "log_scale_gold",
    "logistic_regression",
    "logistic_regression_data",
    "missing_data",
    "mixture_energy_2d",
    "negative_binomial_regression",
    "normal_halfnormal_sigma",
    "normal_halfnormal_sigma_data",
    "normal_mean",
    "normal_mean_log_evidence",
    "normal_posterior",
    "ordered_means",
    "ordered_means_data",
    "peaked_normal_mean",
    "pima_data",
    "pima_logistic",
    "poisson_latent_count",
    "poisson_latent_count_data",
    "poisson_latent_count_gold",
    "poisson_regression",
    "quadrature",
    "regression_halfnormal_sigma",
    "regression_halfnormal_sigma_data",
    "regression_inverse_gamma",
    "regression_log_evidence",
    "select_entries",
    "truncated_normal_likelihood",
    "truncated_prior",
    "zero_sum_normal",
    "zoo",
]

_ENTRIES = {
    m.name: m
    for m in (
        *CONJUGATE_ENTRIES,
        *MIXTURE_ENTRIES,
        *DISCRETE_ENTRIES,
        *GLM_ENTRIES,
        *TRUNCATION_ENTRIES,
        *CONSTRAINED_ENTRIES,
        *HIERARCHICAL_ENTRIES,
    )
}

ZOO: tuple[ZooModel, ...] = tuple(
    _ENTRIES[name]
    for name in (
        # models whose builder computes the gold (no separate gold function, no log_joint)
        "normal_mean",
        "linear_regression",
        "regression_inverse_gamma",
        "beta_binomial",
        "mixture_energy_2d",
        "gaussian_mixture_10d",
        "binary_field",
        "categorical_chain",
        "peaked_normal_mean",
        # models with a gold function and a NumPy log joint
        "dirichlet_categorical",
        "dirichlet_multinomial",
        "gamma_poisson",
        "normal_halfnormal_sigma",
        "regression_halfnormal_sigma",
        "poisson_regression",
        "negative_binomial_regression",
        "logistic_regression",
        "truncated_normal_likelihood",
        "censored_normal",
        "truncated_prior",
        "missing_data",
        "label_switching_mixture",
        "lkj_2d",
        "bernoulli_switch",
        "poisson_latent_count",
        "bernoulli_only",
        "categorical_only",
        "data_coords_dims",
        "hierarchical_noncentered",
        "ordered_means",
        "zero_sum_normal",
        "large_normal_mean_1e5",
        "large_normal_mean_1e6",
    )
)
_UNLISTED = sorted(set(_ENTRIES) - {m.name for m in ZOO})
if _UNLISTED:
    raise ImportError(f"Family entries {_UNLISTED} are missing from the order of ZOO.")


def zoo(
    names: Iterable[str] | None = None, tags: Iterable[str] | None = None
) -> tuple[ZooModel, ...]:
    """Zoo entries, optionally only those named in ``names`` and/or carrying any of ``tags``.

    Raises
    ------
    KeyError
        If a name is not in the zoo (the message lists the known names).
    """
    return select_entries(ZOO, names, tags)
