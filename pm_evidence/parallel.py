"""The evidence of many models at once, in worker processes or on a cluster: :func:`compare_models`.

Each model's ``log Z`` is one :func:`~pm_evidence.marginal_likelihood` call run in a worker
through the standard ``concurrent.futures.Executor`` protocol (``executor.submit`` and the
futures it returns). The default is a local process pool; a Dask cluster
(``distributed.Client``, or its ``get_executor()``) or any other executor runs the same code.

- **Transport**: a model (with its ``idata`` and the options) is pickled here with cloudpickle,
  as PyMC does to send a step method to its sampling processes, and unpickled in the worker,
  which compiles it. A model that cannot be pickled fails alone, with the pickling error.
- **Randomness**: model ``k`` of ``n`` (in the order given) draws from the ``k``-th child of
  the call's seed, ``numpy.random.SeedSequence(random_seed).spawn(n)[k]``: the result does not
  depend on the engine, the number of workers or the order in which the models finish.
- **Failures**: a worker catches its model's error and returns it as a :class:`ModelFailure`
  (class name, message and the traceback written where it was raised); an error of the engine
  itself (a worker that died, a task that could not be sent) is recorded the same way. The
  other models' results are kept; a warning names the failures. Workers of the default pool
  that die while starting (a script without the ``if __name__ == "__main__":`` guard) are
  told apart from a worker that died running a model, and the failure says so; a main module
  that workers cannot import (a script fed on stdin) is refused before the pool starts.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, NamedTuple

import cloudpickle
import numpy as np
import pandas as pd
import pymc as pm

from pm_evidence import registry
from pm_evidence.compare import compare as compare_table
from pm_evidence.core.evidence import Evidence, FrozenDict, format_estimate
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.progress import interruptible
from pm_evidence.core.utils import root_sequence, warn_user
from pm_evidence.interop.resolve import is_model, resolve_model
from pm_evidence.marginal import auto_pair, check_options, marginal_likelihood
from pm_evidence.model.backend import check_backend

__all__ = [
    "ModelComparison",
    "ModelFailure",
    "WorkerStartup",
    "check_main_importable",
    "compare",
    "compare_models",
]

SERIAL = "serial"
"""``executor="serial"``: every model in this process, one after another."""

# Options compare_models sets itself, per model or for every model.
_RESERVED = {
    "model": "models={name: model}",
    "idata": "models={name: (model, idata)}",
}


@dataclass(frozen=True)
class ModelFailure:
    """Why one model of :func:`compare_models` has no result.

    Plain strings, so that a failure comes back from any worker (an exception object may not
    unpickle where it did not come from).

    Attributes
    ----------
    model : str
        The model's name (its key in ``models``).
    error : str
        The class of the exception, e.g. ``"EvidenceInputError"``; ``"KeyboardInterrupt"`` for
        a model not finished when the call was interrupted.
    message : str
        The exception's message.
    traceback : str
        The traceback, formatted where the exception was raised (in the worker); empty when
        there is none.
    """

    model: str
    error: str
    message: str
    traceback: str = ""

    def __str__(self) -> str:
        return f"{self.error}: {self.message}"


class _Task(NamedTuple):
    """One model's work: what a worker unpickles, and the random stream of its position."""

    name: str
    payload: bytes | None  # cloudpickled (model, idata, options); None if pickling failed
    seed: np.random.SeedSequence
    method: str
    pickling_error: ModelFailure | None = None


class _Outcome(NamedTuple):
    """What a worker sends back: a result or a failure, the warnings it caught, its time."""

    evidence: Evidence | None
    failure: ModelFailure | None
    warnings: tuple[tuple[str, str], ...]  # (category name, message)
    seconds: float


