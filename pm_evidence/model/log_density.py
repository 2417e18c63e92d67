"""``LogDensity``, the model as every estimator sees it (their ``target``): a PyMC model as a
batched, compiled log-density on a flat vector.

:class:`LogDensity` puts together the small units of :mod:`pm_evidence.model`, one job each:

- :class:`~pm_evidence.model.layout.Layout`: where each free variable sits in the flat
  unconstrained vector ``x`` (constrained and value shapes, discrete entries);
- :mod:`~pm_evidence.model.graphs`: the log prior (with the Jacobians of the transforms) and the
  log likelihood (observed terms plus ``pm.Potential`` terms) as *total* graphs (``-inf``
  wherever PyMC's parameter checks fail), vectorized over any number of points with
  :func:`pytensor.graph.replace.vectorize_graph` and compiled with one input per value
  variable (:func:`~pm_evidence.model.graphs.batched_by_variable`);
- :class:`~pm_evidence.model.batched.FlatRowsFunction`: those functions called on rows of the
  flat vector ``x``;
- :class:`~pm_evidence.model.batched.BlockedFunction`: compiled calls on blocks of points sized
  to the data (a million observations and a thousand points never meet in one array);
- :class:`~pm_evidence.model.prior.PriorSampler`: forward draws from the prior, a batch per call;
- :class:`~pm_evidence.model.maps.ValueMaps`: named constrained draws to flat vectors and back;
- :func:`~pm_evidence.model.fingerprint.observed_fingerprint`: which data the model holds now.

The unnormalized density is ``f(x) = exp(model.logp(x))``; its integral over ``x`` is
``Z = p(y | M)`` when the model is prior x likelihood, which is what every estimator targets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import NullTypeGradError
from pytensor.graph.replace import graph_replace

from pm_evidence.core.exceptions import EvidenceInputError, NonFiniteLogDensityError
from pm_evidence.core.utils import warn_user
from pm_evidence.model.backend import (
    Backend,
    VmappedFunction,
    resolve_backend,
    rows_per_call,
    unsupported_operation_error,
)
from pm_evidence.model.batched import (
    BlockedFunction,
    FlatRowsFunction,
    block_size_for,
)
from pm_evidence.model.compile_mode import (
    QUICK_PYTHON_LINKER,
    model_function,
    model_function_mode,
    python_linker_function,
    without_c_compiler,
    without_garbage_collection,
)
from pm_evidence.model.fingerprint import (
    check_draws_match_data,
    n_observations,
    observed_fingerprint,
)
from pm_evidence.model.graphs import (
    batched_by_variable,
    flat_graphs,
    graph_size,
    largest_factored_matrix,
    largest_matrix,
    relaxed_bernoulli_terms,
    term_choice_graphs,
    vectorize_batched,
)
from pm_evidence.model.layout import Layout, VariableSlice
from pm_evidence.model.maps import ValueMaps, posterior_dataset
from pm_evidence.model.model_checks import model_messages
from pm_evidence.model.noncentering import noncentered_model, noncentering_log_jacobian
from pm_evidence.model.prior import (
    OrderedPrior,
    PriorCut,
    PriorSampler,
    measure_cut,
    ordered_prior,
    restricting_transforms,
)

__all__ = [
    "LogDensity",
    "ModelLike",
    "VariableSlice",
    "as_target",
    "vectorize_batched",
]

# The attribute of a pm.Model that holds its adapter (LogDensity.for_model): the model owns
# its compiled code, which goes with it.
ADAPTER_ATTRIBUTE = "_pm_evidence_log_density"

# A model whose point's evaluation factors a matrix of at least this many numbers (a Gaussian
# process's 100 x 100 covariance) takes values without gradients from a value-only function of
# their own (LogDensity.values_apart): on the radial-velocity model with a GP term (a 200 x 200
# covariance) the value alone runs at twice the points per second of the value and gradient
# (measured: docs/benchmarks.rst, "Values without gradients").
VALUES_APART_ELEMENTS = 10_000

# Forward draws that decide whether transforms cut the prior and measure the mass they keep
# (LogDensity.prior_cut): a batched prior draws them in one call; one drawn per call costs about
# 0.1 ms a draw. A cut of mass 1e-3 goes unseen in 4,000 draws with probability 2 %, and its
# bias on log Z, 1e-3, is a fifth of the default SE.
PRIOR_CUT_DRAWS = 20_000
PRIOR_CUT_DRAWS_ONE_BY_ONE = 4_000
PRIOR_CUT_SEED = 65_537
# The forward draws behind LogDensity.prior_edge_share: PRIOR_CUT_DRAWS, fewer in many dimensions
# (at most this many numbers, at least 1,000 draws): a diagnostic, read where the prior is a
# reference, which took 1.4 s at 20,000 draws of a 1,002-parameter model.
PRIOR_EDGE_NUMBERS = 2_000_000


class AdapterSlot:
    """Where a model keeps its adapters: ``(signature, LogDensity)`` per backend. Pickled empty,
    so that a model pickles (compare_models sends models to workers) as before it was used."""

    def __init__(self):
        self.held: dict[str, tuple] = {}  # backend name -> (signature, LogDensity)

    def __reduce__(self):
        return (AdapterSlot, ())


class LogDensity:
    """Batched log prior, log likelihood and gradient of a PyMC model on flat vectors.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; taken from the ``with model:`` context when omitted.
    block_size : int, optional
        Points per compiled call; by default chosen from the number of observations
        (:func:`~pm_evidence.model.batched.block_size_for`) so that memory stays bounded.
    reparametrize : bool
        Compute centered hierarchies whose groups the data inform weakly (a funnel) in their
        non-centered coordinates (:mod:`~pm_evidence.model.noncentering`): the same integral,
        so the same ``log Z``. ``noncentered`` names those variables; ``model`` is then
        the model in those coordinates (same variables, data and names). On by default.
    backend : {"auto", "numba", "jax"}
        The engine of the compiled functions (:mod:`~pm_evidence.model.backend`): ``"auto"``
        runs them on JAX where JAX sees a GPU, on Numba otherwise; the attribute ``backend`` holds the
        choice and the device.

    Notes
    -----
    ``log_prior(x) = model.varlogp`` (free variables, Jacobians included), ``log_likelihood(x) =
    model.datalogp`` (observed variables and potentials); their sum is ``model.logp``. Every
    method takes ``x`` of shape ``(..., dim)`` and returns arrays of shape ``(...)`` (or
    ``(..., dim)`` for the gradient), ``-inf`` outside the support. Functions are compiled on
    first use and reused.
    """

    @without_garbage_collection()
    def __init__(
        self,
        model: pm.Model | None = None,
        *,
        block_size: int | None = None,
        reparametrize: bool = True,
        backend: str | Backend = "auto",
    ):
        model = pm.modelcontext(model)
        if not model.free_RVs:
            raise EvidenceInputError(
                "The model has no free variables, so there is nothing to integrate: its evidence "
                "is simply exp(model.logp()) at the observed data. Add at least one unobserved "
                "random variable, or evaluate model.compile_logp()({}) directly."
            )
        self.source_model = model  # the user's model, whose slot keeps this adapter (for_model)
        self.noncentered: tuple[str, ...] = ()
        if reparametrize:
            model, self.noncentered = noncentered_model(model)
        self.model = model
        with without_c_compiler():  # PyMC compiles the initial point anew on each call
            self._point = model.initial_point()
        self.layout_info = Layout.from_model(model)
        self.layout: tuple[VariableSlice, ...] = self.layout_info.variables
        self.dim: int = self.layout_info.dim
        self.n_observations = n_observations(model)
        self.backend: Backend = resolve_backend(backend)
        self._block_size_given = block_size
        self.block_size = int(block_size or self._rows_per_call())
        self.maps = ValueMaps(model, self.layout_info, self._point)
        # fused transitions compiled around this log-density, by (reference class, leapfrog
        # steps): filled by pm_evidence.tempering.compiled, owned (and dropped) with the adapter
        self.compiled_transitions: dict = {}

    @classmethod
    def for_model(
        cls, model: pm.Model | None = None, backend: str | Backend = "auto"
    ) -> LogDensity:
        """The adapter of ``model`` on ``backend``, built once and reused (compile once per
        model and backend).

        Kept on the model itself (``ADAPTER_ATTRIBUTE``), so it goes with the model; rebuilt if
        variables were added to the model since.
        """
        model = pm.modelcontext(model)
        backend = resolve_backend(backend)
        signature = tuple(model.named_vars)
        slot = getattr(model, ADAPTER_ATTRIBUTE, None)
        if slot is None:
            slot = AdapterSlot()
            setattr(model, ADAPTER_ATTRIBUTE, slot)
        # the adapter of this very model (a copy of a model shares its slot) and its variables
        # one adapter per engine, and on JAX one that may move to Numba ("auto") apart from one
        # that must not ("jax")
        key = backend.requested if backend.is_jax else "numba"
        held = slot.held.get(key)
        if held is not None and held[0] == signature and held[1].source_model is model:
            return held[1]
        target = cls(model, backend=backend)
        slot.held[key] = (signature, target)
        return target

    # ------------------------------------------------------------------ layout
    @property
    def var_names(self) -> list[str]:
        """Names of the free variables (constrained space), in flat-vector order."""
        return self.layout_info.var_names

    @property
    def coordinate_names(self) -> list[str]:
        """One label per entry of the flat unconstrained vector, e.g. ``beta_log__[2]``."""
        return self.layout_info.coordinate_names

    @property
    def discrete_names(self) -> tuple[str, ...]:
        return self.layout_info.discrete_names

    @property
    def has_discrete(self) -> bool:
        return bool(self.discrete_names)

    @property
    def binary_mask(self) -> np.ndarray:
        """Boolean mask over the flat vector: entries of Bernoulli (0/1) free variables."""
        return self.layout_info.binary_mask

    @property
    def finite_levels(self) -> np.ndarray:
        """Number of values of each flat entry of a finite discrete variable: 2 for Bernoulli
        (values 0, 1), ``L`` for a Categorical with ``L`` probabilities (values ``0..L-1``),
        ``upper - lower + 1`` for a DiscreteUniform (values ``lower..upper``, see
        :attr:`lowest_values`); 0 for every other entry (continuous, or discrete with unbounded
        support)."""
        return self.layout_info.finite_levels

    @property
    def lowest_values(self) -> np.ndarray:
        """The smallest value of each flat entry of a finite discrete variable (``lower`` of a
        DiscreteUniform, 0 for Bernoulli and Categorical); 0 elsewhere."""
        return self.layout_info.lowest

    @property
    def discrete_mask(self) -> np.ndarray:
        """Boolean mask over the flat vector: entries of discrete free variables."""
        return self.layout_info.discrete_mask

    def require_continuous(self, method: str) -> None:
        """Raise a clear error if ``method`` needs continuous variables and the model has discrete ones."""
        if self.has_discrete:
            raise EvidenceInputError(
                f"Method {method!r} needs every free variable to be continuous (it fits Gaussian "
                f"references or uses gradients), but the model has discrete free variables "
                f"{list(self.discrete_names)}. Use a path method (any of pm_evidence.PATH_METHODS): they "
                f"update finite discrete variables by Gibbs sweeps, next to HMC on the "
                f"continuous ones; or marginalize the discrete variables out of the model (sum "
                f"over their values with pm.math.logsumexp in a pm.Potential)."
            )

    @property
    def observed_fingerprint(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """Sorted ``(name, shape, sha256)`` of the model's observed data *as it is now*."""
        return observed_fingerprint(self.model)

    @cached_property
    def point_matrix_size(self) -> int:
        """The numbers in the largest matrix one point's evaluation makes (a Gaussian
        process's ``n x n`` covariance; :func:`~pm_evidence.model.graphs.largest_matrix` of
        the terms' graphs; 0 where there is none). With the number
        of observations it sets the rows per compiled call
        (:func:`~pm_evidence.model.batched.block_size_for`)."""
        return largest_matrix(self._graphs.terms)

    @cached_property
    def values_apart(self) -> bool:
        """Whether values wanted without gradients come from the value-only function: where
        the model has a gradient and one point's evaluation factors a matrix of at least
        ``VALUES_APART_ELEMENTS`` numbers (a Gaussian process's ``n x n`` covariance:
        :func:`~pm_evidence.model.graphs.largest_factored_matrix`). There the value costs
        about half of the value and gradient, and a run spends many of its evaluations where
        it needs no gradient (the exploration's jumps, its reweighting, bridge's reference
        draws), so the second compile pays for itself many times over; elsewhere (many
        observations included: an elementwise likelihood's gradient costs little more than
        its value) the values come from the value-and-gradient function, one compile per model
        (:meth:`evaluate`). Read from the model's graphs, not timed: the same model takes the
        same functions on every machine."""
        if not self.has_gradient:
            return False
        return largest_factored_matrix(self._graphs.terms) >= VALUES_APART_ELEMENTS

    def _rows_per_call(self) -> int:
        """Rows per compiled call on this adapter's backend (``block_size`` unless given):
        :func:`~pm_evidence.model.batched.block_size_for` the observations and the largest
        point matrix on a CPU; on an accelerator as many as keep a block's intermediates
        within bounds (:func:`~pm_evidence.model.backend.rows_per_call`)."""
        per_point = max(self.n_observations, self.point_matrix_size)
        default = block_size_for(self.n_observations, self.point_matrix_size)
        return rows_per_call(default, self.backend, per_point)

    @property
    def model_messages(self) -> tuple[str, ...]:
        """What makes this model's ``log Z`` meaningless as evidence (an improper prior, no
        data): :func:`~pm_evidence.model.model_checks.model_messages`, attached to every
        result."""
        return model_messages(self.model)

    # ------------------------------------------------------------------ compiled terms
    @cached_property
    @without_garbage_collection()
    def _graphs(self):
        # a periodic kernel's sines by angle addition on Numba only: on JAX the model's own
        # sines ran faster (measured on a CPU: docs/benchmarks.rst, "Sines of differences");
        # a model that falls back from JAX to Numba keeps the graphs built for JAX
        return flat_graphs(self.model, self._point, angle_addition=not self.backend.is_jax)

    def _compile_by_variable(
        self, outputs, n_values: int, fill_values, differentiated=None, values=None
    ):
        """Compile ``outputs``, graphs of the value variables (``n_values`` numbers per point,
        then groups of per-variable gradients), vectorized over rows of one input per variable
        (:func:`~pm_evidence.model.graphs.batched_by_variable`), as a function of flat rows
        ``x (n, dim)`` called in blocks. ``values`` stand for the value variables where the
        graphs are of others (the float ones of the relaxed terms), in the same order."""
        values = self._graphs.values if values is None else values
        fn = self._compile_rows(outputs, values)
        flat = FlatRowsFunction(
            fn, self.layout, [v.dtype for v in values], n_values, differentiated
        )
        padded = isinstance(fn, VmappedFunction)
        return BlockedFunction(flat, self.block_size, fill_values, padded=padded)

    @without_garbage_collection()
    def _compile_rows(self, outputs, values):
        """``outputs`` on rows of one input per value variable: the graphs vectorized over
        rows and compiled by Numba, or one point's graphs compiled by JAX and mapped over rows
        (:class:`~pm_evidence.model.backend.VmappedFunction`)."""
        shapes = [v.value_shape for v in self.layout]
        if self.backend.is_jax:
            function = self._on_jax(
                lambda: VmappedFunction(
                    values, outputs, model_function_mode(jax=True), point_shapes=shapes
                )
            )
            if function is not None:
                return function
        inputs, batched = batched_by_variable(outputs, values, shapes)
        return self.compile(inputs, batched)

    def _on_jax(self, build):
        """``build()``, or, where PyTensor cannot compile an operation of the model to JAX,
        an error naming it (``backend="jax"``) or ``None`` after the adapter moved to Numba
        for good, recording why (``backend="auto"``)."""
        try:
            return build()
        except NotImplementedError as error:
            if self.backend.requested == "jax":
                raise unsupported_operation_error(error) from error
            self._move_to_numba(f"{error}")
            return None

    def _move_to_numba(self, why: str) -> None:
        """The adapter on Numba for good, ``why`` recorded (``backend.fallback``): the
        functions compiled on JAX so far are dropped, so that every function of the model runs
        on one engine, which the results record."""
        self.backend = Backend("numba", "cpu", "auto", fallback=why)
        self.block_size = int(self._block_size_given or self._rows_per_call())
        for name in ("_terms_fn", "_terms_grad_fn", "_relaxed_terms_grad_fn"):
            self.__dict__.pop(name, None)  # cached properties: compiled again when next used
        self.compiled_transitions.clear()

    def compile(self, inputs, outputs):
        """``outputs`` as a function of ``inputs`` compiled by Numba
        (:func:`~pm_evidence.model.compile_mode.model_function`), for the hot paths: the fused
        HMC transitions of :mod:`pm_evidence.tempering.compiled`, built on the Numba backend
        only."""
        return model_function(inputs, outputs, on_unused_input="ignore")

    def blocked(self, fn) -> BlockedFunction:
        """A function compiled by :meth:`compile` or by :meth:`compile_point_rows` (padded to
        a few row counts), of row-aligned arrays, called in blocks of ``block_size`` rows."""
        if isinstance(fn, VmappedFunction):
            return BlockedFunction(fn, self.block_size, padded=True)
        return BlockedFunction(fn, self.block_size)

    @cached_property
    def _terms_fn(self):
        return self._compile_by_variable(self._graphs.terms, 2, (-np.inf, -np.inf))

    def _require_gradient(self) -> None:
        """Gradients are taken with respect to the continuous entries (the discrete entries of
        a mixed model get gradient 0); a model with no continuous entry has none."""
        if self.discrete_mask.all():
            raise EvidenceInputError(
                f"Gradients need continuous free variables; every free variable of the model is "
                f"discrete ({list(self.discrete_names)}). Use kernel='gibbs' or 'gwg'."
            )

    @cached_property
    @without_garbage_collection()
    def _gradient_graphs(self) -> list:
        """``[log_prior, log_lik, *their gradients]`` in the continuous value variables
        (:meth:`~pm_evidence.model.graphs.LogDensityGraphs.with_grads_by_variable`)."""
        self._require_gradient()
        g = self._graphs
        wrt = [value for value, v in zip(g.values, self.layout, strict=True) if not v.discrete]
        return g.with_grads_by_variable(wrt)

    @cached_property
    def has_gradient(self) -> bool:
        """Whether the log-density has a gradient: a continuous entry, and every operation of
        the graph differentiable (PyTensor builds the gradient graph; nothing is compiled)."""
        if self.discrete_mask.all():
            return False
        try:
            self._gradient_graphs  # noqa: B018 (a cached property: builds the graphs)
        except (NullTypeGradError, NotImplementedError):
            return False
        return True

    @cached_property
    def _terms_grad_fn(self):
        continuous = [not v.discrete for v in self.layout]
        return self._compile_by_variable(
            self._gradient_graphs, 2, (-np.inf, -np.inf, 0.0, 0.0), continuous
        )

    @property
    def terms_function(self) -> BlockedFunction:
        """The compiled value function, ``x (n, dim) -> [log_prior, log_lik]`` in blocks of rows
        (compiled on first access, once per model; the values of a model with a gradient come
        from :attr:`terms_grad_function` instead, see :meth:`evaluate`); its ``fn.function`` is
        the PyTensor function itself, for inspecting the compiled graph."""
        return self._terms_fn

    @property
    def terms_grad_function(self) -> BlockedFunction:
        """The compiled value-and-gradient function, ``x (n, dim) -> [log_prior, log_lik, grad
        log_prior, grad log_lik]`` in blocks of rows (compiled on first access, once per model);
        its ``fn.function`` is the PyTensor function itself (one input per value variable), for
        inspecting the compiled graph."""
        return self._terms_grad_fn

    @cached_property
    def gradient_graph_size(self) -> int:
        """Operations in the (unbatched) graph of both terms and their gradients."""
        return graph_size(self._graphs.with_grads())

    def symbolic_terms(self, x_batch):
        """``(log_prior, log_lik)`` as symbolic graphs of a symbolic matrix ``x_batch (n,
        dim)`` (float64; cast to the model's integer entries where every entry is one), the
        model's graph vectorized over the rows, for larger compiled functions that evaluate
        the model without its gradient (a Gibbs sweep's candidates)."""
        g = self._graphs
        rows = pt.cast(x_batch, g.x.dtype) if x_batch.dtype != g.x.dtype else x_batch
        return vectorize_batched([g.log_prior, g.log_lik], g.x, rows)

    def symbolic_terms_with_grad(self, x_batch):
        """``(log_prior, log_lik, grad log_prior, grad log_lik)`` as symbolic graphs of a
        symbolic matrix ``x_batch (n, dim)``, for building larger compiled functions (a whole
        HMC transition) around the model's log-density; the model's graph is vectorized over
        the rows, not compiled."""
        self._require_gradient()
        g = self._graphs
        return vectorize_batched(g.with_grads(), g.x, x_batch)

    def symbolic_point_terms_with_grad(self, x_point):
        """``(log_prior, log_lik, grad log_prior, grad log_lik)`` as symbolic graphs of one
        point ``x_point (dim,)``, for larger functions built around the model's log-density
        that JAX maps over rows (:class:`~pm_evidence.model.backend.VmappedFunction`)."""
        self._require_gradient()
        g = self._graphs
        return graph_replace(g.with_grads(), {g.x: x_point}, strict=False)

    def compile_point_rows(self, inputs, outputs, unmapped=()):
        """One point's graphs ``outputs`` of ``inputs`` (and of ``unmapped``, the same for
        every row) compiled by JAX and mapped over rows
        (:class:`~pm_evidence.model.backend.VmappedFunction`; :meth:`blocked` calls it in
        blocks); on the JAX backend only. ``None`` where the adapter moved to Numba (an
        operation JAX lacks)."""
        mode = model_function_mode(jax=True)
        return self._on_jax(lambda: VmappedFunction(inputs, outputs, mode, unmapped))

    @cached_property
    def _relaxed_terms_grad_fn(self):
        if not self.binary_mask.all():
            raise EvidenceInputError(
                "A relaxed (gradient-informed) flip proposal needs every free variable to be "
                f"binary (Bernoulli); the model also has {int((~self.binary_mask).sum())} other "
                "entries. Use kernel='gibbs' or a custom kernel."
            )
        outputs, values = relaxed_bernoulli_terms(self.model)
        return self._compile_by_variable(outputs, 2, (-np.inf, -np.inf, 0.0, 0.0), values=values)

    # ------------------------------------------------------------------ evaluation
    def _check_x(self, x) -> tuple[np.ndarray, tuple[int, ...]]:
        x = np.asarray(x, dtype=float)
        if x.shape[-1:] != (self.dim,):
            raise EvidenceInputError(
                f"Expected points with last dimension {self.dim} (the flat unconstrained vector of "
                f"{self.var_names}), got an array of shape {x.shape}."
            )
        return x.reshape(-1, self.dim), x.shape[:-1]

    def _evaluate(self, fn: BlockedFunction, x, core_dims, resident=False) -> tuple:
        if resident:  # rows (n, dim), NumPy's or JAX's; the outputs left on the device
            if not self.backend.is_jax or np.ndim(x) != 2 or x.shape[1] != self.dim:
                raise ValueError(f"resident=True needs JAX's backend and rows (n, {self.dim}).")
            return tuple(fn(x, resident=True))
        flat, batch_shape = self._check_x(x)
        if flat.shape[0] == 0:
            return tuple(np.empty(batch_shape + core) for core in core_dims)
        outs = fn(flat)
        return tuple(
            np.asarray(o, dtype=float).reshape(batch_shape + core)
            for o, core in zip(outs, core_dims, strict=True)
        )

    def evaluate(
        self, x, *, via_gradient: bool | None = None, resident: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(log_prior, log_likelihood)`` at points ``x`` of shape ``(..., dim)``.

        ``via_gradient``: from the value-and-gradient function (the gradients dropped) or from
        the value-only one. By default (``None``) the value-and-gradient function wherever the
        model has one (:attr:`has_gradient`): one compiled function per model, which every
        stage of ``auto`` needs anyway, and whose gradients cost little next to a second
        compile (seconds, on a first call; measured: docs/benchmarks.rst, "One input per
        variable, one compiled function"); the value-only one where a point's evaluation is
        costly (:attr:`values_apart`: a Gaussian process on 100 or more observations). The
        choice follows from the model and the caller, never from what happens to be compiled
        already, so a result does not depend on what ran before it (the two functions may
        differ in the last bit).

        ``resident`` (JAX's backend; ``x`` rows ``(n, dim)``, NumPy's or JAX's): the values
        are left on the device as JAX's arrays, for a sampler that keeps its points there.
        """
        if via_gradient is None:
            via_gradient = self.has_gradient and not self.values_apart
        if via_gradient:
            core = ((), (), (self.dim,), (self.dim,))
            outs = self._evaluate(self._terms_grad_fn, x, core, resident)
            return outs[0], outs[1]
        return self._evaluate(self._terms_fn, x, ((), ()), resident)

    def compile_gradient(self) -> None:
        """Compile the value-and-gradient function now (once per model; ``evaluate(x,
        via_gradient=True)`` and :meth:`evaluate_with_grad` call it)."""
        self._terms_grad_fn  # noqa: B018 (a cached property: compiles on first access)

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

    def pymc_log_density(self, x) -> np.ndarray:
        """``log f(x)`` as PyMC's own coordinates of the model give it (``pm.sample``'s
        ``lp``): :meth:`log_density` less the Jacobian of the non-centered coordinates
        (:func:`~pm_evidence.model.noncentering.noncentering_log_jacobian`), where there are
        any."""
        log_f = self.log_density(x)
        if not self.noncentered:
            return log_f
        flat, batch_shape = self._check_x(x)
        return log_f - np.asarray(self._noncentering_jacobian_fn(flat), float).reshape(batch_shape)

    @cached_property
    def _noncentering_jacobian_fn(self):
        graph = noncentering_log_jacobian(self.model, self.noncentered)
        (output,), x = pm.pytensorf.join_nonshared_inputs(
            self._point, [graph], self.model.value_vars
        )
        x_batch = pt.matrix("x_batch", dtype=x.dtype)
        return python_linker_function(
            [x_batch], vectorize_batched([output], x, x_batch)[0], on_unused_input="ignore"
        )

    def log_density_and_grad(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``log f(x)`` and its gradient with respect to ``x`` (the sums of
        :meth:`evaluate_with_grad`'s terms)."""
        log_prior, log_lik, grad_prior, grad_lik = self.evaluate_with_grad(x)
        return log_prior + log_lik, grad_prior + grad_lik

    def evaluate_with_grad(
        self, x, *, resident: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(log_prior, log_likelihood, grad log_prior, grad log_likelihood)`` at ``x``
        (``resident``: as :meth:`evaluate`).

        The two gradients are kept apart so that a tempered density
        ``log prior + beta * log likelihood`` gets its gradient without a second compile.
        """
        core = ((), (), (self.dim,), (self.dim,))
        return self._evaluate(self._terms_grad_fn, x, core, resident)

    def evaluate_with_relaxed_grad(self, x):
        """Like :meth:`evaluate_with_grad` for all-binary models, with the gradients of the
        relaxed log-density (:func:`~pm_evidence.model.graphs.relaxed_bernoulli_terms`)."""
        return self._evaluate(self._relaxed_terms_grad_fn, x, ((), (), (self.dim,), (self.dim,)))

    @cached_property
    def _term_graphs(self):
        return term_choice_graphs(self._graphs)

    @property
    def term_counts(self) -> tuple[int, ...]:
        """The number of terms of each log-sum-exp of the log-density, empty where it has none
        (:func:`~pm_evidence.model.graphs.term_choice_graphs`); nothing is compiled."""
        return () if self._term_graphs is None else self._term_graphs.n_terms

    @cached_property
    def _term_choice_fn(self):
        self._require_gradient()
        g = self._term_graphs
        x_batch = pt.matrix("x_batch", dtype=g.x.dtype)
        batched = vectorize_batched([g.log_density, g.grad], g.x, x_batch)
        return python_linker_function(
            [x_batch, g.choice], batched, on_unused_input="ignore", mode=QUICK_PYTHON_LINKER
        )

    def log_density_with_terms(self, x, choice) -> tuple[np.ndarray, np.ndarray]:
        """``log f(x)`` and its gradient with the ``j``-th log-sum-exp replaced by its term
        ``choice[j]`` (``-1``: kept); ``x (n, dim)``, ``choice`` one entry per entry of
        :attr:`term_counts`. Compiled on first use."""
        flat, _ = self._check_x(x)
        choice = np.asarray(choice, dtype=np.int64)
        if choice.shape != (len(self.term_counts),) or np.any(choice >= self.term_counts):
            raise EvidenceInputError(
                f"choice needs one entry per log-sum-exp of the model ({len(self.term_counts)}, "
                f"with {self.term_counts} terms), each -1 or a term's index; got {choice}."
            )
        log_f, grad = self._term_choice_fn(flat, choice)
        return np.asarray(log_f, dtype=float), np.asarray(grad, dtype=float)

    # ------------------------------------------------------------------ prior draws and maps
    @cached_property
    def prior_ordering(self) -> OrderedPrior:
        """Which ``ordered`` variables prior draws sort, and the prior's log normalizer
        (:func:`~pm_evidence.model.prior.ordered_prior`; nothing is compiled)."""
        return ordered_prior(self.model)

    @cached_property
    def prior(self) -> PriorSampler:
        """Forward draws of the free variables from the prior (compiled once per model)."""
        return PriorSampler(self.model, self.prior_ordering)

    @cached_property
    def prior_cut(self) -> PriorCut:
        """Whether transforms cut the prior, and the prior mass they keep
        (:class:`~pm_evidence.model.prior.PriorCut`), from ``PRIOR_CUT_DRAWS`` forward
        draws on a stream of its own (``PRIOR_CUT_SEED``): every stage and every run of this
        model divide by the same mass, whose SE each result drawn from the prior carries."""
        if not restricting_transforms(self.model):
            return PriorCut()
        n = PRIOR_CUT_DRAWS if self.prior.batched else PRIOR_CUT_DRAWS_ONE_BY_ONE
        return self.measure_prior_cut(np.random.default_rng(PRIOR_CUT_SEED), n)

    def measure_prior_cut(self, rng: np.random.Generator, n: int) -> PriorCut:
        """:class:`~pm_evidence.model.prior.PriorCut` from ``n`` forward draws on ``rng``
        (:attr:`prior_cut` is this on a fixed stream; tests check its SE against the spread
        over streams)."""
        candidates = restricting_transforms(self.model)
        values = self.prior.draw(rng, n)
        flat, _ = self.maps.unconstrained_rows(values, batch_ndim=1)
        inside = PriorCut(candidates).inside(flat, self.layout)
        return measure_cut(self.model, candidates, inside)

    @property
    def prior_log_normalizer(self) -> float:
        """``log p0 - model.varlogp`` of the prior drawn forward: ``log K!`` per ordered vector
        (:class:`~pm_evidence.model.prior.OrderedPrior`) minus the log mass the transforms
        keep (:class:`~pm_evidence.model.prior.PriorCut`)."""
        return self.prior_ordering.log_normalizer - self.prior_cut.log_mass

    def initial_point_flat(self) -> np.ndarray:
        """PyMC's initial point of the model (``model.initial_point()``: the prior's central
        values, unconstrained) as one flat vector ``(dim,)``."""
        return np.concatenate(
            [np.asarray(self._point[v.value_name], dtype=float).ravel() for v in self.layout]
        )

    def sample_prior(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` flat unconstrained draws ``(n, dim)`` from the prior (``ordered`` variables
        sorted: :class:`~pm_evidence.model.prior.OrderedPrior`; where transforms cut it, the
        forward draws outside their images rejected: :class:`~pm_evidence.model.prior.PriorCut`;
        a value rounded onto the edge of its support, where its transform is infinite, moved
        to the nearest float inside: :attr:`prior_edge_share`)."""
        cut = self.prior_cut
        cut.require_sampleable()
        kept, n_kept = [], 0
        while n_kept < n:
            wanted = n if not cut.candidates else (
                math.ceil(1.1 * (n - n_kept) / math.exp(cut.log_mass)) + 16
            )  # fmt: skip
            values = self.prior.draw(rng, wanted)
            flat, _ = self._prior_rows(values)
            if cut.candidates:
                flat = flat[np.all(list(cut.inside(flat, self.layout).values()), axis=0)]
            if not np.all(np.isfinite(flat)):  # on its support's edge, and no float inside
                self.to_unconstrained(values, batch_ndim=1)  # raises, naming it
            kept.append(flat)
            n_kept += len(flat)
        return np.concatenate(kept)[:n]

    def _prior_rows(self, values) -> tuple[np.ndarray, np.ndarray]:
        """Forward draws' flat rows, values on the edge of their support moved to the nearest
        float inside (``ValueMaps.moved_off_edges``; a transform that cuts the prior keeps
        its draws outside, to be rejected), and which rows were moved."""
        flat, _ = self.maps.unconstrained_rows(values, batch_ndim=1)
        return self.maps.moved_off_edges(values, flat, skip=self.prior_cut.candidates)

    @cached_property
    def prior_edge_share(self) -> float:
        """The share of the prior's forward draws with a value exactly on the edge of its
        support, moved to the nearest float inside (:meth:`sample_prior`), from
        ``PRIOR_CUT_DRAWS`` forward draws (fewer above 100 parameters: ``PRIOR_EDGE_NUMBERS``)
        on the stream of :attr:`prior_cut`; results drawn
        from the prior report it (``prior_draws_on_edge``) where it is not 0; NaN where those
        draws cannot be mapped (a forward draw that overflowed), which the run's own draws
        would have raised on."""
        n = PRIOR_CUT_DRAWS if self.prior.batched else PRIOR_CUT_DRAWS_ONE_BY_ONE
        n = min(n, max(1_000, PRIOR_EDGE_NUMBERS // self.dim))
        values = self.prior.draw(np.random.default_rng(PRIOR_CUT_SEED), n)
        try:
            return float(np.mean(self._prior_rows(values)[1]))
        except NonFiniteLogDensityError:
            return float("nan")

    def to_constrained(self, x) -> dict[str, np.ndarray]:
        """Map flat unconstrained points ``(..., dim)`` to named constrained values ``(..., *shape)``."""
        flat, batch_shape = self._check_x(x)
        return self.maps.to_constrained(flat, batch_shape)

    def to_unconstrained(self, values: Mapping[str, np.ndarray], batch_ndim: int = 1) -> np.ndarray:
        """Map named constrained values ``{name: (*batch, *shape)}`` to flat vectors ``(*batch, dim)``.

        ``batch_ndim`` is the number of leading batch dimensions (2 for ``(chain, draw)``).
        """
        return self.maps.to_unconstrained(values, batch_ndim)

    def posterior_to_unconstrained(self, idata) -> np.ndarray:
        """Flat unconstrained draws ``(chain, draw, dim)`` from a posterior (DataTree or Dataset)."""
        check_draws_match_data(self.model, idata)
        posterior = posterior_dataset(idata)
        missing = [name for name in self.var_names if name not in posterior.data_vars]
        if missing:
            raise EvidenceInputError(
                f"The posterior draws lack the model's free variables {missing}; they hold "
                f"{sorted(map(str, posterior.data_vars))}, and the model's free variables are "
                f"{self.var_names}. Were they sampled from another model? Pass the output of "
                f"pm.sample() run on this model."
            )
        values = {
            name: posterior[name].transpose("chain", "draw", ...).to_numpy()
            for name in self.var_names
        }
        return self.to_unconstrained(values, batch_ndim=2)


ModelLike = pm.Model | LogDensity | None
"""What a model-level function takes as ``model`` (``None``: the ``with model:`` context)."""


def as_target(
    model: pm.Model | LogDensity | None = None, backend: str | Backend = "auto"
) -> LogDensity:
    """The compiled adapter of a model, as every public entry point obtains it.

    Made (or reused: :meth:`~pm_evidence.LogDensity.for_model`) from a PyMC model, the model's own warnings
    (``LogDensity.model_messages``: an improper prior, no data) are issued once for the call;
    every result carries them (:func:`~pm_evidence.core.evidence.build_evidence`). An adapter is
    returned as it is.

    Parameters
    ----------
    model : pymc.Model or LogDensity, optional
        Taken from the ``with model:`` context when omitted.
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions (:mod:`~pm_evidence.model.backend`). An
        adapter keeps its own: asking it for another backend is an error.

    Returns
    -------
    LogDensity
    """
    if isinstance(model, LogDensity):
        if backend != "auto" and resolve_backend(backend).name != model.backend.name:
            raise EvidenceInputError(
                f"This LogDensity compiles on {model.backend.name!r}, and backend={backend!r} "
                f"was asked for: pass the PyMC model itself (its adapter on each backend is "
                f"kept on it), or LogDensity(model, backend={backend!r})."
            )
        return model
    if model is not None and not isinstance(model, pm.Model):
        raise EvidenceInputError(
            f"model must be a pymc.Model (or omitted inside `with model:`), got "
            f"{type(model).__name__} {model!r:.60}. Pass the model object itself, e.g. "
            f"marginal_likelihood(model_1), not its name."
        )
    target = LogDensity.for_model(model, backend)
    for message in target.model_messages:
        warn_user(message)
    return target
