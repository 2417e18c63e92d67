"""Model-facing annealed and tempered estimators: AIS, RAISE, ADS, RTS, TI and MBAR.

Each public function builds the geometric path from the model (prior as ``p0`` when it is
proper, otherwise a reference fitted to NUTS draws), tunes the kernel once per rung in a pilot
run, runs the sampler and calls a pure estimator core. Inside
:func:`pm_evidence.marginal_likelihood` with a list of methods, the set-up, the AIS run (shared
by ``ais``, ``ads``) and the tempered run (shared by ``rts``, ``ti``, ``mbar``) are made once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pymc as pm
import xarray as xr

from pm_evidence.api import _evidence, _target, _warn_low_ess, posterior_draws
from pm_evidence.estimators.annealed import (
    ads_binary_core,
    ads_multinomial_core,
    ais_core,
    raise_core,
)
from pm_evidence.estimators.base import Estimate
from pm_evidence.estimators.tempered import mbar_core, rts_core, rts_log_z, ti_core
from pm_evidence.evidence import Evidence
from pm_evidence.exceptions import EvidenceInputError
from pm_evidence.references import (
    BernoulliProductReference,
    CategoricalProductReference,
    PriorReference,
    Reference,
    fit_reference,
)
from pm_evidence.target import LogDensity
from pm_evidence.tempering.kernels import Kernel, make_kernel
from pm_evidence.tempering.ladders import make_ladder
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.tempering.samplers import (
    AnnealRun,
    TemperedRun,
    anneal,
    rts_initial_iterations,
    run_tempered,
    sample_at_beta,
    tune_kernel,
)
from pm_evidence.utils import as_generator, log_mean_exp, normalized_weights

__all__ = [
    "annealed_discriminance_sampling",
    "annealed_importance_sampling",
    "mbar",
    "rao_blackwellized_tempered_sampling",
    "reverse_annealed_importance_sampling",
    "thermodynamic_integration",
]

ADS_VERSIONS = ("binary", "multinomial")


# ---------------------------------------------------------------------- set-up
@dataclass(frozen=True)
class PathSetup:
    """Everything the samplers share: path, kernel, ladder and its per-rung tuning."""

    target: LogDensity
    path: GeometricPath
    kernel: Kernel
    betas: np.ndarray
    tuning: np.ndarray
    log_z_pilot: np.ndarray | None  # None until a tempered method needs it (adaptive: always)
    posterior: np.ndarray | None  # flat posterior draws (chain, draw, dim) if drawn
    n_setup_evaluations: int = 0  # pilot and, for discrete RAISE, the posterior burn-in


def _default_reference(target: LogDensity, reference):
    """The prior when proper, else ``None`` (a reference must be fitted to posterior draws)."""
    if isinstance(reference, Reference):
        return reference
    if reference == "uniform":
        if target.binary_mask.all():
            return BernoulliProductReference(np.zeros(target.dim), name="uniform")
        if not target.finite_levels.all():
            raise EvidenceInputError(
                "reference='uniform' is the uniform distribution over the values of finite "
                "discrete variables, for models whose free variables are all Bernoulli or "
                "Categorical. Use 'prior' or a fitted reference."
            )
        return CategoricalProductReference.uniform(target.finite_levels)
    if reference in ("auto", "prior"):
        try:
            return PriorReference(target)
        except EvidenceInputError:
            if reference == "prior":
                raise
            return None
    return None


def _setup(
    target: LogDensity,
    rng,
    *,
    reference,
    ladder,
    n_rungs,
    beta_min,
    kernel,
    n_leapfrog,
    n_flips,
    blocks,
    idata,
    need_posterior: bool,
    sampling: dict,
    progressbar: bool,
    runs: dict | None,
    need_pilot: bool = False,
) -> PathSetup:
    unknown = set(sampling) - set(_SAMPLE_KEYS)
    if unknown:
        raise EvidenceInputError(
            f"Unexpected options {sorted(unknown)}; besides its own options this method accepts "
            f"only the NUTS options {list(_SAMPLE_KEYS)}."
        )
    if runs is not None and "setup" in runs:
        setup = runs["setup"]
        if need_pilot and setup.log_z_pilot is None:
            setup = _with_pilot(setup, rng, progressbar)
        if need_posterior and setup.posterior is None:
            setup = _with_posterior(setup, rng, idata, sampling, progressbar)
        runs["setup"] = setup
        return setup
    ref = _default_reference(target, reference)
    posterior = None
    if ref is None:  # a fitted reference: needs posterior draws first
        posterior = posterior_draws(target, idata, rng=rng, progressbar=progressbar, **sampling)
        kind = "student_t" if reference == "auto" else reference
        ref = fit_reference(kind, target, posterior)
    path = GeometricPath(target, ref)
    kern = make_kernel(kernel, target, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks)
    betas = make_ladder(ladder, n_rungs, beta_min=beta_min)
    setup = PathSetup(target, path, kern, betas, np.ones(betas.size), None, posterior)
    if kern.adaptive or need_pilot:  # a kernel with nothing to tune needs no pilot for AIS
        setup = _with_pilot(setup, rng, progressbar)
    if need_posterior and posterior is None:
        setup = _with_posterior(setup, rng, idata, sampling, progressbar)
    if runs is not None:
        runs["setup"] = setup
    return setup


def _with_pilot(setup: PathSetup, rng, progressbar: bool) -> PathSetup:
    """The set-up with the pilot's per-rung tuning and ``log Z_k`` (:func:`tune_kernel`)."""
    tuning, log_z_pilot, n_eval = tune_kernel(
        rng, setup.path, setup.kernel, setup.betas, progressbar=progressbar
    )
    return replace(
        setup, tuning=tuning, log_z_pilot=log_z_pilot,
        n_setup_evaluations=setup.n_setup_evaluations + n_eval,
    )  # fmt: skip


