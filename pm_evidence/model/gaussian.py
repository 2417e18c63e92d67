"""A multivariate normal log density differentiated in closed form, not through its Cholesky
factorization.

PyMC's ``MvNormal(mu, cov=K)`` log density at ``y`` factors ``K = L L^T`` and reads two numbers
from ``L``: ``sum log diag L`` (``½ log|K|``) and ``q = |L^-1 (y - mu)|^2`` (``(y - mu)^T K^-1
(y - mu)``). PyTensor differentiates both through the factorization (Murray's formula: a product
of two ``n x n`` matrices and two triangular solves with ``n`` right-hand sides per point, about
``4 n^3`` operations). Their gradients have a closed form,

.. math::

    \\frac{\\partial\\, \\tfrac12 \\log|K|}{\\partial K} = \\tfrac12 K^{-1}, \\qquad
    \\frac{\\partial q}{\\partial K} = -\\alpha \\alpha^T, \\qquad
    \\frac{\\partial q}{\\partial \\delta} = 2 \\alpha, \\qquad
    \\alpha = K^{-1} \\delta,\\ \\delta = y - \\mu,

so that the gradient of ``log N(y | mu, K)`` with respect to ``K`` is ``½ (α α^T - K^-1)``
(Rasmussen and Williams, *Gaussian Processes for Machine Learning*, eq. 5.9): ``K^-1`` from the
factor by two triangular solves. A Gaussian-process likelihood spends most of its gradient there.

:func:`gaussian_gradients` rewrites a model's graphs, before any gradient is taken, so that each
``cholesky(K)`` read only as PyMC's ``MvNormal`` reads it is :class:`GaussianTerms`, whose value
is the same graph and whose gradient is the closed form. Like PyTensor's own Cholesky gradient,
the gradient with respect to ``K`` is written into its lower triangle (the factorization reads
no other part), so both give the same gradient of the parameters ``K`` is built from.

``K^-1`` is :class:`CholeskyInverse` of the factor: LAPACK's ``potri``, which inverts ``L`` and
multiplies ``L^-T L^-1`` in about ``2 n^3 / 3`` operations, a third of the ``2 n^3`` of two
triangular solves with the ``n`` columns of the identity as right-hand sides (``cho_solve``).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import scipy.linalg
from pytensor.compile.builders import SymbolicOp
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.scalar import basic as ps
from pytensor.tensor.basic import ExtractDiag, get_underlying_scalar_constant_value
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.linalg import cho_solve, cholesky, solve_triangular
from pytensor.tensor.linalg.decomposition.cholesky import Cholesky
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular
from pytensor.tensor.math import Sum

__all__ = ["CholeskyInverse", "GaussianTerms", "cholesky_inverse", "core_op", "gaussian_gradients"]

_FLOATS = ("float64", "float32")


class GaussianTerms(SymbolicOp):
    """``(diag L, sum log diag L, sum (L^-1 delta)^2)`` for ``L = cholesky(K)`` (lower), of
    ``K (..., n, n)`` and ``delta (..., n)`` (broadcast over their leading axes): the diagonal
    (PyMC checks it is positive), half ``log|K|`` and the quadratic form
    ``delta^T K^-1 delta``, each summed over the last axis.

    The value is PyTensor's own graph of the three. The gradient of the two sums is the closed
    form of the module's text; the diagonal's is Murray's formula through the factorization
    where it is anything but zero (PyMC only compares it with 0, whose gradient is zero)."""

    inline = True

    def build_inner_graph(self, K, delta):
        """The three outputs as PyTensor's own operations compute them (PyMC's graph)."""
        L = cholesky(K, lower=True)
        diagonal = pt.diagonal(L, axis1=-2, axis2=-1)
        solved = solve_triangular(L, delta, lower=True, b_ndim=1)
        return [diagonal, pt.log(diagonal).sum(axis=-1), (solved**2).sum(axis=-1)]

    def pullback(self, inputs, outputs, output_grads):
        """The gradients with respect to ``K`` (its lower triangle) and ``delta``: the closed
        form for the two sums, Murray's formula for a diagonal whose gradient is not zero."""
        K, delta = inputs
        g_diagonal, g_half_logdet, g_quadratic = output_grads
        L = cholesky(K, lower=True)
        n = K.shape[-1]
        K_bar_symmetric = []  # terms of the gradient as a symmetric matrix, each K's shape
        delta_bar = None
        if not _disconnected(g_quadratic):
            alpha = cho_solve((L, True), delta, b_ndim=1)
            g = g_quadratic[..., None, None]
            outer = alpha[..., :, None] * alpha[..., None, :]
            K_bar_symmetric.append(_summed_to(-g * outer, K))  # over delta's own batch too
            delta_bar = 2.0 * g_quadratic[..., None] * alpha
        if not _disconnected(g_half_logdet):
            inverse = cholesky_inverse(L)
            K_bar_symmetric.append(_summed_to(0.5 * g_half_logdet[..., None, None] * inverse, K))
        K_bar = None
        if K_bar_symmetric:
            symmetric = pt.add(*K_bar_symmetric)
            # the lower triangle, off-diagonal entries doubled (the factorization reads only it)
            K_bar = 2.0 * pt.tril(symmetric) - symmetric * pt.eye(n, dtype=K.dtype)
        if not (_disconnected(g_diagonal) or _is_zero(g_diagonal)):
            embedded = g_diagonal[..., :, None] * pt.eye(n, dtype=K.dtype)  # diag(g) per matrix
            through = pytensor.gradient.pullback(L, K, embedded)
            K_bar = through if K_bar is None else K_bar + through
        return [
            disconnected_type() if K_bar is None else _summed_to(K_bar, K),
            disconnected_type() if delta_bar is None else _summed_to(delta_bar, delta),
        ]


