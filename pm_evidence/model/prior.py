"""Forward draws of a model's free variables from the prior, a batch per compiled call.

:class:`PriorSampler` compiles once per model a function ``n -> draws`` of all free variables
(constrained values with a leading dimension ``n``). The batch is drawn in one call: every
*root* random variable (one whose parameters depend on no other free variable) is rebuilt with a
leading ``n`` in its size, and the rest of the prior graph is vectorized over it with
:func:`pytensor.graph.replace.vectorize_graph`, so a hierarchical ``x ~ N(mu, 1)`` gets one
``mu`` per row. Variables that PyMC builds as ``SymbolicRandomVariable`` (LKJ, ZeroSumNormal,
censored or truncated priors, mixtures, ``CustomDist``) cannot be batched this way; for models
with them the compiled function draws one point per call inside a loop (``batched`` is then
False, a property tests check).

Variables declared with an ``ordered`` transform (PyMC's prior density is then the distribution
cut to ``x_1 < ... < x_K``, not renormalized, and its forward draws ignore the order) are drawn
by sorting: :func:`ordered_prior` says when that gives the model's prior, renormalized, and by
what factor. Variables declared with another transform than their distribution's default (an
``Interval`` on a ``Normal`` or on a ``CustomDist``) may cut the prior the same way:
:func:`measure_cut` says from forward draws whether they do, and the mass they keep
(:class:`PriorCut`); the draws outside are rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import reseed_rngs
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import spawn_seed
from pm_evidence.model.compile_mode import (
    PYTHON_LINKER,
    without_c_compiler,
    without_garbage_collection,
)
from pm_evidence.model.layout import variable_shapes
from pm_evidence.model.noncentering import NONCENTERING_TRANSFORMS

__all__ = [
    "MIN_PRIOR_CUT_MASS",
    "OrderedPrior",
    "PriorCut",
    "PriorSampler",
    "exact_log_mass",
    "measure_cut",
    "ordered_prior",
    "require_no_problems",
    "restricting_transforms",
]


def require_no_problems(problems: tuple[str, ...]) -> None:
    """Raise :class:`EvidenceInputError` naming why the prior cannot be drawn as a reference
    (``problems``), if there is anything to name."""
    if problems:
        raise EvidenceInputError(
            "The prior cannot be drawn forward as a reference distribution: "
            + "; ".join(problems)
            + ". Use a fitted reference (reference='student_t' or 'normal')."
        )


@dataclass(frozen=True)
class OrderedPrior:
    r"""How forward draws become draws of a model's prior where ``ordered`` transforms restrict it.

    For a vector ``x`` of ``K`` components that are i.i.d. with density ``p`` given the
    variable's parents, declared with ``transform=ordered``, PyMC's prior density is
    ``prod_i p(x_i)`` on ``x_1 < ... < x_K`` (the ordering's Jacobian on the unconstrained
    side), a region of prior mass ``1 / K!``. The sorted components of ``K`` i.i.d. draws (the
    order statistics) have density

    .. math:: p_{(\cdot)}(x) = K! \prod_{i=1}^{K} p(x_i), \qquad x_1 < \dots < x_K,

    so sorting the forward draws samples the model's prior renormalized, whose log density is
    PyMC's plus ``log_normalizer = sum log K!`` over the ordered vectors, and
    ``Z = E_sorted[L] / K!`` for the model as written (seed 000 §3: a normalized ``p0``).

    Attributes
    ----------
    sorted : tuple of (str, bool)
        The variables sorted along their last axis, with ``True`` where the order is
        descending (``Ordered(ascending=False)``).
    log_normalizer : float
        ``log`` of the factor from PyMC's prior density to the normalized one (0 without
        ``ordered`` variables).
    problems : tuple of str
        Why the prior cannot be drawn this way (empty when it can): a transform other than the
        distribution's default and ``ordered``, ``ordered(positive=True)``, components that are
        not exchangeable, or a free variable that depends on the ordered one.
    """

    sorted: tuple[tuple[str, bool], ...] = ()
    log_normalizer: float = 0.0
    problems: tuple[str, ...] = ()

    def sort(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Forward draws ``{name: (n, *shape)}`` with the ordered variables sorted."""
        values = dict(values)
        for name, descending in self.sorted:
            ordered = np.sort(values[name], axis=-1)
            values[name] = ordered[..., ::-1] if descending else ordered
        return values

    def require_sampleable(self) -> None:
        """Raise :class:`EvidenceInputError` naming the problems, if there are any."""
        require_no_problems(self.problems)


