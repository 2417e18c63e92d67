"""``method="auto"``: an estimate and its cross-check, as named stages.

For a continuous model (:func:`auto_evidence`):

1. **exploration** from the prior (:func:`~pm_evidence.search.exploration.explore`; skipped where
   :func:`exploration_skipped` says why), its second pass deferred where the first found one
   mode (made by stage 4 where AIS starts from its mixture: :func:`completed_exploration_stage`);
   where it could not weigh its mixture by importance, the test of whether its particles
   missed mass that the mixture found (:func:`missed_mass_stage`);
2. **posterior draws**: batched HMC (:mod:`pm_evidence.model.batched_hmc`; PyMC's NUTS above
   250 parameters or with ``sample_kwargs``), started at the exploration's particles, or at
   points resampled from the mixture's importance draws where the particles missed mass; or
   ``idata`` checked against the model (the ``"posterior"`` stream);
3. **estimate**: bridge sampling on those draws; not run where the draws missed modes the
   exploration found (:func:`estimate_skipped`, read from the draws' coverage,
   :func:`draws_coverage`: it could then only be a diagnostic, and the result says it was
   skipped), unless AIS fails;
4. **cross-check**: AIS from the exploration's mixture (or from the reference
   :func:`~pm_evidence.path.plan.auto_reference` fits to the draws where it did not explore),
   with components fitted to the posterior draws where they found mass outside every
   component of that mixture (:func:`with_draws_outside_stage`); where the estimate has no
   warning and the draws visited every component of the exploration's mixture (it only
   checks: :func:`check_only`), AIS from a mixture fitted to the draws instead
   (:func:`drawn_reference_stage`);
5. **coverage**: where each side's draws found mass that the other's missed (the draws'
   coverage, computed before stage 3: :func:`coverage_stage`);
6. **confirmation**, only where the posterior draws missed modes the exploration found (so that
   the estimate on them cannot check AIS): a second exploration and AIS from its mixture, on
   streams no other stage uses (:func:`confirmation_stage`); AIS is returned confirmed where
   the two agree and the two explorations found the same modes
   (:func:`~pm_evidence.search.coverage.unshared_mass`; where their mixtures differ by mass
   that shifts log Z by at most 0.1 nats, with the SE grown by half that shift: the verdicts
   of :mod:`pm_evidence.auto.verdicts`; the confirmation is returned where it alone passes
   its own diagnostics), flagged as unconfirmed otherwise;
   where the confirmation neither confirms nor fails and one of the two passes its own
   diagnostics, the **arbiter**, a third exploration and AIS on streams of its own
   (:func:`arbiter_stage`), confirms the one it agrees with, or neither;
7. **choice**: the better supported of the two
   (:func:`~pm_evidence.auto.verdicts.cross_checked`), a disagreement over 4 combined SEs a
   warning on it; where no exploration ran, the **term check**
   (:mod:`pm_evidence.search.term_check`).

Models with discrete variables run RTS and AIS on one plan. Each stage draws from its own
stream, so a stage's outcome does not depend on the others having run. A stage that fails
(``pm_evidence.run_methods.is_stage_failure``) is a warning on the result and the others
go on; a result that no other stage checked says so (``reliable`` is then False). Only when
neither the estimate nor the check is left is there an error
(:class:`~pm_evidence.EstimationFailedError`) naming what each stage tried.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from pm_evidence import registry
from pm_evidence.auto.verdicts import (
    arbitrated,
    confirmed_or_flagged,
    cross_checked,
    needs_arbiter,
    unconfirmed_draws,
    with_diagnostics,
    with_warning,
)
from pm_evidence.core.evidence import Evidence
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.methods import accepted_options
from pm_evidence.core.options import SAMPLE_KEYS, AnnealingOptions
from pm_evidence.core.utils import root_sequence, stage_rngs
from pm_evidence.model.batched_hmc import BatchedHMCSettings
from pm_evidence.model.draws import (
    draws_sampler,
    posterior_plan,
    reference_needs_draws,
    split_halves,
)
from pm_evidence.references import PriorReference
from pm_evidence.run_methods import (
    EXPLORATION_MAX_DIM,
    attempt,
    check_options,
    estimate_methods,
    for_the_path_methods,
    nothing_left,
    term_checked,
)
from pm_evidence.search.coverage import (
    MISSED_SHARE,
    ModeCoverage,
    compare_coverage,
    held_and_missed,
    unshared_mass,
)
from pm_evidence.search.exploration import Exploration, ExplorationOptions, completed, explore
from pm_evidence.search.missed_mass import MissedMass, missed_mass, resampled_starts
from pm_evidence.search.mixtures import as_reference, fit_gaussian_mixture, with_draws_outside

__all__ = [
    "ARBITER_STREAM",
    "CHECK_ONLY_SE",
    "DRAWN_REFERENCE_POINTS",
    "EXPLORATION_MISSED_MOST",
    "Halves",
    "arbiter_stage",
    "auto_evidence",
    "auto_pair",
    "check_from_the_draws",
    "check_only",
    "check_precision",
    "check_stage_options",
    "completed_exploration_stage",
    "confirmation_seed",
    "confirmation_stage",
    "coverage_stage",
    "discrete_stages",
    "drawn_reference_stage",
    "draws_coverage",
    "draws_hold_more",
    "draws_stage",
    "estimate_and_check",
    "estimate_skipped",
    "estimate_stage",
    "exploration_skipped",
    "exploration_stage",
    "missed_mass_stage",
    "on_draws_stage_name",
    "superseded_failures",
    "term_check_stage",
    "with_draws_outside_stage",
]


def auto_evidence(target, idata, random_seed, progressbar: bool, kwargs: dict) -> Evidence:
    """``method="auto"`` on a model's adapter: the stages of the module's text, in order.

    Parameters
    ----------
    target : pm_evidence.LogDensity
    idata : optional
        Posterior draws of this model.
    random_seed : int, Generator or SeedSequence, optional
    progressbar : bool
    kwargs : dict
        Options, already checked (``pm_evidence.run_methods.validate_options``).

    Returns
    -------
    Evidence
        The better-supported of the estimate and its check, with the comparison in its
        diagnostics, and a warning for every stage that failed.

    Raises
    ------
    EstimationFailedError
        Where neither the estimate nor the check could be made.
    """
    primary, check = auto_pair(target)
    check_options([primary, check], kwargs)
    skipped = exploration_skipped(target, kwargs)
    seed = root_sequence(random_seed)
    failures: dict[str, str] = {}  # stage -> why it failed: a warning on the result
    facts = {"exploration": f"skipped: {skipped}"} if skipped else {}  # -> its diagnostics
    if "reference" in kwargs:  # the path method's (the pair shares no reference)
        kwargs = for_the_path_methods(kwargs, kwargs["reference"])
    if target.has_discrete:
        return discrete_stages(target, idata, seed, progressbar, kwargs, failures, facts)

    # 1. the exploration from the prior
    exploration = None
    if not skipped:
        exploration = attempt(
            "the exploration from the prior (tempered SMC with jumps between modes)",
            lambda: exploration_stage(target, seed, progressbar, defer_second_pass=True),
            failures,
        )
    missed = None  # whether its particles missed mass its mixture found (tested where unweighed)
    if exploration is not None and (
        exploration.missed_mass is not None or not exploration.weights_estimated
    ):
        missed = attempt(
            "the test of the exploration's particles (importance sampling from its mixture)",
            lambda: missed_mass_stage(target, exploration, seed),
            failures,
        )
        if missed is not None:
            facts.update(missed.diagnostics())
    # 2. the posterior draws, and which of the exploration's modes they visited
    plan = attempt(
        "the posterior draws (batched HMC or NUTS, or idata)",
        lambda: draws_stage(target, idata, seed, progressbar, kwargs, exploration, missed),
        failures,
    )
    if plan is not None:  # how the draws were made, on whichever result is returned
        facts.update(plan.facts)
    on_edge = getattr(target, "prior_edge_share", 0.0) if exploration is not None else 0.0
    if on_edge != 0.0:  # its forward draws rounded onto a support's edge, moved inside
        facts["prior_draws_on_edge"] = on_edge
    coverage = None
    if plan is not None and exploration is not None:
        coverage = attempt(
            "the coverage check (which modes each side's draws visited)",
            lambda: draws_coverage(exploration, plan, missed, seed),
            failures,
        )
    # 3 and 4. the estimate on the draws and its cross-check, AIS
    halves = estimate_and_check(
        target, plan, exploration, coverage, seed, progressbar, kwargs, skipped, failures
    )
    if halves.interrupted is not None:
        return halves.interrupted
    first, second, exploration = halves.estimate, halves.check, halves.exploration
    if halves.estimate_skipped:
        facts["estimate"] = f"skipped: {halves.estimate_skipped}"
    # 5. where each side's draws found mass the other's missed
    if coverage is not None and (first is not None or second is not None):
        first, second, more = coverage_stage(first, second, exploration, plan, coverage)
        facts.update(more)
        why = unconfirmed_draws(first, second, more["exploration_missed_by_nuts"])
        if why:
            # 6. only AIS from the exploration covers the mass the draws missed (or stands
            # where the estimate on them failed): a second exploration confirms it or not
            chosen = _confirmed(
                target, plan, seed, progressbar, kwargs, (second, first),
                halves.check_options["path"].reference, why, facts, failures,
            )  # fmt: skip
            if "confirmed_by" in facts:
                superseded_failures(failures, facts, on_draws_stage_name(primary))
            return _with_failures(with_diagnostics(chosen, facts), failures)
    # 7. the better supported of the two; the term check where nothing explored
    result = _settled(first, second, primary, check, failures, facts)
    if exploration is None and plan is not None:  # both halves read the posterior draws
        checked = attempt(
            "the term check (modes of the model's log-sum-exp terms)",
            lambda: term_check_stage(target, result, plan, seed),
            failures,
        )
        result = _with_failures(result if checked is None else checked, failures)
    return result


def auto_pair(target) -> tuple[str, str]:
    """The estimator and the cross-check of ``method="auto"`` for a model.

    Continuous models: bridge sampling (the most efficient at defaults in
    ``benchmarks/defaults.py``; posterior draws and a normal fitted to their first halves) checked
    by AIS (its own annealed chains, a stochastic lower bound) from the mixture that
    exploration from the prior found (:func:`~pm_evidence.search.exploration.explore`; see
    :func:`exploration_skipped` for when it is not run and AIS starts from
    :func:`~pm_evidence.path.plan.auto_reference`'s choice).
    Models with discrete variables (no posterior draws, no bridge): RTS checked by AIS, two samplers
    on one plan (the prior as ``p0``): they share the reference, not the draws.
    """
    return ("rts", "ais") if target.has_discrete else ("bridge", "ais")


def discrete_stages(target, idata, seed, progressbar, kwargs, failures, facts) -> Evidence:
    """A model with discrete variables: RTS and AIS from the prior on one path plan, in one
    call (they share the plan, not the draws), then the better supported (stage 7)."""
    primary, check = auto_pair(target)
    pair = estimate_methods(
        target, [primary, check], idata, seed, progressbar, kwargs, {}, term_check=False,
        label=f"method='auto' ({primary} checked by {check})",
    )  # fmt: skip
    failures.update(pair.failures)
    return _settled(pair.get(primary), pair.get(check), primary, check, failures, facts)


# ----------------------------------------------------------- 1. The exploration from the prior


def exploration_skipped(target, kwargs: dict) -> str:
    """Why ``method="auto"`` does not explore from the prior (empty when it does).

    It explores continuous models whose prior is a reference distribution (proper, and
    restricted by no transform other than an ``ordered`` one on i.i.d. components, drawn by
    sorting: :class:`~pm_evidence.model.prior.OrderedPrior`) with at most
    ``EXPLORATION_MAX_DIM`` parameters, unless a reference or path options are given.
    """
    if target.has_discrete:
        return "the model has discrete variables (RTS and AIS start from the prior)"
    if not target.model.observed_RVs and not target.model.potentials:
        return "the model has no data (the posterior is the prior)"
    if target.dim > EXPLORATION_MAX_DIM:
        particles = ExplorationOptions().particles_for(target.dim, target.backend.width)
        return (
            f"{target.dim} parameters > {EXPLORATION_MAX_DIM}: a cloud of {particles} "
            f"particles cannot fit a mixture there"
        )
    if any(k in kwargs for k in ("reference", "path")):
        return "a reference or path options were given"
    try:
        PriorReference(target)
    except EvidenceInputError as err:
        return f"the prior cannot be sampled as a reference ({err})"
    return ""


def exploration_stage(target, seed, progressbar: bool, defer_second_pass=False) -> Exploration:
    """Stage 1: tempered SMC from the prior (:func:`~pm_evidence.search.exploration.explore`) on
    the ``"exploration"`` stream of ``seed``; with ``defer_second_pass`` (stage 1 of
    :func:`auto_evidence`), a second pass after a first that found one mode is left for
    :func:`completed_exploration_stage`."""
    return explore(
        target, stage_rngs(seed)["exploration"], progressbar=progressbar,
        defer_second_pass=defer_second_pass,
    )  # fmt: skip


def completed_exploration_stage(target, exploration: Exploration, seed, progressbar: bool):
    """Stage 1's deferred second pass, made (:func:`~pm_evidence.search.exploration.completed`,
    on the ``"second_pass"`` stream of ``seed``) where stage 4 starts AIS from the
    exploration's mixture, whose shape then sets AIS's cost. On a 45-parameter varying-slopes
    model the second pass raises the mixture's reweighting ESS from 0.3-1% to 2-7% and takes
    1.5-2 s, a fifth of a warm call, which stage 4 spends for nothing where it starts from the
    posterior draws' mixture (measured: docs/benchmarks.rst, "Centered hierarchies")."""
    return completed(target, stage_rngs(seed)["second_pass"], exploration, progressbar=progressbar)


