"""Bambi models and fits read as the PyMC model Bambi builds and draws of it.

A ``bambi.Model`` is a formula (``"y ~ x1 + (1|g)"``), a data frame and priors; ``build()``
turns it into a ``pymc.Model`` (``model.backend.model``), whose free variables Bambi samples.
Its evidence is that PyMC model's, with Bambi's priors exactly as Bambi sets them (its
default priors are scaled to the data, and shown by ``print(model)``).

A Bambi fit (``model.fit()``) returns draws of that PyMC model that Bambi has rewritten for
reading (``bambi.backend.pymc.PyMCModel._clean_results``, marked by the posterior's attribute
``modeling_interface="bambi"``):

- the non-centred offsets of group terms are dropped (``omit_offsets=True``): ``1|g_offset``
  is recovered as ``1|g / 1|g_sigma``, the inverse of Bambi's ``1|g = 1|g_offset * 1|g_sigma``
  (the group term's deterministic and its scale, the one free variable it multiplies);
- with ``center_predictors=True`` (the default) Bambi samples the intercept of the centred
  design matrix, ``b0_c``, and reports ``b0 = b0_c - mean(X) @ b``: ``b0_c`` is recovered as
  ``b0 + mean(X) @ b``.

The draws so mapped are checked against the model like any others
(:func:`pm_evidence.model.draws.check_draws_match_model`: the log density the sampler stored
with them, recomputed), so a mapping that does not invert Bambi's exactly is an error, not a
wrong log Z. Bambi is imported only when one of its models is passed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import xarray as xr
from pytensor.graph.traversal import ancestors

from pm_evidence.core.exceptions import EvidenceInputError

__all__ = ["bambi_draws", "bambi_pymc_model", "from_bambi", "is_bambi_model"]

# Bambi's suffix of the non-centred offset of a group term (bambi/backend/terms.py).
OFFSET_SUFFIX = "_offset"


def is_bambi_model(value: Any) -> bool:
    """Whether ``value`` is a ``bambi.Model`` (told by its class, without importing Bambi)."""
    return any(
        cls.__name__ == "Model" and cls.__module__.split(".")[0] == "bambi"
        for cls in type(value).__mro__
    )


def bambi_pymc_model(model, *, argument: str = "model") -> pm.Model:
    """The ``pymc.Model`` that a ``bambi.Model`` builds (built here when it is not yet).

    Parameters
    ----------
    model : Bambi model (bambi.Model)
    argument : str
        The argument's name, for the error.

    Raises
    ------
    EvidenceInputError
        When Bambi cannot build the model from its formula and data (Bambi's error is the
        cause), naming ``argument`` and the fix.
    """
    if not is_bambi_model(model):
        raise EvidenceInputError(f"{argument} must be a bambi.Model, got a {type(model).__name__}.")
    if not getattr(model, "built", False):
        try:
            model.build()
        except Exception as err:
            raise EvidenceInputError(
                f"The Bambi model ({argument}) could not be built into a PyMC model "
                f"from its formula {_formula(model)!r} and its data: Bambi raised "
                f"{type(err).__name__}: {err}. Check that model.build() runs (the data frame "
                f"holds every column of the formula, without missing values, and every prior "
                f"names a PyMC distribution), then pass the model again."
            ) from err
    pymc_model = getattr(getattr(model, "backend", None), "model", None)
    if not isinstance(pymc_model, pm.Model):
        raise EvidenceInputError(
            f"The Bambi model ({argument}) holds no PyMC model after build() (its "
            f"backend is {type(getattr(model, 'backend', None)).__name__}): pm_evidence reads "
            f"Bambi's PyMC backend only. Build it with bambi's default backend."
        )
    return pymc_model


def _formula(model) -> str:
    formula = getattr(model, "formula", None)
    return str(getattr(formula, "main", formula))


def bambi_draws(model, idata, *, argument: str = "idata"):
    """``idata`` of a Bambi fit as draws of the PyMC model Bambi built (a new DataTree).

    Undoes what Bambi's fit rewrote (see the module's notes): the group terms' offsets are
    put back and the intercepts re-centred. Draws that Bambi did not rewrite (``pm.sample``
    run on ``model.backend.model`` directly: no ``modeling_interface="bambi"`` attribute) are
    returned as they are. Every other group (``sample_stats`` with the sampler's log density,
    ``observed_data``) is kept, so the draws are checked against the model downstream.

    Parameters
    ----------
    model : Bambi model (bambi.Model)
        The model that was fitted (built).
    idata : xarray.DataTree
        What ``model.fit()`` returned (any of Bambi's NUTS back ends: PyMC, nutpie, ...).
    argument : str
        The argument's name, for the errors.

    Returns
    -------
    xarray.DataTree

    Raises
    ------
    EvidenceInputError
        For ``idata`` that is not a DataTree with a posterior, or that lacks what the mapping
        needs (a group term's deterministic or scale): naming the variables and the fix.
    """
    pymc_model = bambi_pymc_model(model)
    if not isinstance(idata, xr.DataTree) or "posterior" not in idata.children:
        raise EvidenceInputError(
            f"{argument} of a Bambi model must be the DataTree its fit returned "
            f"(idata = model.fit(...)), with a posterior group; got a {type(idata).__name__}"
            + (f" with groups {list(idata.children)}" if isinstance(idata, xr.DataTree) else "")
            + "."
        )
    posterior = idata["posterior"].to_dataset()
    if posterior.attrs.get("modeling_interface") != "bambi":
        return idata
    posterior = _with_offsets(pymc_model, posterior, argument)
    posterior = _with_centred_intercepts(model, posterior)
    posterior = _in_model_dims(pymc_model, posterior)
    mapped = idata.copy()
    mapped["posterior"] = xr.DataTree(posterior)
    return mapped


def _with_offsets(pymc_model: pm.Model, posterior: xr.Dataset, argument: str) -> xr.Dataset:
    """``name_offset = name / scale`` for every offset Bambi dropped from the posterior."""
    free = {rv.name: rv for rv in pymc_model.free_RVs}
    added = {}
    for name, rv in free.items():
        if name in posterior.data_vars or not name.endswith(OFFSET_SUFFIX):
            continue
        term = name.removesuffix(OFFSET_SUFFIX)
        scale = _scale_of(pymc_model, term, rv) if term in pymc_model.named_vars else None
        if scale is None or term not in posterior.data_vars or scale not in posterior.data_vars:
            raise EvidenceInputError(
                f"{argument} lacks the Bambi group term {term!r} or its scale, needed to "
                f"recover the offset {name!r} that Bambi's fit drops: it holds "
                f"{sorted(map(str, posterior.data_vars))}. Pass the idata that this model's "
                f"fit returned, unmodified (or fit with omit_offsets=False)."
            )
        added[name] = posterior[term] / posterior[scale]
    return posterior.assign(added)


def _scale_of(pymc_model: pm.Model, term: str, offset) -> str | None:
    """The one free variable that Bambi's deterministic ``term = offset * scale`` multiplies
    the offset by (None when the graph is not of that form)."""
    free = list(pymc_model.free_RVs)
    parents = set(ancestors([pymc_model[term]], blockers=free))
    others = [rv.name for rv in free if rv in parents and rv is not offset]
    return others[0] if offset in parents and len(others) == 1 else None


def _with_centred_intercepts(model, posterior: xr.Dataset) -> xr.Dataset:
    """``b0_c = b0 + mean(X) @ b`` for every distributional component whose intercept Bambi
    un-centred (the exact inverse of ``PyMCModel._clean_results``, bambi 0.21)."""
    if not getattr(model, "center_predictors", False):
        return posterior
    posterior = posterior.copy()
    for pymc_component in model.backend.distributional_components.values():
        component = pymc_component.component
        if not (component.intercept_term and component.common_terms):
            continue
        dims, shape = ("chain", "draw"), (posterior.sizes["chain"], posterior.sizes["draw"])
        response_coords = model.response_term.coords
        if response_coords:
            levels = next(iter(response_coords.values()))
            shape += (len(levels),)
            dims += tuple(response_coords)
        stacked = posterior.stack(samples=dims)
        names = [term.alias or term.name for term in component.common_terms.values()]
        coefs = np.vstack([np.atleast_2d(stacked[name].values) for name in names])
        mean = np.asarray(pymc_component.design_matrix_without_intercept).mean(0)
        intercept = component.intercept_term.alias or component.intercept_term.name
        posterior[intercept] = posterior[intercept] + np.dot(mean, coefs).reshape(shape)
    return posterior


def _in_model_dims(pymc_model: pm.Model, posterior: xr.Dataset) -> xr.Dataset:
    """Every free variable with its dims in the model's order (Bambi moves factor dims last)."""
    dims = pymc_model.named_vars_to_dims
    for rv in pymc_model.free_RVs:
        own = dims.get(rv.name)
        if own and rv.name in posterior.data_vars and set(own) <= set(posterior[rv.name].dims):
            posterior[rv.name] = posterior[rv.name].transpose("chain", "draw", *own)
    return posterior


def from_bambi(model, idata=None, *, argument: str = "model") -> tuple[pm.Model, Any]:
    """A ``bambi.Model`` (built or not) and its fit as ``(pymc.Model, idata)``.

    The pair is what every function of pm_evidence takes. ``marginal_likelihood``,
    :func:`~pm_evidence.compare_models` and :func:`~pm_evidence.compare` do this themselves
    when passed a Bambi model (or ``(bambi_model, fit)``); the model-level functions of one
    method (``bridge_sampling``, ``annealed_importance_sampling``, ...) take the PyMC model this
    returns: ``pme.bridge_sampling(*pme.from_bambi(model_1, idata_1))`` is not the form, pass
    ``model, idata = pme.from_bambi(model_1, idata_1)`` and then ``idata=idata``.

    Parameters
    ----------
    model : Bambi model (bambi.Model)
        Built or not (it is built here, as ``model.fit`` would).
    idata : xarray.DataTree, optional
        What ``model.fit()`` returned: mapped to draws of the PyMC model
        (:func:`~pm_evidence.interop.bambi.bambi_draws`). ``None`` is returned as it is.
    argument : str
        The model argument's name, for the errors.

    Returns
    -------
    (pymc.Model, xarray.DataTree or None)

    Raises
    ------
    EvidenceInputError
        When Bambi cannot build the model from its formula and data, or ``idata`` is not
        that of a fit of it.

    Examples
    --------
    >>> import bambi as bmb  # doctest: +SKIP
    >>> model = bmb.Model("y ~ x1 + (1|g)", data)  # doctest: +SKIP
    >>> idata = model.fit(random_seed=1)  # doctest: +SKIP
    >>> pm_evidence.marginal_likelihood(model, idata=idata)  # the same as:  # doctest: +SKIP
    >>> pm_evidence.marginal_likelihood(*pm_evidence.from_bambi(model, idata))  # doctest: +SKIP
    """
    pymc_model = bambi_pymc_model(model, argument=argument)
    if idata is None:
        return pymc_model, None
    return pymc_model, bambi_draws(model, idata)
