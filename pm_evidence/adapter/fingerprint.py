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

__all__ = ["n_observations", "observed_fingerprint"]


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
