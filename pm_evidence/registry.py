"""The methods of pm_evidence, one row each: the table every layer above the estimators reads.

A row (:class:`Method`) says what a method needs and where its parts are:

- its **family**: ``"posterior"`` (an estimator on posterior draws and a reference fitted to
  them: :mod:`pm_evidence.posterior.api`) or ``"path"`` (a follow-up on an annealed or tempered run made on
  a :class:`~pm_evidence.path.plan.PathPlan`: :mod:`pm_evidence.path.path_estimators`);
- the **run** a path method reads (``RUN_KINDS``: its options class and the function that
  makes it), and whether that run must keep every draw (MBAR) or the plan needs posterior draws
  (RAISE starts from them);
- its **options**: the option objects its model-level function takes (frozen dataclasses:
  :class:`~pm_evidence.PosteriorOptions`, :class:`~pm_evidence.PathOptions`, ...) and its own
  keywords; its **random stream** (a stage of ``pm_evidence.core.utils.STAGES``, so a method gives
  the same number alone and in a list),
  the **bias** of its ``log Z`` (Jensen's inequality on an unbiased estimate of ``Z`` or
  ``1/Z``), and the public model-level **function** a user calls for it alone.

:func:`pm_evidence.marginal_likelihood`, the model-level path functions
(``pm_evidence.api_tempering``) and :meth:`pm_evidence.EvidenceSet.summary` read it;
``tests/test_registry.py`` checks every row against the package. Adding an estimator is one
row here and its function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.method_bias import NO_DEFINITE_SIGN, bias_of
from pm_evidence.options import field_names
from pm_evidence.path import path_estimators
from pm_evidence.path.plan import SAMPLE_KEYS, PathOptions
from pm_evidence.path.runs import (
    AnnealingOptions,
    TemperingOptions,
    run_annealing,
    run_reverse_annealing,
    run_tempering,
)
from pm_evidence.posterior.api import (
    BridgeOptions,
    PosteriorOptions,
    bridge_sampling,
    discriminance_sampling,
    importance_sampling,
    is_ris_combination,
    reverse_importance_sampling,
)

__all__ = [
    "METHODS",
    "PATH_METHODS",
    "REGISTRY",
    "RUN_KINDS",
    "Method",
    "RunKind",
    "bias_of",
    "method",
]



@dataclass(frozen=True)
class RunKind:
    """A kind of run on a plan: its options class, the keyword that passes an instance of it
    (``annealing=``), and the function that makes it,
    ``make(plan, options, rng=, progressbar=) -> run``; the run draws from the stage stream
    of the same name."""

    name: str
    options: type
    keyword: str
    make: Callable


RUN_KINDS: dict[str, RunKind] = {
    run_kind.name: run_kind
    for run_kind in (
        RunKind("annealing", AnnealingOptions, "annealing", run_annealing),
        RunKind("reverse_annealing", AnnealingOptions, "annealing", run_reverse_annealing),
        RunKind("tempering", TemperingOptions, "tempering", run_tempering),
    )
}


@dataclass(frozen=True)
class Method:
    """One method of :data:`METHODS`.

    Attributes
    ----------
    name : str
        The ``method=`` name, and the label of its results (bridge adds its reference when it is
        not the default: ``"bridge_warp3"``).
    family : {"posterior", "path"}
    estimate : callable
        Posterior family: ``estimate(target, idata=, random_seed=, progressbar=, **options)``;
        path family: the follow-up ``estimate(run, **options)``.
    function : str
        The public function of ``pm_evidence`` that runs this method alone on a model.
    objects : mapping of str to type
        The option objects (frozen dataclasses) that function takes, by keyword; each of their
        fields may be given by name too.
    own : tuple of str
        The function's own keyword options, beyond its option objects and NUTS options (ADS's
        ``version``; the IS/RIS combination's ``rule``).
    options : tuple of str
        The keyword options ``marginal_likelihood`` hands ``estimate`` (beyond NUTS options
        and, for the path family, the option objects and their fields): the path family's own
        options; the posterior family's option objects and their fields. In a list, an option
        object goes to every method that takes it and a field given by name to every method
        with a field of that name (``reference=`` to all of them, bridge included).
    run : str or None
        Path family: the key of ``RUN_KINDS`` it reads.
    stream : str
        The stage of ``pm_evidence.core.utils.STAGES`` its own randomness draws from.
    needs_posterior : bool
        Path family: the plan must hold posterior draws (RAISE starts its chains at them).
    records_draws : bool
        Path family: the run keeps ``Delta`` and the rung of every draw (MBAR reads them; the
        draws themselves are the same).
    bias : str
        Which way ``log Z`` errs in expectation: ``"lower bound"``, ``"upper bound"`` or
        ``"no definite sign"``.
    """

    name: str
    family: str
    estimate: Callable
    function: str
    objects: Mapping[str, type] = field(default_factory=dict)
    own: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    run: str | None = None
    stream: str = ""
    needs_posterior: bool = False
    records_draws: bool = False
    bias: str = NO_DEFINITE_SIGN  # from pm_evidence.core.method_bias (set by the row builders)

    @property
    def keywords(self) -> frozenset[str]:
        """Every keyword the model-level function takes in its ``**options`` (deprecated names
        aside): its option objects, their fields, its own options and NUTS options."""
        fields_ = {name for cls in self.objects.values() for name in field_names(cls)}
        return frozenset({*self.objects, *fields_, *self.own, *SAMPLE_KEYS})


_POSTERIOR_OBJECTS = {"posterior": PosteriorOptions}


def _posterior(name, estimate, function, objects=_POSTERIOR_OBJECTS, **row):
    """A row of the posterior family: ``marginal_likelihood`` hands it its option objects and
    their fields by name."""
    fields_ = tuple(f for cls in objects.values() for f in field_names(cls))
    options = (*objects, *fields_)
    return Method(
        name, "posterior", estimate, function, objects, options=options, bias=bias_of(name), **row
    )


def _combination(rule: str) -> Method:
    return _posterior(
        f"is_ris_{rule}", partial(is_ris_combination, rule=rule), "is_ris_combination",
        own=("rule",), stream="is_ris",
    )  # fmt: skip


def _path(name: str, estimate: Callable, function: str, run: str, own=(), **row) -> Method:
    """A row of the path family: its plan's and its run's option objects; its own options
    are those ``marginal_likelihood`` hands its follow-up."""
    run_kind = RUN_KINDS[run]
    objects = {"path": PathOptions, run_kind.keyword: run_kind.options}
    return Method(name, "path", estimate, function, objects, own=own, options=own, run=run,
                  stream=run, bias=bias_of(name), **row)  # fmt: skip


_ROWS = (
    _posterior("is", importance_sampling, "importance_sampling", stream="is"),
    _posterior("ris", reverse_importance_sampling, "reverse_importance_sampling", stream="ris"),
    _posterior("ds", discriminance_sampling, "discriminance_sampling", stream="ds"),
    _posterior("bridge", bridge_sampling, "bridge_sampling",
               {**_POSTERIOR_OBJECTS, "bridge": BridgeOptions}, stream="bridge"),
    _combination("average"),
    _combination("weighted"),
    _combination("selection"),
    _path("ais", path_estimators.ais, "annealed_importance_sampling", "annealing"),
    _path("raise", path_estimators.reverse_ais, "reverse_annealed_importance_sampling",
          "reverse_annealing", needs_posterior=True),
    _path("ads", path_estimators.ads, "annealed_discriminance_sampling", "annealing",
          ("version",)),
    _path("rts", path_estimators.rts, "rao_blackwellized_tempered_sampling", "tempering"),
    _path("ti", path_estimators.ti, "thermodynamic_integration", "tempering",
          ("variant", "corrected")),
    _path("mbar", path_estimators.mbar, "mbar", "tempering", records_draws=True),
)  # fmt: skip

REGISTRY: dict[str, Method] = {row.name: row for row in _ROWS}
"""Every method by name, in the order of :data:`METHODS`."""

METHODS: tuple[str, ...] = ("auto", *REGISTRY)
"""Names accepted by ``marginal_likelihood(method=...)``: ``"auto"`` (a pair of these, see
:func:`pm_evidence.marginal.auto_pair`) and every row of :data:`REGISTRY`."""

PATH_METHODS: tuple[str, ...] = tuple(r.name for r in _ROWS if r.family == "path")
"""The methods that read an annealed or tempered run."""


def method(name: str) -> Method:
    """The row of ``name``.

    Raises
    ------
    EvidenceInputError
        Naming the method asked for and the valid ones.
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise EvidenceInputError(
            f"Requested method {name!r} but it must be one of {list(METHODS)}."
        )
    return REGISTRY[name]
