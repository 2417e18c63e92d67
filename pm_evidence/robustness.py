"""The prior-robustness check of a Bayes factor: :func:`prior_robustness`.

A Bayes factor depends on the priors of the parameters that one model has and the other lacks
(the wider the prior of an effect, the more the evidence leans to the model without it:
Lindley's paradox). Reports in psychology and medicine therefore show the log Bayes factor
against the scale of that prior (JASP's "Bayes factor robustness check", Wagenmakers et al.
2018, Psychon. Bull. Rev. 25, 58-76, Fig. 6); :func:`pm_evidence.plot_prior_robustness`
draws it over the evidence categories.

Every model of every scale is one :func:`~pm_evidence.marginal_likelihood` run by
:func:`~pm_evidence.compare_models` (in worker processes by default, or ``executor="serial"``),
so the grid costs what that many evidences cost, and each has its own SE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from pm_evidence.compare import compare
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.interop.resolve import is_model, resolve_model
from pm_evidence.parallel import compare_models

__all__ = ["prior_robustness"]


def prior_robustness(
    build_models: Callable[[float], Any],
    scales: Sequence[float] | np.ndarray,
    *,
    reference: str | None = None,
    method: str = "auto",
    executor: Any = None,
    random_seed=None,
    progressbar: bool = True,
    check_data: bool = True,
    backend: str = "auto",
    **options,
) -> xr.Dataset:
    """Log evidence of each model and log Bayes factors over a grid of prior scales.

    ``build_models(scale)`` builds the models to compare with one prior at ``scale``; every
    model of every scale is estimated by :func:`~pm_evidence.compare_models`, and the log Bayes
    factor of each model against the ``reference`` one is
    ``log BF(scale) = log Z_model(scale) - log Z_reference(scale)``, with the standard error
    ``sqrt(se_model^2 + se_reference^2)`` (independent estimates; Monte Carlo error only).

    Parameters
    ----------
    build_models : callable
        ``build_models(scale) -> models``, called once per scale with a Python float. It
        returns a tuple or list of models (``(h1, h0)``: labelled ``"H1"`` and ``"H0"``;
        three or more ``"M1"``, ``"M2"``, ...) or a dict ``{name: model}``, with the same
        names at every scale. A model is a ``pymc.Model`` or a ``bambi.Model`` (built or not);
        a dict value may be ``(model, idata)`` with posterior draws of it. A model object
        returned at several scales (one whose prior does not depend on the scale, often H0)
        is estimated once and its result used at each.
    scales : sequence of float
        The prior scales, each finite and positive (e.g. ``numpy.geomspace(0.1, 10, 9)``).
    reference : str, optional
        The model the log Bayes factors are taken against; default: the last one (``"H0"`` of
        a pair ``(h1, h0)``, so that ``log_bf`` of ``"H1"`` is ``log BF10``).
    method : str
        One of :data:`~pm_evidence.METHODS` (default ``"auto"``), run on every model.
    executor : None, "serial", a concurrent.futures executor or a Dask client
        As :func:`~pm_evidence.compare_models` (default: a local process pool; a script then
        needs ``if __name__ == "__main__":``). ``"serial"`` runs in this process.
    random_seed : int or numpy.random.Generator, optional
        The seed of the one :func:`~pm_evidence.compare_models` call; its model ``k`` (scales
        in the order given, then the models in their order, each distinct model once) gets the
        ``k``-th child stream.
    progressbar : bool
        One line per model as it finishes; ``False`` prints nothing.
    check_data : bool
        Refuse models of one scale fitted to different observed data.
    backend : {"auto", "numba", "jax"}
        The engine of each model's compiled functions (:func:`~pm_evidence.compare_models`).
    **options
        Options of :func:`~pm_evidence.marginal_likelihood` for every model.

    Returns
    -------
    xarray.Dataset
        Dims ``scale`` (the scales, in the order given) and ``model`` (the names):

        - ``log_z``, ``log_z_se``: each model's log evidence and its SE at each scale;
        - ``log_bf``, ``log_bf_se``: the log Bayes factor against ``reference`` (0 for the
          reference itself) and its SE;
        - ``reliable``: ``False`` where the result carries warnings (read them in the
          model's :func:`~pm_evidence.marginal_likelihood` result) or the model failed;
        - ``method``: the estimator of each ``log_z``; ``failure``: why a model has no result
          (``""`` where it has one; its ``log_z`` is then NaN);

        attrs ``reference`` (the reference model's name) and ``requested_method``.

    Raises
    ------
    EvidenceInputError
        For a scale that is not finite and positive, a ``build_models`` that is not callable
        or returns something other than models (naming the scale and what it returned), fewer
        than two models, names that differ between scales, an unknown ``reference``, or a
        Bambi model that cannot be built from its formula and data.

    See Also
    --------
    pm_evidence.plot_prior_robustness : the log Bayes factor against the scale, over the
        evidence categories.

    Examples
    --------
    >>> def build_models(scale):  # doctest: +SKIP
    ...     return logistic(slope_sd=scale), logistic(slope_sd=None)  # H1, H0
    >>> check = pm_evidence.prior_robustness(build_models, np.geomspace(0.1, 10, 7))  # doctest: +SKIP
    >>> check["log_bf"].sel(model="H1")  # log BF10 at each scale  # doctest: +SKIP
    >>> pm_evidence.plot_prior_robustness(check)  # doctest: +SKIP
    """
    grid = _checked_scales(scales)
    if not callable(build_models):
        raise EvidenceInputError(
            f"build_models must be a function of the prior scale that returns the models to "
            f"compare (e.g. lambda scale: (model_h1(scale), model_h0)), got a "
            f"{type(build_models).__name__}."
        )
    built = [_models_at(build_models, scale) for scale in grid]
    names = list(built[0])
    for scale, models in zip(grid, built, strict=True):
        if list(models) != names:
            raise EvidenceInputError(
                f"build_models returned the models {list(models)} at scale={scale:g} but "
                f"{names} at scale={grid[0]:g}: return the same models (names) at every scale."
            )
    reference = names[-1] if reference is None else reference
    if reference not in names:
        raise EvidenceInputError(
            f"Requested reference model {reference!r} but it must be one of {names}."
        )
    tasks, keys = _tasks(grid, built)
    result = compare_models(
        tasks,
        executor=executor,
        method=method,
        random_seed=random_seed,
        progressbar=progressbar,
        backend=backend,
        **options,
    )
    return _dataset(grid, names, reference, keys, result, method, check_data)


def _checked_scales(scales) -> np.ndarray:
    """``scales`` as a 1-D float array of finite positive numbers, or an error naming the bad
    one."""
    try:
        grid = np.asarray(scales, dtype=float)
    except (TypeError, ValueError) as err:
        raise EvidenceInputError(
            f"scales must be a sequence of positive numbers (prior scales, e.g. "
            f"numpy.geomspace(0.1, 10, 9)), got {scales!r}."
        ) from err
    if grid.ndim != 1 or grid.size == 0:
        raise EvidenceInputError(
            f"scales must be a non-empty 1-D sequence of positive numbers, got shape "
            f"{grid.shape}: e.g. numpy.geomspace(0.1, 10, 9)."
        )
    bad = np.flatnonzero(~(np.isfinite(grid) & (grid > 0)))
    if bad.size:
        raise EvidenceInputError(
            f"scales must be finite and positive (a prior scale is a standard deviation or a "
            f"width), got {float(grid[bad[0]])!r} at position {int(bad[0])} of {grid.tolist()}. Pass "
            f"positive scales, e.g. numpy.geomspace(0.1, 10, 9); a point-mass prior (scale "
            f"0) is the model without the parameter: return it as the reference model."
        )
    if np.unique(grid).size != grid.size:
        raise EvidenceInputError(f"scales must not repeat a value, got {grid.tolist()}.")
    return grid


def _models_at(build_models, scale: float) -> dict[str, tuple[Any, Any]]:
    """``{name: (model, idata)}`` that ``build_models(scale)`` returned, or an error naming the
    scale, what was returned and the fix."""
    returned = build_models(float(scale))
    fix = (
        "build_models must return the models to compare: a tuple (h1, h0) or list of "
        "pymc.Model or bambi.Model, or a dict {name: model} (a value may be (model, idata))"
    )
    if isinstance(returned, Mapping):
        entries = {}
        for name, value in returned.items():
            if not isinstance(name, str) or not name:
                raise EvidenceInputError(
                    f"build_models(scale={scale:g}) returned a dict with the key {name!r}: "
                    f"model names must be non-empty strings."
                )
            if isinstance(value, tuple) and len(value) == 2 and is_model(value[0]):
                entries[name] = value
            elif is_model(value):
                entries[name] = (value, None)
            else:
                raise EvidenceInputError(
                    f"build_models(scale={scale:g}) returned {type(value).__name__} for "
                    f"{name!r}, not a model; {fix}."
                )
    elif isinstance(returned, tuple | list) and not isinstance(returned, str):
        labels = ["H1", "H0"] if len(returned) == 2 else [f"M{i + 1}" for i in range(len(returned))]
        entries = {}
        for label, value in zip(labels, returned, strict=True):
            if not is_model(value):
                raise EvidenceInputError(
                    f"build_models(scale={scale:g}) returned a {type(returned).__name__} whose "
                    f"entry {label!r} is a {type(value).__name__}, not a model; {fix}. To pass "
                    f"posterior draws with a model, return a dict {{name: (model, idata)}}."
                )
            entries[label] = (value, None)
    else:
        raise EvidenceInputError(
            f"build_models(scale={scale:g}) returned a {type(returned).__name__}; {fix}. One "
            f"model alone has no Bayes factor: return it with the model to compare it with."
        )
    if len(entries) < 2:
        raise EvidenceInputError(
            f"build_models(scale={scale:g}) returned {len(entries)} model(s); a Bayes factor "
            f"needs two or more: {fix}."
        )
    return entries


def _tasks(grid: np.ndarray, built: list[dict]) -> tuple[dict, dict]:
    """The models of :func:`~pm_evidence.compare_models` (each distinct model once, Bambi
    models as the PyMC models they build) and the key of each ``(scale index, name)``."""
    tasks: dict[str, tuple[Any, Any]] = {}
    seen: dict[tuple[int, int], str] = {}
    keys: dict[tuple[int, str], str] = {}
    for i, models in enumerate(built):
        for name, (model, idata) in models.items():
            identity = (id(model), id(idata))
            if identity not in seen:
                key = f"{name} @ scale {float(grid[i])!r}"  # exact: nearby scales stay apart
                tasks[key] = resolve_model(model, idata, argument=f"{name!r} at scale {grid[i]:g}")
                seen[identity] = key
            keys[i, name] = seen[identity]
    return tasks, keys


def _dataset(grid, names, reference, keys, result, method, check_data) -> xr.Dataset:
    shape = (grid.size, len(names))
    log_z, se = np.full(shape, np.nan), np.full(shape, np.nan)
    log_bf, bf_se = np.full(shape, np.nan), np.full(shape, np.nan)
    reliable = np.zeros(shape, dtype=bool)
    methods = np.full(shape, "", dtype=object)
    failures = np.full(shape, "", dtype=object)
    for i in range(grid.size):
        evs = {}
        for j, name in enumerate(names):
            key = keys[i, name]
            if key in result.failures:
                failures[i, j] = str(result.failures[key])
                continue
            ev = evs[name] = result[key]
            log_z[i, j], se[i, j] = ev.log_z, ev.se
            reliable[i, j], methods[i, j] = ev.reliable, ev.method
        if reference in evs and len(evs) >= 2:
            table = compare(evs, reference=reference, check_data=check_data)
            for j, name in enumerate(names):
                if name in table.index:
                    log_bf[i, j] = table.loc[name, "log_bf"]
                    bf_se[i, j] = table.loc[name, "dse"]
    dims = ("scale", "model")
    return xr.Dataset(
        {
            "log_z": (dims, log_z),
            "log_z_se": (dims, se),
            "log_bf": (dims, log_bf),
            "log_bf_se": (dims, bf_se),
            "reliable": (dims, reliable),
            "method": (dims, methods.astype(str)),
            "failure": (dims, failures.astype(str)),
        },
        coords={"scale": grid, "model": names},
        attrs={"reference": reference, "requested_method": method},
    )
