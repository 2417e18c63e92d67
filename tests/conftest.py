"""Session-scoped fixtures: each exact model is compiled and sampled once for the whole suite."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence.core.utils import one_blas_thread
from pm_evidence.zoo import testing as exact_models
from tests.zoo_support import CompiledZooModel


@pytest.fixture(scope="session", autouse=True)
def one_blas_thread_per_worker():
    """Under pytest-xdist (README's ``-n 2``), each worker process uses one BLAS thread: the
    workers share the machine's cores, and OpenBLAS's threads, one per core in every worker,
    spin while they wait for each other (the tests' own CPU with warm caches: 173 s with them,
    158 with one thread each; docs/benchmarks.rst, "Products with a vector as sums; one BLAS
    thread per worker"). A run in one process keeps the library's defaults."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        yield
        return
    with one_blas_thread():
        yield


class ExactCase(NamedTuple):
    model: pm.Model
    exact: float
    idata: object


def _case(builder, draws=1000, seed=11) -> ExactCase:
    model, exact = builder()
    with model:
        idata = pm.sample(
            draws=draws,
            tune=1000,
            chains=2,
            cores=1,
            nuts_sampler="pymc",  # not nutpie when installed: the same draws everywhere
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return ExactCase(model, exact, idata)


def _session_case(name: str, builder):
    """The session fixture ``name``: ``builder``'s model, compiled and sampled once."""

    def case() -> ExactCase:
        return _case(builder)

    return pytest.fixture(scope="session", name=name)(case)


normal_mean_case = _session_case("normal_mean_case", exact_models.normal_mean)
regression_case = _session_case("regression_case", exact_models.linear_regression)
inverse_gamma_case = _session_case("inverse_gamma_case", exact_models.regression_inverse_gamma)
beta_binomial_case = _session_case("beta_binomial_case", exact_models.beta_binomial)


@pytest.fixture(
    scope="session",
    params=["normal_mean_case", "regression_case", "inverse_gamma_case", "beta_binomial_case"],
)
def exact_case(request) -> ExactCase:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def normal_mean_target():
    """``(model, exact log Z, LogDensity)`` of ``normal_mean``, compiled once per test module."""
    model, exact = exact_models.normal_mean()
    return model, exact, pme.LogDensity(model)


@pytest.fixture(scope="module")
def normal_mean_plan(normal_mean_target):
    """A path plan of ``normal_mean`` with the prior as reference (``random_seed=11``)."""
    return pme.make_plan(
        normal_mean_target[2], pme.PathOptions(reference="prior"), random_seed=11, progressbar=False
    )


@pytest.fixture
def evidences():
    """Three results of one data set, one of them flagged, for tables and figures."""
    return {
        "wide": pme.Evidence(-12.5, 0.2, "bridge", model_name="wide"),
        "narrow": pme.Evidence(-10.0, 0.3, "bridge", model_name="narrow"),
        "flagged": pme.Evidence(-11.0, 0.2, "ds", warnings=("low ESS",)),
    }


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(scope="module")
def compiled():
    """The zoo models of a test module, each compiled once (tests.zoo_support)."""
    cache = {}

    def get(entry):
        if entry.name not in cache:
            cache[entry.name] = CompiledZooModel(entry)
        return cache[entry.name]

    return get
