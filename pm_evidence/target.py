"""The target adapter: a PyMC model as a batched, compiled log-density on a flat vector.

``LogDensity`` compiles (once, lazily, per output) the model's log prior (with the Jacobians of
its transforms), its log likelihood (observed terms plus ``pm.Potential`` terms) and their gradient
as functions of the flat *unconstrained* vector ``x`` of all free variables, vectorized over any
number of leading batch dimensions with :func:`pytensor.graph.replace.vectorize_graph`: one call
evaluates a whole ``(chain, draw, dim)`` array, with no Python loop over points.

The unnormalized density is ``f(x) = exp(model.logp(x))``; its integral over ``x`` is
``Z = p(y | M)`` when the model is prior x likelihood, which is what every estimator targets.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.exceptions import NotConstantValueError
from pymc.pytensorf import join_nonshared_inputs
from pytensor.compile.builders import OpFromGraph, SymbolicOp
from pytensor.graph.replace import clone_replace, graph_replace, vectorize_graph
from pytensor.graph.rewriting.basic import dfs_rewriter, node_rewriter
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.random.basic import BernoulliRV, CategoricalRV

from pm_evidence.exceptions import EvidenceInputError, NonFiniteLogDensityError

__all__ = ["LogDensity", "VariableSlice"]

# One compiled adapter per live model (weak keys: dropped with the model). A cache, not state:
# results never depend on it.
_ADAPTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class VariableSlice:
    """Where one free variable sits in the flat unconstrained vector."""

    name: str  # the variable's (constrained) name, as in a posterior DataTree
    value_name: str  # the name of its unconstrained value variable (e.g. ``sigma_log__``)
    shape: tuple[int, ...]  # its shape in one draw
    start: int
    stop: int
    transformed: bool


class LogDensity:
    """Batched log prior, log likelihood and gradient of a PyMC model on flat vectors.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; taken from the ``with model:`` context when omitted.
    chunk_size : int
        Points per compiled call when evaluating many points (memory and cache locality).

    Notes
    -----
    ``log_prior(x) = model.varlogp`` (free variables, Jacobians included), ``log_likelihood(x) =
    model.datalogp`` (observed variables and potentials); their sum is ``model.logp``. Every
    method takes ``x`` of shape ``(..., dim)`` and returns arrays of shape ``(...)`` (or
    ``(..., dim)`` for the gradient). Functions are compiled on first use and reused.
    """

    def __init__(self, model: pm.Model | None = None, *, chunk_size: int = 1024):
        model = pm.modelcontext(model)
        self.chunk_size = int(chunk_size)
        if not model.free_RVs:
            raise EvidenceInputError(
                "The model has no free variables, so there is nothing to integrate: its evidence "
                "is simply exp(model.logp()) at the observed data. Add at least one unobserved "
                "random variable, or evaluate model.compile_logp()({}) directly."
            )
        self.model = model
        point = model.initial_point()
        self._point = point
        layout, start = [], 0
        for rv in model.free_RVs:
            value = model.rvs_to_values[rv]
            shape = tuple(int(s) for s in np.shape(point[value.name]))
            size = int(np.prod(shape, dtype=int))
            layout.append(
                VariableSlice(
                    name=rv.name,
                    value_name=value.name,
                    shape=shape,
                    start=start,
                    stop=start + size,
                    transformed=model.rvs_to_transforms.get(rv) is not None,
                )
            )
            start += size
        self.layout: tuple[VariableSlice, ...] = tuple(layout)
        self.dim: int = start
        self.discrete_names: tuple[str, ...] = tuple(
            rv.name for rv in model.free_RVs if model.rvs_to_values[rv] in model.discrete_value_vars
        )

    @classmethod
    def for_model(cls, model: pm.Model | None = None) -> LogDensity:
        """The adapter of ``model``, built once and reused (compile once per model).

        Cached per model (weakly); rebuilt if variables were added to the model since.
        """
        model = pm.modelcontext(model)
        signature = tuple(model.named_vars)
        cached = _ADAPTERS.get(model)
        if cached is not None and cached[0] == signature:
            return cached[1]
        target = cls(model)
        _ADAPTERS[model] = (signature, target)
        return target

    # ------------------------------------------------------------------ properties
    @property
    def var_names(self) -> list[str]:
        """Names of the free variables (constrained space), in flat-vector order."""
        return [v.name for v in self.layout]

    @property
    def coordinate_names(self) -> list[str]:
        """One label per entry of the flat unconstrained vector, e.g. ``beta_log__[2]``."""
        labels = []
        for v in self.layout:
            if v.shape == ():
                labels.append(v.value_name)
            else:
                labels.extend(f"{v.value_name}{list(idx)}" for idx in np.ndindex(v.shape))
        return labels

    @property
    def has_discrete(self) -> bool:
        return bool(self.discrete_names)

    def require_continuous(self, method: str) -> None:
        """Raise a clear error if ``method`` needs continuous variables and the model has discrete ones."""
        if self.has_discrete:
            raise EvidenceInputError(
                f"Method {method!r} needs every free variable to be continuous (it fits Gaussian "
                f"references or uses gradients), but the model has discrete free variables "
                f"{list(self.discrete_names)}. Marginalize them out of the model (sum over "
                f"their values with pm.math.logsumexp in a pm.Potential) and estimate again."
            )

    @cached_property
    def observed_fingerprint(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """Sorted ``(name, shape, sha256)`` of every observed data array of the model.

        Two models are fitted to the same data when their fingerprints agree up to names.
        """
        entries = []
        for rv in self.model.observed_RVs:
            data = self.model.rvs_to_values[rv]
            try:
                array = np.asarray(pm.pytensorf.constant_fold([data])[0], dtype=float)
            except Exception:  # data that cannot be folded to a constant (should not happen)
                array = np.asarray(data.eval(), dtype=float)
            digest = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]
            entries.append((rv.name, tuple(array.shape), digest))
        return tuple(sorted(entries, key=lambda e: e[0]))

    # ------------------------------------------------------------------ compiled graphs
    def _joined(self, outputs):
        """Replace the model's value variables by one flat vector ``x`` in ``outputs``."""
        new_outputs, x = join_nonshared_inputs(self._point, outputs, self.model.value_vars)
        return new_outputs, x

    def _compile_batched(self, outputs, x):
        """Compile ``outputs(x)`` vectorized over one leading batch dimension of ``x``."""
        x_batch = pt.matrix("x_batch", dtype=x.dtype)
        batched = vectorize_batched(outputs, x, x_batch)
        # binary/integer variables make x an integer vector: accept 0./1. floats for them
        return pytensor.function(
            [x_batch], batched, on_unused_input="ignore", allow_input_downcast=True
        )

    @cached_property
    def _terms_fn(self):
        (log_prior, log_lik), x = self._joined([self.model.varlogp, self.model.datalogp])
        return self._compile_batched([log_prior, log_lik], x)

    @cached_property
    def _grad_fn(self):
        self.require_continuous("gradient")
        (logp,), x = self._joined([self.model.logp()])
        grad = pytensor.grad(logp, x)
        return self._compile_batched([logp, grad], x)

    @cached_property
    def _terms_grad_graph(self):
        """Log prior, log likelihood and their gradients as graphs of one flat vector ``x``."""
        self.require_continuous("gradient")
        (log_prior, log_lik), x = self._joined([self.model.varlogp, self.model.datalogp])
        grads = (  # a flat prior (or no likelihood) is disconnected from x: zero gradient
            pytensor.grad(log_prior, x, disconnected_inputs="ignore"),
            pytensor.grad(log_lik, x, disconnected_inputs="ignore"),
        )
        return [log_prior, log_lik, *grads], x

    @cached_property
    def _terms_grad_fn(self):
        outputs, x = self._terms_grad_graph
        return self._compile_batched(outputs, x)

    def symbolic_terms_with_grad(self, x_batch):
        """``(log_prior, log_lik, grad log_prior, grad log_lik)`` as symbolic graphs of a
        symbolic matrix ``x_batch (n, dim)``, for building larger compiled functions (a whole
        HMC transition) around the model's log-density; the model's graph is vectorized over
        the rows, not compiled."""
        outputs, x = self._terms_grad_graph
        return vectorize_batched(outputs, x, x_batch)

    @cached_property
    def _relaxed_terms_grad_fn(self):
        """Log prior, log likelihood and their gradients with binary ``x`` relaxed to reals.

        Each Bernoulli term is written ``x log p + (1 - x) log(1 - p)`` (PyMC's own ``logp``
        is a switch on ``x``, flat in ``x``) and every integer value variable becomes a float
        one. At ``x`` in ``{0, 1}`` the values equal the model's; the gradient linearizes the
        log-density in ``x``, which is what Gibbs-with-gradients needs (Grathwohl et al. 2021).
        """
        model = self.model
        if not self.binary_mask.all():
            raise EvidenceInputError(
                "A relaxed (gradient-informed) flip proposal needs every free variable to be "
                f"binary (Bernoulli); the model also has {int((~self.binary_mask).sum())} other "
                "entries. Use kernel='gibbs' or a custom kernel."
            )
        floats = {v: pt.tensor(dtype="float64", shape=v.type.shape, name=v.name)
                  for v in model.value_vars}  # fmt: skip
        prior_terms = []
        for rv in model.free_RVs:
            value = floats[model.rvs_to_values[rv]]
            p = rv.owner.inputs[-1]
            prior_terms.append(pt.sum(value * pt.log(p) + (1.0 - value) * pt.log1p(-p)))
        log_prior = pt.sum(prior_terms) if len(prior_terms) > 1 else prior_terms[0]
        log_lik = clone_replace(model.datalogp, replace=floats, rebuild_strict=False)
        point = {k: np.asarray(v, dtype=float) for k, v in self._point.items()}
        (log_prior, log_lik), x = join_nonshared_inputs(
            point, [log_prior, log_lik], list(floats.values())
        )
        grads = (
            pytensor.grad(log_prior, x, disconnected_inputs="ignore"),
            pytensor.grad(log_lik, x, disconnected_inputs="ignore"),
        )
        return self._compile_batched([log_prior, log_lik, *grads], x)

    def evaluate_with_relaxed_grad(self, x):
        """Like :meth:`evaluate_with_grad` for all-binary models, with the gradients of the
        relaxed log-density (see ``_relaxed_terms_grad_fn``)."""
        flat, batch_shape = self._check_x(x)
        outs = self._chunked(self._relaxed_terms_grad_fn, flat)
        shapes = (batch_shape, batch_shape, (*batch_shape, self.dim), (*batch_shape, self.dim))
        return tuple(
            np.asarray(o, dtype=float).reshape(sh) for o, sh in zip(outs, shapes, strict=True)
        )

    @cached_property
    def prior_sampler(self):
        """A compiled forward draw of the free variables (one draw per call) and the random
        generator variables to reseed before use; compiled once per model."""
        from pymc.pytensorf import compile as pm_compile

        draw_fn, updates = pm_compile(
            inputs=[], outputs=self.model.free_RVs, random_seed=False, return_updates=True
        )
        return draw_fn, list(updates)

    @cached_property
    def _to_constrained_fn(self):
        constrained = self.model.replace_rvs_by_values(self.model.free_RVs)
        outputs, x = self._joined(constrained)
        return self._compile_batched(outputs, x)

    @cached_property
    def _to_unconstrained_fn(self):
        model = self.model
        placeholders = [rv.type() for rv in model.free_RVs]
        replace = dict(zip(model.free_RVs, placeholders, strict=True))
        pieces = []
        for rv in model.free_RVs:
            transform = model.rvs_to_transforms.get(rv)
            value = transform.forward(rv, *rv.owner.inputs) if transform is not None else rv
            pieces.append(pt.as_tensor(value).astype("float64").ravel())
        flat = graph_replace(pt.concatenate(pieces), replace, strict=False)
        batched_inputs = [
            pt.tensor(dtype=p.dtype, shape=(None, *p.type.shape)) for p in placeholders
        ]
        flat_batched = vectorize_graph(
            flat, replace=dict(zip(placeholders, batched_inputs, strict=True))
        )
        return pytensor.function(batched_inputs, flat_batched, on_unused_input="ignore")

    # ------------------------------------------------------------------ evaluation
    def _check_x(self, x) -> tuple[np.ndarray, tuple[int, ...]]:
        x = np.asarray(x, dtype=float)
        if x.shape[-1:] != (self.dim,):
            raise EvidenceInputError(
                f"Expected points with last dimension {self.dim} (the flat unconstrained vector of "
                f"{self.var_names}), got an array of shape {x.shape}."
            )
        return x.reshape(-1, self.dim), x.shape[:-1]

    def _chunked(self, fn, *arrays: np.ndarray, constants=()) -> list[np.ndarray]:
        """Call a batched function on blocks of ``chunk_size`` rows of ``arrays`` (the same
        rows of each; ``constants`` are passed whole to every call) and join the outputs.

        Blocks keep the intermediates (e.g. ``chunk x n_obs`` linear predictors) in cache; on a
        regression with 200 observations this is about 3x faster than one call on 20,000 rows.
        """
        n = arrays[0].shape[0]
        if n <= self.chunk_size:
            return [np.asarray(out) for out in fn(*arrays, *constants)]
        blocks = [
            fn(*(a[i : i + self.chunk_size] for a in arrays), *constants)
            for i in range(0, n, self.chunk_size)
        ]
        return [np.concatenate([np.asarray(b[k]) for b in blocks]) for k in range(len(blocks[0]))]

    def evaluate(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(log_prior, log_likelihood)`` at points ``x`` of shape ``(..., dim)``."""
        flat, batch_shape = self._check_x(x)
        if flat.shape[0] == 0:
            empty = np.empty(batch_shape)
            return empty, empty.copy()
        log_prior, log_lik = self._chunked(self._terms_fn, flat)
        return (
            np.asarray(log_prior, dtype=float).reshape(batch_shape),
            np.asarray(log_lik, dtype=float).reshape(batch_shape),
        )

    def log_prior(self, x) -> np.ndarray:
        """Log prior density of the unconstrained vector (Jacobians included)."""
        return self.evaluate(x)[0]

    def log_likelihood(self, x) -> np.ndarray:
        """Log likelihood: observed variables plus ``pm.Potential`` terms."""
        return self.evaluate(x)[1]

    def log_density(self, x) -> np.ndarray:
        """Unnormalized log posterior ``log f(x) = log prior + log likelihood`` (``model.logp``)."""
        log_prior, log_lik = self.evaluate(x)
        return log_prior + log_lik

    def log_density_and_grad(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``log f(x)`` and its gradient with respect to ``x``."""
        flat, batch_shape = self._check_x(x)
        logp, grad = self._chunked(self._grad_fn, flat)
        return np.asarray(logp).reshape(batch_shape), np.asarray(grad).reshape(
            *batch_shape, self.dim
        )

    def evaluate_with_grad(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(log_prior, log_likelihood, grad log_prior, grad log_likelihood)`` at ``x``.

        The two gradients are kept apart so that a tempered density
        ``log prior + beta * log likelihood`` gets its gradient without a second compile.
        """
        flat, batch_shape = self._check_x(x)
        log_prior, log_lik, grad_prior, grad_lik = self._chunked(self._terms_grad_fn, flat)
        return (
            np.asarray(log_prior, dtype=float).reshape(batch_shape),
            np.asarray(log_lik, dtype=float).reshape(batch_shape),
            np.asarray(grad_prior, dtype=float).reshape(*batch_shape, self.dim),
            np.asarray(grad_lik, dtype=float).reshape(*batch_shape, self.dim),
        )

    @cached_property
    def binary_mask(self) -> np.ndarray:
        """Boolean mask over the flat vector: entries of Bernoulli (0/1) free variables."""
        mask = np.zeros(self.dim, dtype=bool)
        for v, rv in zip(self.layout, self.model.free_RVs, strict=True):
            if isinstance(rv.owner.op, BernoulliRV):
                mask[v.start : v.stop] = True
        return mask

    @cached_property
    def finite_levels(self) -> np.ndarray:
        """Number of values of each flat entry of a finite discrete variable: 2 for Bernoulli
        (values 0, 1), ``L`` for a Categorical with ``L`` probabilities (values ``0..L-1``);
        0 for every other entry (continuous, or discrete with unbounded support)."""
        levels = np.zeros(self.dim, dtype=int)
        for v, rv in zip(self.layout, self.model.free_RVs, strict=True):
            if isinstance(rv.owner.op, BernoulliRV):
                levels[v.start : v.stop] = 2
            elif isinstance(rv.owner.op, CategoricalRV):
                n_levels = rv.owner.inputs[-1].shape[-1]  # the number of probabilities
                try:
                    (n_levels,) = pm.pytensorf.constant_fold([n_levels])
                except NotConstantValueError:  # a shape known only at run time: not finite here
                    continue
                levels[v.start : v.stop] = int(n_levels)
        return levels

    # ------------------------------------------------------------------ maps
    def to_constrained(self, x) -> dict[str, np.ndarray]:
        """Map flat unconstrained points ``(..., dim)`` to named constrained values ``(..., *shape)``."""
        flat, batch_shape = self._check_x(x)
        values = self._to_constrained_fn(flat)
        return {
            v.name: np.asarray(val).reshape(batch_shape + v.shape)
            for v, val in zip(self.layout, values, strict=True)
        }

    def to_unconstrained(self, values: Mapping[str, np.ndarray], batch_ndim: int = 1) -> np.ndarray:
        """Map named constrained values ``{name: (*batch, *shape)}`` to flat vectors ``(*batch, dim)``.

        ``batch_ndim`` is the number of leading batch dimensions (2 for ``(chain, draw)``).
        """
        missing = [name for name in self.var_names if name not in values]
        if missing:
            raise EvidenceInputError(
                f"Posterior values are missing the free variables {missing}; got "
                f"{sorted(values)}. Pass draws of every free variable of the model "
                f"({self.var_names})."
            )
        arrays, batch_shape = [], None
        for v in self.layout:
            array = np.asarray(values[v.name])
            this_batch = array.shape[:batch_ndim]
            if array.shape[batch_ndim:] != v.shape:
                raise EvidenceInputError(
                    f"Variable {v.name!r} has draws of shape {array.shape}; expected "
                    f"{batch_ndim} batch dimension(s) followed by the variable's shape {v.shape}."
                )
            if batch_shape is None:
                batch_shape = this_batch
            elif this_batch != batch_shape:
                raise EvidenceInputError(
                    f"Variable {v.name!r} has batch shape {this_batch}, others have {batch_shape}."
                )
            if not np.all(np.isfinite(array)):
                raise NonFiniteLogDensityError(
                    f"Draws of {v.name!r} contain non-finite values (NaN or inf); drop those draws "
                    f"or check the sampler that produced them."
                )
            arrays.append(array.reshape(-1, *v.shape))
        flat = self._to_unconstrained_fn(*arrays)
        return np.asarray(flat, dtype=float).reshape(*batch_shape, self.dim)

    def posterior_to_unconstrained(self, idata) -> np.ndarray:
        """Flat unconstrained draws ``(chain, draw, dim)`` from a posterior (DataTree or Dataset)."""
        posterior = _posterior_dataset(idata)
        values = {}
        for name in self.var_names:
            if name in posterior:
                values[name] = posterior[name].transpose("chain", "draw", ...).to_numpy()
        return self.to_unconstrained(values, batch_ndim=2)


@node_rewriter([Blockwise])
def _blockwise_inner_graph_to_batched(fgraph, node):
    """Replace a ``Blockwise`` of an ``OpFromGraph`` by its inner graph on the batched inputs.

    Vectorizing a model's graph wraps every ``OpFromGraph`` (``pt.logaddexp``, ``logsumexp``
    and their gradients) in a ``Blockwise``, which PyTensor neither fuses nor inlines; the
    compiled function then calls the inner graph once per point (on a 10-D mixture written
    with ``pt.logaddexp``, the log-density and gradient at 1000 points took 0.21 ms instead of
    0.07 ms). An elementwise ``SymbolicOp`` is applied to the batched inputs as the same op
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
    return vectorize_graph(inner, replace=dict(zip(core_inputs, node.inputs, strict=True)))


def vectorize_batched(outputs, x, x_batch):
    """``outputs``, graphs of one flat vector ``x``, vectorized over the rows of ``x_batch``,
    with batched inner graphs unwrapped (see ``_blockwise_inner_graph_to_batched``)."""
    batched = vectorize_graph(outputs, replace={x: x_batch})
    return rewrite_graph(
        batched, include=(), custom_rewrite=dfs_rewriter(_blockwise_inner_graph_to_batched),
        clone=True,
    )  # fmt: skip


def _posterior_dataset(idata):
    """The posterior group of an ArviZ DataTree/InferenceData, or a Dataset given directly."""
    import xarray as xr

    if isinstance(idata, xr.Dataset):
        posterior = idata
    elif isinstance(idata, xr.DataTree):
        if "posterior" not in idata.children:
            raise EvidenceInputError(
                f"idata has no 'posterior' group (groups: {list(idata.children)}); pass the "
                f"result of pm.sample()."
            )
        posterior = idata["posterior"].to_dataset()
    elif hasattr(idata, "posterior"):
        posterior = idata.posterior
        posterior = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    else:
        raise EvidenceInputError(
            f"idata must be an ArviZ DataTree (as returned by pm.sample) or an xarray Dataset of "
            f"posterior draws, got {type(idata).__name__}."
        )
    for dim in ("chain", "draw"):
        if dim not in posterior.dims:
            raise EvidenceInputError(
                f"Posterior draws must have dims ('chain', 'draw', ...); got {tuple(posterior.dims)}."
            )
    return posterior
