"""The compile modes of the model's functions. ``model_function_mode()``, for everything on a hot
path, is PyTensor's default mode plus rewrites that spare Numba compile time (or, one of them,
run time) without changing a value (beyond the order in which a sum adds its terms);
:func:`model_function` builds those functions in it, with numba's fast-math flags off so that
their numbers do not depend on the state of PyTensor's cache.

Numba compiles one implementation of an operation per memory layout of its arguments, and the
first call of a model's function from empty caches is mostly that compile (measured with
numba's own compile events: docs/benchmarks.rst, "Where a cold first call compiles"). The
rewrites run after constant folding and before the fusion of elementwise operations
(PyTensor's optdb position 49) and the in-place rewrites, in this order:

- :class:`ContiguousConstants` (every linker): every constant array C-ordered. PyTensor folds
  ``X.T`` of a design matrix into a Fortran-ordered constant, so ``np.dot`` was compiled twice
  (C and Fortran order, about 2.5 s each).
- ``TRIANGULAR_SOLVES_BY_COLUMNS`` (every linker): a triangular solve per row and observation
  with the same factor for all observations of a row (``pm.MvNormal(chol=L)`` on observed
  ``(n, k)`` data solves ``L z_i = y_i - mu`` for each ``i``; vectorized over points, a
  ``Blockwise`` loop of one LAPACK call per point and observation) becomes one solve per
  point, with the observations as the (C-ordered) columns of its right-hand side: several
  times faster per point, for a compile a few seconds longer (measured: docs/benchmarks.rst).
- ``SHARED_BLOCKWISE_INPUTS`` (every linker): a ``Blockwise`` whose inputs shared by all rows
  (batch dimensions of length one) are the only reason it is one, such as the ``Split`` in the
  gradient of a Dirichlet's simplex transform, becomes the operation itself on all rows at once
  (a loop over rows before).
- ``INDEXING_BY_BATCHED_INDICES`` (every linker): an array the same for every row indexed by
  batched integer indices (a Categorical variable's values indexing its probabilities), which
  vectorization left as a ``Blockwise`` loop over rows, becomes NumPy's advanced indexing of
  the array by the indices with their batch dimensions: a Categorical chain's value function
  from empty caches 9.0 -> 3.9 s.
- :class:`UncheckedShapes` (Numba's linker): every ``SpecifyShape`` (a run-time check that an
  array has the shape the graph already knows; vectorized gradients of matrix products carry
  one) becomes :class:`AssumedShape`, the same static type without the check. Numba compiles
  the check's error message (string formatting of integers) for each array type: 3.3-4 s of
  the 17 s compile of a regression's gradient with its design matrix in ``pm.Data``. The
  shapes are the graph's own (the graph is vectorized by
  :func:`~pm_evidence.model.graphs.batched_by_variable`; the rows are split from one array), so
  the check cannot fail there.
- ``VECTOR_PRODUCTS_AS_SUMS`` (Numba's linker): a matrix product, per row or not, over a short
  static length (at most ``MAX_PRODUCT_AS_SUM``), one of whose sides is a vector (``x @ W @ x``
  of a pairwise potential, after vectorization), or whose matrices are small and of static
  shapes (at most ``MAX_PRODUCT_AS_SUM`` products: an LKJ prior's 2 x 2 ones), becomes products
  and a sum, which the fusion takes into one loop.
  Numba's ``BatchedDot`` calls BLAS once per row: its compile (the BLAS bindings' pointer and
  stride handling) is most of a small binary model's compile, and the calls make the function
  many times slower per point (measured: docs/benchmarks.rst). The sum adds its terms in its
  own order, so values can differ from BLAS's in their last bits.
- :class:`ContiguousDotOperands` (Numba's linker): every computed operand of a matrix product
  C-ordered, so that ``np.dot`` is compiled for one pair of layouts.
- ``REDUCTIONS_ACROSS_EXPAND_DIMS`` (Numba's linker): two reductions separated by an
  ``ExpandDims`` merged into one, which the elementwise fusion then takes in (a mixture's
  gradient compiles in less than half the time). The sums are then added in another order, so
  values can differ in their last bits.
- ``CUMSUMS_AS_SUMS`` (Numba's linker): a cumulative sum along an axis of at most
  ``MAX_CUMSUM_AS_SUM`` entries known from the graph (an ``ordered`` transform's, and the
  reversed ones of its gradient; an LKJ prior's) becomes a masked sum, ``sum_i [i <= j] x_i``,
  which the fusion takes into one loop. Numba's own cumulative sum specializes on the axis and
  the memory layout, and three of them were nearly half of an ordered vector's
  value-and-gradient compile. The terms are added in the same order (then zeros),
  so the values are the same (up to the sign of a zero sum).
- ``SPLITS_AS_SLICES`` (Numba's linker): a ``Split`` whose sizes are constants adding up to the
  static length of its axis (the gradient of a simplex transform's or a ``ZeroSumNormal``'s
  ``Join``) becomes the slices it stands for, views as its outputs are. Numba's ``Split`` (a
  cumulative sum of the sizes, a check with a formatted error message, ``np.split``) takes
  seconds to compile, where slices are views.

One rewrite runs later, after the in-place rewrites and just before PyTensor fuses reductions
into elementwise loops (``FUSION_ANCHORS_POSITION``):

- ``FUSION_ANCHORS`` (Numba's linker): a sum, product, maximum or minimum of a float or 64-bit
  integer array that no elementwise operation computes (a ``Join``, an input) reads it through an
  identity ``Elemwise``, so that PyTensor's ``FusedElemwise`` takes the reduction into one loop
  (its own rewrite does so for indexed reads only). Numba's stand-alone reducer specializes on the
  array's strides and took 1.4-1.9 s to compile each (``Sum{axis=1}`` of a matrix): a
  ``ZeroSumNormal``'s, a Dirichlet's and an LKJ prior's value-and-gradient functions from empty
  caches 2.8-2.9 s faster, the same values and evaluation times. Where the fusion declined an
  anchor, the identity would stay as a copy: on the 43 continuous models of the two zoos, none
  is left. An all-Bernoulli model's count of ones (``int64``): its value function from empty
  caches 5.7 -> 2.2 s.

And one after that fusion (``ADVANCED_INDICES_POSITION``):

- ``ADVANCED_INDICES_FIRST`` (Numba's linker): an advanced indexing or indexed update left
  outside the fused loops whose integer arrays follow full slices (``x[:, idx]``, the vectorized
  ``x[idx]``) indexes the leading axes instead, between two ``DimShuffle`` views. Numba's
  implementation otherwise moves the axes with ``x.transpose(order)``, seconds of compile the
  first time in a process. The same elements are read and written.

Numba's implementation of :class:`~pm_evidence.model.gaussian.CholeskyInverse` is here too: a
call of LAPACK's ``potri`` through SciPy's ``cython_lapack``, as PyTensor calls ``potrf``.

The functions off the hot paths run on PyTensor's Python linker instead (``PYTHON_LINKER``,
``QUICK_PYTHON_LINKER``), built under :func:`without_c_compiler` so that the inner functions of
their ``Scan``, ``OpFromGraph`` and symbolic operations run on NumPy too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from typing import ClassVar

import numba
import numpy as np
import pytensor.tensor as pt
from numba.core import types
from numba.np.linalg import ensure_lapack, get_blas_kind
from pytensor import config, function
from pytensor.compile.mode import Mode, get_default_mode, get_mode
from pytensor.graph.basic import Apply
from pytensor.graph.features import ReplaceValidate
from pytensor.graph.op import Op
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.rewriting.basic import (
    GraphRewriter,
    NodeProcessingGraphRewriter,
    SequentialGraphRewriter,
    SequentialNodeRewriter,
    WalkingGraphRewriter,
    node_rewriter,
)
from pytensor.graph.traversal import apply_ancestors
from pytensor.link.numba.cache import _call_cached_ptr
from pytensor.link.numba.dispatch.basic import numba_njit, register_funcify_default_op_cache_key
from pytensor.link.numba.dispatch.linalg._LAPACK import (
    get_lapack_ptr,
    int_ptr_to_val,
    val_to_int_ptr,
)
from pytensor.link.numba.linker import NumbaLinker
from pytensor.scalar.basic import Add, Maximum, Minimum, Mul
from pytensor.scalar.basic import identity as scalar_identity
from pytensor.tensor.basic import Split, get_underlying_scalar_constant_value
from pytensor.tensor.blas import BatchedDot
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular
from pytensor.tensor.math import Dot
from pytensor.tensor.rewriting.math import local_reduce_chain
from pytensor.tensor.shape import SpecifyShape
from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor, Subtensor
from pytensor.tensor.type import integer_dtypes

from pm_evidence.model.backend import register_jax_cholesky_inverse, register_jax_identity
from pm_evidence.model.gaussian import CholeskyInverse

__all__ = [
    "ADVANCED_INDICES_FIRST",
    "ADVANCED_INDICES_POSITION",
    "CHOLESKY_INVERSE_VERSION",
    "CUMSUMS_AS_SUMS",
    "FUSION_ANCHORS",
    "FUSION_ANCHORS_POSITION",
    "INDEXING_BY_BATCHED_INDICES",
    "MAX_CUMSUM_AS_SUM",
    "MAX_PRODUCT_AS_SUM",
    "PYTHON_LINKER",
    "QUICK_PYTHON_LINKER",
    "REDUCTIONS_ACROSS_EXPAND_DIMS",
    "REWRITES_POSITION",
    "SHARED_BLOCKWISE_INPUTS",
    "SPLITS_AS_SLICES",
    "TRIANGULAR_SOLVES_BY_COLUMNS",
    "VECTOR_PRODUCTS_AS_SUMS",
    "AssumedShape",
    "ContiguousConstants",
    "ContiguousCopy",
    "ContiguousDotOperands",
    "UncheckedShapes",
    "model_function",
    "model_function_mode",
    "python_linker_function",
    "without_c_compiler",
    "without_garbage_collection",
]

# After constant folding and before the fusion of elementwise operations (PyTensor's optdb
# position 49) and the in-place rewrites.
REWRITES_POSITION = 48.5

# After the in-place rewrites (optdb position 50.5) and before PyTensor's fusion of reductions and
# indexed reads into elementwise loops (``fuse_indexed_into_elemwise``, position 100).
FUSION_ANCHORS_POSITION = 99.5

# For functions off the hot paths, PyTensor's Python linker (each operation run by NumPy) compiles
# in a fraction of numba's seconds:
# - PYTHON_LINKER, with the full rewrites (stabilization included) except the fusion of
#   elementwise operations: the flat-to-named maps and the prior's forward draws, called on whole
#   batches. The Python linker runs a fused Composite one element at a time in Python; unfused,
#   each operation is one NumPy call on the whole array (hundreds of times faster on prior
#   draws of hundreds of bounded parameters; measured: docs/benchmarks.rst);
# - QUICK_PYTHON_LINKER, with the quick rewrites only: the free variables' shapes (a handful of
#   integers; PyMC's own model.eval_rv_shapes uses a VM linker, whose first use in a process
#   costs about a second and a half) and the term searches (a few hundred points, one L-BFGS
#   step at a time). The quick rewrites leave OpFromGraph nodes (pt.logsumexp, pt.logaddexp)
#   whole, and each then compiles its inner graph with C thunks (g++: 15 s for a mixture from
#   empty caches): "inline_ofg" inlines them first.
PYTHON_LINKER = Mode(linker="py", optimizer="fast_run").excluding("fusion")
QUICK_PYTHON_LINKER = Mode(linker="py", optimizer="fast_compile").including("inline_ofg")


def without_c_compiler() -> AbstractContextManager:
    """PyTensor's C++ compiler off (``config.cxx = ""``) while a function off the hot paths is
    built, PyMC's initial point included.

    A function on the Python linker still links the inner functions of its ``Scan``,
    ``OpFromGraph`` and symbolic operations (a ``Softmax``) with PyTensor's VM, which compiles
    each of their operations in C with g++ wherever a compiler is configured: seconds per
    operation from empty caches. The initial point of a model with an LKJ prior (a ``Scan``)
    built 17 C modules in 6.2 s, its flat-to-named map 5 more in 3.2 s; with no compiler while
    they are built, their thunks and their inner functions' are NumPy's (the initial point in
    0.14 s, the same values). The thunks are made when the function is built, so the setting is
    needed only then."""
    return config.change_flags(cxx="")


@contextmanager
def without_garbage_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a model's graphs are built, rewritten and
    compiled (a context, or a decorator), and restored as it was on exit.

    Building and rewriting a graph allocates hundreds of thousands of small objects (nodes,
    variables, their tags and the rewriters' bookkeeping), so the collector runs many times,
    and each full collection walks every object alive, the model's graphs and PyMC's included.
    On the 45-parameter varying-slopes model the adapter took 1.9-2.1 s to its first value and
    gradient with the collector on, 1.55-1.7 s with it paused here, and the whole first call
    0.4-0.7 s less (measured: docs/benchmarks.rst, "Centered hierarchies (funnels)"). Nothing is
    lost: the cycles left behind are collected on the collector's next run after the
    context."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@without_garbage_collection()
def python_linker_function(inputs, outputs, *, mode: Mode = PYTHON_LINKER, **kwargs):
    """``pytensor.function(inputs, outputs, mode=mode, **kwargs)`` for a function off the hot
    paths: on the Python linker (``PYTHON_LINKER``, or ``QUICK_PYTHON_LINKER`` where the graph
    rewrites would cost more than they save) and built :func:`without_c_compiler`, so that no
    operation, inner ones included, is compiled."""
    with without_c_compiler():
        return function(inputs, outputs, mode=mode, **kwargs)


class _Replacing(GraphRewriter):
    """A graph rewriter that replaces variables with ``fgraph.replace_validate``."""

    def add_requirements(self, fgraph):
        fgraph.attach_feature(ReplaceValidate())


class ContiguousConstants(_Replacing):
    """Replace every constant array that is not C-contiguous by a C-contiguous copy.

    PyTensor folds ``X.T`` of a design matrix ``X`` into a Fortran-ordered constant; Numba
    compiles one implementation of an operation per memory layout of its arguments, so a
    regression's gradient compiled ``np.dot`` twice (C and Fortran order, about 2.5 s each
    from empty caches). With every constant C-ordered the second is the first. The values are
    the same; only the memory order changes.
    """

    def apply(self, fgraph):
        for var in list(fgraph.variables):
            if (
                isinstance(var, pt.TensorConstant)
                and var.data.ndim > 1
                and not var.data.flags.c_contiguous
            ):
                copy = pt.TensorConstant(var.type, np.ascontiguousarray(var.data), name=var.name)
                fgraph.replace_validate(var, copy, reason="contiguous_constants")


class AssumedShape(Op):
    """``x`` with the static shape of a ``SpecifyShape(x, *shape)`` node, unchecked: the
    output is the input (a view), typed as ``SpecifyShape``'s output. The shape inputs are kept
    so that the node reads as the one it replaces; they are not used."""

    __props__ = ()
    view_map: ClassVar = {0: [0]}

    def make_node(self, x, *shape):
        """Not used: nodes are made from ``SpecifyShape`` nodes (``node_like``)."""
        raise NotImplementedError("AssumedShape nodes are made by UncheckedShapes only.")

    def node_like(self, node: Apply) -> Apply:
        """An ``AssumedShape`` node with the inputs and output type of ``SpecifyShape``'s
        ``node``."""
        return Apply(self, list(node.inputs), [node.outputs[0].type()])

    def perform(self, node, inputs, output_storage):
        """The input itself (PyTensor's Python and C linkers)."""
        output_storage[0][0] = inputs[0]

    def infer_shape(self, node, shapes):
        """The input's shape."""
        return [shapes[0]]


@register_funcify_default_op_cache_key(AssumedShape)
def _numba_funcify_assumed_shape(op, node, **kwargs):
    @numba_njit
    def assumed_shape(x, *shape):  # the shape inputs are ignored: no check
        return x

    return assumed_shape


CHOLESKY_INVERSE_VERSION = 1
"""Part of the key under which PyTensor caches Numba's compiled ``CholeskyInverse`` (with the
class and the dtypes): a new number where the implementation changes, so that no cache
serves an older one."""


def _numba_potri(dtype):
    """LAPACK's ``?potri`` for ``dtype``, called from Numba through SciPy's ``cython_lapack``
    (the pointer looked up when first called, so that the compiled code can be cached), as
    PyTensor calls ``?potrf``."""
    dtype = numba.from_dtype(dtype)
    kind = get_blas_kind(dtype)
    float_pointer = types.CPointer(dtype)
    cache_name = f"pm_evidence.lapack.{kind}potri"
    int_pointer = types.CPointer(types.int32)

    @numba_njit
    def pointer():
        with numba.objmode(address=types.intp):
            address = get_lapack_ptr(dtype, "potri")
        return address

    signature = types.FunctionType(
        types.void(int_pointer, int_pointer, float_pointer, int_pointer, int_pointer)
    )

    @numba_njit
    def potri(uplo, n, a, lda, info):
        function = _call_cached_ptr(
            get_ptr_func=pointer,
            func_type_ref=signature,
            unique_func_name_lit=cache_name,
        )
        function(uplo, n, a, lda, info)

    return potri


@register_funcify_default_op_cache_key(CholeskyInverse)
def _numba_funcify_cholesky_inverse(op, node, **kwargs):
    ensure_lapack()
    potri = _numba_potri(node.inputs[0].type.numpy_dtype)

    @numba_njit
    def cholesky_inverse(L):
        n = L.shape[0]
        # a C-ordered array read in Fortran's order is its transpose: the upper factor L^T
        out = np.zeros((n, n), dtype=L.dtype)
        for i in range(n):
            for j in range(i + 1):
                out[i, j] = L[i, j]
        info = val_to_int_ptr(np.int32(0))
        potri(val_to_int_ptr(np.int32(ord("U"))), val_to_int_ptr(np.int32(n)), out.ctypes,
              val_to_int_ptr(np.int32(n)), info)  # fmt: skip
        if int_ptr_to_val(info) != 0:
            out[:] = np.nan
            return out
        for i in range(n):  # potri wrote the lower triangle (the upper one in its order)
            for j in range(i + 1, n):
                out[i, j] = out[j, i]
        return out

    return cholesky_inverse, CHOLESKY_INVERSE_VERSION


class UncheckedShapes(_Replacing):
    """Replace every ``SpecifyShape`` by :class:`AssumedShape` (same output type, no run-time
    check): see the module's docstring."""

    def apply(self, fgraph):
        for node in list(fgraph.toposort()):
            if isinstance(node.op, SpecifyShape):
                assumed = AssumedShape().node_like(node).outputs[0]
                fgraph.replace_validate(node.outputs[0], assumed, reason="unchecked_shapes")


class ContiguousCopy(Op):
    """``np.ascontiguousarray(x)``: ``x`` itself if C-contiguous, else a C-ordered copy.

    The output may be the input itself, so it is declared a view of it (``view_map``): an
    operation that works in place on the output (a triangular solve overwriting its right-hand
    side) then counts as destroying the input, which PyTensor allows only where nothing else
    reads it (never a function's input or a constant)."""

    __props__ = ()
    view_map: ClassVar[dict[int, list[int]]] = {0: [0]}

    def make_node(self, x):
        """A node of ``x``'s type."""
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        """``np.ascontiguousarray`` of the input (PyTensor's Python and C linkers)."""
        output_storage[0][0] = np.ascontiguousarray(inputs[0])

    def infer_shape(self, node, shapes):
        """The input's shape."""
        return [shapes[0]]


@register_funcify_default_op_cache_key(ContiguousCopy)
def _numba_funcify_contiguous_copy(op, node, **kwargs):
    @numba_njit
    def contiguous_copy(x):
        return np.ascontiguousarray(x)

    return contiguous_copy


def _computed(var) -> bool:
    return var.owner is not None and not isinstance(var.owner.op, ContiguousCopy)


class ContiguousDotOperands(_Replacing):
    """Give every computed operand of a matrix product (``Dot``) a C-ordered copy
    (:class:`ContiguousCopy`); inputs and constants are C-ordered already
    (:class:`ContiguousConstants`, and the rows are split contiguous).

    A transpose (``X.T`` of data in ``pm.Data``, or of an intermediate array) is a
    Fortran-ordered view, and so is an elementwise result of transposes; Numba compiles
    ``np.dot`` once per pair of memory layouts: a regression's gradient with its design matrix
    in ``pm.Data`` compiled it for (C, F) and (F, F), 2.6 s and 1.6 s from empty caches, besides
    (C, C). The copy (none where the operand is C-ordered already) costs one pass over the
    operand per call, against the product's one pass per column of the other operand.
    """

    def apply(self, fgraph):
        for node in list(fgraph.toposort()):
            if isinstance(node.op, Dot) and any(_computed(v) for v in node.inputs):
                operands = [ContiguousCopy()(v) if _computed(v) else v for v in node.inputs]
                product = node.op(*operands)
                fgraph.replace_validate(node.outputs[0], product, reason="contiguous_dot")


@node_rewriter([CAReduce])
def _reduce_before_expand_dims(fgraph, node):
    """``reduce(expand_dims(x), axes)`` -> ``expand_dims(reduce(x, axes'))``, where none of
    ``axes`` is one of the new (length-1) axes."""
    (expanded,) = node.inputs
    if expanded.owner is None or not isinstance(expanded.owner.op, DimShuffle):
        return None
    expand = expanded.owner.op
    if not expand.is_expand_dims:
        return None
    axes = range(expanded.ndim) if node.op.axis is None else node.op.axis
    if any(expand.new_order[a] == "x" for a in axes):
        return None
    (x,) = expanded.owner.inputs
    reduced_axes = {expand.new_order[a] for a in axes}
    reduced = node.op.clone(axis=tuple(sorted(reduced_axes)))(x)
    # the kept axes of x, numbered after the reduction, and the new axes where they were
    kept = [d for d in range(x.ndim) if d not in reduced_axes]
    order = [
        o if o == "x" else kept.index(o) for i, o in enumerate(expand.new_order) if i not in axes
    ]
    return [reduced.dimshuffle(order)]


@node_rewriter([DimShuffle])
def _merge_dimshuffles(fgraph, node):
    """``dimshuffle(dimshuffle(x))`` -> one dimshuffle of ``x``, or ``x`` itself."""
    inner = node.inputs[0].owner
    if inner is None or not isinstance(inner.op, DimShuffle):
        return None
    order = [o if o == "x" else inner.op.new_order[o] for o in node.op.new_order]
    (x,) = inner.inputs
    if order == list(range(x.ndim)):
        return [x]
    return [x.dimshuffle(order)]


@node_rewriter([Dot, BatchedDot, Blockwise])
def _vector_product_as_sum(fgraph, node):
    """``a @ b``, per row or not, with ``a (..., m, k)`` and ``b (..., k, n)``, where the sum's
    length ``k`` is static and at most ``MAX_PRODUCT_AS_SUM``, and ``m`` or ``n`` is a static 1
    (a vector with a matrix or a vector) or ``m k n`` is static and at most
    ``MAX_PRODUCT_AS_SUM`` -> ``sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)``."""
    if isinstance(node.op, Blockwise) and not isinstance(node.op.core_op, Dot):
        return None
    a, b = node.inputs
    if node.outputs[0].dtype not in _FLOATS or a.dtype != b.dtype or min(a.ndim, b.ndim) < 2:
        return None
    m, k, n = a.type.shape[-2], a.type.shape[-1], b.type.shape[-1]
    if k is None or k > MAX_PRODUCT_AS_SUM:
        return None
    small = None not in (m, n) and m * k * n <= MAX_PRODUCT_AS_SUM
    if m != 1 and n != 1 and not small:
        return None
    terms = pt.expand_dims(a, -1) * pt.expand_dims(b, -3)
    return [terms.sum(axis=-2, dtype=a.dtype, acc_dtype=a.dtype)]


# Matrix products with a vector, or of small matrices, as products and a sum (see the module's
# docstring). The products are an array of m k n numbers per row: with a vector (m or n = 1), no
# larger than the other side; otherwise only for small static shapes. Only short sums: the loop
# adds its terms one after the other, where BLAS's kernels add several at once (a long product
# with a vector, a Gaussian process's ``L @ f`` per row, stays with BLAS).
MAX_PRODUCT_AS_SUM = 64
VECTOR_PRODUCTS_AS_SUMS = WalkingGraphRewriter(_vector_product_as_sum, order="in_to_out")


# Reductions chained across an ExpandDims, ``sum(expand_dims(sum(x, 1), 1), 2)``: the gradient of
# a mixture's log-density in its location (points x observations x components, summed over
# both) has this shape after vectorization. Moved below the ExpandDims, the two reductions merge
# into one (PyTensor's ``local_reduce_chain``) that the fusion of elementwise operations then
# takes into its loop; left apart, the outer one was a reduction of a strided view of its own,
# which numba took 11-12 s to compile. The 3-component mixture's value-and-gradient function
# from empty caches: 22.6 and 25.5 s before, 9.6 and 9.5 s after.
REDUCTIONS_ACROSS_EXPAND_DIMS = WalkingGraphRewriter(
    SequentialNodeRewriter(_reduce_before_expand_dims, _merge_dimshuffles, local_reduce_chain),
    order="in_to_out",
)


_FLOATS = ("float64", "float32")  # the dtypes the sum rewrites below apply to


def _static_length(fgraph, x, axis: int) -> int | None:
    """The length of ``x`` along ``axis`` where the graph knows it as a number, else None."""
    if x.type.shape[axis] is not None:
        return x.type.shape[axis]
    shape_feature = getattr(fgraph, "shape_feature", None)
    if shape_feature is None:
        return None
    try:
        return int(get_underlying_scalar_constant_value(shape_feature.get_shape(x, axis)))
    except NotScalarConstantError:
        return None


@node_rewriter([CumOp])
def _cumsum_as_masked_sum(fgraph, node):
    """``cumsum(x, axis)`` -> ``sum(where(i <= j, x_i, 0), over i)``, along an axis of at most
    ``MAX_CUMSUM_AS_SUM`` entries known from the graph."""
    (x,) = node.inputs
    if node.op.mode != "add" or node.op.axis is None or x.dtype not in _FLOATS:
        return None
    axis = node.op.axis % x.ndim
    k = _static_length(fgraph, x, axis)
    if k is None or k > MAX_CUMSUM_AS_SUM:
        return None
    # lower[j, i] = i <= j, as an array of x.ndim + 1 dimensions: j at axis, i at axis + 1
    lower = np.tril(np.ones((k, k), dtype=bool)).reshape(
        (1,) * axis + (k, k) + (1,) * (x.ndim - axis - 1)
    )
    terms = pt.switch(lower, pt.expand_dims(x, axis), np.zeros((), dtype=x.dtype))
    return [terms.sum(axis=axis + 1, dtype=x.dtype, acc_dtype=x.dtype)]


# Cumulative sums as masked sums (see the module's docstring): O(k^2) terms for k entries, so
# only along short axes.
MAX_CUMSUM_AS_SUM = 32
CUMSUMS_AS_SUMS = WalkingGraphRewriter(_cumsum_as_masked_sum, order="in_to_out")


@node_rewriter([Blockwise])
def _triangular_solve_by_columns(fgraph, node):
    """``Blockwise(solve_triangular(b_ndim=1))(A, b)`` with ``A (..., 1, m, m)`` the same along
    the last batch axis of ``b (..., K, m)`` -> ``x = solve_triangular(A (..., m, m), b^T (...,
    m, K))`` with ``x^T`` as its result: the ``K`` solves with one factor as one solve of ``K``
    right-hand sides (the batch axes are PyTensor's, ``A``'s padded on the left)."""
    core = node.op.core_op
    if not isinstance(core, SolveTriangular) or core.b_ndim != 1:
        return None
    A, b = node.inputs
    n_batch = max(A.type.ndim - 2, b.type.ndim - 1)
    if n_batch == 0:
        return None
    A = pt.shape_padleft(A, n_batch - (A.type.ndim - 2))
    b = pt.shape_padleft(b, n_batch - (b.type.ndim - 1))
    axis = n_batch - 1
    if not A.type.broadcastable[axis] or b.type.broadcastable[axis]:
        return None
    by_columns = Blockwise(
        SolveTriangular(lower=core.lower, unit_diagonal=core.unit_diagonal, b_ndim=2)
    )
    # C-ordered columns: Numba's solve then works in the array's own row-major frame (its
    # compile from empty caches about 2 s shorter on lkj_2d than through a Fortran copy)
    x = by_columns(A.squeeze(axis), ContiguousCopy()(pt.moveaxis(b, axis, -1)))
    return [pt.moveaxis(x, -1, axis).astype(node.outputs[0].dtype)]


TRIANGULAR_SOLVES_BY_COLUMNS = WalkingGraphRewriter(_triangular_solve_by_columns)


@node_rewriter([Blockwise])
def _blockwise_with_shared_inputs(fgraph, node):
    """``Blockwise(op)(x, s)`` with ``s`` the same for every row (its batch dimensions of length
    one) -> ``op`` vectorized again on ``x`` and ``s`` without its batch dimensions, where that
    leaves no ``Blockwise``."""
    op = node.op
    core_inputs, inputs = [], []
    for inp, signature in zip(node.inputs, op.inputs_sig, strict=True):
        n_batch = inp.type.ndim - len(signature)
        core_inputs.append(inp.type.clone(shape=inp.type.shape[n_batch:])())
        shared = n_batch > 0 and all(inp.type.broadcastable[:n_batch])
        if not shared:
            inputs.append(inp)
        elif isinstance(inp, pt.TensorConstant):  # a constant still (SPLITS_AS_SLICES reads it)
            inputs.append(pt.constant(inp.data.reshape(inp.data.shape[n_batch:])))
        else:
            inputs.append(inp.squeeze(tuple(range(n_batch))))
    if all(new is old for new, old in zip(inputs, node.inputs, strict=True)):
        return None
    core_outputs = op.core_op.make_node(*core_inputs).outputs
    outputs = vectorize_graph(core_outputs, replace=dict(zip(core_inputs, inputs, strict=True)))
    if any(isinstance(n.op, Blockwise) for n in apply_ancestors(outputs, blockers=inputs)):
        return None
    if any(
        new.type.ndim != old.type.ndim or not old.type.is_super(new.type)
        for new, old in zip(outputs, node.outputs, strict=True)
    ):
        return None
    return outputs


# A Blockwise whose core op vectorizes without one (a Split along a later axis) once its shared
# inputs lose their batch dimensions. The gradient of a Dirichlet's simplex transform (a Join
# in the log-density, a Split in its gradient) has split sizes that vectorization left with a
# batch dimension of length one ([[2, 1]]), so PyTensor kept a Blockwise of Split, a loop over
# rows that splits one row at a time. One Split of all rows instead, measured on 4,096 points
# (docs/benchmarks.rst): the zoo's Dirichlet-categorical model's value and gradient 1.15-1.40
# -> 0.43 us per point, a 3-component mixture with Dirichlet weights 2.18 -> 1.76 us; the same
# values. The compile from empty caches is about the same (23-26 s for the former).
SHARED_BLOCKWISE_INPUTS = WalkingGraphRewriter(_blockwise_with_shared_inputs, order="in_to_out")


def _indexed_axes(idx_list) -> list[int] | None:
    """The axes an indexing operation's ``idx_list`` takes an index on, where it takes every
    other axis whole (``slice(None)``); None where it slices one."""
    axes = []
    for axis, entry in enumerate(idx_list):
        if not isinstance(entry, slice):
            axes.append(axis)
        elif entry != slice(None):
            return None
    return axes


@node_rewriter([Blockwise])
def _indexing_by_batched_indices(fgraph, node):
    """``Blockwise(x[i, j, ...])`` with ``x`` the same for every row and the integer indices
    batched -> ``x[i, j, ...]`` with the indices as arrays (their batch dimensions first, then
    their own), NumPy's advanced indexing: the same elements (see
    ``INDEXING_BY_BATCHED_INDICES``)."""
    op = node.op
    core = op.core_op
    if not isinstance(core, AdvancedSubtensor | Subtensor):
        return None
    axes = _indexed_axes(core.idx_list)
    if axes is None or axes != list(range(len(axes))):
        return None  # the indices first and consecutive, whole axes after them
    if isinstance(core, Subtensor) and len(axes) != len(core.idx_list):
        return None  # a basic indexing by scalars only
    n_indices = len(axes)
    x, *indices = node.inputs[: len(op.inputs_sig)]
    n_batch = x.type.ndim - len(op.inputs_sig[0])
    if n_batch <= 0 or not all(x.type.broadcastable[:n_batch]):
        return None
    core_ndims = {len(signature) for signature in op.inputs_sig[1:]}
    if len(core_ndims) != 1 or any(
        index.type.dtype not in integer_dtypes or index.type.ndim == 0 for index in indices
    ):
        return None  # batch and core dimensions must line up from the right in every index
    read = AdvancedSubtensor(tuple(range(n_indices)))(x.squeeze(tuple(range(n_batch))), *indices)
    if not node.outputs[0].type.is_super(read.type):
        return None
    return [read]


# An indexing of an array the same for every row by batched integer indices (a Categorical
# variable's values indexing its probabilities, ``p[x]``, where the model's graphs did not turn
# it into a mask, :func:`~pm_evidence.model.graphs.slices_as_masks`; a matrix's entry
# ``P[i, j]`` at two discrete variables), which vectorization left as a Blockwise loop over
# rows: NumPy's advanced indexing of the array itself by the indices with their batch
# dimensions. The zoo's ``categorical_chain`` value function from empty caches 9.0 -> 3.9 s, the
# same values at all of its 729 states.
INDEXING_BY_BATCHED_INDICES = WalkingGraphRewriter(_indexing_by_batched_indices, order="in_to_out")


@node_rewriter([Split])
def _split_as_slices(fgraph, node):
    """``split(x, sizes, axis)`` with constant ``sizes`` summing to ``x``'s static length along
    ``axis`` -> the slices ``x[..., s_i:s_i + n_i]``: the same views (see ``SPLITS_AS_SLICES``)."""
    x, sizes = node.inputs
    axis = node.op.axis
    if not isinstance(sizes, pt.TensorConstant) or x.type.shape[axis] is None:
        return None
    sizes = np.asarray(sizes.data)
    if (sizes < 0).any() or sizes.sum() != x.type.shape[axis]:
        return None  # Split's own error at run time
    ends = np.cumsum(sizes)
    lead = (slice(None),) * axis
    parts = [x[(*lead, slice(int(e - n), int(e)))] for e, n in zip(ends, sizes, strict=True)]
    if any(not old.type.is_super(new.type) for new, old in zip(parts, node.outputs, strict=True)):
        return None
    return parts


# Numba's Split (PyTensor's: ``np.cumsum`` of the sizes, their checks with a formatted error
# message, ``np.split``) takes seconds to compile in the gradient of a simplex transform's
# ``Join``; slices compile as strided views. A Split's outputs are views of ``x`` (its ``view_map``), as slices are.
SPLITS_AS_SLICES = WalkingGraphRewriter(_split_as_slices, order="in_to_out")


# The floating-point reductions whose scalar operation Numba's FusedElemwise accumulates in its
# loop (PyTensor's own list, with the Boolean ones, is private).
_FUSABLE_REDUCTIONS = (Add, Mul, Maximum, Minimum)
# The dtypes whose sums PyTensor accumulates in the dtype itself: floats, and 64-bit integers
# (the count of a row of Bernoulli values; narrower integers are summed as int64)
_ANCHORED_DTYPES = (*_FLOATS, "int64", "uint64")


@node_rewriter([CAReduce])
def _reduction_through_identity(fgraph, node):
    """``reduce(x)`` -> ``reduce(identity(x))`` where no ``Elemwise`` computes ``x``: the
    identity is an anchor for PyTensor's ``FusedElemwise``, which then makes the reduction one
    loop instead of Numba's stand-alone reducer (slow to compile; see the module's docstring).
    Only where the reduction accumulates in the array's own dtype, which the fused loop does."""
    [x] = node.inputs
    if not isinstance(node.op.scalar_op, _FUSABLE_REDUCTIONS):
        return None
    if x.owner is not None and isinstance(x.owner.op, Elemwise):
        return None  # fused already, or an output also read elsewhere (left as it is)
    if x.dtype not in _ANCHORED_DTYPES or node.outputs[0].dtype != x.dtype:
        return None
    if getattr(node.op, "acc_dtype", None) not in (None, x.dtype):
        return None
    return [node.op(Elemwise(scalar_identity)(x))]


FUSION_ANCHORS = WalkingGraphRewriter(_reduction_through_identity, order="in_to_out")


def _advanced_axes(node, n_skip: int) -> tuple[int, int] | None:
    """``(p, a)`` where an advanced indexing ``node`` takes ``a`` consecutive integer arrays on
    axes ``p, ..., p + a - 1`` with ``p > 0`` after full slices only (``x[:, idx]``, the
    vectorized form of ``x[idx]``); ``None`` otherwise (nothing to move, or a Boolean, scalar,
    bounded-slice or non-consecutive index, which keep their meaning only where they are)."""
    op = node.op
    axes = _indexed_axes(op.idx_list)
    if not axes or axes[0] == 0 or op.non_consecutive_adv_indexing(node):
        return None
    if any(i.type.dtype not in integer_dtypes or i.type.ndim == 0 for i in node.inputs[n_skip:]):
        return None
    return axes[0], len(axes)


@node_rewriter([AdvancedSubtensor, AdvancedIncSubtensor])
def _advanced_indices_first(fgraph, node):
    """``x[:, idx]`` -> ``x.T[idx]`` transposed back, and the same for an indexed update, as
    ``DimShuffle`` views: the advanced indices on the leading axes, the same elements read or
    written (see ``ADVANCED_INDICES_FIRST``)."""
    op = node.op
    write = isinstance(op, AdvancedIncSubtensor)
    n_skip = 2 if write else 1
    found = _advanced_axes(node, n_skip)
    if found is None:
        return None
    p, a = found
    x, indices = node.inputs[0], node.inputs[n_skip:]
    ndim = x.type.ndim
    to_front = (*range(p, p + a), *range(p), *range(p + a, ndim))
    k = max(index.type.ndim for index in indices)  # dimensions of the broadcast indices
    # x[:, idx] has shape (leading (p), index (k), trailing); with the indices first,
    # (index, leading, trailing)
    indexed_ndim = ndim - a + k
    index_first = (*range(p, p + k), *range(p), *range(p + k, indexed_ndim))
    leading_first = tuple(int(i) for i in np.argsort(index_first))
    new_idx_list = tuple(range(a))
    if not write:
        read = AdvancedSubtensor(new_idx_list)(x.dimshuffle(to_front), *indices)
        return [read.dimshuffle(leading_first)]
    y = node.inputs[1]
    y = pt.shape_padleft(y, indexed_ndim - y.type.ndim)  # y broadcasts from the right
    update = AdvancedIncSubtensor(
        new_idx_list,
        inplace=op.inplace,
        set_instead_of_inc=op.set_instead_of_inc,
        ignore_duplicates=op.ignore_duplicates,
    )(x.dimshuffle(to_front), y.dimshuffle(index_first), *indices)
    return [update.dimshuffle(tuple(int(i) for i in np.argsort(to_front)))]


# After PyTensor's fusion of indexed reads and updates into elementwise loops (optdb position
# 100), which takes ``x[:, idx]`` as it is, so only the indexing left outside a loop moves.
ADVANCED_INDICES_POSITION = 100.5

# Numba's implementation of an advanced indexing (PyTensor's generated code) moves the indexed
# axes to the front with ``x.transpose(order)``, whose compile costs Numba 2.3-2.6 s the first
# time in a process (0.27 s for ``x.T``; measured on a (5, 3) matrix from empty caches), where
# the indices follow a slice: ``x[:, idx]`` of a vectorized graph, the rows first. The indexing
# left after the fusion (a ``take_along_axis`` that the model's graphs did not turn into a mask,
# :func:`~pm_evidence.model.graphs.slices_as_masks`; an LKJ prior's triangular fill and its
# gradient) is rewritten with the indices first and PyTensor's own ``DimShuffle`` views around
# it, which Numba compiles as strided views.
# An in-place update stays in place on the view of the same buffer; where PyTensor's in-place
# checks refuse that, the node is left as it was (``warn_inplace`` ignores the refusal).
ADVANCED_INDICES_FIRST = WalkingGraphRewriter(
    _advanced_indices_first,
    order="in_to_out",
    failure_callback=NodeProcessingGraphRewriter.warn_inplace,
)


@cache
def _register_jax_implementations() -> None:
    """This module's operations that every linker's rewrites insert, on PyTensor's JAX backend
    (registered when a JAX function is first built, so that JAX is imported only then):
    :class:`ContiguousCopy` is the identity there (XLA chooses its own layouts), and
    :class:`~pm_evidence.model.gaussian.CholeskyInverse` a ``cho_solve``."""
    register_jax_identity(ContiguousCopy)
    register_jax_cholesky_inverse(CholeskyInverse)


@without_garbage_collection()
def model_function(inputs, outputs, **kwargs):
    """``pytensor.function(inputs, outputs, mode=model_function_mode(), **kwargs)`` for a
    function on the hot paths, built with numba's fast-math flags off
    (``config.numba__fastmath``, on by PyTensor's default), so that its numbers do not depend on
    the state of PyTensor's cache.

    With the flags on, a function that numba compiles from empty caches and the same function
    compiled against callees loaded from the cache give results that differ in their last bits
    (LLVM reassociates and approximates across the functions it sees together), and the
    samplers amplify the difference: the first call on a machine and every later call gave
    different ``log Z`` for the same seed (by more than their SEs on a periodic model). With
    them off both give the same numbers, and warm calls take the same time (measured:
    docs/benchmarks.rst, "Fewer NumPy operations per leapfrog step"). PyTensor reads the flag
    while it builds the function's numba code, so it is needed only then."""
    with config.change_flags(numba__fastmath=False):
        return function(inputs, outputs, mode=model_function_mode(), **kwargs)


def model_function_mode(jax: bool = False) -> Mode:
    """PyTensor's default mode (its ``"JAX"`` mode with ``jax=True``), with, at
    ``REWRITES_POSITION`` and in this order,
    :class:`ContiguousConstants`, ``TRIANGULAR_SOLVES_BY_COLUMNS``,
    ``SHARED_BLOCKWISE_INPUTS`` and ``INDEXING_BY_BATCHED_INDICES``, then, under the Numba
    linker, :class:`UncheckedShapes`, ``VECTOR_PRODUCTS_AS_SUMS``, :class:`ContiguousDotOperands`,
    ``REDUCTIONS_ACROSS_EXPAND_DIMS``, ``CUMSUMS_AS_SUMS`` and ``SPLITS_AS_SLICES``; and, under
    the Numba linker, ``FUSION_ANCHORS`` at ``FUSION_ANCHORS_POSITION`` and
    ``ADVANCED_INDICES_FIRST`` at ``ADVANCED_INDICES_POSITION``.

    The rewrites at one position are one ``SequentialGraphRewriter``: PyTensor orders rewrites
    registered at the same position by their names, which for rewriters registered with a mode
    hold the object's ``id``. As in PyTensor's own sequence, a rewriter that raises is logged
    and skipped."""
    if jax:
        _register_jax_implementations()
    mode = get_mode("JAX") if jax else get_default_mode()
    numba = isinstance(mode.linker, NumbaLinker)
    before_fusion = [
        ContiguousConstants(),
        TRIANGULAR_SOLVES_BY_COLUMNS,
        SHARED_BLOCKWISE_INPUTS,
        INDEXING_BY_BATCHED_INDICES,
    ]
    if numba:
        before_fusion += [
            UncheckedShapes(),
            VECTOR_PRODUCTS_AS_SUMS,
            ContiguousDotOperands(),
            REDUCTIONS_ACROSS_EXPAND_DIMS,
            CUMSUMS_AS_SUMS,
            SPLITS_AS_SLICES,
        ]
    sequence = SequentialGraphRewriter(before_fusion, failure_callback=SequentialGraphRewriter.warn)
    mode = mode.register((sequence, REWRITES_POSITION))
    if numba:
        mode = mode.register((FUSION_ANCHORS, FUSION_ANCHORS_POSITION))
        mode = mode.register((ADVANCED_INDICES_FIRST, ADVANCED_INDICES_POSITION))
    return mode
