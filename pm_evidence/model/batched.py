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

from collections.abc import Callable, Sequence

import numpy as np

from pm_evidence.core.utils import warn_user

__all__ = ["MAX_BLOCK_ELEMENTS", "BlockedFunction", "block_size_for"]

# What a numerical routine raises at a bad point (LinAlgError and PyMC's ParameterValueError are
# ValueErrors). Anything else (a RuntimeError from a broken compiled function, an interrupt) is
# not a property of the point and propagates.
POINT_ERRORS = (ValueError, ArithmeticError, AssertionError)

MAX_BLOCK_ELEMENTS = 2**21  # about 16 MB per float64 intermediate of one block
MAX_BLOCK_ROWS = 1024


def block_size_for(n_observations: int, max_rows: int = MAX_BLOCK_ROWS) -> int:
    """Rows per compiled call: ``MAX_BLOCK_ELEMENTS / n_observations``, between 1 and ``max_rows``."""
    return int(np.clip(MAX_BLOCK_ELEMENTS // max(int(n_observations), 1), 1, max_rows))


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
    """

    def __init__(self, fn: Callable, block_size: int, fill_values: Sequence[float] | None = None):
        self.fn = fn
        self.block_size = int(block_size)
        self.fill_values = None if fill_values is None else tuple(fill_values)
        self.n_raised = 0  # rows that raised and got fill values (a count, not state of results)

    def __call__(self, *arrays: np.ndarray, constants: Sequence = ()) -> list[np.ndarray]:
        n = arrays[0].shape[0]
        blocks = [
            self._call_block([a[i : i + self.block_size] for a in arrays], constants)
            for i in range(0, max(n, 1), self.block_size)
        ]
        if len(blocks) == 1:
            return blocks[0]
        return [np.concatenate([b[k] for b in blocks]) for k in range(len(blocks[0]))]

    def _call_block(self, arrays, constants) -> list[np.ndarray]:
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
