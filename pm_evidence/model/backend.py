"""Which engine compiles and runs the model's functions: PyTensor's Numba backend on the CPU, or
its JAX backend, on a GPU where JAX sees one.

Every estimator waits on one thing, the model's batched log density and gradient (and, on small
models, the fused HMC transition built around it: :mod:`pm_evidence.tempering.compiled`). Both
are PyTensor graphs; PyTensor compiles the same graph with Numba or with JAX
(:func:`~pm_evidence.model.compile_mode.model_function`), so the kernels, the samplers and the
estimators exist once and call whichever function the model's adapter holds. This module is
the one place of the package that imports ``jax``.

``backend="auto"`` (the default) picks JAX where JAX sees a GPU or another accelerator, and
Numba everywhere else: on a CPU, JAX ran the model's functions slower than Numba at the batch
sizes the samplers use (measured: docs/benchmarks.rst, "The model's log density and gradient on
JAX"). Whether JAX could see a GPU is read from the installed packages first
(:func:`accelerator_plugins`), so that a machine without one does not pay for importing JAX.

JAX compiles a function once per shape of its inputs: a JAX function is called on a handful of
row counts (:func:`bucket_rows`, powers of two), the rows padded with copies of the first and
the padding dropped from the outputs (:class:`~pm_evidence.model.batched.BlockedFunction`), so
that a run compiles a few times, not once per batch size. Arrays are float64 throughout
(PyTensor's JAX backend sets ``jax_enable_x64`` where ``floatX`` is ``float64``).

A JAX function's outputs can stay where they were computed (``resident=True``): a sampler
that calls it again on them (batched HMC's chains, :mod:`pm_evidence.model.batched_hmc`)
moves no positions between the host and the device, only what it reads
(:func:`is_on_device`, :func:`concatenate_rows`, :func:`select_rows`, :func:`put_rows`,
:func:`take_rows`, :func:`rows_changed`, :func:`rows_on_host`, :func:`stack_on_host`).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError

__all__ = [
    "ACCELERATOR_WIDTH",
    "BACKENDS",
    "Backend",
    "VmappedFunction",
    "accelerator_plugins",
    "bucket_rows",
    "check_backend",
    "concatenate_rows",
    "is_on_device",
    "jax_device",
    "jitted_over_jax",
    "joined_columns",
    "padded_index",
    "put_rows",
    "register_jax_cholesky_inverse",
    "register_jax_identity",
    "resolve_backend",
    "rows_changed",
    "rows_on_host",
    "rows_per_call",
    "sees_accelerator",
    "select_rows",
    "stack_on_host",
    "take_rows",
    "to_device",
    "unsupported_operation_error",
]

BACKENDS = ("auto", "numba", "jax")

# The PJRT plugins through which JAX reaches an accelerator (``jax[cuda12]``, ``jax[cuda13]``,
# ``jax[rocm]``, ``jax[tpu]``; ``jax_plugins`` is the namespace of any other): without one of
# them installed, JAX runs on the CPU only.
ACCELERATOR_PLUGINS = (
    "jax_plugins",
    "jax_cuda12_plugin",
    "jax_cuda13_plugin",
    "jax_rocm60_plugin",
    "jax_rocm7_plugin",
    "libtpu",
)

# Rows of the smallest padded call: the samplers call the model on 16 chains and up.
MIN_BUCKET_ROWS = 16

# How many times the CPU's default chains the samplers move at once on an accelerator. There a
# compiled call on a few thousand points costs about what one on a hundred does (the model's log
# density and gradient under JAX on an H200: 150-2,500 times one CPU core's throughput at 100,000
# points per call, little or no gain at 100-1,000), so AIS's first batch (100 chains on a CPU),
# the pilot's particles (128), the tempered chains (1,000), the exploration's particles and
# batched HMC's chains (16) are this many times as many there, and a target SE is met in fewer
# sequential steps.
ACCELERATOR_WIDTH = 16


@dataclass(frozen=True)
class Backend:
    """The engine of one model's compiled functions.

    Attributes
    ----------
    name : str
        ``"numba"`` or ``"jax"``.
    device : str
        Where the functions run: ``"cpu"`` for Numba, JAX's default device otherwise
        (``"cuda:0 (NVIDIA H200)"``, ``"cpu"``).
    requested : str
        What the call asked for: ``"auto"``, ``"numba"`` or ``"jax"``.
    fallback : str
        Why ``"auto"`` runs on Numba where it would have run on JAX (an operation of the model
        that PyTensor cannot compile to JAX, or a graph JAX cannot trace); empty otherwise.
    """

    name: str
    device: str
    requested: str
    fallback: str = ""

    @property
    def is_jax(self) -> bool:
        return self.name == "jax"

    @property
    def on_accelerator(self) -> bool:
        """Whether the model's functions run on a GPU or another accelerator."""
        return self.is_jax and not self.device.startswith("cpu")

    @property
    def width(self) -> int:
        """How many times the CPU's default chains (or particles) the samplers move at once:
        1 on a CPU, ``ACCELERATOR_WIDTH`` on an accelerator (module constant's text)."""
        return ACCELERATOR_WIDTH if self.on_accelerator else 1

    def diagnostics(self) -> dict:
        """What a result records of the backend (``ev.diagnostics``): ``backend``, ``device``,
        ``parallel_width`` (:attr:`width`) and, where ``"auto"`` fell back to Numba,
        ``backend_fallback``."""
        out = {"backend": self.name, "device": self.device, "parallel_width": self.width}
        if self.fallback:
            out["backend_fallback"] = self.fallback
        return out


