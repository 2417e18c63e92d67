"""Keyword options of the model-level estimators, sorted in one place.

Every model-level estimator (``importance_sampling`` ... ``bridge_sampling``,
``annealed_importance_sampling`` ... ``mbar``) has the signature of
:func:`~pm_evidence.marginal_likelihood` without ``method``:
``f(model=None, *, idata=None, random_seed=None, progressbar=True, **options)``. ``options``
are, by name:

- option objects, frozen dataclasses (``posterior=`` :class:`~pm_evidence.PosteriorOptions`,
  ``bridge=`` :class:`~pm_evidence.BridgeOptions`, ``path=`` :class:`~pm_evidence.PathOptions`,
  ``annealing=`` :class:`~pm_evidence.AnnealingOptions`, ``tempering=``
  :class:`~pm_evidence.TemperingOptions`), or any of their fields (``reference="normal"``,
  ``n_chains=200``);
- the method's own options (ADS's ``version``, TI's ``variant`` and ``corrected``, the IS/RIS
  combination's ``rule``);
- NUTS options (``draws``, ``tune``, ``chains``, ``sample_kwargs``).

:func:`split_options` sorts them and refuses any other name, listing those accepted;
:func:`renamed_keywords` maps a deprecated name to its new one with a ``FutureWarning``, and
:func:`renamed_parameters` does the same for a function's renamed parameter (``fit_reference``'s
``kind`` is now ``reference``); both live in :mod:`pm_evidence.core.utils`, a leaf, so that the
references can use them without importing this module, which reads the model adapter.
"""

from __future__ import annotations

from dataclasses import fields, replace

import pymc as pm

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import renamed_keywords, renamed_parameters
from pm_evidence.model.target import LogDensity

__all__ = [
    "SAMPLE_KEYS",
    "ModelLike",
    "field_names",
    "renamed_keywords",
    "renamed_parameters",
    "split_options",
]

SAMPLE_KEYS = ("draws", "tune", "chains", "sample_kwargs")
"""The NUTS options every model-level function takes by name."""

ModelLike = pm.Model | LogDensity | None
"""What a model-level estimator takes as ``model`` (``None``: the ``with model:`` context)."""


def field_names(cls: type) -> tuple[str, ...]:
    """The field names of an option dataclass, in order."""
    return tuple(f.name for f in fields(cls))


def split_options(keywords: dict, own: tuple[str, ...] = (), **classes: type) -> tuple[dict, dict]:
    """Sort keyword options into option objects, the method's own options and NUTS options.

    Parameters
    ----------
    keywords : dict
        The ``**options`` of a call.
    own : tuple of str
        The method's own option names (taken as given; the method checks their values).
    **classes
        The keyword of each option object and its class (``path=PathOptions``). The keyword
        may hold an instance; every keyword that names a field of one or more of the classes
        sets it in each (``n_chains`` in both annealing and tempering options).

    Returns
    -------
    options : dict
        Each option object by its keyword (the instance given, or a default one, with the
        fields given by name applied), and the own options given.
    sampling : dict
        The NUTS options given.

    Raises
    ------
    EvidenceInputError
        For an object of the wrong class, or a keyword that is none of these (the error lists
        the accepted names).
    """
    accepted = set(SAMPLE_KEYS) | set(own) | set(classes)
    options = {name: keywords[name] for name in own if name in keywords}
    for name, cls in classes.items():
        given = keywords.get(name)
        if given is not None and not isinstance(given, cls):
            raise EvidenceInputError(
                f"{name}= must be an instance of {cls.__name__}, got {type(given).__name__}."
            )
        names = set(field_names(cls))
        accepted |= names
        options[name] = replace(given or cls(), **{k: v for k, v in keywords.items() if k in names})
    unknown = set(keywords) - accepted
    if unknown:
        raise EvidenceInputError(
            f"Unexpected options {sorted(unknown)}; accepted here: {sorted(accepted)}."
        )
    sampling = {k: v for k, v in keywords.items() if k in SAMPLE_KEYS}
    return options, sampling
