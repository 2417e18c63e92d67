"""The entry point :func:`marginal_likelihood`: one method, or several on shared draws."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import fields, replace

import numpy as np
import pymc as pm

from pm_evidence import registry
from pm_evidence.draws import posterior_plan, reference_needs_draws
from pm_evidence.evidence import DISAGREEMENT_Z, Evidence, EvidenceSet, format_estimate
from pm_evidence.exceptions import EvidenceInputError
from pm_evidence.exploration import MISSED_SHARE, ExplorationOptions, compare_coverage, explore
from pm_evidence.modes import find_symmetry, spread_points
from pm_evidence.plan import SAMPLE_KEYS, PathOptions, make_plan
from pm_evidence.progress import interruptible, quiet, status
from pm_evidence.references import PriorReference
from pm_evidence.registry import METHODS, PATH_METHODS
from pm_evidence.runs import AnnealingOptions, TemperingOptions
from pm_evidence.target import as_target
from pm_evidence.term_check import unvisited_term_modes, with_unvisited_warning
from pm_evidence.utils import one_blas_thread, root_sequence, stage_rngs, warn_user

__all__ = ["METHODS", "PATH_METHODS", "marginal_likelihood"]

# method="auto" explores from the prior (pm_evidence.exploration) on continuous models with at
# most this many parameters: 512 particles fit a mixture's covariances up to about 50
# dimensions (one component per 5 dim particles).
EXPLORATION_MAX_DIM = 50

_OPTION_OBJECTS = {
    "path": PathOptions,
    "annealing": AnnealingOptions,
    "tempering": TemperingOptions,
}


def marginal_likelihood(
    model: pm.Model | None = None,
    *,
    method: str | Sequence[str] = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **kwargs,
) -> Evidence | EvidenceSet:
    """Estimate the log marginal likelihood ``log p(y | M)`` of a PyMC model.

    Parameters
    ----------
    model : pymc.Model, optional
        Taken from the ``with model:`` context when omitted.
    method : str or list of str
        ``"auto"`` (default): the estimator a numerical expert would pick for this model, checked
        by one of another family that shares neither its draws nor its reference (see
        ``pm_evidence.marginal.auto_pair``): on continuous models bridge sampling on NUTS draws,
        checked by AIS from the mixture found by tempering from the prior
        (``pm_evidence.exploration``), and a warning on either result where the other found
        posterior mass it missed; the better-supported of the two is returned, and a
        disagreement by more than 4 combined SEs is a warning on the result. Or one of
        :data:`~pm_evidence.METHODS`: ``"is"``, ``"ris"``, ``"ds"``, ``"bridge"``, the IS/RIS
        combinations of seed 000 §6, and the path methods ``"ais"``, ``"raise"``, ``"ads"``,
        ``"rts"``, ``"ti"``, ``"mbar"``. A list runs each on shared samples where the maths
        allows: posterior draws are sampled once; the path methods share one plan
        (:func:`~pm_evidence.make_plan`: reference, kernel, pilot); ``ais`` and ``ads`` read one
        annealing run, ``rts``, ``ti`` and ``mbar`` one tempered run. Every stage draws from its
        own random stream, so each method's result is the same alone and in a list, in any
        order.
    idata : xarray.DataTree, optional
        Posterior draws of this model (``pm.sample()`` output); drawn with NUTS when needed.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
        Show progress bars (NUTS, annealing, tempering).
    **kwargs
        Options: the option objects ``posterior=`` (:class:`~pm_evidence.PosteriorOptions`)
        and ``bridge=`` (:class:`~pm_evidence.BridgeOptions`) of the methods on posterior
        draws, ``path=`` (:class:`~pm_evidence.PathOptions`), ``annealing=``
        (:class:`~pm_evidence.AnnealingOptions`) and ``tempering=``
        (:class:`~pm_evidence.TemperingOptions`) of the path methods, or any of their fields by
        name (``reference="warp3"``, ``n_reference=``, ``target_se=0.005``, ``n_chains=200``);
        the methods' own options ``version`` (ads), ``variant``/``corrected`` (ti); NUTS options
        (``draws``, ``tune``, ``chains``, ``sample_kwargs``). With a list, every method receives
        the options it accepts: an option object goes to every method that takes it, and a
        field given by name to every method that has it, over the object's value
        (``reference=`` sets the reference of every listed method, bridge included;
        ``posterior=PosteriorOptions(reference=...)`` only those on posterior draws,
        ``path=PathOptions(reference=...)`` only the path methods). An option no requested
        method takes is an error. With ``method="auto"``, ``reference=`` is the path method's
        reference (AIS's; bridge keeps its normal fitted to NUTS draws, so that the pair
        shares no reference). ``proposal=`` (bridge's reference alone) is deprecated: a
        ``FutureWarning``; pass ``reference=``. Bridge's result is labelled by its reference
        when not the default (``"bridge_warp3"``).

    Returns
    -------
    Evidence or EvidenceSet
        One :class:`~pm_evidence.Evidence` for one method; for a list, an
        :class:`~pm_evidence.EvidenceSet` (a dict of method name to Evidence with a combined
        report: ``summary()``, ``sandwich``). A warning is issued when two methods disagree by
        more than 4 combined standard errors.

    Raises
    ------
    EvidenceInputError
        For an unknown method or options no requested method accepts.
    KeyboardInterrupt
        On Ctrl-C: one line naming the phase (compilation, NUTS tuning, ...), no traceback when
        uncaught. With a list of methods, a Ctrl-C after the first finished returns those that
        finished, with a warning; the tempered methods return their partial estimate.

    Notes
    -----
    ``progressbar=False`` prints nothing: PyMC's and PyTensor's loggers are raised to ``ERROR``
    for the run and restored afterwards. With ``progressbar=True`` a status line (on a
    terminal) shows what runs while no progress bar does, e.g. compilation.

    Examples
    --------
    >>> ev = pm_evidence.marginal_likelihood(model, method="rts", random_seed=1)
    >>> ev.log_z, ev.se
    >>> results = pm_evidence.marginal_likelihood(model, method=["ais", "raise", "ads", "rts"])
    >>> results.summary()
    """
    label = method if isinstance(method, str) else ", ".join(method)
    # one BLAS thread (pm_evidence.utils.one_blas_thread): the many small solves run faster
    # with it on an idle machine up to 500 parameters, and far faster on a busy one
    with quiet(not progressbar), interruptible(label), one_blas_thread():
        return _marginal_likelihood(model, method, idata, random_seed, progressbar, kwargs)


def accepted_options(methods: list[str]) -> set[str]:
    """The keywords that at least one of ``methods`` takes: its own options from
    :mod:`pm_evidence.registry`, the option objects and their fields for path methods, and the
    NUTS options."""
    accepted = set(SAMPLE_KEYS)
    for name in methods:
        row = registry.method(name)
        accepted |= set(row.options)
        if row.family == "path":
            accepted |= set(_OPTION_OBJECTS)
            for options_class in (PathOptions, registry.RUN_KINDS[row.run].options):
                accepted |= {f.name for f in fields(options_class)}
    return accepted


def check_options(methods: list[str], kwargs: dict) -> None:
    """Raise :class:`~pm_evidence.EvidenceInputError` unless every keyword of ``kwargs`` is
    taken by at least one of ``methods`` (:func:`accepted_options`)."""
    accepted = accepted_options(methods)
    unused = set(kwargs) - accepted
    if unused:
        raise EvidenceInputError(
            f"Options {sorted(unused)} are not accepted by any of the methods {methods}; "
            f"accepted: {sorted(accepted)}."
        )


class _PathRuns:
    """The plan and the runs of the path methods of one call, each made when first needed.

    Every run draws from its own stage stream, so when it is made changes nothing."""

    def __init__(self, target, methods, idata, rngs, progressbar, kwargs):
        self.target, self.idata, self.rngs, self.progressbar = target, idata, rngs, progressbar
        rows = [registry.method(name) for name in methods]
        self.need_posterior = any(row.needs_posterior for row in rows)
        self.record = any(row.records_draws for row in rows)
        path_keys = {f.name for f in fields(PathOptions)}
        annealing_keys = {f.name for f in fields(AnnealingOptions)}
        tempering_keys = {f.name for f in fields(TemperingOptions)}
        self.sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
        self.path = _options(PathOptions, kwargs.get("path"), kwargs, path_keys)
        self.annealing = _options(AnnealingOptions, kwargs.get("annealing"), kwargs, annealing_keys)
        self.tempering = _options(TemperingOptions, kwargs.get("tempering"), kwargs, tempering_keys)
        self._plan = None
        self._runs = {}

    def plan(self):
        if self._plan is None:
            self._plan = make_plan(
                self.target, self.path, idata=self.idata, sampling=self.sampling,
                need_posterior=self.need_posterior, rngs=self.rngs, progressbar=self.progressbar,
            )  # fmt: skip
        return self._plan

    @property
    def made_plan(self):
        """The plan if a path method made it, else ``None`` (nothing is made here)."""
        return self._plan

    def run(self, name: str):
        """The run of ``registry.RUN_KINDS[name]``, made on first use."""
        if name not in self._runs:
            run_kind = registry.RUN_KINDS[name]
            if run_kind.options is TemperingOptions:
                options = replace(self.tempering, record=self.record or self.tempering.record)
            else:
                options = self.annealing
            self._runs[name] = run_kind.make(
                self.plan(), options, rng=self.rngs[name], progressbar=self.progressbar
            )
        return self._runs[name]


def _options(cls, given, kwargs: dict, names: set[str]):
    if given is not None and not isinstance(given, cls):
        raise EvidenceInputError(f"Expected a {cls.__name__}, got {type(given).__name__}.")
    return replace(given or cls(), **{k: v for k, v in kwargs.items() if k in names})


def _path_estimate(name: str, runs: _PathRuns, kwargs: dict) -> Evidence:
    row = registry.method(name)
    with status(
        f"pm_evidence {name}: compiling the model's log-density and setting up",
        runs.progressbar,
        phase_name=f"compilation / set-up of {name!r}",
    ):
        run = runs.run(row.run)
    return row.estimate(run, **{k: kwargs[k] for k in row.options if k in kwargs})


# Deprecated options of marginal_likelihood: old name -> (the method it is for, its option
# there). ``proposal=`` was bridge's reference when ``reference=`` did not reach bridge in a
# list; it keeps that meaning (bridge's alone, over ``reference=``) with a FutureWarning.
_DEPRECATED_OPTIONS = {"proposal": ("bridge", "reference")}


def _deprecated_options(methods: list[str], kwargs: dict) -> tuple[dict, dict]:
    """``kwargs`` without the deprecated options of :data:`_DEPRECATED_OPTIONS` whose method is
    listed, and those options by method (``{"bridge": {"reference": "warp3"}}``), with a
    ``FutureWarning`` each. A deprecated option whose method is not listed stays in
    ``kwargs``, for :func:`check_options` to refuse."""
    kwargs, only = dict(kwargs), {}
    for old, (name, option) in _DEPRECATED_OPTIONS.items():
        if old not in kwargs or name not in methods:
            continue
        value = kwargs.pop(old)
        only.setdefault(name, {})[option] = value
        warn_user(
            f"marginal_likelihood({old}=...) is deprecated and will be removed: pass "
            f"{option}={value!r} instead (in a list of methods it sets the {option} of every "
            f"method that takes one, {name} included).",
            FutureWarning,
        )
    return kwargs, only


def _for_the_path_methods(kwargs: dict, reference) -> dict:
    """``kwargs`` with ``reference`` given to the path methods alone, as
    ``path=PathOptions(reference=...)`` (the user's path options with that field replaced):
    ``method="auto"``'s path method starts from it, its bridge keeps its own reference."""
    kwargs = {k: v for k, v in kwargs.items() if k != "reference"}
    path = kwargs.get("path")
    if path is None or isinstance(path, PathOptions):  # anything else: refused by _options
        kwargs["path"] = replace(path or PathOptions(), reference=reference)
    return kwargs


def _plain_estimate(name: str, target, idata, seed, progressbar, kwargs) -> Evidence:
    row = registry.method(name)
    own = {k: kwargs[k] for k in row.options if k in kwargs}
    with status(
        f"pm_evidence {name}: compiling the model's log-density and setting up",
        progressbar,
        phase_name=f"compilation / set-up of {name!r}",
    ):
        return row.estimate(target, idata=idata, random_seed=seed, progressbar=progressbar, **own)


def auto_pair(target) -> tuple[str, str]:
    """The estimator and the cross-check of ``method="auto"`` for a model.

    Continuous models: bridge sampling (the most efficient at defaults in
    ``benchmarks/defaults.py``; NUTS draws and a normal fitted to their first halves) checked
    by AIS (its own annealed chains, a stochastic lower bound) from the mixture that
    exploration from the prior found (:func:`~pm_evidence.exploration.explore`; see
    :func:`exploration_skipped` for when it is not run and AIS starts from
    :func:`~pm_evidence.plan.auto_reference`'s choice).
    Models with discrete variables (no NUTS draws, no bridge): RTS checked by AIS, two samplers
    on one plan (the prior as ``p0``): they share the reference, not the draws.
    """
    return ("rts", "ais") if target.has_discrete else ("bridge", "ais")


def exploration_skipped(target, kwargs: dict) -> str:
    """Why ``method="auto"`` does not explore from the prior (empty when it does).

    It explores continuous models whose prior is a reference distribution (proper, not
    restricted by a transform such as ``ordered``) with at most
    :data:`EXPLORATION_MAX_DIM` parameters, unless a reference or path options are given.
    """
    if target.has_discrete:
        return "the model has discrete variables (RTS and AIS start from the prior)"
    if not target.model.observed_RVs and not target.model.potentials:
        return "the model has no data (the posterior is the prior)"
    if target.dim > EXPLORATION_MAX_DIM:
        return (
            f"{target.dim} parameters > {EXPLORATION_MAX_DIM}: a cloud of "
            f"{ExplorationOptions().particles_for(target.dim)} particles cannot fit a mixture "
            f"there"
        )
    if any(k in kwargs for k in ("reference", "path")):
        return "a reference or path options were given"
    try:
        PriorReference(target)
    except EvidenceInputError as err:
        return f"the prior cannot be sampled as a reference ({err})"
    return ""


def check_precision(check: str, kwargs: dict, estimate: Evidence) -> dict:
    """``kwargs`` for the cross-check ``check`` of ``method="auto"``, its annealing run stopped
    at the precision of the estimate it checks.

    A cross-check is there to detect a disagreement, in combined standard errors
    ``hypot(se_1, se_2)``; an SE far below the estimate's adds nothing to that. So an AIS
    check stops at ``target_se = max(AnnealingOptions().target_se, estimate.se)`` rather than
    the default 0.005: on the 1,002-parameter hierarchical model of
    ``pm_evidence.zoo_highdim`` bridge's SE is 0.02-0.03, and AIS to 0.005 took 130 s to over
    600 s. Where the estimate's SE is below the default (most models) nothing changes; options
    the user gave (``annealing=`` or ``target_se=``) are kept as given. Where ``auto`` explored
    from the prior (at most ``EXPLORATION_MAX_DIM`` parameters) AIS starts from the
    exploration's mixture and runs to its own default instead: it is then the estimate that
    covers modes NUTS missed, not only a check (on the 10-D Gaussian shells, stopped at bridge's
    SE of 0.08 it took 5,700 evaluations and came back 0.052 off at SE 0.079; run to its default,
    760,000 evaluations, 1 s more, and 0.008 off at SE 0.006).
    """
    if registry.method(check).run != "annealing" or {"annealing", "target_se"} & set(kwargs):
        return kwargs
    default = AnnealingOptions().target_se
    if not (np.isfinite(estimate.se) and estimate.se > default):
        return kwargs
    return {**kwargs, "annealing": AnnealingOptions(target_se=float(estimate.se))}


def _run_pair(
    target, primary, check, idata, seed, progressbar, kwargs, matched_precision: bool = True
) -> dict:
    """The estimate, then its cross-check, each given the options it takes; only the estimate
    where the check was interrupted. ``matched_precision``: the check stops at the estimate's
    precision (:func:`check_precision`); otherwise at its own default."""
    check_options([primary, check], kwargs)

    def own(name, options):
        accepted = accepted_options([name])
        return {k: v for k, v in options.items() if k in accepted}

    first = _marginal_likelihood(
        target, primary, idata, seed, progressbar, own(primary, kwargs), term_check=False
    )
    pair = {primary: first}
    if first.diagnostics.get("interrupted"):
        return pair
    options = own(check, check_precision(check, kwargs, first) if matched_precision else kwargs)
    try:
        pair[check] = _marginal_likelihood(
            target, check, idata, seed, progressbar, options, term_check=False
        )
    except KeyboardInterrupt:
        warn_user(
            f"Interrupted (Ctrl-C) while running {check!r}, method='auto''s cross-check: "
            f"returning {primary!r} unchecked."
        )
    return pair


def _shared_posterior_plan(target, idata, seed, progressbar, kwargs):
    """The posterior plan both halves of ``auto`` read: the draws a list of methods would make
    (from ``idata``, or NUTS on the ``"posterior"`` stream of ``seed``)."""
    sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
    rng = stage_rngs(seed)["posterior"]
    return posterior_plan(target, idata, rng=rng, progressbar=progressbar, **sampling)


def _auto(target, idata, random_seed, progressbar, kwargs) -> Evidence:
    primary, check = auto_pair(target)
    skipped = exploration_skipped(target, kwargs)
    if skipped:
        if "reference" in kwargs:  # the path method's (the pair shares no reference)
            kwargs = _for_the_path_methods(kwargs, kwargs["reference"])
        if target.has_discrete:  # RTS and AIS share one path plan: one call
            pair = _marginal_likelihood(
                target, [primary, check], idata, random_seed, progressbar, kwargs,
                term_check=False,
            )  # fmt: skip
        else:
            seed = root_sequence(random_seed)
            plan = _shared_posterior_plan(target, idata, seed, progressbar, kwargs)
            pair = _run_pair(target, primary, check, plan, seed, progressbar, kwargs)
        if check not in pair:  # interrupted after the first
            return pair[primary]
        chosen = cross_checked(pair[primary], pair[check])
        if not target.has_discrete:  # both halves read the NUTS draws: check those
            chosen = _term_checked(target, [chosen], plan, stage_rngs(seed))[0]
        return _with_diagnostics(chosen, {"exploration": f"skipped: {skipped}"})
    # the two halves share nothing: bridge reads NUTS draws and a normal fitted to them; AIS
    # starts from the mixture that tempering from the prior found (pm_evidence.exploration)
    seed = root_sequence(random_seed)
    plan = _shared_posterior_plan(target, idata, seed, progressbar, kwargs)
    exploration = explore(target, stage_rngs(seed)["exploration"], progressbar=progressbar)
    options = _for_the_path_methods(kwargs, exploration.reference())
    # AIS from the exploration's mixture is more than a check here: it is the estimate that
    # covers modes NUTS missed, and on curved posteriors the more precise; at <= 50 parameters
    # it reaches its default target_se within a few seconds, so it is not stopped at bridge's SE
    pair = _run_pair(
        target, primary, check, plan, seed, progressbar, options, matched_precision=False
    )
    if check not in pair:
        return pair[primary]
    estimate, checked, facts = _coverage_checked(pair[primary], pair[check], exploration, plan)
    if facts["exploration_missed_by_nuts"] >= MISSED_SHARE:
        # only the estimate from the exploration covers the mass NUTS missed, and nothing
        # independent checks it: it is returned, flagged
        checked = _with_warning(checked, (
            f"No independent check: the NUTS draws missed modes that tempering from the prior "
            f"found, so this estimate ({checked.method} from the exploration's mixture) is the "
            f"only one that covers them, and it is confirmed by nothing; the exploration can "
            f"miss modes too (narrow ones, or mass in the far tails of the unconstrained "
            f"space). Compare it with a run from another reference, e.g. "
            f"method=['ais', 'rts'] with reference='prior'."
        ))  # fmt: skip
        return _with_diagnostics(cross_checked(checked, estimate, prefer_first=True), facts)
    return _with_diagnostics(cross_checked(estimate, checked), facts)


def _coverage_checked(estimate: Evidence, check: Evidence, exploration, plan):
    """Both results with a warning where the other's draws found mass that theirs missed
    (:func:`~pm_evidence.exploration.compare_coverage`), and the facts for the diagnostics."""
    group = plan.search.group
    unenumerated = plan.search.found and group is None
    coverage = compare_coverage(exploration, plan.draws, None if group is None else group.orbit)
    facts = {
        "exploration_n_modes": exploration.n_modes,
        "exploration_n_term_modes": exploration.n_term_modes,
        "exploration_n_evaluations": exploration.n_evaluations,
        "exploration_log_z": exploration.log_z,
        "exploration_missed_by_nuts": np.nan if unenumerated else coverage.missed_by_draws,
        "exploration_missed_by_exploration": coverage.missed_by_exploration,
    }
    if not unenumerated and coverage.missed_by_draws >= MISSED_SHARE:
        estimate = _with_warning(estimate, (
            f"The NUTS draws missed part of the posterior: tempering from the prior "
            f"(pm_evidence.exploration) found {exploration.n_modes} components, and "
            f"{coverage.missed_by_draws:.0%} of the posterior's mass (its mixture's weights) "
            f"lies in components that no NUTS draw visited, so {estimate.method}, which reads "
            f"the NUTS draws, misses that mass."
        ))  # fmt: skip
    if coverage.missed_by_exploration >= MISSED_SHARE:
        check = _with_warning(check, (
            f"Tempering from the prior (pm_evidence.exploration) missed part of the "
            f"posterior: {coverage.missed_by_exploration:.0%} of the NUTS draws lie outside "
            f"every component of the mixture it found, which is {check.method}'s reference."
        ))  # fmt: skip
    return estimate, check, facts


def _with_warning(ev: Evidence, message: str) -> Evidence:
    return dataclasses.replace(ev, warnings=(*ev.warnings, message))


def _with_diagnostics(ev: Evidence, facts: dict) -> Evidence:
    return dataclasses.replace(ev, diagnostics={**ev.diagnostics, **facts})


def cross_checked(estimate: Evidence, check: Evidence, prefer_first: bool = False) -> Evidence:
    """The better-supported of an estimate and its cross-check, carrying the comparison.

    Better supported: a result without warnings before one with, then the smaller SE
    (``prefer_first``: the estimate, whatever its warnings; for the one of the two that can be
    right, as when the other read draws that missed a mode). The
    returned result's diagnostics hold the other's ``log Z`` and SE and ``auto_z``, the
    difference in combined SEs; above :data:`~pm_evidence.evidence.DISAGREEMENT_Z` a warning
    says so, on the result (``reliable`` is then False) and as a :class:`UserWarning`.

    Parameters
    ----------
    estimate, check : Evidence
        The primary estimate and its cross-check.
    prefer_first : bool
        Return ``estimate`` (with the comparison) whatever the two's warnings and SEs.

    Returns
    -------
    Evidence
    """
    a, b = estimate, check
    combined = float(np.hypot(a.se, b.se))
    z = abs(a.log_z - b.log_z) / combined if combined > 0 else np.inf
    better = prefer_first or (not a.reliable, a.se) <= (not b.reliable, b.se)
    chosen, other = (a, b) if better else (b, a)
    diagnostics = {
        **chosen.diagnostics,
        "auto_pair": f"{a.method} checked by {b.method}",
        "auto_other_method": other.method,
        "auto_other_log_z": other.log_z,
        "auto_other_se": other.se,
        "auto_z": z,
    }
    messages = list(chosen.warnings)
    if not z <= DISAGREEMENT_Z:
        message = (
            f"method='auto': {a.method} and its cross-check {b.method} (different draws and "
            f"reference) disagree by {z:.1f} combined standard errors (> {DISAGREEMENT_Z:g}): "
            f"log Z = {format_estimate(a.log_z, a.se)} vs {format_estimate(b.log_z, b.se)}. At "
            f"least one is "
            f"wrong or under-states its error (a missed mode, a poor reference, or posterior "
            f"draws fitted to other data than the model holds: pass idata only from pm.sample "
            f"on this model and its current data); run both with "
            f"method=[{a.method!r}, {b.method!r}] and check their diagnostics."
        )
        warn_user(message)
        messages.append(message)
    return dataclasses.replace(chosen, diagnostics=diagnostics, warnings=tuple(messages))


def _term_checked(target, results: list, draws_from, rngs) -> list:
    """``results`` checked against the modes of the terms of the model's log-sum-exps that
    the posterior draws did not visit (:mod:`pm_evidence.term_check`), on continuous models of
    at most ``EXPLORATION_MAX_DIM`` parameters with a log-sum-exp; ``draws_from``: a
    ``PosteriorPlan`` or a ``PathPlan`` (its NUTS draws), or ``None`` (nothing to check)."""
    draws = getattr(draws_from, "draws", getattr(draws_from, "posterior", None))
    if (
        draws is None or target.has_discrete or target.dim > EXPLORATION_MAX_DIM
        or not target.term_counts
    ):  # fmt: skip
        return results
    search = getattr(draws_from, "search", None)
    if search is None:
        search = find_symmetry(target, spread_points(draws))
    orbit = None if search.group is None else search.group.orbit
    unvisited = unvisited_term_modes(target, draws, rngs["term_check"], orbit)
    return [with_unvisited_warning(ev, unvisited, target.to_constrained) for ev in results]


def _marginal_likelihood(
    model, method, idata, random_seed, progressbar, kwargs, term_check: bool = True
):
    if isinstance(method, str) and method == "auto":
        return _auto(as_target(model), idata, random_seed, progressbar, kwargs)
    if not isinstance(method, str) and "auto" in method:
        raise EvidenceInputError(
            "method='auto' picks two methods itself and cannot be part of a list; list the "
            f"methods to run instead (any of {list(METHODS[1:])})."
        )
    methods = [method] if isinstance(method, str) else list(method)
    for name in methods:
        registry.method(name)  # an unknown name is an error that lists the valid ones
    if len(set(methods)) != len(methods):
        raise EvidenceInputError(f"A method is listed twice in {methods}.")
    kwargs, only = _deprecated_options(methods, kwargs)
    check_options(methods, kwargs)
    label = ", ".join(methods)
    with status(
        f"pm_evidence {label}: compiling the model's log-density",
        progressbar,
        phase_name=f"compilation / set-up of {label!r}",
    ):
        target = as_target(model)
    seed = root_sequence(random_seed)  # every callee gets the same stage streams from it
    rngs = stage_rngs(seed)
    plain = [
        m for m in methods
        if registry.method(m).family == "posterior" and _needs_posterior_draws(m, kwargs)
    ]  # fmt: skip
    if plain:
        # one posterior plan for every method on posterior draws: the draws (from idata, or
        # drawn once from the "posterior" stream: the same draws a path plan would make) and
        # the symmetry search at them
        sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
        idata = posterior_plan(
            target, idata, rng=rngs["posterior"], progressbar=progressbar, **sampling
        )
    runs = _PathRuns(target, methods, idata, rngs, progressbar, kwargs)
    results = EvidenceSet()
    for name in methods:
        try:
            if registry.method(name).family == "posterior":
                options = {**kwargs, **only.get(name, {})}
                results[name] = _plain_estimate(name, target, idata, seed, progressbar, options)
            else:
                results[name] = _path_estimate(name, runs, kwargs)
        except KeyboardInterrupt:
            if not results:
                raise
            warn_user(
                f"Interrupted (Ctrl-C) while running {name!r}: returning the methods that "
                f"finished, {list(results)}; {methods[len(results) :]} did not run.",
            )
            break
        if results[name].diagnostics.get("interrupted") and name != methods[-1]:
            warn_user(
                f"{name!r} was interrupted (Ctrl-C) and returned a partial estimate; "
                f"{methods[len(results) :]} did not run.",
            )
            break
    if term_check:
        draws_from = idata if plain else runs.made_plan
        checked = _term_checked(target, list(results.values()), draws_from, rngs)
        for name, ev in zip(list(results), checked, strict=True):
            results[name] = ev
    if isinstance(method, str):
        return results[method]
    for a, b, z in results.disagreements():
        warn_user(
            f"Methods {a!r} and {b!r} disagree by {z:.1f} combined standard errors "
            f"(> {DISAGREEMENT_Z:g}): log Z = {format_estimate(results[a].log_z, results[a].se)} vs "
            f"{format_estimate(results[b].log_z, results[b].se)}. At least one of them is wrong or "
            f"under-states its error; check their diagnostics (ESS, occupancy, overlap).",
        )
    return results


def _needs_posterior_draws(name: str, kwargs: dict) -> bool:
    """Whether a method on posterior draws reads them: all do except importance sampling from
    a reference that is not fitted to them (``reference="prior"`` or a Reference object, by
    name or in ``posterior=``)."""
    reference = kwargs.get("reference", getattr(kwargs.get("posterior"), "reference", None))
    return name != "is" or reference_needs_draws(reference)
