"""The option objects of the model-level estimators, and the NUTS options they all take.

Every option object is a small frozen dataclass that checks its values when made
(``__post_init__``), so a bad value is refused before any work:

- :class:`PosteriorOptions` (``posterior=``): the reference of the methods on posterior draws;
- :class:`BridgeOptions` (``bridge=``): bridge sampling's repetitions and Meng-Wong iteration;
- :class:`PathOptions` (``path=``): the plan of the path methods (reference, kernel, pilot);
- :class:`AnnealingOptions` (``annealing=``): an annealing run (AIS, ADS; RAISE in reverse);
- :class:`TemperingOptions` (``tempering=``): a simulated-tempering run (RTS, TI, MBAR).

Which method takes which is data, in :mod:`pm_evidence.core.methods`, whose
:func:`~pm_evidence.core.methods.route_options` sorts one call's keywords into them. This module is
a leaf (NumPy only), so that every layer can read the options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError

__all__ = [
    "MAX_EVALUATIONS",
    "SAMPLE_KEYS",
    "SYMMETRIZE_OPTIONS",
    "AnnealingOptions",
    "BridgeOptions",
    "PathOptions",
    "PosteriorOptions",
    "TemperingOptions",
    "check_symmetrize_option",
    "field_names",
]

SAMPLE_KEYS = ("draws", "tune", "chains", "sample_kwargs")
"""The NUTS options every model-level function takes by name."""


def field_names(cls: type) -> tuple[str, ...]:
    """The field names of an option dataclass, in order."""
    return tuple(f.name for f in fields(cls))


# ---------------------------------------------------------------------- the plan
SYMMETRIZE_OPTIONS = ("auto", True, False)


def check_symmetrize_option(symmetrize) -> None:
    """Validate ``symmetrize`` at a public boundary."""
    if not (isinstance(symmetrize, bool) or symmetrize == "auto"):
        raise EvidenceInputError(
            f"Requested symmetrize={symmetrize!r} but it must be one of {list(SYMMETRIZE_OPTIONS)}."
        )


@dataclass(frozen=True)
class PosteriorOptions:
    """Options every estimator on posterior draws shares: the counterpart of
    :class:`~pm_evidence.PathOptions` for the methods of the ``"posterior"`` family (IS, reverse
    IS, DS, bridge, the IS/RIS combinations). Pass it as ``posterior=``, or any field by name.

    Attributes
    ----------
    reference : str or Reference
        ``p0``: a name fitted to the first half of every chain of the posterior draws
        (``"normal"``, ``"student_t"``, ...), ``"prior"``, or a :class:`Reference` used as given.
        ``"auto"`` (default): the method's own choice (IS: ``"student_t"``; DS: ``"normal"``;
        bridge: ``"normal"`` or ``"warp3"`` by a pilot; reverse IS and the combinations: see
        their functions).
    n_reference : int, optional
        Draws from ``p0``; default :func:`~pm_evidence.model.draws.default_reference_draws` (16 per
        posterior draw used in the estimate).
    symmetrize : {"auto", True, False}
        What to do when the posterior is invariant under relabelling components (label
        switching in a mixture; ``pm_evidence.model.modes``): ``"auto"`` relabels the draws into one
        mirror image and symmetrizes the reference over the relabellings when the draws miss
        mirror images (otherwise log Z would come out low by up to ``log |G|``), ``True`` does
        so whenever a symmetry is found, ``False`` never (a symmetry whose images the draws
        miss is then a warning). Diagnostics ``symmetry`` (what was found and done),
        ``symmetry_group_size``, ``symmetrized``.
    """

    reference: str | object = "auto"  # a name, or a pm_evidence.Reference used as given
    n_reference: int | None = None
    symmetrize: bool | str = "auto"

    def __post_init__(self):
        check_symmetrize_option(self.symmetrize)
        n = self.n_reference
        if n is not None and (not isinstance(n, int | np.integer) or n < 1):
            raise EvidenceInputError(f"n_reference must be a positive integer, got {n!r}.")

    @property
    def auto(self) -> bool:
        """Whether the method chooses ``p0`` itself (``reference="auto"``)."""
        return isinstance(self.reference, str) and self.reference == "auto"

    def reference_or(self, default: str) -> str | object:
        """The reference, with ``"auto"`` read as the method's ``default``."""
        return default if self.auto else self.reference


