"""The ``Evidence`` result (one log-evidence estimate) and ``EvidenceSet`` (several methods on one
model), with their DataTree form.

Both are plain Python values: they pickle, deep-copy and compare by value. ``Evidence`` copies
the arrays it is given (the caller's arrays are never touched) and makes its copies read-only.

DataTree layout of an ``Evidence`` (``Evidence.to_datatree()``; ArviZ conventions: named
dimensions, one group per kind of quantity, ``creation_library`` attributes)::

    /                 log_z, se (scalars); attrs: method, model_name, observed_fingerprint
                      and warnings (JSON text), pm_evidence_type = "Evidence", creation_*
    /diagnostics      one scalar variable per diagnostic
    /draws            per-draw arrays (the ``draws`` field), e.g. log_weight_target (chain, draw)
    /sample_stats     per-rung sampler diagnostics of path methods (only when present)

Files written before the group was named after the field hold it as ``/log_weights``;
``from_datatree`` reads both. An ``EvidenceSet`` is a tree with one such subtree per method. The tree can be stored inside the
model's own InferenceData (``idata["log_evidence"] = ev.to_datatree()``) and saved with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.method_bias import bias_words
from pm_evidence.core.version import __version__

__all__ = ["Evidence", "EvidenceSet"]

# The group of an Evidence tree that holds its per-draw arrays (the ``draws`` field), and the
# name files written before 2026-11-24 gave it (read too).
DRAWS_GROUP = "draws"
OLD_DRAWS_GROUP = "log_weights"
# The group of an InferenceData that holds the evidence (``idata["log_evidence"] = ...``).
IDATA_GROUP = "log_evidence"
_TYPE_ATTR = "pm_evidence_type"


class FrozenDict(Mapping):
    """A read-only mapping that pickles, deep-copies and compares by value.

    Used for :attr:`Evidence.diagnostics` (``types.MappingProxyType`` does not pickle).
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping | None = None):
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setattr__(self, name, value):
        raise AttributeError("FrozenDict is read-only.")

    def __reduce__(self):
        return (FrozenDict, (self._data,))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return set(self) == set(other) and all(_same_value(self[k], other[k]) for k in self)

    __hash__ = None  # values may be unhashable arrays

    def __repr__(self) -> str:
        return repr(self._data)


def _same_value(a, b) -> bool:
    """Equality that counts NaN equal to NaN (and compares arrays element-wise)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _plain_scalar(value):
    """NumPy scalars and 0-d arrays as Python scalars; other values unchanged (arrays copied)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value.item()
        array = value.copy()
        array.setflags(write=False)
        return array
    return value


def _freeze(value):
    """Lists (e.g. from JSON) and tuples as nested tuples; scalars unchanged."""
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_only_copy(dataset: xr.Dataset, what: str) -> xr.Dataset:
    if not isinstance(dataset, xr.Dataset):
        raise EvidenceInputError(
            f"Evidence.{what} must be an xarray.Dataset, got {type(dataset).__name__}."
        )
    copied = dataset.copy(deep=True)
    for variable in copied.variables.values():
        values = variable.values
        if isinstance(values, np.ndarray):
            values.setflags(write=False)
    return copied


def format_estimate(value: float, se: float, digits: int = 2) -> str:
    """``value ± se`` with ``se`` to ``digits`` significant digits and ``value`` to the same
    decimal place: ``-39.2701 ± 0.0031``, ``1.2345678 ± 0.0000032``, ``-141 ± 12``.

    A zero SE shows ``value`` to 6 significant digits; a non-finite one as it is.
    """
    if not (math.isfinite(se) and math.isfinite(value)) or se <= 0:
        return f"{value:.6g} ± {se:g}"
    decimals = min(max(digits - 1 - math.floor(math.log10(se)), 0), 15)
    return f"{value:.{decimals}f} ± {se:.{decimals}f}"