@dataclass(frozen=True, repr=False)
class ModelComparison(Mapping):
    """The evidence of several models (:func:`compare_models`), with the models that failed.

    A read-only mapping of model name to :class:`Evidence` over the models that succeeded, in
    the order given, so that :func:`~pm_evidence.compare`, :func:`~pm_evidence.post_prob` and
    :func:`~pm_evidence.bayes_factor` take it (or its entries) as they are. A plain value: it
    pickles and compares with ``==`` (the times are left out of the comparison).

    Attributes
    ----------
    evidences : mapping of str to Evidence
        The results of the models that succeeded.
    failures : mapping of str to ModelFailure
        The models that have no result, and why (empty when every model succeeded).
    seconds : mapping of str to float
        Wall time of each model's call in its worker (unpickling and compiling included).

    Examples
    --------
    >>> result = pm_evidence.compare_models({"M1": model_1, "M2": model_2})  # doctest: +SKIP
    >>> result.compare()  # the compare table of the models that succeeded  # doctest: +SKIP
    >>> result.failures  # doctest: +SKIP
    """

    evidences: Mapping[str, Evidence]
    failures: Mapping[str, ModelFailure] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict, compare=False)

    __hash__ = None  # the mappings are compared by value

    def __post_init__(self):
        for name in ("evidences", "failures", "seconds"):
            object.__setattr__(self, name, FrozenDict(getattr(self, name)))

    def __getitem__(self, name: str) -> Evidence:
        if name in self.evidences:
            return self.evidences[name]
        if name in self.failures:
            raise KeyError(
                f"Model {name!r} failed ({self.failures[name]}); its traceback is in "
                f"result.failures[{name!r}].traceback."
            )
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.evidences)

    def __len__(self) -> int:
        return len(self.evidences)

    def compare(
        self,
        *,
        prior_prob=None,
        reference: str | None = None,
        check_data: bool = True,
    ) -> pd.DataFrame:
        """:func:`~pm_evidence.compare` of the models that succeeded.

        Parameters
        ----------
        prior_prob : sequence of float, optional
            Prior probabilities of the models that succeeded, in their order.
        reference : str, optional
            The model the log Bayes factors are taken against (default: the best).
        check_data : bool
            Refuse models fitted to different observed data.

        Returns
        -------
        pandas.DataFrame
            One row per model that succeeded, best first (see :func:`~pm_evidence.compare`).

        Raises
        ------
        EvidenceInputError
            When fewer than two models succeeded.
        """
        if len(self.evidences) < 2:
            failed = "; ".join(f"{name!r}: {f}" for name, f in self.failures.items())
            raise EvidenceInputError(
                f"Need at least two models to compare, but {len(self.evidences)} of "
                f"{len(self.evidences) + len(self.failures)} succeeded"
                + (f" (failed: {failed})." if failed else ".")
            )
        return compare_table(
            self.evidences, prior_prob=prior_prob, reference=reference, check_data=check_data
        )

    def __repr__(self) -> str:
        n = len(self.evidences) + len(self.failures)
        text = f"ModelComparison: {len(self.evidences)} of {n} models succeeded"
        if len(self.evidences) >= 2:
            try:  # as self.compare(): no log BF or probability across different data
                table, refused = compare_table(self.evidences), None
            except EvidenceInputError as err:
                table = compare_table(self.evidences, check_data=False)
                refused = _first_sentence(str(err))
            columns = ["log_z", "se", "log_bf", "prob", "method", "warning"]
            if refused is not None:
                columns = ["log_z", "se", "method", "warning"]
            text += "\n" + table[columns].to_string()
            if refused is not None:
                text += (
                    f"\nno log BF or probabilities: {refused} (result.compare() refuses them; "
                    f"compare(check_data=False) if the difference is intended)"
                )
        else:
            for name, ev in self.evidences.items():
                text += f"\n{name}: {ev!r}"
        if self.failures:
            text += "\nfailed:" + "".join(f"\n  {k!r}: {f}" for k, f in self.failures.items())
        return text


def _first_sentence(text: str) -> str:
    """``text`` up to its first ``". "`` (a message's statement, without its fix)."""
    head, sep, _ = text.partition(". ")
    return head if sep else text.rstrip(".")


