"""The ``Evidence`` result: a small, immutable record of one log-evidence estimate."""

from __future__ import annotations

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
    model_name : str
        Name of the model (used as a label by :func:`pm_evidence.compare`).
    observed_fingerprint : tuple
        Hashes of the model's observed data, checked by :func:`pm_evidence.bayes_factor`.
    """

    log_z: float
    se: float
    method: str
    diagnostics: Mapping = field(default_factory=dict)
    draws: xr.Dataset = field(default_factory=xr.Dataset)
    model_name: str = ""
    observed_fingerprint: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "log_z", float(self.log_z))
        object.__setattr__(self, "se", float(self.se))
        object.__setattr__(self, "diagnostics", MappingProxyType(dict(self.diagnostics)))
        for var in self.draws.data_vars.values():
            var.values.setflags(write=False)

    def __repr__(self) -> str:
        keys = ("ess_target", "ess_reference", "gamma", "n_iter")
        shown = ", ".join(f"{k}={self.diagnostics[k]:.4g}" for k in keys if k in self.diagnostics)
        name = f"{self.model_name!r}, " if self.model_name else ""
        return (
            f"Evidence({name}method={self.method!r}, log_z={self.log_z:.4f} ± {self.se:.4f}"
            + (f", {shown}" if shown else "")
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
        ``diagnostics`` (one scalar variable per diagnostic) and ``log_weights`` (per-draw
        arrays).
        """
        root = xr.Dataset(
            {"log_z": self.log_z, "se": self.se},
            attrs={
                "method": self.method,
                "model_name": self.model_name,
                "creation_library": "pm_evidence",
            },
        )
        diagnostics = xr.Dataset({k: np.asarray(v) for k, v in self.diagnostics.items()})
        return xr.DataTree.from_dict(
            {"/": root, "/diagnostics": diagnostics, "/log_weights": self.draws}
        )