def _ordered_and_other_transforms(model: pm.Model, rv) -> tuple[list, list]:
    """The parts of ``rv``'s value transform (a chain's links, or the transform alone) that are
    ``ordered``, and those that are neither ``ordered`` nor the distribution's default."""
    from pymc.distributions.transforms import Ordered, _default_transform
    from pymc.logprob.transforms import ChainedTransform

    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return [], []
    default = _default_transform(rv.owner.op, rv)
    parts = transform.transform_list if isinstance(transform, ChainedTransform) else [transform]
    ordered = [p for p in parts if isinstance(p, Ordered)]
    other = [
        p for p in parts
        if p is not default and type(p) is not type(default) and not isinstance(p, Ordered)
    ]  # fmt: skip
    return ordered, other


def _exchangeable(param, rv_ndim: int, free) -> bool | None:
    """Whether a distribution parameter is constant along the variable's last axis: by its
    static shape, else by its value where it depends on no free variable (``None``: cannot
    tell, it depends on free variables)."""
    if param.ndim < rv_ndim or param.type.shape[-1] == 1:
        return True
    if set(ancestors([param])) & free:
        return None
    value = np.asarray(param.eval())
    return bool(np.all(value == value[..., :1]))


def ordered_prior(model: pm.Model) -> OrderedPrior:
    """:class:`OrderedPrior` of ``model``: which free variables are sorted after a forward draw
    and the log normalizer, or the problems where sorting does not draw the model's prior.

    Sorting is exact when every transform is the distribution's default, alone or followed by
    ``ordered`` (monotone increasing maps: the order of the values is the order of their
    images), the variable is univariate with parameters constant along its last axis (its
    components i.i.d. given its parents) and no other free variable depends on it (its
    children's draws would be drawn from the unsorted values)."""
    free = set(model.free_RVs)
    shapes = {}
    sorted_, problems, log_normalizer = [], [], 0.0
    for rv in model.free_RVs:
        ordered, other = _ordered_and_other_transforms(model, rv)
        if not ordered:
            continue  # another transform alone: a possible cut, measured by PriorCut
        if other:
            problems.append(
                f"{rv.name!r} has an ordered transform chained with another one "
                f"({type(other[0]).__name__}): sorting forward draws cannot draw that prior"
            )
            continue
        reason = ""
        if len(ordered) > 1 or ordered[0].positive:
            reason = "only one plain ordered transform is drawn by sorting (not positive=True)"
        elif not isinstance(rv.owner.op, RandomVariable) or rv.owner.op.ndim_supp != 0:
            reason = "it is not a univariate distribution, so its components are not i.i.d."
        elif any(
            _exchangeable(p, rv.ndim, free) is not True for p in rv.owner.op.dist_params(rv.owner)
        ):
            reason = (
                "its distribution's parameters differ along the ordered axis, so its "
                "components are not exchangeable"
            )
        elif any(rv in ancestors(other_rv.owner.inputs) for other_rv in free - {rv}):
            reason = "another free variable depends on it"
        if reason:
            problems.append(
                f"{rv.name!r} has an ordered transform and cannot be drawn by sorting "
                f"independent draws: {reason}"
            )
            continue
        shapes = shapes or variable_shapes(model)  # one evaluation, for the first ordered one
        shape = tuple(int(s) for s in shapes[rv.name])
        n_vectors = math.prod(shape[:-1])
        sorted_.append((rv.name, not ordered[0].ascending))
        log_normalizer += n_vectors * math.lgamma(shape[-1] + 1)
    return OrderedPrior(tuple(sorted_), log_normalizer, tuple(problems))


