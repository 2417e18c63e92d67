"""The default reference of reverse importance sampling: a (truncated) normal chosen by its
estimated chi-square divergence to the posterior.

Reverse IS estimates ``1/Z = E_p[p0 / f]``; the relative variance of one reverse weight is
``chi^2(p0 || p)`` (seed 000 §3, its eq. (1)). A normal fitted to the posterior minimizes that
when the posterior is near normal, but where the posterior's tails are lighter than the
normal's in some direction (the log-scale of a hierarchical model under a half-normal prior:
its right tail falls like ``exp(-e^{2u})``), ``chi^2`` is astronomically large even after
truncation to the 95% ellipsoid (measured: docs/benchmarks.rst, Measurements behind the
defaults). Shrinking the normal and truncating it harder bounds the reverse weights
nearer the posterior's bulk, at a price that is small when the posterior is near normal.
Which trade-off is best depends on the model, so it is measured:
:func:`choose_reverse_reference` fits every candidate of :data:`REVERSE_REFERENCE_CANDIDATES`
to the first halves of the chains and keeps the one with the smallest estimated
``chi^2(p0 || p)`` (:func:`~pm_evidence.estimators.chi_square_to_target`, from reference draws
and the same first halves), among those whose reverse weights at the reference draws have a
Pareto k-hat at most :data:`MAX_SELECTION_PARETO_K` (a finite-variance estimate of ``chi^2``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pm_evidence.core.utils import pareto_khat
from pm_evidence.estimators import chi_square_to_target
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import (
    MultivariateNormalReference,
    Reference,
    TruncatedNormalReference,
)

__all__ = [
    "MAX_SELECTION_PARETO_K",
    "REVERSE_REFERENCE_CANDIDATES",
    "SELECTION_DRAWS_PER_POSTERIOR_DRAW",
    "choose_reverse_reference",
]

#: ``(scale, mass)`` of the candidate references: covariance ``scale * Sigma_hat``, truncated
#: to the ellipsoid holding ``mass`` of it (``mass = 1``: not truncated). ``(1.0, 0.95)`` is
#: Gelfand & Dey's; ``(1.0, 1.0)``, the fitted normal, is best on a near-normal posterior
#: (truncation to ``mass`` costs ``chi^2 = 1/mass - 1`` there; measured: docs/benchmarks.rst,
#: Measurements behind the defaults).
REVERSE_REFERENCE_CANDIDATES: tuple[tuple[float, float], ...] = tuple(
    (scale, mass) for scale in (1.0, 0.7, 0.5) for mass in (1.0, 0.95, 0.5)
)

#: Above this k-hat of ``p0 / f`` under ``p0``, ``E_p0[(p0/f)^2]`` is likely infinite and the
#: estimate of ``chi^2`` noisy: such a candidate is kept only when no candidate is below it.
MAX_SELECTION_PARETO_K = 0.5

#: Reference draws per fitting draw for each candidate's estimate of ``chi^2``.
SELECTION_DRAWS_PER_POSTERIOR_DRAW = 8


def _candidate(draws: np.ndarray, scale: float, mass: float) -> Reference:
    if mass < 1.0:
        return TruncatedNormalReference.fit(draws, mass=mass, scale=scale)
    fitted = MultivariateNormalReference.fit(draws)
    return MultivariateNormalReference(fitted.mean, np.sqrt(scale) * fitted.chol)


def choose_reverse_reference(
    target: LogDensity,
    fit_draws: np.ndarray,
    rng: np.random.Generator,
    *,
    wrap: Callable[[Reference], Reference] = lambda reference: reference,
    max_draws: int | None = None,
) -> tuple[Reference, dict]:
    r"""The candidate (truncated) normal with the smallest estimated ``chi^2(p0 || p)``.

    For each ``(scale, mass)`` of :data:`REVERSE_REFERENCE_CANDIDATES`,

    .. math:: 1 + \hat\chi^2 = \frac{\overline{p_0/f}\,|_{x \sim p_0}}
       {\overline{p_0/f}\,|_{x \in \text{fit draws}}}

    with :data:`SELECTION_DRAWS_PER_POSTERIOR_DRAW` reference draws per fitting draw (at
    most ``max_draws``). Candidates whose Pareto k-hat of ``p0/f`` at the reference draws
    exceeds :data:`MAX_SELECTION_PARETO_K` come last.

    Parameters
    ----------
    target : LogDensity
    fit_draws : numpy.ndarray
        Posterior draws ``(chain, draw, dim)`` the candidates are fitted to (the first halves of the chains); they are
        also the target-side draws of the ``chi^2`` estimates.
    rng : numpy.random.Generator
        Draws from the candidates.
    wrap : callable, optional
        Applied to each fitted candidate before it is judged (e.g. the symmetrization over a
        label-switching group, ``pm_evidence.model.draws.symmetric_reference``).
    max_draws : int, optional
        Cap on the reference draws per candidate (memory for large models).

    Returns
    -------
    (Reference, dict)
        The chosen reference and diagnostics: ``reference_scale``, ``reference_mass``,
        ``reference_chi2`` (its estimate), ``reference_reason``.
    """
    flat = fit_draws.reshape(-1, fit_draws.shape[-1])
    log_f_fit = target.log_density(flat)
    n = SELECTION_DRAWS_PER_POSTERIOR_DRAW * flat.shape[0]
    n = n if max_draws is None else max(min(n, max_draws), 1)
    scored = []
    for scale, mass in REVERSE_REFERENCE_CANDIDATES:
        reference = wrap(_candidate(flat, scale, mass))
        x = reference.sample(rng, n)
        at_reference = reference.logpdf(x) - target.log_density(x)
        chi2 = chi_square_to_target(at_reference, reference.logpdf(flat) - log_f_fit)
        finite = at_reference[np.isfinite(at_reference)]
        khat = pareto_khat(finite) if finite.size else np.inf
        unreliable = not (khat <= MAX_SELECTION_PARETO_K and np.isfinite(chi2))
        scored.append(((unreliable, chi2 if np.isfinite(chi2) else np.inf), reference, scale, mass))
    (unreliable, chi2), reference, scale, mass = min(scored, key=lambda item: item[0])
    reason = (
        f"smallest estimated chi-square divergence to the posterior ({chi2:.3g}) of "
        f"{len(scored)} normals, scaled and truncated, fitted to the first halves"
    )
    if unreliable:
        reason += f"; no candidate had a reverse-weight Pareto k-hat <= {MAX_SELECTION_PARETO_K}"
    diagnostics = {
        "reference_scale": scale,
        "reference_mass": mass,
        "reference_chi2": chi2,
        "reference_reason": reason,
    }
    return reference, diagnostics