def missed_mass_stage(target, exploration: Exploration, seed) -> MissedMass:
    """Stage 1's test of its particles, where the exploration could not weigh its mixture by
    importance: importance sampling from the mixture (:func:`~pm_evidence.search.missed_mass.missed_mass`, on the
    ``"missed_mass"`` stream of ``seed``), whose ``log Z`` above the exploration's SMC
    ``log Z``, with most of its mass in components no particle visited, says that the
    particles missed mass, so that the draws start where the mass
    is (:func:`draws_stage`) and the coverage reads the importance shares
    (:func:`draws_coverage`). On a two-planet radial-velocity orbit with a Gaussian-process
    term whose particles all held one planet or none, while a climbed component held both,
    chains started at the particles took 1.6 million evaluations and stayed apart (R-hat
    2.25), and 0.49 million from the resampled points, all in that mode (measured:
    docs/benchmarks.rst). The
    exploration's own test where it made one (its second pass deferred for it)."""
    if exploration.missed_mass is not None:
        return exploration.missed_mass
    return missed_mass(exploration, target.log_density, stage_rngs(seed)["missed_mass"])


# ---------------------------- 2. The posterior draws, and the exploration's modes they visited


def draws_stage(target, idata, seed, progressbar, kwargs, exploration=None, missed=None):
    """Stage 2: the posterior plan both halves of ``auto`` read, the draws a list of methods
    would make (from ``idata``, or drawn by :func:`~pm_evidence.model.draws.sampled_posterior`
    on the ``"posterior"`` stream of ``seed``). Where the exploration ran and batched HMC
    draws, its chains start at particles of the exploration drawn at random (posterior draws
    in every mode found, in proportion to their mass), or, where the particles missed mass
    (``missed``: :func:`missed_mass_stage`), at points resampled from the importance draws
    from its mixture."""
    sampling = {k: v for k, v in kwargs.items() if k in SAMPLE_KEYS}
    rng = stage_rngs(seed)["posterior"]
    if (
        exploration is not None and idata is None
        and draws_sampler(target, sampling.get("sample_kwargs")) == "batched_hmc"
    ):  # fmt: skip
        chains = sampling.get("chains") or BatchedHMCSettings.sized(target.backend.width).chains
        if missed is not None and missed.missed:
            sampling["starts"] = resampled_starts(missed, rng, chains)
            starts = "importance draws from the exploration's mixture (its particles missed mass)"
        else:
            n = exploration.particles.shape[0]
            pick = rng.choice(n, size=chains, replace=chains > n)
            sampling["starts"] = exploration.particles[pick]
            starts = "the exploration's particles"
    plan = posterior_plan(target, idata, rng=rng, progressbar=progressbar, **sampling)
    if "starts" not in sampling:
        return plan
    return dataclasses.replace(plan, facts={**plan.facts, "draws_starts": starts})


