"""Exchangeable symmetries of a posterior (label switching), and what they ask of a reference.

A mixture with exchangeable components (``y ~ sum_k w_k N(mu_k, sigma_k^2)`` with i.i.d. priors
on the components' parameters) has a density invariant under every relabelling ``g`` of the
components, ``f(g x) = f(x)``, and up to ``K!`` mirror modes. NUTS chains rarely cross between
them. A reference ``q`` fitted to draws of one mode misses the others, and bridge, DS, IS and
reverse IS then estimate the mass of that mode, ``Z / |G|``: ``log Z`` comes out too low by
``log |G|`` (``log 2`` for two components) with a small standard error.

The remedy is the symmetrized reference (:class:`~pm_evidence.references.SymmetrizedReference`)

.. math::

    q_G(x) = \\frac{1}{|G|} \\sum_{g \\in G} q(g x),

normalized for any normalized ``q`` because every ``g`` here is an affine map of the flat
unconstrained vector with ``|det g| = 1``. For a ``G``-invariant ``f`` the ratio ``f / q_G`` is
``G``-invariant, so its expectation under ``f`` equals its expectation under ``f`` restricted to
any fundamental domain ``D`` of ``G`` (a set whose images ``g D`` tile the space; each holds
``Z / |G|`` of the mass): with ``f_D = |G| f 1_D / Z``,

.. math::

    E_{f_D}[\\varphi] = \\frac{|G|}{Z} \\int_D \\varphi f
    = \\frac{1}{Z} \\sum_{g \\in G} \\int_{g D} \\varphi f = E_f[\\varphi]
    \\quad \\text{for } \\varphi \\circ g = \\varphi.

Posterior draws relabelled into one mirror image (:func:`relabel`) are draws of ``f_D``, and so
are chains that stay in one of well-separated mirror modes; the estimators' identities (bridge:
Meng & Wong 1996 eq. (4.1); IS, reverse IS, DS: seed 000 §3-4) hold with ``q_G`` in place of
``q`` whichever modes the chains visited.

The group actions (:func:`find_symmetry`)
    Candidates permute one axis of length ``K >= 2`` of one or several free variables jointly
    (the component axis of ``means``, ``sigmas`` and ``weights``). Where a variable's transform
    acts entry by entry (none, ``log``, ``logodds``, ``interval``) or along other axes, relabelling
    its constrained values permutes its unconstrained entries (the Jacobian terms are permuted
    with them). Along the core axis of a Dirichlet (``simplex``) or a ``ZeroSumNormal``
    (``zerosum``), relabelling is an affine map of the value, ``v -> M v + b``, read here from
    the model's own transforms and checked to be affine with ``|det M| = 1``. An ``ordered``
    transform breaks the symmetry on purpose and is never permuted along its core axis;
    Cholesky-packed variables are never permuted. A candidate is kept when ``log f`` (prior and
    likelihood, transforms' Jacobians included) is unchanged by it at a few posterior draws, to
    rounding (:data:`INVARIANCE_RTOL`). Kept transpositions generate the group: on each set of
    jointly permuted axes, the product of the symmetric groups of the blocks of components they
    connect. Symmetries that no transposition generates (a cyclic shift alone) are not found.

References
----------
Stephens (2000), "Dealing with label switching in mixture models", JRSS B 62 (relabelling);
Marin, Mengersen and Robert (2005), "Bayesian modelling and inference on mixtures of
distributions", §4 (pivotal relabelling); Frühwirth-Schnatter (2004), "Estimating marginal
likelihoods for mixture and Markov switching models using bridge sampling techniques",
Econometrics Journal 7 (the symmetrized importance density, eq. (11)); Meng and Wong (1996).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from arviz_stats.base import array_stats
from scipy import stats

from pm_evidence.core.options import check_symmetrize_option
from pm_evidence.core.utils import RHAT_MAX, max_rhat, renamed_module_names

__all__ = [
    "MAX_GROUP_SIZE",
    "AffineAction",
    "ComponentAxis",
    "MirrorCoverage",
    "PermutationFactor",
    "Relabelling",
    "SymmetryDecision",
    "SymmetryGroup",
    "SymmetrySearch",
    "check_coverage",
    "find_symmetry",
    "plan_symmetry",
    "relabel",
]

# old names (one name per concept), with a FutureWarning
__getattr__ = renamed_module_names(
    globals(),
    {
        "Coverage": "MirrorCoverage",
        "MAX_CANDIDATES": "MAX_SYMMETRY_CANDIDATES",
    },
)

logger = logging.getLogger(__name__)

# The largest group a symmetrized reference averages over: all relabellings of 5 components.
# A reference evaluation then costs 120 evaluations of the fitted one (cheap next to log f);
# beyond it the orbit sums grow as K! and the result is flagged instead.
MAX_GROUP_SIZE = 120
# ``|log f(g x) - log f(x)| <= INVARIANCE_RTOL * (1 + |log prior| + |log lik|)`` at every test
# draw makes ``g`` a symmetry. Permuting components only reorders sums, so in float64 the two
# sides agree to a few ulps of the terms; in float32 to about 1e-6 of them.
INVARIANCE_RTOL = {"float64": 1e-9, "float32": 1e-4}
# Posterior draws at which a candidate is screened, then confirmed.
N_SCREEN_POINTS = 2
N_TEST_POINTS = 6
# Subsets of same-length axes tried jointly (beyond: each axis alone and all together), and
# candidate (subset, transposition) pairs screened at most.
MAX_JOINT_AXES = 6
MAX_SYMMETRY_CANDIDATES = 600
# Above this many components only adjacent transpositions are screened (K - 1 instead of
# K (K - 1) / 2): enough to find a symmetric group over consecutive components.
MAX_ALL_TRANSPOSITIONS = 8
# Draws cover the mirror images when no mean of ``g x - x`` differs from 0 by more than
# ``COVERAGE_SHIFT`` posterior standard deviations and by more than the family-wise
# ``COVERAGE_LEVEL`` Monte Carlo error, and the chains agree (R-hat <= RHAT_MAX).
COVERAGE_SHIFT = 0.5
COVERAGE_LEVEL = 1e-3
MAX_RELABEL_ITERATIONS = 50

# transforms that act entry by entry (relabelling permutes the unconstrained entries)
_ELEMENTWISE = (
    "LogTransform",
    "LogOddsTransform",
    "IntervalTransform",
    "LogExpM1",
    "CircularTransform",
)
# transforms along their last ``ndim_supp`` axes whose relabelling is affine on the value
_AFFINE_CORE = ("SimplexTransform", "ZeroSumTransform", "SumTo1")


# ---------------------------------------------------------------------- group actions
@dataclass(frozen=True)
class ComponentAxis:
    """One axis of one free variable that a relabelling permutes.

    Attributes
    ----------
    variable : str
        The free variable's name.
    axis : int
        The axis of its constrained draw (non-negative), of length ``length``.
    length : int
        Number of components ``K``.
    affine : bool
        ``True`` along the core axis of a simplex or zero-sum transform, where relabelling the
        constrained values is an affine map ``M v + b`` of the value (``K - 1`` entries);
        ``False`` where it permutes the unconstrained entries.
    start, stop : int
        The variable's slice of the flat vector.
    value_shape : tuple of int
        Shape of the variable's unconstrained value.
    """

    variable: str
    axis: int
    length: int
    affine: bool
    start: int
    stop: int
    value_shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class AffineAction:
    r"""One group element as a map of flat unconstrained vectors, ``x -> A x + c``.

    ``A`` is a permutation of the entries (``index``: ``(A x)_i = x_{index_i}``) followed, for
    some variables, by a matrix along one axis of their value with an offset (simplex and
    zero-sum core axes): ``v -> M v + b`` on every fibre along ``axis``. ``|det A| = 1``.

    Parameters
    ----------
    index : numpy.ndarray, shape (dim,)
        The permutation of the flat entries.
    affine : tuple of (start, stop, value_shape, axis, M, b)
        The affine maps along value axes, applied after the permutation.
    """

    index: np.ndarray
    affine: tuple = ()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """``A x + c`` for points ``x (..., dim)``."""
        y = np.asarray(x, dtype=float)[..., self.index]
        for start, stop, value_shape, axis, matrix, offset in self.affine:
            block = y[..., start:stop].reshape(*y.shape[:-1], *value_shape)
            block = np.moveaxis(block, axis - len(value_shape), -1) @ matrix.T + offset
            block = np.moveaxis(block, -1, axis - len(value_shape))
            y[..., start:stop] = block.reshape(*y.shape[:-1], stop - start)
        return y

    def transpose(self, v: np.ndarray) -> np.ndarray:
        """``A^T v`` (the linear part only), for the gradient of ``q(A x + c)``."""
        v = np.array(v, dtype=float)
        for start, stop, value_shape, axis, matrix, _ in self.affine:
            block = v[..., start:stop].reshape(*v.shape[:-1], *value_shape)
            block = np.moveaxis(block, axis - len(value_shape), -1) @ matrix
            block = np.moveaxis(block, -1, axis - len(value_shape))
            v[..., start:stop] = block.reshape(*v.shape[:-1], stop - start)
        out = np.empty_like(v)
        out[..., self.index] = v
        return out

    @property
    def is_identity(self) -> bool:
        return not self.affine and bool(np.all(self.index == np.arange(self.index.size)))


@dataclass(frozen=True)
class PermutationFactor:
    """Relabellings of the components along a set of axes permuted jointly.

    The group is the product of the symmetric groups of ``blocks``: components in one block
    can be exchanged, components in different blocks cannot (e.g. a mixture whose weights are
    fixed at ``[0.5, 0.25, 0.25]``: blocks ``((1, 2),)``).

    Attributes
    ----------
    axes : tuple of ComponentAxis
        The axes permuted together (one per variable).
    blocks : tuple of tuple of int
        Sets of at least two exchangeable components.
    """

    axes: tuple[ComponentAxis, ...]
    blocks: tuple[tuple[int, ...], ...]

    @property
    def length(self) -> int:
        return self.axes[0].length

    @property
    def size(self) -> int:
        return math.prod(math.factorial(len(b)) for b in self.blocks)

    def permutations(self) -> Iterator[tuple[int, ...]]:
        """Every relabelling ``perm`` (new component ``i`` is old ``perm[i]``), identity first."""
        for parts in itertools.product(*(itertools.permutations(b) for b in self.blocks)):
            perm = list(range(self.length))
            for block, image in zip(self.blocks, parts, strict=True):
                for i, j in zip(block, image, strict=True):
                    perm[i] = j
            yield tuple(perm)

    def describe(self) -> str:
        names = " and ".join(
            f"{a.variable}" + (f" (axis {a.axis})" if a.axis else "") for a in self.axes
        )
        if len(self.blocks) == 1 and len(self.blocks[0]) == self.length:
            what = f"the {self.length} components"
        else:
            what = "components " + ", ".join(
                "{" + ", ".join(map(str, b)) + "}" for b in self.blocks
            )
        return f"relabelling {what} of {names}"


@dataclass(frozen=True, eq=False)
class SymmetryGroup:
    """A finite group of affine maps leaving the model's log density invariant.

    Attributes
    ----------
    factors : tuple of PermutationFactor
        Independent relabellings (on disjoint axes); the group is their direct product.
    actions : tuple of AffineAction
        Every element, the identity first.
    """

    factors: tuple[PermutationFactor, ...]
    actions: tuple[AffineAction, ...]

    @property
    def size(self) -> int:
        return len(self.actions)

    def orbit(self, x: np.ndarray) -> np.ndarray:
        """All images ``g x`` of points ``x (..., dim)``: shape ``(size, ..., dim)``."""
        return np.stack([action(x) for action in self.actions])

    def describe(self) -> str:
        return "; ".join(f.describe() for f in self.factors)


def _group_size(factors) -> int:
    return math.prod(f.size for f in factors)


# ---------------------------------------------------------------------- candidate axes
def _transform_kind(transform) -> tuple[str, int]:
    """``("elementwise" | "affine" | "ordered" | "none", core ndim)`` of a PyMC transform."""
    if transform is None:
        return "elementwise", 0
    parts = getattr(transform, "transform_list", [transform])
    names = [type(p).__name__ for p in parts]
    # by class or base class: PyMC's ``Interval`` (Uniform's) subclasses ``IntervalTransform``
    if all({c.__name__ for c in type(p).__mro__} & set(_ELEMENTWISE) for p in parts):
        return "elementwise", 0
    if len(parts) == 1 and names[0] in _AFFINE_CORE:
        return "affine", int(getattr(parts[0], "ndim_supp", 1))
    if len(parts) == 1 and names[0] == "Ordered":
        return "ordered", 1
    return "none", 0


def _core_axes(transform, ndim: int, n_core: int) -> set[int]:
    axes = getattr(transform, "zerosum_axes", None)
    if axes is not None:
        return {a % ndim for a in axes}
    return set(range(ndim - n_core, ndim))


def candidate_axes(target) -> tuple[list[ComponentAxis], list[str]]:
    """Axes of length >= 2 of continuous free variables that a relabelling may permute, and
    the variables left out because their transform does not allow it (noted in diagnostics)."""
    model = target.model
    axes, skipped = [], []
    for rv, var in zip(model.free_RVs, target.layout, strict=True):
        if var.discrete or not var.shape:
            continue
        transform = model.rvs_to_transforms.get(rv)
        kind, n_core = _transform_kind(transform)
        if kind == "none":
            skipped.append(var.name)
            continue
        ndim = len(var.shape)
        core = _core_axes(transform, ndim, n_core) if kind != "elementwise" else set()
        if len(var.value_shape) != ndim:
            skipped.append(var.name)
            continue
        for axis, length in enumerate(var.shape):
            if length < 2:
                continue
            if axis in core and kind == "ordered":
                continue  # ordered breaks the symmetry on purpose
            affine = axis in core
            if not affine and var.value_shape[axis] != length:
                continue
            axes.append(
                ComponentAxis(
                    var.name, axis, int(length), affine, var.start, var.stop, tuple(var.value_shape)
                )
            )
    return axes, skipped


# ---------------------------------------------------------------------- building actions
def _relabeller(target, axis: ComponentAxis):
    """``(values (n, *value_shape), perm) -> values``: relabel the constrained values of
    ``axis.variable`` through its own transform, ``forward(take(backward(v), perm))``.

    Simplex and zero-sum transforms take no parameters, so this small graph is built on the
    variable alone and evaluated without compilation (the Python linker, no rewrites)."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.compile.mode import Mode

    model = target.model
    rv = next(rv for rv in model.free_RVs if rv.name == axis.variable)
    transform = model.rvs_to_transforms[rv]
    value = pt.tensor("value", dtype="float64", shape=(None, *axis.value_shape))
    perm = pt.lvector("perm")
    image = transform.forward(pt.take(transform.backward(value), perm, axis=1 + axis.axis))
    fn = pytensor.function([value, perm], image, mode=Mode(linker="py", optimizer=None))

    def relabel_values(values: np.ndarray, perm) -> np.ndarray:
        return np.asarray(fn(values, np.asarray(perm, dtype=np.int64)), dtype=float)

    return relabel_values


