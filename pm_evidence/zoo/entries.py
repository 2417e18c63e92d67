"""Entries of the model zoo: :class:`ZooModel` holds a builder, how its gold is computed, its
tags, the gold itself (computed on first use and cached) and the joint log density written with
NumPy/SciPy; :func:`entry` binds the gold and the log density to the builder's own default
arguments; :func:`select_entries` picks entries by name or tag.

The gold values themselves are computed by the family modules with the rules of
:mod:`pm_evidence.zoo.gold`, or, for models without a separate gold function, by the builder.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pymc as pm

from pm_evidence.zoo.gold import Gold

__all__ = ["ZooModel", "entry", "select_entries"]


@dataclass(frozen=True)
class ZooModel:
    """One zoo entry.

    Attributes
    ----------
    name : str
    build : callable
        ``build() -> (model, gold_log_z)`` with the builder's default arguments.
    gold_method : str
        How the gold value is computed ("closed form", "enumeration", "quadrature 2-D", ...).
    tags : frozenset of str
        Properties methods may trip on: "bounded", "simplex", "truncated", "censored",
        "missing", "discrete", "mixed_discrete", "unbounded_discrete", "multimodal",
        "large", "cholesky", "ordered", "zerosum", "data", "potential", "glm", ...
    gold : callable
        ``gold() -> Gold``: the gold ``log Z`` with its numerical error (cached).
    log_joint : callable or None
        ``log_joint(values) -> float``: the joint log density ``log p(y, theta)`` written with
        NumPy/SciPy, at the constrained values of the free variables given by their names
        without the model prefix (e.g. ``{"mu": 0.3, "sigma": 1.2}``). Continuous densities
        are w.r.t. Lebesgue measure on the variable's coordinates, except a simplex (its first
        ``K - 1`` coordinates) and a zero-sum vector (the volume of its plane). None for the
        models whose gold is computed inside the builder.
    """

    name: str
    build: Callable[[], tuple[pm.Model, float]]
    gold_method: str
    tags: frozenset[str]
    gold: Callable[[], Gold]
    log_joint: Callable[[Mapping[str, np.ndarray]], float] | None = None

    @property
    def gold_error(self) -> float:
        """Absolute numerical error of the gold ``log Z`` (nats)."""
        return self.gold().error


def entry(name, builder, gold_method, tags, gold_fn=None, log_joint_fn=None, **overrides):
    """A registry entry whose gold and log joint use the builder's own default arguments
    (read from its signature, so the three cannot drift apart), updated by ``overrides``."""
    kwargs = {
        k: p.default
        for k, p in inspect.signature(builder).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    kwargs.update(overrides)
    build = functools.partial(builder, **overrides) if overrides else builder
    if gold_fn is None:

        def gold() -> Gold:
            return Gold(build()[1], 0.0)

    else:
        gold = functools.partial(gold_fn, **kwargs)
    log_joint = None if log_joint_fn is None else functools.partial(log_joint_fn, **kwargs)
    return ZooModel(name, build, gold_method, frozenset(tags), gold, log_joint)


def select_entries(
    entries: tuple[ZooModel, ...],
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
) -> tuple[ZooModel, ...]:
    """The ``entries`` named in ``names`` and/or carrying any of ``tags`` (all when both are
    None), in their order.

    Raises
    ------
    KeyError
        If a name is not among the entries (the message lists the known names).
    """
    selected = entries
    if names is not None:
        names = list(names)
        known = [m.name for m in entries]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise KeyError(f"Unknown zoo models {unknown}; known: {sorted(known)}.")
        selected = tuple(m for m in selected if m.name in names)
    if tags is not None:
        wanted = set(tags)
        selected = tuple(m for m in selected if m.tags & wanted)
    return selected
