"""Bambi models and fits (issue 37, part 1): the evidence of a Bambi formula against its exact
value, draws of Bambi's fits mapped back onto the PyMC model exactly (group terms, centred
intercepts), two formulas compared in one call, Bambi's improper priors flagged, and the
errors for what cannot be read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pm_evidence as pme
from pm_evidence.interop.bambi import bambi_draws
from pm_evidence.model.draws import stored_log_density

bmb = pytest.importorskip("bambi")

SIGMA = 1.0  # the noise scale, fixed in the model (Bambi: priors={"sigma": 1.0})
PRIOR_SD = {"Intercept": 2.0, "x": 3.0}


def _data(n=20, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.normal(size=n), "x2": rng.normal(size=n)})
    frame["g"] = np.repeat(["a", "b", "c", "d"], n // 4)
    frame["y"] = 0.5 + 1.5 * frame["x"] + rng.normal(size=n)
    return frame


def _conjugate_model(frame) -> bmb.Model:
    """``y ~ x`` with Normal priors on both coefficients and the noise scale fixed."""
    priors = {name: bmb.Prior("Normal", mu=0.0, sigma=sd) for name, sd in PRIOR_SD.items()}
    return bmb.Model("y ~ x", frame, priors={**priors, "sigma": SIGMA})


def _exact_log_z(frame) -> float:
    """``log N(y; 0, sigma^2 I + X S X^T)``, with Bambi's design: the intercept is that of the
    centred predictor (``center_predictors=True``, its default), so ``X = [1, x - mean(x)]``."""
    x = frame["x"].to_numpy()
    design = np.column_stack([np.ones_like(x), x - x.mean()])
    prior_cov = np.diag([PRIOR_SD["Intercept"] ** 2, PRIOR_SD["x"] ** 2])
    cov = SIGMA**2 * np.eye(x.size) + design @ prior_cov @ design.T
    return float(stats.multivariate_normal(np.zeros(x.size), cov).logpdf(frame["y"]))


def _fit(model, seed=1, draws=1000):
    return model.fit(draws=draws, tune=500, chains=2, cores=1, random_seed=seed, progressbar=False)


def test_conjugate_bambi_formula_matches_the_exact_evidence():
    frame = _data()
    model = _conjugate_model(frame)
    assert not model.built
    idata = _fit(model)
    ev = pme.marginal_likelihood(
        model, idata=idata, method="bridge", random_seed=2, progressbar=False
    )
    exact = _exact_log_z(frame)
    assert ev.reliable, ev.warnings
    assert abs(ev.log_z - exact) < 4 * ev.se + 0.02, (ev.log_z, ev.se, exact)


def test_an_unbuilt_model_is_built_and_gives_the_pymc_models_evidence():
    """Bambi's priors as Bambi sets them: the same number as the PyMC model it builds, with
    the same seed (here from NUTS that pm_evidence runs itself)."""
    frame = _data()
    model = _conjugate_model(frame)
    pymc_model, idata = pme.from_bambi(model)
    assert model.built and isinstance(pymc_model, pm.Model) and idata is None
    assert sorted(v.name for v in pymc_model.free_RVs) == ["Intercept", "x"]
    kwargs = {"method": "bridge", "random_seed": 3, "progressbar": False}
    kwargs |= {"draws": 300, "tune": 300, "chains": 2}
    ev_bambi = pme.marginal_likelihood(model, **kwargs)
    ev_pymc = pme.marginal_likelihood(pymc_model, **kwargs)
    assert ev_bambi.log_z == ev_pymc.log_z and ev_bambi.se == ev_pymc.se


@pytest.fixture(scope="module")
def group_fit():
    """A fit of a formula with a group intercept and slope (two non-centred offsets)."""
    model = bmb.Model("y ~ x + (x|g)", _data())
    return model, _fit(model, draws=60)


def test_fits_with_group_terms_map_back_exactly(group_fit):
    """Bambi's fit drops the offsets of group terms and un-centres the intercept; the mapped
    draws reproduce the log density the sampler stored at every draw."""
    model, idata = group_fit
    assert not any(name.endswith("_offset") for name in idata["posterior"].data_vars)
    mapped = bambi_draws(model, idata)
    assert {"1|g_offset", "x|g_offset"} <= set(mapped["posterior"].data_vars)
    target = pme.LogDensity.for_model(model.backend.model)
    x = target.posterior_to_unconstrained(mapped)
    _, lp = stored_log_density(mapped)
    np.testing.assert_allclose(target.log_density(x), lp, rtol=1e-9, atol=1e-9)
    # and the raw idata, read as if it were the PyMC model's, is refused
    with pytest.raises(pme.EvidenceInputError, match="lack the model's free variables"):
        target.posterior_to_unconstrained(idata)


@pytest.fixture(scope="module")
def simple_fit():
    """``y ~ x`` on 40 rows, fitted once for the two comparisons below."""
    frame = _data(n=40)
    model = bmb.Model("y ~ x", frame)
    return frame, model, _fit(model, draws=500)


def test_two_formulas_compared_in_one_call(simple_fit):
    """``y ~ x`` against ``y ~ x + x2 + (1|g)`` (x2 and g do nothing): one compare_models
    call on the fits, and the simpler model is preferred."""
    frame, simple, simple_idata = simple_fit
    models = {"y ~ x": simple, "y ~ x + x2": bmb.Model("y ~ x + x2", frame)}
    fits = {"y ~ x": simple_idata, "y ~ x + x2": _fit(models["y ~ x + x2"], draws=500)}
    result = pme.compare_models(
        {name: (model, fits[name]) for name, model in models.items()},  # Bambi's own objects
        executor="serial",
        method="bridge",
        random_seed=4,
        progressbar=False,
    )
    assert not result.failures, result.failures
    table = result.compare()
    assert list(table.index) == ["y ~ x", "y ~ x + x2"]
    assert table["log_bf"].iloc[1] < 0


def test_an_improper_bambi_prior_gets_the_improper_prior_warning():
    frame = _data()
    model = bmb.Model("y ~ x", frame, priors={"x": bmb.Prior("Flat"), "sigma": SIGMA})
    idata = _fit(model, draws=300)
    ev = pme.marginal_likelihood(
        model, idata=idata, method="bridge", random_seed=5, progressbar=False
    )
    assert not ev.reliable
    assert any("improper" in w and "'x'" in w for w in ev.warnings), ev.warnings


def test_a_bambi_model_that_cannot_be_built_is_a_clear_error():
    frame = _data()
    model = bmb.Model("y ~ x", frame, priors={"x": bmb.Prior("NotADistribution", mu=0.0)})
    with pytest.raises(pme.EvidenceInputError, match=r"could not be built") as err:
        pme.marginal_likelihood(model, method="bridge", progressbar=False)
    message = str(err.value)
    assert "(model)" in message and "'y ~ x'" in message and "NotADistribution" in message
    assert "model.build()" in message


def test_a_fit_without_its_group_terms_is_a_clear_error(group_fit):
    model, idata = group_fit
    cut = idata.copy()
    cut["posterior"] = xr.DataTree(idata["posterior"].to_dataset().drop_vars("1|g"))
    with pytest.raises(pme.EvidenceInputError, match=r"idata lacks the Bambi group term '1\|g'"):
        pme.from_bambi(model, cut)
    with pytest.raises(pme.EvidenceInputError, match="DataTree its fit returned"):
        pme.from_bambi(model, idata["posterior"].to_dataset())


def test_compare_takes_bambi_models_and_their_fits(simple_fit):
    """``pme.compare`` of Bambi models estimates them first (compare_models) and returns the
    table; with results it is the table alone, and estimation keywords are refused there."""
    frame, model, fit = simple_fit
    table = pme.compare(
        {"y ~ x": (model, fit), "y ~ x + x2": bmb.Model("y ~ x + x2", frame)},
        executor="serial", method="bridge", random_seed=4, progressbar=False,
    )  # fmt: skip
    assert list(table.index) == ["y ~ x", "y ~ x + x2"]
    assert np.isfinite(table["log_z"]).all()
    with pytest.raises(pme.EvidenceInputError, match="nothing to act on"):
        pme.compare({"a": pme.Evidence(-1.0, 0.1, "bridge")}, method="bridge")