def _relabel_block(relabel_values, axis: ComponentAxis, perm, x: np.ndarray) -> np.ndarray:
    """Points ``x (n, dim)`` with ``axis.variable`` relabelled exactly (through its transform)."""
    image = np.array(x, dtype=float)
    block = image[:, axis.start : axis.stop].reshape(-1, *axis.value_shape)
    image[:, axis.start : axis.stop] = relabel_values(block, perm).reshape(len(image), -1)
    return image


def _affine_map(relabel_values, axis: ComponentAxis, perm, base: np.ndarray):
    """``(M, b)`` of relabelling ``perm`` along an affine (simplex / zero-sum) axis: the image
    of ``0`` gives ``b``, the images of the unit vectors of one fibre the columns of ``M``."""
    n_value = axis.value_shape[axis.axis]
    points = np.repeat(base[None, :], n_value + 1, axis=0)
    block = np.zeros((n_value + 1, *axis.value_shape))
    for j in range(n_value):
        index = [0] * len(axis.value_shape)
        index[axis.axis] = j
        block[(j + 1, *index)] = 1.0
    points[:, axis.start : axis.stop] = block.reshape(n_value + 1, -1)
    image = _relabel_block(relabel_values, axis, perm, points)
    image = image[:, axis.start : axis.stop].reshape(n_value + 1, *axis.value_shape)
    read = [slice(None)] + [0] * len(axis.value_shape)
    read[1 + axis.axis] = slice(None)
    values = image[tuple(read)]  # (n_value + 1, n_value)
    return (values[1:] - values[0]).T, values[0]


class NotAffineError(ValueError):
    """A relabelling along a simplex / zero-sum axis is not affine with ``|det| = 1``."""


class _AffineMaps:
    """The affine maps of relabellings along simplex / zero-sum axes, read from the variables'
    transforms on demand, checked against the exact relabelling at the test points (affine,
    ``|det M| = 1``), and cached per axis and permutation."""

    def __init__(self, target, points: np.ndarray):
        self.target, self.points = target, points
        self._relabellers: dict = {}
        self._maps: dict = {}

    def __call__(self, axis: ComponentAxis, perm) -> tuple[np.ndarray, np.ndarray]:
        key = (axis, tuple(perm))
        if key not in self._maps:
            if axis not in self._relabellers:
                self._relabellers[axis] = _relabeller(self.target, axis)
            relabel_values = self._relabellers[axis]
            matrix, offset = _affine_map(relabel_values, axis, perm, self.points[0])
            action = AffineAction(
                np.arange(self.target.dim),
                ((axis.start, axis.stop, axis.value_shape, axis.axis, matrix, offset),),
            )
            exact = _relabel_block(relabel_values, axis, perm, self.points)
            if not (
                np.allclose(action(self.points), exact, rtol=1e-8, atol=1e-8)
                and np.isclose(abs(np.linalg.det(matrix)), 1.0, rtol=1e-8)
            ):
                raise NotAffineError(
                    f"relabelling {axis.variable} along axis {axis.axis} is not an affine map "
                    f"with |det| = 1 of its unconstrained value"
                )
            self._maps[key] = (matrix, offset)
        return self._maps[key]


