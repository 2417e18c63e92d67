"""Read PyMC's own SMC estimate of log Z into an Evidence result (for cross-checks)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pm_evidence.core.evidence import Evidence
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.log_density import LogDensity

__all__ = ["from_smc"]


def smc_chain_log_z(trace) -> np.ndarray:
    """Final-stage log marginal likelihood of every chain of a ``pm.sample_smc`` result."""
    try:
        stats = trace["sample_stats"]["log_marginal_likelihood"].values
    except KeyError as err:
        raise EvidenceInputError(
            "trace has no sample_stats/log_marginal_likelihood: pass the output of pm.sample_smc."
        ) from err
    # (chain, stage) of floats when every chain ran the same number of stages, else (chain,)
    # of per-stage sequences; NaN marks stages before the last.
    if stats.ndim == 1:
        rows = [np.ravel(np.asarray(row, dtype=float)) for row in stats]
    else:
        rows = [np.asarray(row, dtype=float).ravel() for row in stats.reshape(stats.shape[0], -1)]
    per_chain = []
    for values in rows:
        values = values[np.isfinite(values)]
        if values.size == 0:
            raise EvidenceInputError("An SMC chain has no finite log marginal likelihood.")
        per_chain.append(values[-1])
    return np.array(per_chain)


def from_smc(trace, model=None) -> Evidence:
    """``Evidence`` from PyMC's SMC: mean over chains, SE from their spread (needs >= 2 chains).

    SMC's estimate of ``Z`` is unbiased, so ``log Z`` from it is biased low when the tempering
    schedule is too coarse; the spread over chains does not show that bias.

    Parameters
    ----------
    trace : xarray.DataTree
        The output of ``pm.sample_smc`` (its ``sample_stats`` group holds
        ``log_marginal_likelihood`` per chain and stage).
    model : pymc.Model, optional
        The model SMC ran on: gives the result its name and observed-data fingerprint, so that
        :func:`~pm_evidence.bayes_factor` can check two results saw the same data.

    Returns
    -------
    Evidence
        ``method="smc"``; ``draws["log_z_chain"]`` holds every chain's final-stage estimate.

    Raises
    ------
    EvidenceInputError
        If ``trace`` has no SMC log marginal likelihood or fewer than 2 chains.
    """
    chains = smc_chain_log_z(trace)
    if chains.size < 2:
        raise EvidenceInputError("Need at least 2 SMC chains to estimate a standard error.")
    fingerprint = ()
    name = ""
    if model is not None:
        target = LogDensity.for_model(model)
        fingerprint, name = target.observed_fingerprint, target.model.name or ""
    return Evidence(
        log_z=float(chains.mean()),
        se=float(chains.std(ddof=1) / np.sqrt(chains.size)),
        method="smc",
        diagnostics={"n_chains": int(chains.size)},
        draws=xr.Dataset({"log_z_chain": ("chain", chains)}),
        model_name=name,
        observed_fingerprint=fingerprint,
    )
