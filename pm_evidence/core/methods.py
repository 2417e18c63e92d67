"""The methods of pm_evidence as data, and the one router of a call's keyword options.

Every method is one :class:`Method` row of :data:`~pm_evidence.core.methods.METHOD_TABLE`: its family, the option objects
and own options its model-level function takes, the run it reads, its random stream and the
sign of its bias. The rows hold no functions, so every layer can read them;
:mod:`pm_evidence.registry` joins each row with the function that computes it.

:func:`route_options` is the only place where keyword options are sorted: the model-level
functions (``bridge_sampling(reference="warp3")``), :func:`pm_evidence.marginal_likelihood` with
one method, a list or ``"auto"``, and :func:`pm_evidence.compare_models` all call it. The rule:

- an option object (``posterior=PosteriorOptions(...)``) goes to every method that takes it;
- a field given by name (``reference="prior"``, ``n_chains=200``) sets that field in every
  option object of every method that has it, over the object's value;
- a method's own options (ADS's ``version``, TI's ``variant`` and ``corrected``) go to that
  method, their values checked against :data:`~pm_evidence.core.methods.CHOICES` (the IS/RIS combination's ``rule`` is
  in the method's name, ``"is_ris_average"``);
- NUTS options (``draws``, ``tune``, ``chains``, ``sample_kwargs``) go to every method;
- any other name is an error that lists the names accepted, before any work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.method_bias import NO_DEFINITE_SIGN, bias_of
from pm_evidence.core.options import (
    SAMPLE_KEYS,
    AnnealingOptions,
    BridgeOptions,
    PathOptions,
    PosteriorOptions,
    TemperingOptions,
    field_names,
)

__all__ = [
    "ADS_VERSIONS",
    "CHOICES",
    "COMBINATION_RULES",
    "METHOD_TABLE",
    "OPTION_OBJECTS",
    "RUN_OPTIONS",
    "TI_VARIANTS",
    "Method",
    "Routed",
    "accepted_options",
    "check_choice",
    "method_row",
    "option_objects",
    "route_options",
]

OPTION_OBJECTS: dict[str, type] = {
    "posterior": PosteriorOptions,
    "bridge": BridgeOptions,
    "path": PathOptions,
    "annealing": AnnealingOptions,
    "tempering": TemperingOptions,
}
"""Every option object by the keyword that passes it."""

RUN_OPTIONS: dict[str, str] = {
    "annealing": "annealing",
    "reverse_annealing": "annealing",
    "tempering": "tempering",
}
"""The kind of run a path method reads, and the keyword of its options object."""

ADS_VERSIONS = ("binary", "multinomial")
"""ADS's ``version``: sequential binary classifications (seed 000 Alg. 1) or one multinomial."""
TI_VARIANTS = ("rb", "trapezoid", "riemann")
"""TI's ``variant``: Rao-Blackwellized, trapezoid or Riemann sum over the rungs (seed 004)."""
COMBINATION_RULES = ("average", "weighted", "selection")
"""The IS/RIS combination's ``rule`` (seed 000 §6)."""

CHOICES: dict[str, tuple] = {
    "version": ADS_VERSIONS,
    "variant": TI_VARIANTS,
    "rule": COMBINATION_RULES,
}
"""The values a method's own option may take, checked before any work."""


