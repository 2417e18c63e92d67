"""Model-facing annealed and tempered estimators: AIS, RAISE, ADS, RTS, TI and MBAR.

Each public function builds the geometric path from the model (``p0``: for continuous models the
better of the prior and a Student-t fitted to NUTS draws, see :func:`~pm_evidence.api_tempering.auto_reference`; for
discrete ones the prior), tunes the kernel once per rung in a pilot run, runs the sampler and
calls a pure estimator core. Every check that fails (low weight ESS, Pareto k-hat, R-hat of the
NUTS draws, RTS occupancy, empty rungs, ...) is issued as a warning and kept in the result's
``warnings``. Inside
:func:`pm_evidence.marginal_likelihood` with a list of methods, the set-up, the AIS run (shared
by ``ais``, ``ads``) and the tempered run (shared by ``rts``, ``ti``, ``mbar``) are made once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pymc as pm
import xarray as xr

from pm_evidence.api import (
    _evidence,
    _flag,
    _target,
    log_density_at_target_draws,
    posterior_draws,
    posterior_messages,
    se_messages,
    weight_messages,
)
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
    MultivariateStudentTReference,
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
from pm_evidence.utils import as_generator, kish_ess, log_mean_exp, normalized_weights

__all__ = [
    "annealed_discriminance_sampling",
    "annealed_importance_sampling",
    "auto_reference",
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
    reference_reason: str = ""  # why this p0 (diagnostics["reference_reason"])
    reference_diagnostics: dict = field(default_factory=dict)  # the overlap measures compared
    messages: tuple[str, ...] = ()  # warnings every result of this set-up carries


# Coordinates of the overlap measure below, kept in the diagnostics.
_OVERLAP_KEYS = ("reference_ess_prior", "reference_ess_student_t")


def auto_reference(target: LogDensity, posterior: np.ndarray) -> tuple[Reference, str, dict]:
    r"""The default ``p0`` of the path methods for a continuous model: the prior or a Student-t
    fitted to posterior draws, whichever overlaps the posterior better.

    The overlap of a candidate ``p0`` with the posterior is the Kish effective sample size, as a
    fraction of the draws, of the reverse weights ``p0(x) / f(x)`` at the posterior draws
    ``x`` (the weights of reverse importance sampling, seed 000 §3; ``E_p[p0 / f] = 1 / Z``):
    near 1 when ``p0`` has the posterior's shape, near ``1/n`` when ``p0`` is much broader or
    elsewhere. For the prior the weights are ``1 / L(x)``; for the Student-t (5 degrees of
    freedom, matched to the draws' mean and covariance, as bridge sampling's
    ``fit_reference("student_t")``) they are ``t(x) / f(x)``. Both cost one evaluation of the
    model at the draws. The prior is kept when its overlap is at least the Student-t's: the
    path from the prior then is as short, and it also covers modes that the draws missed.

    A defensive mixture ``w prior + (1 - w) t`` was measured as the alternative and rejected:
    on the peaked 20-D normal mean (``pm_evidence.testing.peaked_normal_mean``) RTS at defaults
    from it was off by -4.9 nats (z = -14.6; from the Student-t: z = -0.1), and by z = -3.2 on
    the two-mode 10-D mixture, because at ``beta = 0`` HMC cannot move between the prior's bulk
    and the narrow Student-t, so rung 0 is sampled without the prior's share ``w``.

    Parameters
    ----------
    target : LogDensity
        The model's adapter.
    posterior : numpy.ndarray
        Flat unconstrained posterior draws ``(chain, draw, dim)``.

    Returns
    -------
    reference : Reference
        The chosen reference.
    reason : str
        A sentence saying why.
    diagnostics : dict
        The two overlap fractions (``reference_ess_prior``, NaN for an improper prior;
        ``reference_ess_student_t``).
    """
    flat = posterior.reshape(-1, target.dim)
    n = flat.shape[0]
    fitted = MultivariateStudentTReference.fit(flat)
    log_prior, log_lik = target.evaluate(flat)
    log_f = log_prior + log_lik
    if not np.all(np.isfinite(log_f)):
        log_density_at_target_draws(target, posterior)  # raises, naming the first bad draw
    ess_t = kish_ess(fitted.logpdf(flat) - log_f) / n
    try:
        prior = PriorReference(target)
    except EvidenceInputError as err:
        reason = f"student_t fitted to {n} posterior draws: the prior cannot be a reference ({err})"
        return fitted, reason, dict(zip(_OVERLAP_KEYS, (np.nan, ess_t), strict=True))
    ess_prior = kish_ess(-log_lik) / n
    diagnostics = dict(zip(_OVERLAP_KEYS, (ess_prior, ess_t), strict=True))
    measure = (
        f"the Kish ESS of the reverse weights p0/f at the {n} posterior draws is "
        f"{ess_prior:.3g} of the draws for the prior and {ess_t:.3g} for a Student-t fitted to "
        f"them"
    )
    if ess_prior >= ess_t:
        reason = f"prior: {measure}; the prior overlaps the posterior at least as well"
        return prior, reason, diagnostics
    reason = f"student_t: {measure}; the fitted Student-t overlaps it better"
    return fitted, reason, diagnostics


def _improper_prior_message(target: LogDensity) -> str | None:
    from pymc.distributions.continuous import FlatRV, HalfFlatRV

    improper = [
        rv.name for rv in target.model.free_RVs if isinstance(rv.owner.op, FlatRV | HalfFlatRV)
    ]
    if not improper:
        return None
    return (
        f"The prior of {improper} is improper (Flat/HalfFlat): log Z is the integral of the "
        f"model's unnormalized density (finite only if the likelihood or potentials make it "
        f"so), not a marginal likelihood; it changes with the arbitrary scale of a flat prior, "
        f"so Bayes factors between models built with it are meaningless."
    )


def _explicit_reference(target: LogDensity, reference):
    """The reference when it needs no posterior draws (a Reference, ``"prior"``,
    ``"uniform"``, or ``"auto"`` for a model with discrete variables), else ``None``."""
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
    if reference == "prior" or (reference == "auto" and target.has_discrete):
        return PriorReference(target)
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
    ref = _explicit_reference(target, reference)
    posterior, reason, overlap, messages = None, "", {}, []
    if ref is None:  # auto or a fitted reference: needs posterior draws first
        posterior = posterior_draws(target, idata, rng=rng, progressbar=progressbar, **sampling)
        messages += posterior_messages(target, posterior)
        if reference == "auto":
            ref, reason, overlap = auto_reference(target, posterior)
        else:
            ref = fit_reference(reference, target, posterior)
            reason = f"{ref.name} fitted to posterior draws (reference={reference!r})"
    elif reference == "auto":
        reason = "prior: the model has discrete variables (no NUTS draws to fit a reference to)"
    else:
        reason = f"given (reference={reference if isinstance(reference, str) else ref.name!r})"
    messages.append(_improper_prior_message(target))
    path = GeometricPath(target, ref)
    kern = make_kernel(kernel, target, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks)
    betas = make_ladder(ladder, n_rungs, beta_min=beta_min)
    setup = PathSetup(
        target, path, kern, betas, np.ones(betas.size), None, posterior,
        reference_reason=reason, reference_diagnostics=overlap,
        messages=tuple(m for m in messages if m),
    )  # fmt: skip
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
        messages = setup.messages + tuple(posterior_messages(target, posterior))
        return replace(setup, posterior=posterior, messages=messages)
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
        "reference_reason": setup.reference_reason,
        **setup.reference_diagnostics,
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


class _TemperedResult(NamedTuple):
    run: TemperedRun
    history: list[float]  # max_k |r_k - c_k| after each initial iteration
    messages: tuple[str, ...]  # the sampler's warnings (initial iterations, interruption)
    n_outside_support: int  # reference draws (the chains' starts) where Delta = -inf
    n_start: int


def _sampler_warnings(caught) -> tuple[str, ...]:
    """The samplers' UserWarnings as messages for the results; other warnings re-issued."""
    messages = []
    for record in caught:
        if record.category is UserWarning:
            messages.append(str(record.message))
        else:
            warnings.warn_explicit(record.message, record.category, record.filename, record.lineno)
    return tuple(messages)