def _root_batched(model: pm.Model, n: pt.TensorVariable, shapes: dict) -> list | None:
    """The free variables as graphs with a leading batch dimension ``n``, or ``None`` when some
    variable is not a plain ``RandomVariable``.

    Variables are rebuilt in the model's order (parents first), each with the size
    ``(n, *batch_shape)`` and its parameters vectorized over the parents already rebuilt; a
    batched parameter gets unit axes after ``n`` so that it lines up with the batch shape.
    (PyTensor's own vectorization of a random variable with an explicit size extends the size
    only by the batch dimensions of its first parameter, and fails when another one is batched,
    e.g. ``beta ~ N(0, sqrt(sigma2), shape=d)``.)
    """
    free = list(model.free_RVs)
    if not all(isinstance(rv.owner.op, RandomVariable) for rv in free):
        return None
    replace = {}
    for rv in free:
        op, node = rv.owner.op, rv.owner
        batch_shape = shapes[rv.name][: rv.ndim - op.ndim_supp]  # constants, not rv.shape
        size = pt.stack([n, *(np.int64(s) for s in batch_shape)])
        params = list(op.dist_params(node))
        if replace:
            new_params = vectorize_graph(params, replace=replace)
            for i, (old, new) in enumerate(zip(params, new_params, strict=True)):
                if new.ndim == old.ndim:
                    continue  # not batched: broadcasts against (n, *batch_shape)
                n_missing = len(batch_shape) - (old.ndim - op.ndims_params[i])
                params[i] = (
                    pt.expand_dims(new, tuple(range(1, 1 + n_missing))) if n_missing else new
                )
        new_node = op.make_node(op.rng_param(node), size, *params)
        replace[rv] = new_node.outputs[1]
    batched = [replace[rv] for rv in free]
    if any(
        var.owner is not None and isinstance(var.owner.op, SymbolicRandomVariable)
        for var in ancestors(batched)
    ):
        return None
    return batched