@dataclass(frozen=True)
class Method:
    """One method: what it needs, what it takes and where its randomness comes from.

    Attributes
    ----------
    name : str
        The ``method=`` name, and the label of its results (bridge adds its reference when it is
        not the default: ``"bridge_warp3"``).
    family : {"posterior", "path"}
        ``"posterior"``: an estimator on posterior draws and a reference fitted to them
        (:mod:`pm_evidence.posterior.api`); ``"path"``: a follow-up on an annealed or tempered
        run made on a :class:`~pm_evidence.PathPlan` (:mod:`pm_evidence.path.api`).
    function : str
        The public function of ``pm_evidence`` that runs this method alone on a model.
    objects : tuple of str
        The keywords of the option objects (:data:`~pm_evidence.core.methods.OPTION_OBJECTS`) its function takes; each of
        their fields may be given by name too.
    own : tuple of str
        Its own keyword options, beyond option objects and NUTS options (values in
        :data:`~pm_evidence.core.methods.CHOICES`, or ``corrected``).
    run : str or None
        Path family: the kind of run it reads (a key of :data:`~pm_evidence.core.methods.RUN_OPTIONS`).
    stream : str
        The stage of ``pm_evidence.core.utils.STAGES`` its own randomness draws from.
    needs_posterior : bool
        Path family: the plan must hold posterior draws (RAISE starts its chains at them).
    records_draws : bool
        Path family: the run keeps ``Delta`` and the rung of every draw (MBAR reads them).
    bias : str
        Which way ``log Z`` errs in expectation (:func:`~pm_evidence.core.method_bias.bias_of`).
    estimate : callable or None
        The function that computes it, joined by :mod:`pm_evidence.registry` (``None`` in
        :data:`~pm_evidence.core.methods.METHOD_TABLE`): posterior family ``estimate(target, idata=, random_seed=,
        progressbar=, **options)``; path family the follow-up ``estimate(run, **own)``.
    """

    name: str
    family: str
    function: str
    objects: tuple[str, ...]
    own: tuple[str, ...] = ()
    run: str | None = None
    stream: str = ""
    needs_posterior: bool = False
    records_draws: bool = False
    bias: str = NO_DEFINITE_SIGN
    estimate: Callable | None = field(default=None, compare=False)

    @property
    def option_classes(self) -> dict[str, type]:
        """Its option objects' classes by keyword."""
        return {keyword: OPTION_OBJECTS[keyword] for keyword in self.objects}

    @property
    def keywords(self) -> frozenset[str]:
        """Every keyword its model-level function takes beyond ``model``, ``idata``,
        ``random_seed`` and ``progressbar``: option objects, their fields, its own options and
        NUTS options."""
        fields_ = {name for cls in self.option_classes.values() for name in field_names(cls)}
        return frozenset({*self.objects, *fields_, *self.own, *SAMPLE_KEYS})


def _posterior(name: str, function: str, objects=("posterior",), stream: str = "", own=()):
    return Method(name, "posterior", function, objects, own=own, stream=stream or name,
                  bias=bias_of(name))  # fmt: skip


def _path(name: str, function: str, run: str, own=(), **row) -> Method:
    objects = ("path", RUN_OPTIONS[run])
    return Method(name, "path", function, objects, own=own, run=run, stream=run,
                  bias=bias_of(name), **row)  # fmt: skip


METHOD_TABLE: dict[str, Method] = {
    row.name: row
    for row in (
        _posterior("is", "importance_sampling"),
        _posterior("ris", "reverse_importance_sampling"),
        _posterior("ds", "discriminance_sampling"),
        _posterior("bridge", "bridge_sampling", ("posterior", "bridge")),
        *(
            _posterior(f"is_ris_{rule}", "is_ris_combination", stream="is_ris")
            for rule in COMBINATION_RULES
        ),
        _path("ais", "annealed_importance_sampling", "annealing"),
        _path("raise", "reverse_annealed_importance_sampling", "reverse_annealing",
              needs_posterior=True),
        _path("ads", "annealed_discriminance_sampling", "annealing", ("version",)),
        _path("rts", "rao_blackwellized_tempered_sampling", "tempering"),
        _path("ti", "thermodynamic_integration", "tempering", ("variant", "corrected")),
        _path("mbar", "mbar", "tempering", records_draws=True),
    )
}  # fmt: skip
"""Every method by name, without its function (``pm_evidence.registry.REGISTRY`` has it)."""


def method_row(name: str, table: Mapping[str, Method] = METHOD_TABLE) -> Method:
    """The row of ``name``.

    Raises
    ------
    EvidenceInputError
        Naming the method asked for and the valid ones.
    """
    if not isinstance(name, str) or name not in table:
        raise EvidenceInputError(
            f"Requested method {name!r} but it must be one of {['auto', *table]}."
        )
    return table[name]


