"""The ``Evidence`` result: a small, immutable record of one log-evidence estimate."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import xarray as xr

__all__ = ["Evidence"]


@dataclass(frozen=True, repr=False, eq=False)
class Evidence:
    """An estimate of ``log Z = log p(y | M)`` with its standard error and diagnostics.

    Attributes
    ----------
    log_z : float
        The estimate of the log evidence (natural log).
    se : float
        Its standard error (Monte Carlo error of ``log Z``).
    method : str
        The estimator that produced it (``"is"``, ``"ris"``, ``"ds"``, ``"bridge"``, ...).
    diagnostics : Mapping[str, float | int | str]
        Scalar diagnostics (effective sample sizes, overlap ``gamma``, iterations, ...).
    draws : xarray.Dataset
        Per-draw arrays, e.g. ``log_weight_target`` ``(chain, draw)`` = ``log f - log p0`` at
        posterior draws and ``log_weight_reference`` ``(reference_draw,)`` at reference draws.
    sample_stats : xarray.Dataset
        Sampler diagnostics of annealed / tempered methods, indexed by ``rung`` (with coordinate
        ``beta``): acceptance rate, rejected non-finite proposals, occupancy ``c_k`` against the
        prior ``r_k``, the ``beta`` transition matrix (``rung``, ``rung_to``), ...
    model_name : str
        Name of the model (used as a label by :func:`pm_evidence.compare`).
    observed_fingerprint : tuple
        Hashes of the model's observed data, checked by :func:`pm_evidence.bayes_factor`.
    warnings : tuple of str
        What the user should distrust about this estimate and why (e.g. a low effective sample
        size); empty when nothing was flagged. See :attr:`reliable`.
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
        if isinstance(self.warnings, str):
            object.__setattr__(self, "warnings", (self.warnings,))
        object.__setattr__(self, "warnings", tuple(str(w) for w in self.warnings))
        object.__setattr__(self, "log_z", float(self.log_z))
        object.__setattr__(self, "se", float(self.se))
        object.__setattr__(self, "diagnostics", MappingProxyType(dict(self.diagnostics)))
        for dataset in (self.draws, self.sample_stats):
            for var in dataset.data_vars.values():
                var.values.setflags(write=False)

    @property
    def reliable(self) -> bool:
        """``True`` when no warning was attached to this estimate (``warnings`` is empty)."""
        return not self.warnings

    def __repr__(self) -> str:
        keys = ("ess_target", "ess_reference", "gamma", "n_iter")
        shown = ", ".join(f"{k}={self.diagnostics[k]:.4g}" for k in keys if k in self.diagnostics)
        name = f"{self.model_name!r}, " if self.model_name else ""
        flagged = f", warnings={list(self.warnings)!r}" if self.warnings else ""
        return (
            f"Evidence({name}method={self.method!r}, log_z={self.log_z:.4f} ± {self.se:.4f}"
            + (f", {shown}" if shown else "")
            + flagged
            + ")"
        )

    def interval(self, prob: float = 0.95) -> tuple[float, float]:
        """Normal-approximation interval for ``log Z`` from ``se``."""
        from scipy.stats import norm

        half = norm.ppf(0.5 + prob / 2) * self.se
        return self.log_z - half, self.log_z + half

    def to_datatree(self) -> xr.DataTree:
        """ArviZ-compatible DataTree.

        Root: ``log_z`` and ``se`` (scalars; attrs ``method``, ``model_name``). Groups
        ``diagnostics`` (one scalar variable per diagnostic), ``log_weights`` (per-draw
        arrays) and, for annealed / tempered methods, ``sample_stats`` (per-rung diagnostics).
        """
        root = xr.Dataset(
            {"log_z": self.log_z, "se": self.se},
            attrs={
                "method": self.method,
                "model_name": self.model_name,
                "creation_library": "pm_evidence",
                "warnings": json.dumps(list(self.warnings)),
            },
        )
        diagnostics = xr.Dataset({k: np.asarray(v) for k, v in self.diagnostics.items()})
        groups = {"/": root, "/diagnostics": diagnostics, "/log_weights": self.draws}
        if self.sample_stats.data_vars:
            groups["/sample_stats"] = self.sample_stats
        return xr.DataTree.from_dict(groups)


# Which way each estimator's log Z errs in expectation (Jensen's inequality on an unbiased
# estimator of Z or of 1/Z); the others have no definite sign.
BIAS_DIRECTION = {
    "is": "lower bound",
    "ais": "lower bound",
    "ris": "upper bound",
    "raise": "upper bound",
}
DISAGREEMENT_Z = 4.0


class EvidenceSet(dict):
    """Results of several methods on one model: ``{method: Evidence}`` plus a combined report.

    ``summary()`` tabulates every estimate with its SE and bias direction; ``sandwich`` is
    ``(AIS, RAISE)`` when both were run (a stochastic lower and upper bound, in expectation);
    ``disagreements()`` lists the pairs that differ by more than 4 combined standard errors
    (:func:`pm_evidence.marginal_likelihood` warns about them).
    """

    def summary(self):
        import pandas as pd

        rows = {
            name: {
                "log_z": ev.log_z,
                "se": ev.se,
                "bias": BIAS_DIRECTION.get(ev.method, "no definite sign"),
                "n_evaluations": ev.diagnostics.get("n_evaluations", np.nan),
            }
            for name, ev in self.items()
        }
        return pd.DataFrame.from_dict(rows, orient="index")

    @property
    def sandwich(self) -> tuple[float, float] | None:
        """``(log Z_AIS, log Z_RAISE)``: lower and upper bounds in expectation, if both ran."""
        if "ais" in self and "raise" in self:
            return self["ais"].log_z, self["raise"].log_z
        return None

    def disagreements(self, threshold: float = DISAGREEMENT_Z) -> list[tuple[str, str, float]]:
        """Pairs ``(a, b, z)`` with ``|log Z_a - log Z_b| > threshold * sqrt(se_a^2 + se_b^2)``."""
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

    def __repr__(self) -> str:
        text = f"EvidenceSet of {len(self)} methods\n{self.summary().to_string()}"
        if self.sandwich is not None:
            text += f"\nsandwich (AIS, RAISE): {self.sandwich[0]:.4f} .. {self.sandwich[1]:.4f}"
        return text
