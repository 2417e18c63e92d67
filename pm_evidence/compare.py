"""Follow-ups on Evidence results: Bayes factors, posterior model probabilities, comparison.

Modelled on R's bridgesampling (``bf``, ``post_prob``) and ArviZ (``bayes_factor`` returns a
Dataset with a ``bf_type`` dimension, ``compare`` a DataFrame).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import softmax

from pm_evidence.evidence import Evidence
from pm_evidence.exceptions import EvidenceInputError

__all__ = ["bayes_factor", "compare", "post_prob"]


def _check_same_data(evidences: Mapping[str, Evidence]) -> None:
    """Raise if the models were fitted to different observed data."""
    items = [(k, e) for k, e in evidences.items() if e.observed_fingerprint]
    if len(items) < 2:
        return
    name0, ev0 = items[0]
    data0 = sorted((shape, digest) for _, shape, digest in ev0.observed_fingerprint)
    for name, ev in items[1:]:
        data = sorted((shape, digest) for _, shape, digest in ev.observed_fingerprint)
        if data != data0:
            raise EvidenceInputError(
                f"Models {name0!r} and {name!r} were fitted to different observed data "
                f"({[(n, s) for n, s, _ in ev0.observed_fingerprint]} vs "
                f"{[(n, s) for n, s, _ in ev.observed_fingerprint]}, compared by content): "
                f"a Bayes factor compares models of the same data. Fit both models to the same "
                f"observations, or pass check_data=False if the difference is intended."
            )


def _as_evidences(evidences) -> dict[str, Evidence]:
    if isinstance(evidences, Evidence):
        raise EvidenceInputError("Pass several Evidence results (a dict or a list), not one.")
    if isinstance(evidences, Mapping):
        out = dict(evidences)
    else:
        out = {}
        for i, ev in enumerate(evidences):
            out[ev.model_name or f"model_{i}"] = ev
    for name, ev in out.items():
        if not isinstance(ev, Evidence):
            raise EvidenceInputError(
                f"Entry {name!r} is a {type(ev).__name__}, not an Evidence result "
                f"(the output of pm_evidence.marginal_likelihood)."
            )
    if len(out) < 2:
        raise EvidenceInputError(f"Need at least two models to compare, got {len(out)}.")
    return out


def bayes_factor(ev1: Evidence, ev0: Evidence, *, check_data: bool = True) -> xr.Dataset:
    r"""Bayes factor of the first model (H1) against the second (H0).

    ``BF10 = Z1 / Z0``, ``BF01 = 1 / BF10``; the log Bayes factor's standard error is
    ``sqrt(se1^2 + se0^2)`` (independent estimates).

    Returns
    -------
    xarray.Dataset
        ``bayes_factor`` and ``log_bayes_factor`` with dim ``bf_type`` (``["BF10", "BF01"]``),
        ``log_bayes_factor_se`` (scalar).
    """
    evs = _as_evidences({f"H1 ({ev1.model_name})": ev1, f"H0 ({ev0.model_name})": ev0})
    if check_data:
        _check_same_data(evs)
    log_bf10 = ev1.log_z - ev0.log_z
    log_bf = np.array([log_bf10, -log_bf10])
    se = float(np.hypot(ev1.se, ev0.se))
    coords = {"bf_type": ["BF10", "BF01"]}
    return xr.Dataset(
        {
            "bayes_factor": ("bf_type", np.exp(log_bf)),
            "log_bayes_factor": ("bf_type", log_bf),
            "log_bayes_factor_se": se,
        },
        coords=coords,
        attrs={
            "H1": ev1.model_name,
            "H0": ev0.model_name,
            "methods": f"{ev1.method}, {ev0.method}",
        },
    )


def post_prob(
    *evidences: Evidence,
    prior_prob: Sequence[float] | None = None,
    model_names: Sequence[str] | None = None,
    check_data: bool = True,
) -> xr.DataArray:
    r"""Posterior model probabilities ``p(M_k | y) ∝ p(y | M_k) p(M_k)``.

    Computed with a softmax of ``log Z_k + log p(M_k)`` (stable for log Z of hundreds of nats).
    ``prior_prob`` defaults to equal prior probabilities.

    Returns
    -------
    xarray.DataArray
        Dim ``model``.
    """
    if len(evidences) == 1 and not isinstance(evidences[0], Evidence):
        evs = _as_evidences(evidences[0])
    else:
        evs = _as_evidences(list(evidences))
    if model_names is not None:
        if len(model_names) != len(evs):
            raise EvidenceInputError(f"Got {len(model_names)} model_names for {len(evs)} models.")
        evs = dict(zip(model_names, evs.values(), strict=True))
    if check_data:
        _check_same_data(evs)
    prob, _ = _posterior_probabilities(evs, prior_prob)
    return xr.DataArray(prob, dims="model", coords={"model": list(evs)}, name="post_prob")


def _posterior_probabilities(evs: dict[str, Evidence], prior_prob) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities and their delta-method standard errors from the ``log Z`` errors."""
    k = len(evs)
    if prior_prob is None:
        prior = np.full(k, 1.0 / k)
    else:
        prior = np.asarray(prior_prob, dtype=float)
        if prior.shape != (k,) or np.any(prior < 0) or not np.isclose(prior.sum(), 1.0):
            raise EvidenceInputError(
                f"prior_prob must be {k} non-negative numbers summing to 1, got {prior_prob!r}."
            )
    log_z = np.array([e.log_z for e in evs.values()])
    se = np.array([e.se for e in evs.values()])
    with np.errstate(divide="ignore"):
        prob = softmax(log_z + np.log(prior))
    # d p_i / d log z_j = p_i (delta_ij - p_j)
    jac = prob[:, None] * (np.eye(k) - prob[None, :])
    prob_se = np.sqrt((jac**2) @ (se**2))
    return prob, prob_se


def compare(
    evidences: Mapping[str, Evidence] | Sequence[Evidence],
    *,
    prior_prob: Sequence[float] | None = None,
    check_data: bool = True,
) -> pd.DataFrame:
    """Rank models by log evidence.

    Returns
    -------
    pandas.DataFrame
        One row per model, best first: ``log_z``, ``se``, ``method``, ``log_bf`` (against the
        best model, <= 0) and ``log_bf_se``, posterior probability ``prob`` and its
        delta-method ``prob_se``; ``warning`` is ``True`` when the model's evidence carries
        warnings (:attr:`Evidence.warnings`), as in :func:`arviz_stats.compare`.
    """
    evs = _as_evidences(evidences)
    if check_data:
        _check_same_data(evs)
    prob, prob_se = _posterior_probabilities(evs, prior_prob)
    names = list(evs)
    log_z = np.array([evs[n].log_z for n in names])
    se = np.array([evs[n].se for n in names])
    best = int(np.argmax(log_z))
    frame = pd.DataFrame(
        {
            "log_z": log_z,
            "se": se,
            "method": [evs[n].method for n in names],
            "log_bf": log_z - log_z[best],
            "log_bf_se": np.where(np.arange(len(names)) == best, 0.0, np.hypot(se, se[best])),
            "prob": prob,
            "prob_se": prob_se,
            "warning": [bool(evs[n].warnings) for n in names],
        },
        index=pd.Index(names, name="model"),
    )
    return frame.sort_values("log_z", ascending=False)