def _tempered_run(
    setup: PathSetup, rng, *, n_chains, n_sweeps, n_steps, log_r, n_init_sweeps,
    max_init_iterations, init_tol, record, progressbar, runs,
) -> _TemperedResult:  # fmt: skip
    key = ("tempered", n_chains, n_sweeps, n_steps, n_init_sweeps)
    if runs is not None and key in runs and (runs[key].run.delta_draws is not None or not record):
        return runs[key]
    record = record or bool(runs and runs.get("record_tempered"))
    state = setup.path.sample_reference(rng, n_chains, with_grad=setup.kernel.needs_grad)
    n_outside = int(np.sum(state.delta == -np.inf))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_zhat, state, history, n_eval_init = rts_initial_iterations(
            rng, setup.path, setup.kernel, setup.betas, log_r, setup.log_z_pilot, state,
            setup.tuning, n_sweeps=n_init_sweeps, tol=init_tol, max_iterations=max_init_iterations,
            progressbar=progressbar,
        )  # fmt: skip
        n_time_batches = 1 if n_chains >= 10 else int(np.ceil(20 / n_chains))
        run = run_tempered(
            rng, setup.path, setup.kernel, setup.betas, log_r, log_zhat, state, None,
            setup.tuning, n_sweeps=n_sweeps, n_steps=n_steps, n_time_batches=n_time_batches,
            record=record, progressbar=progressbar, description="tempered sampling",
        )  # fmt: skip
    run = run._replace(n_evaluations=run.n_evaluations + n_eval_init)
    result = _TemperedResult(run, history, _sampler_warnings(caught), n_outside, n_chains)
    if runs is not None:
        runs[key] = result
    return result


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
        ``p0``. ``"auto"``: for continuous models, the prior or a Student-t fitted to NUTS
        draws (or ``idata``), whichever overlaps the posterior better by the Kish ESS of the
        reverse weights ``p0/f`` at the draws (:func:`~pm_evidence.api_tempering.auto_reference`; the choice and its
        reason are in ``diagnostics["reference"]`` and ``["reference_reason"]``); for models
        with discrete variables, the prior. An improper (Flat) prior gets the Student-t, and a
        warning: ``log Z`` is then not a marginal likelihood.
        ``"uniform"``: uniform over the values of every entry (models whose free variables are
        all Bernoulli or Categorical). For binary models see also
        :class:`pm_evidence.references.BernoulliProductReference` and the mean-field and data
        base rate references of :mod:`pm_evidence.energy`.
    idata, random_seed, progressbar, **sampling
        Posterior draws (for ``reference="auto"`` on continuous models and for fitted
        references), seed, progress bars, and NUTS options (``draws``, ``tune``, ``chains``,
        ``sample_kwargs``).

    Returns
    -------
    Evidence
        ``log_weights`` group: the chains' final log weights; ``sample_stats``: per-rung
        acceptance, non-finite rejections, step size and the running ``log Z_k``. Its
        ``warnings`` name what failed: weight ESS below 30, Pareto k-hat of the weights above
        ``min(1 - 1/log10(n), 0.7)``, R-hat of the NUTS draws above 1.01, an improper prior.
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
    messages = weight_messages(
        estimate.diagnostics,
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
        target, estimate, "ais", {"log_weight": (("ais_chain",), run.log_weights)}, stats,
        warnings=_flag([*setup.messages, *messages, *se_messages(estimate)]),
    )  # fmt: skip


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

    ``n_chains`` posterior draws (chosen at random without replacement from ``idata``'s draws, or drawn by NUTS) are
    annealed from ``beta = 1`` down to the reference. The reverse weights have ``E[w] = 1/Z``
    for exact posterior draws, so ``log Z = -log mean w`` is a stochastic **upper bound** (in
    expectation): with AIS's lower bound it sandwiches ``log Z``. Options as
    :func:`annealed_importance_sampling`.

    Parameters
    ----------
    model : pymc.Model, optional
    n_chains : int
        Number of reverse chains, each started at a different posterior draw (chosen at random
        without replacement); at most the number of posterior draws.
    ladder, n_rungs, beta_min
        The ladder (``"geometric"``, ``"linear"``, ``"sigmoid"`` or an array from 0 to 1), its
        number of rungs and smallest positive ``beta``; as :func:`annealed_importance_sampling`.
    kernel : {"auto", "hmc", "rwm", "flip", "gibbs", "gwg"} or callable
        Transition at each rung; as :func:`annealed_importance_sampling`.
    n_steps, n_leapfrog, n_flips, blocks
        Transitions per rung, leapfrog steps (HMC), entries flipped per proposal, and the Gibbs
        blocks; as :func:`annealed_importance_sampling`.
    reference : "auto", "prior", "uniform", "student_t", "normal" or Reference
        ``p0``; as :func:`annealed_importance_sampling`.
    idata, random_seed, progressbar, **sampling
        Posterior draws the chains start from, seed, progress bars, and NUTS options
        (``draws``, ``tune``, ``chains``, ``sample_kwargs``). For models with discrete
        variables and no ``idata``, the posterior draws come from the path's own kernel at
        ``beta = 1``: ``draws`` chains (default 1000) after ``tune`` transitions (default 500)
        from reference draws.

    Returns
    -------
    Evidence
        ``log_weights`` group: the chains' final reverse log weights; ``sample_stats``: per-rung
        acceptance, non-finite rejections and step size. Its ``warnings`` always include that
        the chains started from MCMC draws (so the upper bound is not guaranteed), and name
        what failed: weight ESS below 30, Pareto k-hat of the weights above
        ``min(1 - 1/log10(n), 0.7)``, R-hat of the NUTS draws above 1.01, an improper prior.

    Raises
    ------
    EvidenceInputError
        If fewer posterior draws than ``n_chains`` are available.
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
    messages = weight_messages(
        estimate.diagnostics,
        "The reverse AIS weights",
        "log Z is likely over-estimated and its SE unreliable; use more rungs (n_rungs), more "
        "transitions per rung (n_steps) or a reference closer to the posterior.",
    )
    messages.append(
        f"RAISE started from {n_chains} MCMC draws (NUTS, idata or a burn-in of the path's "
        f"kernel), not exact posterior draws: E[w] = 1/Z, and with it the upper bound, holds "
        f"only for exact draws, so this log Z is an estimate with no definite bias direction "
        f"(seen below the exact value by up to 4.6 SE on a hierarchical model), not a bound."
    )
    estimate.diagnostics.update(_common_diagnostics(setup, run.n_evaluations, run.nonfinite))
    stats = _stats(
        setup, acceptance=run.acceptance[::-1], nonfinite=run.nonfinite[::-1],
        step_size=setup.tuning,
    )  # fmt: skip
    return _evidence(
        target, estimate, "raise", {"log_weight": (("raise_chain",), run.log_weights)}, stats,
        warnings=_flag([*setup.messages, *messages, *se_messages(estimate)]),
    )  # fmt: skip


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
    (Alg. 2, eq. (5), a convex problem solved by Newton's method).
    Same cost as AIS (the classification is cheap); no definite bias direction. Options as
    :func:`annealed_importance_sampling`; within a list of methods the AIS run is shared.

    Parameters
    ----------
    model : pymc.Model, optional
    version : {"binary", "multinomial"}
        Sequential binary classifications (Alg. 1) or one multinomial classification (Alg. 2).
    n_chains : int
        Number of independent AIS chains started at ``p0``.
    ladder, n_rungs, beta_min
        The ladder (``"geometric"``, ``"linear"``, ``"sigmoid"`` or an array from 0 to 1), its
        number of rungs and smallest positive ``beta``; as :func:`annealed_importance_sampling`.
    kernel : {"auto", "hmc", "rwm", "flip", "gibbs", "gwg"} or callable
        Transition at each rung; as :func:`annealed_importance_sampling`.
    n_steps, n_leapfrog, n_flips, blocks
        Transitions per rung, leapfrog steps (HMC), entries flipped per proposal, and the Gibbs
        blocks; as :func:`annealed_importance_sampling`.
    reference : "auto", "prior", "uniform", "student_t", "normal" or Reference
        ``p0``; as :func:`annealed_importance_sampling`.
    idata, random_seed, progressbar, **sampling
        Posterior draws (for ``reference="auto"`` on continuous models and for fitted
        references), seed, progress bars, and NUTS options (``draws``, ``tune``, ``chains``,
        ``sample_kwargs``).

    Returns
    -------
    Evidence
        ``log_weights`` group: the AIS chains' final log weights; ``sample_stats``: per-rung
        acceptance and non-finite rejections. Diagnostics include ``version``, ``n_chains``,
        ``n_rungs`` and ``min_gamma`` (binary) or ``n_iter`` (multinomial).
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
        target, estimate, "ads", {"log_weight": (("ais_chain",), run.log_weights)}, stats,
        warnings=_flag([*setup.messages, *se_messages(estimate)]),
    )  # fmt: skip


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
    result = _tempered_run(
        setup, rng, n_chains=n_chains, n_sweeps=n_sweeps, n_steps=n_steps, log_r=log_r,
        n_init_sweeps=n_init_sweeps, max_init_iterations=max_init_iterations, init_tol=init_tol,
        record=record, progressbar=progressbar, runs=_runs,
    )  # fmt: skip
    run, history = result.run, result.history
    diagnostics = _common_diagnostics(setup, run.n_evaluations, run.nonfinite)
    diagnostics["n_init_iterations"] = len(history)
    diagnostics["init_max_abs_r_minus_c"] = history[-1] if history else np.nan
    diagnostics["interrupted"] = bool(run.interrupted)
    diagnostics["n_reference_draws_outside_support"] = result.n_outside_support
    messages = [*setup.messages, *result.messages, *_occupancy_messages(run)]
    return target, setup, result, diagnostics, messages


# A rung visited less than this fraction of its target r_k is flagged (the RTS runs of issue 13
# that were off by 50 to 86 nats had min_k c_k / r_k = 0.07 to 0.34).
MIN_OCCUPANCY_RATIO = 0.5


def _occupancy_messages(run: TemperedRun) -> list[str]:
    c_hat = run.c_sum.sum(axis=0) / run.n_iterations.sum()
    ratio = c_hat / normalized_weights(run.log_r)
    worst = int(np.argmin(ratio))
    if not ratio[worst] < MIN_OCCUPANCY_RATIO:
        return []
    return [
        f"The tempered chains occupy rung {worst} (beta = {run.betas[worst]:.3g}) only "
        f"{ratio[worst]:.2f} times as often as its target r_k (below {MIN_OCCUPANCY_RATIO}): they "
        f"rarely cross that part of the ladder, so the estimates of this run (RTS, TI, MBAR) and "
        f"their SEs are unreliable. Use more rungs there, more initial iterations, or a reference "
        f"closer to the posterior."
    ]


def _outside_support_message(result: _TemperedResult) -> list[str]:
    """TI's integrand E_0[Delta] is -inf when p0 has mass where f has none."""
    if not result.n_outside_support:
        return []
    return [
        f"{result.n_outside_support} of {result.n_start} reference draws lie where the target's "
        f"density is zero (Delta = -inf): E_beta[Delta] jumps at beta = 0 and TI misses the "
        f"term log P_p0(f > 0), so its log Z is too high. Use RTS or MBAR (they include it), or a "
        f"reference inside the target's support."
    ]


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
    model : pymc.Model, optional
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
    target, setup, result, diagnostics, messages = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=False,
    )  # fmt: skip
    run = result.run
    estimate = rts_core(run.c_sum, run.n_iterations, run.log_r, run.log_zhat)
    counts = rts_core(run.count, run.n_iterations, run.log_r, run.log_zhat, pseudo_count=0.1)
    estimate.diagnostics.update(diagnostics)
    estimate.diagnostics.update(log_z_count=counts.log_z, se_count=counts.se)
    return _evidence(
        target, estimate, "rts", {}, _tempered_stats(setup, run),
        warnings=_flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip


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

    Parameters
    ----------
    model : pymc.Model, optional
    variant : {"rb", "trapezoid", "riemann"}
        Which estimate of ``E_beta[Delta]`` and quadrature rule give the result.
    corrected : bool
        Add the Euler-Maclaurin correction to the trapezoid variants (``"rb"`` and
        ``"trapezoid"``); ``"riemann"`` has none.
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
        Diagnostics include ``variant``, ``corrected``, ``n_empty_rungs`` and ``log_z_rb``,
        ``log_z_rb_corrected``, ``log_z_trapezoid``, ``log_z_trapezoid_corrected``,
        ``log_z_riemann``; ``sample_stats`` holds, as for :func:`rao_blackwellized_tempered_sampling`,
        per-rung occupancy ``c_k`` and ``prior_r``, acceptance, and the ``beta`` transition
        matrix.
        Its ``warnings`` also name reference draws outside the target's support and rungs
        without draws.
    """
    if variant not in TI_VARIANTS:
        raise EvidenceInputError(
            f"Requested variant {variant!r} but it must be one of {list(TI_VARIANTS)}."
        )
    target, setup, result, diagnostics, messages = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=False,
    )  # fmt: skip
    run = result.run
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
    for name, value in results.items():
        estimate.diagnostics[f"log_z_{name}"] = value.log_z
    messages += _outside_support_message(result)
    n_empty = estimate.diagnostics["n_empty_rungs"]
    if n_empty:
        messages.append(
            f"{n_empty} of {setup.betas.size} rungs have no draws in this TI variant "
            f"({variant!r}); their E_beta[Delta] is interpolated linearly in beta, an error the "
            f"SE does not include. Use variant='rb' (every draw counts at every rung) or a "
            f"longer run."
        )
    return _evidence(
        target, estimate, "ti", {}, _tempered_stats(setup, run),
        warnings=_flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip


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
    then maximizes eq. (18), a convex problem in ``log Z_k``, by Newton's method started at the
    RTS estimate (:func:`~pm_evidence.estimators.multistate.solve_multistate`, whose sums over
    draws cost about as much as a few sweeps). The SE is the chain-clustered sandwich. Rungs the
    chains never visited are left out, with a warning. No definite bias direction. Options as
    :func:`rao_blackwellized_tempered_sampling`.

    Parameters
    ----------
    model : pymc.Model, optional
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
        Diagnostics include ``n_draws``, ``n_iter``, ``n_dropped_rungs`` and
        ``first_dropped_rung`` (-1 when none); ``sample_stats`` holds, as for :func:`rao_blackwellized_tempered_sampling`,
        per-rung occupancy ``c_k`` and ``prior_r``, acceptance, and the ``beta`` transition
        matrix.
    """
    target, setup, result, diagnostics, messages = _tempered_common(
        model, random_seed=random_seed, reference=reference, ladder=ladder, n_rungs=n_rungs,
        beta_min=beta_min, kernel=kernel, n_leapfrog=n_leapfrog, n_flips=n_flips, blocks=blocks, idata=idata,
        sampling=sampling, progressbar=progressbar, _runs=_runs, n_chains=n_chains,
        n_sweeps=n_sweeps, n_steps=n_steps, prior_r=prior_r, n_init_sweeps=n_init_sweeps,
        max_init_iterations=max_init_iterations, init_tol=init_tol, record=True,
    )  # fmt: skip
    run = result.run
    c_hat = run.c_sum.sum(axis=0) / run.n_iterations.sum()
    estimate = mbar_core(
        run.delta_draws, run.rung_draws, setup.betas, unit=run.unit_of_chain_draw,
        log_z0=rts_log_z(c_hat, run.log_r, run.log_zhat),
    )  # fmt: skip
    estimate.diagnostics.update(diagnostics)
    dropped = estimate.diagnostics["n_dropped_rungs"]
    if dropped:
        messages.append(
            f"{dropped} of {setup.betas.size} rungs have no draws (e.g. rung "
            f"{estimate.diagnostics['first_dropped_rung']}); MBAR used the other rungs only. It "
            f"stays consistent, but the tempered chains left a gap in the ladder, so check the "
            f"occupancy (sample_stats) and compare with RTS."
        )
    return _evidence(
        target, estimate, "mbar", {}, _tempered_stats(setup, run),
        warnings=_flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip
