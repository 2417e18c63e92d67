"""Model-facing estimators on posterior draws: draw what is needed from a PyMC model, call an
estimator core, return an :class:`~pm_evidence.core.evidence.Evidence`.

Every public function has the signature of :func:`~pm_evidence.marginal_likelihood` without
``method`` (:mod:`pm_evidence.core.methods`): the model first (optional inside ``with model:``),
then keyword-only ``idata`` (the output of ``pm.sample``, used for posterior draws when given;
otherwise NUTS draws them), ``random_seed``, ``progressbar`` and the options by name: the
fields of :class:`PosteriorOptions` (``reference``, ``n_reference``, ``symmetrize``; or the
object itself as ``posterior=``), bridge's :class:`BridgeOptions`, and NUTS options
(``draws``, ``tune``, ``chains``, ``sample_kwargs``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import partial

import numpy as np
import xarray as xr

from pm_evidence.core.evidence import Evidence, build_evidence
from pm_evidence.core.exceptions import EvidenceInputError, OverlapError
from pm_evidence.core.methods import check_choice, route_options
from pm_evidence.core.options import BridgeOptions, PosteriorOptions
from pm_evidence.core.utils import (
    good_pareto_k,
    mcmc_ess,
    renamed_keywords,
    runs_with_one_blas_thread,
    stage_rngs,
)
from pm_evidence.estimators import (
    COMBINATION_RULES,
    Estimate,
    bridge_core,
    combine_is_ris_core,
    discriminance_core,
    importance_core,
    reverse_importance_core,
)
from pm_evidence.estimators.messages import (
    draws_ess_messages,
    flag,
    posterior_messages,
    se_messages,
    weight_messages,
)
from pm_evidence.model.draws import (
    MAX_REFERENCE_NUMBERS,
    PosteriorPlan,
    balanced_reference_draws,
    check_reference_covers_support,
    default_reference_draws,
    draws_source_messages,
    fit_and_weigh,
    posterior_plan,
    reference_log_weights,
    reference_needs_draws,
    sampled_posterior,
    symmetric_reference,
    symmetry_diagnostics,
    symmetry_step,
)
from pm_evidence.model.log_density import LogDensity, ModelLike, as_target
from pm_evidence.posterior.bridge_reference import (
    OVERLAP_LEFT_TO_TRY,
    choose_bridge_reference,
    more_reference_log_weights,
)
from pm_evidence.posterior.reverse_reference import choose_reverse_reference
from pm_evidence.references import MultivariateNormalReference, Reference, fit_reference

__all__ = [
    "PosteriorPlan",
    "bridge_sampling",
    "combine_is_ris",
    "discriminance_sampling",
    "importance_sampling",
    "is_ris_combination",
    "make_posterior_plan",
    "reverse_importance_sampling",
]


# The parameters every estimator on posterior draws shares, filled into their docstrings
# (``{model}``, ``{shared_parameters}``) by ``_shared_parameters``.
_MODEL = """model : pymc.Model or LogDensity, optional
        Taken from the ``with model:`` context when omitted."""
_SHARED_PARAMETERS = """symmetrize : {"auto", True, False}, default "auto"
        For a posterior invariant under relabelling components (label switching in a
        mixture): relabel the draws into one mirror image and symmetrize the reference over
        the relabellings where the draws miss mirror images (``"auto"``), wherever a symmetry
        is found (``True``), or never (``False``; a missed image is then a warning); see
        :class:`PosteriorOptions`. Diagnostics ``symmetry``, ``symmetry_group_size``,
        ``symmetrized``.
    posterior : PosteriorOptions, optional
        ``reference``, ``n_reference`` and ``symmetrize`` as one object (shared by every method
        on posterior draws); a field also given by name replaces its value.
    idata : xarray.DataTree, optional
        Posterior draws of this model (``pm.sample()`` output), or a :class:`PosteriorPlan`
        shared with other methods; drawn by NUTS when omitted.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions: ``"auto"`` JAX where JAX sees a GPU, else
        Numba (:mod:`pm_evidence.model.backend`).
    draws, tune, chains, sample_kwargs
        NUTS options when it draws (``None``: 1000 draws and 1000 tuning iterations, 4 chains).
    **fields
        The fields of the option objects by name (``reference``, ``n_reference``,
        ``symmetrize``, ...); another name is an error that lists the accepted ones."""


def _routed(name: str, **keywords):
    """The options of method ``name`` from its function's keywords
    (:func:`~pm_evidence.core.methods.route_options`)."""
    return route_options(name, keywords)[name]


def _shared_parameters(function):
    doc = function.__doc__.replace("{model}", _MODEL)
    function.__doc__ = doc.replace("{shared_parameters}", _SHARED_PARAMETERS)
    return function


@dataclass(frozen=True)
class _Call:
    """What an estimator on posterior draws reads from its call, sorted once: the model's
    adapter, the options, where the posterior draws come from and the stage streams (the same
    alone and in ``marginal_likelihood``)."""

    target: LogDensity
    options: PosteriorOptions
    idata: object
    rngs: dict
    sampling: dict  # NUTS options and progressbar, for posterior_draws

    @classmethod
    def make(cls, model, routed, idata, random_seed, progressbar, backend) -> _Call:
        """The call of a method whose options ``routed`` are
        :func:`~pm_evidence.core.methods.route_options`' for it."""
        sampling = dict(routed.sampling, progressbar=progressbar)
        target = as_target(model, backend)
        posterior = routed.objects["posterior"]
        return cls(target, posterior, idata, stage_rngs(random_seed), sampling)

    def fit_and_weigh(self, reference, choose_reference=None):
        """:func:`~pm_evidence.model.draws.fit_and_weigh` with this call's draws and options."""
        return fit_and_weigh(
            self.target, self.rngs["posterior"], self.idata, reference, self.sampling,
            self.options.symmetrize, choose_reference,
        )  # fmt: skip

    def n_reference(self, n_target: int) -> int:
        """The option, or :func:`~pm_evidence.model.draws.default_reference_draws` for ``n_target``
        posterior draws."""
        given = self.options.n_reference
        return default_reference_draws(n_target, self.target.dim) if given is None else given


