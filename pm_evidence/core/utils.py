"""Shared helpers: random generators, log-space reductions, effective sample sizes.

Every other module calls these; none of them keeps state.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

# ArviZ's diagnostics are read by nearly every call (ESS, R-hat, Pareto k-hat), so they are
# imported with the package, not inside the first call: there, arviz_base's lazy loads of jax
# and numpyro (where neither is installed) walk the call's whole stack with inspect.stack, which
# costs more than the import itself (measured: docs/benchmarks.rst).
from arviz_stats.base import array_stats
from threadpoolctl import threadpool_limits

from pm_evidence.core.exceptions import EvidenceInputError

__all__ = [
    "CountedCalls",
    "as_generator",
    "good_pareto_k",
    "kish_ess",
    "log_mean_exp",
    "log_sum_exp",
    "max_rhat",
    "mcmc_ess",
    "normalized_weights",
    "one_blas_thread",
    "pareto_khat",
    "relative_sd_of_mean",
    "renamed_keywords",
    "renamed_module_names",
    "renamed_parameters",
    "rhat_by_coordinate",
    "root_sequence",
    "runs_with_one_blas_thread",
    "spawn_seed",
    "stage_rngs",
    "warn_user",
]

# R-hat above this flags chains that have not mixed: Vehtari, Gelman, Simpson, Carpenter and
# Bürkner (2021), "Rank-normalization, folding, and localization", recommend 1.01, the default
# ``rhat_max`` of ``arviz_stats.diagnose``.
RHAT_MAX = 1.01

# Warnings are attributed to the first frame outside this package: the user's own line.
PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)  # pm_evidence/, not core/


def one_blas_thread() -> threadpool_limits:
    """A context in which BLAS/LAPACK (OpenBLAS, MKL) use one thread, restored on exit
    (threadpoolctl).

    For code that makes many small factorizations and triangular solves: on a busy 2-core
    machine OpenBLAS's threads wait for each other, and a small triangular solve takes
    milliseconds instead of microseconds; one thread gives the same result bit for bit, and
    is faster up to a few hundred dimensions (measured: docs/benchmarks.rst, Measurements
    behind the defaults). :func:`~pm_evidence.marginal_likelihood` and :func:`explore
    <pm_evidence.search.exploration.explore>` run in it.
    """
    return threadpool_limits(limits=1, user_api="blas")


def runs_with_one_blas_thread(function: Callable) -> Callable:
    """``function``, called inside :func:`one_blas_thread`: for the public estimators, runs and
    plans, which :func:`~pm_evidence.marginal_likelihood` calls in that context, so that called
    alone they use one BLAS thread too. (With OpenBLAS's two threads on a 2-core machine running
    two such processes, 40 ``bridge_sampling`` calls took 1.80 CPU-s, and 0.72 with one: the
    threads spin while they wait; measured: docs/benchmarks.rst, "Products with a vector as
    sums; one BLAS thread per worker".)"""

    @functools.wraps(function)
    def with_one_blas_thread(*args, **kwargs):
        with one_blas_thread():
            return function(*args, **kwargs)

    return with_one_blas_thread


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` as a warning attributed to the caller's line outside pm_evidence.

    Python 3.12's ``skip_file_prefixes`` skips every frame in this package, however deep the
    call that warns: the warning points at the user's ``marginal_likelihood(...)`` line, and
    Python's default filter shows it once per such line.
    """
    warnings.warn(message, category, skip_file_prefixes=(PACKAGE_DIR,))


def as_generator(random_seed: int | np.random.Generator | np.random.SeedSequence | None):
    """Convert a ``random_seed`` argument to a :class:`numpy.random.Generator`.

    An existing Generator is used as is (its state advances); ``None`` gives fresh OS entropy.
    The global NumPy RNG is never touched.
    """
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if random_seed is None or isinstance(random_seed, int | np.integer | np.random.SeedSequence):
        return np.random.default_rng(random_seed)
    raise TypeError(
        f"random_seed must be None, an int, a SeedSequence or a numpy Generator, "
        f"got {type(random_seed).__name__}"
    )


# The stages of an evidence computation that draw random numbers. Each gets its own stream,
# spawned from the user's seed at a fixed position, so a stage's draws do not depend on which
# other stages run or in which order (a method in a list gets exactly what it gets alone).
STAGES = (
    "posterior", "pilot", "annealing", "reverse_annealing", "tempering",
    "is", "ris", "ds", "bridge", "is_ris", "exploration", "term_check", "mode_sets",
    "draws_outside", "check_reference", "second_pass", "missed_mass", "coverage",
)  # fmt: skip


def root_sequence(random_seed) -> np.random.SeedSequence:
    """The :class:`numpy.random.SeedSequence` the stage streams come from: an int or ``None``
    seeds it; a SeedSequence is copied (the caller's is not advanced); a Generator is advanced by
    one draw, which seeds it. Passing the result on gives every callee the same streams."""
    if isinstance(random_seed, np.random.Generator):
        return np.random.SeedSequence(int(random_seed.integers(2**63)))
    if isinstance(random_seed, np.random.SeedSequence):
        return np.random.SeedSequence(random_seed.entropy, spawn_key=random_seed.spawn_key)
    as_generator(random_seed)  # validates the type
    return np.random.SeedSequence(random_seed)


def stage_rngs(random_seed) -> dict[str, np.random.Generator]:
    """One independent :class:`numpy.random.Generator` per stage of ``STAGES``.

    The streams are the children of one :class:`numpy.random.SeedSequence` (``spawn``), taken
    at fixed positions. An int, ``None`` or a SeedSequence seeds that sequence directly; a
    Generator is advanced by one draw, which seeds it.
    """
    children = root_sequence(random_seed).spawn(len(STAGES))
    return {
        name: np.random.default_rng(child) for name, child in zip(STAGES, children, strict=True)
    }


def spawn_seed(rng: np.random.Generator) -> int:
    """Draw an integer seed from ``rng`` for a library (PyMC) that wants one."""
    return int(rng.integers(2**31 - 1))


def log_sum_exp(values, axis: int | None = None):
    """``log sum exp(values)`` over ``axis``, computed without overflow.

    What ``scipy.special.logsumexp(values, axis)`` gives for real input (to rounding), a slice of
    ``-inf`` or an empty one giving ``-inf``, in plain NumPy: scipy's array-API dispatch has a
    fixed cost per call that dominated AIS's time on small runs, and the mixture references'
    densities in the exploration's jumps (several times NumPy's time on ``(n, K)`` arrays;
    measured: docs/benchmarks.rst, Measurements behind the defaults).
    """
    values = np.asarray(values, dtype=float)
    top = np.max(values, axis=axis, keepdims=True, initial=-np.inf)  # -inf for an empty slice
    top[~np.isfinite(top)] = 0.0  # a slice of -inf stays -inf; +inf and NaN propagate
    with np.errstate(divide="ignore", over="ignore"):  # (+inf or NaN: the others may overflow)
        out = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    return np.squeeze(out, axis=axis)[()]


def log_mean_exp(log_values: np.ndarray, axis=None) -> np.ndarray:
    """``log(mean(exp(log_values)))`` computed stably with log-sum-exp."""
    log_values = np.asarray(log_values, dtype=float)
    n = log_values.size if axis is None else log_values.shape[axis]
    return log_sum_exp(log_values, axis=axis) - np.log(n)


def normalized_weights(log_weights) -> np.ndarray:
    """``w / sum(w)`` from log weights (flattened), computed without overflow."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    return np.exp(log_weights - log_sum_exp(log_weights))


def relative_sd_of_mean(log_values: np.ndarray, n_eff: float) -> float:
    """Standard error of ``log(mean(exp(v)))`` by the delta method.

    With ``w = exp(v)``, ``se(log mean w) = sd(w) / (sqrt(n_eff) * mean(w))``; ``w`` is scaled by
    its maximum first so that nothing overflows.
    """
    log_values = np.asarray(log_values, dtype=float).ravel()
    w = np.exp(log_values - np.max(log_values))
    return float(np.std(w, ddof=1) / (np.sqrt(n_eff) * np.mean(w)))


def kish_ess(log_weights: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of importance weights, in log space."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    return float(np.exp(2 * log_sum_exp(log_weights) - log_sum_exp(2 * log_weights)))


def mcmc_ess(values: np.ndarray) -> float:
    """Effective sample size of the mean of ``values`` shaped ``(chain, draw)``.

    Uses ArviZ's rank-free "mean" ESS (Geyer's initial monotone sequence over chains); a 1-D
    array is treated as one chain. Constant input returns the number of draws. Where ArviZ
    gives no usable value (non-finite or not positive, e.g. for non-finite input) the result is
    NaN, so that a standard error built on it is NaN too and the caller can flag it.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if np.ptp(values) == 0:
        return float(values.size)
    ess = float(array_stats.ess(values, chain_axis=-2, draw_axis=-1, method="mean"))
    if not np.isfinite(ess) or ess <= 0:
        return float("nan")
    return min(ess, float(values.size))


def rhat_by_coordinate(draws: np.ndarray, method: str = "rank") -> np.ndarray:
    """Each coordinate's split R-hat over the chains of ``draws (chain, draw, ...)`` (Vehtari
    et al. 2021, ``arviz_stats``): ``"rank"``, the larger of the bulk R-hat (of the draws'
    ranks: chains at different locations) and the tail one (of their folded ranks: chains of
    different spreads); ``"z_scale"``, the bulk R-hat alone. Not finite where a coordinate's
    draws are constant."""
    draws = np.asarray(draws, dtype=float)
    rhat = array_stats.rhat(draws, chain_axis=0, draw_axis=1, method=method)
    return np.asarray(rhat, dtype=float)


def max_rhat(draws: np.ndarray) -> tuple[float, int]:
    """Largest rank-normalized split R-hat over the coordinates of ``draws (chain, draw, dim)``
    (:func:`rhat_by_coordinate`), and the coordinate where it is reached.

    Coordinates whose R-hat is not finite (constant draws) are skipped; ``(nan, -1)`` if none
    is finite.
    """
    rhat = rhat_by_coordinate(draws)
    rhat = np.where(np.isfinite(rhat), rhat, -np.inf).ravel()
    if not np.any(np.isfinite(rhat)):
        return float("nan"), -1
    worst = int(np.argmax(rhat))
    return float(rhat[worst]), worst


def good_pareto_k(n: int) -> float:
    """Threshold of the Pareto k-hat diagnostic for ``n`` draws, ``min(1 - 1/log10(n), 0.7)``
    (Vehtari, Simpson, Gelman, Yao and Gabry 2024, "Pareto smoothed importance sampling",
    §3.2; ``arviz_stats`` uses the same rule)."""
    return min(1.0 - 1.0 / np.log10(n), 0.7) if n > 10 else 0.0


def pareto_khat(log_weights: np.ndarray, r_eff: float = 1.0) -> float:
    """Pareto k-hat of importance weights ``exp(log_weights)`` (Vehtari et al. 2024): the
    shape of a generalized Pareto distribution fitted to the largest weights. Above
    :func:`good_pareto_k` the weights' mean has too heavy a tail to be trusted; above 1 its
    variance is infinite. ``-inf`` log weights are zero weights. NaN with fewer than 25
    positive weights (the fit needs at least 5 tail draws, a fifth of them) or where the tail
    cannot be fitted (ties)."""
    log_weights = np.asarray(log_weights, dtype=float).ravel()
    log_weights = log_weights[np.isfinite(log_weights)]
    if log_weights.size < 25 or np.ptp(log_weights) == 0:
        return float("nan")
    # the weights themselves, scaled by their maximum (arviz_stats 1.3's log_weights=True
    # branch fits the tail of the log weights, not of the weights)
    weights = np.exp(log_weights - log_weights.max())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its notes on the number of tail draws
        try:
            khat = array_stats.pareto_khat(
                weights, chain_axis=None, draw_axis=-1, r_eff=r_eff, tail="right"
            )
        except ValueError:  # e.g. "All tail values are the same"
            return float("nan")
    return float(khat)


def renamed_module_names(namespace: dict, renamed: dict[str, str]):
    """A module ``__getattr__`` that gives each old name of ``renamed`` (old name -> new name)
    as the object now called the new one, with a ``FutureWarning`` naming it (old imports and
    pickles keep working). ``namespace``: the module's ``globals()``."""
    module = namespace["__name__"]

    def __getattr__(name: str):
        if name in renamed and renamed[name] in namespace:
            warn_user(
                f"{module}.{name} is now {module}.{renamed[name]}; the old name will be removed.",
                FutureWarning,
            )
            return namespace[renamed[name]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    __getattr__.renamed = dict(renamed)  # old name -> new name, for a reader (and the tests)
    return __getattr__


def renamed_keywords(function: str, keywords: dict, renamed: dict[str, str]) -> dict:
    """``keywords`` with each deprecated name of ``renamed`` (old name -> new name) replaced by
    its new name, and a ``FutureWarning`` that names the new one; the old names keep working.

    Raises
    ------
    EvidenceInputError
        When an old name and the new one are both given, or two old names of one new name.
    """
    keywords = dict(keywords)
    for old, new in renamed.items():
        if old not in keywords:
            continue
        if new in keywords:
            raise EvidenceInputError(
                f"{function}() got {new}= and its deprecated name {old}=; pass only {new}=."
            )
        value = keywords.pop(old)
        warn_user(
            f"{function}({old}=...) is deprecated and will be removed: pass {new}={value!r} "
            f"instead.",
            FutureWarning,
        )
        keywords[new] = value
    return keywords


def renamed_parameters(**renamed: str) -> Callable[[Callable], Callable]:
    """Decorator: the function also takes each old keyword of ``renamed`` (old name=new name)
    for its new one, with the ``FutureWarning`` of :func:`renamed_keywords`; positional calls
    are unchanged.

    Examples
    --------
    >>> @renamed_parameters(kind="reference")
    ... def fit_reference(reference, target, draws): ...
    """

    def decorate(function: Callable) -> Callable:
        name = function.__qualname__

        @functools.wraps(function)
        def wrapper(*args, **keywords):
            return function(*args, **renamed_keywords(name, keywords, renamed))

        return wrapper

    return decorate


class CountedCalls:
    """A function of points ``x (n, dim)`` that counts the points it was called on
    (``evaluations``): what a stage spent on the model, for its ``n_evaluations``."""

    def __init__(self, function):
        self.function, self.evaluations = function, 0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.evaluations += x.shape[0]
        return self.function(x)