def _with_posterior(setup: PathSetup, rng, idata, sampling: dict, progressbar: bool):
    """The set-up with posterior draws ``(chain, draw, dim)``: from ``idata`` or NUTS, or, for
    discrete models without ``idata``, from the path's own kernel at ``beta = 1`` after a
    burn-in (seed 000 §6: "Gibbs sampling with 500 burn-in steps"): ``draws`` chains (default
    1000) run ``tune`` transitions (default 500) from reference draws; their evaluations are
    added to ``n_setup_evaluations``."""
    target = setup.target
    if idata is not None or not target.has_discrete:
        posterior = posterior_draws(target, idata, rng=rng, progressbar=progressbar, **sampling)
        return replace(setup, posterior=posterior)
    n_draws, n_burn = int(sampling.get("draws", 1000)), int(sampling.get("tune", 500))
    state = setup.path.sample_reference(rng, n_draws, with_grad=setup.kernel.needs_grad)
    state = sample_at_beta(
        rng, setup.path, setup.kernel, state, 1.0, setup.tuning[-1], n_transitions=n_burn,
        progressbar=progressbar,
    )  # fmt: skip
    n_eval = n_draws * (1 + n_burn * setup.kernel.evaluations_per_step)
    return replace(
        setup, posterior=state.x[None], n_setup_evaluations=setup.n_setup_evaluations + n_eval
    )


def _stats(setup: PathSetup, **per_rung) -> xr.Dataset:
    """Per-rung diagnostics as a Dataset on dim ``rung`` with coordinate ``beta``."""
    data = {}
    for name, value in per_rung.items():
        value = np.asarray(value)
        dims = ("rung",) if value.ndim == 1 else ("rung", "rung_to")
        data[name] = (dims, value)
    return xr.Dataset(data, coords={"beta": ("rung", setup.betas)})


def _common_diagnostics(setup: PathSetup, n_evaluations: int, nonfinite) -> dict:
    return {
        "reference": setup.path.reference.name,
        "kernel": setup.kernel.kind,
        "n_rungs": int(setup.betas.size),
        "n_evaluations": int(n_evaluations),
        "n_setup_evaluations": int(setup.n_setup_evaluations),
        "n_nonfinite_rejected": int(np.sum(nonfinite)),
    }