def draws_coverage(
    exploration: Exploration, plan, missed: MissedMass | None = None, seed=None
) -> ModeCoverage:
    """Which components of the exploration's mixture the posterior draws visited, and the
    posterior mass of where the draws went outside every component
    (:func:`~pm_evidence.search.coverage.compare_coverage`, mirror images counted where the
    symmetry group is known); :func:`estimate_skipped` and :func:`coverage_stage` read it.
    Where the particles missed mass (``missed``: :func:`missed_mass_stage`), the components'
    shares and ``log Z`` are importance sampling's, not the particles' and the SMC's. With
    ``seed``, the mass the draws found outside every component is weighed on the
    ``"coverage"`` stream of ``seed``, where the draws missed components
    (:func:`~pm_evidence.search.coverage.found_outside_ratio`): the exploration's shares are
    of the mass it found, not of ``Z``."""
    group = plan.search.group
    found = missed is not None and missed.missed
    return compare_coverage(
        exploration, plan.draws, None if group is None else group.orbit,
        log_density=plan.target.log_density,
        log_z=missed.log_z if found else exploration.log_z,
        shares=missed.shares if found else None,
        rng=None if seed is None else stage_rngs(seed)["coverage"],
    )  # fmt: skip


def _judged(plan) -> bool:
    """Whether the draws' missed components are judged: not where a symmetry was found whose
    mirror images cannot be enumerated (each mirror mode would count as missed)."""
    return not (plan.search.found and plan.search.group is None)


# -------------------------------------- 3 and 4. The estimate on the draws and its cross-check


