"""The verdicts of ``method="auto"``: which of two or three estimates of one ``log Z`` is
returned, and whether it is confirmed, from the estimates alone (pure functions of
:class:`~pm_evidence.Evidence` values; :mod:`pm_evidence.auto` runs the stages that make them).

* :func:`cross_checked`: the better supported of an estimate and its cross-check, a
  disagreement over ``DISAGREEMENT_Z`` combined SEs a warning on it;
* :func:`unconfirmed_draws`: why the estimate on the posterior draws cannot confirm AIS from
  the exploration's mixture, so that a second exploration has to;
* :func:`confirmed_or_flagged`, :func:`confirms_the_confirmation`: AIS from the exploration
  confirmed by the second exploration's AIS, or flagged; where the two explorations' mixtures
  differ by a small share of the posterior mass that the two SEs cannot resolve, the SE grows
  by what that mass could shift (:func:`with_unshared_mass_se`);
* :func:`needs_arbiter`, :func:`arbitrated`: the third exploration's verdict.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pm_evidence.core.evidence import DISAGREEMENT_Z, Evidence, format_estimate
from pm_evidence.core.utils import warn_user
from pm_evidence.search.coverage import MISSED_SHARE

__all__ = [
    "CONFIRMATION_SE_RATIO",
    "DRAWS_MISSED_MODES",
    "WIDENED_SHIFT_MAX",
    "arbitrated",
    "combined_z",
    "confirmed_or_flagged",
    "confirms_the_confirmation",
    "cross_checked",
    "needs_arbiter",
    "resolves",
    "returns_the_confirmation",
    "unconfirmed_draws",
    "unresolved_mass",
    "unshared_shift",
    "with_diagnostics",
    "with_unshared_mass_se",
    "with_warning",
]


# Why the posterior draws cannot confirm AIS from the exploration, the usual case, in the words
# of the result (unconfirmed_draws gives the other).
DRAWS_MISSED_MODES = "the posterior draws missed modes that tempering from the prior found"


def unconfirmed_draws(
    draws_estimate: Evidence | None, check: Evidence | None, missed_by_draws: float
) -> str:
    """Why the estimate on the posterior draws cannot confirm AIS from the exploration's
    mixture (empty where it can, and where AIS, ``check``, failed: nothing to confirm), so that
    a second exploration is needed to confirm it:

    * the draws missed components of the exploration holding at least ``MISSED_SHARE`` of its
      mass (``missed_by_draws``: :func:`~pm_evidence.search.coverage.compare_coverage`);
    * or the estimate on them fails its own diagnostics (R-hat, ESS, Pareto k-hat: chains stuck
      at local modes that a few chains left) and disagrees by more than ``DISAGREEMENT_Z``
      combined SEs with AIS, which has no warning (on two-frequency signals a few of the 16
      chains reach the main mode, so no component counts as missed, while bridge on all of
      them is tens of nats low);
    * or the estimate on them failed (bridge's reference does not overlap draws whose chains
      sit in different period modes of a radial-velocity model): nothing else can check AIS.

    ``draws_estimate`` is ``None`` where it was not run (:func:`~pm_evidence.auto.estimate_skipped`: the draws
    missed modes) or failed.
    """
    if check is None:
        return ""
    if missed_by_draws >= MISSED_SHARE:
        return DRAWS_MISSED_MODES
    if draws_estimate is None:
        return "the estimate on the posterior draws failed"
    z = combined_z(draws_estimate, check)
    if not draws_estimate.reliable and check.reliable and not z <= DISAGREEMENT_Z:
        return (
            f"the estimate on the posterior draws ({draws_estimate.method}) fails its own "
            f"diagnostics and disagrees with it by {z:.1f} combined SEs"
        )
    return ""


def confirmed_or_flagged(
    estimate, nuts_estimate, confirmation, facts: dict,
    why: str = DRAWS_MISSED_MODES,
) -> Evidence:  # fmt: skip
    """``estimate`` (AIS from the exploration's mixture) confirmed by ``confirmation`` where
    ``estimate`` carries no warning, the two agree within ``DISAGREEMENT_Z`` combined SEs and
    the two explorations found the same modes (the confirmation's
    ``confirmation_unshared_mass`` within what the comparison resolves:
    :func:`unresolved_mass`), and the confirmation resolves the estimate (its SE at most
    ``CONFIRMATION_SE_RATIO`` times the estimate's: :func:`resolves`;
    ``confirmation_resolves``):
    the better supported of the two, ``reliable`` unless something else says otherwise. Where
    they agree but their mixtures differ by mass that could shift ``log Z`` by up to
    ``WIDENED_SHIFT_MAX`` nats and their SEs cannot resolve it, the same, with both SEs grown
    by half that shift (:func:`with_unshared_mass_se`; ``se_unshared_mass`` in the
    diagnostics). A
    warning on the confirmation (heavy-tailed weights: an SE that is too small, if anything)
    does not stop it confirming, since an SE too small can only make a chance agreement less
    likely; its warnings are kept in the diagnostics (``confirmation_warnings``). Where
    ``estimate`` fails its own diagnostics and the confirmation passes them, the roles turn
    round: the confirmation is returned, confirmed, where the two agree, the first's SE
    counted at most as the confirmation's (:func:`confirms_the_confirmation`;
    ``confirmation_log_z``, ``confirmation_se`` and ``confirmation_warnings`` then hold the
    first's). Otherwise
    ``estimate`` flagged as unconfirmed, with both numbers; where ``estimate`` fails its own
    diagnostics and the confirmation does not, the confirmation is the one returned, flagged
    likewise (``confirmation_log_z`` then holds the first: an exploration that missed the
    main mode gives an AIS many nats low with an ESS near 1, where the second exploration may
    find it). ``nuts_estimate`` (bridge on the
    draws that missed the modes; ``None`` where it did not run: :func:`~pm_evidence.auto.estimate_skipped`)
    is kept in the diagnostics only. ``why``: why the draws could
    not confirm it (:func:`unconfirmed_draws`), in the words of the result."""
    facts["auto_nuts_method"] = getattr(nuts_estimate, "method", None)
    facts["auto_nuts_log_z"] = getattr(nuts_estimate, "log_z", np.nan)
    unshared, different_modes, resolved = np.nan, False, True
    if confirmation is not None:
        facts["confirmation_log_z"] = confirmation.log_z
        facts["confirmation_se"] = confirmation.se
        z = combined_z(estimate, confirmation)
        facts["confirmation_z"] = z
        facts["confirmation_warnings"] = tuple(confirmation.warnings)
        unshared = confirmation.diagnostics.get("confirmation_unshared_mass", np.nan)
        facts["confirmation_unshared_mass"] = unshared
        different_modes = unresolved_mass(unshared, estimate, confirmation)
        resolved = resolves(confirmation, estimate)
        facts["confirmation_resolves"] = resolved
        if z <= DISAGREEMENT_Z and estimate.reliable and not different_modes and resolved:
            facts["confirmed_by"] = (
                f"a second exploration from the prior with its own random stream, and AIS from "
                f"its mixture ({why})"
            )
            return cross_checked(estimate, confirmation)
        shift = unshared_shift(unshared)
        if (
            z <= DISAGREEMENT_Z
            and estimate.reliable
            and different_modes
            and shift <= WIDENED_SHIFT_MAX
            and resolved
        ):
            facts["se_unshared_mass"] = 0.5 * shift
            facts["confirmed_by"] = (
                f"a second exploration from the prior with its own random stream, and AIS from "
                f"its mixture ({why}); the two explorations' mixtures differ by {unshared:.1%} "
                f"of the posterior mass, which could shift log Z by up to {shift:.3f} nats, so "
                f"the SE includes half of that ({0.5 * shift:.3f}, se_unshared_mass)"
            )
            return cross_checked(
                with_unshared_mass_se(estimate, shift), with_unshared_mass_se(confirmation, shift)
            )
        if confirms_the_confirmation(estimate, confirmation, unshared):
            # the confirmation passes its diagnostics and the first, which fails them, agrees
            # with it, its SE counted at most as the confirmation's: the roles turned round
            facts["confirmation_log_z"], facts["confirmation_se"] = estimate.log_z, estimate.se
            facts["confirmation_warnings"] = tuple(estimate.warnings)
            facts["confirmed_by"] = (
                f"the first exploration's AIS, which fails its own diagnostics but agrees with "
                f"this one within {DISAGREEMENT_Z:g} combined SEs (its own SE counted at most "
                f"as this one's) and whose exploration found the same modes; this one is AIS "
                f"from a second exploration from the prior with its own random stream ({why})"
            )
            return cross_checked(confirmation, estimate)
    found = (
        "the confirmation failed (below)" if confirmation is None else
        f"a second exploration with its own random stream gave "
        f"{format_estimate(confirmation.log_z, confirmation.se)} against "
        f"{format_estimate(estimate.log_z, estimate.se)}"
    )  # fmt: skip
    if not resolved:
        found += (
            f", an SE {confirmation.se / estimate.se:.1f} times this estimate's: their agreement "
            f"bounds only errors it resolves, not errors of this estimate's size"
        )
    if different_modes:  # agreeing or not, they did not cover the same mass
        found += (
            f", but the two explorations found different modes: {unshared:.0%} of the "
            f"posterior mass one of them holds lies where the other has no component (two "
            f"estimates that each miss the same mass agree, e.g. each on one mirror image of "
            f"a symmetric posterior)"
        )
    if returns_the_confirmation(estimate, confirmation):
        # the first exploration's AIS fails its own diagnostics (its mixture missed the mode
        # that holds the mass: AIS is a lower bound, its weights degenerate): the second one,
        # without a warning, is the better supported, still unconfirmed
        facts["confirmation_log_z"], facts["confirmation_se"] = estimate.log_z, estimate.se
        estimate = confirmation
        found += " (the first fails its own diagnostics; the second is returned)"
    start = (
        "a mixture fitted to the posterior draws"
        if estimate.diagnostics.get("reference_drawn_components") else "the exploration's mixture"
    )  # fmt: skip
    estimate = with_warning(estimate, (
        f"No independent confirmation: {why}, so this estimate ({estimate.method} from "
        f"{start}) is the only one that covers the posterior, and {found}; "
        f"the exploration can miss modes too "
        f"(narrow ones, or mass in the far tails of the unconstrained space). Compare it with "
        f"a run from another reference, e.g. method=['ais', 'rts'] with reference='prior'."
    ))  # fmt: skip
    if nuts_estimate is None:  # not run (estimate_skipped) or failed: nothing to compare
        return with_diagnostics(estimate, {
            "auto_pair": f"{estimate.method} (no estimate on the posterior draws to compare)"
        })  # fmt: skip
    return cross_checked(estimate, nuts_estimate, prefer_first=True)


def confirms_the_confirmation(
    estimate: Evidence, confirmation: Evidence | None, unshared: float
) -> bool:
    """Whether AIS from the first exploration (``estimate``), which fails its own diagnostics,
    confirms the confirmation, which passes them (:func:`confirmed_or_flagged`). The two
    explorations are exchangeable (each from the prior, on a stream of its own), so the one
    that passes its diagnostics is confirmed by the other as the first would be by the
    second, save that the failing one's SE is not trusted (heavy-tailed or degenerate
    weights: too small or too large): it counts only where it is below the confirmation's SE
    ``s``, which makes the test stricter, and is ``s`` otherwise, so the two must agree within
    ``DISAGREEMENT_Z`` combined SEs, at most ``DISAGREEMENT_Z sqrt(2) s``, and the mass one
    exploration's mixture holds and the other's lacks (``unshared``) must be resolved at that
    precision (:func:`unresolved_mass`).

    Why: on the eggbox the first AIS's weights often have a Pareto k-hat above 0.7 while a
    confirmation without a warning agrees with it; without this rule the arbiter (a third
    exploration and AIS, a quarter to a third of the call) would run on most seeds to confirm
    what two agreeing estimates already show (measured: docs/benchmarks.rst)."""
    if not returns_the_confirmation(estimate, confirmation):  # not the one failing alone
        return False
    at_its_precision = dataclasses.replace(estimate, se=min(estimate.se, confirmation.se))
    return combined_z(at_its_precision, confirmation) <= DISAGREEMENT_Z and not unresolved_mass(
        unshared, at_its_precision, confirmation
    )


def returns_the_confirmation(estimate: Evidence, confirmation: Evidence | None) -> bool:
    """Whether :func:`confirmed_or_flagged` returns the confirmation in place of ``estimate``
    (AIS from the first exploration's mixture): where ``estimate`` fails its own diagnostics
    and the confirmation does not."""
    return confirmation is not None and confirmation.reliable and not estimate.reliable


# Two explorations whose AIS estimates agree but whose mixtures differ by posterior mass
# that could shift log Z by at most this many nats (10% of the mass) give a result whose SE
# includes that shift (with_unshared_mass_se); beyond it the result is flagged (mirror images
# one exploration found and the other did not: log 2 nats and more).
WIDENED_SHIFT_MAX = 0.1

# A confirmation (or the arbiter) resolves the estimate it confirms where its SE is at most this
# many times the estimate's (resolves). On the multimodal zoo at defaults the confirmations'
# SEs were 1.0-1.3 times the estimates', 2.15 once (12 confirmations, seeds 1-3); on a
# two-planet orbit a confirmation of SE 0.29 agreed, within 1.4 combined SEs, with an estimate
# of SE 0.049 that was 0.29 nats (5.7 of its SEs) low (measured: docs/benchmarks.rst, "The
# draws' mixture where the exploration missed most of the mass").
CONFIRMATION_SE_RATIO = 3.0


def resolves(check: Evidence, estimate: Evidence) -> bool:
    """Whether ``check`` (a second or third exploration's AIS) is precise enough to confirm
    ``estimate``: its SE at most ``CONFIRMATION_SE_RATIO`` times ``estimate``'s. Two estimates
    agree within ``DISAGREEMENT_Z`` combined SEs even where the more precise one misses mass
    worth several of its own SEs, when the other's SE is that large: the agreement bounds only
    what the check resolves, and a result confirmed by it would claim the estimate's
    precision."""
    return bool(check.se <= CONFIRMATION_SE_RATIO * estimate.se)


def unshared_shift(unshared: float) -> float:
    """``-log(1 - unshared)``: how far ``log Z`` moves when a share ``unshared`` of the
    posterior mass is left out (0 where ``unshared`` is not finite)."""
    if not np.isfinite(unshared):
        return 0.0
    return float(-np.log1p(-min(float(unshared), 1.0 - 1e-12)))


def with_unshared_mass_se(estimate: Evidence, shift: float) -> Evidence:
    r"""``estimate`` with its SE grown by half of ``shift`` (:func:`unshared_shift`), the most
    that mass one exploration's mixture holds and the other's lacks can move ``log Z``:

    .. math::
        \mathrm{SE}' = \sqrt{\mathrm{SE}^2 + (\mathrm{shift} / 2)^2},

    so an estimate from the mixture that lacks that mass, low by up to ``shift``, lies within
    two of its SEs. Where the weights' spread cannot see it, this is the spread that repeated
    explorations show: on the eccentric radial-velocity orbit
    (:func:`pm_evidence.zoo.support.eccentric_rv`, one planet), five AIS estimates from
    different explorations spread with a standard deviation of 0.015 nats where their own SEs
    were 0.005-0.008 and the shift 0.038 (half: 0.019). The diagnostics keep the SE of the
    weights alone (``se_of_weights``) and the added term (``se_unshared_mass``)."""
    half = 0.5 * shift
    return dataclasses.replace(
        estimate,
        se=float(np.hypot(estimate.se, half)),
        diagnostics={
            **estimate.diagnostics,
            "se_of_weights": estimate.se,
            "se_unshared_mass": half,
        },
    )


def unresolved_mass(unshared: float, a: Evidence, b: Evidence) -> bool:
    """Whether two explorations' mixtures differ by more posterior mass than the comparison
    of their AIS estimates ``a`` and ``b`` can see: the mass one holds and the other lacks
    (``unshared``, :func:`~pm_evidence.search.coverage.unshared_mass`), missed by both, would
    shift both by ``-log(1 - unshared)`` nats, beyond ``DISAGREEMENT_Z`` combined SEs (their
    agreement then says nothing about it). Mirror images under a symmetry the search cannot
    see: ``1 - 1/|G|``, ``log |G|`` nats; tails that two mixtures cover differently (the
    eggbox's edges) a few percent, below what four combined SEs resolve."""
    if not np.isfinite(unshared):
        return False
    shift = unshared_shift(unshared)
    return bool(shift > DISAGREEMENT_Z * float(np.hypot(a.se, b.se)))


def needs_arbiter(estimate: Evidence, confirmation: Evidence | None, facts: dict) -> bool:
    """Whether the arbiter (:func:`~pm_evidence.auto.arbiter_stage`) runs: where the confirmation ran, did not
    confirm ``estimate`` (no ``confirmed_by`` in ``facts``, which :func:`confirmed_or_flagged`
    filled), and one of the two passes its own diagnostics, so that a third exploration can
    say which of them it agrees with."""
    return (
        confirmation is not None
        and "confirmed_by" not in facts
        and (estimate.reliable or confirmation.reliable)
    )


def arbitrated(
    flagged: Evidence, estimates: tuple[Evidence, Evidence], arbiter: Evidence | None,
    facts: dict,
) -> Evidence:  # fmt: skip
    """The one of ``estimates`` (AIS from the first exploration, the confirmation's AIS) that
    the arbiter (a third exploration's AIS, :func:`~pm_evidence.auto.arbiter_stage`) confirms, or ``flagged``
    (what :func:`confirmed_or_flagged` returned) where it confirms neither or both.

    The arbiter confirms an estimate that passes its own diagnostics where, as a confirmation
    does (:func:`confirmed_or_flagged`), the two agree within ``DISAGREEMENT_Z`` combined SEs
    and their explorations found the same modes (the mass either mixture holds and the other
    lacks within what the comparison resolves, :func:`unresolved_mass`), and also where the
    mass that the other estimate's mixture holds and the arbiter's lacks is within it: two
    explorations that agree may both have missed a mode the third found, which their agreement
    would not show: on periodic signals either exploration may miss the main mode (the first
    with an ESS near 1; the confirmation, tens of nats low, without a warning of its own).
    The result's diagnostics hold the arbiter's numbers
    (``arbiter_log_z``, ``arbiter_se``, ``arbiter_z`` against the one confirmed, the four
    masses, ``arbiter_warnings``)."""
    if arbiter is None:
        return flagged
    masses = {key: value for key, value in arbiter.diagnostics.items()
              if key.startswith("arbiter_")}  # fmt: skip
    facts.update({
        "arbiter_log_z": arbiter.log_z, "arbiter_se": arbiter.se,
        "arbiter_warnings": tuple(arbiter.warnings), **masses,
    })  # fmt: skip
    confirmed = []
    names = (("first", "second"), ("second", "first"))  # each estimate's and the other's
    for estimate, (name, other) in zip(estimates, names, strict=True):
        either_way = np.fmax(masses[f"arbiter_{name}_mass_missed"],
                             masses[f"arbiter_{name}_mass_added"])  # fmt: skip
        if (
            estimate.reliable
            and combined_z(estimate, arbiter) <= DISAGREEMENT_Z
            and resolves(arbiter, estimate)
            and not unresolved_mass(either_way, estimate, arbiter)
            and not unresolved_mass(masses[f"arbiter_{other}_mass_missed"], estimate, arbiter)
        ):  # fmt: skip
            confirmed.append((name, estimate))
    if len(confirmed) != 1:
        return flagged
    name, estimate = confirmed[0]
    facts["arbiter_z"] = combined_z(estimate, arbiter)
    facts["confirmed_by"] = (
        f"a third exploration from the prior with its own random stream, and AIS from its "
        f"mixture: it agrees with the {name} exploration's AIS and found the same modes, and "
        f"the other exploration's mixture holds no mass it lacks"
    )
    return cross_checked(estimate, arbiter)


def cross_checked(estimate: Evidence, check: Evidence, prefer_first: bool = False) -> Evidence:
    """The better-supported of an estimate and its cross-check, carrying the comparison.

    Better supported: a result without warnings before one with, then the smaller SE
    (``prefer_first``: the estimate, whatever its warnings; for the one of the two that can be
    right, as when the other read draws that missed a mode). The
    returned result's diagnostics hold the other's ``log Z`` and SE and ``auto_z``, the
    difference in combined SEs; above ``pm_evidence.core.evidence.DISAGREEMENT_Z`` a warning
    says so, on the result (``reliable`` is then False) and as a :class:`UserWarning`.

    Parameters
    ----------
    estimate, check : Evidence
        The primary estimate and its cross-check.
    prefer_first : bool
        Return ``estimate`` (with the comparison) whatever the two's warnings and SEs.

    Returns
    -------
    Evidence
    """
    a, b = estimate, check
    z = combined_z(a, b)
    better = prefer_first or (not a.reliable, a.se) <= (not b.reliable, b.se)
    chosen, other = (a, b) if better else (b, a)
    diagnostics = {
        **chosen.diagnostics,
        "auto_pair": f"{a.method} checked by {b.method}",
        "auto_other_method": other.method,
        "auto_other_log_z": other.log_z,
        "auto_other_se": other.se,
        "auto_z": z,
    }
    messages = list(chosen.warnings)
    if not z <= DISAGREEMENT_Z:
        message = (
            f"method='auto': {a.method} and its cross-check {b.method} (different draws and "
            f"reference) disagree by {z:.1f} combined standard errors (> {DISAGREEMENT_Z:g}): "
            f"log Z = {format_estimate(a.log_z, a.se)} vs {format_estimate(b.log_z, b.se)}. At "
            f"least one is "
            f"wrong or under-states its error (a missed mode, a poor reference, or posterior "
            f"draws fitted to other data than the model holds: pass idata only from pm.sample "
            f"on this model and its current data); run both with "
            f"method=[{a.method!r}, {b.method!r}] and check their diagnostics."
        )
        warn_user(message)
        messages.append(message)
    return dataclasses.replace(chosen, diagnostics=diagnostics, warnings=tuple(messages))


def combined_z(a: Evidence, b: Evidence) -> float:
    """``|log Z_a - log Z_b| / hypot(se_a, se_b)``: the difference in combined standard errors
    (``inf`` where both SEs are 0)."""
    combined = float(np.hypot(a.se, b.se))
    return abs(a.log_z - b.log_z) / combined if combined > 0 else np.inf


def with_warning(ev: Evidence, message: str) -> Evidence:
    return dataclasses.replace(ev, warnings=(*ev.warnings, message))


def with_diagnostics(ev: Evidence, facts: dict) -> Evidence:
    return dataclasses.replace(ev, diagnostics={**ev.diagnostics, **facts})