@dataclass(frozen=True, repr=False, eq=False)
class Evidence:
    """An estimate of ``log Z = log p(y | M)`` with its standard error and diagnostics.

    A plain value: immutable, picklable, deep-copyable and compared by value (``==`` compares
    every field, datasets with :meth:`xarray.Dataset.identical`). The arrays given to it are
    copied; the copies are read-only.

    Attributes
    ----------
    log_z : float
        The estimate of the log evidence (natural log).
    se : float
        Its standard error (Monte Carlo error of ``log Z``).
    method : str
        The estimator that produced it: a name of :data:`~pm_evidence.METHODS`, with the bridge
        proposal appended when it is not the default (``"bridge"``, ``"bridge_warp3"``), or
        ``"smc"`` for :func:`pm_evidence.from_smc`.
    diagnostics : mapping of str to scalar
        Scalar diagnostics (effective sample sizes, overlap ``gamma``, iterations, ...),
        read-only.
    draws : xarray.Dataset
        Per-draw arrays, e.g. ``log_weight_target`` ``(chain, draw)`` = ``log f - log p0`` at
        posterior draws and ``log_weight_reference`` ``(reference_draw,)`` at reference draws.
    model_name : str
        Name of the model (used as a label by :func:`pm_evidence.compare`).
    observed_fingerprint : tuple
        Hashes of the model's observed data, checked by :func:`pm_evidence.bayes_factor`.
    sample_stats : xarray.Dataset
        Sampler diagnostics of annealed / tempered methods, indexed by ``rung`` (with coordinate
        ``beta``): acceptance rate, rejected non-finite proposals, occupancy ``c_k`` against the
        prior ``r_k``, the ``beta`` transition matrix (``rung``, ``rung_to``), ...
    warnings : tuple of str
        What the user should distrust about this estimate and why (e.g. a low effective sample
        size); empty when nothing was flagged. See :attr:`reliable`.

    Examples
    --------
    >>> ev = pm_evidence.marginal_likelihood(model, random_seed=1)  # doctest: +SKIP
    >>> ev.log_z, ev.se, ev.reliable  # doctest: +SKIP
    >>> idata["log_evidence"] = ev.to_datatree()  # kept (and saved) with the fit  # doctest: +SKIP
    >>> pm_evidence.Evidence.from_datatree(idata)  # doctest: +SKIP
    """

    log_z: float
    se: float
    method: str
    diagnostics: Mapping = field(default_factory=dict)
    draws: xr.Dataset = field(default_factory=xr.Dataset)
    model_name: str = ""
    observed_fingerprint: tuple = ()
    sample_stats: xr.Dataset = field(default_factory=xr.Dataset)
    warnings: tuple[str, ...] = ()

    def __post_init__(self):
        set_ = object.__setattr__
        warnings = (self.warnings,) if isinstance(self.warnings, str) else self.warnings
        set_(self, "warnings", tuple(str(w) for w in warnings))
        set_(self, "log_z", float(self.log_z))
        set_(self, "se", float(self.se))
        set_(self, "method", str(self.method))
        set_(self, "model_name", str(self.model_name or ""))
        set_(self, "observed_fingerprint", _freeze(tuple(self.observed_fingerprint)))
        diagnostics = {str(k): _plain_scalar(v) for k, v in dict(self.diagnostics).items()}
        set_(self, "diagnostics", FrozenDict(diagnostics))
        set_(self, "draws", _read_only_copy(self.draws, "draws"))
        set_(self, "sample_stats", _read_only_copy(self.sample_stats, "sample_stats"))

    # ------------------------------------------------------------------ plain-value protocol
    def _fields(self) -> tuple:
        return (
            self.log_z,
            self.se,
            self.method,
            dict(self.diagnostics),
            self.draws,
            self.model_name,
            self.observed_fingerprint,
            self.sample_stats,
            self.warnings,
        )

    def __reduce__(self):
        # rebuilt through __init__: arrays come back read-only, diagnostics read-only
        return (Evidence, self._fields())

    def __eq__(self, other) -> bool:
        if not isinstance(other, Evidence):
            return NotImplemented
        return (
            _same_value(self.log_z, other.log_z)
            and _same_value(self.se, other.se)
            and self.method == other.method
            and self.model_name == other.model_name
            and self.observed_fingerprint == other.observed_fingerprint
            and self.warnings == other.warnings
            and self.diagnostics == other.diagnostics
            and self.draws.identical(other.draws)
            and self.sample_stats.identical(other.sample_stats)
        )

    def __hash__(self) -> int:
        log_z = "nan" if math.isnan(self.log_z) else self.log_z
        return hash((log_z, self.method, self.model_name, self.observed_fingerprint))

    # ------------------------------------------------------------------ reading
    @property
    def reliable(self) -> bool:
        """``True`` when no warning was attached to this estimate (``warnings`` is empty)."""
        return not self.warnings

    def __repr__(self) -> str:
        keys = ("ess_target", "ess_reference", "gamma", "n_iter")
        shown = ", ".join(f"{k}={self.diagnostics[k]:.4g}" for k in keys if k in self.diagnostics)
        stopped_by = self.diagnostics.get("stopped_by", "target_se")
        if stopped_by not in ("target_se", "fixed"):  # a run cut short: say by what
            shown += (", " if shown else "") + f"stopped_by={stopped_by!r}"
        name = f"{self.model_name!r}, " if self.model_name else ""
        flagged = f", warnings={list(self.warnings)!r}" if self.warnings else ""
        return (
            f"Evidence({name}method={self.method!r}, log_z={format_estimate(self.log_z, self.se)}"
            + (f", {shown}" if shown else "")
            + flagged
            + ")"
        )

    def interval(self, prob: float = 0.95) -> tuple[float, float]:
        """Normal-approximation interval for ``log Z`` from ``se``.

        Parameters
        ----------
        prob : float
            Probability mass of the interval, in ``(0, 1)``.

        Returns
        -------
        tuple of float
            ``(lower, upper)`` = ``log_z ∓ z_{(1+prob)/2} se``.
        """
        from scipy.stats import norm

        if not 0 < prob < 1:
            raise EvidenceInputError(f"prob must be in (0, 1), got {prob!r}.")
        half = norm.ppf(0.5 + prob / 2) * self.se
        return self.log_z - half, self.log_z + half

    # ------------------------------------------------------------------ DataTree form
    def to_datatree(self) -> xr.DataTree:
        """The result as an ArviZ-style :class:`xarray.DataTree` (lossless, see ``from_datatree``).

        Root: ``log_z`` and ``se`` (scalars), with attributes ``method``, ``model_name``,
        ``observed_fingerprint`` and ``warnings`` (JSON text, so that netCDF and zarr keep
        them), ``pm_evidence_type = "Evidence"`` and ArviZ's ``creation_library`` attributes.
        Groups ``diagnostics`` (one scalar variable per diagnostic), ``draws`` (per-draw
        arrays, :attr:`draws`) and, when present, ``sample_stats`` (per-rung diagnostics).

        Saving it needs a netCDF or zarr backend: ``pip install 'pm_evidence[io]'``.

        Returns
        -------
        xarray.DataTree

        Examples
        --------
        >>> tree = ev.to_datatree()  # doctest: +SKIP
        >>> tree.to_netcdf("m1.nc")  # doctest: +SKIP
        >>> idata["log_evidence"] = tree  # stored with the model's own fit  # doctest: +SKIP
        """
        root = xr.Dataset(
            {"log_z": self.log_z, "se": self.se},
            attrs={
                _TYPE_ATTR: "Evidence",
                "method": self.method,
                "model_name": self.model_name,
                "observed_fingerprint": json.dumps(self.observed_fingerprint),
                "warnings": json.dumps(list(self.warnings)),
                "creation_library": "pm_evidence",
                "creation_library_version": __version__,
                "creation_library_language": "Python",
            },
        )
        diagnostics, none_keys = {}, []
        for key, value in self.diagnostics.items():
            if value is None:
                none_keys.append(key)
            elif isinstance(value, np.ndarray):
                diagnostics[key] = (tuple(f"{key}_dim_{i}" for i in range(value.ndim)), value)
            else:
                diagnostics[key] = np.asarray(value)
        attrs = {"none": json.dumps(none_keys), "order": json.dumps(list(self.diagnostics))}
        groups = {
            "/": root,
            "/diagnostics": xr.Dataset(diagnostics, attrs=attrs),
            f"/{DRAWS_GROUP}": self.draws,
        }
        if self.sample_stats.variables or self.sample_stats.attrs:
            groups["/sample_stats"] = self.sample_stats
        return xr.DataTree.from_dict(groups)

    @classmethod
    def from_datatree(cls, tree: xr.DataTree) -> Evidence:
        """Rebuild an ``Evidence`` from :meth:`to_datatree`'s tree, e.g. after saving it.

        Parameters
        ----------
        tree : xarray.DataTree
            The tree of :meth:`to_datatree` (also once written to and read back from netCDF or
            zarr), or an InferenceData that holds it in its ``log_evidence`` group.

        Returns
        -------
        Evidence
            Equal (``==``) to the one that wrote the tree, its observed-data fingerprint and
            warnings included.

        Raises
        ------
        EvidenceInputError
            If the tree was not written by ``Evidence.to_datatree``.

        Examples
        --------
        >>> ev.to_datatree().to_netcdf("m1.nc")  # doctest: +SKIP
        >>> Evidence.from_datatree(xarray.open_datatree("m1.nc")) == ev  # doctest: +SKIP
        True
        """
        tree = _evidence_node(tree, "Evidence")
        root = tree.to_dataset(inherit=False)
        attrs = root.attrs
        if "log_z" not in root or "se" not in root or "method" not in attrs:
            raise EvidenceInputError(
                "This DataTree is not an Evidence tree: its root has variables "
                f"{sorted(root.data_vars)} and attributes {sorted(attrs)}, but Evidence.to_datatree "
                "writes 'log_z' and 'se' with a 'method' attribute. Pass the tree that "
                "Evidence.to_datatree wrote (or an InferenceData holding it in 'log_evidence')."
            )
        diagnostics = {}
        if "diagnostics" in tree.children:
            group = tree["diagnostics"].to_dataset(inherit=False)
            order = json.loads(group.attrs.get("order", "[]")) or list(group.data_vars)
            none_keys = set(json.loads(group.attrs.get("none", "[]")))
            for key in order:
                if key in none_keys:
                    diagnostics[key] = None
                elif key in group:
                    diagnostics[key] = _plain_scalar(np.asarray(group[key].values))
        return cls(
            log_z=float(root["log_z"]),
            se=float(root["se"]),
            method=str(attrs["method"]),
            diagnostics=diagnostics,
            draws=_child_dataset(
                tree, DRAWS_GROUP if DRAWS_GROUP in tree.children else OLD_DRAWS_GROUP
            ),
            model_name=str(attrs.get("model_name", "")),
            observed_fingerprint=_freeze(json.loads(attrs.get("observed_fingerprint", "[]"))),
            sample_stats=_child_dataset(tree, "sample_stats"),
            warnings=tuple(json.loads(attrs.get("warnings", "[]"))),
        )