class Halves(NamedTuple):
    """What stages 3 and 4 leave: the estimate on the posterior draws and its cross-check
    (``None`` where one failed or, for the estimate, was skipped: ``estimate_skipped`` says
    why), the cross-check's options, the result to return at once where Ctrl-C stopped
    the cross-check after the estimate (``interrupted``), and the exploration as stage 4 left
    it (its deferred second pass made where AIS started from its mixture; ``None`` where
    none ran)."""

    estimate: Evidence | None
    check: Evidence | None
    check_options: dict | None
    estimate_skipped: str
    interrupted: Evidence | None = None
    exploration: Exploration | None = None


def estimate_and_check(
    target, plan, exploration, coverage, seed, progressbar, kwargs, skipped, failures
) -> Halves:
    """Stages 3 and 4: bridge on the posterior draws (not where they missed modes the
    exploration found: :func:`estimate_skipped`) and AIS from the exploration's mixture (from
    a mixture fitted to the draws where it only checks bridge or the draws hold more than the
    exploration found: :func:`check_from_the_draws`),
    or from the reference :func:`check_stage_options` chooses where nothing explored; AIS run
    to the precision the comparison needs (:func:`check_precision`). Where AIS fails, a skipped
    estimate is run after all. Failures are recorded in ``failures``."""
    primary, check = auto_pair(target)
    skipped_estimate = estimate_skipped(coverage, plan)

    def estimate():
        return attempt(
            on_draws_stage_name(primary),
            lambda: estimate_stage(primary, target, plan, seed, progressbar, kwargs),
            failures,
        )

    def stopped(result):
        return result is not None and result.diagnostics.get("interrupted")

    first = estimate() if plan is not None and not skipped_estimate else None
    if stopped(first):
        return Halves(first, None, None, skipped_estimate, interrupted=first)
    drawn = check_from_the_draws(first, exploration, plan, coverage)
    if drawn:
        options, added = drawn_reference_stage(kwargs, plan, seed)
    else:
        if exploration is not None and exploration.second_pass_deferred:
            exploration = attempt(
                "the exploration's deferred second pass",
                lambda: completed_exploration_stage(target, exploration, seed, progressbar),
                failures,
            ) or exploration
        options = check_stage_options(target, kwargs, exploration, plan, skipped)
        options, added = with_draws_outside_stage(
            target, options, exploration, plan, coverage, seed
        )
    second = None
    if options is None:
        failures[repr(check)] = (
            f"{check!r} was not run: its reference is fitted to the posterior draws, which failed"
            + (f", and the prior cannot be its reference ({skipped})" if skipped else "")
        )
    else:
        if first is not None:
            options = check_precision(check, options, first, exploration, plan, coverage)
        try:
            second = attempt(
                f"{check!r} (from {_start_of(options, exploration, drawn)})",
                lambda: estimate_stage(check, target, plan, seed, progressbar, options),
                failures,
            )
        except KeyboardInterrupt:
            if first is None:
                raise
            interrupted = with_warning(first, (
                f"Interrupted (Ctrl-C) while running {check!r}, method='auto''s cross-check: "
                f"{primary!r} is returned unchecked."
            ))  # fmt: skip
            return Halves(first, None, options, skipped_estimate, interrupted=interrupted)
    if second is not None and added:  # the reference's components fitted to the draws
        key = "reference_drawn_components" if drawn else "reference_draws_components"
        second = with_diagnostics(second, {key: added})
    if skipped_estimate and second is None:  # AIS failed: the estimate is needed after all
        first, skipped_estimate = estimate(), ""
        if stopped(first):
            return Halves(first, None, options, skipped_estimate, interrupted=first)
    return Halves(first, second, options, skipped_estimate, exploration=exploration)


def estimate_skipped(coverage: ModeCoverage | None, plan) -> str:
    """Why the estimate on the posterior draws (bridge) cannot change ``auto``'s result, so
    that it is not run (empty where it runs).

    Where the draws missed components of the exploration's mixture holding at least
    ``MISSED_SHARE`` of its mass (``coverage``: :func:`draws_coverage`), an estimate on them
    misses that mass: AIS from the mixture is the estimate, and a second exploration confirms
    it or not (:func:`~pm_evidence.auto.verdicts.confirmed_or_flagged`, where the estimate on the draws was only a
    diagnostic). Where nothing is judged missed (no ``coverage``; mirror modes that cannot be
    enumerated) the estimate runs. Where AIS then fails, it runs after all
    (``auto_evidence``); a Ctrl-C during AIS then leaves nothing to return (the
    ``KeyboardInterrupt`` is raised, as in any stage before an estimate exists).
    """
    if coverage is None or not _judged(plan) or not coverage.missed_by_draws >= MISSED_SHARE:
        return ""
    return (
        f"the posterior draws missed components holding {coverage.missed_by_draws:.0%} of the "
        f"mass that tempering from the prior found, so an estimate on them misses that mass "
        f"and cannot be the result; AIS from the exploration's mixture is, checked by a second "
        f"exploration"
    )


def estimate_stage(name: str, target, draws, seed, progressbar: bool, kwargs: dict) -> Evidence:
    """Stages 3 and 4: one method of the pair, given the options it takes, on the shared
    draws (a ``PosteriorPlan``, or ``None`` where they failed) and its own stream of ``seed``."""
    accepted = accepted_options([name])
    own = {k: v for k, v in kwargs.items() if k in accepted}
    results = estimate_methods(target, [name], draws, seed, progressbar, own, {}, term_check=False)
    return results[name]


def check_stage_options(target, kwargs: dict, exploration, plan, skipped: str) -> dict | None:
    """The options of stage 4, the cross-check: AIS from the exploration's mixture where it ran
    (with a component at each mirror image it misses under the relabelling symmetry the
    posterior plan found: :meth:`~pm_evidence.search.exploration.Exploration.reference`); else from
    the path options given, or the reference fitted to the posterior draws; where those failed,
    from the prior (a proper prior that can be sampled), or ``None`` where nothing is left to start
    from."""
    if exploration is not None:  # the mirror images under the plan's relabellings covered
        group = None if plan is None else plan.search.group
        return for_the_path_methods(kwargs, exploration.reference(group))
    if plan is not None:
        return kwargs
    if "path" in kwargs:  # the user's path options: run them unless they need the failed draws
        return None if reference_needs_draws(kwargs["path"].reference) else kwargs
    if skipped.startswith("the prior cannot be sampled"):
        return None
    return for_the_path_methods(kwargs, "prior")


