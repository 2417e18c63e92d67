"""A covariance matrix built entry by entry, computed on its lower triangle only.

A Gaussian process's covariance is ``K_ij = k(t_i, t_j; theta)`` at ``n`` inputs: an
elementwise expression of ``n x n`` matrices of the data (lags, distances) and of the
parameters. Its Cholesky factorization reads the ``m = n (n + 1) / 2`` entries on and below the
diagonal, yet the graph computes all ``n^2``, each with the kernel's transcendental functions (an
exponential, a sine), at every point, and the gradient their derivatives as many times again.

:func:`lower_triangle_covariances` rewrites each factorized ``K`` (the matrix of a
:class:`~pm_evidence.model.gaussian.GaussianTerms` or of a Cholesky factorization) that is an
elementwise expression as

.. math::

    K = \\operatorname{unpack}\\big(k(\\operatorname{pack}(A_1), \\ldots,
    \\operatorname{pack}(A_r); \\theta)\\big), \\qquad
    \\operatorname{pack}(A) = \\operatorname{vec}(A)[\\mathrm{lower}], \\qquad
    \\operatorname{unpack}(v)_{ij} = v[\\mathrm{packed}(\\max(i, j), \\min(i, j))],

where the ``A_r`` are its matrix pieces (the lags, folded where they are constants), ``pack``
keeps their ``m`` entries on and below the diagonal (an elementwise function commutes with
taking entries), the parameters broadcast as before, and ``unpack`` spreads the ``m`` values over
both triangles: ``K`` itself where it is symmetric, with the kernel evaluated ``m`` times instead
of ``n^2``. A diagonal piece (``pt.diag(v)``) packs as ``v`` at the diagonal's packed indices.
Where ``K`` is not symmetric the factorization still gets what it reads (Numba's reads the lower
triangle). The gradient of ``unpack`` adds each pair ``(i, j), (j, i)``, the gradient with respect
to a symmetric matrix's entry; the gradient of the factorization's lower triangle
(:class:`~pm_evidence.model.gaussian.GaussianTerms`) is unchanged.

Only the elementwise operations that nothing else reads are moved onto the packed entries, so
nothing is computed twice; a piece computed otherwise (a product of matrices) is computed as
before and its ``m`` entries taken.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import MergeOptimizer, dfs_rewriter, node_rewriter
from pytensor.tensor.basic import Alloc, AllocDiag
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.linalg.decomposition.cholesky import Cholesky

from pm_evidence.model.gaussian import GaussianTerms, core_op

__all__ = ["MIN_PACKED_SIZE", "PackingIndices", "lower_triangle_covariances", "packing_indices"]

MIN_PACKED_SIZE = 8
"""Smallest ``n`` whose ``n x n`` covariance is packed; a smaller one (a few parameters'
covariance) is left as the model writes it. On a quasi-periodic kernel (machine E, 2026-12-01,
value and gradient at 1,024 prior draws, the best of 7 calls) packing gave 1.3 times the points
a second at ``n = 16`` and ``32``, the same or a little more at ``8`` (185,000-192,000 against
164,000-182,000), and at ``5`` nothing the calls' spread (133,000-212,000 either way) would
show."""


class PackingIndices(NamedTuple):
    """Indices of the packed lower triangle of ``n x n`` matrices (:func:`packing_indices`)."""

    rows: np.ndarray  # row of each packed entry (m,)
    cols: np.ndarray  # column of each packed entry (m,)
    lower: np.ndarray  # flat (row-major) index of each packed entry (m,)
    full: np.ndarray  # packed index of each entry (i, j), that of (max(i, j), min(i, j)) (n^2,)
    diagonal: np.ndarray  # packed index of each (i, i) (n,)


def packing_indices(n: int) -> PackingIndices:
    """The ``m = n (n + 1) / 2`` entries on and below the diagonal of ``n x n`` matrices, row
    by row, and where each entry of the matrix is among them."""
    rows, cols = np.tril_indices(n)
    packed = np.empty((n, n), dtype=np.int64)
    packed[rows, cols] = np.arange(rows.size)
    packed[cols, rows] = np.arange(rows.size)
    diagonal = packed[np.arange(n), np.arange(n)]
    return PackingIndices(rows, cols, rows * n + cols, packed.ravel(), diagonal)


def _factorized_matrix(node):
    """The matrix ``node`` factorizes: the ``K`` of a ``GaussianTerms`` or of a (batched)
    Cholesky factorization; ``None`` for any other node."""
    return node.inputs[0] if core_op(node, (GaussianTerms, Cholesky)) is not None else None


def _elementwise_nodes(fgraph, root) -> set:
    """The elementwise nodes of ``root``'s expression (``root``'s own first) whose outputs are
    read only by one another or, for ``root``, by anything: those that can move onto the
    packed entries without being computed twice."""
    readers_allowed = {client for client, _ in fgraph.clients[root]}
    candidates, stack = set(), [root]
    while stack:
        var = stack.pop()
        node = var.owner
        if node is None or node in candidates or not isinstance(node.op, Elemwise):
            continue
        if var.ndim != 2 or len(node.outputs) != 1:
            continue
        candidates.add(node)
        stack.extend(node.inputs)
    changed = True
    while changed:  # drop the nodes read from outside, until none is
        changed = False
        for node in list(candidates):
            clients = fgraph.clients[node.outputs[0]]
            if any(c not in candidates and c not in readers_allowed for c, _ in clients):
                candidates.discard(node)
                changed = True
    return candidates


def _packed_leaf(var, n: int, at: PackingIndices):
    """A piece of ``K``'s expression as its ``m`` packed entries: a broadcast scalar as a
    length-1 vector, a broadcast column or row as its entries at the packed rows or columns,
    an explicit broadcast (``Alloc``) as what it broadcasts, a diagonal matrix as its diagonal
    at the diagonal's packed indices, anything else as its entries at the packed indices."""
    broadcastable = var.type.broadcastable[-2:]
    if broadcastable == (True, True):
        return var.dimshuffle(0)
    if broadcastable == (False, True):
        return var[:, 0][at.rows]
    if broadcastable == (True, False):
        return var[0][at.cols]
    if isinstance(var, Constant):
        data = np.broadcast_to(var.data, (n, n)).reshape(-1)[at.lower]
        return pt.constant(np.ascontiguousarray(data), dtype=var.dtype)
    op = var.owner.op if var.owner is not None else None
    if isinstance(op, Alloc) and var.owner.inputs[0].ndim == 2:
        value = var.owner.inputs[0]
        packed = _packed_leaf(value, n, at)
        return packed if value.dtype == var.dtype else pt.cast(packed, var.dtype)
    if isinstance(op, AllocDiag) and (op.offset, op.axis1, op.axis2) == (0, 0, 1):
        (values,) = var.owner.inputs
        return pt.zeros(at.lower.size, dtype=var.dtype)[at.diagonal].set(values)
    return pt.broadcast_to(var, (n, n)).reshape((n * n,))[at.lower]