# ---------------------------------------------------------------------- shared runs
def _ais_run(setup: PathSetup, rng, n_chains, n_steps, progressbar, runs) -> AnnealRun:
    key = ("ais", n_chains, n_steps)
    if runs is not None and key in runs:
        return runs[key]
    state = setup.path.sample_reference(rng, n_chains, with_grad=setup.kernel.needs_grad)
    run = anneal(
        rng, setup.path, setup.kernel, setup.betas, state, setup.tuning,
        n_steps=n_steps, store=True, progressbar=progressbar, description="AIS",
    )  # fmt: skip
    if runs is not None:
        runs[key] = run
    return run


def _tempered_run(
    setup: PathSetup, rng, *, n_chains, n_sweeps, n_steps, log_r, n_init_sweeps,
    max_init_iterations, init_tol, record, progressbar, runs,
) -> tuple[TemperedRun, list[float]]:  # fmt: skip
    key = ("tempered", n_chains, n_sweeps, n_steps, n_init_sweeps)
    if runs is not None and key in runs and (runs[key][0].delta_draws is not None or not record):
        return runs[key]
    record = record or bool(runs and runs.get("record_tempered"))
    state = setup.path.sample_reference(rng, n_chains, with_grad=setup.kernel.needs_grad)
    log_zhat, state, history, n_eval_init = rts_initial_iterations(
        rng, setup.path, setup.kernel, setup.betas, log_r, setup.log_z_pilot, state,
        setup.tuning, n_sweeps=n_init_sweeps, tol=init_tol, max_iterations=max_init_iterations,
        progressbar=progressbar,
    )  # fmt: skip
    n_time_batches = 1 if n_chains >= 10 else int(np.ceil(20 / n_chains))
    run = run_tempered(
        rng, setup.path, setup.kernel, setup.betas, log_r, log_zhat, state, None, setup.tuning,
        n_sweeps=n_sweeps, n_steps=n_steps, n_time_batches=n_time_batches, record=record,
        progressbar=progressbar, description="tempered sampling",
    )  # fmt: skip
    run = run._replace(n_evaluations=run.n_evaluations + n_eval_init)
    if runs is not None:
        runs[key] = (run, history)
    return run, history


def _log_r(prior_r, n_rungs: int) -> np.ndarray:
    if isinstance(prior_r, str):
        if prior_r != "uniform":
            raise EvidenceInputError(
                f"prior_r must be 'uniform' or an array of K positive weights, got {prior_r!r}."
            )
        return np.full(n_rungs, -np.log(n_rungs))
    r = np.asarray(prior_r, dtype=float)
    if r.shape != (n_rungs,) or np.any(r <= 0) or not np.all(np.isfinite(r)):
        raise EvidenceInputError(
            f"prior_r must have one positive finite weight per rung ({n_rungs}), got shape "
            f"{r.shape}."
        )
    return np.log(r / r.sum())


def _tempered_stats(setup: PathSetup, run: TemperedRun) -> xr.Dataset:
    total = run.n_iterations.sum()
    c_hat = run.c_sum.sum(axis=0) / total
    return _stats(
        setup,
        acceptance=run.acceptance,
        nonfinite=run.nonfinite,
        occupancy=c_hat,
        occupancy_counts=run.count.sum(axis=0) / total,
        prior_r=normalized_weights(run.log_r),
        log_z_rungs=rts_log_z(c_hat, run.log_r, run.log_zhat),
        log_zhat=run.log_zhat - run.log_zhat[0],
        transitions=run.transitions,
        step_size=setup.tuning,
    )


# ---------------------------------------------------------------------- options shared
_SAMPLE_KEYS = ("draws", "tune", "chains", "sample_kwargs")