def build_evidence(
    target,
    estimate,
    method: str,
    draws: dict,
    sample_stats: xr.Dataset | None = None,
    warnings: tuple[str, ...] | list[str] = (),
) -> Evidence:
    """The :class:`Evidence` of an estimate (an ``Estimate`` of :mod:`pm_evidence.estimators`:
    ``log_z``, ``se``, ``diagnostics``) of ``target``'s model; per-draw arrays are ``(chain, draw)`` if 2-D, ``reference_draw`` if 1-D,
    or ``(dims, array)`` tuples.

    ``warnings`` were issued by the caller; the model's own (an improper prior, no data:
    ``LogDensity.model_messages``, issued by :func:`~pm_evidence.model.log_density.as_target`) are added
    here, so that every estimator's result carries them.
    """
    model_messages = tuple(m for m in target.model_messages if m not in warnings)
    se, diagnostics = estimate.se, estimate.diagnostics
    backend = getattr(target, "backend", None)
    if backend is not None:  # the engine and device of the model's compiled functions
        diagnostics = {**diagnostics, **backend.diagnostics()}
    if getattr(target, "noncentered", ()):  # computed in non-centered coordinates: same log Z
        diagnostics = {**diagnostics, "noncentered": list(target.noncentered)}
    on_edge = (
        getattr(target, "prior_edge_share", 0.0) if diagnostics.get("reference") == "prior" else 0.0
    )
    if on_edge != 0.0:  # forward draws rounded onto a support's edge, moved inside (NaN: unknown)
        diagnostics = {**diagnostics, "prior_draws_on_edge": on_edge}
    cut = getattr(target, "prior_cut", None) if diagnostics.get("reference") == "prior" else None
    if cut is not None and cut.cut:
        # p0 = the prior cut by transforms, divided by its mass m (PriorCut): an estimated m
        # adds the SE of log m
        diagnostics = {
            **diagnostics,
            "prior_cut": list(cut.cut),
            "prior_cut_log_mass": cut.log_mass,
            "prior_cut_log_mass_se": cut.log_mass_se,
            "prior_cut_how": cut.how,
        }
        se = float(np.hypot(se, cut.log_mass_se))
    data_vars = {}
    for name, value in draws.items():
        if isinstance(value, tuple):  # (dims, array) given explicitly
            data_vars[name] = value
            continue
        array = np.asarray(value)
        dims = ("chain", "draw") if array.ndim == 2 else ("reference_draw",)
        data_vars[name] = (dims, array)
    return Evidence(
        log_z=estimate.log_z,
        se=se,
        method=method,
        diagnostics=diagnostics,
        draws=xr.Dataset(data_vars),
        model_name=target.model.name or "",
        observed_fingerprint=target.observed_fingerprint,
        sample_stats=xr.Dataset() if sample_stats is None else sample_stats,
        warnings=(*warnings, *model_messages),
    )