class CholeskyInverse(Op):
    """``K^-1 = L^-T L^-1`` of a lower triangular Cholesky factor ``L (n, n)`` of ``K``, the
    whole symmetric matrix (:func:`cholesky_inverse` for stacks of factors): LAPACK's
    ``potri``, about ``2 n^3 / 3`` operations. A factor with a zero on its diagonal (``potri``'s
    ``info > 0``) gives a matrix of NaN, as PyTensor's Cholesky does where ``K`` is not
    positive definite. No gradient: only gradients are built from it. Compiled by Numba as a
    call of ``potri`` (:mod:`pm_evidence.model.compile_mode`); on JAX, which has no ``potri``,
    as ``cho_solve`` with the identity
    (:func:`~pm_evidence.model.backend.register_jax_cholesky_inverse`)."""

    __props__ = ()
    gufunc_signature = "(m,m)->(m,m)"

    def make_node(self, L):
        """A node of ``L``'s matrix type."""
        L = pt.as_tensor_variable(L)
        if L.ndim != 2 or L.dtype not in _FLOATS:
            raise TypeError(f"CholeskyInverse takes a float matrix, not {L.type}")
        return Apply(self, [L], [L.type()])

    def perform(self, node, inputs, output_storage):
        """SciPy's ``potri`` (PyTensor's Python linker)."""
        (L,) = inputs
        potri = scipy.linalg.get_lapack_funcs("potri", (L,))
        inverse, info = potri(L, lower=True)
        if info != 0:
            inverse = np.full_like(L, np.nan)
        lower = np.tril(inverse)
        output_storage[0][0] = lower + np.tril(inverse, -1).T

    def infer_shape(self, node, shapes):
        """The factor's shape."""
        return [shapes[0]]


def cholesky_inverse(L):
    """:class:`CholeskyInverse` of each matrix of ``L (..., n, n)``."""
    return Blockwise(CholeskyInverse())(L)


def _disconnected(g) -> bool:
    return isinstance(g.type, DisconnectedType)


def _is_zero(g) -> bool:
    """Whether ``g`` is a constant zero, such as the gradient a comparison passes back."""
    try:
        return float(get_underlying_scalar_constant_value(g, elemwise=True)) == 0.0
    except NotScalarConstantError:
        return False


def _summed_to(g, x):
    """``g``, broadcast against ``x`` in the forward graph, summed back to ``x``'s shape."""
    extra = g.ndim - x.ndim
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    axes = [i for i, b in enumerate(x.type.broadcastable) if b and not g.type.broadcastable[i]]
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g if g.type == x.type else pt.specify_shape(pt.cast(g, x.dtype), x.type.shape)


def core_op(node, op_type):
    """``node``'s operation, or the one a ``Blockwise`` wraps, where it is an ``op_type``."""
    op = node.op.core_op if isinstance(node.op, Blockwise) else node.op
    return op if isinstance(op, op_type) else None