def with_draws_outside_stage(target, options, exploration, plan, coverage, seed):
    """Stage 4's options with the posterior draws' region that the exploration missed in AIS's
    reference, and the number of components that added (0: ``options`` as given).

    Where the draws lie outside every component of the exploration's mixture in a region
    holding at least ``MISSED_SHARE`` of the posterior mass (``coverage``'s
    ``missed_by_exploration``: chains that found a mode tempering from the prior lost), AIS
    from that mixture alone is low by about that share: the mixture gets components fitted to
    those draws, every weight adapted by importance sampling
    (:func:`~pm_evidence.search.mixtures.with_draws_outside`, on the ``"draws_outside"``
    stream of ``seed``), and AIS starts from the union. The result's diagnostics then hold
    ``reference_draws_components``, and :func:`coverage_stage` does not warn that AIS's
    reference missed that region."""
    if (
        options is None or exploration is None or plan is None or coverage is None
        or not coverage.missed_by_exploration >= MISSED_SHARE
    ):  # fmt: skip
        return options, 0
    mixture, added = with_draws_outside(
        exploration.mixture, plan.draws, target.log_density, stage_rngs(seed)["draws_outside"],
        ExplorationOptions().n_reweighting_draws,
    )  # fmt: skip
    if not added:
        return options, 0
    group = plan.search.group
    return for_the_path_methods(options, exploration.reference(group, mixture)), added


def check_from_the_draws(estimate, exploration, plan, coverage=None) -> bool:
    """Whether stage 4 starts from a mixture fitted to the posterior draws
    (:func:`drawn_reference_stage`): the posterior has no relabelling symmetry (whose mirror
    images the exploration's reference covers and the draws do not), and either AIS only
    checks the estimate (:func:`check_only`) or the draws hold more than the exploration
    found (:func:`draws_hold_more`)."""
    group = None if plan is None else plan.search.group
    if group is not None and group.size >= 2:
        return False
    if coverage is None and exploration is not None and plan is not None and _judged(plan):
        coverage = draws_coverage(exploration, plan)  # once, for both rules
    return (
        check_only(estimate, exploration, plan, coverage)
        or draws_hold_more(exploration, plan, coverage)
    )


def draws_hold_more(exploration, plan, coverage=None) -> bool:
    """Whether the posterior draws hold more of the posterior than the exploration's mixture:
    they visited every component of it (all but ``MISSED_SHARE`` of its mass: the exploration
    adds no mode to them), and the region they visited outside every component holds at least
    ``EXPLORATION_MISSED_MOST`` of the posterior's mass (``missed_by_exploration``:
    :func:`draws_coverage`). AIS then starts from a mixture fitted to the draws
    (:func:`drawn_reference_stage`) even where the estimate on them has a warning: a
    reference fitted to the draws covers the exploration's modes and the mass it missed, where
    the exploration's mixture, even with components added at the draws outside it
    (:func:`with_draws_outside_stage`), spreads AIS's chains over components that hold little.
    AIS runs to its own precision there (:func:`check_precision`): it may be the result.

    On a two-planet radial-velocity orbit with a Gaussian-process term (``rv_gp(50, 2)``),
    whose exploration's mixture gave importance weights of ESS 5-13 in 4,096 and missed the
    region of 54% of the draws, and whose draws (R-hat 1.14 at the second planet's
    eccentricity: chains that mix slowly there) flagged bridge, AIS from the exploration's
    mixture with the added components stopped at 20,000 chains, ESS 118 and Pareto k-hat
    0.75, after 3.2 million evaluations, flagged; from the draws' mixture it reached an SE of
    0.013 at 20,000 chains (ESS 22%, k-hat 0.57, 2.3 million evaluations), agreeing with
    bridge within 0.9 combined SEs, and the call took 663 s instead of 767-909 s, its result
    no longer flagged (measured: docs/benchmarks.rst, "The draws' mixture where the
    exploration missed most of the mass"). ``coverage``: the draws' coverage where it was
    computed already (:func:`draws_coverage`)."""
    if exploration is None or plan is None or not _judged(plan):
        return False
    coverage = draws_coverage(exploration, plan) if coverage is None else coverage
    return _draws_cover(exploration, plan, coverage) and bool(
        coverage.missed_by_exploration >= EXPLORATION_MISSED_MOST
    )


def drawn_reference_stage(options: dict, plan, seed) -> tuple[dict, int]:
    """Stage 4's options where it starts from the draws (:func:`check_from_the_draws`): AIS
    from a Gaussian mixture fitted to the first half of every chain of the posterior draws (the
    half bridge fits its reference to; :func:`~pm_evidence.search.mixtures.fit_gaussian_mixture`,
    components chosen by BIC, on the ``"check_reference"`` stream of ``seed``), not from the
    exploration's mixture.

    The draws visited every component of the exploration's mixture (all but components holding
    under ``MISSED_SHARE``, 2%, of its mass together: :func:`check_only`,
    :func:`draws_hold_more`), so the exploration adds no mode for AIS to cover; and a mixture
    fitted to thousands of posterior draws follows the
    posterior's shape where the exploration's (fitted to hundreds of particles, with Laplace
    components at climbed modes) may not. AIS is unbiased from any reference that covers the
    posterior; the reference sets its cost. On a two-planet radial-velocity orbit the check
    from the exploration's mixture stopped at 20,000 chains with an SE of 0.035 after 1.2
    million evaluations (a Kish ESS of 4%); from the draws' mixture it reached 0.017 in
    125,000 (an ESS of 65%; measured: docs/benchmarks.rst). The mixture is fitted to at most
    ``DRAWN_REFERENCE_POINTS`` of those draws, evenly spaced along the chains where there are
    more (draws extended four times for their R-hat: 20,480 draws of 45 parameters, whose fit
    took 12 s of a 43 s call; AIS from the fit to 8,192 of them stopped at its target SE after
    156,000 evaluations, from the fit to all of them after 179,000). Fewer are not enough:
    fitted to 4,096 of 8,192 draws, the mixture's ESS fraction fell from 0.68 to 0.11 and the
    check took 42 s instead of 0.7. Returns the options and the number of components
    (``reference_drawn_components`` on the check's diagnostics: the reference covers the region
    the draws found, which :func:`coverage_stage` reads)."""
    fit_half, _ = split_halves(plan.draws)
    points = fit_half.reshape(-1, plan.draws.shape[-1])
    if points.shape[0] > DRAWN_REFERENCE_POINTS:  # evenly spaced along the chains, in order
        points = points[np.linspace(0, points.shape[0] - 1, DRAWN_REFERENCE_POINTS).astype(int)]
    fitted = fit_gaussian_mixture(points, stage_rngs(seed)["check_reference"])
    reference = as_reference(fitted, None, "normal_drawn")
    return for_the_path_methods(options, reference), fitted.n_components