def _action(dim: int, moves, affine_maps) -> AffineAction:
    """The action of relabelling ``perm`` along each ``ComponentAxis`` of ``moves``."""
    index = np.arange(dim)
    affine = []
    for axis, perm in moves:
        if tuple(perm) == tuple(range(axis.length)):
            continue
        if axis.affine:
            matrix, offset = affine_maps(axis, perm)
            affine.append((axis.start, axis.stop, axis.value_shape, axis.axis, matrix, offset))
        else:
            block = index[axis.start : axis.stop].reshape(axis.value_shape)
            index[axis.start : axis.stop] = np.take(block, perm, axis=axis.axis).ravel()
    return AffineAction(index, tuple(affine))


def _transposition(length: int, i: int, j: int) -> tuple[int, ...]:
    perm = list(range(length))
    perm[i], perm[j] = j, i
    return tuple(perm)


def _invariant(target, actions, points: np.ndarray) -> np.ndarray:
    """Whether ``log f(g x) = log f(x)`` to rounding at all ``points``, for each action."""
    log_prior, log_lik = target.evaluate(points)
    images = np.stack([a(points) for a in actions])  # (n_actions, n_points, dim)
    image_prior, image_lik = target.evaluate(images)
    scale = 1.0 + np.abs(log_prior) + np.abs(log_lik)
    rtol = INVARIANCE_RTOL.get(str(target._graphs.x.dtype), INVARIANCE_RTOL["float32"])
    difference = np.abs((image_prior + image_lik) - (log_prior + log_lik))
    return np.all(np.isfinite(difference) & (difference <= rtol * scale), axis=1)


def _blocks(length: int, transpositions) -> tuple[tuple[int, ...], ...]:
    """Connected components (of at least two) of the graph whose edges are transpositions."""
    parent = list(range(length))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in transpositions:
        parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(length):
        groups.setdefault(root(i), []).append(i)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