@dataclass(frozen=True)
class Routed:
    """One method's options from one call.

    Attributes
    ----------
    objects : dict
        Each option object the method takes, by keyword: the instance given (or a default one)
        with the fields given by name applied.
    own : dict
        The method's own options that were given.
    sampling : dict
        The NUTS options that were given.
    """

    objects: dict
    own: dict
    sampling: dict



_NONE_IS_UNSET = frozenset({*SAMPLE_KEYS, *OPTION_OBJECTS})


def check_choice(option: str, value) -> None:
    """Refuse a value of an own option outside :data:`~pm_evidence.core.methods.CHOICES`, naming the valid ones."""
    if option in CHOICES and value not in CHOICES[option]:
        raise EvidenceInputError(
            f"Requested {option} {value!r} but it must be one of {list(CHOICES[option])}."
        )


def accepted_options(methods: Sequence[str]) -> set[str]:
    """The keywords at least one of ``methods`` takes (:attr:`Method.keywords`)."""
    return set(SAMPLE_KEYS).union(*(method_row(name).keywords for name in methods))


def option_objects(keywords: Mapping, classes: Mapping[str, type]) -> dict:
    """Each option object of ``classes`` (keyword to class) made from ``keywords``: the
    instance given under its keyword (or a default one) with every field given by name applied.
    Its ``__post_init__`` checks the values.

    Raises
    ------
    EvidenceInputError
        For an object of the wrong class, or a value the class refuses.
    """
    objects = {}
    for keyword, cls in classes.items():
        given = keywords.get(keyword)
        if given is not None and not isinstance(given, cls):
            raise EvidenceInputError(
                f"{keyword}= must be an instance of {cls.__name__}, got {type(given).__name__}."
            )
        names = set(field_names(cls))
        objects[keyword] = replace(
            given or cls(), **{k: v for k, v in keywords.items() if k in names}
        )
    return objects


def route_options(
    methods: str | Sequence[str], keywords: Mapping, *, strict: bool = True
) -> dict[str, Routed]:
    """Sort one call's keyword options to each of ``methods`` (the module docstring's rule).

    Parameters
    ----------
    methods : str or sequence of str
        Method names of :data:`~pm_evidence.core.methods.METHOD_TABLE`.
    keywords : mapping
        The call's keyword options. ``None`` under the keyword of an option object or a NUTS
        option counts as not given (the explicit parameters of the model-level functions default
        to it); a field given by name or an own option keeps ``None`` (``target_se=None``).
    strict : bool
        Refuse a keyword none of ``methods`` takes. ``False``: leave it out (one method's share
        of the options of a list that was checked as a whole).

    Returns
    -------
    dict of str to Routed
        Every method's options, by name.

    Raises
    ------
    EvidenceInputError
        For a keyword no method takes (listing the accepted ones), an option object of the
        wrong class, a value an option object refuses, or a value of an own option outside
        :data:`~pm_evidence.core.methods.CHOICES`.
    """
    methods = [methods] if isinstance(methods, str) else list(methods)
    keywords = {k: v for k, v in keywords.items() if not (v is None and k in _NONE_IS_UNSET)}
    accepted = accepted_options(methods)
    unknown = set(keywords) - accepted
    if unknown and strict:
        raise EvidenceInputError(
            f"Unexpected options {sorted(unknown)} for {', '.join(methods)}; "
            f"accepted here: {sorted(accepted)}."
        )
    sampling = {k: v for k, v in keywords.items() if k in SAMPLE_KEYS}
    routed = {}
    for name in methods:
        row = method_row(name)
        own = {k: keywords[k] for k in row.own if k in keywords}
        for option, value in own.items():
            check_choice(option, value)
        routed[name] = Routed(option_objects(keywords, row.option_classes), own, sampling)
    return routed
