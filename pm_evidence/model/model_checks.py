"""Properties of a PyMC model that make its evidence meaningless for model comparison.

Two are found from the model alone, before any draw:

- an **improper prior** (``pm.Flat``, ``pm.HalfFlat``): the prior does not integrate to 1, so
  ``Z = integral of p(y | theta) p(theta) dtheta`` is fixed only up to the arbitrary scale of
  the flat density (seed 000 §2 defines ``Z`` for a normalized ``p0``);
- **no data**: no observed variable and no ``pm.Potential``, so the likelihood is 1 and
  ``log Z = 0`` by construction (the prior integrates to 1).

Each gives a message that every estimator attaches to its result (``Evidence.warnings``), so
that ``Evidence.reliable`` is ``False``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.distributions.continuous import FlatRV, HalfFlatRV
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant

__all__ = ["improper_prior_names", "model_messages", "nan_data_names"]

IMPROPER_OPS = (FlatRV, HalfFlatRV)


def improper_prior_names(model: pm.Model) -> list[str]:
    """Names of the free variables of ``model`` with an improper prior (``pm.Flat``,
    ``pm.HalfFlat``)."""
    return [rv.name for rv in model.free_RVs if isinstance(rv.owner.op, IMPROPER_OPS)]


def model_messages(model: pm.Model) -> tuple[str, ...]:
    """What makes ``log Z`` of ``model`` meaningless as evidence: an improper prior, no data.

    Returns
    -------
    tuple of str
        One message per problem found; empty for an ordinary model.
    """
    messages = []
    improper = improper_prior_names(model)
    if improper:
        messages.append(
            f"The prior of {improper} is improper (pm.Flat / pm.HalfFlat): it does not "
            f"integrate to 1, so log Z is defined only up to the arbitrary scale of the flat "
            f"density (here 1 per unit of the unconstrained space). A Bayes factor against "
            f"another model is then meaningless unless both models share exactly the same "
            f"improper part; give these variables proper priors (e.g. pm.Normal with a wide "
            f"sigma, pm.HalfNormal) to compare models."
        )
    if not model.observed_RVs and not model.potentials:
        messages.append(
            "The model has no observed data (no observed= variable and no pm.Potential): its "
            "likelihood is 1, so log Z = 0 by construction (the prior integrates to 1) and "
            "says nothing about any data. Pass the data with observed= (or a custom "
            "likelihood with pm.Potential)."
        )
    return tuple(messages)


def nan_data_names(model: pm.Model) -> list[str]:
    """The data of ``model`` that hold NaN, outside its observed variables (where PyMC reads a
    NaN as a missing value to impute): ``pm.Data`` containers by name, and arrays written
    into the model (a covariate) as ``"an array of shape (...)"``. A NaN there makes the
    log-density NaN at every point.

    Read from the graph of ``model.logp()`` (no compilation): found when asked, e.g. once NUTS
    could not start.
    """
    names = []
    for var in ancestors([model.logp()]):
        if isinstance(var, TensorConstant):
            value = var.data
        elif isinstance(var, SharedVariable):
            value = var.get_value(borrow=True)
        else:
            continue
        value = np.asarray(value)
        if value.dtype.kind == "f" and np.isnan(value).any():
            count = int(np.isnan(value).sum())
            where = repr(var.name) if var.name else f"an array of shape {value.shape}"
            names.append(f"{where} ({count} NaN of {value.size})")
    return names
