"""Follow-ups on Evidence results: Bayes factors, posterior model probabilities, comparison.

Modelled on R's bridgesampling (``bf``, ``post_prob``) and ArviZ (``bayes_factor`` returns a
Dataset with a ``bf_type`` dimension; ``compare`` a DataFrame with ArviZ's column names, which
``arviz_plots.plot_compare`` draws). Every function also takes the DataTree form of the results
(:meth:`~pm_evidence.Evidence.to_datatree`, also once saved and loaded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import softmax

from pm_evidence.core.evidence import IDATA_GROUP, Evidence, EvidenceSet, from_datatree
from pm_evidence.core.exceptions import EvidenceInputError

__all__ = ["bayes_factor", "compare", "post_prob"]


def _describe_data(fingerprint, others) -> str:
    """The observed arrays of one model, those not found in the other marked by content."""
    held = {(shape, digest) for _, shape, digest in others}
    parts = []
    for name, shape, digest in fingerprint:
        mark = "" if (shape, digest) in held else f", values #{digest[:8]}: not in the other"
        parts.append(f"{name!r} of shape {shape}{mark}")
    return "[" + "; ".join(parts) + "]"


def _check_same_data(evidences: Mapping[str, Evidence]) -> None:
    """Raise if the models were fitted to different observed data (compared by content)."""
    items = [(k, e) for k, e in evidences.items() if e.observed_fingerprint]
    if len(items) < 2:
        return
    name0, ev0 = items[0]
    data0 = sorted((shape, digest) for _, shape, digest in ev0.observed_fingerprint)
    for name, ev in items[1:]:
        data = sorted((shape, digest) for _, shape, digest in ev.observed_fingerprint)
        if data != data0:
            fp0, fp = ev0.observed_fingerprint, ev.observed_fingerprint
            same_layout = sorted(s for _, s, _ in fp0) == sorted(s for _, s, _ in fp)
            how = (
                "the arrays have the same shapes but different values"
                if same_layout
                else "the arrays differ in number or shape"
            )
            raise EvidenceInputError(
                f"Models {name0!r} and {name!r} were fitted to different observed data "
                f"(compared by content; {how}): {name0!r} observes "
                f"{_describe_data(fp0, fp)}, {name!r} observes {_describe_data(fp, fp0)}. A "
                f"Bayes factor compares models of the same data. Fit both models to the same "
                f"observations, or pass check_data=False if the difference is intended."
            )


def _as_evidence(value, name: str) -> Evidence:
    """An Evidence, or one read from an Evidence DataTree (or an InferenceData holding one)."""
    if isinstance(value, Evidence):
        return value
    if isinstance(value, xr.DataTree):
        loaded = from_datatree(value)
        if isinstance(loaded, EvidenceSet):
            raise EvidenceInputError(
                f"Entry {name!r} is an EvidenceSet tree (several methods on one model): pick one "
                f"method, e.g. EvidenceSet.from_datatree(tree)[{next(iter(loaded))!r}]."
            )
        return loaded
    raise EvidenceInputError(
        f"Entry {name!r} is a {type(value).__name__}, not an Evidence result: pass the output of "
        f"pm_evidence.marginal_likelihood (or its to_datatree(), also once saved and loaded). "
        f"To use a log evidence computed elsewhere, wrap it as "
        f"pm_evidence.Evidence(log_z, se, method='...')."
    )


def evidence_mapping(evidences, *, minimum: int = 2) -> dict[str, Evidence]:
    """Results of several models (or methods) as ``{label: Evidence}``, from what
    :func:`compare` accepts: a dict, a list (labelled by model name), an
    :class:`~pm_evidence.EvidenceSet`, or their DataTree forms.

    Parameters
    ----------
    evidences : dict, list, EvidenceSet or xarray.DataTree
    minimum : int
        The fewest results accepted.

    Returns
    -------
    dict of str to Evidence

    Raises
    ------
    EvidenceInputError
        For an entry that is not a result, two unnamed-apart models, or too few results.
    """
    if isinstance(evidences, Evidence):
        raise EvidenceInputError("Pass several Evidence results (a dict or a list), not one.")
    if isinstance(evidences, xr.DataTree):
        node = evidences
        if "pm_evidence_type" not in node.attrs and IDATA_GROUP in node.children:
            node = node[IDATA_GROUP]
        if node.attrs.get("pm_evidence_type") == "Evidence":
            raise EvidenceInputError(
                "Pass several Evidence results (a dict or a list), not one Evidence tree."
            )
        # a tree of Evidence trees: an EvidenceSet tree, or one group per model
        evidences = (
            EvidenceSet.from_datatree(node)
            if node.attrs.get("pm_evidence_type") == "EvidenceSet"
            else {name: child for name, child in node.children.items()}
        )
    if isinstance(evidences, Mapping):
        out = {str(k): _as_evidence(v, str(k)) for k, v in evidences.items()}
    else:
        out = {}
        for i, value in enumerate(evidences):
            ev = _as_evidence(value, f"#{i}")
            name = ev.model_name or f"model_{i}"
            if name in out:
                raise EvidenceInputError(
                    f"Two models are both named {name!r}: pass a dict {{name: Evidence}} to "
                    f"label them."
                )
            out[name] = ev
    if len(out) < minimum:
        raise EvidenceInputError(
            f"Need at least {minimum} results, got {len(out)}."
            if minimum != 2
            else f"Need at least two models to compare, got {len(out)}."
        )
    return out


def _hypothesis(label: str, ev: Evidence) -> str:
    """``"H1"``, or ``"H1 (model name)"`` when the model has a name."""
    return f"{label} ({ev.model_name})" if ev.model_name else label


def bayes_factor(
    ev1: Evidence | xr.DataTree, ev0: Evidence | xr.DataTree, *, check_data: bool = True
) -> xr.Dataset:
    r"""Bayes factor of the first model (H1) against the second (H0).

    ``BF10 = Z1 / Z0``, ``BF01 = 1 / BF10``; the log Bayes factor's standard error is
    ``sqrt(se1^2 + se0^2)`` (independent estimates).

    Parameters
    ----------
    ev1, ev0 : Evidence or xarray.DataTree
        Log evidences of H1 and H0 (or their :meth:`~pm_evidence.Evidence.to_datatree` trees).
    check_data : bool
        Refuse two models fitted to different observed data (compared by content).

    Returns
    -------
    xarray.Dataset
        ``bayes_factor`` and ``log_bayes_factor`` with dim ``bf_type`` (``["BF10", "BF01"]``),
        ``log_bayes_factor_se`` (scalar), as :func:`arviz_stats.bayes_factor`.

    Raises
    ------
    EvidenceInputError
        If an argument is not an Evidence result, or the models saw different data.

    See Also
    --------
    pm_evidence.plot_bayes_factor : The log Bayes factor with its interval and evidence categories.
    """
    ev1 = _as_evidence(ev1, "ev1 (H1)")
    ev0 = _as_evidence(ev0, "ev0 (H0)")
    evs = {_hypothesis("H1", ev1): ev1, _hypothesis("H0", ev0): ev0}
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
    *evidences: Evidence | xr.DataTree,
    prior_prob: Sequence[float] | None = None,
    model_names: Sequence[str] | None = None,
    check_data: bool = True,
) -> xr.DataArray:
    r"""Posterior model probabilities ``p(M_k | y) ∝ p(y | M_k) p(M_k)``.

    Computed with a softmax of ``log Z_k + log p(M_k)`` (stable for log Z of hundreds of nats).

    Parameters
    ----------
    *evidences : Evidence or xarray.DataTree
        Several results, or one dict / list of them (or a tree of Evidence trees).
    prior_prob : sequence of float, optional
        Prior model probabilities, in the same order; equal by default.
    model_names : sequence of str, optional
        Labels of the models (default: the dict keys, or each result's ``model_name``).
    check_data : bool
        Refuse models fitted to different observed data.

    Returns
    -------
    xarray.DataArray
        Named ``post_prob``, dim ``model``.
    """
    if len(evidences) == 1 and not isinstance(evidences[0], Evidence):
        collection = evidences[0]
    else:
        collection = list(evidences)
    if model_names is not None and isinstance(collection, list):
        if len(model_names) != len(collection):
            raise EvidenceInputError(
                f"Got {len(model_names)} model_names for {len(collection)} models."
            )
        collection = dict(zip(model_names, collection, strict=True))
    evs = evidence_mapping(collection)
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
    evidences: Mapping[str, Evidence | xr.DataTree] | Sequence[Evidence] | xr.DataTree,
    *,
    prior_prob: Sequence[float] | None = None,
    reference: str | None = None,
    check_data: bool = True,
) -> pd.DataFrame:
    """Rank models by log evidence, in a table that :func:`arviz_plots.plot_compare` draws.

    Parameters
    ----------
    evidences : dict of str to Evidence, list of Evidence, or xarray.DataTree
        The models' results. Values may be Evidence trees (:meth:`Evidence.to_datatree`, also
        once saved and loaded) or InferenceData holding one in their ``log_evidence`` group; a
        single DataTree with one Evidence tree per child group is read as one model per group.
    prior_prob : sequence of float, optional
        Prior model probabilities, in the order given; equal by default.
    reference : str, optional
        The model that the log Bayes factors are taken against (default: the best one), as
        ``reference=`` of :func:`arviz_stats.compare`.
    check_data : bool
        Refuse models fitted to different observed data (compared by content).

    Returns
    -------
    pandas.DataFrame
        One row per model (index: model names), best first. Columns:

        - ``rank``: 0 for the model with the highest log evidence.
        - ``log_z``, ``se``: log evidence and its standard error.
        - ``log_bf``: log Bayes factor against the reference model, ``log Z_k - log Z_ref``
          (``<= 0`` when the reference is the best model); ``dse``: its standard error,
          ``sqrt(se_k^2 + se_ref^2)`` (0 for the reference), ArviZ's name for it.
        - ``prob``: posterior model probability (with ``prior_prob``); ``prob_se``: its
          delta-method standard error from the ``se`` column.
        - ``method``: the estimator of each ``log_z``.
        - ``warning``: ``True`` when the model's result carries warnings
          (:attr:`Evidence.warnings`); read them before trusting the row.
        - ``elpd``, ``elpd_diff``, ``weight``: ``log_z``, ``log_bf`` and ``prob`` under
          ArviZ's column names, so that ``arviz_plots.plot_compare`` draws the table
          (``relative_scale=True`` draws ``elpd_diff`` with ``dse``, ``False`` draws ``elpd``
          with ``se``). The meaning differs from ArviZ's leave-one-out ELPD: here the score is
          the log prior predictive density of all the data,
          ``log p(y | M) = sum_i log p(y_i | y_<i, M)``, and ``weight`` is a posterior model
          probability, not a stacking weight. Differences in log Z are log Bayes factors (see
          :func:`plot_bayes_factor` for their usual categories), not ELPD differences: ArviZ's
          "differences below 4 are negligible" rule does not apply.

    Examples
    --------
    >>> table = pm_evidence.compare({"M1": ev1, "M2": ev2})  # doctest: +SKIP
    >>> arviz_plots.plot_compare(table)  # doctest: +SKIP
    """
    evs = evidence_mapping(evidences)
    if check_data:
        _check_same_data(evs)
    prob, prob_se = _posterior_probabilities(evs, prior_prob)
    names = list(evs)
    log_z = np.array([evs[n].log_z for n in names])
    se = np.array([evs[n].se for n in names])
    if reference is None:
        ref = int(np.argmax(log_z))
    elif reference in evs:
        ref = names.index(reference)
    else:
        raise EvidenceInputError(
            f"Requested reference model {reference!r} but it must be one of {names}."
        )
    log_bf = log_z - log_z[ref]
    dse = np.where(np.arange(len(names)) == ref, 0.0, np.hypot(se, se[ref]))
    order = np.argsort(-log_z, kind="stable")
    rank = np.empty(len(names), dtype=int)
    rank[order] = np.arange(len(names))
    frame = pd.DataFrame(
        {
            "rank": rank,
            "log_z": log_z,
            "se": se,
            "log_bf": log_bf,
            "dse": dse,
            "prob": prob,
            "prob_se": prob_se,
            "method": [evs[n].method for n in names],
            "warning": [not evs[n].reliable for n in names],
            "elpd": log_z,
            "elpd_diff": log_bf,
            "weight": prob,
        },
        index=pd.Index(names, name="model"),
    )
    return frame.iloc[order]
