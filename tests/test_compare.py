"""Bayes factors, posterior model probabilities, comparison tables, the result object."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError


def make_evidence(log_z, se, name="m", fingerprint=(("y", (3,), "abc"),)):
    return pme.Evidence(log_z, se, "bridge", {"n_iter": 3}, xr.Dataset(), name, fingerprint)


def test_bayes_factor_dataset():
    bf = pme.bayes_factor(make_evidence(-10.0, 0.03, "a"), make_evidence(-12.0, 0.04, "b"))
    assert list(bf["bf_type"].values) == ["BF10", "BF01"]
    np.testing.assert_allclose(bf["log_bayes_factor"].values, [2.0, -2.0])
    np.testing.assert_allclose(bf["bayes_factor"].values, [np.exp(2.0), np.exp(-2.0)])
    assert float(bf["log_bayes_factor_se"]) == pytest.approx(0.05)


def test_bayes_factor_refuses_different_data():
    a = make_evidence(-10.0, 0.1, "a", (("y", (3,), "abc"),))
    b = make_evidence(-12.0, 0.1, "b", (("y", (3,), "xyz"),))
    with pytest.raises(EvidenceInputError, match="different observed data"):
        pme.bayes_factor(a, b)
    assert pme.bayes_factor(a, b, check_data=False)["log_bayes_factor"].values[0] == 2.0


def test_different_data_detected_from_models():
    def model(y):
        with pm.Model() as m:
            mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
            pm.Normal("y", mu, np.float64(1.0), observed=y)
        return pme.LogDensity(m).observed_fingerprint

    assert model(np.array([1.0, 2.0])) == model(np.array([1.0, 2.0]))
    assert model(np.array([1.0, 2.0])) != model(np.array([1.0, 2.5]))


def test_post_prob_hundreds_of_nats():
    evs = [make_evidence(-1000.0, 0.1, "a"), make_evidence(-1003.0, 0.1, "b")]
    p = pme.post_prob(*evs)
    assert p.dims == ("model",)
    np.testing.assert_allclose(p.values, [1 / (1 + np.exp(-3)), np.exp(-3) / (1 + np.exp(-3))])
    p2 = pme.post_prob(*evs, prior_prob=[0.2, 0.8], model_names=["x", "y"])
    odds = np.exp(3.0) * 0.2 / 0.8
    np.testing.assert_allclose(p2.sel(model="x"), odds / (1 + odds))
    with pytest.raises(EvidenceInputError, match="summing to 1"):
        pme.post_prob(*evs, prior_prob=[0.5, 0.6])


def test_compare_table():
    table = pme.compare({"small": make_evidence(-12.0, 0.1), "big": make_evidence(-10.0, 0.2)})
    assert list(table.index) == ["big", "small"]
    assert table.loc["small", "log_bf"] == pytest.approx(-2.0)
    assert table.loc["small", "dse"] == pytest.approx(np.hypot(0.1, 0.2))
    assert table["prob"].sum() == pytest.approx(1.0)
    # the probability's delta-method SE: p(1-p) * sqrt(se1^2 + se2^2)
    p = table.loc["big", "prob"]
    assert table.loc["big", "prob_se"] == pytest.approx(p * (1 - p) * np.hypot(0.1, 0.2))


def test_compare_needs_two_models():
    with pytest.raises(EvidenceInputError, match="at least two"):
        pme.compare({"a": make_evidence(0.0, 0.1)})


def test_evidence_is_immutable_and_readable():
    ev = make_evidence(-10.123456, 0.0123, "a")
    with pytest.raises(AttributeError):
        ev.log_z = 0.0
    with pytest.raises(TypeError):
        ev.diagnostics["n_iter"] = 5
    assert repr(ev) == "Evidence('a', method='bridge', log_z=-10.123 ± 0.012, n_iter=3)"
    lo, hi = ev.interval(0.95)
    assert hi - lo == pytest.approx(2 * 1.959964 * 0.0123, rel=1e-5)


def test_to_datatree(normal_mean_case):
    ev = pme.discriminance_sampling(
        normal_mean_case.model, idata=normal_mean_case.idata, random_seed=0
    )
    tree = ev.to_datatree()
    assert float(tree["log_z"]) == ev.log_z and float(tree["se"]) == ev.se
    assert tree.attrs["method"] == "ds"
    assert float(tree["diagnostics"]["gamma"]) == ev.diagnostics["gamma"]
    weights = tree["draws"]["log_weight_target"]
    assert weights.dims == ("chain", "draw")
    assert tree["draws"]["log_weight_reference"].dims == ("reference_draw",)
    # files written before the group was named after the field hold it as /log_weights
    groups = {"/": tree.to_dataset(inherit=False)}
    for name, child in tree.children.items():
        old_name = "log_weights" if name == "draws" else name
        groups[f"/{old_name}"] = child.to_dataset(inherit=False)
    old_layout = xr.DataTree.from_dict(groups)
    assert "log_weights" in old_layout.children and "draws" not in old_layout.children
    assert pme.Evidence.from_datatree(old_layout) == ev


def test_bayes_factor_between_real_models(normal_mean_case):
    """Bayes factor of the same data under a wider prior: the exact BF is known."""
    from pm_evidence.zoo import testing as exact_models

    model_wide, exact_wide = exact_models.normal_mean(tau=10.0)
    ev_a = pme.bridge_sampling(normal_mean_case.model, idata=normal_mean_case.idata, random_seed=1)
    with model_wide:
        idata = pm.sample(
            draws=500,
            tune=500,
            chains=2,
            cores=1,
            nuts_sampler="pymc",  # not nutpie when installed: the same draws everywhere
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
    ev_b = pme.bridge_sampling(model_wide, idata=idata, random_seed=1)
    bf = pme.bayes_factor(ev_a, ev_b)
    exact = normal_mean_case.exact - exact_wide
    err = float(bf["log_bayes_factor"].sel(bf_type="BF10")) - exact
    assert abs(err) < 4 * float(bf["log_bayes_factor_se"]) + 1e-3


def test_warnings_make_evidence_unreliable_and_show_everywhere():
    clean = make_evidence(-10.0, 0.1, "a")
    flagged = pme.Evidence(
        -11.0, 0.1, "bridge", {}, xr.Dataset(), "b", warnings=("low ESS: SE unreliable",)
    )
    assert clean.reliable and clean.warnings == ()
    assert not flagged.reliable
    assert "low ESS: SE unreliable" in repr(flagged)
    assert "warnings" not in repr(clean)
    table = pme.compare({"a": clean, "b": flagged}, check_data=False)
    assert table["warning"].to_dict() == {"a": False, "b": True}


def test_compare_columns_follow_arviz(evidences):
    table = pme.compare(evidences)
    assert list(table.index) == ["narrow", "flagged", "wide"]
    assert table["rank"].tolist() == [0, 1, 2]
    np.testing.assert_allclose(table["elpd_diff"], [0.0, -1.0, -2.5])
    np.testing.assert_allclose(table["dse"], [0.0, np.hypot(0.2, 0.3), np.hypot(0.2, 0.3)])
    np.testing.assert_allclose(table["elpd"], table["log_z"])
    np.testing.assert_allclose(table["weight"], table["prob"])
    assert table["warning"].tolist() == [False, True, False]
    against_wide = pme.compare(evidences, reference="wide")
    assert against_wide.loc["narrow", "log_bf"] == pytest.approx(2.5)
    assert against_wide.loc["wide", "dse"] == 0.0
    with pytest.raises(EvidenceInputError, match="reference model 'x'"):
        pme.compare(evidences, reference="x")


def test_bayes_factor_of_plain_numbers_names_the_fix():
    with pytest.raises(EvidenceInputError, match=r"not an Evidence result.*Evidence\(log_z, se"):
        pme.bayes_factor(1.0, 2.0)