# ---------------------------------------------------------------------- public estimators
def annealed_importance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    n_chains: int = 100,
    n_rungs: int = 1000,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""Annealed importance sampling (Neal 2001; seed 001; seed 000 eq. (8)).

    ``n_chains`` independent chains start at ``p0`` and are annealed along the geometric path
    ``f_beta = p0^(1-beta) f^beta`` (``n_rungs`` rungs of ``ladder``), with ``n_steps``
    transitions of ``kernel`` per rung. ``log Z = log mean w``: unbiased for ``Z``, so a
    stochastic **lower bound** on ``log Z`` (in expectation).

    Parameters
    ----------
    model : pymc.Model, optional
    n_chains, n_rungs, ladder, beta_min
        Chains, rungs (2 to 10,000) and the ladder (``"geometric"``, ``"linear"``,
        ``"sigmoid"`` or an array from 0 to 1).
    kernel : {"auto", "hmc", "rwm", "flip", "gibbs", "gwg"} or callable
        Transition per rung; ``"auto"`` is HMC for continuous models and Gibbs sweeps for
        all-binary ones; ``"gwg"`` is Gibbs-with-gradients. A callable
        ``step(rng, x, beta) -> x`` must leave every ``f_beta`` invariant.
    blocks : list of index arrays, optional
        For ``kernel="gibbs"``: groups of flat entries updated together, each conditionally
        independent given the rest (e.g. :func:`pm_evidence.energy.checkerboard_blocks`).
        Default: one entry at a time.
    n_steps, n_leapfrog, n_flips
        Transitions per rung; leapfrog steps (HMC, default 2, with a jittered step size);
        entries flipped per proposal. Short trajectories and more rungs beat long trajectories
        at equal cost in ``benchmarks/path_methods.py``: the estimators' variance comes from
        how slowly ``Delta(x)``, an energy-like quantity, mixes, and every momentum refresh
        moves it.
    reference : "auto", "prior", "uniform", "student_t", "normal" or Reference
        ``p0``. ``"auto"``: the prior when it is proper, else a Student-t fitted to NUTS draws.
        ``"uniform"``: uniform over the values of every entry (models whose free variables are
        all Bernoulli or Categorical). For binary models see also
        :class:`pm_evidence.references.BernoulliProductReference` and the mean-field and data
        base rate references of :mod:`pm_evidence.energy`.
    idata, random_seed, progressbar, **sampling
        Posterior draws (only needed for fitted references), seed, progress bars, and NUTS
        options (``draws``, ``tune``, ``chains``, ``sample_kwargs``).

    Returns
    -------
    Evidence
        ``log_weights`` group: the chains' final log weights; ``sample_stats``: per-rung
        acceptance, non-finite rejections, step size and the running ``log Z_k``.
    """
    target = _target(model)
    rng = as_generator(random_seed)
    setup = _setup(
        target, rng, reference=reference, ladder=ladder, n_rungs=n_rungs, beta_min=beta_min,
        kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        need_posterior=False, sampling=sampling, progressbar=progressbar, runs=_runs,
    )  # fmt: skip
    run = _ais_run(setup, rng, n_chains, n_steps, progressbar, _runs)
    estimate = ais_core(run.log_weights)
    _warn_low_ess(
        estimate.diagnostics["ess"],
        "The AIS weights",
        "log Z is likely under-estimated and its SE unreliable; use more rungs (n_rungs), more "
        "transitions per rung (n_steps) or a reference closer to the posterior.",
    )
    estimate.diagnostics.update(_common_diagnostics(setup, run.n_evaluations, run.nonfinite))
    log_z_rungs = log_mean_exp(run.log_weights_rungs, axis=1)
    stats = _stats(
        setup, acceptance=run.acceptance, nonfinite=run.nonfinite, step_size=setup.tuning,
        log_z_rungs=log_z_rungs,
    )  # fmt: skip
    return _evidence(
        target, estimate, "ais", {"log_weight": (("ais_chain",), run.log_weights)}, stats
    )


def reverse_annealed_importance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    n_chains: int = 100,
    n_rungs: int = 1000,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""Reverse AIS, RAISE (Burda et al. 2015; seed 004 §3.2; seed 000 §6).

    ``n_chains`` posterior draws (spread evenly over ``idata``'s draws, or drawn by NUTS) are
    annealed from ``beta = 1`` down to the reference. The reverse weights have ``E[w] = 1/Z``
    for exact posterior draws, so ``log Z = -log mean w`` is a stochastic **upper bound** (in
    expectation): with AIS's lower bound it sandwiches ``log Z``. Options as
    :func:`annealed_importance_sampling`.
    """
    target = _target(model)
    rng = as_generator(random_seed)
    setup = _setup(
        target, rng, reference=reference, ladder=ladder, n_rungs=n_rungs, beta_min=beta_min,
        kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        need_posterior=True, sampling=sampling, progressbar=progressbar, runs=_runs,
    )  # fmt: skip
    flat = setup.posterior.reshape(-1, target.dim)
    if flat.shape[0] < n_chains:
        raise EvidenceInputError(
            f"RAISE starts {n_chains} chains from posterior draws but only {flat.shape[0]} are "
            f"available; draw more posterior samples or lower n_chains."
        )
    chosen = np.sort(rng.choice(flat.shape[0], size=n_chains, replace=False))
    state = setup.path.evaluate(flat[chosen], with_grad=setup.kernel.needs_grad)
    run = anneal(
        rng, setup.path, setup.kernel, setup.betas[::-1], state, setup.tuning[::-1],
        n_steps=n_steps, store=False, progressbar=progressbar, description="RAISE",
    )  # fmt: skip
    estimate = raise_core(run.log_weights)
    _warn_low_ess(
        estimate.diagnostics["ess"],
        "The reverse AIS weights",
        "log Z is likely over-estimated and its SE unreliable; use more rungs (n_rungs), more "
        "transitions per rung (n_steps) or a reference closer to the posterior.",
    )
    estimate.diagnostics.update(_common_diagnostics(setup, run.n_evaluations, run.nonfinite))
    stats = _stats(
        setup, acceptance=run.acceptance[::-1], nonfinite=run.nonfinite[::-1],
        step_size=setup.tuning,
    )  # fmt: skip
    return _evidence(
        target, estimate, "raise", {"log_weight": (("raise_chain",), run.log_weights)}, stats
    )


