"""The model argument of the public functions, resolved in one place: a model of another
tool (a ``bambi.Model``) becomes the PyMC model it builds, and its fit's draws draws of that
model (:func:`resolve_model`). Everything else is returned as it is, for the callee to check."""

from __future__ import annotations

from typing import Any

import pymc as pm

from pm_evidence.interop.bambi import from_bambi, is_bambi_model

__all__ = ["is_model", "resolve_model"]


def resolve_model(model: Any, idata: Any = None, *, argument: str = "model") -> tuple[Any, Any]:
    """``(model, idata)`` with a Bambi model read as its PyMC model and its fit's draws
    (:func:`pm_evidence.interop.bambi.from_bambi`); anything else returned unchanged.

    Parameters
    ----------
    model : pymc.Model, Bambi model (bambi.Model), LogDensity or None
    idata : optional
        Posterior draws of ``model`` (for a Bambi model: what ``model.fit()`` returned).
    argument : str
        The model argument's name, for the errors.

    Returns
    -------
    tuple
        ``(model, idata)``.
    """
    if is_bambi_model(model):
        return from_bambi(model, idata, argument=argument)
    return model, idata


def is_model(value: Any) -> bool:
    """Whether ``value`` is a model the public functions estimate: a ``pymc.Model`` or a Bambi
    model (built or not)."""
    return isinstance(value, pm.Model) or is_bambi_model(value)