def compare_models(
    models: Mapping[str, Any],
    *,
    executor: Any = None,
    max_workers: int | None = None,
    method: str = "auto",
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    **options,
) -> ModelComparison:
    """The log evidence of every model, each computed in a worker, gathered for comparison.

    Each model is one :func:`~pm_evidence.marginal_likelihood` call (``method``, ``options``)
    in a worker process; the results come back as they finish and are gathered into a
    :class:`ModelComparison` (``result.compare()`` is the :func:`~pm_evidence.compare` table).
    A model that fails does not stop the others: it is recorded in ``result.failures`` with
    its error and traceback, and a warning names it.

    Parameters
    ----------
    models : dict of str to pymc.Model or Bambi model (bambi.Model)
        The models by name; a value may be ``(model, idata)`` to estimate from posterior draws
        already made (as ``idata=`` of :func:`~pm_evidence.marginal_likelihood`; for a Bambi
        model, what its ``fit()`` returned).
    executor : None, "serial", a concurrent.futures executor or a Dask client
        Where the models run. Default (``None``): a local process pool of ``max_workers``
        processes, started with ``forkserver`` where the platform has it, else ``spawn`` (a
        process forked from one running PyTensor's or numba's threads can deadlock), shut down
        at the end; a script must then guard its calls with ``if __name__ == "__main__":``, as
        for any process pool (without it every worker dies while starting, and each model's
        failure says so), and be run as a file: a script fed on stdin
        (``python - < script.py``) is refused (use ``"serial"`` there). Any object with the ``concurrent.futures.Executor`` protocol
        (``submit`` returning a ``concurrent.futures.Future``): a pool of your own, or a Dask
        ``distributed.Client`` (its ``get_executor()`` is used) or that executor; an executor
        passed in is left running. ``"serial"``: in this process, one model after another,
        through the same code as a worker (the same pickling, the same result). The workers
        need ``pm_evidence`` installed, and should run one model at a time (Dask:
        ``threads_per_worker=1``): a run changes process-wide state (loggers, warning filters).
    max_workers : int, optional
        Processes of the default pool; default: the number of models or of the cores this
        process may use, whichever is smaller.
    method : str
        One name of :data:`~pm_evidence.METHODS` (default ``"auto"``), run on every model.
    random_seed : int, numpy.random.SeedSequence or numpy.random.Generator, optional
        Model ``k`` of ``n`` (in the order of ``models``) gets the ``k``-th child of the call's
        seed sequence (``numpy.random.SeedSequence(random_seed).spawn(n)[k]`` for an int), so
        its result is the same serially, on a pool and on a cluster, and equals
        ``marginal_likelihood(model_k, random_seed=that child)``. A Generator is advanced by
        one draw, which seeds the sequence.
    progressbar : bool
        One line per model on stderr as it finishes (its ``log Z``, or its error); ``False``
        prints nothing. The models' own progress bars are off in the workers.
    backend : {"auto", "numba", "jax"}
        The engine of each model's compiled functions, in its worker
        (:mod:`pm_evidence.model.backend`); ``"auto"`` JAX where JAX sees a GPU, else Numba.
        On a GPU every worker holds a JAX client of its own; the default pool's workers take
        GPU memory as they need it (``XLA_PYTHON_CLIENT_PREALLOCATE=false``), which the
        workers of an executor of your own should set in their environment too.
    **options
        Options of :func:`~pm_evidence.marginal_likelihood` for every model (checked here,
        before any model is sent). NUTS in a worker runs its chains one after another
        (``sample_kwargs={"cores": 1}`` unless given): the workers are the parallelism, and a
        Dask worker may not start processes. PyMC's draws do not depend on ``cores``.

    Returns
    -------
    ModelComparison
        A mapping of model name to :class:`Evidence` over the models that succeeded, in the
        order given, with ``failures`` (name to :class:`ModelFailure`) and ``seconds``.

    Raises
    ------
    EvidenceInputError
        For an empty ``models``, a value that is not a model, an executor without ``submit``,
        a list of methods or an option no method takes; for the default pool, when the main
        module is not a file its workers can import (a script fed on stdin).
    KeyboardInterrupt
        On Ctrl-C before any model finished (one line). After one finished, a Ctrl-C cancels
        the models not started (the default pool's processes are stopped; a running task of an
        executor passed in runs to its end, its result unused) and returns those that
        finished, the others recorded as failures with ``error="KeyboardInterrupt"``.

    Warns
    -----
    UserWarning
        Naming the models that failed; and every warning a worker caught, re-issued here with
        the model's name in front.

    Examples
    --------
    >>> models = {"M1": model_1, "M2": model_2}  # doctest: +SKIP
    >>> result = pm_evidence.compare_models(models, random_seed=1)  # doctest: +SKIP
    >>> result.compare()  # the compare table of the models that succeeded  # doctest: +SKIP
    >>> from distributed import Client  # doctest: +SKIP
    >>> result = pm_evidence.compare_models(models, executor=Client("tcp://host:8786"))  # doctest: +SKIP
    """
    entries = _model_entries(models)
    _check_method(method, options)
    if not isinstance(progressbar, bool):
        raise EvidenceInputError(f"progressbar must be True or False, got {progressbar!r}.")
    seeds = root_sequence(random_seed).spawn(len(entries))
    check_backend(backend)  # a name it does not know, or JAX not installed: refused here
    options = {**_worker_options(options), "backend": backend}
    tasks = [
        _task(name, model, idata, seed, method, options)
        for (name, (model, idata)), seed in zip(entries.items(), seeds, strict=True)
    ]
    pool, owned, where, startup = _engine(executor, max_workers, len(tasks))
    lines = _Lines(progressbar, len(tasks))
    lines.write(f"pm_evidence: {len(tasks)} models, method={method!r}, {where}")
    interrupted = True
    try:
        with interruptible("compare_models", nothing_computed="no model had finished"):
            outcomes, interrupted = _gather(tasks, pool, lines, startup)
    finally:
        if owned:
            _shut_down(pool, now=interrupted)
    return _result(tasks, outcomes, interrupted)