def annealed_discriminance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    version: str = "binary",
    n_chains: int = 100,
    n_rungs: int = 1000,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""Annealed discriminance sampling (seed 000 §5) on AIS's own draws and weights.

    ``version="binary"``: the sequential binary classifications between neighbouring rungs
    (Alg. 1, eqs. (6)-(9)); ``"multinomial"``: one multinomial classification over all rungs
    (Alg. 2, eq. (5), a convex problem solved by Newton-CG; for up to a few hundred rungs).
    Same cost as AIS (the classification is cheap); no definite bias direction. Options as
    :func:`annealed_importance_sampling`; within a list of methods the AIS run is shared.
    """
    if version not in ADS_VERSIONS:
        raise EvidenceInputError(
            f"Requested version {version!r} but it must be one of {list(ADS_VERSIONS)}."
        )
    target = _target(model)
    rng = as_generator(random_seed)
    setup = _setup(
        target, rng, reference=reference, ladder=ladder, n_rungs=n_rungs, beta_min=beta_min,
        kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        need_posterior=False, sampling=sampling, progressbar=progressbar, runs=_runs,
    )  # fmt: skip
    run = _ais_run(setup, rng, n_chains, n_steps, progressbar, _runs)
    core = ads_binary_core if version == "binary" else ads_multinomial_core
    estimate = core(run.delta, run.log_weights_rungs, setup.betas)
    estimate.diagnostics.update(_common_diagnostics(setup, run.n_evaluations, run.nonfinite))
    estimate.diagnostics["version"] = version
    stats = _stats(setup, acceptance=run.acceptance, nonfinite=run.nonfinite)
    return _evidence(
        target, estimate, "ads", {"log_weight": (("ais_chain",), run.log_weights)}, stats
    )


def _tempered_common(
    model, *, random_seed, reference, ladder, n_rungs, beta_min, kernel, n_leapfrog, n_flips, blocks,
    idata, sampling, progressbar, _runs, n_chains, n_sweeps, n_steps, prior_r, n_init_sweeps,
    max_init_iterations, init_tol, record,
):  # fmt: skip
    """Set-up plus the (shared) tempered run of RTS, TI and MBAR, and their common diagnostics."""
    target = _target(model)
    rng = as_generator(random_seed)
    setup = _setup(
        target, rng, reference=reference, ladder=ladder, n_rungs=n_rungs, beta_min=beta_min,
        kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        need_posterior=False, sampling=sampling, progressbar=progressbar, runs=_runs,
        need_pilot=True,
    )  # fmt: skip
    log_r = _log_r(prior_r, setup.betas.size)
    run, history = _tempered_run(
        setup, rng, n_chains=n_chains, n_sweeps=n_sweeps, n_steps=n_steps, log_r=log_r,
        n_init_sweeps=n_init_sweeps, max_init_iterations=max_init_iterations, init_tol=init_tol,
        record=record, progressbar=progressbar, runs=_runs,
    )  # fmt: skip
    diagnostics = _common_diagnostics(setup, run.n_evaluations, run.nonfinite)
    diagnostics["n_init_iterations"] = len(history)
    diagnostics["init_max_abs_r_minus_c"] = history[-1] if history else np.nan
    diagnostics["interrupted"] = bool(run.interrupted)
    return target, setup, run, diagnostics


def rao_blackwellized_tempered_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    n_chains: int = 100,
    n_sweeps: int = 1000,
    n_rungs: int = 100,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    prior_r="uniform",
    n_init_sweeps: int = 50,
    max_init_iterations: int = 10,
    init_tol: float = 0.1,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""Rao-Blackwellized tempered sampling, RTS (seed 004 §2, Alg. 1).

    Simulated tempering over ``(x, beta)`` with ``q(x, beta_k) propto f_k(x) r_k / Zhat_k``;
    ``c_k = mean_t q(beta_k | x_t)`` (eq. (9)) and ``Z_k = Zhat_k (r_1/r_k)(c_k/c_1)`` (eq. (12)).
    ``Zhat`` starts from the pilot AIS run and is refined by the initial iterations of §2.4 until
    ``max_k |r_k - c_k| < init_tol / K``; the final run keeps only ``O(chains x K)`` sums (no
    stored samples). The SE is eq. (16) with the ``c`` (co)variances from the spread across
    chains. No definite bias direction (eq. (15)). Ctrl-C during the final run returns the
    estimate from the sweeps completed, with a warning.

    Parameters
    ----------
    n_chains, n_sweeps, n_steps
        Parallel tempered chains, sweeps of the final run, ``x`` transitions per sweep.
    prior_r : "uniform" or array_like (K,)
        Prior ``r_k`` over the rungs.
    n_init_sweeps, max_init_iterations, init_tol
        Initial iterations of seed 004 §2.4 (sweeps per iteration, cap, and the stopping rule
        ``max_k |r_k - c_k| < init_tol / K``).
    ladder, n_rungs, beta_min, kernel, n_leapfrog, n_flips, blocks
        As :func:`annealed_importance_sampling`.
    reference, idata, random_seed, progressbar, **sampling
        As :func:`annealed_importance_sampling`.

    Returns
    -------
    Evidence
        Diagnostics include ``log_z_count``/``se_count`` (the non-Rao-Blackwellized count
        estimator, seed 004 §4.3) and ``max_abs_r_minus_c``; ``sample_stats`` holds per-rung
        occupancy ``c_k`` and ``prior_r``, acceptance, and the ``beta`` transition matrix.
    """
    target, setup, run, diagnostics = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=False,
    )  # fmt: skip
    estimate = rts_core(run.c_sum, run.n_iterations, run.log_r, run.log_zhat)
    counts = rts_core(run.count, run.n_iterations, run.log_r, run.log_zhat, pseudo_count=0.1)
    estimate.diagnostics.update(diagnostics)
    estimate.diagnostics.update(log_z_count=counts.log_z, se_count=counts.se)
    return _evidence(target, estimate, "rts", {}, _tempered_stats(setup, run))