def _child_dataset(tree: xr.DataTree, name: str) -> xr.Dataset:
    """The group's own variables, loaded into memory (a file read lazily may be closed later)."""
    if name not in tree.children:
        return xr.Dataset()
    return tree[name].to_dataset(inherit=False).load()


def _evidence_node(tree, *expected: str) -> xr.DataTree:
    """The node written by ``to_datatree``: the tree itself or its ``log_evidence`` group."""
    if not isinstance(tree, xr.DataTree):
        raise EvidenceInputError(
            f"Expected an xarray.DataTree (from {expected[0]}.to_datatree or "
            f"xarray.open_datatree), got {type(tree).__name__}."
        )
    if _TYPE_ATTR not in tree.attrs and IDATA_GROUP in tree.children:
        tree = tree[IDATA_GROUP]
    kind = tree.attrs.get(_TYPE_ATTR)
    if kind is not None and kind not in expected:
        raise EvidenceInputError(
            f"This DataTree holds an {kind}, not an {expected[0]}: read it with "
            f"pm_evidence.{kind}.from_datatree."
        )
    return tree


def from_datatree(tree: xr.DataTree) -> Evidence | EvidenceSet:
    """Read an ``Evidence`` or ``EvidenceSet`` tree, whichever it is.

    Parameters
    ----------
    tree : xarray.DataTree
        Written by :meth:`Evidence.to_datatree` or :meth:`EvidenceSet.to_datatree`, or an
        InferenceData holding one in its ``log_evidence`` group.

    Returns
    -------
    Evidence or EvidenceSet
    """
    node = _evidence_node(tree, "Evidence", "EvidenceSet")
    if node.attrs.get(_TYPE_ATTR) == "EvidenceSet":
        return EvidenceSet.from_datatree(node)
    return Evidence.from_datatree(node)