@dataclass(frozen=True)
class BridgeOptions:
    """Bridge sampling's own options (beyond :class:`PosteriorOptions`): its repetitions and
    its Meng-Wong iteration. Pass it as ``bridge=``, or any field by name.

    Attributes
    ----------
    repetitions : int
        Number of independent sets of reference draws.
    use_neff : bool
        Use the effective number of posterior draws in the sample-size weights.
    tol, maxiter
        Convergence tolerance and iteration cap of the Meng-Wong iteration.
    """

    repetitions: int = 1
    use_neff: bool = True
    tol: float = 1e-10
    maxiter: int = 1000

    def __post_init__(self):
        if self.repetitions < 1:
            raise EvidenceInputError(f"repetitions must be >= 1, got {self.repetitions}.")


@dataclass(frozen=True)
class PathOptions:
    """How the plan is made (options every path method shares).

    Attributes
    ----------
    reference : "auto", "prior", "uniform", "student_t", "normal" or Reference
        ``p0``; see :func:`~pm_evidence.path.plan.auto_reference` for ``"auto"``.
    kernel : {"auto", "hmc", "rwm", "flip", "gibbs", "gwg", "hmc+gibbs", "rwm+gibbs"} or callable
        The transition at each ``beta``; ``"auto"`` is HMC for continuous models, Gibbs sweeps
        for all-discrete ones (for all-binary ones in blocks found from the model, see
        ``blocks``) and HMC plus Gibbs for mixed ones. A callable ``step(rng, x, beta) -> x``
        must leave every ``f_beta`` invariant.
    n_leapfrog : int
        Leapfrog steps of HMC (with a jittered step size).
    n_flips : int
        Entries flipped per proposal of ``kernel="flip"``.
    blocks : list of index arrays, "auto" or None
        Gibbs blocks (entries updated together, conditionally independent given the rest).
        ``None`` (default): with ``kernel="auto"`` on a model whose free variables are all
        binary (Bernoulli), the blocks are found from the model
        (:func:`~pm_evidence.tempering.blocks.gibbs_blocks`: sites that interact, detected
        from mixed second differences of ``log p0`` and ``Delta`` at 32 random states, then a
        greedy colouring; the checkerboard of a grid MRF), unless the model has more than 353
        sites, where that would cost over 2 million evaluations; otherwise one entry at a
        time (also with ``kernel="gibbs"``). ``"auto"``: find them also with
        ``kernel="gibbs"``. The result's diagnostics say which (``kernel_reason``,
        ``n_gibbs_blocks``).
    n_pilot_chains : int or None
        Particles of the pilot run. ``None`` (default): ``PILOT_CHAINS`` (128) on a CPU,
        ``ACCELERATOR_WIDTH`` times as many where the model runs on a GPU
        (:attr:`~pm_evidence.model.backend.Backend.width`).
    symmetrize : {"auto", True, False}
        For a reference fitted to posterior draws: average it over the relabellings of a
        label-switching posterior whose mirror modes the draws miss
        (``pm_evidence.model.modes.plan_symmetry``); ``False`` warns instead.
    """

    reference: str | object = "auto"  # a name, or a pm_evidence.Reference used as given
    kernel: str | Callable = "auto"
    n_leapfrog: int = 2
    n_flips: int = 1
    blocks: tuple | list | str | None = None
    n_pilot_chains: int | None = None
    symmetrize: str | bool = "auto"


