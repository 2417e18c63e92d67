"""The methods of pm_evidence, one row each: the table every layer above the estimators reads.

A row (:class:`~pm_evidence.core.methods.Method`, data in :data:`~pm_evidence.core.methods.METHOD_TABLE`
joined here with the function that computes it) says what a method needs and where its parts are:

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
(:mod:`pm_evidence.path.api`) and :meth:`pm_evidence.EvidenceSet.summary` read it;
``tests/test_registry.py`` checks every row against the package. Adding an estimator is one
row of :data:`~pm_evidence.core.methods.METHOD_TABLE` and its function in its family's table
(``POSTERIOR_ESTIMATES`` of :mod:`pm_evidence.posterior.api`, ``PATH_ESTIMATES`` of
:mod:`pm_evidence.path.api`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pm_evidence.core.method_bias import bias_of
from pm_evidence.core.methods import METHOD_TABLE, OPTION_OBJECTS, RUN_OPTIONS, Method, method_row
from pm_evidence.path.api import PATH_ESTIMATES, RUN_MAKERS
from pm_evidence.posterior.api import POSTERIOR_ESTIMATES

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
    name: RunKind(name, OPTION_OBJECTS[keyword], keyword, RUN_MAKERS[name])
    for name, keyword in RUN_OPTIONS.items()
}

_ESTIMATES = {**POSTERIOR_ESTIMATES, **PATH_ESTIMATES}

REGISTRY: dict[str, Method] = {
    name: replace(row, estimate=_ESTIMATES[name]) for name, row in METHOD_TABLE.items()
}
"""Every method by name, in the order of :data:`METHODS`, with its function."""

METHODS: tuple[str, ...] = ("auto", *REGISTRY)
"""Names accepted by ``marginal_likelihood(method=...)``: ``"auto"`` (a pair of these, see
:func:`pm_evidence.marginal.auto_pair`) and every row of :data:`REGISTRY`."""

PATH_METHODS: tuple[str, ...] = tuple(r.name for r in REGISTRY.values() if r.family == "path")
"""The methods that read an annealed or tempered run."""


def method(name: str) -> Method:
    """The row of ``name``, with its function.

    Raises
    ------
    EvidenceInputError
        Naming the method asked for and the valid ones.
    """
    return method_row(name, REGISTRY)
