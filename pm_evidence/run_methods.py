"""Running named methods on one model: options checked before any work, shared draws and
plans, and stages that fail without sinking the call.

The layer under :func:`pm_evidence.marginal_likelihood` and ``method="auto"``
(:mod:`pm_evidence.auto`): :func:`estimate_methods` runs a list of methods on shared samples,
:func:`attempt` runs one stage and records its failure, :func:`validate_options` refuses a bad
option before NUTS or a plan runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from pm_evidence import registry
from pm_evidence.core.evidence import Evidence, EvidenceSet
from pm_evidence.core.exceptions import (
    EstimationFailedError,
    EvidenceInputError,
    NonFiniteLogDensityError,
    OverlapError,
)
from pm_evidence.core.methods import (
    OPTION_OBJECTS,
    accepted_options,
    option_objects,
    route_options,
)
from pm_evidence.core.options import SAMPLE_KEYS, PathOptions, TemperingOptions
from pm_evidence.core.progress import status
from pm_evidence.core.utils import stage_rngs, warn_user
from pm_evidence.model.draws import posterior_plan, reference_needs_draws
from pm_evidence.model.modes import find_symmetry, spread_points
from pm_evidence.path.plan import check_sampling_options, make_plan
from pm_evidence.search.term_check import unvisited_term_modes, with_unvisited_warning

__all__ = [
    "EXPLORATION_MAX_DIM",
    "attempt",
    "check_options",
    "deprecated_options",
    "estimate_methods",
    "failure_text",
    "for_the_path_methods",
    "is_stage_failure",
    "nothing_left",
    "term_checked",
    "validate_options",
]

_log = logging.getLogger(__name__)

# The term check (term_checked) and method="auto"'s exploration from the prior run on
# continuous models with at most this many parameters: 512 particles fit a mixture's
# covariances up to about 50 dimensions (one component per 5 dim particles).
EXPLORATION_MAX_DIM = 50

# Errors that say the code (ours or the user's) is wrong, or the machine out of memory: raised
# at once, never recorded as a stage that failed (is_stage_failure).
PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, ImportError, MemoryError, RecursionError)

def check_options(methods: list[str], kwargs: dict) -> None:
    """Raise :class:`~pm_evidence.EvidenceInputError` unless every keyword of ``kwargs`` is
    taken by at least one of ``methods``, with a value it accepts
    (:func:`~pm_evidence.core.methods.route_options`)."""
    route_options(methods, kwargs)


class _PathRuns:
    """The plan and the runs of the path methods of one call, each made when first needed.

    Every run draws from its own stage stream, so when it is made changes nothing."""

    def __init__(self, target, methods, idata, rngs, progressbar, kwargs):
        self.target, self.idata, self.rngs, self.progressbar = target, idata, rngs, progressbar
        rows = [registry.method(name) for name in methods]
        self.need_posterior = any(row.needs_posterior for row in rows)
        self.record = any(row.records_draws for row in rows)
        objects = option_objects(kwargs, {k: OPTION_OBJECTS[k] for k in _PATH_OBJECTS})
        self.sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
        self.path, self.annealing, self.tempering = (objects[k] for k in _PATH_OBJECTS)
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


_PATH_OBJECTS = ("path", "annealing", "tempering")


def _path_estimate(name: str, runs: _PathRuns, kwargs: dict) -> Evidence:
    row = registry.method(name)
    with status(
        f"pm_evidence {name}: compiling the model's log-density and setting up",
        runs.progressbar,
        phase_name=f"compilation / set-up of {name!r}",
    ):
        run = runs.run(row.run)
    return row.estimate(run, **route_options(name, kwargs, strict=False)[name].own)


# Deprecated options of marginal_likelihood: old name -> (the method it is for, its option
# there). ``proposal=`` was bridge's reference when ``reference=`` did not reach bridge in a
# list; it keeps that meaning (bridge's alone, over ``reference=``) with a FutureWarning.
_DEPRECATED_OPTIONS = {"proposal": ("bridge", "reference")}


def _without_other_path_options(methods: list[str], kwargs: dict) -> dict:
    """``kwargs`` without the options of another path method's run (``tempering=`` or
    ``n_sweeps=`` with ``method="ais"``), which ``marginal_likelihood`` took and ignored before
    the options were routed by the method table: a ``FutureWarning`` names them (they will be
    refused, as every other option no listed method takes)."""
    path_methods = [m for m in methods if m in registry.PATH_METHODS]
    if not path_methods:
        return kwargs
    taken = accepted_options(methods)
    other_runs = accepted_options(registry.PATH_METHODS) - taken
    ignored = sorted(set(kwargs) & other_runs)
    if ignored:
        warn_user(
            f"Options {ignored} belong to another path method's run, not to {path_methods}: "
            f"they are ignored, and will be refused in a later version; drop them.",
            FutureWarning,
        )
    return {k: v for k, v in kwargs.items() if k not in ignored}


def deprecated_options(methods: list[str], kwargs: dict) -> tuple[dict, dict]:
    """``kwargs`` without the deprecated options of :data:`_DEPRECATED_OPTIONS` whose method is
    listed, and those options by method (``{"bridge": {"reference": "warp3"}}``), with a
    ``FutureWarning`` each. A deprecated option whose method is not listed stays in
    ``kwargs``, for :func:`check_options` to refuse."""
    kwargs, only = dict(kwargs), {}
    kwargs = _without_other_path_options(methods, kwargs)
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


def for_the_path_methods(kwargs: dict, reference) -> dict:
    """``kwargs`` with ``reference`` given to the path methods alone, as
    ``path=PathOptions(reference=...)`` (the user's path options with that field replaced):
    ``method="auto"``'s path method starts from it, its bridge keeps its own reference."""
    kwargs = {k: v for k, v in kwargs.items() if k != "reference"}
    path = kwargs.get("path")
    if path is None or isinstance(path, PathOptions):  # anything else: refused by route_options
        kwargs["path"] = replace(path or PathOptions(), reference=reference)
    return kwargs


def _plain_estimate(name: str, target, idata, seed, progressbar, kwargs) -> Evidence:
    row = registry.method(name)
    options = route_options(name, kwargs, strict=False)[name]
    own = {**options.objects, **options.own}
    with status(
        f"pm_evidence {name}: compiling the model's log-density and setting up",
        progressbar,
        phase_name=f"compilation / set-up of {name!r}",
    ):
        return row.estimate(target, idata=idata, random_seed=seed, progressbar=progressbar, **own)



def term_checked(target, results: list, draws_from, rngs) -> list:
    """``results`` checked against the modes of the terms of the model's log-sum-exps that
    the posterior draws did not visit (:mod:`pm_evidence.search.term_check`), on continuous models of
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


def is_stage_failure(err: BaseException) -> bool:
    """Whether ``err``, raised by one stage of a call that runs several, is that stage's failure
    (the call goes on without it; :func:`attempt`) rather than bad input (raised at once).

    A reference that does not overlap the target (:class:`~pm_evidence.OverlapError`), a
    log-density that is not finite where a method needs it
    (:class:`~pm_evidence.NonFiniteLogDensityError`), a solver that does not converge and any
    other error of the computation are failures of the stage; every other
    :class:`~pm_evidence.EvidenceInputError` (an option, ``idata`` of another model) is the
    user's to fix, as are the errors of :data:`PROGRAMMING_ERRORS`; a Ctrl-C is never caught.
    """
    if isinstance(err, OverlapError | NonFiniteLogDensityError):
        return True
    if isinstance(err, PROGRAMMING_ERRORS):
        return False  # a bug or no memory: never hidden as a warning
    return isinstance(err, Exception) and not isinstance(err, EvidenceInputError)


def failure_text(stage: str, err: BaseException) -> str:
    """One line for a stage that failed: what ran and the error it raised; the call went on
    without it."""
    return f"{stage} failed and was left out ({type(err).__name__}: {err})"


def attempt[T](stage: str, run: Callable[[], T], failures: dict[str, str]) -> T | None:
    """``run()``, or ``None`` where it raises a stage failure (:func:`is_stage_failure`),
    which is recorded in ``failures[stage]`` (its traceback goes to the debug log)."""
    try:
        return run()
    except Exception as err:
        if not is_stage_failure(err):
            raise
        _log.debug("stage %r failed", stage, exc_info=True)
        failures[stage] = failure_text(stage, err)
        return None


def nothing_left(what: str, failures: dict[str, str]) -> EstimationFailedError:
    """The error for a call whose every stage failed: what each tried and why it failed."""
    lines = "\n".join(f"- {text}" for text in failures.values())
    return EstimationFailedError(
        f"{what}: every stage failed, so there is no estimate.\n{lines}\nEach line says "
        f"what the stage tried; the messages say what is left to try."
    )


def validate_options(methods: list[str], kwargs: dict) -> None:
    """Refuse, before any work, an option no method of ``methods`` takes and an option value
    any of them refuses (:func:`~pm_evidence.core.methods.route_options` makes every option
    object the methods take, whose ``__post_init__`` checks the values), and a NUTS option value
    ``pm.sample`` would refuse only after compiling."""
    route_options(methods, kwargs)
    check_sampling_options({k: v for k, v in kwargs.items() if k in SAMPLE_KEYS})


def estimate_methods(
    target, methods: list[str], idata, seed, progressbar: bool, kwargs: dict, only: dict,
    *, term_check: bool = True, label: str = "",
) -> EvidenceSet:  # fmt: skip
    """Run ``methods`` (checked names, no repeats) on shared draws, each on its own stream.

    The methods on posterior draws share one posterior plan (from ``idata`` or NUTS on the
    ``"posterior"`` stream); the path methods share one plan and the runs they read
    (:class:`_PathRuns`). With several methods, one that fails (:func:`is_stage_failure`) is
    left out with a warning and recorded in the result's ``failures``; only when all fail is
    there an error (:class:`~pm_evidence.EstimationFailedError`, naming each failure). A
    single method's failure is raised as it is.

    Parameters
    ----------
    target : LogDensity
    methods : list of str
    idata : optional
        Posterior draws of this model (``PosteriorPlan``, DataTree, ...).
    seed : numpy.random.SeedSequence
        The call's root sequence; every stage stream is spawned from it.
    progressbar : bool
    kwargs : dict
        Options (checked by :func:`validate_options`).
    only : dict
        Options for one method alone (:func:`deprecated_options`).
    term_check : bool
        Check the results against the modes of the model's log-sum-exp terms
        (:func:`term_checked`).
    label : str
        What ran, for the error where every method failed (default: the call).

    Returns
    -------
    EvidenceSet
    """
    rngs = stage_rngs(seed)
    plain = [
        m for m in methods
        if registry.method(m).family == "posterior" and _needs_posterior_draws(m, kwargs)
    ]  # fmt: skip
    if plain:
        target.require_continuous(plain[0])  # named as asked, before any draws are attempted
        # one posterior plan for every method on posterior draws: the draws (from idata, or
        # drawn once from the "posterior" stream: the same draws a path plan would make) and
        # the symmetry search at them
        sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
        idata = posterior_plan(
            target, idata, rng=rngs["posterior"], progressbar=progressbar, **sampling
        )
    runs = _PathRuns(target, methods, idata, rngs, progressbar, kwargs)
    results, failures = EvidenceSet(), {}

    def estimate(name):
        if registry.method(name).family == "posterior":
            options = {**kwargs, **only.get(name, {})}
            return _plain_estimate(name, target, idata, seed, progressbar, options)
        return _path_estimate(name, runs, kwargs)

    for name in methods:
        try:
            result = estimate(name) if len(methods) == 1 else attempt(
                repr(name), lambda name=name: estimate(name), failures
            )  # fmt: skip
        except KeyboardInterrupt:
            if not results:
                raise
            for left in methods[methods.index(name) :]:
                failures[repr(left)] = (
                    f"{left!r} did not run: interrupted (Ctrl-C) while running {name!r}; the "
                    f"methods that finished, {list(results)}, are returned"
                )
            break
        if result is None:
            warn_user(failures[repr(name)])
            continue
        results[name] = result
        if result.diagnostics.get("interrupted") and name != methods[-1]:
            for left in methods[methods.index(name) + 1 :]:
                failures[repr(left)] = (
                    f"{left!r} did not run: {name!r} was interrupted (Ctrl-C) and returned a "
                    f"partial estimate"
                )
            break
    if not results:
        raise nothing_left(label or f"marginal_likelihood(method={methods})", failures)
    if term_check:
        draws_from = idata if plain else runs.made_plan
        checked = term_checked(target, list(results.values()), draws_from, rngs)
        for name, ev in zip(list(results), checked, strict=True):
            results[name] = ev
    results.failures = {name.strip("'"): text for name, text in failures.items()}
    return results


def _needs_posterior_draws(name: str, kwargs: dict) -> bool:
    """Whether a method on posterior draws reads them: all do except importance sampling from
    a reference that is not fitted to them (``reference="prior"`` or a Reference object, by
    name or in ``posterior=``)."""
    reference = kwargs.get("reference", getattr(kwargs.get("posterior"), "reference", None))
    return name != "is" or reference_needs_draws(reference)