@runs_with_one_blas_thread
def make_posterior_plan(
    model: ModelLike = None,
    idata=None,
    *,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    sample_kwargs: dict | None = None,
) -> PosteriorPlan:
    """The posterior draws and symmetry search that the estimators on posterior draws share.

    Pass the result as ``idata=`` to :func:`bridge_sampling`, :func:`discriminance_sampling`,
    :func:`importance_sampling`, :func:`reverse_importance_sampling` or
    :func:`is_ris_combination` (or to :func:`~pm_evidence.marginal_likelihood`): the draws are
    read (or drawn by NUTS) and searched for a relabelling symmetry once. Each method's result
    is the same as with ``idata`` itself (``marginal_likelihood`` makes one for a list).

    Parameters
    ----------
    model : pymc.Model or LogDensity, optional
        Taken from the ``with model:`` context when omitted.
    idata : xarray.DataTree, optional
        Posterior draws of this model (``pm.sample()`` output, checked against the data the
        model holds); drawn with NUTS when omitted.
    random_seed : int or numpy.random.Generator, optional
        Seeds NUTS from the ``"posterior"`` stage stream, as every method does.
    progressbar : bool
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions: ``"auto"`` JAX where JAX sees a GPU, else
        Numba (:mod:`pm_evidence.model.backend`).
    draws, tune, chains, sample_kwargs
        NUTS options.

    Returns
    -------
    PosteriorPlan
    """
    target = as_target(model, backend)
    rng = stage_rngs(random_seed)["posterior"]
    return posterior_plan(target, idata, rng=rng, progressbar=progressbar, draws=draws,
                          tune=tune, chains=chains, sample_kwargs=sample_kwargs)  # fmt: skip