# Default log-density evaluations of one run (a budget that does not depend on the machine).
# It is what ends a cheap discrete model's AIS in seconds at a somewhat larger SE, where
# without a budget the chains would go on for minutes to reach ``target_se`` (measured:
# docs/benchmarks.rst, Measurements behind the defaults). Continuous models at defaults do
# not reach it: with HMC's 2 evaluations per transition AIS keeps at most 1e7 / K chains of K
# rungs (MAX_STORED_NUMBERS) or 20,000 chains of fewer than 500 rungs, under 2e7 evaluations
# either way, and tempering on a CPU at most 1000 chains x (5000 + 10 x 50) sweeps x 2 = 1.1e7.
# On a GPU the 16,000 tempered chains (TemperingOptions.sized) spend it in about 600 sweeps.
MAX_EVALUATIONS = 20_000_000
# AIS's first batch, the pilot's particles and the tempered chains on a CPU; on an accelerator, ACCELERATOR_WIDTH times
# as many (pm_evidence.model.backend: a call there on thousands of points costs about what one
# on a hundred does).
FIRST_BATCH = 100
PILOT_CHAINS = 128
TEMPERED_CHAINS = 1000


@dataclass(frozen=True)
class AnnealingOptions:
    """Options of an annealing run (AIS and ADS; RAISE in reverse).

    Attributes
    ----------
    n_chains : int or None
        ``None`` (default): a first batch of ``first_batch`` chains, then more until the AIS
        standard error is at most ``target_se``. An int: exactly that many chains, one batch
        (RAISE: chains, each from a different posterior draw; ``None`` means ``first_batch``).
    ladder : "adaptive", "geometric", "linear", "sigmoid" or array
        ``"adaptive"``: rungs at equal thermodynamic length, placed from the pilot.
    n_rungs : int, optional
        Default for ``"adaptive"``: ``clip(5 L^2, 20, 5000)`` for a path of length ``L``
        (RAISE: ``clip(50 L^2, 50, 5000)``); 1000 for a named ladder.
    beta_min : float
        Smallest positive ``beta`` of the geometric ladder.
    n_steps : int
        Transitions per rung.
    first_batch : int or None
        Chains of the first batch when ``n_chains`` is None. ``None`` (default): 100 on a CPU,
        ``100 x ACCELERATOR_WIDTH`` (1,600) where the model runs on a GPU
        (``sized``; :attr:`~pm_evidence.model.backend.Backend.width`).
    target_se : float or None
        With ``n_chains=None``: after the first batch, one more batch sized from its standard
        error (``se^2`` falls like ``1 / chains``), and so on until the AIS standard error is at
        most this (not for RAISE). ``None``: one batch.
    max_chains : int
        Cap on the chains of all batches (and on ``1e7 / n_rungs``, the stored numbers).
    max_evaluations : int or None
        Budget of log-density evaluations of the run (default 20 million): no batch is sized
        past it. Where it stops the run before ``target_se``, the result's diagnostics say so
        (``stopped_by="max_evaluations"``, ``se``, ``n_evaluations``). ``None``: no budget.
    time_limit : float or None
        Seconds after which no further batch starts.
    """

    n_chains: int | None = None
    ladder: str | np.ndarray = "adaptive"
    n_rungs: int | None = None
    beta_min: float = 1e-4
    n_steps: int = 1
    first_batch: int | None = None
    target_se: float | None = 0.005
    max_chains: int = 20_000
    max_evaluations: int | None = MAX_EVALUATIONS
    time_limit: float | None = None

    def __post_init__(self):
        _check_positive(self, "n_steps", "max_chains")
        _check_budget(self)
        for name in ("n_chains", "first_batch"):
            if getattr(self, name) is not None:
                _check_positive(self, name)

    def sized(self, width: int = 1) -> AnnealingOptions:
        """These options with ``first_batch`` set for a device that moves ``width`` times the
        CPU's chains at once (``FIRST_BATCH x width`` where it is ``None``; as given else)."""
        if self.first_batch is not None:
            return self
        return replace(self, first_batch=FIRST_BATCH * int(width))

    @property
    def chains_first(self) -> int:
        """Chains of the first (for RAISE: the only) batch, on a CPU where ``first_batch`` is
        ``None`` (``sized`` for another device)."""
        return self.n_chains if self.n_chains is not None else self.sized(1).first_batch