# ------------------------------------------------------------------------ input checks


def _model_entries(models) -> dict[str, tuple[pm.Model, Any]]:
    """``{name: (model, idata or None)}``, or an error naming the bad entry and the fix."""
    if not isinstance(models, Mapping):
        raise EvidenceInputError(
            f"models must be a dict {{name: pymc.Model}} (or {{name: (model, idata)}}), got a "
            f"{type(models).__name__}. Name the models: the names label the results."
        )
    if not models:
        raise EvidenceInputError(
            "models is empty: pass a dict {name: pymc.Model} of at least one model."
        )
    entries = {}
    for name, value in models.items():
        if not isinstance(name, str) or not name:
            raise EvidenceInputError(
                f"Model names must be non-empty strings, got {name!r}: use e.g. "
                f"{{'M{len(entries) + 1}': model}}."
            )
        # a Bambi model (or (bambi_model, its fit)) becomes the PyMC model it builds
        pair = value if isinstance(value, tuple) and len(value) == 2 else (value, None)
        model, idata = resolve_model(*pair, argument=f"models[{name!r}]")
        if model is not pair[0]:
            value = (model, idata)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], pm.Model):
            entries[name] = value
        elif isinstance(value, pm.Model):
            entries[name] = (value, None)
        else:
            raise EvidenceInputError(
                f"Entry {name!r} of models is a {type(value).__name__}, not a pymc.Model (or a Bambi "
                f"model): pass "
                f"{{name: model}}, or {{name: (model, idata)}} with posterior draws of it."
            )
    return entries


def _check_method(method, options: dict) -> None:
    """One method name, and options that it (or, for ``"auto"``, one of its pairs) takes."""
    if not isinstance(method, str):
        raise EvidenceInputError(
            f"compare_models runs one method on every model, got method={method!r}. Pass one "
            f"of {list(registry.METHODS)}; for several methods on one model call "
            f"marginal_likelihood(model, method=[...])."
        )
    if method == "auto":
        # the pairs auto may run: on a continuous model and on one with discrete variables
        methods = sorted(
            {m for d in (False, True) for m in auto_pair(SimpleNamespace(has_discrete=d))}
        )
    else:
        registry.method(method)  # an unknown name is an error listing the valid ones
        methods = [method]
    for key, fix in _RESERVED.items():
        if key in options:
            raise EvidenceInputError(
                f"compare_models sets {key}= for each model itself; pass {fix} instead."
            )
    check_options(methods, options)


def _worker_options(options: dict) -> dict:
    """The options with NUTS's chains run one after another in the worker (unless given)."""
    sample_kwargs = options.get("sample_kwargs") or {}
    if not isinstance(sample_kwargs, Mapping):
        raise EvidenceInputError(
            f"sample_kwargs must be a dict of pymc.sample options, got {sample_kwargs!r}."
        )
    return {**options, "sample_kwargs": {"cores": 1, **sample_kwargs}}


