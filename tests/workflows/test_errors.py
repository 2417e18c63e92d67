"""Bad input gets a clear error that names the problem and the fix."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError, NonFiniteLogDensityError


def test_model_without_free_variables():
    with pm.Model() as model:
        pm.Normal("y", np.float64(0.0), np.float64(1.0), observed=np.array([0.1, 0.2]))
    with pytest.raises(EvidenceInputError, match="no free variables"):
        pme.marginal_likelihood(model, method="bridge", progressbar=False)


def test_discrete_free_variable_refused():
    with pm.Model() as model:
        k = pm.Poisson("k", np.float64(3.0))
        pm.Normal("y", k, np.float64(1.0), observed=np.array([2.0]))
    with pytest.raises(EvidenceInputError, match=r"discrete free variables \['k'\]"):
        pme.marginal_likelihood(model, method="bridge", progressbar=False)


def test_unknown_method_lists_valid_ones(normal_mean_case):
    with pytest.raises(
        EvidenceInputError, match=r"'chib' but it must be one of \['auto', 'is', 'ris'"
    ):
        pme.marginal_likelihood(normal_mean_case.model, method="chib")
    with pytest.raises(EvidenceInputError, match=r"bridge reference 'warp2'.*\['auto', 'normal'"):
        pme.bridge_sampling(normal_mean_case.model, idata=normal_mean_case.idata, reference="warp2")
    with pytest.raises(EvidenceInputError, match="reference 'uniform'"):
        pme.importance_sampling(
            normal_mean_case.model, idata=normal_mean_case.idata, reference="uniform"
        )


def test_posterior_missing_variable(normal_mean_case):
    bad = xr.Dataset({"other": (("chain", "draw"), np.zeros((2, 10)))})
    with pytest.raises(
        EvidenceInputError, match=r"lack the model's free variables \['normal_mean::mu'\]"
    ):
        pme.bridge_sampling(normal_mean_case.model, idata=bad)


def test_posterior_with_nan_draws(normal_mean_case):
    post = normal_mean_case.idata.posterior.to_dataset().copy(deep=True)
    post["normal_mean::mu"][0, 3] = np.nan
    with pytest.raises(NonFiniteLogDensityError, match="non-finite values"):
        pme.bridge_sampling(normal_mean_case.model, idata=post)


def test_non_finite_log_density_at_draws():
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Potential("wall", pm.math.switch(mu > 0.5, -np.inf, 0.0))
        pm.Normal("y", mu, np.float64(1.0), observed=np.array([0.0]))
    post = xr.Dataset({"mu": (("chain", "draw"), np.linspace(-1, 1, 40).reshape(2, 20))})
    with pytest.raises(NonFiniteLogDensityError, match="not finite at 10 of 20 posterior draws"):
        pme.bridge_sampling(model, idata=post)


def test_improper_prior_cannot_be_a_reference():
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, np.float64(1.0), observed=np.array([0.0]))
    with pytest.raises(EvidenceInputError, match="improper"):
        pme.importance_sampling(model, reference="prior")


def test_reference_that_does_not_overlap(normal_mean_case):
    far = pme.MultivariateNormalReference(mean=np.array([50.0]), chol=np.array([[0.01]]))
    with pytest.raises(pme.OverlapError, match="do not overlap"):
        pme.discriminance_sampling(
            normal_mean_case.model, idata=normal_mean_case.idata, reference=far, random_seed=0
        )


def test_reference_dimension_mismatch(normal_mean_case):
    ref = pme.MultivariateNormalReference(mean=np.zeros(2), chol=np.eye(2))
    with pytest.raises(EvidenceInputError, match="dimension 2"):
        pme.importance_sampling(normal_mean_case.model, reference=ref)


def test_idata_without_posterior(normal_mean_case):
    with pytest.raises(EvidenceInputError, match="no 'posterior' group"):
        pme.bridge_sampling(normal_mean_case.model, idata=xr.DataTree())


def test_bridge_non_convergence_is_an_error(normal_mean_case):
    with pytest.raises(pme.ConvergenceError, match="did not converge"):
        pme.bridge_sampling(
            normal_mean_case.model,
            idata=normal_mean_case.idata,
            maxiter=1,
            tol=1e-15,
            random_seed=0,
        )


def test_unknown_option_lists_the_accepted_ones():
    with pytest.raises(
        EvidenceInputError, match=r"Unexpected options \['refernce'\] for is; accepted here: "
    ):
        pme.importance_sampling(None, refernce="normal")
    with pytest.raises(EvidenceInputError, match=r"\['n_sweeps'\].*'annealing'"):
        pme.annealed_importance_sampling(None, n_sweeps=10)  # a tempering option


def test_option_objects_are_checked():
    with pytest.raises(
        EvidenceInputError, match="posterior= must be an instance of PosteriorOptions, got dict"
    ):
        pme.discriminance_sampling(None, posterior={"reference": "normal"})
    with pytest.raises(
        EvidenceInputError, match="annealing= must be an instance of AnnealingOptions"
    ):
        pme.annealed_importance_sampling(None, annealing=pme.TemperingOptions())
    with pytest.raises(EvidenceInputError, match="n_reference must be a positive integer, got 0"):
        pme.PosteriorOptions(n_reference=0)
    with pytest.raises(EvidenceInputError, match="repetitions must be >= 1, got 0"):
        pme.bridge_sampling(None, repetitions=0)
    with pytest.raises(EvidenceInputError, match="Requested version 'ternary'"):
        pme.annealed_discriminance_sampling(None, version="ternary")  # before any model work
    with pytest.raises(EvidenceInputError, match="Requested rule 'median'"):
        pme.is_ris_combination(None, rule="median")