def accelerator_plugins() -> tuple[str, ...]:
    """The installed JAX plugins for an accelerator (``ACCELERATOR_PLUGINS``); nothing is
    imported."""
    return tuple(name for name in ACCELERATOR_PLUGINS if importlib.util.find_spec(name))


@cache
def jax_device() -> str | None:
    """JAX's default device as ``"platform:id (kind)"``, or ``None`` where JAX is not installed.

    Cached for the process: JAX chooses its devices once, when first used."""
    if importlib.util.find_spec("jax") is None:
        return None
    import jax

    device = jax.devices()[0]
    kind = getattr(device, "device_kind", "") or ""
    return f"{device.platform}:{device.id}" + (f" ({kind})" if kind else "")


def sees_accelerator() -> bool:
    """Whether JAX sees a GPU or another accelerator: one of its plugins is installed and JAX's
    default device is not the CPU."""
    if not accelerator_plugins():
        return False
    device = jax_device()
    return device is not None and not device.startswith("cpu")


def check_backend(requested: str) -> None:
    """Refuse a ``backend=`` that :func:`resolve_backend` would refuse (a name it does not
    know; ``"jax"`` without JAX installed), without importing JAX or choosing a device: for a
    caller whose models run in other processes (``compare_models``)."""
    if requested not in BACKENDS:
        resolve_backend(requested)  # raises, naming the choices
    if requested == "jax" and importlib.util.find_spec("jax") is None:
        raise _jax_missing()


def _jax_missing() -> EvidenceInputError:
    return EvidenceInputError(
        "backend='jax' needs JAX: pip install \"pm_evidence[jax]\" (JAX on the CPU), or "
        "jax[cuda12] on a machine with an NVIDIA GPU; or use backend='numba'."
    )


def resolve_backend(requested: str | Backend = "auto") -> Backend:
    """The :class:`Backend` that ``backend=requested`` stands for.

    ``"auto"``: JAX where JAX sees an accelerator (:func:`accelerator_plugins`, then JAX's
    devices), Numba otherwise. ``"jax"`` needs JAX installed (``pip install
    "pm_evidence[jax]"``; on a CUDA machine ``pip install "jax[cuda12]"``) and runs on JAX's
    default device, the CPU where it has no other.
    """
    if isinstance(requested, Backend):
        return requested
    if requested not in BACKENDS:
        raise EvidenceInputError(
            f"backend must be one of {list(BACKENDS)}, got {requested!r}. 'auto' (the default) "
            f"runs the model on JAX where JAX sees a GPU and on Numba otherwise."
        )
    if requested == "numba" or (requested == "auto" and not sees_accelerator()):
        return Backend("numba", "cpu", requested)
    device = jax_device()
    if device is None:
        raise _jax_missing()
    return Backend("jax", device, requested)


def unsupported_operation_error(error: NotImplementedError) -> EvidenceInputError:
    """The error of ``backend="jax"`` on a model with an operation PyTensor cannot compile to
    JAX (PyTensor's ``jax_funcify`` raises ``NotImplementedError`` naming it)."""
    return EvidenceInputError(
        f"PyTensor cannot compile an operation of this model to JAX ({error}). Use "
        f"backend='numba' (or backend='auto', which then runs the model on Numba)."
    )


def bucket_rows(n: int, block_size: int) -> int:
    """The rows of the padded call for ``n`` rows: the next power of two, at least
    ``MIN_BUCKET_ROWS``, at most ``block_size`` (a call has at most that many rows)."""
    if n >= block_size:
        return n
    return min(max(MIN_BUCKET_ROWS, 1 << max(n - 1, 0).bit_length()), block_size)