def _task(name, model, idata, seed, method, options) -> _Task:
    """A model's task; a model that cannot be pickled is a failure of that model alone."""
    try:
        payload = cloudpickle.dumps((model, idata, options))
    except Exception as err:
        failure = ModelFailure(
            name,
            type(err).__name__,
            f"the model (or its idata or options) could not be pickled to be sent to a "
            f"worker: {err}",
            traceback.format_exc(),
        )
        return _Task(name, None, seed, method, failure)
    return _Task(name, payload, seed, method)


# ------------------------------------------------------------------------ engines


def _engine(executor, max_workers, n_tasks) -> tuple[Any, bool, str, WorkerStartup | None]:
    """``(executor or None for serial, whether this call owns it, where the models run, the
    default pool's start-up watch or None)``."""
    if max_workers is not None:
        if executor is not None:
            raise EvidenceInputError(
                "max_workers sizes the default process pool only; size the executor you pass "
                "yourself (or leave executor=None)."
            )
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise EvidenceInputError(f"max_workers must be a positive int, got {max_workers!r}.")
    if executor is None:
        context = _process_context()
        check_main_importable(context)
        startup = WorkerStartup(context)
        workers = min(n_tasks, max_workers or _usable_cores())
        pool = cf.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_worker_started,
            initargs=(startup.event,),
        )
        plural = "es" if workers > 1 else ""
        return pool, True, f"on {workers} local process{plural}", startup
    if isinstance(executor, str):
        if executor != SERIAL:
            raise EvidenceInputError(
                f"Requested executor {executor!r} but a string must be {SERIAL!r} (this "
                f"process, one model after another); else pass an Executor or a Dask Client."
            )
        return None, False, "in this process, one after another", None
    if not isinstance(executor, cf.Executor) and callable(getattr(executor, "get_executor", None)):
        # a Dask distributed.Client: its concurrent.futures face
        return executor.get_executor(), True, f"on {type(executor).__name__} {executor!r}", None
    if not callable(getattr(executor, "submit", None)):
        raise EvidenceInputError(
            f"executor must have the concurrent.futures.Executor protocol (a submit method), "
            f"got a {type(executor).__name__}. Pass e.g. a ProcessPoolExecutor, a Dask "
            f"distributed.Client, 'serial', or None for a local process pool."
        )
    return executor, False, f"on {type(executor).__name__}", None


def _usable_cores() -> int:
    """The cores this process may run on (its affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def _process_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` where the platform has it, else ``spawn``; never ``fork``.

    A worker forked from a process that runs PyTensor's or numba's threads can deadlock (PyMC
    picks the same for JAX); both start from a fresh interpreter, so a script must guard its
    calls with ``if __name__ == "__main__":`` as for any process pool.
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


_FIXES = 'put the script\'s calls under `if __name__ == "__main__":`, or pass executor="serial"'


def _main_module() -> tuple[str | None, str | None]:
    """``(name, path)`` by which a spawned worker imports the main module (both None: it
    does not, as in a notebook or ``python -c``), as ``multiprocessing.spawn`` decides."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return name, None
    return None, getattr(main, "__file__", None)


def check_main_importable(context: multiprocessing.context.BaseContext) -> None:
    """Refuse a main module that the default pool's workers cannot import (read from stdin).

    A worker started with ``forkserver`` or ``spawn`` first imports the main module from its
    file; ``python - < script.py`` leaves ``__main__.__file__ == "<stdin>"``, no file, and every
    worker would die before running a model. Refused here, before any work, rather than run
    one model after another in this process: the caller asked for a pool, and a serial run of
    many models may take many times as long. (No ``__file__`` at all, as in a notebook or
    ``python -c``, is fine: the workers then do not import the main module.)

    Raises
    ------
    EvidenceInputError
        When the main module has a ``__file__`` that is not a file.
    """
    if context.get_start_method() == "fork":
        return
    name, path = _main_module()
    if name is not None or path is None or os.path.isfile(path):
        return
    raise EvidenceInputError(
        f"compare_models' default process pool cannot start here: its workers (started with "
        f"{context.get_start_method()!r}) first import the main module from its file, but "
        f"__main__ was read from {path!r}, which is not a file (a script fed on stdin, "
        f"`python - < script.py`), so every worker would die before running a model. Save "
        f"the script and run it as a file (`python script.py`) with its calls under "
        f'`if __name__ == "__main__":`, or pass executor="serial" to run the models in this '
        f"process, one after another."
    )


def _worker_started(event) -> None:
    """The default pool's initializer: this worker got through its start (and imported the
    main module). Its JAX, if a model runs on a GPU, takes GPU memory as it needs it
    (``XLA_PYTHON_CLIENT_PREALLOCATE=false``, unless set) instead of three quarters of it at
    once, so that the pool's workers share the GPU."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    event.set()


class WorkerStartup:
    """Whether any worker of the default pool got through its start.

    A worker sets :attr:`event` in the pool's initializer, which runs only after the worker
    imported the main module; a pool broken while no worker had set it died while starting,
    not while running a model."""

    def __init__(self, context: multiprocessing.context.BaseContext):
        self.method = context.get_start_method()
        self.event = context.Event()

    def explain(self, err: BaseException) -> str | None:
        """Why the pool broke, when it broke before any worker started; else None."""
        if not isinstance(err, BrokenProcessPool) or self.event.is_set():
            return None
        name, path = _main_module()
        main = f"module {name!r}" if name else f"{path!r}" if path else "the main module"
        return (
            f"the pool's worker processes died while starting, before any model ran: "
            f"{_FIXES}. Each worker is started with {self.method!r} and first imports the "
            f"main module ({main}); a script that calls compare_models outside that guard "
            f"makes every worker run the script again and try to start a pool of its own, "
            f"which multiprocessing refuses (the workers' own errors are printed on stderr). "
            f"({type(err).__name__}: {err})"
        )


def _shut_down(pool, *, now: bool) -> None:
    """Shut an executor this call made down; ``now``: stop its running work too (Ctrl-C)."""
    if not now:
        pool.shutdown(wait=True)
        return
    if isinstance(pool, cf.ProcessPoolExecutor):
        terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
        if callable(terminate):
            terminate()
        else:  # earlier versions have no public handle on the pool's own processes
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
    else:
        pool.shutdown(wait=False)


# ------------------------------------------------------------------------ running


def evidence_in_worker(
    name: str, payload: bytes, seed: np.random.SeedSequence, method: str
) -> _Outcome:
    """One model's :func:`~pm_evidence.marginal_likelihood`, as a worker runs it.

    Unpickles ``(model, idata, options)`` from ``payload`` and runs the call with
    ``random_seed=seed`` and no progress bar. An error is caught and returned as a
    :class:`ModelFailure`; the warnings issued are caught and returned (the caller re-issues
    them), so that a worker prints nothing.

    Parameters
    ----------
    name : str
        The model's name (labels the failure).
    payload : bytes
        ``cloudpickle.dumps((model, idata, options))``.
    seed : numpy.random.SeedSequence
        The model's stream.
    method : str
        ``method=`` of the call.

    Returns
    -------
    tuple
        ``(evidence or None, failure or None, warnings, seconds)``.
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        try:
            model, idata, options = cloudpickle.loads(payload)
            evidence = marginal_likelihood(
                model, method=method, idata=idata, random_seed=seed, progressbar=False, **options
            )
            failure = None
        except Exception as err:
            evidence = None
            failure = ModelFailure(name, type(err).__name__, str(err), traceback.format_exc())
    issued = tuple(dict.fromkeys((w.category.__name__, str(w.message)) for w in caught))
    return _Outcome(evidence, failure, issued, time.perf_counter() - start)


def _run(task: _Task) -> _Outcome:
    """A task in this process (``executor="serial"``)."""
    if task.pickling_error is not None:
        return _Outcome(None, task.pickling_error, (), 0.0)
    return evidence_in_worker(task.name, task.payload, task.seed, task.method)