def _start_of(options: dict, exploration, drawn: bool = False) -> str:
    """Where the cross-check starts, in words (``drawn``: :func:`drawn_reference_stage`)."""
    if drawn:
        return "a mixture fitted to the posterior draws"
    if exploration is not None:
        return "the exploration's mixture"
    path = options.get("path")
    reference = options.get("reference", getattr(path, "reference", "auto"))
    if isinstance(reference, str):
        return f"reference={reference!r}"
    return f"the {getattr(reference, 'name', type(reference).__name__)} reference given"


# The precision a pure cross-check of AIS is run to where the posterior draws visited every
# component the exploration found and the estimate on them has no warning: it only has to see a
# disagreement (4 combined SEs: 0.08 nats with the estimate's SE far below), not to be returned.
CHECK_ONLY_SE = 0.02
# The most log-density evaluations a pure cross-check of AIS spends, in multiples of what the
# posterior draws it checks cost (batched HMC's ``draws_evaluations``): where the mixture fitted
# to the draws leaves AIS's weights heavy, its SE falls slower than its chains grow, and on 3
# seeds of 30 of a 45-parameter centered hierarchy it ran to 20,000 chains, 1.3-1.4 million
# evaluations (5-8 s of a 6-10 s call) against 150,000-270,000 for the draws; on the other
# seeds it spent 0.7-1.5 times the draws' (measured: docs/benchmarks.rst, "Centered
# hierarchies (funnels)").
CHECK_ONLY_BUDGET = 2
# The most posterior draws a mixture for the cross-check is fitted to (drawn_reference_stage):
# the first halves of 16 chains of 512 draws, the default.
DRAWN_REFERENCE_POINTS = 8192
# The share of the posterior's mass in the region the draws visited outside every component
# of the exploration's mixture from which, the draws having visited every component, AIS starts
# from a mixture fitted to the draws (draws_hold_more): the exploration then found less than
# half of what they hold.
EXPLORATION_MISSED_MOST = 0.5


def check_precision(
    check: str, kwargs: dict, estimate: Evidence, exploration=None, plan=None, coverage=None
) -> dict:
    """``kwargs`` for the cross-check ``check`` of ``method="auto"``, its annealing run stopped
    at the precision the comparison with ``estimate`` needs.

    A cross-check is there to detect a disagreement, in combined standard errors
    ``hypot(se_1, se_2)``; an SE far below the estimate's adds nothing to that. So where
    ``auto`` did not explore, an AIS check stops at
    ``target_se = max(AnnealingOptions().target_se, estimate.se)`` rather than the default
    0.005, which costs minutes on a model of a thousand parameters where bridge's SE is several
    times larger. Where it explored (``exploration`` and the posterior ``plan`` given), AIS
    starts from the exploration's mixture: where the posterior draws missed a component of it,
    AIS is the estimate that covers that mass, not only a check, and runs to its own default
    (stopping it early costs accuracy for little time; measured: docs/benchmarks.rst,
    Measurements behind the defaults). Where the draws visited every component and the
    estimate has no warning (:func:`check_only`), nothing the check finds can make it the
    returned result unless it disagrees, so it stops at ``max(CHECK_ONLY_SE, estimate.se)`` (run
    to its own default precision, the check can be most of a warm call), within
    ``CHECK_ONLY_BUDGET`` times the evaluations of the draws where batched HMC made them
    (``max_evaluations``; the check's SE is then what it reached, ``stopped_by`` on its
    diagnostics, and the comparison's combined SE carries it), and starts from a
    mixture fitted to the draws where the posterior has no mirror images
    (:func:`drawn_reference_stage`). Options the user gave
    (``annealing=`` or ``target_se=``) are kept as given. ``coverage``: the draws' coverage
    where it was computed already (:func:`draws_coverage`).
    """
    if registry.method(check).run != "annealing" or {"annealing", "target_se"} & set(kwargs):
        return kwargs
    floor, budget = AnnealingOptions().target_se, AnnealingOptions().max_evaluations
    if exploration is not None:
        if not check_only(estimate, exploration, plan, coverage):
            return kwargs
        floor = CHECK_ONLY_SE
        drawn = plan.facts.get("draws_evaluations")
        if drawn:
            budget = min(budget, CHECK_ONLY_BUDGET * int(drawn))
    target_se = max(floor, float(estimate.se)) if np.isfinite(estimate.se) else floor
    if target_se <= AnnealingOptions().target_se:
        return kwargs
    return {**kwargs, "annealing": AnnealingOptions(target_se=target_se, max_evaluations=budget)}


def check_only(estimate, exploration, plan, coverage=None) -> bool:
    """Whether stage 4 only checks the estimate on the posterior draws: the estimate is there
    and has no warning, and the draws visited every component of the exploration's mixture
    (``_draws_cover``), so nothing AIS finds makes it the result unless it disagrees."""
    return bool(
        estimate is not None and estimate.reliable and exploration is not None
        and plan is not None and _draws_cover(exploration, plan, coverage)
    )  # fmt: skip


def _draws_cover(exploration, plan, coverage=None) -> bool:
    """Whether the posterior draws visited every component of the exploration's mixture (of
    at least ``MISSED_SHARE``; mirror images count where the symmetry group is known)."""
    if not _judged(plan):  # a symmetry whose images cannot be enumerated
        return False
    coverage = draws_coverage(exploration, plan) if coverage is None else coverage
    return coverage.missed_by_draws < MISSED_SHARE


# ------------------------------------ 5. Where each side's draws found mass the other's missed


