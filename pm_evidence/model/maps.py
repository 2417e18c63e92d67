"""Maps between named constrained draws and flat unconstrained vectors, in both directions.

Every transform PyMC applies is used through its own ``forward`` and ``backward`` graphs,
including those that change the dimension: the simplex (stick-breaking) transform of a
Dirichlet (``K`` values to ``K - 1``), the packed-Cholesky transform of ``LKJCholeskyCov``,
``ordered`` and the zero-sum transform of ``ZeroSumNormal``. Both maps are compiled once per
model and vectorized over a leading batch dimension.

Neither map serves a sampler's loop (the flat-to-named map serves messages and users, the
named-to-flat map reads every ``idata`` and every prior draw of a prior reference, on whole
batches), so both are built with PyTensor's Python linker (``PYTHON_LINKER``: the full graph
rewrites, each operation run by NumPy on the whole batch) instead of the default Numba backend:
they compile in a tenth of a second instead of seconds from empty caches, and map as fast, with
the same values to rounding (measured: docs/benchmarks.rst, "Where a cold first call
compiles", and "Shared Blockwise inputs, the maps on the Python linker, a fresh machine" for
the transforms that change the dimension).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph

from pm_evidence.core.exceptions import EvidenceInputError, NonFiniteLogDensityError
from pm_evidence.model.compile_mode import python_linker_function
from pm_evidence.model.graphs import vectorize_batched
from pm_evidence.model.layout import Layout

__all__ = ["ValueMaps", "posterior_dataset"]


class ValueMaps:
    """``to_constrained`` and ``to_unconstrained`` for one model (compiled lazily, once).

    Parameters
    ----------
    model : pymc.Model
    layout : Layout
    point : dict
        A point of the model's value variables (fixes the shapes of the flat vector).
    """

    def __init__(self, model: pm.Model, layout: Layout, point: dict):
        self.model = model
        self.layout = layout
        self._point = point

    @cached_property
    def _to_constrained_fn(self):
        model = self.model
        constrained = model.replace_rvs_by_values(model.free_RVs)
        outputs, x = pm.pytensorf.join_nonshared_inputs(self._point, constrained, model.value_vars)
        x_batch = pt.matrix("x_batch", dtype=x.dtype)
        return python_linker_function(
            [x_batch], vectorize_batched(outputs, x, x_batch), on_unused_input="ignore",
            allow_input_downcast=True,
        )  # fmt: skip

    @cached_property
    def _to_unconstrained_fn(self):
        model = self.model
        placeholders = [rv.type() for rv in model.free_RVs]
        replace = dict(zip(model.free_RVs, placeholders, strict=True))
        pieces = []
        for rv in model.free_RVs:
            transform = model.rvs_to_transforms.get(rv)
            value = transform.forward(rv, *rv.owner.inputs) if transform is not None else rv
            pieces.append(pt.as_tensor(value).astype("float64").ravel())
        flat = graph_replace(pt.concatenate(pieces), replace, strict=False)
        batched_inputs = [
            pt.tensor(dtype=p.dtype, shape=(None, *p.type.shape)) for p in placeholders
        ]
        flat_batched = vectorize_graph(
            flat, replace=dict(zip(placeholders, batched_inputs, strict=True))
        )
        return python_linker_function(
            batched_inputs, flat_batched, on_unused_input="ignore", allow_input_downcast=True
        )

    def to_constrained(self, flat: np.ndarray, batch_shape: tuple) -> dict[str, np.ndarray]:
        """Flat unconstrained rows ``(n, dim)`` to named constrained values ``(*batch, *shape)``."""
        values = self._to_constrained_fn(flat)
        return {
            v.name: np.asarray(val).reshape(batch_shape + v.shape)
            for v, val in zip(self.layout.variables, values, strict=True)
        }

    def to_unconstrained(self, values: Mapping[str, np.ndarray], batch_ndim: int = 1) -> np.ndarray:
        """Named constrained values ``{name: (*batch, *shape)}`` to flat vectors ``(*batch, dim)``.

        ``batch_ndim`` is the number of leading batch dimensions (2 for ``(chain, draw)``).

        Raises
        ------
        NonFiniteLogDensityError
            Where a value is not finite or lies outside its transform's image.
        """
        flat, batch_shape = self.unconstrained_rows(values, batch_ndim)
        if not np.all(np.isfinite(flat)):
            bad = [v.name for v in self.layout.variables
                   if not np.all(np.isfinite(flat[:, v.start : v.stop]))]  # fmt: skip
            raise NonFiniteLogDensityError(
                f"Draws of {bad} lie on the boundary of (or outside) their support: their "
                f"unconstrained values are not finite. Check that the draws come from this model."
            )
        return flat.reshape(*batch_shape, self.layout.dim)

    def moved_off_edges(
        self, values: Mapping[str, np.ndarray], flat: np.ndarray, skip: tuple[str, ...] = ()
    ) -> tuple[np.ndarray, np.ndarray]:
        """Flat rows ``(n, dim)`` of forward draws ``values`` (one batch dimension; ``flat``
        their :meth:`unconstrained_rows`) where a value sitting exactly on the edge of its
        support is replaced by the nearest floating-point number inside it; and which rows
        were moved.

        A forward draw on the edge is a rounding: ``Beta(0.01, 0.01)`` draws within ``1e-17``
        of 1 are stored as ``1.0``, and ``Gamma(0.01)`` draws below ``1e-308`` as ``0.0``,
        where the transform (``logit``, ``log``) is infinite. The draw lies between the edge
        and the neighbouring float inside, so that float is as faithful a draw as the edge
        itself, and has a finite density. Per element of a transform that maps element to
        element, the neighbour above is tried, then the one below; in a transform that
        changes the dimension (a Dirichlet's simplex), the entries at exactly 0 move up.
        Variables in ``skip`` (transforms that cut the prior: not finite means outside) are
        left as they are, as is anything still not finite (the caller's to report)."""
        flat = np.array(flat, dtype=float)
        moved = np.zeros(flat.shape[0], dtype=bool)
        checked = [v for v in self.layout.variables if v.name not in skip and not v.discrete]
        rows = np.flatnonzero(np.any(
            [~np.all(np.isfinite(flat[:, v.start : v.stop]), axis=1) for v in checked], axis=0
        )) if checked else np.array([], dtype=int)  # fmt: skip
        if rows.size == 0:
            return flat, moved
        sub = {name: np.asarray(value)[rows] for name, value in values.items()}
        changed = np.zeros(rows.size, dtype=bool)
        for v in checked:
            bad = ~np.isfinite(flat[rows, v.start : v.stop])
            if not bad.any():
                continue
            shape = sub[v.name].shape
            draws = np.array(sub[v.name], dtype=float).reshape(rows.size, -1)
            before = draws.copy()
            if draws.shape[1] != bad.shape[1]:  # a simplex: its zeros move up
                draws[(draws == 0.0) & bad.any(axis=1)[:, None]] = np.nextafter(0.0, 1.0)
            else:
                for direction in (np.inf, -np.inf):
                    trial = draws.copy()
                    trial[bad] = np.nextafter(draws[bad], direction)
                    tried, _ = self.unconstrained_rows({**sub, v.name: trial.reshape(shape)})
                    fixed = bad & np.isfinite(tried[:, v.start : v.stop])
                    draws[fixed] = trial[fixed]
                    bad &= ~fixed
            changed |= np.any(draws != before, axis=1)
            sub[v.name] = draws.reshape(shape)
        new, _ = self.unconstrained_rows(sub)
        for v in self.layout.variables:  # outside a cut stays outside (to be rejected)
            if v.name in skip:
                old = flat[rows, v.start : v.stop]
                moved_values = new[:, v.start : v.stop]
                new[:, v.start : v.stop] = np.where(np.isfinite(old), moved_values, old)
        flat[rows] = new
        moved[rows] = changed
        return flat, moved

    def unconstrained_rows(
        self, values: Mapping[str, np.ndarray], batch_ndim: int = 1
    ) -> tuple[np.ndarray, tuple]:
        """Named constrained values to flat rows ``(n, dim)`` and the batch shape, with
        non-finite entries where a value lies outside (or on the edge of) its transform's image
        (``log`` of a negative number: NaN) instead of an error."""
        names = self.layout.var_names
        missing = [name for name in names if name not in values]
        if missing:
            raise EvidenceInputError(
                f"Posterior values are missing the free variables {missing}; got "
                f"{sorted(values)}. Pass draws of every free variable of the model ({names})."
            )
        arrays, batch_shape = [], None
        for v in self.layout.variables:
            array = np.asarray(values[v.name])
            this_batch = array.shape[:batch_ndim]
            if array.shape[batch_ndim:] != v.shape:
                raise EvidenceInputError(
                    f"Variable {v.name!r} has draws of shape {array.shape}; expected "
                    f"{batch_ndim} batch dimension(s) followed by the variable's shape {v.shape}."
                )
            if batch_shape is None:
                batch_shape = this_batch
            elif this_batch != batch_shape:
                raise EvidenceInputError(
                    f"Variable {v.name!r} has batch shape {this_batch}, others have {batch_shape}."
                )
            if not np.all(np.isfinite(array)):
                raise NonFiniteLogDensityError(
                    f"Draws of {v.name!r} contain non-finite values (NaN or inf); drop those draws "
                    f"or check the sampler that produced them."
                )
            arrays.append(array.reshape(-1, *v.shape))
        with np.errstate(invalid="ignore", divide="ignore"):
            flat = np.asarray(self._to_unconstrained_fn(*arrays), dtype=float)
        return flat.reshape(-1, self.layout.dim), batch_shape


def posterior_dataset(idata):
    """The posterior group of an ArviZ DataTree/InferenceData, or a Dataset given directly."""
    import xarray as xr

    if isinstance(idata, xr.Dataset):
        posterior = idata
    elif isinstance(idata, xr.DataTree) and not idata.children and idata.data_vars:
        posterior = idata.to_dataset()  # a group given alone, e.g. idata.posterior
    elif isinstance(idata, xr.DataTree):
        if "posterior" not in idata.children:
            raise EvidenceInputError(
                f"idata has no 'posterior' group (groups: {list(idata.children)}); pass the "
                f"result of pm.sample()."
            )
        posterior = idata["posterior"].to_dataset()
    elif hasattr(idata, "posterior"):
        posterior = idata.posterior
        posterior = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    else:
        raise EvidenceInputError(
            f"idata must be an ArviZ DataTree (as returned by pm.sample) or an xarray Dataset of "
            f"posterior draws, got {type(idata).__name__}."
        )
    for dim in ("chain", "draw"):
        if dim not in posterior.dims:
            raise EvidenceInputError(
                f"Posterior draws must have dims ('chain', 'draw', ...); got {tuple(posterior.dims)}."
            )
    return posterior
