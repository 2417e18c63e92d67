"""Methods at their defaults on ordinary models of the zoo (pm_evidence.zoo.testing.ZOO), against
gold log Z computed without PyMC: each result lies within 4 of its own SEs of the gold value, or
the method refuses the model with an error that names what is not supported.

The fast cells run in CI; those marked ``slow`` (minutes each) run with ``pytest -m slow``, and
``benchmarks/zoo.py`` runs every method on every zoo model.
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.zoo.testing import zoo

SEED = 20261123


@cache
def _model(name: str):
    (entry,) = zoo([name])
    model, gold = entry.build()
    return model, gold, entry.gold_error


def _check(name: str, results) -> None:
    _, gold, gold_error = _model(name)
    results = results if isinstance(results, dict) else {results.method: results}
    for method, ev in results.items():
        assert np.isfinite(ev.log_z) and ev.se > 0, (name, method, ev)
        error = abs(ev.log_z - gold)
        assert error < 4 * ev.se + gold_error + 1e-3, (
            f"{name}/{method}: {ev.log_z:.4f} ± {ev.se:.4f} against gold {gold:.4f} "
            f"({error / ev.se:.1f} SE)"
        )


def _run(name: str, method, **options):
    model, _, _ = _model(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # asserted through the numbers here
        return pme.marginal_likelihood(
            model, method=method, random_seed=SEED, progressbar=False, **options
        )


@pytest.mark.parametrize(
    ("name", "methods"),
    [
        ("dirichlet_categorical", ["bridge"]),  # simplex transform, K -> K - 1
        ("zero_sum_normal", ["bridge", "ds"]),  # zero-sum transform
        ("missing_data", ["bridge"]),  # imputed values are free variables
        pytest.param("dirichlet_categorical", ["ais"], marks=pytest.mark.slow),
        # bounded: proposals beyond sigma > 0
        pytest.param("regression_halfnormal_sigma", ["rts"], marks=pytest.mark.slow),
        # Cholesky transform; HMC without the fused graph
        pytest.param("lkj_2d", ["bridge", "ais"], marks=pytest.mark.slow),
    ],
)
def test_methods_at_defaults_on_zoo_models(name, methods):
    _check(name, _run(name, methods))


def test_path_methods_in_a_list_on_a_model_with_data_coords_and_dims():
    """The list form that raised ParameterValueError('sigma > 0') on pm.Data + coords + dims."""
    results = _run("data_coords_dims", ["ais", "raise", "rts", "ti"])
    assert list(results) == ["ais", "raise", "rts", "ti"]
    _check("data_coords_dims", dict(results))


def test_discrete_switch_next_to_continuous_means():
    """A compound kernel (HMC on the means, Gibbs on the switch) at defaults; bridge refuses
    the model and names the path methods."""
    ev = _run("bernoulli_switch", "rts")
    assert ev.diagnostics["kernel"] == "hmc+gibbs"
    _check("bernoulli_switch", ev)
    with pytest.raises(EvidenceInputError, match="Use a path method"):
        _run("bernoulli_switch", "bridge")


def test_unbounded_latent_count_is_refused_by_name():
    with pytest.raises(EvidenceInputError, match=r"have unbounded support.*kernel=step"):
        _run("poisson_latent_count", "ais")