def coverage_stage(
    estimate: Evidence | None, check: Evidence | None, exploration, plan, coverage=None
):  # fmt: skip
    """Stage 5: both results with a warning where the other's draws found mass that theirs
    missed (:func:`draws_coverage`, or ``coverage`` where it was computed already: the
    exploration's components the draws missed by the mixture's weights, the draws outside every
    component by the posterior mass of where they are), and the facts for the diagnostics.
    ``estimate`` is ``None`` where it was not run (:func:`estimate_skipped`), ``check``
    where it failed."""
    unenumerated = not _judged(plan)
    coverage = draws_coverage(exploration, plan) if coverage is None else coverage
    facts = {
        "exploration_n_modes": exploration.n_modes,
        "exploration_n_term_modes": exploration.n_term_modes,
        "exploration_n_evaluations": exploration.n_evaluations,
        "exploration_passes": exploration.n_passes,
        "exploration_second_pass_deferred": exploration.second_pass_deferred,
        "exploration_log_z": exploration.log_z,
        "exploration_missed_by_nuts": np.nan if unenumerated else coverage.missed_by_draws,
        "exploration_missed_weight": np.nan if unenumerated else coverage.missed_weight,
        "exploration_missed_by_exploration": coverage.missed_by_exploration,
        "exploration_draws_outside": coverage.draws_outside,
    }
    if estimate is not None and not unenumerated and coverage.missed_by_draws >= MISSED_SHARE:
        estimate = with_warning(estimate, (
            f"The posterior draws missed part of the posterior: tempering from the prior "
            f"(pm_evidence.search.exploration) found {exploration.n_modes} components, and "
            f"{coverage.missed_by_draws:.0%} of the posterior's mass "
            f"lies in components that no posterior draw visited, so {estimate.method}, which reads "
            f"the posterior draws, misses that mass."
        ))  # fmt: skip
    if (
        check is not None
        and coverage.missed_by_exploration >= MISSED_SHARE
        and not check.diagnostics.get("reference_draws_components")
        and not check.diagnostics.get("reference_drawn_components")
    ):  # AIS's reference lacked the region the draws found (with_draws_outside_stage)
        check = with_warning(check, (
            f"Tempering from the prior (pm_evidence.search.exploration) missed part of the "
            f"posterior: {coverage.draws_outside:.0%} of the posterior draws lie outside "
            f"every component of the mixture it found, which is {check.method}'s reference, in "
            f"a region holding about {coverage.missed_by_exploration:.0%} of the posterior's "
            f"mass (reciprocal importance sampling at those draws)."
        ))  # fmt: skip
    return estimate, check, facts


# -------------------------------------------------------- 6. The confirmation, and the arbiter


def _confirmed(
    target, plan, seed, progressbar, kwargs, estimates, first_reference, why, facts, failures
) -> Evidence:
    """Stages 6 and 6b: AIS from the exploration (``estimates[0]``; ``estimates[1]`` is the
    estimate on the posterior draws) confirmed by a second exploration, or flagged
    (:func:`~pm_evidence.auto.verdicts.confirmed_or_flagged`); where that second exploration did not confirm it, the
    arbiter's verdict (:func:`~pm_evidence.auto.verdicts.needs_arbiter`, :func:`~pm_evidence.auto.verdicts.arbitrated`). Ctrl-C during either keeps
    what finished."""
    ais, on_draws = estimates
    confirmed = _interruptible(
        "the confirmation (a second exploration from the prior with its own random stream, "
        "and AIS from its mixture)",
        lambda: _confirmation(target, plan, seed, progressbar, kwargs, first_reference),
        failures, "AIS is returned unconfirmed",
    )  # fmt: skip
    confirmation, confirmation_reference = confirmed or (None, None)
    chosen = confirmed_or_flagged(ais, on_draws, confirmation, facts, why)
    if not needs_arbiter(ais, confirmation, facts):
        return chosen
    arbiter = _interruptible(
        "the arbiter (a third exploration from the prior with its own random stream, and AIS "
        "from its mixture)",
        lambda: arbiter_stage(
            target, plan, seed, progressbar, kwargs, first_reference, confirmation_reference
        ),
        failures, "the result is returned unconfirmed",
    )  # fmt: skip
    return arbitrated(chosen, (ais, confirmation), arbiter, facts)


def on_draws_stage_name(primary: str) -> str:
    """The name stage 3, the estimate on the posterior draws, is recorded under in
    ``failures`` (and its warning)."""
    return f"{primary!r} (on the posterior draws)"


def superseded_failures(failures: dict, facts: dict, estimate_stage_name: str) -> None:
    """Where a second exploration confirmed AIS, the estimate on the posterior draws, had it
    failed, was one of the reasons for that confirmation (``confirmed_by`` says so), not a doubt
    about the result: its failure moves from ``failures`` (a warning on the result) to the
    diagnostics (``auto_superseded_failures``), where it stays visible."""
    if estimate_stage_name in failures:
        facts["auto_superseded_failures"] = (failures.pop(estimate_stage_name),)


def _interruptible(stage: str, run, failures: dict, kept: str):
    """:func:`~pm_evidence.run_methods.attempt`, with Ctrl-C recorded as the stage's failure
    (``kept``: what the result is then) instead of ending the call."""
    try:
        return attempt(stage, run, failures)
    except KeyboardInterrupt:
        failures[stage] = f"{stage} was interrupted (Ctrl-C); {kept}"
        return None


# The confirmation's streams: the children of the call's seed at this position and beyond
# the stage streams (pm_evidence.core.utils.STAGES), so they share no randomness with them.
CONFIRMATION_STREAM = 1000


def confirmation_seed(
    seed: np.random.SeedSequence, stream: int = CONFIRMATION_STREAM
) -> np.random.SeedSequence:
    """The seed of the confirmation (or, at ``ARBITER_STREAM``, of the arbiter): a child of
    ``seed`` that no stage stream is."""
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, stream))