def to_device(value, placement=None):
    """``value`` (a NumPy array) on JAX's default device, or where ``placement`` (a sharding)
    says."""
    import jax

    return jax.device_put(value, placement)


def is_on_device(value) -> bool:
    """Whether ``value`` is an array JAX holds (on its device) rather than a NumPy array."""
    return not isinstance(value, np.ndarray | np.generic | float | int | bool)


def concatenate_rows(arrays):
    """``arrays`` joined along their first axis, where they are: on JAX's device where one of
    them is there (no copy to the host), by NumPy otherwise."""
    if any(is_on_device(a) for a in arrays):
        import jax.numpy as jnp

        return jnp.concatenate(arrays)
    return np.concatenate(arrays)


def joined_columns(blocks, columns, dim: int):
    """An ``(n, dim)`` array on JAX's device holding each block of ``blocks`` at its
    ``columns`` (a slice) and zeros elsewhere: per-variable gradients joined into one
    gradient of the flat vector, where they were computed."""
    import jax.numpy as jnp

    if len(blocks) == 1 and columns[0] == slice(0, dim):
        return blocks[0]
    out = jnp.zeros((blocks[0].shape[0], dim))
    for block, where in zip(blocks, columns, strict=True):
        out = out.at[:, where].set(block)
    return out


@cache
def jitted_over_jax(function):
    """``function(xp, *args)``, written once over an array namespace ``xp`` (NumPy's on the
    host), with JAX's numpy as ``xp`` and jitted: the same arithmetic on the device, compiled
    once per shape of its arrays."""
    import functools

    import jax
    import jax.numpy as jnp

    return jax.jit(functools.partial(function, jnp))


def _on_device_any(arrays) -> bool:
    return any(a is not None and is_on_device(a) for a in arrays)


def _take(arrays, idx):
    return tuple(None if a is None else a[idx] for a in arrays)


def _select(xp, mask, news, olds):
    return tuple(
        None if o is None else xp.where(mask.reshape(-1, *[1] * (o.ndim - 1)), n, o)
        for n, o in zip(news, olds, strict=True)
    )


@cache
def _row_functions():
    """The row operations of :func:`take_rows`, :func:`put_rows` and :func:`select_rows` on
    JAX's device, each one jitted call over a tuple of arrays (``None`` entries kept): one
    dispatch where eager indexing of every array cost a millisecond or two of Python each."""
    import jax

    def put(wholes, idx, parts):
        return tuple(
            None if w is None else w.at[idx].set(p) for w, p in zip(wholes, parts, strict=True)
        )

    return jax.jit(_take), jax.jit(put), jitted_over_jax(_select)


def take_rows(arrays: tuple, idx: np.ndarray) -> tuple:
    """The rows ``idx`` of every array of ``arrays`` (``None`` kept), where the arrays are: a
    gather on JAX's device for arrays there (a sampler's resampling)."""
    take = _row_functions()[0] if _on_device_any(arrays) else _take
    return take(tuple(arrays), idx)


def put_rows(wholes: tuple, idx: np.ndarray, parts: tuple) -> tuple:
    """Copies of ``wholes`` with their rows ``idx`` replaced by ``parts``' (``None`` kept),
    where ``wholes`` are."""
    if _on_device_any(wholes):
        return _row_functions()[1](tuple(wholes), idx, tuple(parts))
    out = []
    for whole, rows in zip(wholes, parts, strict=True):
        if whole is not None:
            whole = whole.copy()
            whole[idx] = rows
        out.append(whole)
    return tuple(out)


def select_rows(mask: np.ndarray, news: tuple, olds: tuple) -> tuple:
    """For every pair of arrays, ``new``'s rows where ``mask (n,)`` holds and ``old``'s
    elsewhere (``None`` kept where ``old`` is ``None``), where the arrays are (on JAX's device
    where one of them is there): a sampler's accepted moves."""
    if _on_device_any(news) or _on_device_any(olds):
        return _row_functions()[2](mask, tuple(news), tuple(olds))
    return _select(np, mask, tuple(news), tuple(olds))


def padded_index(idx: np.ndarray) -> np.ndarray:
    """``idx`` lengthened to a power of two by repeating its first entry: JAX compiles a
    gather or a scatter once per length of its index, and a sampler's counts (the particles
    that moved, the candidates kept) take many values; padded, they take a few. Rows read at
    the repeated entries are the first one's, and written there, the same values."""
    n = idx.size
    if n == 0:
        return idx
    return np.concatenate([idx, np.full((1 << (n - 1).bit_length()) - n, idx[0])])


