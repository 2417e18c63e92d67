"""The prior-robustness check (issue 37, part 3): log Z and log BF over a grid of prior scales
against their exact values, one model estimated once when it does not depend on the scale, a
Bambi model built by the user function, the plot, and the errors for bad input."""

from __future__ import annotations

import matplotlib
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pm_evidence as pme

matplotlib.use("Agg")

Y = np.array([0.9, 1.4, 0.3, 1.8, 1.1, 0.6, 1.5, 0.8])


def _normal_mean(prior_sd: float | None) -> pm.Model:
    """y ~ N(mu, 1), mu ~ N(0, prior_sd^2); mu = 0 fixed when ``prior_sd`` is None (H0)."""
    with pm.Model() as model:
        if prior_sd is None:
            pm.Normal("y", np.float64(0.0), np.float64(1.0), observed=Y)
            pm.Normal("nuisance", np.float64(0.0), np.float64(1.0))  # a free variable for NUTS
        else:
            mu = pm.Normal("mu", np.float64(0.0), np.float64(prior_sd))
            pm.Normal("y", mu, np.float64(1.0), observed=Y)
    return model


def _exact(prior_sd: float | None) -> float:
    sd = 0.0 if prior_sd is None else prior_sd
    cov = np.eye(Y.size) + sd**2 * np.ones((Y.size, Y.size))
    return float(stats.multivariate_normal(np.zeros(Y.size), cov).logpdf(Y))


H0 = _normal_mean(None)
SCALES = [0.3, 3.0, 30.0]
OPTIONS = {"method": "bridge", "executor": "serial", "progressbar": False}
OPTIONS |= {"draws": 500, "tune": 500, "chains": 2}


@pytest.fixture(scope="module")
def check():
    return pme.prior_robustness(lambda s: (_normal_mean(s), H0), SCALES, random_seed=1, **OPTIONS)


def test_log_z_and_log_bf_match_the_exact_values(check):
    assert dict(check.sizes) == {"scale": 3, "model": 2}
    assert list(check["model"].values) == ["H1", "H0"] and check.attrs["reference"] == "H0"
    for scale in SCALES:
        row = check.sel(scale=scale)
        for model, sd in (("H1", scale), ("H0", None)):
            got, se = float(row["log_z"].sel(model=model)), float(row["log_z_se"].sel(model=model))
            assert abs(got - _exact(sd)) < 4 * se + 0.02, (scale, model, got, se)
        log_bf = float(row["log_bf"].sel(model="H1"))
        se = float(row["log_bf_se"].sel(model="H1"))
        assert abs(log_bf - (_exact(scale) - _exact(None))) < 4 * se + 0.02
        assert float(row["log_bf"].sel(model="H0")) == 0.0
    assert check["reliable"].all() and (check["failure"] == "").all()
    # Lindley: the wider the prior of the effect, the more the evidence leans to H0
    assert float(check["log_bf"].sel(model="H1", scale=30.0)) < float(
        check["log_bf"].sel(model="H1", scale=3.0)
    )


def test_a_model_that_does_not_depend_on_the_scale_is_estimated_once(check):
    h0 = check["log_z"].sel(model="H0").to_numpy()
    assert np.all(h0 == h0[0])


def test_the_plot_draws_one_line_per_model_over_the_categories(check):
    ax = pme.plot_prior_robustness(check)
    assert [line.get_label() for line in ax.get_lines() if "vs" in line.get_label()] == ["H1 vs H0"]
    assert "anecdotal" in {t.get_text() for t in ax.texts}
    with pytest.raises(pme.EvidenceInputError, match="must be one of"):
        pme.plot_prior_robustness(check, model="H2")
    with pytest.raises(pme.EvidenceInputError, match="prior_robustness returned"):
        pme.plot_prior_robustness(check[["log_z"]])


@pytest.mark.parametrize(
    ("scales", "match"),
    [
        ([1.0, 0.0], r"finite and positive .* got 0\.0 at position 1"),
        ([-1.0], r"got -1\.0 at position 0"),
        ([1.0, np.inf], "finite and positive"),
        ([], "non-empty"),
        ([1.0, 1.0], "must not repeat"),
    ],
)
def test_bad_scales_are_refused_before_any_work(scales, match):
    def build(scale):
        raise AssertionError("called")

    with pytest.raises(pme.EvidenceInputError, match=match):
        pme.prior_robustness(build, scales, **OPTIONS)


@pytest.mark.parametrize(
    ("returned", "match"),
    [
        (lambda s: _normal_mean(s), r"returned a Model; build_models must return"),
        (lambda s: (_normal_mean(s), 3.0), r"entry 'H0' is a float, not a model"),
        (lambda s: {"H1": _normal_mean(s), "H0": "m0"}, r"returned str for 'H0', not a model"),
        (lambda s: [_normal_mean(s)], r"returned 1 model\(s\); a Bayes factor needs two"),
        (lambda s: None, r"build_models\(scale=1\) returned a NoneType"),
    ],
)
def test_a_function_returning_other_than_models_is_refused(returned, match):
    with pytest.raises(pme.EvidenceInputError, match=match):
        pme.prior_robustness(returned, [1.0], **OPTIONS)


def test_other_bad_arguments_are_refused():
    with pytest.raises(pme.EvidenceInputError, match="build_models must be a function"):
        pme.prior_robustness(H0, [1.0], **OPTIONS)
    with pytest.raises(pme.EvidenceInputError, match=r"reference model 'H2'"):
        pme.prior_robustness(lambda s: (_normal_mean(s), H0), [1.0], reference="H2", **OPTIONS)
    names = iter([{"a": H0, "b": H0}, {"a": H0, "c": H0}])
    with pytest.raises(pme.EvidenceInputError, match="same models"):
        pme.prior_robustness(lambda s: next(names), [1.0, 2.0], **OPTIONS)


def test_a_bambi_model_that_cannot_be_built_names_the_model_and_scale():
    bmb = pytest.importorskip("bambi")
    import pandas as pd

    frame = pd.DataFrame({"x": np.arange(8.0), "y": Y})

    def build(scale):
        prior = bmb.Prior("NotADistribution", mu=0.0, sigma=scale)
        return bmb.Model("y ~ x", frame, priors={"x": prior}), H0

    with pytest.raises(pme.EvidenceInputError, match=r"\('H1' at scale 2\) could not be built"):
        pme.prior_robustness(build, [2.0], **OPTIONS)