def confirmation_stage(
    target, plan, seed, progressbar: bool, kwargs: dict, first_reference=None
) -> Evidence:
    """Stage 6, where the posterior draws missed modes the exploration found: a second exploration
    from the prior and AIS from its mixture, every stream a child of
    :func:`confirmation_seed` (no randomness shared with stages 1 to 5). ``seed``: the call's
    (an int or a ``numpy.random.SeedSequence``; a Generator is advanced, so stages called
    alone reproduce a call only from an int or a SeedSequence). Two explorations that
    found the same mass give AIS estimates that agree; one that missed a mode the other found
    gives a lower one (AIS from a mixture without the mode). Two that each missed the same
    amount of mass agree too (each found one mirror image of a mode under a symmetry the
    relabelling search did not detect): with ``first_reference`` (the first AIS's start) the
    result's diagnostics hold ``confirmation_unshared_mass``, the posterior mass either
    mixture holds where the other has no component
    (:func:`~pm_evidence.search.coverage.unshared_mass`, on the ``"mode_sets"`` stream of the
    confirmation's seed), which :func:`~pm_evidence.auto.verdicts.confirmed_or_flagged` reads."""
    return _confirmation(target, plan, seed, progressbar, kwargs, first_reference)[0]


def _confirmation(target, plan, seed, progressbar, kwargs, first_reference):
    """:func:`confirmation_stage`, and the mixture its AIS started from."""
    result, reference, rng = _explored_ais(
        target, plan, seed, progressbar, kwargs, CONFIRMATION_STREAM
    )
    facts = {}
    if first_reference is not None:
        facts["confirmation_unshared_mass"] = unshared_mass(
            first_reference, reference, target.log_density, rng
        )
    return with_diagnostics(result, facts), reference


def _explored_ais(target, plan, seed, progressbar: bool, kwargs: dict, stream: int):
    """AIS from a further exploration's mixture, every stream a child of
    :func:`confirmation_seed` at ``stream``; the mixture AIS started from; and the
    ``"mode_sets"`` stream of that seed, for comparing mixtures. The result's diagnostics hold
    the exploration's number of modes (``confirmation_n_modes``)."""
    child = confirmation_seed(root_sequence(seed), stream)
    exploration = exploration_stage(target, child, progressbar)
    options = check_stage_options(target, kwargs, exploration, plan, "")
    # only the draws outside its mixture are read here, so what they missed is not weighed
    coverage = draws_coverage(exploration, plan) if plan is not None else None
    options, added = with_draws_outside_stage(target, options, exploration, plan, coverage, child)
    result = estimate_stage("ais", target, plan, child, progressbar, options)
    result = with_diagnostics(result, {
        "confirmation_n_modes": exploration.n_modes, "reference_draws_components": added,
    })  # fmt: skip
    return result, options["path"].reference, stage_rngs(child)["mode_sets"]


# The arbiter's streams: the children of the call's seed at this position, beyond the
# confirmation's.
ARBITER_STREAM = CONFIRMATION_STREAM + 1


def arbiter_stage(
    target, plan, seed, progressbar: bool, kwargs: dict, first_reference, confirmation_reference
) -> Evidence:
    """Stage 6b, where the confirmation neither confirmed AIS from the first exploration nor
    failed, and one of the two passes its own diagnostics (:func:`~pm_evidence.auto.verdicts.needs_arbiter`): a third
    exploration and AIS from its mixture, every stream a child of :func:`confirmation_seed` at
    ``ARBITER_STREAM`` (no randomness shared with the stages or the confirmation). Its
    diagnostics hold, for the first exploration's mixture (``first_reference``) and the
    confirmation's (``confirmation_reference``), the posterior mass that mixture holds and
    this one lacks (``arbiter_first_mass_missed``, ``arbiter_second_mass_missed``) and the
    mass this one holds and that mixture lacks (``arbiter_first_mass_added``,
    ``arbiter_second_mass_added``; :func:`~pm_evidence.search.coverage.held_and_missed`), as
    shares of the ``Z`` this AIS estimates (a mixture that missed the main mode covers minor
    modes only: their share of the mass it covers is near 1, their share of ``Z`` is not),
    which :func:`~pm_evidence.auto.verdicts.arbitrated` reads."""
    result, reference, rng = _explored_ais(target, plan, seed, progressbar, kwargs, ARBITER_STREAM)
    log_z = result.log_z if np.isfinite(result.log_z) else None
    facts = {}
    for name, other in (("first", first_reference), ("second", confirmation_reference)):
        facts[f"arbiter_{name}_mass_missed"] = held_and_missed(
            other, reference, target.log_density, rng, log_z=log_z
        )
        facts[f"arbiter_{name}_mass_added"] = held_and_missed(
            reference, other, target.log_density, rng, log_z=log_z
        )
    return with_diagnostics(result, facts)


# ------------------------------------------------------------------------------- 7. The choice


def _settled(first, second, primary, check, failures, facts) -> Evidence:
    """The result of the pair: the better supported of the two, or the one left, flagged as
    unchecked, or the error where neither is."""
    if first is None and second is None:
        raise nothing_left(f"method='auto' ({primary} checked by {check})", failures)
    if first is not None and second is not None:
        chosen = cross_checked(first, second)
    else:
        chosen = first if first is not None else second
        missing = check if first is not None else primary
        chosen = with_warning(chosen, (
            f"method='auto' returns {chosen.method} unchecked: {missing}, its independent "
            f"check, failed (below), so nothing confirms this estimate. Compare it with "
            f"another method (method=['ais', 'rts'] with reference='prior', or bridge on "
            f"more posterior draws)."
        ))  # fmt: skip
    return _with_failures(with_diagnostics(chosen, facts), failures)


def term_check_stage(target, result: Evidence, plan, seed) -> Evidence:
    """Stage 7, where no exploration ran: ``result`` checked against the modes of the terms of
    the model's log-sum-exps that the draws of ``plan`` did not visit
    (``pm_evidence.run_methods.term_checked``), on the ``"term_check"`` stream of ``seed``."""
    return term_checked(target, [result], plan, stage_rngs(seed))[0]


# ------------------------------------------------------------------------------- Small helpers


def _with_failures(ev: Evidence, failures: dict[str, str]) -> Evidence:
    """``ev`` with a warning for every failed stage not already on it."""
    new = [f"method='auto': {text}." for text in failures.values()]
    return dataclasses.replace(
        ev, warnings=(*ev.warnings, *(m for m in new if m not in ev.warnings))
    )