@runs_with_one_blas_thread
@_shared_parameters
def importance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    posterior: PosteriorOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    """Importance sampling of log Z (seed 000 §3; seed 002 eq. 18.44).

    Parameters
    ----------
    {model}
    reference : {"auto", "student_t", "normal", "prior"} or Reference, default "auto"
        Proposal ``p0``; ``"auto"`` is ``"student_t"``. Fitted references are moment-matched to
        posterior draws (from ``idata`` or NUTS); ``"prior"`` needs no posterior draws but is a
        poor proposal when the data are informative. A heavy-tailed proposal (the default)
        keeps the weights' variance finite.
    n_reference : int, optional
        Number of proposal draws; default :func:`~pm_evidence.model.draws.default_reference_draws`
        (16 per posterior draw, or per 4000 draws for the prior).
    {shared_parameters}

    Returns
    -------
    Evidence
        Diagnostics: ``ess_reference`` (Kish ESS of the weights), ``ess_fraction``.
    """
    options = _routed("is", posterior=posterior, draws=draws, tune=tune,
        chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    reference = options.objects["posterior"].reference_or("student_t")
    check_reference_covers_support(reference, "Importance sampling")
    call = _Call.make(model, options, idata, random_seed, progressbar, backend)
    target, rngs = call.target, call.rngs
    rng = rngs["is"]
    fit_draws, messages, facts = None, [], {}
    symmetry = {"symmetry": "not checked (no posterior draws)"}
    if reference_needs_draws(reference):
        x, facts = sampled_posterior(target, idata, rng=rngs["posterior"], **call.sampling)
        decision = symmetry_step(target, x, reference, call.options.symmetrize, idata)
        fit_draws = decision.draws
        messages = posterior_messages(target, fit_draws, relabelled=decision.relabelled)
        messages += draws_source_messages(target, idata)
        messages += draws_ess_messages(target, fit_draws)
        messages += list(decision.messages)
    ref = fit_reference(reference, target, fit_draws)
    if fit_draws is not None:
        ref = symmetric_reference(ref, decision)
        symmetry = symmetry_diagnostics(decision, ref)
    n_fit = 4000 if fit_draws is None else fit_draws.shape[0] * fit_draws.shape[1]
    lw = reference_log_weights(target, ref, rng, call.n_reference(n_fit))
    estimate = importance_core(lw)
    estimate.diagnostics.update(symmetry, reference=ref.name, **facts)
    messages += _importance_messages(estimate.diagnostics, n=lw.size)
    messages += se_messages(estimate)
    return build_evidence(
        target, estimate, "is", {"log_weight_reference": lw}, warnings=flag(messages)
    )


def _importance_messages(diagnostics: dict, n: int) -> list[str]:
    return weight_messages(
        diagnostics,
        "The importance weights",
        "log Z is likely under-estimated and its SE unreliable; use a reference "
        "closer to the posterior or another method (bridge, ds).",
        ess_key="ess_reference",
        n=n,
    )


@runs_with_one_blas_thread
@_shared_parameters
def reverse_importance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    posterior: PosteriorOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    """Reverse importance sampling / Gelfand-Dey of log Z (seed 000 §3).

    The reference is fitted to the first half of every chain and the estimate uses the second
    half (a reference fitted to the same draws biases the estimate). The reverse weights
    ``v = p0 / f`` have finite variance only where ``p0`` has lighter tails than the
    posterior in every direction, and the target draws cannot show when it has not: they
    rarely reach where ``v`` is large. So ``n_reference`` draws from ``p0`` estimate
    ``chi^2(p0 || p)`` a second way and the SE uses the larger estimate
    (:func:`~pm_evidence.estimators.reverse_importance_core`); a Pareto k-hat of ``v`` at
    those draws above the threshold flags the result.

    The default reference, ``"auto"``, is the truncated normal (Gelfand & Dey 1994,
    :class:`~pm_evidence.references.TruncatedNormalReference`) whose covariance scale and
    truncation minimize the estimated ``chi^2(p0 || p)``
    (:func:`~pm_evidence.posterior.reverse_reference.choose_reverse_reference`): where the
    posterior's tails are lighter than the normal's, Gelfand & Dey's fixed 95% truncation
    leaves errors larger than their SEs, and the chosen one does not (measured:
    docs/benchmarks.rst, Measurements behind the defaults). ``"prior"`` gives the harmonic-mean estimator, which is notoriously
    unstable.

    Parameters
    ----------
    {model}
    reference : {"auto", "truncated_normal", "normal", "student_t", "prior"} or Reference, default "auto"
        Reference ``p0``. Fitted references are moment-matched to the first half of every chain
        of the posterior draws (from ``idata`` or NUTS); a :class:`Reference` instance is used
        as given.
    n_reference : int, optional
        Draws from ``p0`` for the reference-side estimate of ``chi^2(p0 || p)``; default
        :func:`~pm_evidence.model.draws.default_reference_draws`.
    {shared_parameters}

    Returns
    -------
    Evidence
        Diagnostics: ``ess_target`` (MCMC ESS of ``p0/f``), ``ess_inverse_weights``,
        ``chi2_target``, ``chi2_reference``, ``pareto_k_reference``,
        ``reference_outside_support``; with ``reference="auto"`` also ``reference_scale``,
        ``reference_mass``, ``reference_chi2`` and ``reference_reason``.
    """
    options = _routed("ris", posterior=posterior, draws=draws, tune=tune,
        chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    call = _Call.make(model, options, idata, random_seed, progressbar, backend)
    target, rng = call.target, call.rngs["ris"]
    choose = None
    if call.options.auto:
        target.require_continuous("reference='auto' of reverse importance sampling")
        cap = MAX_REFERENCE_NUMBERS // max(target.dim, 1)
        choose = functools.partial(_choose_reverse_reference, target, rng, cap)
    est_half, ref, lw, messages, diagnostics = call.fit_and_weigh(call.options.reference, choose)
    n_reference = call.n_reference(est_half.shape[0] * est_half.shape[1])
    lw_reference = reference_log_weights(target, ref, rng, n_reference)
    estimate = reverse_importance_core(lw, lw_reference)
    estimate.diagnostics.update(diagnostics, reference=ref.name)
    messages += reverse_weight_messages(estimate.diagnostics, n=lw.size)
    messages += se_messages(estimate)
    evidence_draws = {"log_weight_target": lw, "log_weight_reference": lw_reference}
    return build_evidence(target, estimate, "ris", evidence_draws, warnings=flag(messages))


class _HalvesOwnReferences:
    """``reference="auto"`` of :func:`is_ris_combination`: each half gets its own default,
    both fitted to the first halves: a Student-t for IS (heavy tails keep the IS weights'
    variance finite) and :func:`~pm_evidence.posterior.reverse_reference.choose_reverse_reference` for
    reverse IS (light tails keep the reverse weights' variance finite). Called by
    :func:`fit_and_weigh` like any chooser; it keeps the IS half's reference."""

    def __init__(self, target: LogDensity, rng: np.random.Generator):
        self.target, self.rng = target, rng
        self.importance: Reference | None = None

    def __call__(self, fit_half, wrap):
        self.importance = wrap(fit_reference("student_t", self.target, fit_half))
        cap = MAX_REFERENCE_NUMBERS // max(self.target.dim, 1)
        return choose_reverse_reference(self.target, fit_half, self.rng, wrap=wrap, max_draws=cap)


def _choose_reverse_reference(target, rng, cap, fit_half, wrap):
    return choose_reverse_reference(target, fit_half, rng, wrap=wrap, max_draws=cap)


def reverse_weight_messages(diagnostics: dict, n: int) -> list[str]:
    """What the diagnostics of :func:`~pm_evidence.estimators.reverse_importance_core` say
    against a reverse-IS estimate: low ESS or heavy tails of ``p0/f`` at the target draws
    (:func:`weight_messages`), heavy tails at the reference draws, reference mass outside the
    target's support."""
    consequence = (
        "log Z is likely over-estimated and its SE unreliable; use a reference with lighter "
        "tails than the posterior or another method (bridge, ds)."
    )
    messages = weight_messages(
        diagnostics, "The inverse importance weights", consequence,
        ess_key="ess_inverse_weights", n=n,
    )  # fmt: skip
    khat = diagnostics.get("pareto_k_reference", np.nan)
    n_reference = diagnostics.get("n_reference", 0)
    if n_reference and khat > good_pareto_k(n_reference):
        messages.append(
            f"The inverse weights p0/f at {n_reference} reference draws have Pareto k-hat "
            f"{khat:.2f} > {good_pareto_k(n_reference):.2f}: the reference has mass where the "
            f"posterior has almost none, so the variance of reverse IS may be infinite and the "
            f"posterior draws cannot show it; {consequence}"
        )
    outside = diagnostics.get("reference_outside_support", 0.0)
    if outside > 0:
        messages.append(
            f"{outside:.1%} of the reference draws fall where the model's density is zero: "
            f"reverse IS estimates Z / P0(support), so log Z is over-estimated by about "
            f"{-np.log1p(-outside):.3g} nats. Use a reference inside the support."
        )
    return messages


@runs_with_one_blas_thread
@_shared_parameters
def discriminance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    posterior: PosteriorOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    """Discriminance sampling of log Z (seed 000 §4, eq. (3); SE after Prop. 1).

    Classifies posterior draws (second half of every chain) against ``n_reference`` draws of a
    reference fitted to the first half.

    Parameters
    ----------
    {model}
    reference : {"auto", "normal", "student_t", "prior"} or Reference, default "auto"
        Reference ``p0``; ``"auto"`` is ``"normal"``. Fitted references are moment-matched to
        the first half of every chain of the posterior draws (from ``idata`` or NUTS); a
        :class:`Reference` instance is used as given.
    n_reference : int, optional
        Number of reference draws; default
        :func:`~pm_evidence.model.draws.default_reference_draws` (16 per posterior draw in the second
        halves).
    {shared_parameters}

    Returns
    -------
    Evidence
        Diagnostics: ``gamma`` (overlap, 1/4 when reference = posterior), ``ess_target``,
        ``se_prop1`` (seed 000's Prop. 1 value, for equal sample sizes).
    """
    options = _routed("ds", posterior=posterior, draws=draws, tune=tune,
        chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    call = _Call.make(model, options, idata, random_seed, progressbar, backend)
    target, rng = call.target, call.rngs["ds"]
    reference = call.options.reference_or("normal")
    est_half, ref, lw_target, messages, symmetry = call.fit_and_weigh(reference)
    n_reference = call.n_reference(est_half.shape[0] * est_half.shape[1])
    lw_reference = reference_log_weights(target, ref, rng, n_reference)
    estimate = discriminance_core(lw_target, lw_reference)
    estimate.diagnostics.update(symmetry, reference=ref.name)
    return build_evidence(
        target,
        estimate,
        "ds",
        {"log_weight_target": lw_target, "log_weight_reference": lw_reference},
        warnings=flag(messages + se_messages(estimate)),
    )


BRIDGE_REFERENCES = ("normal", "warp3")
# bridge_sampling's deprecated keywords: old name -> new name
_BRIDGE_RENAMED = {"proposal": "reference", "method": "reference"}


@runs_with_one_blas_thread
@_shared_parameters
def bridge_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    posterior: PosteriorOptions | None = None,
    bridge: BridgeOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    """Bridge sampling with the optimal bridge function (Meng & Wong 1996), as R's bridgesampling.

    Half of every chain fits the reference (``reference="normal"``: a multivariate normal on
    the unconstrained space; ``"warp3"``: warp-3 of Meng & Schilling 2002, matching mean,
    covariance and skewness; ``"auto"``: whichever of the two a pilot predicts the smaller
    error for at equal cost, :mod:`pm_evidence.posterior.bridge_reference`), the other half and
    ``n_reference`` reference draws (16 per posterior draw by default) estimate ``log Z`` by the
    Meng-Wong iteration. ``use_neff`` replaces the number of posterior draws by their effective
    number in the sample-size weights. The error is the relative mean-squared error of Frühwirth-Schnatter (2004);
    ``se = sqrt(re2)``. With ``repetitions > 1`` the reference draws are redrawn each time;
    ``log_z`` is the median, ``se`` the larger of its RE²-based value and the spread over
    repetitions, and every repetition's value is kept in the ``draws`` group as
    ``log_z_repetitions``.

    The result's ``method`` is ``"bridge"`` for ``reference="auto"`` (whichever it chose) and
    ``"normal"``, and ``"bridge_warp3"`` for ``reference="warp3"``;
    ``marginal_likelihood(model, method="bridge", reference="warp3")`` reaches it too
    (in a list of methods, ``reference=`` is the reference of every method that takes one).

    Parameters
    ----------
    {model}
    reference : {"auto", "normal", "warp3"}, default "auto"
        The reference density bridged to the posterior; ``"auto"``: the normal or warp-3, by a
        pilot of ``min(N1, n_reference)`` reference draws
        (:func:`~pm_evidence.posterior.bridge_reference.choose_bridge_reference`; warp-3 then takes
        ``(n_reference - N1) / 2`` reference draws, two evaluations each). A reference
        symmetrized over relabellings (``symmetrize``) is the normal.
    n_reference : int, optional
        Reference draws per repetition; default
        :func:`~pm_evidence.model.draws.default_reference_draws`: 16 per posterior draw used in the
        estimate (R's bridgesampling uses one; they are i.i.d. and cheap, and the reference
        side of the error falls like ``1 / n_reference``), then more where the reference side
        of the error is still the larger and the SE above 0.005, up to 16 times as many
        (:func:`~pm_evidence.model.draws.balanced_reference_draws`). The diagnostics'
        ``n_reference`` is the number used, ``re2_reference`` and ``re2_target`` the two
        sides of the error.
    repetitions : int, default 1
        Number of independent sets of reference draws.
    use_neff : bool
        If True (the default), use the effective number of posterior draws in the sample-size
        weights.
    tol, maxiter : float, int
        Convergence tolerance (1e-10) and iteration cap (1000) of the Meng-Wong iteration.
    bridge : BridgeOptions, optional
        ``repetitions``, ``use_neff``, ``tol`` and ``maxiter`` as one object.
    {shared_parameters}
    proposal, method : str, optional
        Deprecated names of ``reference``.

    Returns
    -------
    Evidence
        Diagnostics: ``proposal`` (the reference's name), ``n_iter``, ``ess_target``,
        ``gamma``, ``cv``, ``percentage_error``, ``repetitions`` (and ``log_z_repetition_sd``);
        with ``reference="auto"``, ``reference_choice``, ``predicted_se_normal``,
        ``predicted_se_warp3`` and ``n_pilot``.

    Raises
    ------
    ConvergenceError
        If the iteration does not converge within ``maxiter``.
    """
    fields = renamed_keywords("bridge_sampling", fields, _BRIDGE_RENAMED)
    options = _routed("bridge", posterior=posterior, bridge=bridge, draws=draws, tune=tune,
        chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    posterior, bridge = options.objects["posterior"], options.objects["bridge"]
    choose, reference = posterior.auto, posterior.reference_or("normal")
    if not isinstance(reference, str) or reference not in BRIDGE_REFERENCES:
        raise EvidenceInputError(
            f"Requested bridge reference {reference!r} but it must be one of "
            f"{['auto', *BRIDGE_REFERENCES]}."
        )
    call = _Call.make(model, options, idata, random_seed, progressbar, backend)
    target, rng = call.target, call.rngs["bridge"]
    est_half, ref, lw_target, messages, symmetry = call.fit_and_weigh(reference)
    n_target = est_half.shape[0] * est_half.shape[1]
    n_reference = call.n_reference(n_target)
    n_eff = None
    if bridge.use_neff:
        per_coordinate = np.array([mcmc_ess(est_half[..., j]) for j in range(target.dim)])
        if np.all(np.isnan(per_coordinate)):
            messages.append(
                "No coordinate of the posterior draws has a computable effective sample size; "
                "the bridge's sample-size weights use the number of draws instead (use_neff "
                "had no effect) and its SE treats them as independent."
            )
        else:
            n_eff = float(min(np.nanmedian(per_coordinate), n_target))
    choice = None
    if choose and type(ref) is MultivariateNormalReference:  # not symmetrized
        choice = choose_bridge_reference(target, ref, est_half, lw_target, rng, n_reference, n_eff)
        ref, lw_target = choice.reference, choice.log_weights_target
        n_reference = choice.n_reference
    elif choose:
        symmetry["reference_choice"] = (
            "normal (symmetrized over relabellings; warp-3's reflection does not commute with them)"
        )

    def estimate_from(lw_reference):
        try:
            return bridge_core(
                lw_target, lw_reference, n_target_effective=n_eff, tol=bridge.tol,
                maxiter=bridge.maxiter,
            )  # fmt: skip
        except OverlapError as err:
            tried = "the normal fitted to the first halves of the chains"
            if choice is not None:
                tried += (
                    f" and its warp-3 (the pilot chose {choice.diagnostics['reference_choice']})"
                )
            raise OverlapError(
                f"Bridge sampling's reference does not overlap the posterior draws ({err}) It "
                f"tried {tried}. {OVERLAP_LEFT_TO_TRY}"
            ) from err

    estimates, lw_reference = [], None
    for repetition in range(bridge.repetitions):
        if choice is not None and repetition == 0:  # the pilot's draws come first
            lw_reference = more_reference_log_weights(target, choice, rng, n_reference)
        else:
            lw_reference = reference_log_weights(target, ref, rng, n_reference)
        estimate = estimate_from(lw_reference)
        if call.options.n_reference is None:  # the default: balanced against the draws
            d = estimate.diagnostics
            more = (
                balanced_reference_draws(
                    n_reference, d["re2_reference"], d["re2_target"], target.dim
                )
                - n_reference
            )
            if more > 0:
                extra = reference_log_weights(target, ref, rng, more)
                lw_reference = np.concatenate([lw_reference, extra])
                estimate = estimate_from(lw_reference)
        estimates.append(estimate)
    log_zs = np.array([e.log_z for e in estimates])
    middle = estimates[int(np.argsort(log_zs)[(len(log_zs) - 1) // 2])]
    diagnostics = dict(middle.diagnostics, proposal=reference, repetitions=bridge.repetitions)
    if choice is not None:
        diagnostics.update(choice.diagnostics, proposal=ref.name)
    diagnostics.update(symmetry, reference=ref.name)
    se = middle.se
    if bridge.repetitions > 1:
        diagnostics["log_z_repetition_sd"] = float(np.std(log_zs, ddof=1))
        # R's bridgesampling trusts only the spread for warp-3; keep the larger of the two
        se = max(se, diagnostics["log_z_repetition_sd"])
    estimate = Estimate(float(np.median(log_zs)), se, diagnostics)
    evidence_draws = {"log_weight_target": lw_target, "log_weight_reference": lw_reference}
    if bridge.repetitions > 1:
        evidence_draws["log_z_repetitions"] = (("repetition",), log_zs)
    label = "bridge" if reference == "normal" else f"bridge_{reference}"
    messages += se_messages(estimate)
    return build_evidence(target, estimate, label, evidence_draws, warnings=flag(messages))


def combine_is_ris(ev_is: Evidence, ev_ris: Evidence, rule: str = "selection") -> Evidence:
    """Combine IS and reverse-IS results by a rule of seed 000 §6 (baselines, not recommended).

    ``rule`` is ``"average"``, ``"weighted"`` or ``"selection"``; see
    :func:`pm_evidence.estimators.combine_is_ris_core`.

    Parameters
    ----------
    ev_is : Evidence
        Result of :func:`importance_sampling` (``method == "is"``).
    ev_ris : Evidence
        Result of :func:`reverse_importance_sampling` (``method == "ris"``).
    rule : {"average", "weighted", "selection"}
        How the two estimates are combined.

    Returns
    -------
    Evidence
        Method ``"is_ris_<rule>"``; its ``draws`` merge those of both results. Diagnostics:
        ``log_z_is``, ``log_z_ris``, ``se_is``, ``se_ris`` (and ``selected`` for
        ``"selection"``). The inputs' warnings are not carried over.

    Raises
    ------
    EvidenceInputError
        If ``ev_is`` is not an ``"is"`` result or ``ev_ris`` not an ``"ris"`` result, or
        ``rule`` is unknown.
    """
    if ev_is.method != "is" or ev_ris.method != "ris":
        raise EvidenceInputError(
            f"combine_is_ris needs an 'is' and an 'ris' result, got {ev_is.method!r} and "
            f"{ev_ris.method!r}."
        )
    estimate = combine_is_ris_core(
        Estimate(ev_is.log_z, ev_is.se, {}), Estimate(ev_ris.log_z, ev_ris.se, {}), rule
    )
    return Evidence(
        estimate.log_z,
        estimate.se,
        f"is_ris_{rule}",
        estimate.diagnostics,
        xr.merge([ev_is.draws, ev_ris.draws]),
        ev_is.model_name,
        ev_is.observed_fingerprint,
    )


@runs_with_one_blas_thread
@_shared_parameters
def is_ris_combination(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    posterior: PosteriorOptions | None = None,
    rule: str = "selection",
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    """IS and reverse IS on the same posterior draws, combined by ``rule`` (seed 000 §6).

    References are fitted to the first half of every chain; reverse IS uses the second
    halves, IS ``n_reference`` draws from its reference. The rules are those of
    :func:`combine_is_ris` (baselines, not recommended).

    Seed 000's experiments give both halves one reference, but no reference suits both: IS
    needs tails heavier than the posterior's, reverse IS lighter ones. With one untruncated
    normal the selection rule can pick an unflagged reverse-IS estimate several SEs off,
    because the reverse half's variance is infinite and even many reference draws do not
    always show it (measured: docs/benchmarks.rst, Measurements behind the defaults). So by
    default each half gets its own (``reference="auto"``); a named reference or a
    :class:`Reference` gives seed 000's setting.

    Parameters
    ----------
    {model}
    rule : {"selection", "average", "weighted"}, default "selection"
        How the two estimates are combined; see
        :func:`pm_evidence.estimators.combine_is_ris_core`.
    reference : {"auto", "normal", "student_t", "prior"} or Reference, default "auto"
        ``"auto"``: a Student-t for IS and the chosen (truncated) normal of
        :func:`~pm_evidence.posterior.reverse_reference.choose_reverse_reference` for reverse IS
        (diagnostics ``reference_is``, ``reference_ris``). Otherwise ``p0`` shared by both
        (diagnostic ``reference``). Fitted references are moment-matched to the first half of
        every chain of the posterior draws (from ``idata`` or NUTS).
    n_reference : int, optional
        Draws from the IS half's reference, and as many from reverse IS's for its
        reference-side check (the same draws when the reference is shared); default
        :func:`~pm_evidence.model.draws.default_reference_draws` (16 per posterior draw in the
        second halves).
    {shared_parameters}

    Returns
    -------
    Evidence
        Method ``"is_ris_<rule>"``. Diagnostics: ``log_z_is``, ``log_z_ris``, ``se_is``,
        ``se_ris`` (and ``selected`` for ``"selection"``), the reference(s).
    """
    check_choice("rule", rule)
    options = _routed(f"is_ris_{rule}", posterior=posterior, draws=draws, tune=tune,
        chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    reference = options.objects["posterior"].reference
    check_reference_covers_support(reference, "The importance-sampling half of the combination")
    call = _Call.make(model, options, idata, random_seed, progressbar, backend)
    target, rng = call.target, call.rngs["is_ris"]
    choose = _HalvesOwnReferences(target, rng) if call.options.auto else None
    est_half, ref, lw_target, messages, diagnostics = call.fit_and_weigh(reference, choose)
    n_reference = call.n_reference(est_half.shape[0] * est_half.shape[1])
    if choose is not None:  # IS from its own reference; reverse IS checked by draws from its own
        lw_reference = reference_log_weights(target, choose.importance, rng, n_reference)
        lw_check = reference_log_weights(target, ref, rng, n_reference)
        diagnostics.update(reference_is=choose.importance.name, reference_ris=ref.name)
    else:  # one reference for both (seed 000 §6): the IS draws are reverse IS's check
        lw_reference = lw_check = reference_log_weights(target, ref, rng, n_reference)
        diagnostics.update(reference=ref.name)
    is_half = importance_core(lw_reference)
    ris_half = reverse_importance_core(lw_target, lw_check)
    estimate = combine_is_ris_core(is_half, ris_half, rule)
    estimate.diagnostics.update(diagnostics)
    halves = {
        "is": (_importance_messages, is_half, lw_reference.size),
        "ris": (reverse_weight_messages, ris_half, lw_target.size),
    }
    used = [estimate.diagnostics["selected"]] if rule == "selection" else ["is", "ris"]
    for name in used:
        half_messages, half, n = halves[name]
        messages += half_messages(half.diagnostics, n=n)
    return build_evidence(
        target,
        estimate,
        f"is_ris_{rule}",
        {"log_weight_target": lw_target, "log_weight_reference": lw_reference},
        warnings=flag(messages + se_messages(estimate)),
    )


POSTERIOR_ESTIMATES = {
    "is": importance_sampling,
    "ris": reverse_importance_sampling,
    "ds": discriminance_sampling,
    "bridge": bridge_sampling,
    **{f"is_ris_{rule}": partial(is_ris_combination, rule=rule) for rule in COMBINATION_RULES},
}
"""The function that computes each method of the posterior family (joined to its row by
:mod:`pm_evidence.registry`)."""
