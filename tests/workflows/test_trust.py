"""Trust at first contact (issue 21): draws fitted to other data are refused, improper priors and
models without data are flagged on the result, and the rough edges a new user meets (the repr of
a small SE, warnings that point at the user's line, error messages that name what is wrong)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.marginal import cross_checked
from pm_evidence.model.fingerprint import check_draws_match_data

matplotlib.use("Agg")


def _with_group(idata: xr.DataTree, group: str, dataset: xr.Dataset) -> xr.DataTree:
    tree = idata.copy()
    tree[group] = xr.DataTree(dataset)
    return tree


# ---------------------------------------------------------------------- 1. other data
def test_draws_fitted_to_other_data_are_refused(normal_mean_case):
    """The issue's case: idata of the same model with observed y + 3. Every method reads idata
    through one check, so bridge and auto both refuse before any estimate."""
    model, idata = normal_mean_case.model, normal_mean_case.idata
    observed = idata["observed_data"].to_dataset()
    shifted = observed + 3.0
    other = _with_group(idata, "observed_data", shifted)
    for method in ("bridge", "auto"):
        with pytest.raises(EvidenceInputError, match="fitted to other data") as err:
            pme.marginal_likelihood(model, idata=other, method=method, progressbar=False)
        message = str(err.value)
        assert "'normal_mean::y'" in message
        assert "30 of 30 values differ" in message and "+3" in message
        assert "pm.sample()" in message  # the fix
    # the model's own data passes the check
    check_draws_match_data(model, idata)


def test_other_constant_data_and_missing_observed_names_are_refused():
    """pm.Data changed with pm.set_data after sampling, and observed_data of another model."""
    x = np.linspace(0.0, 1.0, 5)
    with pm.Model() as model:
        data = pm.Data("x", x)
        beta = pm.Normal("beta", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", beta * data, np.float64(1.0), observed=2.0 * x)
    posterior = xr.Dataset({"beta": (("chain", "draw"), np.zeros((1, 4)))})
    tree = xr.DataTree.from_dict({
        "posterior": posterior,
        "observed_data": xr.Dataset({"y": ("y_dim_0", 2.0 * x)}),
        "constant_data": xr.Dataset({"x": ("x_dim_0", x)}),
    })  # fmt: skip
    check_draws_match_data(model, tree)  # as sampled
    with model:
        pm.set_data({"x": x + 1.0})
    with pytest.raises(EvidenceInputError, match=r"'x': 5 of 5 values differ"):
        check_draws_match_data(model, tree)
    foreign = _with_group(tree, "observed_data", xr.Dataset({"z": ("z_dim_0", x)}))
    with pytest.raises(EvidenceInputError, match=r"\['y'\] are not in idata.observed_data"):
        check_draws_match_data(model, foreign)


def test_missing_data_model_accepts_its_own_draws():
    """With NaNs in the data PyMC observes ``y_observed``; the check compares that array."""
    y = np.array([0.3, np.nan, -0.2, 1.1])
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(1.0), observed=y)
    kept = y[~np.isnan(y)]
    tree = xr.DataTree.from_dict(
        {"observed_data": xr.Dataset({"y_observed": ("y_observed_dim_0", kept)})}
    )
    check_draws_match_data(model, tree)
    wrong = xr.DataTree.from_dict(
        {"observed_data": xr.Dataset({"y_observed": ("y_observed_dim_0", kept + 1.0)})}
    )
    with pytest.raises(EvidenceInputError, match="'y_observed': 3 of 3 values differ"):
        check_draws_match_data(model, wrong)


def test_auto_disagreement_names_a_data_mismatch():
    a = pme.Evidence(-141.82, 0.03, method="bridge")
    b = pme.Evidence(-39.27, 0.05, method="ais")
    with pytest.warns(UserWarning, match="disagree"):
        ev = cross_checked(a, b)
    assert not ev.reliable
    assert "fitted to other data" in ev.warnings[-1]


# ---------------------------------------------------------------------- 2. improper priors
IMPROPER = "is improper"


@pytest.fixture(scope="module")
def flat_model():
    y = np.random.default_rng(3).normal(1.0, 1.5, size=20)
    with pm.Model() as model:
        mu = pm.Flat("mu")
        sigma = pm.HalfFlat("sigma")
        pm.Normal("y", mu, sigma, observed=y)
    return model


def test_improper_prior_is_on_every_result(flat_model):
    """The issue's case: bridge returned reliable=True and auto only printed a warning."""
    with pytest.warns(UserWarning, match=IMPROPER) as record:
        ev = pme.marginal_likelihood(flat_model, random_seed=1, progressbar=False)
    assert not ev.reliable
    (message,) = [w for w in ev.warnings if IMPROPER in w]
    assert "['mu', 'sigma']" in message
    assert "Bayes factor" in message and "same improper part" in message
    assert {r.filename for r in record if IMPROPER in str(r.message)} == {__file__}
    listed = pme.marginal_likelihood(
        flat_model, method=["bridge", "ds", "is", "ris"], random_seed=1, progressbar=False
    )
    for name, result in listed.items():
        assert any(IMPROPER in w for w in result.warnings), name
        assert not result.reliable, name