TI_VARIANTS = ("rb", "trapezoid", "riemann")


def thermodynamic_integration(
    model: pm.Model | LogDensity | None = None,
    *,
    variant: str = "rb",
    corrected: bool = True,
    n_chains: int = 100,
    n_sweeps: int = 1000,
    n_rungs: int = 100,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    prior_r="uniform",
    n_init_sweeps: int = 50,
    max_init_iterations: int = 10,
    init_tol: float = 0.1,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""Thermodynamic integration on simulated-tempering draws (seed 004 §3.4, eqs. (20)-(21)).

    ``log Z = int_0^1 E_beta[Delta] d beta`` with ``E_{beta_k}[Delta]`` from the tempered draws:
    ``variant="rb"`` (TI-RB, eq. (21): every draw weighted by ``q(beta_k | x)``, trapezoid rule),
    ``"trapezoid"`` or ``"riemann"`` (the draws at each rung, trapezoid or right Riemann sum).
    With ``corrected=True`` (default) the two trapezoid variants add the Euler-Maclaurin
    correction ``-sum_k h_k^2 (v_k - v_{k-1}) / 12`` with ``v_k = Var_{beta_k}[Delta]`` from
    the same draws (Friel, Hurn & Wyse 2014): the ladder's discretization error then falls like
    ``h^4`` rather than ``h^2``; ``corrected=False`` gives seed 004's plain TI-RB. Every variant,
    corrected and plain, is computed from the same run and reported in the diagnostics
    (``log_z_rb``, ``log_z_rb_corrected``, ...). The SE is the Monte Carlo part only: the
    discretization error left by a coarse ladder is not in it (compare ``log_z_rb`` with
    ``log_z_rb_corrected`` to see its size). Options as
    :func:`rao_blackwellized_tempered_sampling`.
    """
    if variant not in TI_VARIANTS:
        raise EvidenceInputError(
            f"Requested variant {variant!r} but it must be one of {list(TI_VARIANTS)}."
        )
    target, setup, run, diagnostics = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=False,
    )  # fmt: skip
    sums = {  # variant -> (weights, sums of Delta, sums of Delta^2)
        "rb": (run.c_sum, run.rb_delta_sum, run.rb_delta2_sum),
        "trapezoid": (run.count, run.count_delta_sum, run.count_delta2_sum),
        "riemann": (run.count, run.count_delta_sum, run.count_delta2_sum),
    }
    results = {}
    for name, (weights, delta_sum, delta2_sum) in sums.items():
        rule = "riemann" if name == "riemann" else "trapezoid"
        results[name] = ti_core(setup.betas, weights, delta_sum, rule=rule)
        if rule == "trapezoid":
            results[f"{name}_corrected"] = ti_core(
                setup.betas, weights, delta_sum, rule="corrected", delta2_sum=delta2_sum
            )
    chosen = results[f"{variant}_corrected" if corrected and variant != "riemann" else variant]
    estimate = Estimate(
        chosen.log_z, chosen.se, dict(chosen.diagnostics, variant=variant, corrected=corrected)
    )
    estimate.diagnostics.update(diagnostics)
    for name, result in results.items():
        estimate.diagnostics[f"log_z_{name}"] = result.log_z
    return _evidence(target, estimate, "ti", {}, _tempered_stats(setup, run))


def mbar(
    model: pm.Model | LogDensity | None = None,
    *,
    n_chains: int = 100,
    n_sweeps: int = 1000,
    n_rungs: int = 100,
    ladder: str | np.ndarray = "geometric",
    beta_min: float = 1e-4,
    prior_r="uniform",
    n_init_sweeps: int = 50,
    max_init_iterations: int = 10,
    init_tol: float = 0.1,
    kernel="auto",
    n_steps: int = 1,
    n_leapfrog: int = 2,
    n_flips: int = 1,
    blocks: list | None = None,
    reference: str | Reference = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    _runs: dict | None = None,
    **sampling,
) -> Evidence:
    r"""MBAR on simulated-tempering draws (seed 004 eq. (18); Shirts & Chodera 2008).

    Stores ``Delta`` and the rung of every draw of the tempered run (two numbers per draw),
    then maximizes eq. (18), a convex problem in ``log Z_k``, by Newton-CG. The SE is the
    chain-clustered sandwich. Cost grows as draws x rungs per iteration. No definite bias
    direction. Options as :func:`rao_blackwellized_tempered_sampling`.
    """
    target, setup, run, diagnostics = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=True,
    )  # fmt: skip
    c_hat = run.c_sum.sum(axis=0) / run.n_iterations.sum()
    estimate = mbar_core(
        run.delta_draws, run.rung_draws, setup.betas, unit=run.unit_of_chain_draw,
        log_z0=rts_log_z(c_hat, run.log_r, run.log_zhat),
    )  # fmt: skip
    estimate.diagnostics.update(diagnostics)
    return _evidence(target, estimate, "mbar", {}, _tempered_stats(setup, run))
