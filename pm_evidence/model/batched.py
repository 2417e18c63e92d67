"""Calling a compiled, batched function on many points: in blocks sized to the data, and total.

Blocks keep the intermediates (``block x n_obs`` linear predictors, say) in memory and cache: on a
small regression, blocks of about a thousand rows are faster than one call on all the points
(measured: docs/benchmarks.rst, Measurements behind the defaults); with a million observations a
block must hold only a few points, or one call would
allocate gigabytes. :func:`block_size_for` picks the rows per block from the number of
observations so that every intermediate stays near ``MAX_BLOCK_ELEMENTS`` numbers.

A log-density must be total (a value at every point, ``-inf`` outside the support). The graphs
are built total (:func:`pm_evidence.model.graphs.make_total`); should a compiled operation still
raise at some points (a linear-algebra routine on an ill-conditioned matrix, say), the block is
evaluated row by row, the rows that raise get ``-inf`` and are counted in ``n_raised`` (reported
by the samplers as rejected non-finite proposals). Only the errors of numerical routines at a bad
point (``POINT_ERRORS``) are treated so; any other error propagates. A block in which *every* row raises re-raises
the error: that is a bug or a broken model, not a support boundary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from pm_evidence.core.utils import warn_user
from pm_evidence.model.backend import (
    VmappedFunction,
    bucket_rows,
    concatenate_rows,
    joined_columns,
)

__all__ = [
    "MAX_BLOCK_ELEMENTS",
    "MAX_BLOCK_MATRIX_ELEMENTS",
    "BlockedFunction",
    "FlatRowsFunction",
    "block_size_for",
    "direct_call",
    "jitted_function",
]

# What a numerical routine raises at a bad point (LinAlgError and PyMC's ParameterValueError are
# ValueErrors). Anything else (a RuntimeError from a broken compiled function, an interrupt) is
# not a property of the point and propagates.
POINT_ERRORS = (ValueError, ArithmeticError, AssertionError)

MAX_BLOCK_ELEMENTS = 2**21  # about 16 MB per float64 intermediate of one block
# About 1 MB per float64 matrix of one block: a point's matrix (a Gaussian process's covariance)
# is read again and again by its Cholesky factorization and the solves after it, which run at
# the speed of the core's cache while the block's matrices fit in it. On a 200 x 200 covariance
# the value and gradient ran at about 560 points a second at 1-4 rows per call, 385 at 8 and
# 16, 234 at 1,024 (measured: docs/benchmarks.rst, "Rows per compiled call").
MAX_BLOCK_MATRIX_ELEMENTS = 2**17
MAX_BLOCK_ROWS = 1024


def block_size_for(
    n_observations: int, matrix_elements: int = 0, max_rows: int = MAX_BLOCK_ROWS
) -> int:
    """Rows per compiled call: ``MAX_BLOCK_ELEMENTS / n_observations`` (the data's vectors
    stream through once) and ``MAX_BLOCK_MATRIX_ELEMENTS / matrix_elements`` (the largest
    matrix one point makes, read many times), the smaller, between 1 and ``max_rows``."""
    rows = MAX_BLOCK_ELEMENTS // max(int(n_observations), 1)
    if matrix_elements > 0:
        rows = min(rows, MAX_BLOCK_MATRIX_ELEMENTS // int(matrix_elements))
    return int(np.clip(rows, 1, max_rows))


def jitted_function(function) -> Callable | None:
    """The numba function behind a PyTensor function compiled by a JIT linker (its Numba
    backend), where calling it is the whole call: ``function.vm.jit_fn``, which
    ``JITLinker.make_all`` keeps on the thunk, takes the graph's inputs in order and returns its
    outputs; the values of its implicit inputs (shared variables: ``pm.Data``), which follow
    the explicit ones, are read from their storage at each call, as the thunk reads them.
    ``None`` where the function has updates or was not JIT-linked (the Python linker).

    Why: the samplers call a small model's value-and-gradient function tens of thousands of
    times on a few rows (a leapfrog step of 16 chains is one call). Around the numba call
    (a few microseconds for 16 rows of a 2-D model), ``Function.__call__`` and its thunk cost
    as much again (measured: docs/benchmarks.rst). With ``trust_input`` the PyTensor function passes its
    inputs to the same numba function unchanged, so the outputs are the same arrays' values.
    """
    jit_fn = getattr(getattr(function, "vm", None), "jit_fn", None)
    storage = getattr(function, "input_storage", None)
    if jit_fn is None or storage is None:
        return None
    if len(function.maker.fgraph.outputs) != len(function.output_storage):
        return None  # updates are outputs of the graph that the function does not return
    implicit = [c.implicit for c in storage]
    if len(function.maker.fgraph.inputs) != len(storage) or implicit != sorted(implicit):
        return None
    if not any(implicit):
        return jit_fn
    shared = [c.storage for c in storage if c.implicit]

    def with_shared(*rows):
        return jit_fn(*rows, *[cell[0] for cell in shared])

    return with_shared


def direct_call(function) -> Callable:
    """A compiled PyTensor function as the samplers call it: its JIT-compiled function directly
    where there is one (:func:`jitted_function`), else the function. Where the direct call
    raises, the PyTensor function is called instead, which then raises the same error with
    PyTensor's account of the operation that failed."""
    jitted = jitted_function(function)
    if jitted is None:
        return function

    def call(*rows):
        try:
            return jitted(*rows)
        except Exception:  # the call below raises it again, with PyTensor's account
            return function(*rows)

    return call