class PriorSampler:
    """Draws of every free variable from the prior, compiled once per model.

    Both forms are built on PyTensor's Python linker, so nothing is compiled for numba.

    * A batched draw (one call of ``n`` draws per variable): NumPy's generators draw each batch
      whole, as fast as the Numba backend (the same values to rounding: normal, half-normal,
      gamma, Dirichlet and uniform draws equal, beta within 2e-16; 3.7 s saved on a linear
      regression's first call from an empty cache).
    * The fallback, one call per draw (an LKJ prior, a ``ZeroSumNormal``): the same values as
      the Numba backend to 4e-16, and slower per draw (``lkj_2d``: 56 against 20 us; a model
      with every transform: 400 against 190 us). But PyTensor cannot cache that Numba function
      on disk (it holds random generators): it took 1-10 s to compile from empty caches, and
      0.3-1.8 s again in every new process (docs/benchmarks.rst).

    Parameters
    ----------
    model : pymc.Model
    ordering : OrderedPrior, optional
        :func:`ordered_prior` of the model (computed when not given).
    """

    @without_garbage_collection()
    def __init__(self, model: pm.Model, ordering: OrderedPrior | None = None):
        self.var_names = [rv.name for rv in model.free_RVs]
        self.ordering = ordered_prior(model) if ordering is None else ordering
        n = pt.scalar("n", dtype="int64")
        batched = _root_batched(model, n, variable_shapes(model))
        self.batched = batched is not None
        inputs, outputs = ([n], batched) if self.batched else ([], model.free_RVs)
        with without_c_compiler():
            self._fn, updates = pm_compile(
                inputs=inputs, outputs=outputs, random_seed=False, return_updates=True,
                mode=PYTHON_LINKER,
            )  # fmt: skip
        self._rngs = list(updates)

    def draw(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws: ``{name: array (n, *shape)}``; the compiled generators are reseeded
        from ``rng`` first, so the draws depend on ``rng`` only. Variables with an ``ordered``
        transform that ``ordering`` can sort are sorted (draws of the prior renormalized to
        the ordered region; :class:`OrderedPrior`)."""
        reseed_rngs(self._rngs, spawn_seed(rng))
        if self.batched:
            values = self._fn(np.int64(n))
        else:
            draws = [self._fn() for _ in range(n)]
            values = [np.stack([d[i] for d in draws]) for i in range(len(self.var_names))]
        named = {name: np.asarray(v) for name, v in zip(self.var_names, values, strict=True)}
        return self.ordering.sort(named)


#: A prior whose transforms keep less than this share of its forward draws is not drawn by
#: rejection (a hundred forward draws or more per kept one): it is refused as a reference.
MIN_PRIOR_CUT_MASS = 0.01


@dataclass(frozen=True)
class PriorCut:
    r"""Where transforms cut the prior: what share of its forward draws they keep.

    A free variable declared with a transform that is not its distribution's default (for
    example ``pm.Normal("x", 0, 1, transform=Interval(-1, 1))``) has PyMC's prior density
    ``p(x)`` on the transform's image ``A`` only, not renormalized: the model's prior is the
    distribution cut to ``A``, of mass

    .. math:: m = P_p(x \in A), \qquad p_A(x) = p(x) \mathbb{1}_A(x) / m,

    and ``Z = m E_{p_A}[L]`` for the model as written (seed 000 §3 needs a normalized ``p0``:
    ``log p0 = log p - log m``). Forward draws of ``p`` kept where they fall in ``A`` are
    draws of ``p_A`` (rejection sampling). Many such transforms cut nothing: a ``CustomDist``
    or a bounded distribution whose draws stay inside its ``Interval`` transform has
    ``m = 1``.

    ``m`` is the product of an exact factor per cut variable whose mass the distribution's
    CDF gives (a univariate distribution with constant parameters under an ``Interval``,
    ``log`` or ``logodds`` transform with constant bounds: ``F(b) - F(a)`` per element), times
    the share of forward draws inside the other cut variables' regions among those inside the
    exact ones', with its binomial SE ``sqrt((1 - m_hat) / k)`` on ``log m`` (``k`` draws kept).

    Attributes
    ----------
    candidates : tuple of str
        Variables with a transform other than their distribution's default (and ``ordered``);
        every prior draw is kept only where all of them map to finite unconstrained values.
    cut : tuple of str
        The candidates whose forward draws left the transform's image (empty: nothing is cut).
    log_mass, log_mass_se : float
        ``log m`` and its standard error (0 where every factor is exact).
    how : str
        How ``m`` was found, for the diagnostics.
    problems : tuple of str
        Why rejection cannot draw this prior (a mass below :data:`MIN_PRIOR_CUT_MASS`).
    """

    candidates: tuple[str, ...] = ()
    cut: tuple[str, ...] = ()
    log_mass: float = 0.0
    log_mass_se: float = 0.0
    how: str = ""
    problems: tuple[str, ...] = ()

    def require_sampleable(self) -> None:
        """Raise :class:`EvidenceInputError` naming the problems, if there are any."""
        require_no_problems(self.problems)

    def inside(self, flat: np.ndarray, layout) -> dict[str, np.ndarray]:
        """Per candidate, whether each row of flat unconstrained values ``(n, dim)`` (NaN
        outside a transform's image: ``ValueMaps.unconstrained_rows``) lies inside it."""
        return {
            v.name: np.all(np.isfinite(flat[:, v.start : v.stop]), axis=1)
            for v in layout
            if v.name in self.candidates
        }


def restricting_transforms(model: pm.Model) -> tuple[str, ...]:
    """The free variables whose transform is neither their distribution's default nor
    ``ordered`` (alone or chained): their forward draws may leave the transform's image. The
    non-centered coordinates of :mod:`~pm_evidence.model.noncentering` map onto the whole
    line and cut nothing."""
    return tuple(
        rv.name
        for rv in model.free_RVs
        if any(
            not isinstance(t, NONCENTERING_TRANSFORMS)
            for t in _ordered_and_other_transforms(model, rv)[1]
        )
    )


def _image_bounds(model: pm.Model, rv) -> tuple | None:
    """Constant bounds ``(a, b)`` of the image of ``rv``'s transform, where it is one
    ``Interval``, ``log`` or ``logodds`` transform whose bounds depend on no free variable."""
    from pymc.logprob.transforms import IntervalTransform, LogOddsTransform, LogTransform

    transform = model.rvs_to_transforms.get(rv)
    if isinstance(transform, LogTransform):
        return 0.0, np.inf
    if isinstance(transform, LogOddsTransform):
        return 0.0, 1.0
    if not isinstance(transform, IntervalTransform):
        return None
    a, b, _, _ = transform.get_a_and_b(rv.owner.inputs)
    free = set(model.free_RVs)
    bounds = []
    for bound, missing in ((a, -np.inf), (b, np.inf)):
        if bound is None:
            bounds.append(missing)
            continue
        bound = pt.as_tensor(bound)
        if set(ancestors([bound])) & free:
            return None
        bounds.append(np.asarray(bound.eval(), dtype=float))
    return tuple(bounds)


def exact_log_mass(model: pm.Model, rv, shape: tuple) -> float | None:
    """``sum log (F(b) - F(a))`` over the elements of ``rv``: the log prior mass its transform
    keeps, from its distribution's CDF; ``None`` where the CDF cannot give it (a multivariate
    or symbolic distribution, parameters or bounds that depend on free variables, no
    ``logcdf``)."""
    op = rv.owner.op
    if not isinstance(op, RandomVariable) or op.ndim_supp != 0:
        return None
    free = set(model.free_RVs)
    if set(ancestors(op.dist_params(rv.owner))) & free:
        return None
    bounds = _image_bounds(model, rv)
    if bounds is None:
        return None
    try:
        log_cdf = [
            np.broadcast_to(
                np.asarray(pm.logcdf(rv, pt.as_tensor(np.broadcast_to(bound, shape))).eval()),
                shape,
            )
            for bound in bounds
        ]
    except NotImplementedError:
        return None
    lo, hi = (np.asarray(v, dtype=float) for v in log_cdf)
    with np.errstate(divide="ignore"):
        log_mass = hi + np.log1p(-np.exp(lo - hi))  # log(F(b) - F(a)), F(a) < F(b)
    return float(np.sum(log_mass)) if np.all(np.isfinite(log_mass)) else None


def measure_cut(model: pm.Model, candidates: tuple[str, ...], inside: dict) -> PriorCut:
    """:class:`PriorCut` of ``model`` from forward draws: ``inside[name]`` is a boolean array,
    one entry per draw, ``True`` where the draw of ``name`` lies in its transform's image."""
    if not candidates:
        return PriorCut()
    cut = tuple(name for name in candidates if not np.all(inside[name]))
    n_draws = len(next(iter(inside.values())))
    if not cut:
        return PriorCut(
            candidates, how=f"all {n_draws} forward draws inside every transform's image"
        )
    rvs = {rv.name: rv for rv in model.free_RVs}
    shapes = variable_shapes(model)
    log_mass, exact = 0.0, []
    for name in cut:
        value = exact_log_mass(model, rvs[name], tuple(int(s) for s in shapes[name]))
        if value is not None:
            log_mass += value
            exact.append(name)
    estimated = [name for name in cut if name not in exact]
    given = np.all([inside[name] for name in exact], axis=0) if exact else np.ones(n_draws, bool)
    kept = np.all([inside[name] for name in estimated], axis=0) & given if estimated else given
    n_given, n_kept = int(given.sum()), int(kept.sum())
    how, log_mass_se = [], 0.0
    if exact:
        how.append(f"exact from the CDF for {exact}")
    if estimated:
        share = n_kept / max(n_given, 1)
        if n_kept:
            log_mass += math.log(share)
            log_mass_se = math.sqrt((1.0 - share) / n_kept)
        else:
            log_mass = -math.inf
        how.append(f"{n_kept} of {n_given} forward draws inside for {estimated}")
    problems = ()
    if log_mass < math.log(MIN_PRIOR_CUT_MASS):
        problems = (
            f"the transforms of {list(cut)} keep {math.exp(log_mass):.2g} of the prior's forward "
            f"draws (below {MIN_PRIOR_CUT_MASS:g}), too few to draw that prior by rejection",
        )
    return PriorCut(candidates, cut, log_mass, log_mass_se, "; ".join(how), problems)