def _sums_over_last_axis(fgraph, var) -> list:
    """The outputs of the ``Sum`` nodes over ``var``'s last axis that are ``var``'s only
    readers, or ``[]`` where anything else reads it."""
    sums = []
    for client, _ in fgraph.clients[var]:
        if not (
            isinstance(client.op, Sum) and client.op.axis == (var.ndim - 1,)
            and client.outputs[0].dtype == var.dtype
        ):  # fmt: skip
            return []
        sums.append(client.outputs[0])
    return sums


def _squared(node) -> bool:
    """Whether ``node`` squares its first input: ``sqr(z)`` or ``z ** 2``."""
    if not isinstance(node.op, Elemwise):
        return False
    if isinstance(node.op.scalar_op, ps.Sqr):
        return True
    if isinstance(node.op.scalar_op, ps.Pow):
        try:
            return float(get_underlying_scalar_constant_value(node.inputs[1])) == 2.0
        except NotScalarConstantError:
            return False
    return False


def _diagonal_of_last_axes(node, ndim: int) -> bool:
    """Whether ``node`` takes the main diagonal of the last two of ``ndim`` axes."""
    op, last_two = node.op, (ndim - 2, ndim - 1)
    return isinstance(op, ExtractDiag) and (op.offset, op.axis1, op.axis2) == (0, *last_two)


@node_rewriter([Blockwise, Cholesky])
def _gaussian_terms(fgraph, node):
    """``cholesky(K)`` (lower) read only by ``diag`` (of the last two axes) and by one lower
    triangular solve of vectors ``z = L^-1 delta``, where ``z`` is read only as ``sum(z^2)``
    over its last axis and each ``log(diag)`` only as a sum over its last axis ->
    :class:`GaussianTerms`: those sums, and the diagonal for its other readers."""
    op = core_op(node, Cholesky)
    if op is None or not op.lower or node.inputs[0].dtype not in _FLOATS:
        return None
    (K,), (L,) = node.inputs, node.outputs
    diagonals, solves = [], []
    readers = [(client, L) for client, _ in fgraph.clients[L]]
    while readers:
        client, factor = readers.pop()
        left_expand = isinstance(client.op, DimShuffle) and client.op.is_left_expand_dims
        if left_expand and factor is L:  # L broadcast against delta's batch
            readers += [(c, client.outputs[0]) for c, _ in fgraph.clients[client.outputs[0]]]
            continue
        if factor is L and _diagonal_of_last_axes(client, L.ndim):
            diagonals.append(client.outputs[0])
            continue
        solve = core_op(client, SolveTriangular)
        if (
            solve is None or not solve.lower or solve.unit_diagonal or solve.b_ndim != 1
            or client.inputs[0] is not factor or client.inputs[1] is factor
        ):  # fmt: skip
            return None
        solves.append(client)
    if len(solves) != 1 or not diagonals:
        return None
    (solved,) = solves[0].outputs
    quadratics = []
    for client, _ in fgraph.clients[solved]:
        if not _squared(client) or client.inputs[0] is not solved:
            return None
        sums = _sums_over_last_axis(fgraph, client.outputs[0])
        if not sums:
            return None
        quadratics += sums
    log_determinants, other_readers = [], []
    for diagonal in diagonals:
        for client, _ in fgraph.clients[diagonal]:
            if isinstance(client.op, Elemwise) and isinstance(client.op.scalar_op, ps.Log):
                sums = _sums_over_last_axis(fgraph, client.outputs[0])
                if not sums:
                    return None
                log_determinants += sums
            else:
                other_readers.append(diagonal)
    if not quadratics or not log_determinants:
        return None
    new_diagonal, half_logdet, quadratic = GaussianTerms()(K, solves[0].inputs[1])
    replacements = {
        **{var: half_logdet for var in log_determinants},
        **{var: quadratic for var in quadratics},
        **{var: new_diagonal for var in set(other_readers)},
    }
    if any(new.type != old.type for old, new in replacements.items()):
        return None
    return replacements


def gaussian_gradients(outputs: list) -> list:
    """``outputs`` with each multivariate normal log density read from a Cholesky factor as
    PyMC's ``MvNormal`` reads it (``cholesky(K)``: ``sum log diag``, ``|L^-1 delta|^2``) computed
    by :class:`GaussianTerms`, before the gradient is taken: the same values, and the gradient
    ``½ (α α^T - K^-1)`` with respect to ``K`` instead of one through the factorization."""
    return rewrite_graph(
        outputs, include=(), custom_rewrite=dfs_rewriter(_gaussian_terms), clone=True
    )
