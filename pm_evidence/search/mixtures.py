"""Gaussian mixtures of the exploration (:mod:`pm_evidence.search.exploration`): fitted to
particles by EM with the number of components chosen by BIC (:func:`fit_gaussian_mixture`),
pooled and flattened for independent jumps, and adapted by population Monte Carlo
(:func:`adapt_components`: weights, means and covariances set by importance sampling from the
mixture itself).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats
from scipy.sparse.csgraph import connected_components

from pm_evidence.core.utils import kish_ess, log_sum_exp
from pm_evidence.references import (
    MixtureReference,
    MultivariateNormalReference,
    MultivariateStudentTReference,
    Reference,
)
from pm_evidence.search.em import (
    GaussianMixtureFit,
    em_fit,
    kmeans_plusplus_start,
    precision_cholesky,
)

__all__ = [
    "ADAPTED_ESS",
    "OUTLIER_LEVEL",
    "adapt_components",
    "as_mixture",
    "as_reference",
    "fit_gaussian_mixture",
    "flattened",
    "is_one_mode",
    "outside_every_component",
    "pooled",
    "weighed_by_importance",
    "with_draws_outside",
    "with_lost_components",
    "with_mirror_images",
]

# A point is outside a normal component where its squared Mahalanobis distance is beyond the
# chi-square 1 - OUTLIER_LEVEL quantile (a lost component, a draw no component covers).
OUTLIER_LEVEL = 1e-4


# Two components are one mode where each one's mean lies inside the other's central ellipsoid of
# this probability (is_one_mode).
ONE_MODE_LEVEL = 0.99


# adapt_components stops once its mixture's importance weights have a Kish ESS of at least this
# fraction of the draws (chi-square divergence 1 / ESS - 1 <= 0.05 from the posterior): above
# it the updates gain little for their evaluations, below it they pay (measured:
# docs/benchmarks.rst, Measurements behind the defaults).
ADAPTED_ESS = 0.95
# Effective draws below which adapt_components updates nothing; between this and 10 K (K
# components) it updates the weights only (K shares need fewer draws than K covariances).
WEIGHTS_ONLY_ESS = 100
# EM's covariance floor (relative to the points' spread: fit_gaussian_mixture scales them) and
# its most iterations (where it has not converged, the BIC judges the fit).
REG_COVAR = 1e-6
EM_MAX_ITER = 30


def as_mixture(
    reference: MixtureReference | MultivariateNormalReference | MultivariateStudentTReference,
) -> MixtureReference:
    """``reference`` as a mixture: itself where it is one, and a normal or Student-t reference
    (what :func:`as_reference` makes of a mixture of one component, and what a path method's
    reference fitted to the posterior draws is) as the mixture of its one component, with the
    same density. Any other reference (a warped normal included) is a ``TypeError`` naming
    it."""
    if isinstance(reference, MixtureReference):
        return reference
    if type(reference) in (MultivariateNormalReference, MultivariateStudentTReference):
        df = getattr(reference, "df", None)
        return MixtureReference(np.ones(1), reference.mean[None], reference.chol[None], df=df)
    raise TypeError(
        f"A mixture, a normal or a Student-t reference has components to compare; got "
        f"{type(reference).__name__}."
    )


def as_reference(m: MixtureReference, df: float | None, single_name: str) -> Reference:
    """``m`` as a reference for a path or an importance sampler: with one component, that
    normal, named ``single_name`` (a normal reference has compiled HMC transitions:
    :mod:`pm_evidence.tempering.compiled`); else ``m`` with Student-t components of ``df``
    degrees of freedom (the same locations and scale matrices), or normal ones where ``df`` is
    ``None``."""
    if m.n_components == 1:
        return MultivariateNormalReference(m.means[0], m.chols[0], name=single_name)
    if df is None:
        return m
    return MixtureReference(m.weights, m.means, m.chols, df=df)


def fit_gaussian_mixture(
    x: np.ndarray,
    rng: np.random.Generator,
    max_components: int = 32,
    start: int = 1,
    search: bool = True,
) -> MixtureReference:
    """A Gaussian mixture fitted to points ``x (n, dim)`` by EM, its number of components chosen
    by BIC (full covariances; :func:`~pm_evidence.search.em.em_fit`, scikit-learn's
    ``GaussianMixture`` vectorized over the components).

    At most ``max_components`` and at most one component per ``5 dim`` points (every covariance
    then rests on enough points); a single component is the mean and covariance of ``x``.
    Candidates: ``start`` components (the number chosen at the previous rung of an exploration;
    k-means++ initialisation), half as many, then twice as many while BIC falls, each
    initialised by cutting every component of the last fit in two halves across its principal
    axis, each half started at its own moments (means ``mu +- sqrt(2 lambda_1 / pi) v_1``,
    covariance ``Sigma - (2 / pi) lambda_1 v_1 v_1^T``): well-separated modes are split apart
    where a Euclidean k-means, blind to the components' shapes, can merge them, and a curved
    mode (a ring) is covered by more components each time. ``search=False`` fits ``start``
    components only.
    """
    n, dim = x.shape
    most = int(max(1, min(max_components, n // (5 * dim))))
    k = int(min(max(start, 1), most))
    if k == 1 and (most == 1 or not search):
        return MixtureReference.single(x)
    # one scale for every axis (the geometric mean of the spreads): EM's covariance floor
    # (reg_covar) is then relative to the points' spread, and the shape, which the split
    # along principal axes reads, is kept
    center, spread = np.mean(x, axis=0), np.std(x, axis=0)
    scale = float(np.exp(np.mean(np.log(spread[spread > 0])))) if np.any(spread > 0) else 1.0
    z = (x - center) / scale

    def fit(k: int, split_of: GaussianMixtureFit | None = None) -> GaussianMixtureFit:
        seed = int(rng.integers(2**31 - 1))  # drawn for every fit: one stream whatever starts
        if split_of is None:
            initial = kmeans_plusplus_start(z, k, seed, REG_COVAR)
        else:
            initial = _split_start(split_of)
        return em_fit(z, *initial, reg_covar=REG_COVAR, max_iter=EM_MAX_ITER)

    fits = {k: fit(k)}
    if search and k > 1:
        fits[k // 2] = fit(k // 2)
    best = min(fits, key=lambda j: fits[j].bic())
    while search and best == max(fits) and 2 * best <= most:
        fits[2 * best] = fit(2 * best, split_of=fits[best])
        if fits[2 * best].bic() >= fits[best].bic():
            break
        best = 2 * best
    fitted = fits[best]
    means = fitted.means * scale + center
    covariances = fitted.covariances * scale**2
    return MixtureReference.from_components(fitted.weights, means, covariances)


def _split_start(fitted: GaussianMixtureFit):
    """EM's starting values for twice the components of ``fitted``: each component
    ``N(mu, Sigma)`` cut in two halves at ``mu`` across its principal axis ``v_1`` (variance
    ``lambda_1``), each half replaced by its own mean and covariance, of half the weight:

        mu +- sqrt(2 lambda_1 / pi) v_1,    Sigma - (2 / pi) lambda_1 v_1 v_1^T

    (the two moments of a normal cut at its mean; together they keep the component's mean and
    covariance). A start whose halves keep the whole component's covariance overlaps so much
    that EM's steps are smaller than its tolerance: it stops after a few iterations near the
    start, and the BIC search stops with it (on a Gaussian shell: one Gaussian per shell).
    """
    values, vectors = np.linalg.eigh(fitted.covariances)
    axis, variance = vectors[:, :, -1], values[:, -1]
    offset = np.sqrt(2.0 * variance / np.pi)[:, None] * axis
    means = np.concatenate([fitted.means + offset, fitted.means - offset])
    weights = np.concatenate([fitted.weights, fitted.weights]) / 2
    halves = fitted.covariances - (2.0 / np.pi) * variance[:, None, None] * (
        axis[:, :, None] * axis[:, None, :]
    )
    precision_chols = precision_cholesky(np.concatenate([halves, halves]))
    return weights, means, precision_chols


def flattened(q: MixtureReference) -> MixtureReference:
    """``q`` with weights halfway between its own and equal ones: the jumps' proposal.

    A mode that holds few particles (the resampling's noise) gets a small weight in the
    mixture fitted to them, so few jumps would propose it and its share would recover slowly;
    with at least ``1 / (2 K)`` of the proposals each, it refills in a few jumps. The
    Metropolis-Hastings ratio corrects for whatever weights ``q`` has.
    """
    if q.n_components == 1:
        return q
    return dataclasses.replace(q, weights=0.5 * q.weights + 0.5 / q.n_components)


def pooled(*mixtures: MixtureReference) -> MixtureReference:
    """One mixture of the components of ``mixtures``, each mixture an equal share."""
    n = len(mixtures)
    return MixtureReference(
        np.concatenate([m.weights / n for m in mixtures]),
        np.concatenate([m.means for m in mixtures]),
        np.concatenate([m.chols for m in mixtures]),
        mixtures[0].df,
    )


def with_lost_components(
    mixture: MixtureReference, earlier: list[MixtureReference]
) -> MixtureReference:
    """``mixture`` with the components of earlier rungs' mixtures that none of its components
    covers (their mean beyond the chi-square ``1 - OUTLIER_LEVEL`` quantile of every component
    kept so far), taken from the latest rung back, each with weight ``1 / K``.

    A mode that the resampling emptied at a late rung is still a component of the mixtures
    fitted at the rungs before (wider, at a smaller ``beta``); :func:`adapt_components` then
    weighs and fits it by importance sampling, or gives it a negligible weight where the
    posterior has no mass.
    """
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, mixture.dim)
    kept = mixture
    for fitted in earlier:
        for mean, chol in zip(fitted.means, fitted.chols, strict=True):
            if np.min(kept.mahalanobis_sq(mean)) > limit:
                weights = np.append(kept.weights, 1.0 / mixture.n_components)
                kept = MixtureReference(
                    weights / weights.sum(),
                    np.concatenate([kept.means, mean[None]]),
                    np.concatenate([kept.chols, chol[None]]),
                    mixture.df,
                )
    return kept


def adapt_components(
    mixture: MixtureReference,
    log_f,
    rng: np.random.Generator,
    n_draws: int,
    n_iterations: int = 3,
) -> tuple[MixtureReference, float]:
    r"""The mixture adapted to the posterior by population Monte Carlo: its weights set to the
    posterior mass of each component, and its means and covariances to the posterior's
    moments there, estimated by importance sampling from the mixture itself.

    The Rao-Blackwellized updates of Cappe, Douc, Guillin, Marin & Robert (2008, eqs. 6-8):
    with ``x_i ~ q``, self-normalized importance weights ``u_i`` proportional to
    ``f(x_i) / q(x_i)`` and responsibilities ``r_ik = w_k q_k(x_i) / q(x_i)``,

    .. math::

        w_k' = \sum_i u_i r_{ik}, \qquad
        \mu_k' = \frac{\sum_i u_i r_{ik} x_i}{w_k'}, \qquad
        \Sigma_k' = \frac{\sum_i u_i r_{ik} (x_i - \mu_k')(x_i - \mu_k')^T}{w_k'},

    repeated ``n_iterations`` times. The particles' shares (the weights EM gives) carry the
    SMC's resampling noise and, where the moves mix slowly between modes, its drift; a mode
    holding a tenth of its share in the reference gives the AIS chains started there ten times
    the mean weight. The updates read the target at fresh draws, so they also weigh mass the
    fit to the particles missed (a mode the last rungs lost, whose wider component from an
    earlier rung was added; the boundary modes of the eggbox, exponential tails in the
    unconstrained space).

    Each mixture is judged by the Kish effective sample size of its own weights, and the best
    one returned (an update fitted to a few heavy weights can make the next worse); the updates
    stop once that ESS is at least ``ADAPTED_ESS`` (0.95) of the draws. Guards: an
    iteration whose weights have an ESS below ``10 K`` (``K`` components) is not used for an
    update; a component's mean and covariance are updated only where
    its own weights ``u_i r_ik`` have an ESS of at least ``5 (dim + 1)`` and the new covariance
    is positive definite; every weight stays above ``1e-3 / K``.

    Parameters
    ----------
    mixture : MixtureReference
    log_f : callable
        ``log_f(x (n, dim)) -> (n,)``: the unnormalized log posterior density.
    rng : numpy.random.Generator
    n_draws : int
        Draws per iteration (each one evaluation of ``log_f``).
    n_iterations : int

    Returns
    -------
    MixtureReference, float
        The mixture with the largest ESS among those drawn from (``mixture`` itself when no
        update improved it) and that ESS as a fraction of ``n_draws``.
    """
    k, dim = mixture.n_components, mixture.dim
    best, best_ess = mixture, np.nan
    for iteration in range(n_iterations):
        x = mixture.sample(rng, n_draws)
        log_qk = mixture.component_logpdfs(x)
        log_q = log_sum_exp(log_qk, axis=1)
        # a NaN weight is no weight; -inf stays -inf (nan_to_num's default makes it -1.8e308,
        # finite: draws all outside the support then looked equally weighted)
        log_u = np.nan_to_num(
            np.asarray(log_f(x), dtype=float) - log_q, nan=-np.inf, neginf=-np.inf
        )
        if not np.isfinite(log_u).any():
            break
        log_u = log_u - log_sum_exp(log_u)  # self-normalized
        u = np.exp(log_u)
        ess_fraction = float(1.0 / np.sum(u**2) / n_draws)
        if not ess_fraction <= best_ess:
            best, best_ess = mixture, ess_fraction
        n_effective = ess_fraction * n_draws
        if n_effective < WEIGHTS_ONLY_ESS or iteration == n_iterations - 1:
            break
        if ess_fraction >= ADAPTED_ESS:
            break  # nearly flat weights: little left to gain, for n_draws evaluations
        # each draw's weight times its responsibilities, (n, K); in logs for each component's
        # Kish ESS, which its weights of 1e-200 (a component far from the mass) do not underflow
        log_ur = log_u[:, None] + log_qk - log_q[:, None]
        ur = u[:, None] * np.exp(log_qk - log_q[:, None])
        shares = ur.sum(axis=0)
        weights = np.maximum(shares, 1e-3 / k)
        means, chols = mixture.means.copy(), mixture.chols.copy()
        for j in range(k if n_effective >= 10 * k else 0):  # moments: 10 K effective draws
            if shares[j] <= 0 or kish_ess(log_ur[:, j]) < 5 * (dim + 1):
                continue
            mean = ur[:, j] @ x / shares[j]
            centred = x - mean
            cov = (ur[:, j, None] * centred).T @ centred / shares[j]
            try:
                chols[j] = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                continue
            means[j] = mean
        mixture = MixtureReference(weights / weights.sum(), means, chols, mixture.df)
    return best, best_ess


def weighed_by_importance(
    given: MixtureReference, adapted: MixtureReference, ess_fraction: float
) -> bool:
    """Whether ``adapted, ess_fraction = adapt_components(given, ...)`` set the mixture's
    weights to posterior masses: it returned one of its updates (each made from at least
    ``WEIGHTS_ONLY_ESS`` effective draws), or ``given`` itself with nearly flat importance
    weights (a Kish ESS of at least ``ADAPTED_ESS`` of the draws: its weights confirmed).
    Otherwise the weights are still the caller's (the particles' shares, ``1 / K`` for a
    component added at a climbed mode): too few effective draws for an update, or updates
    worse than ``given``."""
    return adapted is not given or bool(ess_fraction >= ADAPTED_ESS)


def is_one_mode(mixture: MixtureReference, level: float = ONE_MODE_LEVEL) -> bool:
    """Whether the components of ``mixture`` describe one mode: joined by overlaps, where
    components ``k`` and ``l`` overlap when each one's mean lies inside the other's central
    ellipsoid of probability ``level`` (squared Mahalanobis distance within the chi-square
    ``level`` quantile, ``dim`` degrees of freedom), as the components EM fits to one skewed or
    curved mode do. A narrow component whose ellipsoid holds no other component's mean overlaps
    none (the broad component it lies in included), nor do components at separate modes."""
    if mixture.n_components == 1:
        return True
    limit = stats.chi2.ppf(level, mixture.dim)
    distance = mixture.mahalanobis_sq(mixture.means)  # [i, j]: mean i from component j
    overlap = (distance <= limit) & (distance.T <= limit)
    n_groups, _ = connected_components(overlap, directed=False)
    return n_groups == 1


def outside_every_component(
    mixture: MixtureReference | MultivariateNormalReference | MultivariateStudentTReference,
    points: np.ndarray,
) -> np.ndarray:
    """Whether each of ``points (n, dim)`` lies outside every component of ``mixture`` (a
    single normal or Student-t reference is one component: :func:`as_mixture`): its squared
    Mahalanobis distance from each beyond the chi-square ``1 - OUTLIER_LEVEL`` quantile.
    ``(n,)`` booleans."""
    mixture = as_mixture(mixture)
    limit = stats.chi2.ppf(1 - OUTLIER_LEVEL, mixture.dim)
    return np.all(mixture.mahalanobis_sq(points) > limit, axis=-1)


def with_draws_outside(
    mixture: MixtureReference,
    draws: np.ndarray,
    log_f,
    rng: np.random.Generator,
    n_draws: int,
) -> tuple[MixtureReference, int]:
    """``mixture`` with Gaussian components fitted to the posterior ``draws (..., dim)`` that
    lie outside every one of its components (beyond the chi-square ``1 - OUTLIER_LEVEL``
    quantile of each), all of them adapted together (:func:`adapt_components`, ``n_draws``
    draws per iteration of ``log_f``): a region of the posterior that MCMC chains found and
    tempering from the prior missed becomes part of the reference, so that AIS from it covers
    both (from the exploration's mixture alone its chains rarely reach that region, and AIS is
    low by the region's share of ``Z``).

    The components are :func:`fit_gaussian_mixture`'s (BIC) on the draws outside, pooled with
    ``mixture``'s (``pooled``) before the adaptation sets every weight. Returns the mixture
    and the number of components added: ``(mixture, 0)`` where fewer than ``5 (dim + 1)``
    draws lie outside (too few for a covariance)."""
    dim = mixture.dim
    flat = np.asarray(draws, dtype=float).reshape(-1, dim)
    outside = flat[outside_every_component(mixture, flat)]
    if outside.shape[0] < 5 * (dim + 1):
        return mixture, 0
    fitted = fit_gaussian_mixture(outside, rng)
    union, _ = adapt_components(pooled(mixture, fitted), log_f, rng, n_draws)
    return union, fitted.n_components


def with_mirror_images(
    mixture: MixtureReference, actions, density_ratio: float, light_share: float = 1e-4
) -> MixtureReference:
    r"""``mixture`` with a component at each mirror image it misses: for every component
    ``N(mu_k, L_k L_k^T)`` and group element ``g: x -> A x + c`` (volume-preserving, e.g.
    ``pm_evidence.model.modes.SymmetryGroup.actions``, the identity first) where the
    mixture's density at ``g mu_k`` is below ``1 / density_ratio`` of that at ``mu_k``, the
    component ``N(A mu_k + c, A L_k L_k^T A^T)`` is added, and ``w_k`` is shared equally by
    the component and its added images. The result is a mixture (a normalized reference of
    the same kind), which covers the images of every mode the mixture holds, as
    ``(1/|G|) sum_g q(g x)`` does (``pm_evidence.references.SymmetrizedReference``), at
    the cost of the images it lacked only, and with the mixture's compiled log-density.
    The lightest components, together less than ``light_share`` of the weight, get no images:
    they would add components evaluated at every step of AIS for at most
    ``(|G| - 1) light_share`` of the mass (5e-4 nats of ``log Z`` for three exchangeable
    frequencies). Returns ``mixture`` itself where it misses none."""
    means, chols = mixture.means, mixture.chols
    log_q = mixture.logpdf(means)
    order = np.argsort(mixture.weights)
    light = np.zeros(mixture.n_components, dtype=bool)
    light[order] = np.cumsum(mixture.weights[order]) < light_share
    images = {k: [] for k in range(mixture.n_components)}
    for action in actions[1:]:
        moved = action(means)
        offset = action(np.zeros(mixture.dim))
        missing = (mixture.logpdf(moved) < log_q - np.log(density_ratio)) & ~light
        for k in np.flatnonzero(missing):
            linear = (action(chols[k].T) - offset).T  # A L_k, column by column
            images[k].append((moved[k], np.linalg.cholesky(linear @ linear.T)))
    if not any(images.values()):
        return mixture
    weights, new_means, new_chols = [], [], []
    for k in range(mixture.n_components):
        share = mixture.weights[k] / (1 + len(images[k]))
        for mean, chol in [(means[k], chols[k]), *images[k]]:
            weights.append(share)
            new_means.append(mean)
            new_chols.append(chol)
    return MixtureReference(
        np.array(weights), np.array(new_means), np.array(new_chols), mixture.df
    )
