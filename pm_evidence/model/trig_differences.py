r"""Sines and cosines of differences, by angle addition: ``n`` of them instead of ``n^2``.

A periodic or quasi-periodic Gaussian-process kernel (``pm.gp.cov.Periodic``, the
quasi-periodic kernel of stellar activity) takes the sine of every lag at every point:

.. math::

    \sin\big(g(\theta)\, (t_i - t_j)\big), \qquad i, j = 1 \ldots n,

with ``g`` a parameter's function (``pi / period``), ``n^2`` sines (or ``n (n + 1) / 2`` on
the packed lower triangle, :mod:`~pm_evidence.model.packed_covariance`), and as many cosines in
the gradient. A sine costs about 20 ns on a CPU core, as much as the covariance's Cholesky
factor at a few hundred observations (measured: docs/benchmarks.rst, "Sines of differences").
With ``a_i = g u_i`` and ``u_i - u_j`` the constant's entries,

.. math::

    \sin(a_i - a_j) = \sin a_i \cos a_j - \cos a_i \sin a_j, \qquad
    \cos(a_i - a_j) = \cos a_i \cos a_j + \sin a_i \sin a_j,

so ``n`` sines and ``n`` cosines and four products an entry give the same values (to rounding:
the arguments ``a_i`` are no larger than the original ones, ``|u_i| <= max |t_i - t_j|``
with ``u`` centered), and the gradient follows from these, with no trigonometric function of
its own per entry.

:func:`sines_of_differences` rewrites each ``sin(x)`` and ``cos(x)`` whose argument is a
constant ``C`` times (or divided by) an expression ``g`` of a single value (all its dimensions
broadcast), where ``C``'s entries are differences ``u_i - u_j`` of one vector ``u``: a matrix
``C_ij = u_i - u_j`` (trailing dimensions of length 1 allowed: PyMC's ``Periodic`` has one), or
the packed lower triangle of one (``C_k = u_{r_k} - u_{c_k}`` at
:func:`~pm_evidence.model.packed_covariance.packing_indices`). The structure is checked on
the constant's numbers themselves (within ``DIFFERENCE_TOLERANCE`` of its largest entry), so a
rewritten graph computes what the model wrote whatever made the constant. Anything else is
left as it is.

The rewrite is made for Numba's functions only (:class:`~pm_evidence.model.log_density.LogDensity`
on ``backend="numba"``): JAX's sines are vectorized, and there the model's own sines ran faster
than the products and the gather (measured on a CPU: the same section of docs/benchmarks.rst).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
from pytensor.graph.traversal import graph_inputs
from pytensor.scalar import basic as ps
from pytensor.tensor.elemwise import Elemwise

from pm_evidence.model.packed_covariance import packing_indices

__all__ = ["DIFFERENCE_TOLERANCE", "MIN_DIFFERENCES", "difference_vector", "sines_of_differences"]

DIFFERENCE_TOLERANCE = 1e-10
"""Largest ``|C - (u_i - u_j)|``, relative to ``max |C|``, of a constant taken as differences:
rounding leaves about ``1e-16`` of it where ``C`` was computed as differences (a scale times
``t_i - t_j``), and a constant of another structure is off by far more."""

MIN_DIFFERENCES = 64
"""Fewest entries of a constant whose sines are rewritten: the lags of fewer than about ten
inputs hold too few sines to matter, and their graphs stay as the model wrote them."""


def _constant_value(var) -> np.ndarray | None:
    """The value of ``var`` where it is a constant, or an expression of constants only (PyMC's
    ``Periodic`` writes ``pi * (X[:, None] - X[None, :])`` of its constant inputs), else
    ``None``. Shared variables (``pm.Data``) are inputs, not constants: a later ``set_data``
    must be seen."""
    if isinstance(var, Constant):
        return np.asarray(var.data)
    if var.owner is None or not all(isinstance(v, Constant) for v in graph_inputs([var])):
        return None
    return np.asarray(var.eval(mode="FAST_COMPILE"))


def _split(x):
    """``x`` as ``(C, g)``: a constant array ``C`` times an expression ``g`` of broadcast
    dimensions only (``None``: 1), where ``x`` is a product, a quotient by such an ``g``, or
    a negation of one; ``None`` otherwise."""
    value = _constant_value(x)
    if value is not None:
        return value, None
    node = x.owner
    if node is None or not isinstance(node.op, Elemwise):
        return None
    scalar_op = node.op.scalar_op
    if isinstance(scalar_op, ps.Neg):
        inner = _split(node.inputs[0])
        return None if inner is None else (-inner[0], inner[1])
    if isinstance(scalar_op, ps.TrueDiv):
        numerator, denominator = node.inputs
        inner = _split(numerator)
        if inner is None or not all(denominator.type.broadcastable):
            return None
        return inner[0], (1.0 / denominator if inner[1] is None else inner[1] / denominator)
    if not isinstance(scalar_op, ps.Mul):
        return None
    constants, scales = [], []
    for factor in node.inputs:
        value = _constant_value(factor)
        if value is not None:
            constants.append(value)
        elif all(factor.type.broadcastable):
            scales.append(factor)
        else:
            return None
    if not constants:
        return None
    scale = None
    for factor in scales:
        scale = factor if scale is None else scale * factor
    return np.multiply.reduce(np.broadcast_arrays(*constants)), scale


def difference_vector(constant: np.ndarray) -> tuple[np.ndarray, str] | None:
    """``(u, form)`` with the constant's entries the differences ``u_i - u_j`` (``u``
    centered), ``form`` ``"matrix"`` (``C_ij``, trailing dimensions of length 1) or
    ``"packed"`` (its lower triangle, row by row); ``None`` where it is neither."""
    c = np.asarray(constant, dtype=np.float64)
    if c.size < MIN_DIFFERENCES or not np.all(np.isfinite(c)):
        return None
    if c.ndim >= 2 and c.shape[0] == c.shape[1] and all(s == 1 for s in c.shape[2:]):
        square = c.reshape(c.shape[:2])
        u = square[:, 0]
        expected, form = u[:, None] - u[None, :], "matrix"
    elif c.ndim == 1:
        n = round((np.sqrt(8 * c.size + 1) - 1) / 2)
        if n * (n + 1) // 2 != c.size:
            return None
        at = packing_indices(n)
        u = c[at.full.reshape(n, n)[:, 0]]
        expected, form = u[at.rows] - u[at.cols], "packed"
    else:
        return None
    largest = np.max(np.abs(c))
    if largest == 0 or np.max(np.abs(expected - c.reshape(expected.shape))) > (
        DIFFERENCE_TOLERANCE * largest
    ):
        return None
    return u - 0.5 * (u.max() + u.min()), form


@node_rewriter([Elemwise])
def _angle_addition(fgraph, node):
    """``sin(C g)``, ``cos(C g)`` with ``C_ij = u_i - u_j`` -> the angle-addition formula on
    ``a = u g`` (module text)."""
    scalar_op = node.op.scalar_op
    if not isinstance(scalar_op, ps.Sin | ps.Cos):
        return None
    (x,) = node.inputs
    (out,) = node.outputs
    split = _split(x)
    if split is None or split[1] is None:
        return None
    constant, scale = split
    found = difference_vector(constant)
    if found is None:
        return None
    u, form = found
    a = pt.constant(u) * scale.dimshuffle([])  # the scale as a scalar: all its dims broadcast
    sin_a, cos_a = pt.sin(a), pt.cos(a)
    n = u.size
    column, row = sin_a[:, None], sin_a[None, :]
    cos_column, cos_row = cos_a[:, None], cos_a[None, :]
    if isinstance(scalar_op, ps.Sin):
        value = column * cos_row - cos_column * row
    else:
        value = cos_column * cos_row + column * row
    if form == "matrix":
        value = value.reshape((n, n, *constant.shape[2:]))
    else:  # the products on the whole matrix, then its packed entries: one gather
        value = value.reshape((n * n,))[packing_indices(n).lower]
    value = pt.shape_padleft(value, out.ndim - value.ndim)
    if value.type.broadcastable != out.type.broadcastable:
        return None
    return [pt.cast(value, out.dtype)]


def sines_of_differences(outputs: list) -> list:
    """``outputs`` with each sine and cosine of a constant of differences times a scale
    written by angle addition (module text): the same values, ``n`` sines and cosines in
    place of one per entry."""
    fgraph = FunctionGraph(outputs=outputs, clone=True, copy_inputs=False)
    dfs_rewriter(_angle_addition).rewrite(fgraph)
    return fgraph.outputs