@dataclass(frozen=True)
class TemperingOptions:
    """Options of a simulated-tempering run (RTS, TI, MBAR).

    Attributes
    ----------
    n_chains : int or None
        Parallel tempered chains, moved together in one vectorized call per sweep. ``None``
        (default): 1,000 on a CPU, where a sweep of 1,000 costs little more than one of 100 and
        the run reaches a smaller SE in the same time (measured: docs/benchmarks.rst,
        Measurements behind the defaults); ``1000 x ACCELERATOR_WIDTH`` where the model runs on
        a GPU (``sized``).
    n_sweeps : int or None
        Sweeps of the final run; ``None``: ``min_sweeps``, then more until the RTS standard
        error is at most ``target_se`` (or ``max_sweeps``).
    ladder, n_rungs, beta_min
        As :class:`AnnealingOptions`; the adaptive default is ``clip(L / 0.15 + 1, 8, 200)``
        rungs, and 100 for a named ladder.
    n_steps : int
        ``x`` transitions per sweep.
    prior_r : "uniform" or array_like (K,)
        Prior ``r_k`` over the rungs.
    n_init_sweeps, max_init_iterations, init_tol
        Initial iterations of seed 004 §2.4 (sweeps per iteration, cap, stopping rule
        ``max_k |r_k - c_k| < init_tol / K``).
    target_se, min_sweeps, max_sweeps, max_evaluations, time_limit
        The stopping rule when ``n_sweeps`` is None (module docstring): ``max_evaluations``
        (default 20 million, ``None``: no budget) counts the initial iterations too, and may
        shorten the first stretch of ``min_sweeps`` sweeps down to ``min_sweeps // 2``.
    record : bool
        Keep ``Delta`` and the rung of every draw (MBAR needs them; two numbers per draw).
    """

    n_chains: int | None = None
    n_sweeps: int | None = None
    ladder: str | np.ndarray = "adaptive"
    n_rungs: int | None = None
    beta_min: float = 1e-4
    n_steps: int = 1
    prior_r: str | np.ndarray = "uniform"
    n_init_sweeps: int = 50
    max_init_iterations: int = 10
    init_tol: float = 0.1
    target_se: float | None = 0.005
    min_sweeps: int = 200
    max_sweeps: int = 5000
    max_evaluations: int | None = MAX_EVALUATIONS
    time_limit: float | None = None
    record: bool = False

    def __post_init__(self):
        _check_positive(self, "n_steps", "n_init_sweeps", "min_sweeps", "max_sweeps")
        _check_budget(self)
        if self.n_chains is not None:
            _check_positive(self, "n_chains")
        if self.n_sweeps is not None and self.n_sweeps < 1:
            raise EvidenceInputError(f"n_sweeps must be a positive integer, got {self.n_sweeps}.")

    def sized(self, width: int = 1) -> TemperingOptions:
        """These options with ``n_chains`` set for a device that moves ``width`` times the
        CPU's chains at once (``TEMPERED_CHAINS x width`` where it is ``None``; as given else)."""
        if self.n_chains is not None:
            return self
        return replace(self, n_chains=TEMPERED_CHAINS * int(width))


def _check_budget(options) -> None:
    budget = options.max_evaluations
    if budget is not None and (not isinstance(budget, int | np.integer) or budget < 1):
        raise EvidenceInputError(
            f"max_evaluations must be a positive integer or None, got {budget!r}."
        )


def _check_positive(options, *names: str) -> None:
    for name in names:
        value = getattr(options, name)
        if not isinstance(value, int | np.integer) or value < 1:
            raise EvidenceInputError(f"{name} must be a positive integer, got {value!r}.")
    target_se = getattr(options, "target_se", None)
    if target_se is not None and not target_se > 0:
        raise EvidenceInputError(f"target_se must be positive or None, got {target_se!r}.")
