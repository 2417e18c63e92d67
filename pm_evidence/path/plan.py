r"""The plan of the path methods: reference ``p0``, kernel and pilot run, made once per model.

A :class:`PathPlan` is an explicit value that every path method shares. It holds the geometric
path ``f_beta = p0^(1 - beta) f^beta`` (seed 004 eq. (2)), the transition kernel, and the
:class:`~pm_evidence.tempering.pilot.Pilot` that measured the path (its thermodynamic length,
the kernel's step size along it, a first ``log Z_beta``). Runs take a plan
(:mod:`pm_evidence.path.runs`); the estimators are follow-ups on runs
(:mod:`pm_evidence.path.path_estimators`).

The default reference (:func:`~pm_evidence.path.plan.auto_reference`) is the best of the prior, a
normal and a Student-t fitted to NUTS draws; the default ladders are placed from the pilot at
equal thermodynamic length (:meth:`PathPlan.ladder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.options import PILOT_CHAINS, SAMPLE_KEYS, PathOptions
from pm_evidence.core.utils import (
    kish_ess,
    renamed_parameters,
    runs_with_one_blas_thread,
    stage_rngs,
)
from pm_evidence.estimators.messages import posterior_messages
from pm_evidence.model.draws import (
    check_reference_covers_support,
    draws_sampler,
    draws_source_messages,
    log_density_at_target_draws,
    posterior_draws,
    symmetric_reference,
    symmetry_diagnostics,
)
from pm_evidence.model.log_density import LogDensity, as_target
from pm_evidence.model.modes import plan_symmetry
from pm_evidence.references import (
    BernoulliProductReference,
    CategoricalProductReference,
    PriorReference,
    Reference,
    fit_reference,
)
from pm_evidence.tempering.blocks import gibbs_blocks
from pm_evidence.tempering.kernels import Kernel, make_kernel
from pm_evidence.tempering.ladders import LADDERS, Ladder, make_ladder
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.tempering.pilot import Pilot, ladder_from_pilot, run_pilot
from pm_evidence.tempering.samplers import sample_at_beta

__all__ = ["Ladder", "PathPlan", "auto_reference", "make_plan"]

# PyMC's NUTS for the plan (where it draws: pm_evidence.model.draws.draws_sampler): its draws
# only fit and choose the reference (the path methods are exact from any reference), so half of
# bridge sampling's 1000 tuning iterations per chain; as many kept draws, for the same R-hat
# check (with fewer it raised false alarms; measured: docs/benchmarks.rst, Measurements behind
# the defaults). Options given by name (draws=, tune=, chains=) replace these. Batched HMC
# keeps its own defaults, the draws the methods on posterior draws read.
PLAN_SAMPLING = {"draws": 1000, "tune": 500, "chains": 4}
LADDER_NAMES = ("adaptive", *LADDERS)


@dataclass(frozen=True)
class PathPlan:
    """Everything the path methods share: path, kernel, pilot, posterior draws (if any).

    Attributes
    ----------
    target : LogDensity
    path : GeometricPath
        ``p0`` and the model.
    kernel : Kernel
    pilot : Pilot
        The adaptive SMC pass that measured the path (:func:`~pm_evidence.tempering.pilot.run_pilot`).
    posterior : numpy.ndarray or None
        Flat posterior draws ``(chain, draw, dim)`` when drawn (NUTS, ``idata``, or for discrete
        models a burn-in of the path's kernel at ``beta = 1``).
    reference_reason : str
        Why this ``p0``.
    reference_diagnostics : dict
        The overlap measures compared by :func:`~pm_evidence.path.plan.auto_reference`.
    messages : tuple of str
        Warnings every result of this plan carries (R-hat of the NUTS draws); the model's own
        (an improper prior, no data) are added to every result by ``evidence.build_evidence``.
    n_setup_evaluations : int
        Log-density evaluations of the pilot (and of a discrete model's burn-in and the search
        for its Gibbs blocks).
    kernel_reason : str
        How the kernel was chosen (for Gibbs: its blocks and how they were found).
    """

    target: LogDensity
    path: GeometricPath
    kernel: Kernel
    pilot: Pilot
    posterior: np.ndarray | None = None
    reference_reason: str = ""
    reference_diagnostics: dict = field(default_factory=dict)
    messages: tuple[str, ...] = ()
    n_setup_evaluations: int = 0
    kernel_reason: str = ""

    @property
    def length(self) -> float:
        """Thermodynamic length ``L = int_0^1 sqrt(Var_beta[Delta]) d beta`` of the path."""
        return float(self.pilot.length[-1])

    def __repr__(self) -> str:
        """A few lines: the path, the kernel, the pilot's numbers, the posterior draws (no
        arrays: the dataclass's own repr printed every one, thousands of lines)."""
        return "\n".join(
            [f"PathPlan: dim {self.target.dim}", *_plan_lines(self)]
            + [f"  message: {m}" for m in self.messages]
        )

    @renamed_parameters(kind="ladder")
    def ladder(
        self, ladder: str | np.ndarray, n_rungs: int | None, beta_min: float, default_rungs: int
    ) -> Ladder:
        """The rungs of a run.

        ``ladder="adaptive"``: ``n_rungs`` (``default_rungs`` when None) at equal thermodynamic
        length apart (:func:`~pm_evidence.tempering.pilot.ladder_from_pilot`). A ladder name of
        :func:`~pm_evidence.tempering.ladders.make_ladder` or an array: those rungs, with the
        pilot's step size interpolated (in log) to them. The keyword was ``kind=`` before
        (deprecated: a ``FutureWarning``).
        """
        if isinstance(ladder, str) and ladder not in LADDER_NAMES:
            raise EvidenceInputError(
                f"Requested ladder {ladder!r} but it must be one of {list(LADDER_NAMES)} or an "
                f"array of inverse temperatures from 0 to 1."
            )
        if isinstance(ladder, str) and ladder == "adaptive":
            k = default_rungs if n_rungs is None else int(n_rungs)
            if not 2 <= k <= 10_000:
                raise EvidenceInputError(f"n_rungs must be between 2 and 10000, got {k}.")
            betas, step_size, log_z = ladder_from_pilot(self.pilot, k)
            how = (
                f"adaptive: {k} rungs at equal thermodynamic length (path length "
                f"{self.length:.3g}, measured by the pilot)"
            )
        else:
            k = default_rungs if n_rungs is None else n_rungs
            betas = make_ladder(ladder, k, beta_min=beta_min)
            step_size = np.exp(np.interp(betas, self.pilot.betas, self.pilot.log_step_size))
            log_z = np.interp(betas, self.pilot.betas, self.pilot.log_z)
            how = f"given: {ladder if isinstance(ladder, str) else 'array'} with {betas.size} rungs"
        if not self.kernel.adaptive:
            step_size = np.ones(betas.size)
        return Ladder(betas, step_size, log_z, how)


def _plan_sampling(target, sampling: dict) -> dict:
    """The plan's options of the posterior draws: ``PLAN_SAMPLING`` under those given, where
    PyMC's NUTS draws."""
    if draws_sampler(target, sampling.get("sample_kwargs")) == "pymc_nuts":
        return {**PLAN_SAMPLING, **sampling}
    return sampling


def _plan_lines(plan: PathPlan) -> list[str]:
    """The lines of a plan's repr after its title (also those of a run's repr)."""
    reference = getattr(plan.path.reference, "name", type(plan.path.reference).__name__)
    why = f" ({plan.reference_reason})" if plan.reference_reason else ""
    kernel = plan.kernel.name
    if plan.kernel_reason:
        reason = plan.kernel_reason
        kernel = reason if reason.startswith(kernel) else f"{kernel} ({reason})"
    pilot = plan.pilot
    posterior = "none" if plan.posterior is None else "x".join(str(n) for n in plan.posterior.shape)
    return [
        f"  reference: {reference}{why}",
        f"  kernel: {kernel}",
        f"  pilot: {pilot.betas.size} rungs, path length {plan.length:.4g}, "
        f"log Z {float(pilot.log_z[-1]):.6g}; {plan.n_setup_evaluations:,} setup evaluations",
        f"  posterior draws (chain x draw x dim): {posterior}",
    ]


# Coordinates of the overlap measure below, kept in the diagnostics.
_OVERLAP_KEYS = ("reference_ess_prior", "reference_ess_normal", "reference_ess_student_t")


def _held_out_overlap(name: str, target: LogDensity, flat: np.ndarray, log_f: np.ndarray) -> float:
    """The Kish ESS fraction of the reverse weights ``q / f`` of a candidate ``q`` fitted to
    one half of the draws, at the other half, averaged over the two halves (the first and the
    second half of the flattened draws: different chains).

    Judged at the draws it was fitted to, a candidate's overlap is optimistic by how much the
    fit adapted to them, which grows with the dimension: with a thousand parameters it can pick
    the worse candidate (measured: docs/benchmarks.rst, Measurements behind the defaults).
    """
    n = flat.shape[0]
    if n < 16:  # too few to split: judged at the draws it was fitted to
        q = fit_reference(name, target, flat)
        return kish_ess(q.logpdf(flat) - log_f) / n
    halves = (np.arange(n // 2), np.arange(n // 2, n))
    scores = []
    for fit_rows, judge_rows in (halves, halves[::-1]):
        q = fit_reference(name, target, flat[fit_rows])
        scores.append(kish_ess(q.logpdf(flat[judge_rows]) - log_f[judge_rows]) / judge_rows.size)
    return float(np.mean(scores))


def auto_reference(
    target: LogDensity, posterior: np.ndarray, *, via_gradient: bool = False
) -> tuple[Reference, str, dict]:
    r"""The default ``p0`` of the path methods for a continuous model: the prior, a normal or a
    Student-t fitted to posterior draws, whichever overlaps the posterior best.

    The overlap of a candidate ``p0`` with the posterior is the Kish effective sample size, as a
    fraction of the draws, of the reverse weights ``p0(x) / f(x)`` at the posterior draws
    ``x`` (the weights of reverse importance sampling, seed 000 §3; ``E_p[p0 / f] = 1 / Z``):
    near 1 when ``p0`` has the posterior's shape, near ``1/n`` when ``p0`` is much broader or
    elsewhere. For the prior the weights are ``1 / L(x)``; for the fitted candidates (matched to
    the draws' mean and covariance, as bridge sampling's ``fit_reference``: a normal, and a
    Student-t with 5 degrees of freedom) they are ``q(x) / f(x)``, each candidate fitted to one
    half of the draws and judged at the other (``_held_out_overlap``), the chosen one then
    fitted to all. All cost one evaluation of the model at the draws. The prior is kept when
    its overlap is at least the others': the path from it then is as short, and it also covers
    modes that the draws missed.

    The normal is a candidate because the Student-t's tails were too heavy for the paths of the
    benchmark models: a lower overlap, and a longer path, than the normal's.

    A defensive mixture ``w prior + (1 - w) t`` was tried as the alternative and rejected
    (biased RTS), because at ``beta = 0`` HMC cannot move between the prior's bulk and the
    narrow Student-t, so rung 0 is sampled without the prior's share ``w``. So was the Jeffreys
    divergence ``E_p[Delta] - E_p0[Delta]`` as the criterion (its square root bounds the
    thermodynamic length): it can prefer the prior, whose path is short but along which the
    chains mix far worse (one HMC transition per rung, identity mass matrix), so AIS and RTS
    end at their caps. (Measured: docs/benchmarks.rst, Measurements behind the defaults.)

    Parameters
    ----------
    target : LogDensity
        The model's adapter.
    posterior : numpy.ndarray
        Flat unconstrained posterior draws ``(chain, draw, dim)``.
    via_gradient : bool
        Evaluate the model by its value-and-gradient function, as the plan's path does when its
        kernel needs gradients (:meth:`~pm_evidence.LogDensity.evaluate`).

    Returns
    -------
    reference : Reference
        The chosen reference.
    reason : str
        A sentence saying why.
    diagnostics : dict
        The three overlap fractions (``reference_ess_prior``, NaN for an improper prior;
        ``reference_ess_normal``, ``reference_ess_student_t``).
    """
    flat = posterior.reshape(-1, target.dim)
    n = flat.shape[0]
    # as the plan's path evaluates it (GeometricPath.via_gradient)
    log_prior, log_lik = target.evaluate(flat, via_gradient=via_gradient)
    log_f = log_prior + log_lik
    if not np.all(np.isfinite(log_f)):
        log_density_at_target_draws(target, posterior)  # raises, naming the first bad draw
    names = ("normal", "student_t")
    ess_fitted = [_held_out_overlap(name, target, flat, log_f) for name in names]
    best = int(np.argmax(ess_fitted))
    chosen = fit_reference(names[best], target, flat)
    try:
        prior = PriorReference(target)
    except EvidenceInputError as err:
        reason = (
            f"{chosen.name} fitted to {n} posterior draws: the prior cannot be a reference ({err})"
        )
        return chosen, reason, dict(zip(_OVERLAP_KEYS, (np.nan, *ess_fitted), strict=True))
    ess_prior = kish_ess(-log_lik) / n
    diagnostics = dict(zip(_OVERLAP_KEYS, (ess_prior, *ess_fitted), strict=True))
    measure = (
        f"the Kish ESS of the reverse weights p0/f at the {n} posterior draws is "
        f"{ess_prior:.3g} of the draws for the prior, {ess_fitted[0]:.3g} for a normal and "
        f"{ess_fitted[1]:.3g} for a Student-t fitted to them (each fitted to one half and "
        f"judged at the other)"
    )
    if ess_prior >= ess_fitted[best]:
        reason = f"prior: {measure}; the prior overlaps the posterior at least as well"
        return prior, reason, diagnostics
    reason = f"{chosen.name}: {measure}; the fitted {chosen.name} overlaps it best"
    return chosen, reason, diagnostics


def _explicit_reference(target: LogDensity, reference):
    """The reference when it needs no posterior draws (a Reference, ``"prior"``,
    ``"uniform"``, or ``"auto"`` for a model with discrete variables), else ``None``."""
    if isinstance(reference, Reference):
        return reference
    if reference == "uniform":
        if target.binary_mask.all():
            return BernoulliProductReference(np.zeros(target.dim), name="uniform")
        if not target.finite_levels.all() or target.lowest_values.any():
            raise EvidenceInputError(
                "reference='uniform' is the uniform distribution over the values of finite "
                "discrete variables, for models whose free variables are all Bernoulli or "
                "Categorical. Use 'prior' or a fitted reference."
            )
        return CategoricalProductReference.uniform(target.finite_levels)
    if reference == "prior" or (reference == "auto" and target.has_discrete):
        return PriorReference(target)
    return None


def check_sampling_options(sampling: dict) -> None:
    """Refuse a NUTS option that is not one of ``SAMPLE_KEYS``, or a value ``pm.sample`` would
    refuse only after compiling (``draws``, ``tune``, ``chains`` integers; ``sample_kwargs`` a
    dict)."""
    unknown = set(sampling) - set(SAMPLE_KEYS)
    if unknown:
        raise EvidenceInputError(
            f"Unexpected options {sorted(unknown)}; the NUTS options are {list(SAMPLE_KEYS)}."
        )
    for name, least in (("draws", 4), ("tune", 0), ("chains", 1)):
        value = sampling.get(name, least)
        if name == "chains" and value is None:  # pm.sample's own default
            continue
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise EvidenceInputError(
                f"{name} must be an integer >= {least} (NUTS's {name}), got {value!r}."
            )
    if not isinstance(sampling.get("sample_kwargs") or {}, dict):
        raise EvidenceInputError(
            f"sample_kwargs must be a dict of pm.sample options, got "
            f"{type(sampling['sample_kwargs']).__name__}."
        )


@runs_with_one_blas_thread
def make_plan(
    model,
    options: PathOptions | None = None,
    *,
    idata=None,
    sampling: dict | None = None,
    need_posterior: bool = False,
    random_seed=None,
    rngs: dict | None = None,
    progressbar: bool = True,
    backend: str = "auto",
) -> PathPlan:
    """Build the plan: posterior draws where needed, the reference, the kernel, the pilot.

    Parameters
    ----------
    model : pymc.Model or LogDensity
    options : PathOptions, optional
    idata : xarray.DataTree or numpy.ndarray, optional
        Posterior draws (named, or flat ``(chain, draw, dim)``); drawn by NUTS when needed.
    sampling : dict, optional
        Options of the posterior draws (``draws``, ``tune``, ``chains``, ``sample_kwargs``);
        where PyMC's NUTS draws, defaults ``PLAN_SAMPLING`` (4 chains of 500 tuning and 1000
        kept iterations); batched HMC's own otherwise.
    need_posterior : bool
        Draw posterior draws even when the reference does not need them (RAISE starts from
        them). For models with discrete variables and no ``idata`` they come from the path's
        own kernel at ``beta = 1``: ``draws`` chains (default 1000) after ``tune`` transitions
        (default 500) from reference draws (seed 000 §6: "Gibbs sampling with 500 burn-in
        steps").
    random_seed : int or Generator, optional
        Used when ``rngs`` is not given (:func:`~pm_evidence.core.utils.stage_rngs`).
    rngs : dict, optional
        The stage generators; this uses ``"posterior"`` and ``"pilot"``.
    progressbar : bool
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions: ``"auto"`` JAX where JAX sees a GPU, else
        Numba (:mod:`pm_evidence.model.backend`).

    Returns
    -------
    PathPlan
    """
    options = options or PathOptions()
    sampling = dict(sampling or {})
    check_sampling_options(sampling)
    rngs = rngs if rngs is not None else stage_rngs(random_seed)
    target = as_target(model, backend)
    reference = options.reference
    check_reference_covers_support(reference, "The geometric path of the path methods")
    ref = _explicit_reference(target, reference)
    find_blocks = _finds_blocks(options, target)
    blocks = None if options.blocks is None or find_blocks else list(options.blocks)
    kernel = make_kernel(
        options.kernel, target, n_leapfrog=options.n_leapfrog, n_flips=options.n_flips,
        blocks=blocks,
    )  # fmt: skip
    # the plan's evaluations from the value-and-gradient function where its kernel compiles
    # that anyway (LogDensity.evaluate): one compile, not two; from the value-only one where a
    # point is costly (LogDensity.values_apart)
    via_gradient = bool(
        kernel.needs_grad and not target.discrete_mask.all() and not target.values_apart
    )
    posterior, reason, overlap, messages = None, "", {}, []
    if ref is None or (need_posterior and (idata is not None or not target.has_discrete)):
        posterior = posterior_draws(
            target, idata, rng=rngs["posterior"], progressbar=progressbar,
            **_plan_sampling(target, sampling),
        )  # fmt: skip
        messages += draws_source_messages(target, idata)
    symmetry = None
    if ref is None:
        # a reference fitted to draws that sit in one of several mirror modes (label
        # switching) would miss the others: fit it to the draws relabelled into one mode and
        # average it over the relabellings, as bridge sampling does (pm_evidence.model.modes)
        symmetry = plan_symmetry(target, posterior, options.symmetrize)
        messages += posterior_messages(target, symmetry.draws, relabelled=symmetry.relabelled)
        messages += list(symmetry.messages)
        if reference == "auto":
            ref, reason, overlap = auto_reference(target, symmetry.draws, via_gradient=via_gradient)
        else:
            ref = fit_reference(reference, target, symmetry.draws)
            reason = f"{ref.name} fitted to posterior draws (reference={reference!r})"
        if isinstance(ref, PriorReference):
            overlap = {**overlap, **symmetry.diagnostics}
        else:
            ref = symmetric_reference(ref, symmetry)
            overlap = {**overlap, **symmetry_diagnostics(symmetry, ref)}
    elif posterior is not None:
        messages += posterior_messages(target, posterior)
    elif reference == "auto":
        reason = "prior: the model has discrete variables (no NUTS draws to fit a reference to)"
    else:
        reason = f"given (reference={reference if isinstance(reference, str) else ref.name!r})"
    path = GeometricPath(target, ref, via_gradient=via_gradient)
    kernel_reason, n_block_evaluations = _kernel_reason(kernel, options), 0
    if find_blocks:
        # its own child stream of the pilot's: the pilot's draws stay what they were
        finding = gibbs_blocks(
            lambda x: path.evaluate(x)[1:3], target.dim, rngs["pilot"].spawn(1)[0]
        )
        if finding.blocks is not None:
            kernel = make_kernel("gibbs", target, blocks=finding.blocks)
        kernel_reason, n_block_evaluations = f"gibbs: {finding.how}", finding.n_evaluations
    n_pilot = options.n_pilot_chains
    if n_pilot is None:
        n_pilot = PILOT_CHAINS * target.backend.width
    elif isinstance(n_pilot, bool) or not isinstance(n_pilot, int | np.integer) or n_pilot < 2:
        raise EvidenceInputError(
            f"n_pilot_chains must be an integer of at least 2 (or None: {PILOT_CHAINS} per "
            f"unit of the device's width), got {n_pilot!r}."
        )
    pilot = run_pilot(rngs["pilot"], path, kernel, n_chains=n_pilot, progressbar=progressbar)
    plan = PathPlan(
        target, path, kernel, pilot, posterior, reason, overlap,
        tuple(m for m in messages if m), pilot.n_evaluations + n_block_evaluations,
        kernel_reason,
    )  # fmt: skip
    if need_posterior and posterior is None:
        plan = _with_burn_in_posterior(plan, rngs["posterior"], sampling, progressbar)
    return plan


def _finds_blocks(options: PathOptions, target: LogDensity) -> bool:
    """Whether the Gibbs blocks are to be found from the model (see ``PathOptions.blocks``)."""
    blocks, kernel = options.blocks, options.kernel
    if isinstance(blocks, str):
        if blocks != "auto":
            raise EvidenceInputError(
                f"blocks must be 'auto', None or a list of index arrays, got {blocks!r}."
            )
        if not (target.binary_mask.all() and isinstance(kernel, str)
                and kernel in ("auto", "gibbs")):  # fmt: skip
            raise EvidenceInputError(
                f"blocks='auto' finds Gibbs blocks of binary sites, for kernel='auto' or "
                f"'gibbs' on a model whose free variables are all binary (Bernoulli); got "
                f"kernel={kernel!r} and {int((~target.binary_mask).sum())} non-binary entries. "
                f"Pass the blocks as a list of index arrays instead."
            )
        return True
    return (
        blocks is None and isinstance(kernel, str) and kernel == "auto"
        and target.binary_mask.all()
    )  # fmt: skip


def _kernel_reason(kernel: Kernel, options: PathOptions) -> str:
    """A sentence on the kernel when its Gibbs blocks were not searched for."""
    automatic = isinstance(options.kernel, str) and options.kernel == "auto"
    chosen = "kernel='auto'" if automatic else "given"
    if kernel.name != "gibbs":
        return f"{kernel.name} ({chosen})"
    if options.blocks is not None:
        return f"gibbs ({chosen}): {len(kernel.blocks)} blocks given (blocks=)"
    return f"gibbs ({chosen}): one site at a time ({len(kernel.blocks)} blocks)"


def _with_burn_in_posterior(plan: PathPlan, rng, sampling: dict, progressbar: bool) -> PathPlan:
    """Posterior draws of a discrete model from the path's kernel at ``beta = 1`` after a
    burn-in from reference draws; their evaluations count as set-up."""
    n_draws, n_burn = int(sampling.get("draws", 1000)), int(sampling.get("tune", 500))
    state = plan.path.sample_reference(rng, n_draws, with_grad=plan.kernel.needs_grad)
    step = float(np.exp(plan.pilot.log_step_size[-1])) if plan.kernel.adaptive else 1.0
    state = sample_at_beta(
        rng, plan.path, plan.kernel, state, 1.0, step, n_transitions=n_burn,
        progressbar=progressbar,
    )  # fmt: skip
    n_eval = n_draws * (1 + n_burn * plan.kernel.evaluations_per_step)
    return replace(
        plan, posterior=state.x[None], n_setup_evaluations=plan.n_setup_evaluations + n_eval
    )
