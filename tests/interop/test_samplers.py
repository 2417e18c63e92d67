"""Draws of PyMC's other NUTS back ends (issue 37, part 2): nutpie's draws are read, checked
against the model through the log density nutpie stores (``sample_stats.logp``) and give the
exact log Z; numpyro and blackjax where installed. The rule that reads each sampler's stored
log density is tested on its own, numpyro's sign included."""

from __future__ import annotations

import importlib.util

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pm_evidence as pme
from pm_evidence.model.draws import LP_CHECK_DRAWS, stored_log_density

Y = np.array([0.1, 0.5, -0.3, 1.2, 0.7, 0.2, -0.4, 0.9])


def _normal_mean(prior_sd: float) -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(prior_sd))
        pm.Normal("y", mu, np.float64(1.0), observed=Y)
    return model


def _exact(prior_sd: float) -> float:
    cov = np.eye(Y.size) + prior_sd**2 * np.ones((Y.size, Y.size))
    return float(stats.multivariate_normal(np.zeros(Y.size), cov).logpdf(Y))


def _sample(model, sampler: str):
    with model:
        return pm.sample(
            draws=1000, tune=500, chains=2, cores=1, nuts_sampler=sampler, random_seed=1,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


@pytest.fixture(scope="module")
def nutpie_draws():
    pytest.importorskip("nutpie")
    return _sample(_normal_mean(1.0), "nutpie")


def test_nutpie_stores_the_log_density_as_logp(nutpie_draws):
    stats_ = nutpie_draws["sample_stats"]
    assert "logp" in stats_.data_vars and "lp" not in stats_.data_vars
    where, _ = stored_log_density(nutpie_draws)
    assert where == "sample_stats.logp (nutpie)"


def test_nutpie_draws_give_the_exact_evidence(nutpie_draws):
    model = _normal_mean(1.0)
    ev = pme.marginal_likelihood(
        model, idata=nutpie_draws, method="bridge", random_seed=2, progressbar=False
    )
    assert ev.reliable, ev.warnings  # checked: no "could not be checked" warning
    assert abs(ev.log_z - _exact(1.0)) < 4 * ev.se + 0.02


def test_nutpie_draws_of_another_model_are_refused(nutpie_draws):
    """The check runs on nutpie's draws (it is not skipped for want of ``lp``)."""
    with pytest.raises(pme.EvidenceInputError, match=r"sample_stats\.logp \(nutpie\)") as err:
        pme.marginal_likelihood(
            _normal_mean(3.0), idata=nutpie_draws, method="bridge", progressbar=False
        )
    assert f"of {LP_CHECK_DRAWS} draws checked" in str(err.value)


def test_thinned_sample_stats_are_said_unchecked(nutpie_draws):
    cut = nutpie_draws.copy()
    cut["sample_stats"] = xr.DataTree(
        nutpie_draws["sample_stats"].to_dataset().isel(draw=slice(0, 500))
    )
    ev = pme.marginal_likelihood(
        _normal_mean(1.0), idata=cut, method="bridge", random_seed=2, progressbar=False
    )
    assert not ev.reliable
    assert any("could not be checked" in w and "(2, 500)" in w for w in ev.warnings)


def _tree(library: str | None, **stats_vars) -> xr.DataTree:
    posterior = xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 3)))})
    if library is not None:
        posterior.attrs["inference_library"] = library
    sample_stats = xr.Dataset({k: (("chain", "draw"), v) for k, v in stats_vars.items()})
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})


@pytest.mark.parametrize(
    ("library", "variables", "where", "sign"),
    [
        ("pymc", {"lp": 1.0}, "sample_stats.lp (pymc)", 1.0),
        ("nutpie", {"logp": 1.0, "lp": 9.0}, "sample_stats.logp (nutpie)", 1.0),
        ("numpyro", {"lp": 1.0}, "minus sample_stats.lp (numpyro)", -1.0),
        ("blackjax", {"lp": 1.0}, "sample_stats.lp (blackjax)", 1.0),
        (None, {"logp": 1.0}, "sample_stats.logp", 1.0),
    ],
)
def test_each_samplers_stored_log_density(library, variables, where, sign):
    values = {k: np.full((2, 3), v) for k, v in variables.items()}
    found, lp = stored_log_density(_tree(library, **values))
    assert found == where
    np.testing.assert_array_equal(lp, sign * np.ones((2, 3)))


def test_no_stored_log_density_is_none():
    assert stored_log_density(_tree("nutpie", energy=np.zeros((2, 3)))) is None


@pytest.mark.parametrize("sampler", ["numpyro", "blackjax"])
def test_jax_samplers_where_installed(sampler):
    if importlib.util.find_spec(sampler) is None:
        pytest.skip(f"{sampler} is not installed (pip install {sampler})")
    model = _normal_mean(1.0)
    idata = _sample(model, sampler)
    ev = pme.marginal_likelihood(
        model, idata=idata, method="bridge", random_seed=2, progressbar=False
    )
    assert ev.reliable, ev.warnings
    assert abs(ev.log_z - _exact(1.0)) < 4 * ev.se + 0.02