def _outcomes(
    tasks: list[_Task], pool, startup: WorkerStartup | None = None
) -> Iterator[tuple[int, _Outcome]]:
    """``(position, outcome)`` of every task as it finishes; closing it cancels the rest."""
    if pool is None:
        for index, task in enumerate(tasks):
            yield index, _run(task)
        return
    futures: dict[cf.Future, int] = {}
    try:
        for index, task in enumerate(tasks):
            if task.pickling_error is not None:
                yield index, _Outcome(None, task.pickling_error, (), 0.0)
                continue
            try:
                future = pool.submit(
                    evidence_in_worker, task.name, task.payload, task.seed, task.method
                )
            except cf.BrokenExecutor as err:  # broken by a task sent before
                yield index, _Outcome(None, _engine_failure(task.name, err, startup), (), 0.0)
                continue
            if not isinstance(future, cf.Future):
                raise EvidenceInputError(
                    f"executor.submit returned a {type(future).__name__}, not a "
                    f"concurrent.futures.Future: pass an executor of that protocol (for Dask, "
                    f"the distributed.Client itself or client.get_executor())."
                )
            futures[future] = index
        for future in cf.as_completed(futures):
            index = futures[future]
            yield index, _outcome_of(future, tasks[index].name, startup)
    finally:
        for future in futures:
            future.cancel()  # those not started; a finished or running one is left as it is


def _outcome_of(future: cf.Future, name: str, startup: WorkerStartup | None = None) -> _Outcome:
    """The worker's outcome, or the engine's error as the model's failure.

    ``startup``: the default pool's watch, which tells a pool whose workers died while
    starting (the failure then says why and what to do). A ``KeyboardInterrupt`` (a worker hit
    by the same Ctrl-C) is raised here."""
    try:
        return future.result()
    except cf.CancelledError:
        failure = ModelFailure(name, "CancelledError", "its task was cancelled outside this call")
    except Exception as err:  # the engine's: a worker died, the task could not be sent, ...
        failure = _engine_failure(name, err, startup)
    return _Outcome(None, failure, (), float("nan"))


def _engine_failure(name: str, err: Exception, startup: WorkerStartup | None) -> ModelFailure:
    """A model's failure for an error of the executor, saying why where it can tell."""
    why = startup.explain(err) if startup is not None else None
    if why is None and isinstance(err, BrokenProcessPool):
        why = (
            f"{err} (raised by the executor: a worker process died while running a model, "
            f"e.g. killed, out of memory, or a crash in compiled code; its stderr may say which)"
        )
    return ModelFailure(
        name, type(err).__name__, why or f"{err} (raised by the executor)", _format(err)
    )


