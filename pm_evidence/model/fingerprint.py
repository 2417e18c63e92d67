"""The observed-data fingerprint: which data a model was fitted to.

Computed from the data's *current* values each time it is asked for (never cached), so that a
model whose ``pm.Data`` was changed with ``pm.set_data`` gets a new fingerprint.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pymc as pm
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.tensor.variable import TensorConstant

from pm_evidence.core.exceptions import EvidenceInputError

__all__ = ["check_draws_match_data", "n_observations", "observed_fingerprint"]


def _value(data) -> np.ndarray:
    if isinstance(data, TensorConstant):
        return np.asarray(data.data)
    if isinstance(data, SharedVariable):  # pm.Data: its current value
        return np.asarray(data.get_value(borrow=True))
    return np.asarray(data.eval())  # a graph of data (e.g. a transformed pm.Data)


def _observed_arrays(model: pm.Model):
    for rv in model.observed_RVs:
        yield rv.name, _value(model.rvs_to_values[rv])


def observed_fingerprint(model: pm.Model) -> tuple[tuple[str, tuple[int, ...], str], ...]:
    """Sorted ``(name, shape, sha256 prefix)`` of every observed data array of ``model``.

    Two models are fitted to the same data when their fingerprints agree up to names.
    """
    entries = []
    for name, array in _observed_arrays(model):
        array = np.ascontiguousarray(np.asarray(array, dtype=float))
        digest = hashlib.sha256(array.tobytes()).hexdigest()[:16]
        entries.append((name, tuple(array.shape), digest))
    return tuple(sorted(entries, key=lambda e: e[0]))


def n_observations(model: pm.Model) -> int:
    """Number of observed values of ``model`` (sizes of its observed arrays, added up)."""
    return int(sum(np.size(array) for _, array in _observed_arrays(model)))


def _data_arrays(model: pm.Model):
    """``pm.Data`` containers of ``model`` by name, with their current values."""
    for data in model.data_vars:
        yield data.name, _value(data)


def _differences(group, arrays) -> list[str]:
    """How the arrays of ``group`` (an xarray Dataset) differ from ``arrays`` of the model,
    one line per array held by both under the same name."""
    lines = []
    for name, model_value in arrays:
        if name not in group.data_vars:
            continue
        model_value = np.asarray(model_value)
        stored = np.asarray(group[name].to_numpy())
        if stored.shape != model_value.shape:
            lines.append(
                f"{name!r}: shape {stored.shape} in idata, {model_value.shape} in the model"
            )
            continue
        if stored.dtype.kind in "biuf" and model_value.dtype.kind in "biuf":
            a, b = stored.astype(float), model_value.astype(float)
            if np.array_equal(a, b, equal_nan=True):
                continue
            both = np.isfinite(a) & np.isfinite(b)
            shift = float(np.mean(a[both] - b[both])) if both.any() else np.nan
            lines.append(
                f"{name!r}: {int(np.sum(a != b))} of {a.size} values differ (mean of idata minus "
                f"model: {shift:+.4g})"
            )
        elif not np.array_equal(stored, model_value):
            lines.append(f"{name!r}: the values differ")
    return lines


def check_draws_match_data(model: pm.Model, idata) -> None:
    """Raise when posterior draws were fitted to other data than ``model`` holds now.

    ``pm.sample`` stores the observed data in ``idata.observed_data`` (by the names of the
    observed variables) and the ``pm.Data`` containers in ``idata.constant_data``. Every array
    found under the same name in the model and in ``idata`` must be equal (NaN equal to NaN),
    and every observed variable of the model must be in ``observed_data`` when that group is
    there. A posterior of other data is a density over the same space, so every estimator would
    still return a number, off by the two evidences' difference: this check is what catches it.
    Draws given without these groups (a bare posterior Dataset) are not checked.

    Raises
    ------
    EvidenceInputError
        Naming the arrays that differ, how, and the fix.
    """
    children = getattr(idata, "children", None)
    if children is None:
        return
    lines = []
    if "observed_data" in children:
        group = children["observed_data"].to_dataset()
        observed = list(_observed_arrays(model))
        absent = [name for name, _ in observed if name not in group.data_vars]
        if absent:
            lines.append(
                f"observed variables {absent} are not in idata.observed_data (it holds "
                f"{sorted(group.data_vars)})"
            )
        lines += _differences(group, observed)
    if "constant_data" in children:
        lines += _differences(children["constant_data"].to_dataset(), _data_arrays(model))
    if lines:
        model_name = f" {model.name!r}" if model.name else ""
        raise EvidenceInputError(
            f"The posterior draws in idata were fitted to other data than the model{model_name} "
            f"holds now: " + "; ".join(lines) + ". The posterior of other data is not this "
            "model's posterior, so every estimate built on it is off. Sample this model on its "
            "current data (pm.sample() inside `with model:`, after any pm.set_data), or pass "
            "no idata and pm_evidence draws the posterior itself."
        )
