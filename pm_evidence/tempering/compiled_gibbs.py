r"""A heat-bath (Gibbs) sweep over blocks of discrete entries as one compiled call on an
accelerator: :func:`~pm_evidence.tempering.kernels.gibbs_step`'s sweep, every block's
candidates, their heat bath and the chosen values on the device, one chain's graph mapped over
the chains.

For a block ``B`` of ``m`` entries, entry ``j`` taking ``L_j`` values ``a_j + 0..L_j-1``, each
chain's ``m (max L_j - 1)`` candidates (entry ``j`` moved to ``a_j + (x_j - a_j + s) mod L_j``,
``s = 1..L_j-1``) are evaluated by the model's graph vectorized over them, and ``x_j`` is drawn
from its exact conditional over all ``L_j`` values,

.. math:: P(x_j = v) \propto f_\beta(x^{(j \to v)}), \qquad
          \log f_\beta = \log p_0 + \beta \Delta

(seed 004 eq. (2)), by inverting its cumulative sums at a uniform; a block of several entries
is then evaluated once more at its new state. The uniforms are inputs drawn by the caller in
the order of the CPU's sweep, so the device's sweep is the same Markov kernel, the same moves
up to rounding.

Only on a path from the prior (``log p0 = log prior + c``; the references fitted to posterior
draws are continuous) and on an accelerator; the blocks are unrolled in the graph, so a sweep
of more than ``MAX_DEVICE_BLOCKS`` blocks stays on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt

from pm_evidence.model.backend import is_on_device
from pm_evidence.model.compile_mode import without_garbage_collection
from pm_evidence.tempering.compiled import symbolic_tempered_log_density
from pm_evidence.tempering.path import GeometricPath, PathState

__all__ = ["MAX_DEVICE_BLOCKS", "GibbsSweepGraph", "gibbs_sweep_function"]

MAX_DEVICE_BLOCKS = 32  # one copy of the model's graph per block (two for several entries)


@dataclass(frozen=True, eq=False)
class GibbsSweepGraph:
    """One chain's Gibbs sweep (module docstring) over ``blocks`` of a path from the prior, as
    a graph to build into larger ones: the sweep alone (:func:`gibbs_sweep_function`), or after
    each HMC move of the compound kernel ``hmc+gibbs`` in AIS's rungs and the tempered sweeps
    on the device (:mod:`~pm_evidence.tempering.compiled`)."""

    path: GeometricPath
    blocks: tuple
    levels: np.ndarray
    lowest: np.ndarray

    @property
    def key(self) -> tuple:
        """What a compiled function built around the sweep is cached by."""
        return (tuple(tuple(int(i) for i in b) for b in self.blocks),
                tuple(int(v) for v in self.levels), tuple(int(v) for v in self.lowest))  # fmt: skip

    @property
    def n_uniforms(self) -> int:
        return sum(b.size for b in self.blocks)

    def uniforms(self, rng, n: int) -> np.ndarray:
        """The sweep's uniforms of ``n`` chains, ``(n, n_uniforms)``, drawn in the CPU's order
        (:func:`~pm_evidence.tempering.kernels.gibbs_step`: block by block)."""
        return np.concatenate([rng.random((n, b.size)) for b in self.blocks], axis=1)

    def graph(self, x, log_p0, delta, beta, uniforms) -> list:
        """``[x, log p0, Delta, moved, nonfinite]`` after the sweep of one chain at ``x``
        (symbolic: a point ``(dim,)``, its ``log p0`` and ``Delta``, ``beta`` and the
        uniforms)."""
        target = self.path.target
        c = np.float64(self.path.reference.log_normalizer)  # log p0 = log prior + c

        def path_terms(rows):
            log_prior, log_lik = target.symbolic_terms(rows)
            return log_prior + c, log_lik - c

        def log_f(lp0, d):
            return symbolic_tempered_log_density(lp0, d, beta)

        current = log_f(log_p0, delta)
        moved = nonfinite = pt.constant(np.array(False))
        first = 0
        for block in self.blocks:
            m, block_levels = block.size, np.asarray(self.levels)[block]
            n_alt = int(block_levels.max()) - 1
            shifts = np.arange(1, n_alt + 1)
            low = np.asarray(self.lowest, dtype=float)[block][:, None]
            new_values = low + pt.mod(x[block][:, None] - low + shifts, block_levels[:, None])
            rows = np.arange(m * n_alt)
            candidates = pt.set_subtensor(
                pt.tile(x[None, :], (m * n_alt, 1))[rows, np.repeat(block, n_alt)],
                new_values.ravel(),
            )
            lp0_alt, d_alt = path_terms(candidates)
            log_f_alt = log_f(lp0_alt, d_alt).reshape((m, n_alt))
            diff = log_f_alt - current
            bad = pt.isnan(diff)
            nonfinite = nonfinite | pt.any(bad)
            padded = shifts[None, :] >= block_levels[:, None]  # value s does not exist
            diff = pt.switch(bad | padded, -np.inf, diff)
            # heat bath over {the n_alt other values, the current one (diff 0)}
            top = pt.maximum(diff.max(axis=1), 0.0)
            log_norm = top + pt.log(pt.exp(-top) + pt.exp(diff - top[:, None]).sum(axis=1))
            cumulative = pt.cumsum(pt.exp(diff - log_norm[:, None]), axis=1)
            u = uniforms[first : first + m]
            choice = pt.sum(pt.le(cumulative, u[:, None]), axis=1)  # == n_alt: keep it
            change = pt.lt(choice, n_alt)
            picked = pt.minimum(choice, n_alt - 1)
            if m == 1:  # the chosen candidate was evaluated already
                take = change[0]
                x = pt.switch(take, candidates[picked[0]], x)
                log_p0 = pt.switch(take, lp0_alt[picked[0]], log_p0)
                delta = pt.switch(take, d_alt[picked[0]], delta)
                current = pt.switch(take, log_f_alt[0, picked[0]], current)
            else:
                chosen = new_values[np.arange(m), picked]
                x = pt.set_subtensor(x[block], pt.switch(change, chosen, x[block]))
                lp0_new, d_new = path_terms(x[None, :])
                log_p0, delta = lp0_new[0], d_new[0]
                current = log_f(log_p0, delta)
            moved = moved | pt.any(change)
            first += m
        return [x, log_p0, delta, moved, nonfinite]


def device_gibbs(path: GeometricPath, blocks, levels, lowest) -> GibbsSweepGraph | None:
    """The sweep's graph where it can run on the device: on an accelerator, a path from the
    prior and at most ``MAX_DEVICE_BLOCKS`` blocks; ``None`` elsewhere."""
    target = path.target
    if not target.backend.on_accelerator or not path.is_prior or len(blocks) > MAX_DEVICE_BLOCKS:
        return None
    return GibbsSweepGraph(path, tuple(blocks), np.asarray(levels), np.asarray(lowest))


def gibbs_sweep_function(
    path: GeometricPath, blocks: tuple[np.ndarray, ...], levels: np.ndarray, lowest: np.ndarray
) -> Callable | None:  # fmt: skip
    """``sweep(rng, state, beta) -> (state, moved, nonfinite)``: one Gibbs sweep over
    ``blocks`` of every chain on the device (module docstring), drawing from ``rng`` the
    uniforms the CPU's sweep draws (one per entry of each block, block by block); ``None``
    off an accelerator, on a path not from the prior, or with more than
    ``MAX_DEVICE_BLOCKS`` blocks. Compiled once per path's model and blocks, and cached on the
    model's adapter."""
    gibbs = device_gibbs(path, blocks, levels, lowest)
    if gibbs is None:
        return None
    target = path.target
    key = ("gibbs_sweep", *gibbs.key)
    functions = target.compiled_transitions  # owned by the model's adapter
    if key not in functions:
        built = _build_sweep(gibbs)
        functions[key] = None if built is None else target.blocked(built)
    fn = functions[key]
    if fn is None or not target.backend.on_accelerator:  # moved to Numba while building
        return None

    def sweep(rng, state: PathState, beta):
        n = state.x.shape[0]
        uniforms = gibbs.uniforms(rng, n)
        beta = np.broadcast_to(np.asarray(beta, dtype=float), (n,))
        x, log_p0, delta, moved, nonfinite = fn(
            state.x, state.log_p0, state.delta, beta, uniforms,
            resident=is_on_device(state.x),  # chains kept on the device stay there
        )  # fmt: skip
        flags = (np.asarray(a).astype(bool) for a in (moved, nonfinite))
        return PathState(x, log_p0, delta), *flags

    return sweep


@without_garbage_collection()
def _build_sweep(gibbs: GibbsSweepGraph):
    """One chain's sweep as a PyTensor graph of one point, compiled by JAX and mapped over the
    chains (``LogDensity.compile_point_rows``)."""
    dim = gibbs.path.target.dim
    point = [pt.tensor("x", dtype="float64", shape=(dim,)), pt.scalar("log_p0"),
             pt.scalar("delta"), pt.scalar("beta")]  # fmt: skip
    uniforms = pt.tensor("uniforms", dtype="float64", shape=(gibbs.n_uniforms,))
    outputs = gibbs.graph(*point, uniforms)
    return gibbs.path.target.compile_point_rows([*point, uniforms], outputs)