@node_rewriter([GaussianTerms, Blockwise, Cholesky])
def _pack_factorized_matrix(fgraph, node):
    """``K`` of a factorization, an elementwise expression of static shape ``(n, n)`` with
    ``n >= MIN_PACKED_SIZE`` -> ``unpack`` of the expression on packed entries, for every
    reader of ``K`` (the same matrix where ``K`` is symmetric, as a factorized covariance is;
    PyMC's ``MvNormal`` reads a column of it for its shape)."""
    K = _factorized_matrix(node)
    if K is None or K.ndim != 2 or K.type.shape[0] is None or K.type.shape[0] < MIN_PACKED_SIZE:
        return None
    n = K.type.shape[0]
    moved = _elementwise_nodes(fgraph, K)
    if K.owner not in moved:
        return None
    at = packing_indices(n)
    packed: dict = {}

    def pack(var):
        if var not in packed:
            if var.owner in moved:
                packed[var] = var.owner.op(*[pack(i) for i in var.owner.inputs])
            else:
                packed[var] = _packed_leaf(var, n, at)
        return packed[var]

    unpacked = pack(K)[at.full].reshape((n, n))
    return {K: pt.specify_shape(pt.cast(unpacked, K.dtype), K.type.shape)}


def lower_triangle_covariances(outputs: list) -> list:
    """``outputs`` with each factorized covariance that is an elementwise expression computed
    on its lower triangle only and spread over both (the module's text): the same values,
    about half the kernel's evaluations. Identical subgraphs are merged first (as compiling
    does), so that a kernel the model writes twice counts as one, read twice."""
    fgraph = FunctionGraph(outputs=outputs, clone=True, copy_inputs=False)
    if not any(_factorized_matrix(node) is not None for node in fgraph.apply_nodes):
        return fgraph.outputs
    MergeOptimizer().rewrite(fgraph)
    dfs_rewriter(_pack_factorized_matrix).rewrite(fgraph)
    return fgraph.outputs