@dataclass(frozen=True)
class SymmetrySearch:
    """What :func:`find_symmetry` found.

    Attributes
    ----------
    factors : tuple of PermutationFactor
        Independent relabellings that leave ``log f`` invariant (empty: no symmetry found).
    size : int
        Order of the group they generate (may exceed ``max_group_size``).
    group : SymmetryGroup or None
        The group with every element's action, when ``1 < size <= max_group_size``.
    generators : tuple of AffineAction
        One transposition per pair of components a factor exchanges (for coverage checks of a
        group too large to enumerate).
    unchecked : tuple of str
        Variables whose transform does not allow a relabelling to be checked (Cholesky-packed,
        chained, or an affine map that failed its check).
    """

    factors: tuple[PermutationFactor, ...] = ()
    size: int = 1
    group: SymmetryGroup | None = None
    generators: tuple[AffineAction, ...] = ()
    unchecked: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.size > 1

    def describe(self) -> str:
        return "; ".join(f.describe() for f in self.factors) if self.factors else "none"


def _subsets(axes: list[ComponentAxis]) -> list[tuple[ComponentAxis, ...]]:
    """Subsets of same-length axes with at most one axis per variable, smallest first."""
    if len({a.variable for a in axes}) <= MAX_JOINT_AXES:
        sizes = range(1, len(axes) + 1)
        subsets = [s for r in sizes for s in itertools.combinations(axes, r)]
    else:  # too many to try every subset: each axis alone, and all of them (one per variable)
        subsets = [(a,) for a in axes]
        firsts = {}
        for a in axes:
            firsts.setdefault(a.variable, a)
        subsets.append(tuple(firsts.values()))
    return [s for s in subsets if len({a.variable for a in s}) == len(s)]


def find_symmetry(
    target, points: np.ndarray, *, max_group_size: int = MAX_GROUP_SIZE
) -> SymmetrySearch:
    """Relabellings of component axes that leave the model's log density invariant.

    Parameters
    ----------
    target : LogDensity
        The model's log density.
    points : numpy.ndarray, shape (n, dim)
        Posterior draws (distinct, generic points) at which invariance is tested: the first
        :data:`N_SCREEN_POINTS` screen every candidate, all of them confirm.
    max_group_size : int, default MAX_GROUP_SIZE
        Largest group whose elements are built (``group`` is ``None`` above it).

    Returns
    -------
    SymmetrySearch
        The invariant relabellings (see the module docstring for the candidates tried).
    """
    points = np.asarray(points, dtype=float).reshape(-1, target.dim)
    if target.has_discrete or points.shape[0] == 0:
        return SymmetrySearch()
    axes, unchecked = candidate_axes(target)
    by_length: dict[int, list[ComponentAxis]] = {}
    for a in axes:
        by_length.setdefault(a.length, []).append(a)

    candidates = []  # (subset, (i, j))
    for length, same in sorted(by_length.items()):
        if length <= MAX_ALL_TRANSPOSITIONS:
            pairs = list(itertools.combinations(range(length), 2))
        else:
            pairs = [(i, i + 1) for i in range(length - 1)]
        candidates += [(s, p) for s in _subsets(same) for p in pairs]
    if len(candidates) > MAX_SYMMETRY_CANDIDATES:
        logger.info(
            "symmetry search: %d candidates, %d screened", len(candidates), MAX_SYMMETRY_CANDIDATES
        )
        candidates = candidates[:MAX_SYMMETRY_CANDIDATES]
    if not candidates:
        return SymmetrySearch(unchecked=tuple(unchecked))

    # affine (simplex / zero-sum) axes: read their maps, and keep only those that check out
    affine_maps, broken = _AffineMaps(target, points), set()
    for a in {a for s, _ in candidates for a in s if a.affine}:
        try:
            for perm in {_transposition(a.length, *p) for s, p in candidates if a in s}:
                affine_maps(a, perm)
        except Exception as err:  # an unexpected transform: report it, do not guess
            logger.info("relabelling %s along axis %d is not checked: %s", a.variable, a.axis, err)
            broken.add(a)
            unchecked.append(a.variable)
    candidates = [(s, p) for s, p in candidates if not broken.intersection(s)]
    if not candidates:
        return SymmetrySearch(unchecked=tuple(sorted(set(unchecked))))

    actions = [
        _action(target.dim, [(a, _transposition(a.length, *p)) for a in s], affine_maps)
        for s, p in candidates
    ]
    keep = _invariant(target, actions, points[:N_SCREEN_POINTS])
    if np.any(keep) and points.shape[0] > N_SCREEN_POINTS:
        kept = np.flatnonzero(keep)
        keep[kept] = _invariant(target, [actions[k] for k in kept], points[:N_TEST_POINTS])
    found = [candidates[k] for k in np.flatnonzero(keep)]
    # minimal sets: drop (S, t) when a proper subset of S is already invariant under t
    minimal = [
        (s, p) for s, p in found if not any(p2 == p and set(s2) < set(s) for s2, p2 in found)
    ]
    by_subset: dict[tuple, list] = {}
    for s, p in minimal:
        by_subset.setdefault(s, []).append(p)
    factors, used = [], set()
    for s, pairs in sorted(by_subset.items(), key=lambda item: -len(item[1])):
        if used.intersection(s):
            logger.info("relabelling of %s overlaps another one; not used", [a.variable for a in s])
            continue
        used.update(s)
        factors.append(PermutationFactor(tuple(s), _blocks(s[0].length, pairs)))
    factors = tuple(factors)
    size = _group_size(factors)
    try:
        generators = tuple(
            _action(
                target.dim,
                [(a, _transposition(f.length, b[0], k)) for a in f.axes],
                affine_maps,
            )
            for f in factors
            for b in f.blocks
            for k in b[1:]
        )
    except NotAffineError as err:
        logger.info("symmetry not used: %s", err)
        return SymmetrySearch(unchecked=tuple(sorted({*unchecked, *(a.variable for a in used)})))
    search = SymmetrySearch(factors, size, None, generators, tuple(sorted(set(unchecked))))
    if size <= 1 or size > max_group_size:
        return search
    group = _build_group(target, factors, affine_maps, points)
    return SymmetrySearch(factors, size, group, generators, search.unchecked)


