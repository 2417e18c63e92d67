"""Draws and weights shared by the estimators on posterior draws: posterior draws (from
``idata`` or NUTS), their halves, the symmetry step, the fitted reference and the log weights
``log f - log p0`` (seed 000 §2), and the reference draws' weights."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pymc.exceptions import SamplingError

from pm_evidence.core.exceptions import EvidenceInputError, NonFiniteLogDensityError
from pm_evidence.core.options import PosteriorOptions  # noqa: F401 (moved there; old imports)
from pm_evidence.core.progress import pymc_sample
from pm_evidence.core.utils import spawn_seed
from pm_evidence.estimators.messages import (
    draws_ess_messages,
    posterior_messages,
)
from pm_evidence.model.batched_hmc import (
    START_CANDIDATES,
    BatchedHMCSettings,
    finite_prior_points,
    sample_batched_hmc,
)
from pm_evidence.model.log_density import LogDensity
from pm_evidence.model.maps import posterior_dataset
from pm_evidence.model.model_checks import nan_data_names
from pm_evidence.model.modes import (
    INVARIANCE_RTOL,
    SymmetryDecision,
    SymmetrySearch,
    find_symmetry,
    plan_symmetry,
    spread_points,
)
from pm_evidence.references import (
    BOUNDED_REFERENCE_NAMES,
    Reference,
    SymmetrizedReference,
    Warp3Reference,
    fit_reference,
)

__all__ = [
    "BALANCING_SE",
    "BATCHED_DRAWS_MAX_DIM",
    "MAX_BALANCING_FACTOR",
    "MAX_REFERENCE_NUMBERS",
    "REFERENCE_DRAWS_PER_POSTERIOR_DRAW",
    "PosteriorPlan",
    "balanced_reference_draws",
    "check_draws_match_model",
    "check_reference_covers_support",
    "check_reference_log_weights",
    "default_reference_draws",
    "draws_sampler",
    "draws_source_messages",
    "finite_start_points",
    "fit_and_weigh",
    "log_density_at_target_draws",
    "log_weights",
    "posterior_draws",
    "posterior_plan",
    "reference_log_weights",
    "reference_needs_draws",
    "sampled_posterior",
    "sampling_options",
    "split_halves",
    "stored_log_density",
    "symmetric_reference",
    "symmetry_diagnostics",
    "symmetry_step",
    "target_log_weights",
]


@dataclass(frozen=True, eq=False)
class PosteriorPlan:
    """The posterior draws every estimator on posterior draws shares, and what depends on them
    alone: the counterpart of :class:`~pm_evidence.PathPlan` for the methods of the
    ``"posterior"`` family (:mod:`pm_evidence.registry`).

    Made once by :func:`pm_evidence.make_posterior_plan` (``marginal_likelihood`` does so for
    a list of methods); pass it as ``idata=`` to any of them. What each method decides on top of it (its
    symmetry decision, which depends on its reference and ``symmetrize``; the halves of the
    draws; its reference) is its own, and returned, never written into the plan.

    Attributes
    ----------
    target : LogDensity
        The model's adapter the draws belong to.
    draws : numpy.ndarray
        Flat unconstrained posterior draws ``(chain, draw, dim)`` (from ``idata`` or NUTS).
    search : SymmetrySearch (of pm_evidence.model.modes)
        The relabelling symmetry of the posterior found at these draws
        (``pm_evidence.model.modes.find_symmetry``; deterministic given the draws).
    messages : tuple of str
        Warnings about where the draws came from (``draws_source_messages``), for every
        result built on them.
    facts : dict
        How the draws were made (``draws_*`` diagnostics of
        :func:`~pm_evidence.model.draws.sampled_posterior`), for
        every result built on them.
    """

    target: LogDensity
    draws: np.ndarray
    search: SymmetrySearch
    messages: tuple[str, ...] = ()
    facts: dict = field(default_factory=dict)


def posterior_plan(
    target: LogDensity, idata=None, *, rng: np.random.Generator, **sampling
) -> PosteriorPlan:
    """Posterior draws (:func:`posterior_draws`: from ``idata``, checked against the model's
    data, or from NUTS with ``rng``) and the symmetry search at them, made once.

    Parameters
    ----------
    target : LogDensity
    idata : xarray.DataTree, xarray.Dataset, numpy.ndarray or PosteriorPlan, optional
        As :func:`posterior_draws` (a plan is returned as it is).
    rng : numpy.random.Generator
        The ``"posterior"`` stage stream (NUTS's seed).
    **sampling
        NUTS options of :func:`posterior_draws` (``draws``, ``tune``, ``chains``,
        ``progressbar``, ``sample_kwargs``), when it draws.

    Returns
    -------
    PosteriorPlan
    """
    if isinstance(idata, PosteriorPlan):
        return _checked_plan(target, idata)
    x, facts = sampled_posterior(target, idata, rng=rng, **sampling)
    messages = tuple(draws_source_messages(target, idata))
    return PosteriorPlan(target, x, find_symmetry(target, spread_points(x)), messages, facts)


def _checked_plan(target: LogDensity, plan: PosteriorPlan) -> PosteriorPlan:
    if plan.target is not target:
        raise EvidenceInputError(
            "This PosteriorPlan was made for another model (or another adapter of it): make "
            "one with pm_evidence.make_posterior_plan(model) for the model you pass."
        )
    return plan


# Models of at most this many unconstrained parameters draw from the posterior with batched
# HMC (pm_evidence.model.batched_hmc) unless PyMC's options are given: on small models PyMC's
# per-step loop is most of a default call (measured: docs/benchmarks.rst, Latency of a default
# call). Up to a few hundred parameters batched HMC's draws are as good and no slower; at a
# thousand, the largest of its many split R-hats flags results that NUTS's draws do not
# (benchmarks/draws_bound.py; docs/benchmarks.rst). Above this bound PyMC's NUTS draws, on a
# CPU only: on an accelerator PyMC's NUTS would still run on the CPU, one chain per core, while
# batched HMC moves 16 times the chains on the device (256 chains; a 1,002-parameter hierarchy
# right and reliable with them, docs/benchmarks.rst).
BATCHED_DRAWS_MAX_DIM = 250


def draws_sampler(target: LogDensity, sample_kwargs: dict | None) -> str:
    """``"batched_hmc"`` or ``"pymc_nuts"``: what draws the posterior of ``target`` when no
    ``idata`` is given. PyMC's NUTS where ``sample_kwargs`` is given (options of
    ``pm.sample``, e.g. ``{"nuts_sampler": "nutpie"}``, or ``{}`` for PyMC's defaults) or,
    on a CPU, the model has more than ``BATCHED_DRAWS_MAX_DIM`` parameters; batched HMC
    otherwise (on an accelerator at every size)."""
    if sample_kwargs is not None:
        return "pymc_nuts"
    if target.dim > BATCHED_DRAWS_MAX_DIM and not target.backend.on_accelerator:
        return "pymc_nuts"
    return "batched_hmc"


def posterior_draws(target: LogDensity, idata=None, *, rng: np.random.Generator, **sampling):
    """Flat unconstrained posterior draws ``(chain, draw, dim)``: :func:`~pm_evidence.model.draws.sampled_posterior`
    without its facts."""
    return sampled_posterior(target, idata, rng=rng, **sampling)[0]


def sampled_posterior(
    target: LogDensity,
    idata=None,
    *,
    rng: np.random.Generator,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    progressbar: bool = True,
    sample_kwargs: dict | None = None,
    starts: np.ndarray | None = None,
) -> tuple[np.ndarray, dict]:
    """Flat unconstrained posterior draws ``(chain, draw, dim)``, from ``idata`` or drawn,
    and how they were made (``draws_*`` diagnostics for the result).

    ``idata`` may be a DataTree/Dataset of named draws, an array of flat draws, or a
    :class:`PosteriorPlan` (its draws). Without it, :func:`draws_sampler` chooses: batched
    HMC (:func:`~pm_evidence.model.batched_hmc.sample_batched_hmc`; ``draws``, ``tune`` and
    ``chains`` override :meth:`~pm_evidence.model.batched_hmc.BatchedHMCSettings.sized` for the
    model's device, and
    ``draws`` given are exactly the draws made, never extended;
    ``starts``, its chains' starting points), or PyMC's NUTS (``pm.sample``: 1,000 draws and
    tuning steps of 4 chains unless given).
    """
    if isinstance(idata, PosteriorPlan):
        plan = _checked_plan(target, idata)
        return plan.draws, plan.facts
    facts = {"draws_sampler": "idata (given)"}
    if idata is None and draws_sampler(target, sample_kwargs) == "batched_hmc":
        given = {"draws": draws, "tune": tune, "chains": chains}
        if draws is not None:  # the draws asked for, not extended where R-hat is a little high
            given["max_extensions"] = 0
        settings = BatchedHMCSettings.sized(
            target.backend.width, **{k: v for k, v in given.items() if v is not None}
        )
        x, stats = sample_batched_hmc(target, rng, settings, progressbar=progressbar, starts=starts)
        facts = stats.diagnostics()
        facts["draws_starts"] = "PyMC's initial point, jittered" if starts is None else "given"
        return x, facts
    if idata is None:
        target.require_continuous("NUTS posterior sampling")
        draws, tune, chains = draws or 1000, 1000 if tune is None else tune, chains or 4
        # PyMC's NUTS unless sample_kwargs names another: pm.sample picks nutpie by itself
        # when it is installed, and the draws (so the estimate) would depend on what else is
        # installed
        kwargs = {
            "compute_convergence_checks": False, "nuts_sampler": "pymc", **(sample_kwargs or {})
        }  # fmt: skip
        sample = functools.partial(
            pymc_sample, draws=draws, tune=tune, chains=chains, model=target.model,
            random_seed=spawn_seed(rng), progressbar=progressbar,
        )  # fmt: skip
        try:
            idata = sample(**kwargs)
        except SamplingError as err:
            if "initvals" in kwargs or "Initial evaluation" not in str(err):
                raise
            # PyMC's start (the prior's central values, jittered) has zero density: start
            # every chain at a prior draw of finite density instead (tuning forgets the start)
            idata = sample(**kwargs, initvals=finite_start_points(target, rng, chains, err))
        facts = {
            "draws_sampler": f"pm.sample ({kwargs['nuts_sampler']})", "draws_chains": chains,
            "draws_per_chain": draws, "draws_tune": tune,
        }  # fmt: skip
    if isinstance(idata, np.ndarray):  # flat unconstrained draws, already mapped
        x = idata
        if x.ndim != 3 or x.shape[-1] != target.dim:
            raise EvidenceInputError(
                f"Flat posterior draws must have shape (chain, draw, {target.dim}), got {x.shape}."
            )
    else:
        x = target.posterior_to_unconstrained(idata)
        check_draws_match_model(target, idata, x)
    if x.shape[1] < 4:
        raise EvidenceInputError(
            f"Need at least 4 draws per chain, got {x.shape[1]}. Draw more posterior samples."
        )
    return x, facts


# The draws of idata checked against the model's log density (check_draws_match_model): this
# many, spread evenly over chains and draws; one batched evaluation, well under 1% of a call.
LP_CHECK_DRAWS = 64


# Where each sampler stores the model's log density (unconstrained, with the Jacobian) at every
# draw, by the posterior's ``inference_library`` attribute: (sample_stats variable, sign).
# pymc: ``lp``; nutpie (pm.sample(nuts_sampler="nutpie")): ``logp`` (equal to
# LogDensity.log_density at its draws to rounding; measured: docs/benchmarks.rst, Measurements
# behind the defaults); blackjax through pm.sample: ``lp``
# (state.logdensity); numpyro through pm.sample: ``lp`` holding numpyro's potential energy,
# the NEGATIVE log density (pymc/sampling/jax.py, _numpyro_stats_to_dict renames
# potential_energy to lp).
LOG_DENSITY_STATS = {
    "pymc": ("lp", 1.0),
    "nutpie": ("logp", 1.0),
    "blackjax": ("lp", 1.0),
    "numpyro": ("lp", -1.0),
}
# Draws of another or no named sampler: the first of these that sample_stats holds.
DEFAULT_LOG_DENSITY_STATS = ("lp", "logp")


def _groups(idata):
    """``(posterior attrs, sample_stats Dataset or None)`` of a DataTree or InferenceData."""
    children = getattr(idata, "children", None)
    if children is not None:
        stats = children["sample_stats"].to_dataset() if "sample_stats" in children else None
        posterior = children["posterior"] if "posterior" in children else idata
    else:
        stats = getattr(idata, "sample_stats", None)
        posterior = getattr(idata, "posterior", idata)
    return dict(getattr(posterior, "attrs", {}) or {}), stats


def stored_log_density(idata) -> tuple[str, np.ndarray] | None:
    """The log density the sampler stored with the draws of ``idata``, ``(chain, draw)``, and
    where it was read (e.g. ``"sample_stats.logp (nutpie)"``); ``None`` where it stored none.

    Read by the sampler that made the draws (the posterior's ``inference_library``
    attribute): ``LOG_DENSITY_STATS`` names each one's variable and sign (numpyro's, through
    ``pm.sample``, is the negative log density). Draws of another sampler or without the
    attribute: the first of ``DEFAULT_LOG_DENSITY_STATS`` (``lp``, PyMC's; ``logp``,
    nutpie's) that ``sample_stats`` holds.
    """
    attrs, stats = _groups(idata)
    if stats is None:
        return None
    library = str(attrs.get("inference_library", ""))
    if library in LOG_DENSITY_STATS:
        candidates = [LOG_DENSITY_STATS[library]]
    else:
        candidates = [(name, 1.0) for name in DEFAULT_LOG_DENSITY_STATS]
    for name, sign in candidates:
        if name in stats.data_vars:
            values = stats[name].transpose("chain", "draw").to_numpy().astype(float)
            where = f"sample_stats.{name}" + (f" ({library})" if library else "")
            return (f"minus {where}" if sign < 0 else where), sign * values
    return None


def _extra_variables(target: LogDensity, idata) -> list[str]:
    """Variables of ``idata``'s posterior that the model does not have (by name)."""
    names = set(target.model.named_vars)
    return sorted(str(v) for v in posterior_dataset(idata).data_vars if str(v) not in names)


def lp_tolerance(lp: np.ndarray) -> np.ndarray:
    """What two evaluations of one log density may differ by through rounding alone:
    ``1e-6 (1 + |lp|)`` (float64 sums of many terms, the round trip to the unconstrained space
    near a bound), or ``1e-3 (1 + |lp|)`` for a float32 model."""
    import pytensor

    relative = 1e-3 if pytensor.config.floatX == "float32" else 1e-6
    return relative * (1.0 + np.abs(lp))


def check_draws_match_model(target: LogDensity, idata, x: np.ndarray) -> None:
    """Raise where posterior draws were sampled from another model than ``target``'s.

    ``pm.sample`` stores the model's log density (unconstrained, with the Jacobian) at every
    draw in ``sample_stats.lp`` (nutpie in ``sample_stats.logp``: :func:`stored_log_density`
    reads each sampler's). It is recomputed at ``LP_CHECK_DRAWS`` draws spread over
    the chains; the draws are another model's where most of them differ by more than rounding
    (``lp_tolerance``). Draws of a model with another prior but the same names and data
    pass the observed-data check (``model.fingerprint``), yet every estimate built on them is
    off by many of its own SEs; this check catches them. Draws without a stored log density,
    or with one of another shape than the draws (thinned afterwards), cannot be checked:
    ``draws_source_messages`` says so on the result.

    Parameters
    ----------
    target : LogDensity
    idata : xarray.DataTree or xarray.Dataset
        What the draws ``x`` were read from.
    x : numpy.ndarray
        The draws, flat and unconstrained ``(chain, draw, dim)``.

    Raises
    ------
    EvidenceInputError
        Naming how many checked draws differ, by how much, the variables of ``idata`` the model
        lacks, and the fix.
    """
    stored_lp = stored_log_density(idata)
    if stored_lp is None:
        return
    where, lp = stored_lp
    if lp.shape != x.shape[:2]:
        return  # draws_source_messages says so on the result
    flat_lp, flat_x = lp.reshape(-1), x.reshape(-1, x.shape[-1])
    index = np.unique(np.linspace(0, flat_lp.size - 1, LP_CHECK_DRAWS).round().astype(int))
    stored, ours = flat_lp[index], target.pymc_log_density(flat_x[index])
    differ = ~(np.abs(stored - ours) <= lp_tolerance(stored))
    if differ.mean() <= 0.5:
        return
    gap = np.where(np.isfinite(stored - ours), stored - ours, np.nan)
    extra = _extra_variables(target, idata)
    extra_text = f" idata holds variables this model lacks: {extra}." if extra else ""
    raise EvidenceInputError(
        f"The posterior draws in idata were sampled from another model: the log density "
        f"the sampler stored with them ({where}) differs from this model's at "
        f"{int(differ.sum())} of {differ.size} draws checked (idata minus model: median "
        f"{np.nanmedian(gap):+.4g}, from {np.nanmin(gap):+.4g} to {np.nanmax(gap):+.4g} "
        f"nats), though their names and data agree.{extra_text} A prior or likelihood that "
        f"differs makes every estimate built on these draws off by many standard errors. "
        f"Sample this model (pm.sample() inside `with model:`), or pass no idata and "
        f"pm_evidence draws the posterior itself."
    )


def draws_source_messages(target: LogDensity, idata) -> list[str]:
    """Warnings about where posterior draws given as ``idata`` come from: draws without
    ``sample_stats.lp`` could not be checked against the model
    (:func:`check_draws_match_model`), and the variables they hold that the model lacks.
    Nothing for draws pm_evidence sampled itself (``idata=None``) or flat arrays; a
    :class:`PosteriorPlan` carries the messages of the draws it was made from."""
    if isinstance(idata, PosteriorPlan):
        return list(idata.messages)
    if idata is None or isinstance(idata, np.ndarray):
        return []
    stored = stored_log_density(idata)
    if stored is not None:
        posterior = posterior_dataset(idata)
        shape = (posterior.sizes["chain"], posterior.sizes["draw"])
        if stored[1].shape == shape:
            return []
        return [
            f"The posterior draws in idata could not be checked against this model: the log "
            f"density stored with them ({stored[0]}) has (chain, draw) = {stored[1].shape}, "
            f"the draws {shape} (thinned or cut after sampling?), so draws of another model "
            f"with the same names and data would go unnoticed and give a wrong log Z. Pass the "
            f"whole DataTree that the sampler returned, or cut sample_stats as the posterior."
        ]
    extra = _extra_variables(target, idata)
    extra_text = (
        f" They also hold variables this model lacks ({extra}): were they sampled from "
        f"another model?"
        if extra
        else ""
    )
    return [
        f"The posterior draws in idata could not be checked against this model: they carry "
        f"no log density (sample_stats.lp, which pm.sample stores, or nutpie's "
        f"sample_stats.logp), so draws of another model with the same names and data would "
        f"go unnoticed and give a wrong log Z.{extra_text} Pass the whole DataTree that "
        f"pm.sample() returned for this model."
    ]


def finite_start_points(target: LogDensity, rng, chains: int, err: Exception) -> list[dict]:
    """One starting point per chain of NUTS, each a prior draw where the model's log-density
    is finite, for a model whose initial point PyMC found at zero density (``err``).

    Raises
    ------
    EvidenceInputError
        Where data hold NaN (``nan_data_names``), or
        no prior draw of ``START_CANDIDATES`` has a finite log-density: naming PyMC's
        report of which variables' log-densities are not finite and the fixes.
    """
    try:
        finite = finite_prior_points(target, rng)
    except EvidenceInputError as nan_data:  # NaN in the data: no point is finite
        raise nan_data from err
    if finite.shape[0] == 0:
        raise EvidenceInputError(
            f"NUTS cannot start: the model's log-density is not finite at PyMC's initial "
            f"point, nor at any of {START_CANDIDATES} prior draws. PyMC reports: {err} Give "
            f"NUTS a valid start, sample_kwargs={{'initvals': {{...}}}} (values inside the "
            f"support the data allow, e.g. an upper bound above the largest observation), or "
            f"use a method that needs no NUTS: method='ais', reference='prior'."
        ) from err
    points = finite[np.arange(chains) % finite.shape[0]]
    values = target.to_constrained(points)
    return [{name: value[i] for name, value in values.items()} for i in range(chains)]


def split_halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First half of every chain (to fit a reference) and second half (to estimate)."""
    half = x.shape[1] // 2
    return x[:, :half], x[:, half:]


def log_density_at_target_draws(target: LogDensity, x: np.ndarray) -> np.ndarray:
    """``log f`` at posterior draws; a non-finite value is an error, reported with the point."""
    log_f = target.log_density(x)
    bad = ~np.isfinite(log_f)
    if np.any(bad):
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        point = {k: np.round(v, 6).tolist() for k, v in target.to_constrained(x[index]).items()}
        raise NonFiniteLogDensityError(
            f"The model's log-density is not finite at {int(bad.sum())} of {bad.size} posterior "
            f"draws (first at (chain, draw) = {index}: {point}, log f = {log_f[index]}). "
            f"Posterior draws must have positive density: check the model (e.g. bounds, "
            f"overflow in the likelihood) or that idata comes from this model."
        )
    return log_f


def log_weights(
    target: LogDensity, x: np.ndarray, reference: Reference, log_f: np.ndarray | None = None
) -> np.ndarray:
    """``log f(x) - log p0(x)`` (for warp-3: the symmetrized target ``f_sym``).

    ``log_f`` (``log f`` at ``x``) is used when already computed.
    """
    log_f = target.log_density(x) if log_f is None else log_f
    if isinstance(reference, Warp3Reference):
        log_f = np.logaddexp(log_f, target.log_density(reference.reflect(x))) - np.log(2.0)
    return log_f - reference.logpdf(x)


def target_log_weights(
    target: LogDensity, x: np.ndarray, reference: Reference, log_f: np.ndarray
) -> tuple[np.ndarray, int]:
    """:func:`log_weights` at posterior draws ``x`` (``log f`` there, finite, given), and how
    many of the reflected points of warp-3 had a log density of NaN or ``+inf``.

    A posterior draw's reflection ``2 mean - x`` is not a draw of the target: it may lie at the
    edge of the support, where the model's log density is NaN, or far in a tail, where it
    overflows (a rate ``e^{mu + tau z}`` of a Poisson count of zero: ``0 log inf - inf``). There
    ``f`` is zero, as everywhere the estimators meet such points
    (``pm_evidence.estimators.base.as_log_weights``), so ``f_sym = f(x) / 2``: one such
    reflection in 4,096 made bridge fail on a log-normal hierarchy and sent ``auto`` to AIS at
    full precision (docs/benchmarks.rst, "Centered hierarchies (funnels)"). The count goes on
    the result (``n_nonfinite_reflections``), without a warning, since it does not bias
    ``log Z``: with ``f`` taken as zero on the set ``B`` where its log density is NaN or
    ``+inf``, the symmetrized target's integral is ``Z - P(B) Z / 2``, and the posterior draws,
    every one of them outside ``B`` (their log density is finite), bound the posterior mass
    ``P(B)`` by about ``3 / N`` (no hits in ``N`` draws, 95 %): at most ``1.5 / N`` relative,
    0.0004 nats at 4,096 draws. A large count says only that warp-3 symmetrizes the posterior
    into empty space, which costs precision, and bridge's SE shows that."""
    if not isinstance(reference, Warp3Reference):
        return log_weights(target, x, reference, log_f=log_f), 0
    reflected = target.log_density(reference.reflect(x))
    bad = np.isnan(reflected) | (reflected == np.inf)
    log_f_sym = np.logaddexp(log_f, np.where(bad, -np.inf, reflected)) - np.log(2.0)
    return log_f_sym - reference.logpdf(x), int(bad.sum())


def sampling_options(draws, tune, chains, progressbar, sample_kwargs) -> dict:
    """The NUTS options every public estimator forwards to :func:`posterior_draws`."""
    return {
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "progressbar": progressbar,
        "sample_kwargs": sample_kwargs,
    }


def symmetric_reference(reference: Reference, decision: SymmetryDecision) -> Reference:
    """The reference averaged over the decision's group (``SymmetrizedReference``), or as
    given when the decision has no group or the reference is already invariant under it (a prior
    that is itself symmetric). Pure: what was done is read back by :func:`symmetry_diagnostics`."""
    group = decision.group
    if group is None:
        return reference
    points = spread_points(decision.draws)
    log_q = reference.logpdf(points)
    images = np.stack([reference.logpdf(action(points)) for action in group.actions[1:]])
    if np.allclose(images, log_q, rtol=INVARIANCE_RTOL["float64"], atol=0.0):
        return reference
    return SymmetrizedReference(reference, group.actions)


def symmetry_diagnostics(decision: SymmetryDecision, reference: Reference) -> dict:
    """The decision's symmetry diagnostics for the reference actually used (a new dict): where the
    decision has a group but :func:`symmetric_reference` left the reference as it was (already
    invariant), ``symmetrized`` is ``False`` and ``symmetry`` says why."""
    diagnostics = dict(decision.diagnostics)
    if decision.group is not None and not isinstance(reference, SymmetrizedReference):
        diagnostics["symmetrized"] = False
        diagnostics["symmetry"] += " (the reference is already invariant: left as it is)"
    return diagnostics


def symmetry_step(target, x: np.ndarray, reference, symmetrize, idata=None) -> SymmetryDecision:
    """``pm_evidence.model.modes.plan_symmetry`` for posterior draws ``x`` and a reference; when
    ``idata`` is a :class:`PosteriorPlan` its symmetry search is reused."""
    search = idata.search if isinstance(idata, PosteriorPlan) else None
    return plan_symmetry(target, x, symmetrize, warp3=reference == "warp3", search=search)


def fit_and_weigh(
    target: LogDensity,
    posterior_rng,
    idata,
    reference,
    sampling: dict,
    symmetrize="auto",
    choose_reference: Callable | None = None,
):
    """Posterior draws; a reference fitted to the first half of every chain; log weights
    ``log f - log p0`` at the second half, the draws every estimator is judged on.

    A symmetry of the posterior (label switching) is looked for first
    (``pm_evidence.model.modes.plan_symmetry``): when the draws miss mirror images they are
    relabelled into one and the reference is symmetrized over the group
    (:func:`symmetric_reference`), as ``symmetrize`` allows.

    ``choose_reference(fit_half, wrap) -> (reference, diagnostics)``, when given, replaces
    the fit by name (reverse IS's ``reference="auto"``); ``wrap`` is the symmetrization.

    Returns ``(est_half, reference, log_weights_target, messages, diagnostics)``: the
    warnings about the posterior draws (:func:`~pm_evidence.estimators.messages.posterior_messages`) and the symmetry
    diagnostics of the decision (and the chooser's, and how the draws were made:
    :func:`~pm_evidence.model.draws.sampled_posterior`).
    """
    x, facts = sampled_posterior(target, idata, rng=posterior_rng, **sampling)
    decision = symmetry_step(target, x, reference, symmetrize, idata)
    fit_half, est_half = split_halves(decision.draws)
    chosen = {}
    if choose_reference is None:
        ref = symmetric_reference(fit_reference(reference, target, fit_half), decision)
    else:
        ref, chosen = choose_reference(fit_half, lambda r: symmetric_reference(r, decision))
    diagnostics = {**symmetry_diagnostics(decision, ref), **chosen, **facts}
    log_f = log_density_at_target_draws(target, est_half)
    messages = posterior_messages(target, decision.draws, relabelled=decision.relabelled)
    messages += draws_source_messages(target, idata)
    messages += draws_ess_messages(target, decision.draws)
    messages += list(decision.messages)
    lw, n_nonfinite = target_log_weights(target, est_half, ref, log_f)
    if isinstance(ref, Warp3Reference):
        diagnostics["n_nonfinite_reflections"] = n_nonfinite
    return est_half, ref, lw, messages, diagnostics


REFERENCE_DRAWS_PER_POSTERIOR_DRAW = 16
MAX_REFERENCE_NUMBERS = 20_000_000
# Bridge sampling adds reference draws until its reference side of the error is no larger
# than its posterior side, up to this many times the default number, where its SE is above
# BALANCING_SE (balanced_reference_draws).
MAX_BALANCING_FACTOR = 16
BALANCING_SE = 0.005


def default_reference_draws(n_target: int, dim: int) -> int:
    r"""Reference draws of bridge and discriminance sampling for ``n_target`` posterior draws.

    The error of both is a sum of a posterior-side and a reference-side term (bridge:
    :func:`~pm_evidence.estimators.fruhwirth_schnatter_re2`, whose first term falls like
    ``1 / N_2``). Reference draws are i.i.d. and cost one batched evaluation of the model each;
    a posterior draw costs a whole NUTS trajectory. So the default takes
    ``REFERENCE_DRAWS_PER_POSTERIOR_DRAW`` (16) reference draws per posterior draw, capped at
    ``MAX_REFERENCE_NUMBERS / dim`` (memory), and never fewer than ``n_target`` (R's
    bridgesampling uses ``N_2 = N_1``): where the reference side dominates, the bridge SE
    falls markedly from ``N_2 = N_1`` to 16 times as many (measured: docs/benchmarks.rst,
    Measurements behind the defaults).
    """
    cap = MAX_REFERENCE_NUMBERS // max(int(dim), 1)
    return int(max(n_target, min(REFERENCE_DRAWS_PER_POSTERIOR_DRAW * n_target, cap)))


def balanced_reference_draws(
    n_reference: int, re2_reference: float, re2_target: float, dim: int
) -> int:
    r"""Reference draws that make bridge sampling's reference side of the error no larger than
    its posterior side.

    The relative mean-squared error is the sum of a reference side, which falls like
    ``1 / N_2``, and a posterior side (``re2_reference`` and ``re2_target``, the two terms of
    :func:`~pm_evidence.estimators.fruhwirth_schnatter_terms`). The posterior draws are given;
    the reference draws are i.i.d. and cost one batched evaluation each. So where the reference
    side is the larger and the SE ``sqrt(re2_reference + re2_target)`` is above
    ``BALANCING_SE`` (0.005, the precision AIS stops at by default), ``N_2`` grows to
    ``N_2 re2_reference / re2_target``, within ``MAX_BALANCING_FACTOR`` times ``n_reference``
    and ``MAX_REFERENCE_NUMBERS / dim`` (memory). More reference draws also shrink the
    posterior side (the optimal bridge leans on the larger sample).

    Balancing only above ``BALANCING_SE``: on small models where the reference side dominates,
    balancing cuts the spread of the estimate, but their SE is already below what a Bayes
    factor needs; on models with hundreds of parameters the posterior side is usually the
    larger (measured: docs/benchmarks.rst, Measurements behind the defaults).

    Returns
    -------
    int
        The total number of reference draws, at least ``n_reference``.
    """
    se = np.sqrt(re2_reference + re2_target)
    if not (re2_target > 0 and re2_reference > re2_target and se > BALANCING_SE):
        return n_reference
    cap = min(MAX_BALANCING_FACTOR * n_reference, MAX_REFERENCE_NUMBERS // max(int(dim), 1))
    wanted = int(np.ceil(n_reference * re2_reference / re2_target))
    return int(max(n_reference, min(wanted, cap)))


def reference_needs_draws(reference) -> bool:
    """Whether ``reference`` is fitted to posterior draws: every name but ``"prior"`` (and
    ``None``, a method's default fitted reference); a :class:`Reference` object is used as given."""
    return not (isinstance(reference, Reference) or reference == "prior")


def check_reference_covers_support(reference, method: str) -> None:
    """A bounded reference (``BOUNDED_REFERENCE_NAMES``) is an
    error for a method whose identity needs ``p0 > 0`` wherever the posterior is."""
    if isinstance(reference, str) and reference in BOUNDED_REFERENCE_NAMES:
        raise EvidenceInputError(
            f"{method} needs a reference that is positive wherever the posterior is; "
            f"reference={reference!r} has bounded support (it serves reverse importance "
            f"sampling). Use 'normal' or 'student_t'."
        )


def reference_log_weights(target, reference, rng, n):
    """``log f - log p0`` at ``n`` draws from ``reference`` (checked:
    :func:`check_reference_log_weights`)."""
    x0 = reference.sample(rng, n)
    lw = log_weights(target, x0, reference)
    nan_data = nan_data_names(target.model) if np.isnan(lw).all() else []
    if nan_data:
        raise NonFiniteLogDensityError(
            f"The log-density is NaN at every draw from the {reference.name} reference: the "
            f"model's data hold NaN outside its observed variables ({'; '.join(nan_data)}). "
            f"Drop or impute those rows."
        )
    return check_reference_log_weights(lw, reference)


def check_reference_log_weights(lw: np.ndarray, reference: Reference) -> np.ndarray:
    """``lw`` (log weights at draws from ``reference``), or an error where one is NaN or
    ``+inf`` (``-inf``, a draw outside the model's support, is allowed)."""
    if np.any(np.isnan(lw) | (lw == np.inf)):
        raise NonFiniteLogDensityError(
            f"The log-density is NaN or +inf at {int(np.sum(~np.isfinite(lw) & (lw != -np.inf)))}"
            f" of {lw.size} draws from the {reference.name} reference; the model evaluates badly "
            f"away from the posterior (check for overflow)."
        )
    return lw