def rows_on_host(array, idx: np.ndarray) -> np.ndarray:
    """The rows ``idx`` of ``array`` as a NumPy array: gathered on the device where ``array``
    is there (the index padded: :func:`padded_index`) and copied in one transfer."""
    if not is_on_device(array):
        return array[idx]
    return np.asarray(take_rows((array,), padded_index(idx))[0])[: idx.size]


def rows_changed(new, old) -> np.ndarray:
    """Which rows of ``new`` differ from ``old``'s in some entry, as a NumPy vector (computed
    where the arrays are; only the flags come to the host)."""
    if is_on_device(new) or is_on_device(old):
        import jax.numpy as jnp

        return np.asarray(jnp.any(new != old, axis=1))
    return np.any(new != old, axis=1)


def stack_on_host(arrays) -> np.ndarray:
    """``arrays`` stacked along a new first axis, as one NumPy array: arrays on the device
    are stacked there and copied to the host in one transfer."""
    if any(is_on_device(a) for a in arrays):
        import jax.numpy as jnp

        return np.asarray(jnp.stack(arrays))
    return np.stack(arrays)


class VmappedFunction:
    """A graph of one point's value variables compiled by JAX and mapped over rows:
    ``jax.jit(jax.vmap(f))``, called on one array ``(n, *value_shape)`` per variable, returning
    NumPy arrays with the ``n`` rows first.

    JAX batches the one point's graph itself (``vmap``), as PyMC's own JAX samplers do
    (``pymc.sampling.jax.get_jaxified_graph``); the graph PyTensor vectorizes for Numba carries
    shapes computed at run time (``arange`` over the rows) that JAX cannot compile. The
    model's shared variables (``pm.Data``) are inputs of the graph, not constants: their values
    are read at each call and kept on the device until they change (``pm.set_data``).

    With several devices (GPUs), the rows are split over all of them and the data copied to
    each (``jax.sharding``); each row is computed by the same one-point graph wherever it runs,
    so the values are those of one device.

    Parameters
    ----------
    inputs : list of TensorVariable
        One point's value variables (or other inputs of one point), mapped over rows.
    outputs : list of TensorVariable
        Graphs of ``inputs`` (and of ``unmapped`` and the model's shared variables).
    mode : pytensor.compile.mode.Mode
        A JAX mode whose rewrites are applied before the graph is turned into JAX.
    unmapped : list of TensorVariable
        Inputs the same for every row (a reference's parameters), passed after the rows.
    point_shapes : list of tuple, optional
        The shape of each input for one point. Given, the inputs take them as static shapes,
        so that PyTensor's rewrites compute from them every size JAX needs as a constant (the
        sizes at which a ``ZeroSumNormal`` over named dims splits its gradient, which come from
        its value's shape); given without ``unmapped``, JAX traces the function here, so that a
        graph PyTensor turns into JAX that JAX still cannot trace is a ``NotImplementedError``
        now, not an error at the first call.

    Notes
    -----
    Data replaced by ``pm.set_data`` (or ``set_value``) is seen at the next call; an array
    changed in place, behind PyTensor's back, is not.
    """

    def __init__(self, inputs, outputs, mode, unmapped=(), point_shapes=None):
        import jax
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.graph.fg import FunctionGraph
        from pytensor.graph.replace import clone_replace
        from pytensor.graph.traversal import graph_inputs
        from pytensor.link.jax.dispatch import jax_funcify

        if point_shapes is not None:  # one point's shapes, static: JAX needs its arrays' sizes
            static = [
                v.type.clone(shape=tuple(shape))(name=v.name)
                for v, shape in zip(inputs, point_shapes, strict=True)
            ]
            outputs = clone_replace(outputs, replace=dict(zip(inputs, static, strict=True)))
            inputs = static
        shared = [v for v in graph_inputs(outputs) if isinstance(v, SharedVariable)]
        stand_ins = [v.type() for v in shared]
        outputs = clone_replace(outputs, replace=dict(zip(shared, stand_ins, strict=True)))
        unmapped = list(unmapped)
        self.fgraph = FunctionGraph(
            inputs=[*inputs, *unmapped, *stand_ins], outputs=outputs, clone=True
        )
        mode.optimizer.rewrite(self.fgraph)
        point_function = jax_funcify(self.fgraph)
        axes = (0,) * len(inputs) + (None,) * (len(unmapped) + len(shared))
        self._n_mapped = len(inputs)
        self._shared = shared
        self._held: list = [None] * len(shared)  # (the host array, its copy on the device)
        self._rows_placement, self._data_placement = _placements()
        shardings = {}
        if self._rows_placement is not None:  # the rows split over the devices, data on each
            shardings = {
                "in_shardings": (self._rows_placement,) * len(inputs)
                + (self._data_placement,) * (len(unmapped) + len(shared)),
                "out_shardings": self._rows_placement,
            }
        self._rows = jax.jit(jax.vmap(point_function, in_axes=axes), **shardings)
        self.n_devices = len(jax.devices())
        if point_shapes is not None and not unmapped:
            self._trace(inputs, point_shapes)

    def _trace(self, inputs, point_shapes) -> None:
        import jax

        rows = [
            jax.ShapeDtypeStruct((MIN_BUCKET_ROWS * self.n_devices, *shape), v.type.dtype)
            for v, shape in zip(inputs, point_shapes, strict=True)
        ]
        data = [v.get_value(borrow=True) for v in self._shared]
        data = [jax.ShapeDtypeStruct(np.shape(d), d.dtype) for d in data]
        try:
            self._rows.trace(*rows, *data)
        except NotImplementedError:
            raise
        except Exception as error:  # JAX's own errors of tracing (a value needed as a constant)
            raise NotImplementedError(
                f"JAX cannot trace the graph PyTensor made of this model: {type(error).__name__}:"
                f" {str(error).splitlines()[0] if str(error) else ''}"
            ) from error

    def _on_device(self, k: int):
        value = self._shared[k].get_value(borrow=True)
        if self._held[k] is None or self._held[k][0] is not value:
            self._held[k] = (value, to_device(value, self._data_placement))
        return self._held[k][1]

    def __call__(self, *arrays, resident: bool = False) -> list:
        """``arrays``: one array per mapped input (rows first; NumPy's, or JAX's from an
        earlier call), then the unmapped inputs. The outputs are NumPy arrays, or, with
        ``resident``, JAX's arrays left on the device."""
        rows, unmapped = arrays[: self._n_mapped], arrays[self._n_mapped :]
        n = rows[0].shape[0]
        extra = -n % self.n_devices  # a whole number of rows per device
        if extra:
            rows = [concatenate_rows([r, r[:1].repeat(extra, axis=0)]) for r in rows]
        if self._rows_placement is not None:  # rows left on the devices by other calls (a
            # gather, a slice) may be placed otherwise: split over the devices as the function's
            rows = [to_device(r, self._rows_placement) if is_on_device(r) else r for r in rows]
        data = [self._on_device(k) for k in range(len(self._shared))]
        outputs = self._rows(*rows, *unmapped, *data)
        if resident:
            return [out[:n] if extra else out for out in outputs]
        return [np.asarray(out)[:n] for out in outputs]


def _placements():
    """Where the rows and the data go with several devices: the rows split along their first
    axis over every device JAX sees, the data copied to each; ``(None, None)`` with one device
    (JAX's default placement)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = jax.devices()
    if len(devices) == 1:
        return None, None
    mesh = Mesh(np.array(devices), ("rows",))
    return NamedSharding(mesh, PartitionSpec("rows")), NamedSharding(mesh, PartitionSpec())


def register_jax_identity(op_class: type) -> None:
    """Compile ``op_class`` as the identity on PyTensor's JAX backend (an operation of this
    package that only arranges memory for Numba)."""
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(op_class)
    def _identity(op, **kwargs):
        def identity(x):
            return x

        return identity


def register_jax_cholesky_inverse(op_class: type) -> None:
    """Compile ``op_class``, ``K^-1`` from a lower Cholesky factor ``L`` of ``K``
    (:class:`~pm_evidence.model.gaussian.CholeskyInverse`), on PyTensor's JAX backend as
    ``cho_solve`` with the identity: XLA has no ``potri``."""
    from pytensor.link.jax.dispatch import jax_funcify

    @jax_funcify.register(op_class)
    def _cholesky_inverse(op, **kwargs):
        import jax.numpy as jnp
        from jax.scipy.linalg import cho_solve

        def cholesky_inverse(L):
            return cho_solve((L, True), jnp.eye(L.shape[-1], dtype=L.dtype))

        return cholesky_inverse


def rows_per_call(default: int, backend: Backend, n_observations: int) -> int:
    """Rows per compiled call: ``default`` on the CPU; on an accelerator, which pays only with
    thousands of points in one call, up to ``2**16`` rows while a block's intermediates stay
    within ``2**27`` numbers (1 GiB of float64)."""
    if not backend.on_accelerator:
        return default
    return int(max(default, min(2**16, 2**27 // max(int(n_observations), 1))))