# ---------------------------------------------------------------------- 3. no observed data
def test_model_without_data_says_log_z_is_zero_by_construction():
    with pm.Model() as model:
        pm.Normal("mu", np.float64(0.0), np.float64(1.0))
    with pytest.warns(UserWarning, match="no observed data") as record:
        ev = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    assert ev.log_z == pytest.approx(0.0, abs=1e-9)
    assert not ev.reliable
    assert any("log Z = 0 by construction" in w for w in ev.warnings)
    # 5: the warning points at this line, not inside pm_evidence
    assert {r.filename for r in record if "no observed data" in str(r.message)} == {__file__}


# ---------------------------------------------------------------------- 5. rough edges
def test_repr_shows_significant_digits_of_a_small_se():
    text = repr(pme.Evidence(-39.27012349, 3.2e-6, method="bridge"))
    assert "log_z=-39.2701235 ± 0.0000032" in text
    assert "± 0.0000)" not in text
    assert "log_z=-141 ± 12" in repr(pme.Evidence(-141.3, 12.3, method="ais"))
    budget = pme.Evidence(-1.0, 0.0128, method="ais", diagnostics={"stopped_by": "max_evaluations"})
    assert "stopped_by='max_evaluations'" in repr(budget)


def test_plot_evidence_takes_what_compare_takes():
    evs = [
        pme.Evidence(-10.0, 0.1, method="bridge", model_name="M1"),
        pme.Evidence(-11.0, 0.2, method="bridge", model_name="M2"),
    ]
    table = pme.compare(evs)
    ax = pme.plot_evidence(evs)
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["M1", "M2"]
    assert set(table.index) == {"M1", "M2"}
    assert [t.get_text() for t in pme.plot_evidence(evs[0]).get_yticklabels()] == ["bridge"]


def test_missing_variables_error_names_what_the_draws_hold(normal_mean_case):
    bad = xr.Dataset({"other": (("chain", "draw"), np.zeros((2, 10)))})
    with pytest.raises(EvidenceInputError) as err:
        pme.bridge_sampling(normal_mean_case.model, idata=bad)
    message = str(err.value)
    assert "lack the model's free variables ['normal_mean::mu']" in message
    assert "they hold ['other']" in message and "got []" not in message


def test_bayes_factor_data_mismatch_message_says_what_differs():
    ev1 = pme.Evidence(-10.0, 0.1, method="bridge", observed_fingerprint=(("y", (3,), "a" * 16),))
    ev0 = pme.Evidence(-11.0, 0.1, method="bridge", observed_fingerprint=(("y", (3,), "b" * 16),))
    with pytest.raises(EvidenceInputError) as err:
        pme.bayes_factor(ev1, ev0)
    message = str(err.value)
    assert "Models 'H1' and 'H0'" in message and "()" not in message
    assert "same shapes but different values" in message
    assert "#aaaaaaaa" in message and "#bbbbbbbb" in message


def test_importance_sampling_from_the_prior_draws_no_posterior(normal_mean_case, monkeypatch):
    """reference="prior" needs no NUTS draws: marginal_likelihood no longer draws them."""
    import pm_evidence.run_methods as run_methods

    def refuse(*args, **kwargs):
        raise AssertionError("posterior draws were made")

    monkeypatch.setattr(run_methods, "posterior_plan", refuse)
    ev = pme.marginal_likelihood(
        normal_mean_case.model, method="is", reference="prior", random_seed=1, progressbar=False
    )
    assert ev.reliable and abs(ev.log_z - normal_mean_case.exact) < 4 * ev.se + 0.02