def _format(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


def _gather(
    tasks: list[_Task], pool, lines: _Lines, startup: WorkerStartup | None = None
) -> tuple[dict[int, _Outcome], bool]:
    """The outcomes by position, and whether a Ctrl-C stopped the run after one finished."""
    outcomes: dict[int, _Outcome] = {}
    try:
        with closing(_outcomes(tasks, pool, startup)) as stream:
            for index, outcome in stream:
                outcomes[index] = outcome
                lines.finished(tasks[index].name, outcome, len(outcomes))
    except KeyboardInterrupt:
        if not outcomes:
            stopped = KeyboardInterrupt()
            stopped.pm_evidence_phase = f"the run of {len(tasks)} models"
            raise stopped from None
        return outcomes, True
    return outcomes, False


def _result(tasks: list[_Task], outcomes: dict[int, _Outcome], interrupted: bool):
    """The :class:`ModelComparison` in the order of ``tasks``; warnings re-issued here."""
    evidences, failures, seconds = {}, {}, {}
    for index, task in enumerate(tasks):
        outcome = outcomes.get(index)
        if outcome is None:
            failures[task.name] = ModelFailure(
                task.name,
                "KeyboardInterrupt",
                "not finished: the run was interrupted (Ctrl-C) before its result came back",
            )
            continue
        for category, message in outcome.warnings:
            warn_user(f"model {task.name!r}: {message}", _warning_class(category))
        seconds[task.name] = outcome.seconds
        if outcome.evidence is not None:
            evidences[task.name] = outcome.evidence
        else:
            failures[task.name] = outcome.failure
    if interrupted:
        warn_user(
            f"compare_models was interrupted (Ctrl-C): returning the {len(evidences)} models "
            f"that finished; {len(tasks) - len(outcomes)} did not finish and are listed in "
            f"result.failures."
        )
    failed = {k: f for k, f in failures.items() if f.error != "KeyboardInterrupt"}
    if failed:
        by_cause: dict[str, list[str]] = {}  # one cause once (a broken pool fails every model)
        for k, f in failed.items():
            by_cause.setdefault(f"{f.error}: {_first_line(f.message)}", []).append(repr(k))
        listed = "; ".join(f"{', '.join(names)} ({cause})" for cause, names in by_cause.items())
        warn_user(
            f"{len(failed)} of {len(tasks)} models failed and are left out of the comparison: "
            f"{listed}. Their errors and tracebacks are in result.failures."
        )
    return ModelComparison(evidences, failures, seconds)


def _warning_class(name: str) -> type[Warning]:
    """A built-in warning class by name; :class:`UserWarning` for any other."""
    import builtins

    found = getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


def _first_line(text: str, width: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


# ------------------------------------------------------------------------ progress


class _Lines:
    """One line per model on stderr as it finishes (rich, as the progress bars); or nothing."""

    def __init__(self, enabled: bool, total: int):
        self.total = total
        self._console = None
        if enabled:
            from rich.console import Console

            self._console = Console(stderr=True)

    def write(self, text: str) -> None:
        if self._console is not None:
            self._console.print(text, markup=False, highlight=False, soft_wrap=True)

    def finished(self, name: str, outcome: _Outcome, done: int) -> None:
        if self._console is None:
            return
        took = f"{outcome.seconds:.1f} s" if np.isfinite(outcome.seconds) else "no time"
        ev = outcome.evidence
        if ev is not None:
            flagged = f", {len(ev.warnings)} warnings" if ev.warnings else ""
            what = f"log Z = {format_estimate(ev.log_z, ev.se)} ({ev.method}{flagged}; {took})"
        else:
            failure = outcome.failure
            what = f"failed: {failure.error}: {_first_line(failure.message)} ({took})"
        self.write(f"pm_evidence: [{done}/{self.total}] {name!r} {what}")


def _is_model_entry(value) -> bool:
    """Whether a value of ``compare``'s mapping is a model to estimate (a PyMC or Bambi model,
    or ``(model, idata)``) rather than a result."""
    if isinstance(value, tuple) and len(value) == 2:
        value = value[0]
    return is_model(value)


def compare(
    evidences,
    *,
    prior_prob=None,
    reference: str | None = None,
    check_data: bool = True,
    **estimation,
) -> pd.DataFrame:
    """Rank models by log evidence: :func:`pm_evidence.compare.compare` of results, or of
    models, estimated first.

    Parameters
    ----------
    evidences : dict, list or xarray.DataTree
        The models' results (as :func:`pm_evidence.compare.compare` takes them), or a dict of
        models by name: ``pymc.Model``, Bambi models (bambi.Model, built or not) or
        ``(model, idata)`` pairs, each estimated by :func:`compare_models` (``**estimation``:
        its ``method``, ``executor``, ``random_seed``, ``progressbar`` and options).
    prior_prob, reference, check_data
        As :func:`pm_evidence.compare.compare`.
    **estimation
        Only with models: the keywords of :func:`compare_models`.

    Returns
    -------
    pandas.DataFrame
        The comparison table; with models, that of the models that succeeded (the failures
        are warnings, as with :func:`compare_models`).

    Raises
    ------
    EvidenceInputError
        For estimation keywords given with results (there is nothing to estimate), and the
        errors of :func:`pm_evidence.compare.compare` and :func:`compare_models`.
    """
    models = isinstance(evidences, Mapping) and any(_is_model_entry(v) for v in evidences.values())
    if models:
        comparison = compare_models(evidences, **estimation)
        return comparison.compare(prior_prob=prior_prob, reference=reference, check_data=check_data)
    if estimation:
        raise EvidenceInputError(
            f"compare() was given results, so {sorted(estimation)} (options of an estimation) "
            f"have nothing to act on: pass models to estimate them, or drop these keywords."
        )
    return compare_table(
        evidences, prior_prob=prior_prob, reference=reference, check_data=check_data
    )
