"""Forward draws of a model's free variables from the prior, a batch per compiled call.

:class:`PriorSampler` compiles once per model a function ``n -> draws`` of all free variables
(constrained values with a leading dimension ``n``). The batch is drawn in one call: every
*root* random variable (one whose parameters depend on no other free variable) is rebuilt with a
leading ``n`` in its size, and the rest of the prior graph is vectorized over it with
:func:`pytensor.graph.replace.vectorize_graph`, so a hierarchical ``x ~ N(mu, 1)`` gets one
``mu`` per row. Variables that PyMC builds as ``SymbolicRandomVariable`` (LKJ, ZeroSumNormal,
censored or truncated priors, mixtures, ``CustomDist``) cannot be batched this way; for models
with them the compiled function draws one point per call inside a loop (``batched`` is then
False, a property tests check).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.pytensorf import compile as pm_compile
from pymc.pytensorf import reseed_rngs
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

from pm_evidence.core.utils import spawn_seed

__all__ = ["PriorSampler"]


def _root_batched(model: pm.Model, n: pt.TensorVariable, shapes: dict) -> list | None:
    """The free variables as graphs with a leading batch dimension ``n``, or ``None`` when some
    variable is not a plain ``RandomVariable``.

    Variables are rebuilt in the model's order (parents first), each with the size
    ``(n, *batch_shape)`` and its parameters vectorized over the parents already rebuilt; a
    batched parameter gets unit axes after ``n`` so that it lines up with the batch shape.
    (PyTensor's own vectorization of a random variable with an explicit size extends the size
    only by the batch dimensions of its first parameter, and fails when another one is batched,
    e.g. ``beta ~ N(0, sqrt(sigma2), shape=d)``.)
    """
    free = list(model.free_RVs)
    if not all(isinstance(rv.owner.op, RandomVariable) for rv in free):
        return None
    replace = {}
    for rv in free:
        op, node = rv.owner.op, rv.owner
        batch_shape = shapes[rv.name][: rv.ndim - op.ndim_supp]  # constants, not rv.shape
        size = pt.stack([n, *(np.int64(s) for s in batch_shape)])
        params = list(op.dist_params(node))
        if replace:
            new_params = vectorize_graph(params, replace=replace)
            for i, (old, new) in enumerate(zip(params, new_params, strict=True)):
                if new.ndim == old.ndim:
                    continue  # not batched: broadcasts against (n, *batch_shape)
                n_missing = len(batch_shape) - (old.ndim - op.ndims_params[i])
                params[i] = (
                    pt.expand_dims(new, tuple(range(1, 1 + n_missing))) if n_missing else new
                )
        new_node = op.make_node(op.rng_param(node), size, *params)
        replace[rv] = new_node.outputs[1]
    batched = [replace[rv] for rv in free]
    if any(
        var.owner is not None and isinstance(var.owner.op, SymbolicRandomVariable)
        for var in ancestors(batched)
    ):
        return None
    return batched


class PriorSampler:
    """Draws of every free variable from the prior, compiled once per model.

    Parameters
    ----------
    model : pymc.Model
    """

    def __init__(self, model: pm.Model):
        self.var_names = [rv.name for rv in model.free_RVs]
        n = pt.scalar("n", dtype="int64")
        batched = _root_batched(model, n, model.eval_rv_shapes())
        self.batched = batched is not None
        if self.batched:
            self._fn, updates = pm_compile(
                inputs=[n], outputs=batched, random_seed=False, return_updates=True
            )
        else:
            self._fn, updates = pm_compile(
                inputs=[], outputs=model.free_RVs, random_seed=False, return_updates=True
            )
        self._rngs = list(updates)

    def draw(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``n`` prior draws: ``{name: array (n, *shape)}``; the compiled generators are reseeded
        from ``rng`` first, so the draws depend on ``rng`` only."""
        reseed_rngs(self._rngs, spawn_seed(rng))
        if self.batched:
            values = self._fn(np.int64(n))
        else:
            draws = [self._fn() for _ in range(n)]
            values = [np.stack([d[i] for d in draws]) for i in range(len(self.var_names))]
        return {name: np.asarray(v) for name, v in zip(self.var_names, values, strict=True)}
