"""Where each free variable of a PyMC model sits in the flat unconstrained vector.

A variable has two shapes: its *constrained* shape (the shape of a posterior draw, e.g. ``(5,)``
for a Dirichlet over 5 categories) and its *value* shape (the shape of its unconstrained value
variable, ``(4,)`` after the simplex transform). The flat vector ``x`` concatenates the value
variables in ``model.free_RVs`` order; :class:`Layout` records both shapes and the slice of ``x``
that each variable occupies, and which entries are discrete (and with how many values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.exceptions import NotConstantValueError
from pymc.util import get_transformed_name
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

from pm_evidence.model.compile_mode import QUICK_PYTHON_LINKER, python_linker_function

__all__ = ["Layout", "VariableSlice", "variable_shapes"]


def variable_shapes(model: pm.Model) -> dict[str, tuple[int, ...]]:
    """The shapes of the free variables, constrained and unconstrained, by name: what PyMC's
    ``model.eval_rv_shapes()`` returns, evaluated on the Python linker
    (``compile_mode.QUICK_PYTHON_LINKER``)."""
    names, outputs = [], []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms[rv]
        if transform is not None:
            names.append(get_transformed_name(rv.name, transform))
            outputs.append(pt.as_tensor(transform.forward(rv, *rv.owner.inputs).shape))
        names.append(rv.name)
        outputs.append(pt.as_tensor(rv.shape))
    shapes = python_linker_function(
        [],
        outputs,
        givens=[(obs, model.rvs_to_values[obs]) for obs in model.observed_RVs],
        mode=QUICK_PYTHON_LINKER,
        on_unused_input="ignore",
    )()
    return {name: tuple(int(s) for s in shape) for name, shape in zip(names, shapes, strict=True)}


@dataclass(frozen=True)
class VariableSlice:
    """Where one free variable sits in the flat unconstrained vector.

    Attributes
    ----------
    name : str
        The variable's (constrained) name, as in a posterior DataTree.
    value_name : str
        The name of its unconstrained value variable (e.g. ``sigma_log__``, ``p_simplex__``).
    shape : tuple of int
        The shape of one constrained draw (``(K,)`` for a Dirichlet over ``K`` categories).
    value_shape : tuple of int
        The shape of the value variable (``(K - 1,)`` for that Dirichlet).
    start, stop : int
        Its slice of the flat vector (``stop - start = prod(value_shape)``).
    transformed : bool
        Whether PyMC applies a transform (log, logodds, simplex, Cholesky, ordered, ...).
    levels : int
        Number of values of each entry of a finite discrete variable (2 for Bernoulli, ``L``
        for a Categorical over ``L`` values, ``upper - lower + 1`` for a DiscreteUniform); 0 for
        continuous variables; -1 for discrete variables with unbounded or unknown support
        (Poisson, Binomial with a random ``n``, ...).
    lowest : int
        The smallest value of a finite discrete variable (its values are ``lowest + 0..L-1``):
        ``lower`` of a DiscreteUniform, 0 otherwise.
    """

    name: str
    value_name: str
    shape: tuple[int, ...]
    value_shape: tuple[int, ...]
    start: int
    stop: int
    transformed: bool
    levels: int = 0
    lowest: int = 0

    @property
    def discrete(self) -> bool:
        return self.levels != 0


def _levels(rv, discrete: bool) -> tuple[int, int]:
    """``(levels, lowest)`` of a free variable (see :class:`VariableSlice`)."""
    op = rv.owner.op
    if isinstance(op, BernoulliRV):
        return 2, 0
    try:
        if isinstance(op, CategoricalRV):
            n_levels = rv.owner.inputs[-1].shape[-1]  # the number of probabilities
            (n_levels,) = pm.pytensorf.constant_fold([n_levels])
            return int(n_levels), 0
        if isinstance(op, DiscreteUniformRV):
            lower, upper = (
                np.unique(v) for v in pm.pytensorf.constant_fold(op.dist_params(rv.owner))
            )
            if lower.size == 1 and upper.size == 1:  # the same range for every entry
                return int(upper[0] - lower[0] + 1), int(lower[0])
    except NotConstantValueError:  # known only at run time: not finite here
        pass
    return (-1 if discrete else 0), 0


@dataclass(frozen=True)
class Layout:
    """The flat-vector layout of a model's free variables (see module docstring)."""

    variables: tuple[VariableSlice, ...]

    @classmethod
    def from_model(cls, model: pm.Model) -> Layout:
        shapes = variable_shapes(model)
        discrete_values = set(model.discrete_value_vars)
        variables, start = [], 0
        for rv in model.free_RVs:
            value = model.rvs_to_values[rv]
            value_shape = tuple(int(s) for s in shapes[value.name])
            size = int(np.prod(value_shape, dtype=int))
            levels, lowest = _levels(rv, value in discrete_values)
            variables.append(
                VariableSlice(
                    name=rv.name,
                    value_name=value.name,
                    shape=tuple(int(s) for s in shapes[rv.name]),
                    value_shape=value_shape,
                    start=start,
                    stop=start + size,
                    transformed=model.rvs_to_transforms.get(rv) is not None,
                    levels=levels,
                    lowest=lowest,
                )
            )
            start += size
        return cls(tuple(variables))

    @property
    def dim(self) -> int:
        """Length of the flat unconstrained vector."""
        return self.variables[-1].stop if self.variables else 0

    @property
    def var_names(self) -> list[str]:
        """Names of the free variables (constrained space), in flat-vector order."""
        return [v.name for v in self.variables]

    @property
    def coordinate_names(self) -> list[str]:
        """One label per entry of the flat unconstrained vector, e.g. ``beta_log__[2]``."""
        labels = []
        for v in self.variables:
            if v.value_shape == ():
                labels.append(v.value_name)
            else:
                labels.extend(f"{v.value_name}{list(idx)}" for idx in np.ndindex(v.value_shape))
        return labels

    def _per_entry(self, values) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.asarray(values[0]).dtype if values else int)
        for v, value in zip(self.variables, values, strict=True):
            out[v.start : v.stop] = value
        return out

    @property
    def levels(self) -> np.ndarray:
        """Per flat entry: 2 (Bernoulli), ``L`` (Categorical), 0 (continuous), -1 (discrete
        with unbounded support)."""
        return self._per_entry([v.levels for v in self.variables])

    @property
    def discrete_mask(self) -> np.ndarray:
        return self.levels != 0

    @property
    def lowest(self) -> np.ndarray:
        """Per flat entry: the smallest value of a finite discrete variable, 0 elsewhere."""
        return self._per_entry([v.lowest for v in self.variables])

    @property
    def binary_mask(self) -> np.ndarray:
        """Entries of free variables with the values 0 and 1 (Bernoulli)."""
        return (self.levels == 2) & (self.lowest == 0)

    @property
    def finite_levels(self) -> np.ndarray:
        """Number of values of each entry of a finite discrete variable; 0 elsewhere."""
        return np.maximum(self.levels, 0)

    @property
    def discrete_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variables if v.discrete)

    @property
    def unbounded_discrete_names(self) -> tuple[str, ...]:
        """Discrete variables whose values cannot be enumerated (Poisson, NegativeBinomial...)."""
        return tuple(v.name for v in self.variables if v.levels == -1)
