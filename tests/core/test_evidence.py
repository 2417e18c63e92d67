"""Results as plain Python values and as ArviZ citizens: pickle, deep copy, ``==``, lossless
DataTree / netCDF / zarr round trips, storage inside InferenceData, and the public names the
README promises (``az.plot_compare`` and the Bayes-factor plot are in ``tests/test_plots.py``)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import xarray as xr

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError

matplotlib.use("Agg")

README = Path(__file__).resolve().parents[2] / "README.md"
FINGERPRINT = (("y", (3,), "abc123"),)


def _roundtrip(obj, how: str, tmp_path):
    if how == "pickle":
        return pickle.loads(pickle.dumps(obj))
    if how == "deepcopy":
        return copy.deepcopy(obj)
    kind = type(obj)
    tree = obj.to_datatree()
    if how == "datatree":
        return kind.from_datatree(tree)
    if how == "netcdf":
        path = tmp_path / "evidence.nc"
        tree.to_netcdf(path)
        with xr.open_datatree(path) as loaded:
            return kind.from_datatree(loaded)
    if how == "zarr":
        path = tmp_path / "evidence.zarr"
        tree.to_zarr(path, consolidated=False)
        with xr.open_datatree(path, engine="zarr", consolidated=False) as loaded:
            return kind.from_datatree(loaded)
    raise ValueError(how)


def _assert_same_fields(back: pme.Evidence, ev: pme.Evidence) -> None:
    """Every field, one by one (``==`` is tested separately)."""
    assert back.log_z == ev.log_z and back.se == ev.se
    assert back.method == ev.method and back.model_name == ev.model_name
    assert back.observed_fingerprint == ev.observed_fingerprint
    assert back.warnings == ev.warnings and back.reliable == ev.reliable
    assert list(back.diagnostics) == list(ev.diagnostics)
    for key, value in ev.diagnostics.items():
        got = back.diagnostics[key]
        assert type(got) is type(value), key
        assert got == value or (value != value and got != got), key  # NaN == NaN
    xr.testing.assert_identical(back.draws, ev.draws)
    xr.testing.assert_identical(back.sample_stats, ev.sample_stats)
    for dataset in (back.draws, back.sample_stats):
        for var in dataset.data_vars.values():
            assert not var.values.flags.writeable


@pytest.fixture(scope="module")
def bridge_result(normal_mean_case):
    ev = pme.bridge_sampling(
        normal_mean_case.model,
        idata=normal_mean_case.idata,
        reference="warp3",
        repetitions=2,
        random_seed=4,
    )
    assert ev.observed_fingerprint  # a real fingerprint, to be kept
    diagnostics = dict(ev.diagnostics, missing=None, not_a_number=float("nan"), flag=True)
    return dataclasses.replace(
        ev, diagnostics=diagnostics, warnings=("weights: ESS 12 < 30, SE unreliable",)
    )


@pytest.fixture(scope="module")
def tempered_results(normal_mean_case):
    """A path-method EvidenceSet: per-rung sample_stats with a beta coordinate, a transition
    matrix (rung, rung_to), several methods (stored in alphabetical order by netCDF / zarr)."""
    return pme.marginal_likelihood(
        normal_mean_case.model,
        method=["ti", "rts"],
        random_seed=2,
        progressbar=False,
        n_chains=20,
        n_sweeps=60,
        n_rungs=12,
    )


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "datatree", "netcdf", "zarr"])
def test_evidence_round_trip_keeps_every_field(bridge_result, how, tmp_path):
    back = _roundtrip(bridge_result, how, tmp_path)
    assert back is not bridge_result
    _assert_same_fields(back, bridge_result)
    assert back == bridge_result and hash(back) == hash(bridge_result)
    assert back.method == "bridge_warp3"
    assert back.draws["log_z_repetitions"].dims == ("repetition",)


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "netcdf", "zarr"])
def test_evidence_set_round_trip(tempered_results, how, tmp_path):
    back = _roundtrip(tempered_results, how, tmp_path)
    assert isinstance(back, pme.EvidenceSet)
    assert list(back) == ["ti", "rts"]  # the set's order, not the file's
    assert back == tempered_results
    rts = back["rts"]
    _assert_same_fields(rts, tempered_results["rts"])
    assert "beta" in rts.sample_stats.coords and "transitions" in rts.sample_stats


def test_round_trip_keeps_the_same_data_check(bridge_result, tmp_path):
    other = dataclasses.replace(bridge_result, observed_fingerprint=(("y", (30,), "different"),))
    loaded = _roundtrip(other, "netcdf", tmp_path)
    with pytest.raises(EvidenceInputError, match="different observed data"):
        pme.bayes_factor(_roundtrip(bridge_result, "zarr", tmp_path), loaded)


def test_stored_inside_inference_data(normal_mean_case, bridge_result, tmp_path):
    idata = normal_mean_case.idata.copy()
    idata["log_evidence"] = bridge_result.to_datatree()
    path = tmp_path / "fit.nc"
    idata.to_netcdf(path)
    with xr.open_datatree(path) as loaded:
        assert "posterior" in loaded.children and "log_evidence" in loaded.children
        assert pme.Evidence.from_datatree(loaded) == bridge_result
        assert pme.from_datatree(loaded["log_evidence"]) == bridge_result
        smaller = dataclasses.replace(bridge_result, log_z=bridge_result.log_z - 2.0)
        table = pme.compare({"fit": loaded, "smaller": smaller.to_datatree()})
    assert list(table.index) == ["fit", "smaller"]
    assert table.loc["smaller", "log_bf"] == pytest.approx(-2.0)


def test_compare_reads_a_tree_of_models(bridge_result, tmp_path):
    worse = dataclasses.replace(bridge_result, log_z=bridge_result.log_z - 3.0, warnings=())
    tree = xr.DataTree.from_dict({"M1": bridge_result.to_datatree(), "M2": worse.to_datatree()})
    path = tmp_path / "models.nc"
    tree.to_netcdf(path)
    with xr.open_datatree(path) as loaded:
        table = pme.compare(loaded)
    assert list(table.index) == ["M1", "M2"]
    assert table["warning"].tolist() == [True, False]
    with pytest.raises(EvidenceInputError, match="not one Evidence tree"):
        pme.compare(bridge_result.to_datatree())


def test_evidence_set_tree_is_not_an_evidence(tempered_results):
    with pytest.raises(EvidenceInputError, match=r"EvidenceSet\.from_datatree"):
        pme.Evidence.from_datatree(tempered_results.to_datatree())
    with pytest.raises(EvidenceInputError, match="not an Evidence tree"):
        pme.Evidence.from_datatree(xr.DataTree(xr.Dataset({"x": 1.0})))
    assert pme.from_datatree(tempered_results.to_datatree()) == tempered_results


# --------------------------------------------------------------------- plain values
def test_callers_arrays_are_never_touched():
    weights = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    draws = xr.Dataset({"log_weight_target": (("chain", "draw"), weights)})
    ev = pme.Evidence(-1.0, 0.1, "bridge", {"n_iter": np.int64(3)}, draws, "m", FINGERPRINT)
    assert weights.flags.writeable and draws["log_weight_target"].values.flags.writeable
    weights[0, 0] = 99.0  # the caller's array stays the caller's
    assert ev.draws["log_weight_target"].values[0, 0] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        ev.draws["log_weight_target"].values[0, 0] = 1.0
    with pytest.raises(TypeError):
        ev.diagnostics["n_iter"] = 4
    assert type(ev.diagnostics["n_iter"]) is int


def test_equality_is_by_value():
    a = pme.Evidence(-1.0, 0.1, "ds", {"gamma": 0.2}, model_name="m")
    assert a == pme.Evidence(-1.0, 0.1, "ds", {"gamma": 0.2}, model_name="m")
    assert a != dataclasses.replace(a, se=0.2)
    assert a != dataclasses.replace(a, diagnostics={"gamma": 0.21})
    assert a != dataclasses.replace(a, warnings=("w",))
    assert a != dataclasses.replace(a, draws=xr.Dataset({"w": ("draw", [1.0])}))
    assert len({a, copy.deepcopy(a)}) == 1


# --------------------------------------------------------------------- names that say one thing
def test_methods_is_a_read_only_tuple_and_the_readme_table_is_true():
    assert isinstance(pme.METHODS, tuple)
    table = README.read_text().split("## Methods", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        for name in re.findall(r'`"([a-z0-9_]+)"`', cells[0]):
            assert name in pme.METHODS, name
        for option in re.findall(r'`(\w+)="([a-z0-9_]+)"`', cells[1]):
            assert option[0] == "reference", option
        for function in re.findall(r"`(\w+)`", cells[-1]):
            assert callable(getattr(pme, function)), function


def test_bridge_reference_reaches_marginal_likelihood(normal_mean_case):
    ev = pme.marginal_likelihood(
        normal_mean_case.model,
        method="bridge",
        reference="warp3",
        idata=normal_mean_case.idata,
        random_seed=1,
    )
    assert ev.method == "bridge_warp3" and ev.diagnostics["proposal"] == "warp3"
    with pytest.raises(EvidenceInputError, match="bridge reference 'warp2'"):
        pme.bridge_sampling(normal_mean_case.model, idata=normal_mean_case.idata, reference="warp2")
    alone = pme.bridge_sampling(
        normal_mean_case.model, idata=normal_mean_case.idata, reference="warp3", random_seed=1
    )
    assert alone == ev


def test_documented_names_are_exported():
    for name in (
        "LogZTracker",
        "BernoulliProductReference",
        "CategoricalProductReference",
        "plot_bayes_factor",
        "from_datatree",
    ):
        assert name in pme.__all__ and hasattr(pme, name)