DISAGREEMENT_Z = 4.0


class EvidenceSet(dict):
    """Results of several methods on one model: ``{method: Evidence}`` plus a combined report.

    A ``dict`` of method name to :class:`Evidence` (so it pickles, deep-copies and compares by
    value like one). :meth:`summary` tabulates every estimate with its SE and bias direction;
    :attr:`sandwich` is ``(AIS, RAISE)`` when both were run (AIS a stochastic lower bound;
    RAISE biased upward in expectation only where its reverse chains are good, not a bound, so
    the pair brackets ``log Z`` only then); :meth:`disagreements` lists the pairs that differ by more than 4 combined
    standard errors (:func:`pm_evidence.marginal_likelihood` warns about them).

    Examples
    --------
    >>> results = pm_evidence.marginal_likelihood(model, method=["ais", "raise"])  # doctest: +SKIP
    >>> results.summary()  # doctest: +SKIP
    >>> results.to_datatree().to_netcdf("methods.nc")  # doctest: +SKIP
    """

    def summary(self):
        """One row per method: ``log_z``, ``se``, bias direction, evaluations, ``warning``.

        The ``bias`` column says which way ``log Z`` errs in expectation, and whether that is
        a bound:

        - ``"stochastic lower bound"`` (AIS, IS): ``E[Z_hat] = Z``, so by Jensen
          ``E[log Z_hat] <= log Z``; one estimate may still lie above.
        - RAISE: ``"upward if reverse chains good; not a bound"``: upward in expectation only
          where its approximate reverse chains are good.
          ``E[w] = 1/Z`` (hence ``E[log Z_hat] >= log Z``) holds for chains started at exact
          posterior draws; they start at MCMC draws and their reverse transitions only
          approximate the exact reverse chain, so its own warning says it is no bound (it has
          been seen below the exact value).
        - RIS: ``"upward if draws exact; not a bound"`` (the same argument, for the MCMC
          draws it reweights).
        - ``"no definite sign"``: every other method.

        Returns
        -------
        pandas.DataFrame
            Indexed by method name.
        """
        import pandas as pd

        rows = {
            name: {
                "log_z": ev.log_z,
                "se": ev.se,
                "bias": bias_words(ev.method),
                "n_evaluations": ev.diagnostics.get("n_evaluations", np.nan),
                "warning": not ev.reliable,
            }
            for name, ev in self.items()
        }
        return pd.DataFrame.from_dict(rows, orient="index")

    @property
    def sandwich(self) -> tuple[float, float] | None:
        """``(log Z_AIS, log Z_RAISE)`` if both ran, else None.

        AIS is a stochastic lower bound on ``log Z``; RAISE is biased upward in expectation
        only where its reverse chains are good (it starts at MCMC draws, not exact posterior
        draws), and is not a bound. So the pair brackets ``log Z`` only then: RAISE below AIS
        by more than their errors says its chains were not good enough. The repr prints the
        two in increasing order, each labelled.
        """
        if "ais" in self and "raise" in self:
            return self["ais"].log_z, self["raise"].log_z
        return None

    def disagreements(self, threshold: float = DISAGREEMENT_Z) -> list[tuple[str, str, float]]:
        """Pairs of methods whose estimates differ by more than ``threshold`` combined SEs.

        Parameters
        ----------
        threshold : float
            In units of ``sqrt(se_a^2 + se_b^2)``.

        Returns
        -------
        list of tuple
            ``(a, b, z)`` with ``z = |log Z_a - log Z_b| / sqrt(se_a^2 + se_b^2) > threshold``.
        """
        names = list(self)
        out = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                ea, eb = self[a], self[b]
                scale = np.hypot(ea.se, eb.se)
                z = abs(ea.log_z - eb.log_z) / scale if scale > 0 else np.inf
                if z > threshold:
                    out.append((a, b, float(z)))
        return out

    def to_datatree(self) -> xr.DataTree:
        """One :meth:`Evidence.to_datatree` subtree per method, under the method's name.

        The root's attributes ``pm_evidence_type = "EvidenceSet"`` and ``methods`` (JSON list,
        the order of the set: netCDF and zarr list groups alphabetically) make it readable by
        :meth:`from_datatree`.

        Returns
        -------
        xarray.DataTree
        """
        for name in self:
            if not isinstance(name, str) or not name or "/" in name:
                raise EvidenceInputError(
                    f"EvidenceSet key {name!r} cannot name a DataTree group: use a non-empty "
                    f"string without '/'."
                )
        root = xr.DataTree(
            xr.Dataset(
                attrs={
                    _TYPE_ATTR: "EvidenceSet",
                    "methods": json.dumps(list(self)),
                    "creation_library": "pm_evidence",
                    "creation_library_version": __version__,
                    "creation_library_language": "Python",
                }
            )
        )
        for name, evidence in self.items():
            root[name] = evidence.to_datatree()
        return root

    @classmethod
    def from_datatree(cls, tree: xr.DataTree) -> EvidenceSet:
        """Rebuild an ``EvidenceSet`` from :meth:`to_datatree`'s tree (e.g. after saving it).

        Parameters
        ----------
        tree : xarray.DataTree
            The tree of :meth:`to_datatree`, or an InferenceData holding it in ``log_evidence``.

        Returns
        -------
        EvidenceSet
            Equal to the one that wrote the tree, in the same order.
        """
        tree = _evidence_node(tree, "EvidenceSet")
        order = json.loads(tree.attrs.get("methods", "null")) or list(tree.children)
        missing = [name for name in order if name not in tree.children]
        if missing:
            raise EvidenceInputError(
                f"This EvidenceSet tree lists methods {missing} that it has no group for; "
                f"its groups are {list(tree.children)}."
            )
        return cls({name: Evidence.from_datatree(tree[name]) for name in order})

    def __repr__(self) -> str:
        text = f"EvidenceSet of {len(self)} methods\n{self.summary().to_string()}"
        if self.sandwich is not None:
            text += "\n" + _sandwich_line(self["ais"], self["raise"])
        return text


def _sandwich_line(ais: Evidence, raise_: Evidence) -> str:
    """AIS and RAISE in increasing order, labelled, and whether they are in the expected one."""
    pair = sorted([("AIS", ais), ("RAISE", raise_)], key=lambda item: item[1].log_z)
    shown = " <= ".join(f"{format_estimate(ev.log_z, ev.se)} ({name})" for name, ev in pair)
    line = f"AIS and RAISE: {shown}"
    gap = ais.log_z - raise_.log_z
    scale = float(np.hypot(ais.se, raise_.se))
    if gap > 0:
        beyond = f"{gap / scale:.1f} combined SE" if scale > 0 else "an unknown number of SE"
        line += (
            f"; RAISE below AIS by {beyond}, the reverse of the order expected (AIS low and "
            f"RAISE high, in expectation): noise if that is small, else a sign that RAISE's "
            f"reverse chains are poor"
        )
    else:
        line += (
            " (AIS a stochastic lower bound; RAISE upward only where its reverse chains are "
            "good, not a bound)"
        )
    return line