def _build_group(target, factors, affine_maps, points) -> SymmetryGroup | None:
    """Every element of the product of the factors' groups, checked to leave ``log f``
    invariant (a failed check drops the symmetry rather than guess)."""
    per_factor = [list(f.permutations()) for f in factors]
    try:
        actions = [
            _action(
                target.dim,
                [(a, perm) for f, perm in zip(factors, element, strict=True) for a in f.axes],
                affine_maps,
            )
            for element in itertools.product(*per_factor)
        ]
    except NotAffineError as err:
        logger.info("symmetry not used: %s", err)
        return None
    ok = _invariant(target, actions[1:], points[:N_TEST_POINTS]) if len(actions) > 1 else []
    if not np.all(ok):
        logger.info("a product of invariant relabellings is not invariant; symmetry not used")
        return None
    return SymmetryGroup(tuple(factors), tuple(actions))


# ---------------------------------------------------------------------- draws and modes
@dataclass(frozen=True)
class MirrorCoverage:
    """Whether posterior draws already cover the mirror images of a symmetry.

    Attributes
    ----------
    covered : bool
        The draws look invariant: for every generator ``g``, the mean of ``g x - x`` is within
        :data:`COVERAGE_SHIFT` posterior standard deviations of 0 or within its Monte Carlo
        error (family-wise level :data:`COVERAGE_LEVEL`), and R-hat of the permuted
        coordinates is at most ``RHAT_MAX`` or at most that of the coordinates the group
        leaves alone (chains that did not mix anywhere, not chains in mirror modes).
    shift : float
        Largest ``|mean(g x - x)_j| / sd(x_j)`` (in posterior standard deviations; about the
        distance between mirror modes when the draws sit in one).
    z : float
        That shift in Monte Carlo standard errors.
    rhat : float
        Largest R-hat over the permuted coordinates.
    """

    covered: bool
    shift: float
    z: float
    rhat: float


def _moved(actions, dim: int) -> np.ndarray:
    moved = np.zeros(dim, dtype=bool)
    for a in actions:
        moved |= a.index != np.arange(dim)
        for start, stop, *_ in a.affine:
            moved[start:stop] = True
    return moved


