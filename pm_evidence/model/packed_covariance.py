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

Where the kernel reads the inputs through a vector that depends on the parameters (PyMC's
stationary kernels on one input scale it, ``u = x / ls``, and write ``|x_i - x_j|^2 / ls^2`` as
``u_i^2 + u_j^2 - 2 u_i u_j``), the packed kernel takes ``u``'s entries at the packed rows and
columns, ``u[rows]``, and its gradient scatters ``m`` entries back into ``n``.
:func:`gathered_constant_expressions` takes them at the constants instead,
``g(c, theta)[rows] = g(c[rows], theta)`` for an elementwise ``g`` of constant vectors ``c``
and broadcast parameters ``theta``: the same values, the packed kernel an elementwise
expression of constants and parameters, as a kernel written on the lags is.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, equal_computations
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import MergeOptimizer, dfs_rewriter, node_rewriter
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import applys_between, graph_inputs
from pytensor.tensor.basic import Alloc, AllocDiag
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.linalg.decomposition.cholesky import Cholesky
from pytensor.tensor.subtensor import AdvancedSubtensor

from pm_evidence.model.gaussian import GaussianTerms, core_op

__all__ = [
    "MIN_PACKED_SIZE",
    "PackingIndices",
    "gathered_constant_expressions",
    "lower_triangle_covariances",
    "packing_indices",
]

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


def _packing_gather(node) -> bool:
    """Whether ``node`` takes the entries of a vector at the packed rows or columns of some
    ``n x n`` matrix (:func:`packing_indices`), as the packing of a broadcast column or row
    does (``_packed_leaf``)."""
    if not isinstance(node.op, AdvancedSubtensor) or len(node.inputs) != 2:
        return False
    vector, index = node.inputs
    if vector.ndim != 1 or not isinstance(index, Constant) or index.ndim != 1:
        return False
    m = index.data.size
    n = math.isqrt(8 * m + 1) // 2  # m = n (n + 1) / 2 exactly where 8 m + 1 = (2 n + 1)^2
    if n < MIN_PACKED_SIZE or n * (n + 1) // 2 != m or vector.type.shape[0] not in (None, n):
        return False
    rows, cols = np.tril_indices(n)  # packing_indices' rows and columns, without its n^2 map
    return bool(np.array_equal(index.data, rows) or np.array_equal(index.data, cols))


def _of_constants_and_scalars(var, seen: dict) -> bool:
    """Whether the vector ``var`` is an elementwise expression whose vector leaves are all
    constants, its other inputs broadcast along its length (length-1 vectors)."""
    if var not in seen:
        if isinstance(var, Constant):
            seen[var] = True
        elif var.owner is None or not isinstance(var.owner.op, Elemwise) or var.ndim != 1:
            seen[var] = False
        else:
            seen[var] = all(
                i.type.broadcastable == (True,) or _of_constants_and_scalars(i, seen)
                for i in var.owner.inputs
            )  # fmt: skip
    return seen[var]


def _gathered(var, index: np.ndarray, done: dict):
    """``var[index]`` computed from its constants' entries at ``index`` (broadcast inputs kept)."""
    if var.type.broadcastable == (True,):
        return var
    if var not in done:
        if isinstance(var, Constant):
            data = np.ascontiguousarray(np.asarray(var.data)[index])
            done[var] = pt.constant(data, dtype=var.dtype)
        else:
            done[var] = var.owner.op(*[_gathered(i, index, done) for i in var.owner.inputs])
    return done[var]


@node_rewriter([AdvancedSubtensor])
def _gathered_constant_expression(fgraph, node):
    """``g(c, theta)[index] -> g(c[index], theta)`` (:func:`gathered_constant_expressions`)."""
    if not _packing_gather(node):
        return None
    vector, index = node.inputs
    if vector.owner is None or not isinstance(vector.owner.op, Elemwise):
        return None
    if not _of_constants_and_scalars(vector, {}):
        return None
    return [_gathered(vector, np.asarray(index.data), {})]


def gathered_constant_expressions(outputs: list) -> list:
    """``outputs`` with each ``u[rows]`` or ``u[cols]`` (the packed rows or columns of an ``n x
    n`` matrix, :func:`packing_indices`) of an elementwise expression ``u = g(c, theta)`` of
    constant vectors ``c`` and broadcast parameters ``theta`` computed as ``g(c[rows],
    theta)`` (the module's text), the graphs first in PyTensor's canonical form (in which a
    kernel's ``u[:, 0]`` and its products of an ``(n, 1)`` and a ``(1, n)`` matrix are such
    expressions of vectors); ``outputs`` themselves where no such entry-taking is found, so
    that every other model's graphs are as they were."""
    nodes = applys_between(list(graph_inputs(outputs)), outputs)
    if not any(_packing_gather(node) for node in nodes):
        return outputs
    canonical = rewrite_graph(outputs, include=("canonicalize",))
    fgraph = FunctionGraph(outputs=canonical, clone=True, copy_inputs=False)
    dfs_rewriter(_gathered_constant_expression).rewrite(fgraph)
    if equal_computations(fgraph.outputs, canonical):
        return outputs
    return fgraph.outputs
