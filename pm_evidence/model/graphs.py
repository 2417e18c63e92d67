"""Symbolic graphs of a PyMC model's log-density terms, as functions of its value variables
and of one flat vector ``x``.

Each step a pure function of graphs:

1. :func:`flat_graphs` makes the model's graphs *total*: every parameter check of
   PyMC (``sigma > 0``, ``posdef covariance``, ...) becomes ``-inf`` where it fails instead of an
   exception (PyMC's own ``local_check_parameter_to_ninf_switch``, applied to every check). A
   proposal outside the support is then an ordinary rejected point. Each ``cholesky(L @ L.T)``
   of a factor ``L`` that PyMC tags lower triangular becomes ``L`` before any gradient is taken
   (:func:`without_tagged_choleskys`), slices along a last axis of known length become
   masks (:func:`slices_as_masks`), and log-sum-exps and softmaxes are differentiated as
   softmaxes, not through their stabilizing maximum (:func:`softmax_gradients`). It holds
   them as graphs of the value variables and, with each value variable a slice of ``x``
   (PyMC's ``join_nonshared_inputs``), of ``x``.
2. :func:`batched_by_variable` vectorizes graphs of the value variables over rows of one input
   per variable (what is compiled), :func:`vectorize_batched` graphs of ``x`` over the rows of
   a matrix ``x_batch`` (for larger graphs built around the model's); both unwrap the
   ``Blockwise(OpFromGraph)`` nodes that vectorization creates.
3. :func:`relaxed_bernoulli_terms` writes all-binary models with a log-density linear in their
   values, for gradient-informed flips, after the same passes (:func:`term_passes`).
4. :func:`term_choice_graphs` lets each log-sum-exp of the log-density (``pt.logaddexp``,
   ``pt.logsumexp``, the mixture densities of ``pm.Mixture``) be replaced by one of its terms,
   for a search of each term's modes; those ``log f`` decreases in (a softmax's normalizer)
   are no mixtures and are left out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import CheckParameterValue
from pymc.pytensorf import join_nonshared_inputs
from pytensor.compile.builders import OpFromGraph, SymbolicOp
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import ancestors, apply_ancestors, toposort
from pytensor.scalar import basic as ps
from pytensor.tensor.basic import (
    Alloc,
    AllocEmpty,
    ARange,
    Join,
    MakeVector,
    ScalarFromTensor,
    get_underlying_scalar_constant_value,
)
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.math import All, Sum
from pytensor.tensor.rewriting.linalg.decomposition import cholesky_ldotlt
from pytensor.tensor.shape import Reshape, Shape, SpecifyShape
from pytensor.tensor.special import LogAddExp, LogSumExp
from pytensor.tensor.subtensor import (
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    get_constant_idx,
)
from pytensor.tensor.symbolic import FusibleSymbolicOp

from pm_evidence.model.gaussian import GaussianTerms, gaussian_gradients
from pm_evidence.model.packed_covariance import (
    gathered_constant_expressions,
    lower_triangle_covariances,
)
from pm_evidence.model.trig_differences import sines_of_differences

__all__ = [
    "MAX_TERMS",
    "LogDensityGraphs",
    "TermChoiceGraphs",
    "batched_by_variable",
    "flat_graphs",
    "graph_size",
    "largest_factored_matrix",
    "largest_matrix",
    "relaxed_bernoulli_terms",
    "slices_as_masks",
    "softmax_gradients",
    "term_choice_graphs",
    "term_passes",
    "vectorize_batched",
    "without_tagged_choleskys",
]

# A pt.logsumexp over more terms than this along its axis (or over several axes, or of unknown
# length) is left out of term_choice_graphs: one search per term would cost more than it finds.
MAX_TERMS = 16


def _conjuncts(condition) -> list:
    """The conditions whose ``and`` is ``condition``, where it is PyMC's ``check_parameters``
    form ``all([all(c_1), ..., all(c_k)])`` (a ``MakeVector`` of the conditions reduced by
    ``All``); ``[condition]`` otherwise.

    Written as ``all(c_1) & ... & all(c_k)``, the graph has no stacked vector: vectorized over
    points, the stack becomes a ``Join`` of broadcast copies reduced along its second axis, a
    partial reduction that Numba compiles in seconds (numba's ``array.transpose``; measured:
    docs/benchmarks.rst, "One input per variable, one compiled function"). The value is the
    same.
    """
    owner = condition.owner
    if owner is not None and isinstance(owner.op, ScalarFromTensor):
        return _conjuncts(owner.inputs[0])
    if owner is not None and isinstance(owner.op, All) and owner.op.axis is None:
        (stacked,) = owner.inputs
        if stacked.owner is not None and isinstance(stacked.owner.op, MakeVector):
            return [c for inner in stacked.owner.inputs for c in _conjuncts(inner)]
    return [condition]


@node_rewriter([CheckParameterValue])
def _check_to_ninf(fgraph, node):
    """``CheckParameterValue(logp, *conditions)`` -> ``switch(all(c_1) & ... & all(c_k), logp, -inf)``.

    PyMC's ``local_check_parameter_to_ninf_switch`` leaves checks marked as not replaceable
    (those of inverse CDFs, which a log-density graph does not contain); here every check of a
    log-density is a support condition, so all of them become ``-inf``.
    """
    logp, *conditions = node.inputs
    conjuncts = [c for condition in conditions for c in _conjuncts(condition)]
    condition = functools.reduce(pt.and_, conjuncts)
    out = pt.switch(condition, logp, -np.inf)
    return [pt.cast(out, node.outputs[0].dtype)]


def _rewritten(outputs: list, *rewriters) -> list:
    """Copies of ``outputs`` with ``rewriters`` (node rewriters) applied, depth first, and no
    other rewrite."""
    return rewrite_graph(outputs, include=(), custom_rewrite=dfs_rewriter(*rewriters), clone=True)


def make_total(outputs: list) -> list:
    """``outputs`` with every PyMC parameter check turned into ``-inf`` where it fails."""
    return _rewritten(outputs, _check_to_ninf)


def without_tagged_choleskys(outputs: list) -> list:
    """``outputs`` with each ``cholesky(L @ L.T)`` of a factor ``L`` that PyMC tags lower
    triangular replaced by ``L`` (PyTensor's own ``cholesky_ldotlt``).

    ``pm.MvNormal(chol=L)`` forms ``cov = L @ L.T`` and its log-density takes ``cholesky(cov)``;
    PyMC tags ``L`` (``tag.lower_triangular``, also on ``LKJCholeskyCov``'s factor) so that
    PyTensor's rewrite, at compile time, gives ``L`` back. Here the rewrite runs on the model's
    own graphs, before two things that would lose it: the gradient, which would otherwise go
    through the decomposition's (two triangular solves per point), and the vectorization over
    points, whose new variables do not carry the tags. The values are PyMC's own (its compiled
    ``logp`` has the same rewrite). The value-and-gradient function loses a ``Cholesky`` and
    two triangular solves per point, and compiles faster (measured: docs/benchmarks.rst)."""
    return _rewritten(outputs, cholesky_ldotlt)


def _last_axis_index(node):
    """The constant index of a ``Subtensor`` or ``IncSubtensor`` node along its array's last
    axis (a number or a ``slice``), where it indexes that axis only; None otherwise."""
    x = node.inputs[0]
    index_inputs = node.inputs[2:] if isinstance(node.op, IncSubtensor) else node.inputs[1:]
    try:
        index = get_constant_idx(node.op.idx_list, [x, *index_inputs])
    except NotScalarConstantError:
        return None
    if len(index) != x.type.ndim or any(i != slice(None) for i in index[:-1]):
        return None
    return index[-1]


@node_rewriter([IncSubtensor])
def _ordered_writes_as_switch(fgraph, node):
    """PyMC's ``ordered`` transform's deltas,
    ``set_subtensor(set_subtensor(empty(n)[..., 0], v[..., 0])[..., 1:], exp(v[..., 1:]))``,
    -> ``switch(first, v, exp(switch(first, 0, v)))`` with ``first = (arange(n) == 0)``, for a
    last axis of static length ``n``.

    The same numbers, elementwise: the gradient has no writes into zeros (the inner ``switch``
    keeps ``exp`` of the first entry at 1, so a large first entry gives no ``0 * inf``)."""
    if not node.op.set_instead_of_inc or _last_axis_index(node) != slice(1, None, None):
        return None
    written, deltas = node.inputs[:2]
    inner = written.owner
    if (
        inner is None
        or not isinstance(inner.op, IncSubtensor)
        or not inner.op.set_instead_of_inc
        or _last_axis_index(inner) != 0
    ):
        return None
    empty, first_entry = inner.inputs[:2]
    if (
        empty.owner is None
        or not isinstance(empty.owner.op, AllocEmpty)
        or not _elemwise(deltas, ps.Exp)
    ):
        return None
    rest = deltas.owner.inputs[0]
    if rest.owner is None or not isinstance(rest.owner.op, Subtensor):
        return None
    v = rest.owner.inputs[0]
    first = first_entry.owner
    if (
        _last_axis_index(rest.owner) != slice(1, None, None)
        or first is None
        or not isinstance(first.op, Subtensor)
        or first.inputs[0] is not v
        or _last_axis_index(first) != 0
        or v.type.shape[-1] is None
        or v.type != node.outputs[0].type
    ):
        return None
    is_first = np.arange(v.type.shape[-1]) == 0
    zero = np.zeros((), dtype=v.dtype)
    return [pt.switch(is_first, v, pt.exp(pt.switch(is_first, zero, v)))]


@node_rewriter([Sum])
def _sum_of_slice_as_masked_sum(fgraph, node):
    """``sum(v[..., s])`` over ``v``'s last axis (with or without others), with ``s`` a constant
    slice of positive step and that axis of static length -> ``sum(switch(in_s, v, 0))``, the
    same axes. The same sum, in the same order (the zeros add nothing); its gradient is
    elementwise, not a write into zeros."""
    (sliced,) = node.inputs
    index_node = sliced.owner
    if index_node is None or not isinstance(index_node.op, Subtensor):
        return None
    index = _last_axis_index(index_node)
    v = index_node.inputs[0]
    if (
        not isinstance(index, slice)
        or (index.step is not None and index.step < 1)
        or v.type.shape[-1] is None
        or v.type.ndim - 1 not in (range(v.type.ndim) if node.op.axis is None else node.op.axis)
    ):
        return None
    in_slice = np.zeros(v.type.shape[-1], dtype=bool)
    in_slice[index] = True
    return [node.op(pt.switch(in_slice, v, np.zeros((), dtype=v.dtype)))]


# The dtypes the rewrites below write masks and softmax gradients for.
_FLOATS = ("float32", "float64")

# A take along a last axis longer than this stays an indexing: its mask compares every index
# with every entry of the axis.
MAX_TAKE_AS_MASK = 32


def _is_arange_along(index, a, axis: int) -> bool:
    """Whether ``index`` is ``arange(a.shape[axis])`` reshaped to lie along ``axis`` (the
    orthogonal aranges of ``take_along_axis``)."""
    if index.owner is None or not isinstance(index.owner.op, Reshape):
        return False
    arange, shape = index.owner.inputs
    if arange.owner is None or not isinstance(arange.owner.op, ARange):
        return False
    expected = np.ones(a.type.ndim, dtype=int)
    expected[axis] = -1
    try:
        start, stop, step = (get_underlying_scalar_constant_value(v) for v in arange.owner.inputs)
        length = a.type.shape[axis]
        stop_is_length = length is not None and stop == length
        return (
            start == 0 and step == 1 and stop_is_length
            and isinstance(shape, pt.TensorConstant) and np.array_equal(shape.data, expected)
        )  # fmt: skip
    except NotScalarConstantError:
        return False


def _clipped_to(index, n: int) -> bool:
    """Whether ``index`` (an integer array, expanded or not) is ``clip(v, 0, n - 1)`` or a
    constant with every entry in ``[0, n)``."""
    while index.owner is not None and isinstance(index.owner.op, DimShuffle):
        if index.owner.op.drop or index.owner.op.is_transpose:
            return False
        index = index.owner.inputs[0]
    if isinstance(index, pt.TensorConstant):
        return bool(np.all((index.data >= 0) & (index.data < n)))
    if not _elemwise(index, ps.Clip):
        return False
    try:
        low, high = (get_underlying_scalar_constant_value(b) for b in index.owner.inputs[1:])
    except NotScalarConstantError:
        return False
    return low == 0 and high == n - 1


@node_rewriter([AdvancedSubtensor])
def _take_along_last_axis_as_masked_sum(fgraph, node):
    """``take_along_axis(a, i, axis=-1)``, i.e. ``a[arange_0, ..., arange_{d-2}, i]``, along a
    last axis of static length ``n`` (at most ``MAX_TAKE_AS_MASK``) with ``i`` within it
    (``clip(v, 0, n - 1)``: PyMC's ``Categorical``) ->
    ``sum(switch(i[..., None] == arange(n), a[..., None, :], 0), axis=-1)``.

    The same numbers (the zeros add nothing); its gradient is elementwise, not an indexed
    write into zeros (the batched gradient of PyMC's ``Categorical`` likelihood compiled
    three broadcast allocations and two indexings)."""
    a, *indices = node.inputs
    n = a.type.shape[-1]
    if (
        n is None
        or n > MAX_TAKE_AS_MASK
        or a.dtype not in _FLOATS
        or a.type.ndim < 2  # a gather a[i] of a vector stays one (its mask compiled slower)
        or len(indices) != a.type.ndim
        or len(node.op.idx_list) != a.type.ndim
    ):
        return None
    if not all(_is_arange_along(index, a, axis) for axis, index in enumerate(indices[:-1])):
        return None
    last = indices[-1]
    if not _clipped_to(last, n):
        return None
    taken = pt.eq(pt.expand_dims(last, -1), np.arange(n))
    masked = pt.switch(taken, pt.expand_dims(a, -2), np.zeros((), dtype=a.dtype))
    out = masked.sum(axis=-1)
    if out.type.ndim != node.outputs[0].type.ndim:
        return None
    return [pt.specify_shape(out, node.outputs[0].type.shape)]


class _LogSumExpWithSoftmaxGradient(LogSumExp):
    """PyTensor's ``LogSumExp``, its forward graph unchanged, with the gradient
    ``g exp(x - m) / sum exp(x - m)`` (the softmax; ``m`` the stabilizing maximum). PyTensor's
    own gradient of the forward graph adds the gradient through ``m``, zero in exact
    arithmetic (``log sum exp(x - m) + m`` does not depend on ``m``), computed all the same."""

    def pullback(self, inputs, outputs, output_grads):
        (x,), (g,) = inputs, output_grads
        if isinstance(g.type, DisconnectedType):
            return [disconnected_type()]
        # the forward graph's shift, built as it is there (the compiled function computes
        # it once): the maximum, 0 where it is infinite
        x_max = x.max(axis=self.axis, keepdims=True, initial=-np.inf)
        x_max = pt.switch(pt.isinf(x_max), pt.constant(0.0, ndim=x_max.ndim), x_max)
        shifted = pt.exp(x - x_max)
        total = shifted.sum(axis=self.axis, keepdims=True)
        return [(pt.expand_dims(g, self.axis) / total) * shifted]


class _ShiftedSoftmax(FusibleSymbolicOp):
    """``e / sum(e, axis)``, ``e = exp(x - max(x, axis))``: the forward graph of PyMC's simplex
    transform (and of softmaxes written out), with the gradient ``y (g - sum(g y, axis))``
    (``y`` the output) instead of one through the maximum, zero in exact arithmetic."""

    __props__ = ("axis",)
    inline = False

    def __init__(self, *, axis, **kwargs):
        self.axis = tuple(axis)
        super().__init__(**kwargs)

    def build_inner_graph(self, x):
        shifted = pt.exp(x - pt.expand_dims(x.max(axis=self.axis), self.axis))
        return [shifted / pt.expand_dims(shifted.sum(axis=self.axis), self.axis)]

    def pullback(self, inputs, outputs, output_grads):
        (y,), (g,) = outputs, output_grads
        if isinstance(g.type, DisconnectedType):
            return [disconnected_type()]
        return [y * (g - (g * y).sum(axis=self.axis, keepdims=True))]


@node_rewriter([LogSumExp])
def _log_sum_exp_with_softmax_gradient(fgraph, node):
    """``LogSumExp`` -> :class:`_LogSumExpWithSoftmaxGradient` (of a float input)."""
    if isinstance(node.op, _LogSumExpWithSoftmaxGradient):
        return None
    if node.inputs[0].dtype not in _FLOATS:
        return None
    return [_LogSumExpWithSoftmaxGradient(axis=node.op.axis)(node.inputs[0])]


def _expanded_reduction(var, scalar_op, x) -> tuple[int, ...] | None:
    """The axes of ``var = expand_dims(reduce(x, axes), axes)`` for a reduction by
    ``scalar_op``, or None."""
    if var.owner is None or not isinstance(var.owner.op, DimShuffle):
        return None
    (reduced,) = var.owner.inputs
    node = reduced.owner
    if not (
        node is not None
        and isinstance(node.op, CAReduce)
        and isinstance(node.op.scalar_op, scalar_op)
        and node.inputs[0] is x
        and node.op.axis is not None
    ):
        return None
    axes = tuple(sorted(node.op.axis))
    expand = var.owner.op
    if not (expand.is_expand_dims and tuple(expand.augment) == axes):
        return None
    return axes


@node_rewriter([Elemwise])
def _softmax_of_shifted_exps(fgraph, node):
    """``e / expand_dims(sum(e, axes), axes)``, ``e = exp(x - expand_dims(max(x, axes), axes))``,
    where the maximum, ``e`` and the sum are used there only -> :class:`_ShiftedSoftmax`."""
    if not isinstance(node.op.scalar_op, ps.TrueDiv):
        return None
    e, denominator = node.inputs
    if not _elemwise(e, ps.Exp):
        return None
    (difference,) = e.owner.inputs
    if not _elemwise(difference, ps.Sub):
        return None
    x, shift = difference.owner.inputs
    if x.dtype not in _FLOATS:
        return None
    axes = _expanded_reduction(shift, ps.ScalarMaximum, x)
    if axes is None or _expanded_reduction(denominator, ps.Add, e) != axes:
        return None
    clients = fgraph.clients
    total = denominator.owner.inputs[0]
    only_here = [
        (shift, difference.owner), (shift.owner.inputs[0], shift.owner),
        (denominator, node), (total, denominator.owner), (difference, e.owner),
    ]  # fmt: skip
    if any({c for c, _ in clients[v]} != {user} for v, user in only_here):
        return None
    if {c for c, _ in clients[e]} != {node, total.owner}:
        return None
    return [_ShiftedSoftmax(axis=axes)(x)]


def softmax_gradients(outputs: list) -> list:
    """``outputs`` with each log-sum-exp (``pt.logsumexp``, the mixture densities of
    ``pm.Mixture`` and ``pm.NormalMixture``) and each softmax written out with its maximum
    (PyMC's simplex transform: ``_softmax_of_shifted_exps``) differentiated as a softmax,
    before the gradient is taken.

    Both subtract a maximum ``m`` before ``exp`` for stability, and neither's value depends on
    ``m``; PyTensor differentiates through it all the same: an indicator of where ``x`` equals
    ``m``, times a factor that is zero (``1 - s / s``), and the reductions around them, each more
    for Numba to compile. The values are the same to the last bit and the gradients the same to
    rounding (1e-13 relative); the compiled function has fewer operations and compiles faster
    (measured: docs/benchmarks.rst). ``pt.logaddexp`` is left as it is: its
    gradient through the maximum compiles to the same operations."""
    return _rewritten(outputs, _log_sum_exp_with_softmax_gradient, _softmax_of_shifted_exps)


def slices_as_masks(outputs: list) -> list:
    """``outputs`` with three selections along a last axis of known length written as
    elementwise masks, before the gradient is taken: the writes of PyMC's ``ordered`` transform
    (``_ordered_writes_as_switch``), a sum of a slice, such as its Jacobian
    ``sum(v[..., 1:])`` (``_sum_of_slice_as_masked_sum``), and a take along the axis by indices
    within it, such as PyMC's ``Categorical`` likelihood (``_take_along_last_axis_as_masked_sum``).

    The gradient of a slice or a take is a write into zeros, each a separate operation for
    Numba to compile (a ``Subtensor``, an ``Alloc``, an ``IncSubtensor``), and vectorizing keeps
    them so. Masks keep value and gradient elementwise, in fused loops. The values are the same
    to the last bit; an ordered vector's value-and-gradient function has about half the
    operations and compiles faster (measured: docs/benchmarks.rst)."""
    return _rewritten(
        outputs,
        _ordered_writes_as_switch,
        _sum_of_slice_as_masked_sum,
        _take_along_last_axis_as_masked_sum,
    )


def term_passes(terms: list, angle_addition: bool = True) -> list:
    """``terms`` (the log prior and log likelihood graphs) after the passes every compiled
    log-density takes, each a copy of the graphs, in this order and before any gradient is
    taken: :func:`without_tagged_choleskys`,
    :func:`~pm_evidence.model.gaussian.gaussian_gradients`,
    :func:`~pm_evidence.model.packed_covariance.lower_triangle_covariances`,
    :func:`~pm_evidence.model.trig_differences.sines_of_differences` (where
    ``angle_addition``),
    :func:`~pm_evidence.model.packed_covariance.gathered_constant_expressions`,
    :func:`slices_as_masks`, :func:`softmax_gradients`, :func:`make_total`."""
    passes = (
        without_tagged_choleskys, gaussian_gradients, lower_triangle_covariances,
        *((sines_of_differences,) if angle_addition else ()), gathered_constant_expressions,
        slices_as_masks, softmax_gradients, make_total,
    )  # fmt: skip
    for rewrite in passes:
        terms = rewrite(terms)
    return terms


class LogDensityGraphs:
    """The model's log prior and log likelihood as total graphs of its value variables, and of
    one flat vector ``x``.

    Attributes
    ----------
    values : list of TensorVariable
        The model's value variables (``model.value_vars``: unconstrained, in flat-vector order).
    terms : list of TensorVariable
        ``[log_prior, log_lik]`` as graphs of ``values``: ``model.varlogp`` (free variables,
        Jacobians included) and ``model.datalogp`` (observed variables and potentials),
        ``-inf`` where a parameter check fails, without PyMC's tagged Choleskys
        (:func:`without_tagged_choleskys`), with slices along a last axis of known length as
        masks (:func:`slices_as_masks`), log-sum-exps and softmaxes differentiated as softmaxes
        (:func:`softmax_gradients`), a periodic kernel's sines by angle addition where
        ``angle_addition`` (:func:`~pm_evidence.model.trig_differences.sines_of_differences`).
    x : TensorVariable
        The flat unconstrained vector (float64, or int64 for all-integer models).
    log_prior, log_lik : TensorVariable
        The same two terms as graphs of ``x`` (each value variable a slice of ``x``, PyMC's
        ``join_nonshared_inputs``), for graphs built around the model's (a fused HMC
        transition, the term searches).
    """

    def __init__(self, model: pm.Model, point: dict, angle_addition: bool = True):
        self.values = list(model.value_vars)
        self.terms = term_passes([model.varlogp, model.datalogp], angle_addition)
        (self.log_prior, self.log_lik), self.x = join_nonshared_inputs(
            point, self.terms, self.values
        )

    def with_grads(self) -> list:
        """``[log_prior, log_lik, grad log_prior, grad log_lik]`` in ``x``; a flat prior (or no
        likelihood) is disconnected from ``x`` and gets a zero gradient."""
        grads = [
            pytensor.grad(term, self.x, disconnected_inputs="ignore")
            for term in (self.log_prior, self.log_lik)
        ]
        return [self.log_prior, self.log_lik, *grads]

    def with_grads_by_variable(self, wrt) -> list:
        """``[log_prior, log_lik, *grads of log_prior, *grads of log_lik]``, one gradient per
        value variable in ``wrt`` and term (zero where disconnected), as graphs of ``values``
        for :func:`batched_by_variable`."""
        grads = [
            grad
            for term in self.terms
            for grad in pytensor.grad(term, list(wrt), disconnected_inputs="ignore")
        ]
        return [*self.terms, *grads]


def flat_graphs(model: pm.Model, point: dict, angle_addition: bool = True) -> LogDensityGraphs:
    """The total log prior and log likelihood graphs of ``model`` (by variable and flat), a
    periodic kernel's sines by angle addition where ``angle_addition``
    (:mod:`~pm_evidence.model.trig_differences`)."""
    return LogDensityGraphs(model, point, angle_addition)


@node_rewriter([Blockwise])
def _blockwise_inner_graph_to_batched(fgraph, node):
    """Replace a ``Blockwise`` of an ``OpFromGraph`` by its inner graph on the batched inputs.

    Vectorizing a model's graph wraps every ``OpFromGraph`` (``pt.logaddexp``, ``logsumexp``
    and their gradients) in a ``Blockwise``, which PyTensor neither fuses nor inlines; the
    compiled function then calls the inner graph once per point, several times slower
    (measured: docs/benchmarks.rst, Measurements behind the defaults). An elementwise ``SymbolicOp`` is applied to the batched inputs as the same op
    (PyTensor still inlines it late, where that is safe); any other ``OpFromGraph`` has its
    inner graph vectorized in place.
    """
    core = node.op.core_op
    if not isinstance(core, OpFromGraph):
        return None
    elementwise = not any(node.op.inputs_sig) and not any(node.op.outputs_sig)
    if isinstance(core, SymbolicOp) and elementwise:
        outputs = core(*node.inputs)
        return outputs if isinstance(outputs, list | tuple) else [outputs]
    # bind the (frozen) inner graph to fresh core inputs, then vectorize it to the batched ones
    core_inputs = [inp.type() for inp in core.fgraph.inputs]
    inner = core.fgraph.bind(dict(zip(core.fgraph.inputs, core_inputs, strict=True)))
    return vectorize_graph(
        _with_static_shapes(inner), replace=dict(zip(core_inputs, node.inputs, strict=True))
    )


def _with_static_shapes(outputs: list) -> list:
    """``outputs`` with the shape of every variable whose shape is static (known to its type)
    as a constant: vectorizing a ``Shape`` broadcasts its input and infers the result's static
    shape by rewriting a shape graph, 0.2 s each, 2.2 s of a 45-parameter model's
    vectorization with ten of them."""
    static = {
        node.outputs[0]: pt.as_tensor_variable(np.array(node.inputs[0].type.shape, dtype="int64"))
        for node in apply_ancestors(outputs)
        if isinstance(node.op, Shape) and None not in node.inputs[0].type.shape
    }
    return clone_replace(outputs, replace=static) if static else list(outputs)


def _vectorized(outputs, replace: dict, n_rows) -> list:
    """``outputs`` vectorized over one leading dimension of ``n_rows`` rows of the inputs in
    ``replace`` (core input -> batched input), with batched inner graphs unwrapped (see
    ``_blockwise_inner_graph_to_batched``); an output that does not depend on those inputs is
    broadcast to one value per row."""
    batched = vectorize_graph(_with_static_shapes(outputs), replace=replace)
    batched = [
        pt.broadcast_to(b, (n_rows, *o.shape)) if b.ndim == o.ndim else b
        for o, b in zip(outputs, batched, strict=True)
    ]
    return _rewritten(batched, _blockwise_inner_graph_to_batched)


def vectorize_batched(outputs, x, x_batch):
    """``outputs``, graphs of one flat vector ``x``, vectorized over the rows of ``x_batch``
    (see ``_vectorized``)."""
    return _vectorized(outputs, {x: x_batch}, x_batch.shape[0])


def batched_by_variable(outputs, values, value_shapes) -> tuple[list, list]:
    """``outputs``, graphs of the value variables ``values``, vectorized over a leading
    dimension of rows of one input per variable: returns ``(inputs, batched outputs)``, the
    ``k``-th input of shape ``(n, *value_shapes[k])`` and the dtype of ``values[k]``.

    What :class:`~pm_evidence.model.log_density.LogDensity` compiles. Taking each variable as
    an input of its own, rather than slicing one flat matrix inside the graph, keeps every
    array of the compiled function contiguous and the graph free of slicing, reshaping and
    shape checks: Numba then compiles a regression's value-and-gradient function in a third of
    the time (measured: docs/benchmarks.rst, "Where a cold first call compiles"). The caller
    splits the flat rows and joins the gradients (``LogDensity``'s ``ByVariable``).
    """
    inputs = [
        pt.TensorType(v.dtype, shape=(None, *shape))(name=f"{v.name}_rows")
        for v, shape in zip(values, value_shapes, strict=True)
    ]
    replace = dict(zip(values, inputs, strict=True))
    return inputs, _vectorized(outputs, replace, inputs[0].shape[0])


def graph_size(outputs) -> int:
    """Number of operations in the graphs of ``outputs`` (a proxy for compile time)."""
    return sum(1 for var in ancestors(outputs) if var.owner is not None)


def largest_matrix(outputs) -> int:
    """The most numbers any one computed variable of two or more dimensions holds in the graphs
    of ``outputs``, among those whose shape is known to their type (a Gaussian process's
    ``n x n`` covariance); 0 where there is none. Constants (the data) are not counted: they
    are not made per point."""
    sizes = [
        int(np.prod(var.type.shape))
        for var in ancestors(outputs)
        if var.owner is not None
        and isinstance(getattr(var.type, "shape", None), tuple)
        and len(var.type.shape) >= 2
        and None not in var.type.shape
    ]
    return max(sizes, default=0)


def largest_factored_matrix(outputs) -> int:
    """The most numbers of a matrix that the graphs of ``outputs`` factor, solve with, invert
    or take the determinant of (a Gaussian process's ``n x n`` covariance, read by
    :class:`~pm_evidence.model.gaussian.GaussianTerms` or a Cholesky factorization), among
    those whose shape is known to their type; 0 where there is none. Such an operation costs
    ``n^3`` per point and its gradient about as much again."""
    sizes = [
        int(np.prod(var.type.shape))
        for node in apply_ancestors(outputs)
        if _is_linear_algebra(node.op)
        for var in node.inputs
        if isinstance(getattr(var.type, "shape", None), tuple)
        and len(var.type.shape) >= 2
        and None not in var.type.shape
    ]
    return max(sizes, default=0)


def _is_linear_algebra(op) -> bool:
    """Whether ``op`` (or the core of a ``Blockwise``) is PyTensor's linear algebra (a
    factorization, a solve, an inverse, a determinant) or a :class:`GaussianTerms`."""
    core = op.core_op if isinstance(op, Blockwise) else op
    return isinstance(core, GaussianTerms) or type(core).__module__.startswith(
        ("pytensor.tensor.linalg", "pytensor.tensor.slinalg", "pytensor.tensor.nlinalg")
    )


def relaxed_bernoulli_terms(model: pm.Model) -> tuple[list, list]:
    """Log prior, log likelihood and their gradients with binary values relaxed to reals.

    Each Bernoulli term is written ``x log p + (1 - x) log(1 - p)`` (PyMC's own ``logp`` is a
    switch on ``x``, flat in ``x``) and every integer value variable becomes a float one. At
    ``x`` in ``{0, 1}`` the values equal the model's; the gradient linearizes the log-density in
    ``x``, which is what Gibbs-with-gradients needs (Grathwohl et al. 2021).

    Returns ``(outputs, values)``: ``values`` a float placeholder per value variable (in
    ``model.value_vars``' order), ``outputs`` ``[log_prior, log_lik, *grads of log_prior,
    *grads of log_lik]``, one gradient per value variable, as graphs of ``values``, after the
    passes of every compiled log-density (:func:`term_passes`). Like the model's own terms,
    they are compiled with one input per variable (:func:`batched_by_variable`): slicing one
    flat ``x`` inside the graph would add a write into zeros per variable to the gradient, each
    an operation for Numba to compile (on a grid MRF, a third more operations).
    """
    floats = {v: pt.tensor(dtype="float64", shape=v.type.shape, name=v.name)
              for v in model.value_vars}  # fmt: skip
    prior_terms = []
    for rv in model.free_RVs:
        value = floats[model.rvs_to_values[rv]]
        p = rv.owner.inputs[-1]
        prior_terms.append(pt.sum(value * pt.log(p) + (1.0 - value) * pt.log1p(-p)))
    log_prior = pt.sum(prior_terms) if len(prior_terms) > 1 else prior_terms[0]
    log_lik = clone_replace(_float_reductions(model.datalogp), replace=floats, rebuild_strict=False)
    terms = term_passes([log_prior, log_lik])
    values = list(floats.values())
    grads = [
        grad for term in terms for grad in pytensor.grad(term, values, disconnected_inputs="ignore")
    ]
    return [*terms, *grads], values


def _float_reductions(graph):
    """``graph`` with every sum, product or other reduction that accumulates integers (the sum
    in ``z.mean()`` of a Bernoulli vector ``z``) accumulating floats instead: the same values
    at integer points, and a graph in which the integers can be replaced by reals (a
    reduction with an integer accumulator refuses a float input)."""
    replace = {}
    for node in apply_ancestors([graph]):
        op = node.op
        if isinstance(op, CAReduce) and any(
            np.dtype(d).kind in "iub" for d in (op.dtype, op.acc_dtype) if d is not None
        ):
            replace[node.outputs[0]] = op.clone(dtype="float64", acc_dtype="float64")(*node.inputs)
    if not replace:
        return graph
    return clone_replace(graph, replace=replace, rebuild_strict=False)


@dataclass(frozen=True)
class TermChoiceGraphs:
    """The log-density with each of its log-sum-exps replaceable by one of its terms.

    Attributes
    ----------
    x : TensorVariable
        The flat unconstrained vector.
    choice : TensorVariable
        An int64 vector, one entry per log-sum-exp: ``-1`` keeps it, ``k`` replaces it by its
        ``k``-th term.
    log_density, grad : TensorVariable
        ``log prior + log likelihood`` with those replacements, and its gradient in ``x``.
    n_terms : tuple of int
        The number of terms of each log-sum-exp, in the order of ``choice``.
    """

    x: pt.TensorVariable
    choice: pt.TensorVariable
    log_density: pt.TensorVariable
    grad: pt.TensorVariable
    n_terms: tuple[int, ...]


def _elemwise(var, scalar_op) -> bool:
    owner = var.owner
    return isinstance(getattr(owner, "op", None), Elemwise) and isinstance(
        owner.op.scalar_op, scalar_op
    )


def _log_of_exp_product(var):
    """``log var`` written without ``exp`` where ``var = c_1 ... c_m exp(t)`` (one ``exp``
    factor, any others), i.e. ``t + sum_i log c_i``; ``None`` where ``var`` is not such a
    product."""
    if _elemwise(var, ps.Exp):
        return var.owner.inputs[0]
    if not _elemwise(var, ps.Mul):
        return None
    factors = var.owner.inputs
    exps = [f for f in factors if _elemwise(f, ps.Exp)]
    if len(exps) != 1:
        return None
    rest = [pt.log(f) for f in factors if f is not exps[0]]
    return exps[0].owner.inputs[0] + sum(rest)


def _is_log_sum_exp(node) -> bool:
    """``LogAddExp``, ``LogSumExp``, or ``log(w_1 exp(t_1) + ... + w_K exp(t_K))`` written out
    (every term of the sum a product with one ``exp``)."""
    if isinstance(node.op, LogAddExp | LogSumExp):
        return True
    if not (isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Log)):
        return False
    (inner,) = node.inputs
    return _elemwise(inner, ps.Add) and all(
        _log_of_exp_product(term) is not None for term in inner.owner.inputs
    )


def _log_sum_exp_terms(node, max_terms: int) -> list:
    """The terms ``t_k`` of a log-sum-exp node, ``log sum_k exp(t_k)``, each of the node's
    output shape; empty where they cannot be listed (see :data:`MAX_TERMS`)."""
    out = node.outputs[0]
    if isinstance(node.op, Elemwise):  # log(w_1 exp(t_1) + ...)
        terms = [_log_of_exp_product(term) for term in node.inputs[0].owner.inputs]
        return [pt.broadcast_to(term, out.shape) for term in terms]
    if isinstance(node.op, LogAddExp):
        return [pt.broadcast_to(term, out.shape) for term in node.inputs]
    if len(node.op.axis) != 1:
        return []
    axis = node.op.axis[0]
    n = node.inputs[0].type.shape[axis]
    if n is None or n > max_terms:
        return []
    return [pt.take(node.inputs[0], k, axis=axis) for k in range(n)]


# Operations whose first input the output selects, reshapes or broadcasts (the others are
# indices or shapes): log f depends on that input with the sign it depends on the output.
_SELECTING = (DimShuffle, Subtensor, Reshape, SpecifyShape, Alloc)


def _constant_sign(var) -> int | None:
    """The sign of ``var`` where it is a constant (shapes folded), else ``None``."""
    try:
        value = get_underlying_scalar_constant_value(var)
    except NotScalarConstantError:
        return None
    return int(np.sign(value)) if np.isfinite(value) else None


def _input_signs(node, sign: int) -> list:
    """The signs with which ``log f`` depends on each input of ``node``, given that it depends
    on its output with ``sign`` (+1 increasing, -1 decreasing); ``None`` where unknown."""
    op = node.op
    unknown = [None] * len(node.inputs)
    if isinstance(op, CAReduce):
        return [sign] if isinstance(op.scalar_op, ps.Add) else unknown
    if isinstance(op, _SELECTING):
        return [sign, *unknown[1:]]
    if isinstance(op, Join):  # the first input is the axis
        return [None, *[sign] * (len(node.inputs) - 1)]
    if isinstance(op, MakeVector):
        return [sign] * len(node.inputs)
    if not isinstance(op, Elemwise):
        return unknown
    scalar = op.scalar_op
    if isinstance(scalar, ps.Add):
        return [sign] * len(node.inputs)
    if isinstance(scalar, ps.Second):  # the second input broadcast to the first's shape
        return [None, sign]
    if isinstance(scalar, ps.Sub):
        return [sign, -sign]
    if isinstance(scalar, ps.Neg):
        return [-sign]
    if isinstance(scalar, ps.Switch):
        return [None, sign, sign]
    if isinstance(scalar, ps.Cast | ps.Identity):
        return [sign]
    if isinstance(scalar, ps.Mul | ps.TrueDiv):
        constants = [_constant_sign(v) for v in node.inputs]
        signs = []
        for i in range(len(node.inputs)):
            others = [c for j, c in enumerate(constants) if j != i]
            if (isinstance(scalar, ps.TrueDiv) and i == 1) or None in others or 0 in others:
                signs.append(None)
            else:
                signs.append(sign * int(np.prod(others)))
        return signs
    return unknown


def _signs_in(outputs) -> dict:
    """For each variable of the graphs ``outputs``, the sign with which their sum ``log f``
    depends on it: +1 where ``log f`` is non-decreasing in it through every path (sums,
    selections, additions, multiplications by positive constants, an even number of
    negations), -1 where non-increasing (an odd number: a normalizer ``x - log sum exp(x)``),
    ``None`` where unknown or mixed."""
    signs: dict = dict.fromkeys(outputs, 1)
    for node in reversed(list(toposort(outputs))):
        known = [signs.get(out, 0) for out in node.outputs]  # 0: log f does not use it
        used = [k for k in known if k != 0]
        if not used:
            continue
        sign = used[0] if all(k == used[0] for k in used) else None
        input_signs = _input_signs(node, sign) if sign else [None] * len(node.inputs)
        for inp, s in zip(node.inputs, input_signs, strict=True):
            before = signs.get(inp, 0)
            signs[inp] = s if before == 0 else (before if before == s else None)
    return signs


def term_choice_graphs(
    graphs: LogDensityGraphs, max_terms: int = MAX_TERMS
) -> TermChoiceGraphs | None:
    r"""The log-density ``log f = log p0 + log L`` with a choice of term for each of its
    log-sum-exps (PyTensor's ``LogAddExp`` and one-axis ``LogSumExp`` nodes, and
    ``log(w_1 exp(t_1) + ... + w_K exp(t_K))`` written out, whose terms are then
    ``t_k + log w_k``); ``None`` where it has none.

    A density written ``log sum_k exp(t_k(x))`` (a mixture, a ``pm.Potential`` with
    ``pt.logaddexp``) has a mode near each term's own mode wherever that term dominates the
    sum there; replacing the sum by ``t_k`` makes that mode the surrogate's, whatever the
    other terms do, so a local search of each surrogate finds it from any start, where a
    search of ``f`` itself must start in its basin (a narrow mode's basin can hold 1e-8 of
    the prior's mass). Each selected node's output becomes
    ``stack([lse, t_0, ..., t_{K-1}])[choice_j + 1]``, ``lse`` a copy of the node. A
    log-sum-exp nested in another's terms keeps its sum inside that term.

    A log-sum-exp on which ``log f`` provably decreases (``_signs_in``: the normalizer of a
    softmax, ``x_k - log sum_j exp(x_j)``, such as the Jacobian of a Dirichlet's simplex
    transform) is left out: ``f`` has no mode near its terms' modes, and replacing it by one
    term makes a surrogate that may be unbounded. Where the sign is unknown it is kept.
    """
    outputs = [graphs.log_prior, graphs.log_lik]
    nodes = [
        v.owner for v in ancestors(outputs) if v.owner is not None and _is_log_sum_exp(v.owner)
    ]
    if nodes:
        signs = _signs_in(outputs)
        nodes = [node for node in nodes if signs.get(node.outputs[0]) != -1]
    listed = [(node, _log_sum_exp_terms(node, max_terms)) for node in nodes]
    listed = [(node, terms) for node, terms in listed if terms]
    if not listed:
        return None
    choice = pt.lvector("term_choice")
    replace = {}
    for j, (node, terms) in enumerate(listed):
        whole = node.op(*node.inputs)  # a copy of the node: the replacement must not contain it
        replace[node.outputs[0]] = pt.stack([whole, *terms])[choice[j] + 1]
    log_prior, log_lik = clone_replace(outputs, replace=replace)
    log_density = log_prior + log_lik
    grad = pytensor.grad(log_density, graphs.x, disconnected_inputs="ignore")
    return TermChoiceGraphs(
        graphs.x, choice, log_density, grad, tuple(len(terms) for _, terms in listed)
    )