class FlatRowsFunction:
    """A compiled function of one input per variable, called on rows of the flat vector.

    The model's functions are compiled with each value variable an input of its own
    (:func:`~pm_evidence.model.graphs.batched_by_variable`); the samplers and estimators hold
    points as rows ``x (n, dim)`` of the flat vector. A call splits ``x`` into one contiguous
    array ``(n, *value_shape)`` per variable (cast to its dtype: ``0.``/``1.`` floats of a
    Bernoulli entry become integers), calls the function, passes its first ``n_values``
    outputs on, and joins each following group of per-variable gradients into one ``(n, dim)``
    array, with 0 at the entries not differentiated (discrete ones).

    Parameters
    ----------
    function : pytensor.compile.Function or pm_evidence.model.backend.VmappedFunction
        The compiled function (Numba's, or JAX's mapped over rows); kept as ``function``, for
        inspecting its graph.
    variables : sequence of pm_evidence.model.layout.VariableSlice
        Where each input sits in the flat vector (:class:`~pm_evidence.model.layout.Layout`).
    dtypes : sequence of str
        The dtype of each input.
    n_values : int
        Outputs passed on as they are (one number per row).
    differentiated : sequence of bool, optional
        Which variables have a gradient output in each group (all, by default).
    """

    def __init__(self, function, variables, dtypes, n_values: int, differentiated=None):
        self.function = function
        if isinstance(function, VmappedFunction):  # JAX's: called as it is, NumPy arrays out
            self._compiled = function
        else:
            self.function.trust_input = True  # the inputs are made here, of the types it expects
            self._compiled = direct_call(function)
        self.n_values = int(n_values)
        variables = tuple(variables)
        if differentiated is None:
            differentiated = [True] * len(variables)
        self.dim = variables[-1].stop if variables else 0
        # per input: its columns of x (an index for a scalar, a slice otherwise) and dtype;
        # inputs of more than one dimension are reshaped from (n, size) to (n, *value_shape)
        self._columns = [
            (v.start if v.value_shape == () else slice(v.start, v.stop), np.dtype(dtype))
            for v, dtype in zip(variables, dtypes, strict=True)
        ]
        self._reshaped = [
            (k, v.value_shape) for k, v in enumerate(variables) if len(v.value_shape) > 1
        ]
        # one float64 vector variable: x itself is the input
        self._whole = (
            len(variables) == 1
            and variables[0].value_shape == (self.dim,)
            and (self._columns[0][1] == np.float64)
        )
        # per differentiated variable: its columns of x, and whether its gradient is (n,)
        self._gradients = [
            (slice(v.start, v.stop), v.value_shape == ())
            for v, d in zip(variables, differentiated, strict=True)
            if d
        ]
        self._gradients_cover_x = len(self._gradients) == len(variables)
        # x is the one input and each gradient output is already (n, dim): the outputs are
        # returned as they are (on a small model a call costs microseconds, and the
        # reshaping as much as the model)
        self._as_is = self._whole and self._gradients_cover_x

    def __call__(self, x: np.ndarray, resident: bool = False) -> list[np.ndarray]:
        """The outputs at the rows ``x``; with ``resident`` (JAX's function), ``x`` may be
        JAX's array and the outputs stay on the device, split and joined there."""
        if resident and not isinstance(self._compiled, VmappedFunction):
            raise ValueError("Only a function compiled by JAX leaves its outputs on the device.")
        call = functools.partial(self._compiled, resident=True) if resident else self._compiled
        if self._as_is:
            return list(call(x if resident else np.ascontiguousarray(x)))
        n = x.shape[0]
        if self._whole:
            rows = [x if resident else np.ascontiguousarray(x)]
        elif resident:  # JAX's arrays: contiguous by construction
            rows = [x[:, columns].astype(dtype) for columns, dtype in self._columns]
        else:
            rows = [x[:, columns].astype(dtype, order="C") for columns, dtype in self._columns]
        for k, shape in self._reshaped:
            rows[k] = rows[k].reshape((n, *shape))
        outputs = call(*rows)
        k = len(self._gradients)
        joined = [
            self._joined(outputs[i : i + k], n, resident)
            for i in range(self.n_values, len(outputs), k)
        ]
        return [*outputs[: self.n_values], *joined]

    def _joined(self, group, n: int, resident: bool = False) -> np.ndarray:
        flat = [
            g[:, None] if scalar else g.reshape(n, -1)
            for (_, scalar), g in zip(self._gradients, group, strict=True)
        ]
        if resident:
            return joined_columns(flat, [columns for columns, _ in self._gradients], self.dim)
        if self._gradients_cover_x:
            return np.concatenate(flat, axis=1) if len(flat) > 1 else flat[0]
        joined = np.zeros((n, self.dim))
        for (columns, _), gradient in zip(self._gradients, flat, strict=True):
            joined[:, columns] = gradient
        return joined


