"""EM vectorized over a mixture's components (issue 35, step 9) against scikit-learn's
``GaussianMixture``, the algorithm it reimplements: the same starting values give the same fit,
to rounding, on both of the exploration's starts (k-means++ seeds and split components); the
k-means++ seeds against scikit-learn's ``kmeans_plusplus`` (step 20)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from pm_evidence.search import em
from pm_evidence.search.mixtures import fit_gaussian_mixture


def _clusters(rng, n, dim, n_clusters=12, spread=4.0):
    centers = rng.normal(size=(n_clusters, dim)) * spread
    scales = np.exp(rng.normal(scale=0.5, size=n_clusters))
    x = centers[rng.integers(n_clusters, size=n)]
    return x + rng.normal(size=(n, dim)) * scales[rng.integers(n_clusters, size=n), None]


def _sklearn_fit(x, k, **init):
    model = GaussianMixture(
        k, covariance_type="full", reg_covar=1e-6, max_iter=30, init_params="k-means++",
        random_state=123, **init,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x)
    return model


def _assert_same_fit(ours: em.GaussianMixtureFit, theirs: GaussianMixture, x):
    assert ours.n_iter == theirs.n_iter_
    assert ours.converged == theirs.converged_
    np.testing.assert_allclose(ours.weights, theirs.weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.means, theirs.means_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ours.covariances, theirs.covariances_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(ours.bic(), theirs.bic(x), rtol=1e-11)


@pytest.mark.parametrize(
    ("n", "dim", "k"), [(1024, 2, 32), (1024, 2, 1), (600, 5, 8), (3000, 12, 16), (40, 3, 40)]
)
def test_kmeans_plusplus_seeds_are_sklearns(n, dim, k):
    """The same seeds as scikit-learn's greedy k-means++ at the same ``random_state``, also
    with tied distances (points on a grid) and as many seeds as points."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, dim)) * rng.uniform(0.1, 10.0)
        if seed % 2:
            x = np.round(x, 1)
        _, theirs = kmeans_plusplus(x, k, random_state=seed)
        np.testing.assert_array_equal(em.kmeans_plusplus_seeds(x, k, seed), theirs)


def test_the_fits_need_no_sklearn(monkeypatch):
    """scikit-learn is a test dependency only: the exploration's fits run without it."""
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it now raises ImportError
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError):
        import sklearn.cluster  # noqa: F401
    x = _clusters(np.random.default_rng(3), 800, 2, n_clusters=4)
    fitted = fit_gaussian_mixture(x, np.random.default_rng(4), max_components=8)
    assert fitted.n_components > 1


@pytest.mark.parametrize(("dim", "n", "k"), [(2, 1024, 32), (5, 600, 8), (12, 3000, 16)])
def test_em_from_kmeans_plusplus_seeds_equals_sklearn(dim, n, k):
    x = _clusters(np.random.default_rng(dim), n, dim)
    ours = em.em_fit(x, *em.kmeans_plusplus_start(x, k, 123, 1e-6))
    _assert_same_fit(ours, _sklearn_fit(x, k), x)


def test_em_from_split_components_equals_sklearn():
    """The exploration's second start: components given (weights, means, precision
    factors), as scikit-learn takes them through ``weights_init``, ``means_init`` and
    ``precisions_init``."""
    rng = np.random.default_rng(5)
    x = _clusters(rng, 2000, 3, n_clusters=6)
    first = em.em_fit(x, *em.kmeans_plusplus_start(x, 4, 7, 1e-6))
    shift = 0.5 * np.sqrt(np.diagonal(first.covariances, axis1=1, axis2=2))
    means = np.concatenate([first.means + shift, first.means - shift])
    weights = np.concatenate([first.weights, first.weights]) / 2
    covariances = np.concatenate([first.covariances, first.covariances])
    ours = em.em_fit(x, weights, means, em.precision_cholesky(covariances))
    theirs = _sklearn_fit(
        x, 8, weights_init=weights, means_init=means, precisions_init=np.linalg.inv(covariances)
    )
    _assert_same_fit(ours, theirs, x)


def test_components_in_blocks_give_the_same_fit(monkeypatch):
    """Mixtures too large for one (component, dim, point) array are evaluated a block of
    components at a time, with the same result."""
    x = _clusters(np.random.default_rng(2), 800, 4)
    start = em.kmeans_plusplus_start(x, 16, 3, 1e-6)
    whole = em.em_fit(x, *start)
    monkeypatch.setattr(em, "BLOCK_ELEMENTS", 3 * 800 * 4)  # blocks of 3 components
    assert len(em.component_blocks(16, 800, 4)) == 6
    blocked = em.em_fit(x, *start)
    assert blocked.n_iter == whole.n_iter
    np.testing.assert_allclose(blocked.covariances, whole.covariances, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocked.mean_log_likelihood, whole.mean_log_likelihood, rtol=1e-13)


def test_precision_cholesky_factors_the_precision():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 4, 4))
    covariances = a @ a.transpose(0, 2, 1) + 0.1 * np.eye(4)
    u = em.precision_cholesky(covariances)
    np.testing.assert_array_equal(u, np.triu(u))
    np.testing.assert_allclose(u @ u.transpose(0, 2, 1), np.linalg.inv(covariances), rtol=1e-9)


