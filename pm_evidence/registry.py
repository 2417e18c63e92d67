"""The methods of pm_evidence, one row each: the table every layer above the estimators reads.

A row (:class:`Method`) says what a method needs and where its parts are:

- its **family**: ``"posterior"`` (an estimator on posterior draws and a reference fitted to
  them: :mod:`pm_evidence.api`) or ``"path"`` (a follow-up on an annealed or tempered run made on
  a :class:`~pm_evidence.plan.PathPlan`: :mod:`pm_evidence.path_estimators`);
- the **run** a path method reads (``RUN_KINDS``: its options class and the function that
  makes it), and whether that run must keep every draw (MBAR) or the plan needs posterior draws
  (RAISE starts from them);
- its **own options** (keywords only it takes), its **random stream** (a stage of
  ``pm_evidence.utils.STAGES``, so a method gives the same number alone and in a list),
  the **bias** of its ``log Z`` (Jensen's inequality on an unbiased estimate of ``Z`` or
  ``1/Z``), and the public model-level **function** a user calls for it alone.

:func:`pm_evidence.marginal_likelihood`, the model-level path functions
(``pm_evidence.api_tempering``) and :meth:`pm_evidence.EvidenceSet.summary` read it;
``tests/test_registry.py`` checks every row against the package. Adding an estimator is one
row here and its function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pm_evidence import path_estimators
from pm_evidence.api import (
    bridge_sampling,
    discriminance_sampling,
    importance_sampling,
    is_ris_combination,
    reverse_importance_sampling,
)
from pm_evidence.exceptions import EvidenceInputError
from pm_evidence.runs import (
    AnnealingOptions,
    TemperingOptions,
    run_annealing,
    run_reverse_annealing,
    run_tempering,
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

NO_DEFINITE_SIGN = "no definite sign"


@dataclass(frozen=True)
class RunKind:
    """A kind of run on a plan: its options class and the function that makes it,
    ``make(plan, options, rng=, progressbar=) -> run``; the run draws from the stage stream
    of the same name."""

    name: str
    options: type
    make: Callable


RUN_KINDS: dict[str, RunKind] = {
    kind.name: kind
    for kind in (
        RunKind("annealing", AnnealingOptions, run_annealing),
        RunKind("reverse_annealing", AnnealingOptions, run_reverse_annealing),
        RunKind("tempering", TemperingOptions, run_tempering),
    )
}


@dataclass(frozen=True)
class Method:
    """One method of :data:`METHODS`.

    Attributes
    ----------
    name : str
        The ``method=`` name, and the label of its results (bridge adds its proposal when it is
        not the default: ``"bridge_warp3"``).
    family : {"posterior", "path"}
    estimate : callable
        Posterior family: ``estimate(target, idata=, random_seed=, progressbar=, **options)``;
        path family: the follow-up ``estimate(run, **options)``.
    function : str
        The public function of ``pm_evidence`` that runs this method alone on a model.
    options : tuple of str
        The keyword options only this method takes (beyond NUTS options and, for the path
        family, the plan's and run's option objects and their fields).
    run : str or None
        Path family: the key of ``RUN_KINDS`` it reads.
    stream : str
        The stage of ``pm_evidence.utils.STAGES`` its own randomness draws from.
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
    options: tuple[str, ...] = ()
    run: str | None = None
    stream: str = ""
    needs_posterior: bool = False
    records_draws: bool = False
    bias: str = NO_DEFINITE_SIGN


_POSTERIOR_OPTIONS = ("reference", "n_reference", "symmetrize")
_BRIDGE_OPTIONS = ("proposal", "n_reference", "repetitions", "use_neff", "tol", "maxiter",
                   "symmetrize")  # fmt: skip


def _combination(rule: str) -> Method:
    return Method(
        f"is_ris_{rule}", "posterior", partial(is_ris_combination, rule=rule),
        "is_ris_combination", _POSTERIOR_OPTIONS, stream="is_ris",
    )  # fmt: skip


_ROWS = (
    Method("is", "posterior", importance_sampling, "importance_sampling", _POSTERIOR_OPTIONS,
           stream="is", bias="lower bound"),
    Method("ris", "posterior", reverse_importance_sampling, "reverse_importance_sampling",
           _POSTERIOR_OPTIONS, stream="ris", bias="upper bound"),
    Method("ds", "posterior", discriminance_sampling, "discriminance_sampling",
           _POSTERIOR_OPTIONS, stream="ds"),
    Method("bridge", "posterior", bridge_sampling, "bridge_sampling", _BRIDGE_OPTIONS,
           stream="bridge"),
    _combination("average"),
    _combination("weighted"),
    _combination("selection"),
    Method("ais", "path", path_estimators.ais, "annealed_importance_sampling",
           run="annealing", stream="annealing", bias="lower bound"),
    Method("raise", "path", path_estimators.reverse_ais, "reverse_annealed_importance_sampling",
           run="reverse_annealing", stream="reverse_annealing", needs_posterior=True,
           bias="upper bound"),
    Method("ads", "path", path_estimators.ads, "annealed_discriminance_sampling", ("version",),
           run="annealing", stream="annealing"),
    Method("rts", "path", path_estimators.rts, "rao_blackwellized_tempered_sampling",
           run="tempering", stream="tempering"),
    Method("ti", "path", path_estimators.ti, "thermodynamic_integration",
           ("variant", "corrected"), run="tempering", stream="tempering"),
    Method("mbar", "path", path_estimators.mbar, "mbar", run="tempering", stream="tempering",
           records_draws=True),
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


def bias_of(label: str) -> str:
    """The bias direction of the method whose results carry ``label`` (``"no definite
    sign"`` for a label that is no row, e.g. ``"bridge_warp3"`` or ``"smc"``)."""
    row = REGISTRY.get(label)
    return NO_DEFINITE_SIGN if row is None else row.bias