class BlockedFunction:
    """A compiled function of row-aligned arrays, called on blocks of ``block_size`` rows.

    Parameters
    ----------
    fn : callable
        The compiled function: ``fn(*arrays, *constants) -> list of arrays`` whose outputs have
        one row per input row.
    block_size : int
        Rows per call.
    fill_values : sequence of float, optional
        One value per output for rows at which ``fn`` raises (``-inf`` for log-densities, 0 for
        gradients). Without it, errors propagate.
    padded : bool
        Call ``fn`` on a few row counts only (:func:`~pm_evidence.model.backend.bucket_rows`):
        the rows padded with copies of the first, the padding's outputs dropped. For JAX, which
        compiles a function once per shape of its inputs.
    """

    def __init__(
        self,
        fn: Callable,
        block_size: int,
        fill_values: Sequence[float] | None = None,
        *,
        padded: bool = False,
    ):
        self.fn = fn
        self.block_size = int(block_size)
        self.fill_values = None if fill_values is None else tuple(fill_values)
        self.padded = bool(padded)
        self.n_raised = 0  # rows that raised and got fill values (a count, not state of results)

    def __call__(
        self, *arrays: np.ndarray, constants: Sequence = (), resident: bool = False
    ) -> list[np.ndarray]:
        """The outputs on all of ``arrays``' rows. With ``resident`` (a JAX function, whose
        rows may be JAX's arrays from an earlier call), the outputs stay on the device; they
        are NumPy arrays otherwise."""
        n = arrays[0].shape[0]
        if n <= self.block_size:  # one block: no slicing
            return self._call_block(arrays, constants, resident)
        blocks = [
            self._call_block([a[i : i + self.block_size] for a in arrays], constants, resident)
            for i in range(0, max(n, 1), self.block_size)
        ]
        if len(blocks) == 1:
            return blocks[0]
        return [concatenate_rows([b[k] for b in blocks]) for k in range(len(blocks[0]))]

    def _call_block(self, arrays, constants, resident: bool = False) -> list[np.ndarray]:
        n = arrays[0].shape[0]
        rows = bucket_rows(n, self.block_size) if self.padded and n else n
        if rows > n:
            padded = [concatenate_rows([a, a[:1].repeat(rows - n, axis=0)]) for a in arrays]
            return [out[:n] for out in self._call_rows(padded, constants, resident)]
        return self._call_rows(arrays, constants, resident)

    def _call_rows(self, arrays, constants, resident: bool = False) -> list[np.ndarray]:
        if resident:  # a JAX function's outputs, left on the device
            return list(self.fn(*arrays, *constants, resident=True))
        try:
            return [np.asarray(out) for out in self.fn(*arrays, *constants)]
        except POINT_ERRORS as error:
            if self.fill_values is None or arrays[0].shape[0] <= 1:
                raise
            return self._row_by_row(arrays, constants, error)

    def _row_by_row(self, arrays, constants, error) -> list[np.ndarray]:
        rows, failed = [], []
        for i in range(arrays[0].shape[0]):
            try:
                rows.append(
                    [
                        np.asarray(out)
                        for out in self.fn(*(a[i : i + 1] for a in arrays), *constants)
                    ]
                )
            except POINT_ERRORS:
                rows.append(None)
                failed.append(i)
        if len(failed) == len(rows):
            raise error
        template = next(r for r in rows if r is not None)
        filled = [
            r
            if r is not None
            else [
                np.full_like(t, v, dtype=float)
                for t, v in zip(template, self.fill_values, strict=True)
            ]
            for r in rows
        ]
        self.n_raised += len(failed)
        warn_user(
            f"The compiled log-density raised {type(error).__name__} ({error}) at {len(failed)} of "
            f"{len(rows)} points; those points are treated as outside the support (log-density "
            f"-inf) and counted as rejected non-finite proposals.",
            RuntimeWarning,
        )
        return [np.concatenate([r[k] for r in filled]) for k in range(len(template))]