def test_bad_input_names_the_problem():
    x = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="not positive definite"):
        em.precision_cholesky(np.array([[[1.0, 2.0], [2.0, 1.0]]]))
    start = em.kmeans_plusplus_start(x, 3, 0, 1e-6)
    with pytest.raises(ValueError, match="as many points as components"):
        em.em_fit(x[:2], *start)
    with pytest.raises(ValueError, match="max_iter >= 1"):
        em.em_fit(x, *start, max_iter=0)


def _search_with_sklearn(x, rng, max_components, start):
    """``fit_gaussian_mixture``'s BIC search written with scikit-learn's ``GaussianMixture``
    (as it was before issue 35, step 9; the split start at the halves' moments since step 17):
    the same random stream, starts and choices."""
    n, dim = x.shape
    most = int(max(1, min(max_components, n // (5 * dim))))
    k = int(min(max(start, 1), most))
    center, spread = np.mean(x, axis=0), np.std(x, axis=0)
    scale = float(np.exp(np.mean(np.log(spread))))
    z = (x - center) / scale

    def fit(k, split_of=None):
        init = {}
        if split_of is not None:
            # each component cut at its mean across its principal axis: the halves' moments
            values, vectors = np.linalg.eigh(split_of.covariances_)
            axis, variance = vectors[:, :, -1], values[:, -1]
            offset = np.sqrt(2 * variance / np.pi)[:, None] * axis
            halves = split_of.covariances_ - np.einsum(
                "k,ki,kj->kij", 2 * variance / np.pi, axis, axis
            )
            covariances = np.concatenate([halves] * 2)
            init = {
                "weights_init": np.concatenate([split_of.weights_] * 2) / 2,
                "means_init": np.concatenate([split_of.means_ + offset, split_of.means_ - offset]),
                "precisions_init": np.linalg.inv(covariances),
            }
        model = GaussianMixture(
            k, covariance_type="full", reg_covar=1e-6, max_iter=30, init_params="k-means++",
            random_state=int(rng.integers(2**31 - 1)), **init,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(z)

    fits = {k: fit(k)}
    if k > 1:
        fits[k // 2] = fit(k // 2)
    bic = {j: m.bic(z) for j, m in fits.items()}
    best = min(fits, key=bic.get)
    while best == max(fits) and 2 * best <= most:
        fits[2 * best] = fit(2 * best, split_of=fits[best])
        bic[2 * best] = fits[2 * best].bic(z)
        if bic[2 * best] >= bic[best]:
            break
        best = 2 * best
    model = fits[best]
    return model.weights_, model.means_ * scale + center, model.covariances_ * scale**2


@pytest.mark.parametrize(("dim", "start"), [(1, 2), (2, 1), (2, 4), (3, 8)])
def test_the_exploration_fit_equals_the_search_with_sklearn(dim, start):
    """``fit_gaussian_mixture`` (k-means++ and split starts, BIC search) gives the mixture the
    same search with scikit-learn's ``GaussianMixture`` gives, and leaves the random stream
    where it leaves it."""
    from pm_evidence.search.mixtures import fit_gaussian_mixture

    x = _clusters(np.random.default_rng(10 + dim), 1500, dim, n_clusters=6)
    ours_rng, theirs_rng = np.random.default_rng(4), np.random.default_rng(4)
    ours = fit_gaussian_mixture(x, ours_rng, 32, start)
    weights, means, covariances = _search_with_sklearn(x, theirs_rng, 32, start)
    assert ours.n_components == weights.size > 1
    np.testing.assert_allclose(ours.weights, weights, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.means, means, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        ours.chols @ ours.chols.transpose(0, 2, 1), covariances, rtol=1e-8, atol=1e-10
    )
    assert ours_rng.integers(2**62) == theirs_rng.integers(2**62)


def _two_rings(rng, n):
    """Draws from the Gaussian shells of the multimodal zoo (two rings of radius 2 and width
    0.1 at +-3.5 in the box [-6, 6]^2), in the unconstrained space the exploration sees (the
    logit of the box's Uniform transform)."""
    angle = rng.uniform(0.0, 2.0 * np.pi, n)
    radius = 2.0 + 0.1 * rng.normal(size=n)
    center = np.where(rng.random(n) < 0.5, -3.5, 3.5)
    x = np.column_stack([center + radius * np.cos(angle), radius * np.sin(angle)])
    return np.log((x + 6.0) / (6.0 - x))


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_the_search_splits_a_ring_fitted_by_one_component(seed):
    """From one component per ring (``start=2``), the search doubles the components, each
    split at its mean across its principal axis into the two halves' moments. When the halves
    kept the whole component's covariance, they overlapped so much that EM stopped within a
    few iterations near the start, the BIC said no, and each ring stayed one Gaussian (at
    these three seeds; issue 35: the shells' AIS then ran to its cap of 20,000 chains)."""
    from pm_evidence.search.mixtures import fit_gaussian_mixture

    x = _two_rings(np.random.default_rng(seed), 8192)
    fitted = fit_gaussian_mixture(x, np.random.default_rng(100 + seed), 32, 2)
    assert fitted.n_components >= 16