def check_coverage(generators, draws: np.ndarray) -> MirrorCoverage:
    """Do posterior draws ``(chain, draw, dim)`` cover every mirror image?

    For an affine action, ``E[g x] = g E[x]``, so invariance of the mean under the generators
    is invariance under the whole group; a mean shift by more than both ``COVERAGE_SHIFT``
    standard deviations and its Monte Carlo error says the draws miss mirror images, and
    chains that disagree (R-hat) say the same of chains sitting in different modes.

    Parameters
    ----------
    generators : sequence of AffineAction
        Generators of the group (every non-identity element will do).
    draws : numpy.ndarray, shape (chain, draw, dim)

    Returns
    -------
    MirrorCoverage
    """
    draws = np.asarray(draws, dtype=float)
    moved = _moved(generators, draws.shape[-1])
    sd = draws[..., moved].reshape(-1, int(moved.sum())).std(axis=0)
    differences = np.stack([(g(draws) - draws)[..., moved] for g in generators])  # (g, c, d, j)
    mean = differences.mean(axis=(1, 2))
    values = np.moveaxis(differences, (1, 2), (-2, -1))  # (g, j, chain, draw)
    ess = np.asarray(array_stats.ess(values, chain_axis=-2, draw_axis=-1, method="mean"))
    spread = differences.std(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        mcse = spread / np.sqrt(np.where(np.isfinite(ess) & (ess > 0), ess, 1.0))
        z = np.where(spread > 0, np.abs(mean) / mcse, 0.0)
        shift = np.where(sd > 0, np.abs(mean) / sd, 0.0)
    z_crit = stats.norm.isf(COVERAGE_LEVEL / (2 * z.size))
    asymmetric = (shift > COVERAGE_SHIFT) & (z > z_crit)
    rhat, _ = max_rhat(draws[..., moved]) if draws.shape[0] * draws.shape[1] >= 8 else (np.nan, -1)
    # Chains in different mirror modes disagree only where the relabelling moves coordinates:
    # where the coordinates it leaves alone disagree as much (the scale of a funnel's neck),
    # the chains have not mixed at all, which the draws' own R-hat warning reports; it is no
    # sign of mirror modes.
    mixing_failed = rhat > RHAT_MAX and not moved.all() and max_rhat(draws[..., ~moved])[0] >= rhat
    covered = not np.any(asymmetric) and not (rhat > RHAT_MAX and not mixing_failed)
    return MirrorCoverage(bool(covered), float(np.max(shift)), float(np.max(z)), float(rhat))


@dataclass(frozen=True)
class Relabelling:
    """Posterior draws relabelled into one mirror image (:func:`relabel`).

    Attributes
    ----------
    draws : numpy.ndarray, shape (chain, draw, dim)
        ``g_t x_t``: every draw moved by the group element that brings it closest to the
        relabelled draws' mean.
    labels : numpy.ndarray, shape (chain, draw)
        Index (into ``group.actions``) of the element applied to each draw.
    visited : int
        Number of mirror images the raw draws were found in (elements applied to at least one
        draw in a hundred).
    iterations : int
        Relabelling sweeps until no label changed.
    """

    draws: np.ndarray
    labels: np.ndarray
    visited: int
    iterations: int


def relabel(group: SymmetryGroup, draws: np.ndarray, pivot: np.ndarray) -> Relabelling:
    """Relabel draws into the mirror image of ``pivot`` (Stephens 2000; Marin et al. 2005).

    Each draw ``x_t`` is replaced by ``g_t x_t`` with ``g_t`` minimizing the standardized
    distance ``sum_j ((g x_t)_j - c_j)^2 / s_j^2`` over the permuted coordinates ``j``, where
    ``c`` starts at ``pivot`` (a draw of high density) and becomes the mean of the relabelled
    draws, and ``s`` their standard deviations, until no label changes (a k-means iteration
    on the group's orbits). Relabelling leaves ``log f`` and every ``G``-invariant function of
    the draws unchanged.

    Parameters
    ----------
    group : SymmetryGroup
    draws : numpy.ndarray, shape (chain, draw, dim)
    pivot : numpy.ndarray, shape (dim,)

    Returns
    -------
    Relabelling
    """
    draws = np.asarray(draws, dtype=float)
    shape = draws.shape
    flat = draws.reshape(-1, shape[-1])
    moved = _moved(group.actions, shape[-1])
    orbit = group.orbit(flat)[..., moved]  # (size, n, j)
    scale = orbit.reshape(-1, orbit.shape[-1]).std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    centre = np.asarray(pivot, dtype=float)[moved]
    labels = np.full(flat.shape[0], -1)
    iterations = 0
    for iterations in range(1, MAX_RELABEL_ITERATIONS + 1):  # noqa: B007
        distance = np.sum(((orbit - centre) / scale) ** 2, axis=-1)  # (size, n)
        new = np.argmin(distance, axis=0)
        chosen = orbit[new, np.arange(flat.shape[0])]
        centre = chosen.mean(axis=0)
        spread = chosen.std(axis=0)
        scale = np.where(spread > 0, spread, scale)
        if np.array_equal(new, labels):
            break
        labels = new
    relabelled = np.empty_like(flat)
    for k, action in enumerate(group.actions):
        rows = labels == k
        if np.any(rows):
            relabelled[rows] = action(flat[rows])
    counts = np.bincount(labels, minlength=group.size)
    visited = int(np.sum(counts >= max(1, 0.01 * flat.shape[0])))
    return Relabelling(relabelled.reshape(shape), labels.reshape(shape[:-1]), visited, iterations)


@dataclass(frozen=True)
class SymmetryDecision:
    """What a reference fitted to posterior draws does about a symmetry of the posterior.

    Attributes
    ----------
    draws : numpy.ndarray, shape (chain, draw, dim)
        The draws to fit the reference to and to estimate on: relabelled into one mirror image
        when the reference is symmetrized from draws that miss mirror images, else as given.
    group : SymmetryGroup or None
        The group to symmetrize the reference over (``None``: leave it as fitted).
    search : SymmetrySearch
    coverage : MirrorCoverage or None
    relabelled : bool
        Whether ``draws`` were relabelled.
    messages : tuple of str
        Warnings for the result (a symmetry found but not handled).
    diagnostics : dict
        ``symmetry`` (what was found and done, in words), ``symmetry_group_size``,
        ``symmetrized``, and where checked ``mirror_images_visited``, ``mirror_shift``.
    """

    draws: np.ndarray
    group: SymmetryGroup | None
    search: SymmetrySearch
    coverage: MirrorCoverage | None = None
    relabelled: bool = False
    messages: tuple[str, ...] = ()
    diagnostics: dict = field(default_factory=dict)


def spread_points(draws: np.ndarray, n: int = N_TEST_POINTS) -> np.ndarray:
    """``n`` draws spread over chains and over each chain (deterministic: no random stream)."""
    chains, length = draws.shape[:2]
    rows = [(k % chains, (length - 1) - (k * length) // (n + 1) % length) for k in range(n)]
    return np.stack([draws[c, d] for c, d in rows])


def plan_symmetry(
    target,
    draws: np.ndarray,
    symmetrize="auto",
    *,
    warp3: bool = False,
    max_group_size: int = MAX_GROUP_SIZE,
    search: SymmetrySearch | None = None,
) -> SymmetryDecision:
    """Find a symmetry of the posterior and decide what a reference fitted to ``draws`` does.

    ``symmetrize="auto"``: when the draws miss mirror images (:func:`check_coverage`), relabel
    them into one mirror image (:func:`relabel`), fit the reference to that and symmetrize it
    over the group; when they cover them, change nothing. ``True``: symmetrize whenever a
    symmetry is found (relabelling the draws when they miss mirror images). ``False``: never;
    a symmetry whose mirror images the draws miss is then a warning. A group larger than
    ``max_group_size`` whose images the draws miss is a warning whatever ``symmetrize`` is,
    as is warp-3 (``warp3=True``: its reflection about the fitted mean does not commute with
    the relabellings).

    Parameters
    ----------
    target : LogDensity
    draws : numpy.ndarray, shape (chain, draw, dim)
        Flat unconstrained posterior draws.
    symmetrize : {"auto", True, False}
    warp3 : bool
        The reference is warp-3's (it cannot be symmetrized).
    max_group_size : int, default MAX_GROUP_SIZE
    search : SymmetrySearch, optional
        :func:`find_symmetry` on these draws, made earlier (it depends on the draws only, so a
        posterior plan makes it once for every method; ``max_group_size`` is then the one it
        was made with).

    Returns
    -------
    SymmetryDecision
    """
    check_symmetrize_option(symmetrize)
    if search is None:
        search = find_symmetry(target, spread_points(draws), max_group_size=max_group_size)
    diagnostics: dict = {
        "symmetry": "none",
        "symmetry_group_size": search.size,
        "symmetrized": False,
    }
    if search.unchecked:
        diagnostics["symmetry_unchecked"] = ", ".join(search.unchecked)
    if not search.found:
        return SymmetryDecision(draws, None, search, diagnostics=diagnostics)
    coverage = check_coverage(search.generators, draws)
    diagnostics["mirror_shift"] = coverage.shift
    what = f"{search.describe()} ({search.size} mirror images)"
    if coverage.covered and symmetrize is not True:
        diagnostics["symmetry"] = f"{what}: the draws cover them, reference not symmetrized"
        return SymmetryDecision(draws, None, search, coverage, diagnostics=diagnostics)
    bias = (
        f"log Z is likely under-estimated, by up to log {search.size} = {math.log(search.size):.3f}"
    )
    names = sorted({a.variable for f in search.factors for a in f.axes})
    if search.group is None or warp3 or symmetrize is False:
        if search.group is None:
            reason = (
                f"the group has {search.size} elements, more than the {max_group_size} a "
                f"symmetrized reference averages over"
            )
        elif warp3:
            reason = (
                "warp-3's reflection about the fitted mean does not commute with the "
                "relabellings, so its reference cannot be symmetrized (use the normal "
                "reference, which can)"
            )
        else:
            reason = "symmetrize=False"
        diagnostics["symmetry"] = f"{what}: draws miss mirror images, not handled ({reason})"
        message = (
            f"The posterior is invariant under {what}, and the posterior draws do not cover "
            f"those mirror images (mean shift {coverage.shift:.1f} posterior sd, R-hat "
            f"{coverage.rhat:.3f}): a reference fitted to them misses the mirror modes, so "
            f"{bias}. Not handled because {reason}. Break the symmetry (an ordered transform "
            f"on one of {names}, e.g. transform=pm.distributions.transforms.ordered), or use a "
            f"path method started from the prior."
        )
        return SymmetryDecision(
            draws, None, search, coverage, messages=(message,), diagnostics=diagnostics
        )
    group = search.group
    diagnostics["symmetrized"] = True
    if coverage.covered:  # symmetrize=True on draws that cover the images: fit to them as they are
        diagnostics["symmetry"] = f"{what}: the draws cover them, reference symmetrized (as asked)"
        return SymmetryDecision(draws, group, search, coverage, diagnostics=diagnostics)
    sample = draws.reshape(-1, draws.shape[-1])
    rows = np.linspace(0, sample.shape[0] - 1, min(200, sample.shape[0])).astype(int)
    log_f = target.log_density(sample[rows])
    pivot = sample[rows[int(np.argmax(np.where(np.isfinite(log_f), log_f, -np.inf)))]]
    relabelled = relabel(group, draws, pivot)
    diagnostics["mirror_images_visited"] = relabelled.visited
    diagnostics["symmetry"] = (
        f"{what}: the draws were in {relabelled.visited} of them; relabelled into one and "
        f"reference symmetrized over all {group.size}"
    )
    return SymmetryDecision(
        relabelled.draws, group, search, coverage, relabelled=True, diagnostics=diagnostics
    )
