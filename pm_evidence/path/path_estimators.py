r"""Estimators as follow-ups on run records: ``ais(run)``, ``raise_(run)``, ``ads(run)``,
``rts(run)``, ``ti(run)``, ``mbar(run)``.

Each reads an :class:`~pm_evidence.path.runs.AnnealingRun` or :class:`~pm_evidence.path.runs.TemperingRun`
(nothing is sampled here), calls a pure estimator core of :mod:`pm_evidence.estimators`, and
returns an :class:`~pm_evidence.core.evidence.Evidence` whose ``warnings`` carry every check that
failed (weight ESS, Pareto k-hat, R-hat of the NUTS draws, occupancy, empty rungs, ...).

>>> plan = pme.make_plan(model, random_seed=1)
>>> tempered = pme.run_tempering(plan, rng=np.random.default_rng(2))
>>> pme.path_estimators.rts(tempered), pme.path_estimators.ti(tempered)

Which estimates check each other: AIS and RAISE (a sandwich, different runs), AIS or ADS
against RTS, TI or MBAR (different samplers, same plan). ADS reads AIS's run, TI and MBAR read
RTS's: they share its draws and are not independent checks of it.

Every result says how its run stopped (:mod:`pm_evidence.path.runs`): ``stopped_by``
(``"target_se"``, ``"max_evaluations"``, ``"max_chains"``, ...), ``se_reached``, the run's
``n_evaluations`` and ``max_evaluations``, and the plan's ``n_setup_evaluations``; and how the
kernel was chosen (``kernel_reason``, ``n_gibbs_blocks``). A run that spent its evaluation
budget before reaching ``target_se`` is not flagged for it: its SE is honest, only larger
than asked.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pm_evidence.core.evidence import Evidence, build_evidence
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.methods import ADS_VERSIONS, TI_VARIANTS, check_choice
from pm_evidence.core.utils import log_mean_exp, normalized_weights, renamed_module_names
from pm_evidence.estimators.annealed import (
    ads_binary_core,
    ads_multinomial_core,
    ais_core,
    raise_core,
)
from pm_evidence.estimators.base import Estimate
from pm_evidence.estimators.messages import flag, se_messages, weight_messages
from pm_evidence.estimators.tempered import mbar_core, rts_core, rts_log_z, ti_core
from pm_evidence.path.runs import AnnealingRun, TemperingRun

__all__ = [
    "ADS_VERSIONS",
    "TI_VARIANTS",
    "ads",
    "ais",
    "mbar",
    "occupancy_messages",
    "raise_",
    "rts",
    "ti",
]

# each follow-up is named after its method (``raise_``: RAISE, ``method="raise"``; the trailing
# underscore because ``raise`` is Python's); the old name still works, with a FutureWarning
__getattr__ = renamed_module_names(globals(), {"reverse_ais": "raise_"})

# A rung visited less than this fraction of its target r_k is flagged: RTS runs that were far
# off had rungs visited well below it (measured: docs/benchmarks.rst, Measurements behind the
# defaults).
MIN_OCCUPANCY_RATIO = 0.5
# TI is flagged when its ladder's discretization correction exceeds this many Monte Carlo SEs.
DISCRETIZATION_SE_RATIO = 2.0


def _stats(betas: np.ndarray, **per_rung) -> xr.Dataset:
    """Per-rung diagnostics as a Dataset on dim ``rung`` with coordinate ``beta``."""
    data = {}
    for name, value in per_rung.items():
        value = np.asarray(value)
        dims = ("rung",) if value.ndim == 1 else ("rung", "rung_to")
        data[name] = (dims, value)
    return xr.Dataset(data, coords={"beta": ("rung", betas)})


def _common_diagnostics(run: AnnealingRun | TemperingRun) -> dict:
    plan, sampler = run.plan, run.sampler
    annealing = {"start_allocation_gain": run.start_allocation_gain} if isinstance(
        run, AnnealingRun
    ) else {}  # fmt: skip
    return {
        **annealing,
        "reference": plan.path.reference.name,
        "reference_reason": plan.reference_reason,
        **plan.reference_diagnostics,
        "kernel": plan.kernel.name,
        "kernel_reason": plan.kernel_reason,
        "n_gibbs_blocks": None if plan.kernel.blocks is None else len(plan.kernel.blocks),
        "ladder": run.ladder.how,
        "path_length": plan.length,
        "n_rungs": run.ladder.n_rungs,
        "n_evaluations": int(sampler.n_evaluations),
        "n_setup_evaluations": int(plan.n_setup_evaluations),
        "n_nonfinite_rejected": int(np.sum(sampler.nonfinite)),
        "target_se": run.options.target_se,
        "target_se_reached": run.target_se_reached,
        "se_reached": run.se_reached,
        "max_evaluations": run.options.max_evaluations,
        "stopped_by": run.stopped_by,
    }


def _check(run, cls, name: str):
    if not isinstance(run, cls) or (cls is AnnealingRun and run.reverse != (name == "raise")):
        wanted = {
            "ais": "an AnnealingRun from run_annealing",
            "ads": "an AnnealingRun from run_annealing",
            "raise": "an AnnealingRun from run_reverse_annealing",
        }.get(name, "a TemperingRun from run_tempering")
        raise EvidenceInputError(f"{name} reads {wanted}, got {type(run).__name__}.")


def ais(run: AnnealingRun) -> Evidence:
    r"""AIS: ``log Z = log mean_i w_i`` over the annealing run's chains (seed 000 eq. (8); Neal
    2001), a stochastic lower bound on ``log Z`` (in expectation).

    Parameters
    ----------
    run : AnnealingRun
        From :func:`~pm_evidence.path.runs.run_annealing`.

    Returns
    -------
    Evidence
        ``log_weights`` group: the chains' final log weights; ``sample_stats``: per-rung
        acceptance, non-finite rejections, step size and the running ``log Z_k``.
    """
    _check(run, AnnealingRun, "ais")
    sampler = run.sampler
    estimate = ais_core(sampler.log_weights, run.batch_sizes)
    messages = weight_messages(
        estimate.diagnostics,
        "The AIS weights",
        "log Z is likely under-estimated and its SE unreliable; use more rungs (n_rungs), more "
        "transitions per rung (n_steps) or a reference closer to the posterior.",
    )
    estimate.diagnostics.update(_common_diagnostics(run))
    stats = _stats(
        run.ladder.betas, acceptance=sampler.acceptance, nonfinite=sampler.nonfinite,
        step_size=run.ladder.step_size, log_z_rungs=log_mean_exp(sampler.log_weights_rungs, axis=1),
    )  # fmt: skip
    return build_evidence(
        run.plan.target, estimate, "ais",
        {"log_weight": (("ais_chain",), sampler.log_weights)}, stats,
        warnings=flag([*run.plan.messages, *messages, *se_messages(estimate)]),
    )  # fmt: skip


def raise_(run: AnnealingRun) -> Evidence:
    r"""RAISE: ``log Z = -log mean_i w_i`` over reverse chains started at posterior draws
    (Burda et al. 2015; seed 004 §3.2). For exact posterior draws ``E[w] = 1/Z`` and this is a
    stochastic upper bound; from MCMC draws it is an estimate with no definite bias direction,
    and the result always says so.

    Parameters
    ----------
    run : AnnealingRun
        From :func:`~pm_evidence.path.runs.run_reverse_annealing`.

    Returns
    -------
    Evidence
    """
    _check(run, AnnealingRun, "raise")
    sampler = run.sampler
    estimate = raise_core(sampler.log_weights)
    messages = weight_messages(
        estimate.diagnostics,
        "The reverse AIS weights",
        "log Z is likely over-estimated and its SE unreliable; use more rungs (n_rungs), more "
        "transitions per rung (n_steps) or a reference closer to the posterior.",
    )
    messages.append(
        f"RAISE started from {sampler.log_weights.size} MCMC draws (NUTS, idata or a burn-in "
        f"of the path's kernel), not exact posterior draws: E[w] = 1/Z, and with it the upper "
        f"bound, holds only for exact draws, so this log Z is an estimate with no definite bias "
        f"direction (seen below the exact value by up to 4.6 SE on a hierarchical model), not "
        f"a bound."
    )
    estimate.diagnostics.update(_common_diagnostics(run))
    stats = _stats(
        run.ladder.betas, acceptance=sampler.acceptance[::-1], nonfinite=sampler.nonfinite[::-1],
        step_size=run.ladder.step_size,
    )  # fmt: skip
    return build_evidence(
        run.plan.target, estimate, "raise",
        {"log_weight": (("raise_chain",), sampler.log_weights)}, stats,
        warnings=flag([*run.plan.messages, *messages, *se_messages(estimate)]),
    )  # fmt: skip


def ads(run: AnnealingRun, version: str = "binary") -> Evidence:
    r"""Annealed discriminance sampling on AIS's own draws and weights (seed 000 §5).

    Parameters
    ----------
    run : AnnealingRun
        From :func:`~pm_evidence.path.runs.run_annealing`.
    version : {"binary", "multinomial"}
        Sequential binary classifications between neighbouring rungs (Alg. 1, eqs. (6)-(9)),
        or one multinomial classification over all rungs (Alg. 2, eq. (5)).

    Returns
    -------
    Evidence
        Diagnostics include ``version`` and ``min_gamma`` (binary) or ``n_iter``.
    """
    check_choice("version", version)
    _check(run, AnnealingRun, "ads")
    sampler = run.sampler
    outside = int(np.sum(~np.isfinite(sampler.delta[0])))
    if outside:
        raise EvidenceInputError(
            f"ADS classifies draws between neighbouring rungs by Delta = log f - log p0, and "
            f"{outside} of {sampler.delta.shape[1]} reference draws lie where the target's "
            f"density is zero (Delta = -inf): the classification has no finite solution. Use "
            f"AIS, RTS or MBAR (they handle draws outside the support), or a reference inside "
            f"the target's support."
        )
    core = ads_binary_core if version == "binary" else ads_multinomial_core
    estimate = core(sampler.delta, sampler.log_weights_rungs, run.ladder.betas)
    estimate.diagnostics.update(_common_diagnostics(run))
    estimate.diagnostics["version"] = version
    stats = _stats(run.ladder.betas, acceptance=sampler.acceptance, nonfinite=sampler.nonfinite)
    return build_evidence(
        run.plan.target, estimate, "ads",
        {"log_weight": (("ais_chain",), sampler.log_weights)}, stats,
        warnings=flag([*run.plan.messages, *se_messages(estimate)]),
    )  # fmt: skip


# ---------------------------------------------------------------------- tempering
def _tempered_stats(run: TemperingRun) -> xr.Dataset:
    sampler = run.sampler
    c_hat = sampler.c_hat
    return _stats(
        run.ladder.betas,
        acceptance=sampler.acceptance,
        nonfinite=sampler.nonfinite,
        occupancy=c_hat,
        occupancy_counts=sampler.count.sum(axis=0) / sampler.n_iterations.sum(),
        prior_r=normalized_weights(sampler.log_r),
        log_z_rungs=rts_log_z(c_hat, sampler.log_r, sampler.log_zhat),
        log_zhat=sampler.log_zhat - sampler.log_zhat[0],
        transitions=sampler.transitions,
        step_size=run.ladder.step_size,
    )


def occupancy_messages(run: TemperingRun) -> list[str]:
    """The warning of a tempering run whose chains rarely visit one of its rungs.

    Parameters
    ----------
    run : TemperingRun
        A finished tempering run (RTS, TI, MBAR).

    Returns
    -------
    list of str
        One message when the least-visited rung was occupied less than
        ``MIN_OCCUPANCY_RATIO`` times its target share ``r_k``; else none.
    """
    sampler = run.sampler
    ratio = sampler.c_hat / normalized_weights(sampler.log_r)
    worst = int(np.argmin(ratio))
    if not ratio[worst] < MIN_OCCUPANCY_RATIO:
        return []
    return [
        f"The tempered chains occupy rung {worst} (beta = {sampler.betas[worst]:.3g}) only "
        f"{ratio[worst]:.2f} times as often as its target r_k (below {MIN_OCCUPANCY_RATIO}): they "
        f"rarely cross that part of the ladder, so the estimates of this run (RTS, TI, MBAR) and "
        f"their SEs are unreliable. Use more rungs there, more initial iterations, or a reference "
        f"closer to the posterior."
    ]


def _tempered_common(run: TemperingRun) -> tuple[dict, list[str]]:
    diagnostics = _common_diagnostics(run)
    history = run.init_history
    diagnostics["n_init_iterations"] = len(history)
    diagnostics["init_max_abs_r_minus_c"] = history[-1] if history else np.nan
    diagnostics["interrupted"] = bool(run.sampler.interrupted)
    diagnostics["n_reference_draws_outside_support"] = run.n_outside_support
    diagnostics["n_sweeps"] = round(float(run.sampler.n_iterations.sum()) / run.options.n_chains)
    messages = [*run.plan.messages, *run.messages, *occupancy_messages(run)]
    return diagnostics, messages


def rts(run: TemperingRun) -> Evidence:
    r"""Rao-Blackwellized tempered sampling (seed 004 §2, eqs. (9), (12), (16)).

    ``c_k = mean_t q(beta_k | x_t)`` and ``Z_k = Zhat_k (r_1/r_k)(c_k/c_1)``; the SE is
    eq. (16) with the ``c`` (co)variances from the spread across chains.

    Parameters
    ----------
    run : TemperingRun
        From :func:`~pm_evidence.path.runs.run_tempering`.

    Returns
    -------
    Evidence
        Diagnostics include ``log_z_count``/``se_count`` (the count estimator, seed 004 §4.3);
        ``sample_stats`` holds per-rung occupancy ``c_k``, ``prior_r``, acceptance and the
        ``beta`` transition matrix.
    """
    _check(run, TemperingRun, "rts")
    sampler = run.sampler
    diagnostics, messages = _tempered_common(run)
    estimate = rts_core(sampler.c_sum, sampler.n_iterations, sampler.log_r, sampler.log_zhat)
    counts = rts_core(
        sampler.count, sampler.n_iterations, sampler.log_r, sampler.log_zhat, pseudo_count=0.1
    )
    estimate.diagnostics.update(diagnostics)
    estimate.diagnostics.update(log_z_count=counts.log_z, se_count=counts.se)
    return build_evidence(
        run.plan.target, estimate, "rts", {}, _tempered_stats(run),
        warnings=flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip


def ti(run: TemperingRun, variant: str = "rb", corrected: bool = True) -> Evidence:
    r"""Thermodynamic integration on the tempered draws (seed 004 §3.4, eqs. (20)-(21)).

    ``log Z = int_0^1 E_beta[Delta] d beta`` with ``E_{beta_k}[Delta]`` from the tempered draws:
    ``variant="rb"`` (TI-RB, eq. (21): every draw weighted by ``q(beta_k | x)``), ``"trapezoid"``
    or ``"riemann"`` (the draws at each rung). With ``corrected=True`` the trapezoid variants add
    the Euler-Maclaurin correction ``-sum_k h_k^2 (v_k - v_{k-1}) / 12`` with
    ``v_k = Var_{beta_k}[Delta]`` (Friel, Hurn & Wyse 2014). Every variant is reported in the
    diagnostics. The SE is the Monte Carlo part only (not the ladder's discretization error).

    Parameters
    ----------
    run : TemperingRun
    variant : {"rb", "trapezoid", "riemann"}
    corrected : bool

    Returns
    -------
    Evidence
        Diagnostics include ``variant``, ``corrected``, ``n_empty_rungs``, ``log_z_rb``,
        ``log_z_rb_corrected``, ``log_z_trapezoid``, ``log_z_trapezoid_corrected``,
        ``log_z_riemann``.
    """
    check_choice("variant", variant)
    _check(run, TemperingRun, "ti")
    sampler, betas = run.sampler, run.ladder.betas
    diagnostics, messages = _tempered_common(run)
    sums = {  # variant -> (weights, sums of Delta, sums of Delta^2)
        "rb": (sampler.c_sum, sampler.rb_delta_sum, sampler.rb_delta2_sum),
        "trapezoid": (sampler.count, sampler.count_delta_sum, sampler.count_delta2_sum),
        "riemann": (sampler.count, sampler.count_delta_sum, sampler.count_delta2_sum),
    }
    results = {}
    for name, (weights, delta_sum, delta2_sum) in sums.items():
        rule = "riemann" if name == "riemann" else "trapezoid"
        results[name] = ti_core(betas, weights, delta_sum, rule=rule)
        if rule == "trapezoid":
            results[f"{name}_corrected"] = ti_core(
                betas, weights, delta_sum, rule="trapezoid", corrected=True, delta2_sum=delta2_sum
            )
    chosen = results[f"{variant}_corrected" if corrected and variant != "riemann" else variant]
    estimate = Estimate(
        chosen.log_z, chosen.se, dict(chosen.diagnostics, variant=variant, corrected=corrected)
    )
    estimate.diagnostics.update(diagnostics)
    for name, value in results.items():
        estimate.diagnostics[f"log_z_{name}"] = value.log_z
    if run.n_outside_support:
        messages.append(
            f"{run.n_outside_support} of {run.options.n_chains} reference draws lie where the "
            f"target's density is zero (Delta = -inf): E_beta[Delta] jumps at beta = 0 and TI "
            f"misses the term log P_p0(f > 0), so its log Z is too high. Use RTS or MBAR (they "
            f"include it), or a reference inside the target's support."
        )
    if corrected and variant != "riemann":
        correction = results[f"{variant}_corrected"].log_z - results[variant].log_z
        estimate.diagnostics["discretization_correction"] = correction
        if abs(correction) > DISCRETIZATION_SE_RATIO * estimate.se:
            messages.append(
                f"The Euler-Maclaurin correction of TI on this ladder of {betas.size} rungs is "
                f"{correction:+.3g}, more than {DISCRETIZATION_SE_RATIO:g} times the Monte Carlo "
                f"SE ({estimate.se:.3g}): the ladder is coarse for TI, and the error left after "
                f"the correction is not in the SE. Use more rungs (n_rungs) or RTS/MBAR on the "
                f"same run (they have no discretization error)."
            )
    n_empty = estimate.diagnostics["n_empty_rungs"]
    if n_empty:
        messages.append(
            f"{n_empty} of {betas.size} rungs have no draws in this TI variant ({variant!r}); "
            f"their E_beta[Delta] is interpolated linearly in beta, an error the SE does not "
            f"include. Use variant='rb' (every draw counts at every rung) or a longer run."
        )
    return build_evidence(
        run.plan.target, estimate, "ti", {}, _tempered_stats(run),
        warnings=flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip


def mbar(run: TemperingRun) -> Evidence:
    r"""MBAR on the tempered draws (seed 004 eq. (18); Shirts & Chodera 2008).

    Maximizes eq. (18), convex in ``log Z_k``, by Newton's method from the RTS estimate; the SE
    is the chain-clustered sandwich. Rungs without draws are left out, with a warning.

    Parameters
    ----------
    run : TemperingRun
        A run made with ``record=True`` (``Delta`` and the rung of every draw).

    Returns
    -------
    Evidence
        Diagnostics include ``n_draws``, ``n_iter``, ``n_dropped_rungs`` and
        ``first_dropped_rung`` (-1 when none).
    """
    _check(run, TemperingRun, "mbar")
    sampler, betas = run.sampler, run.ladder.betas
    if sampler.delta_draws is None:
        raise EvidenceInputError(
            "MBAR needs every draw of the tempered run: make the run with "
            "TemperingOptions(record=True)."
        )
    diagnostics, messages = _tempered_common(run)
    estimate = mbar_core(
        sampler.delta_draws, sampler.rung_draws, betas, unit=sampler.unit_of_chain_draw,
        log_z0=rts_log_z(sampler.c_hat, sampler.log_r, sampler.log_zhat),
    )  # fmt: skip
    estimate.diagnostics.update(diagnostics)
    dropped = estimate.diagnostics["n_dropped_rungs"]
    if dropped:
        messages.append(
            f"{dropped} of {betas.size} rungs have no draws (e.g. rung "
            f"{estimate.diagnostics['first_dropped_rung']}); MBAR used the other rungs only. It "
            f"stays consistent, but the tempered chains left a gap in the ladder, so check the "
            f"occupancy (sample_stats) and compare with RTS."
        )
    return build_evidence(
        run.plan.target, estimate, "mbar", {}, _tempered_stats(run),
        warnings=flag([*messages, *se_messages(estimate)]),
    )  # fmt: skip
