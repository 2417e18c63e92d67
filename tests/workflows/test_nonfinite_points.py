"""Non-finite points are rejected moves, not errors (issue 33, item 4).

* every reference's ``logpdf`` is ``-inf`` (and ``grad_logpdf`` zero) at rows with a NaN or
  infinite coordinate, and unchanged, bit for bit, at the other rows;
* an HMC trajectory that reaches a non-finite position is rejected and flagged ``nonfinite``
  (counted by the samplers, ``diagnostics["n_nonfinite_rejected"]``), and the other points'
  moves are the same as without it.

The mixture and random-intercept models of the report, at ten seeds and every default method,
are the slow tests at the end (``pytest -m slow``; minutes each).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pm_evidence as pme
from pm_evidence.model.draws import log_weights, target_log_weights
from pm_evidence.references import (
    BernoulliProductReference,
    CategoricalProductReference,
    MixtureReference,
    MultivariateNormalReference,
    MultivariateStudentTReference,
    PriorReference,
    SymmetrizedReference,
    TruncatedNormalReference,
    Warp3Reference,
)
from pm_evidence.tempering.kernels import hmc_step, make_kernel
from pm_evidence.tempering.ladders import Ladder
from pm_evidence.tempering.path import GeometricPath
from pm_evidence.tempering.samplers import AnnealingSamplerSettings, anneal
from pm_evidence.zoo.testing import normal_mean

DIM = 3
BAD_ROWS = (1, 3, 4)


def _draws(seed: int = 0, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    chol = np.array([[1.0, 0.0, 0.0], [0.4, 0.8, 0.0], [-0.3, 0.2, 0.5]])
    return np.array([1.0, -2.0, 0.5]) + rng.standard_normal((n, DIM)) @ chol.T


class _Swap:
    """The group element swapping the first two coordinates (its own transpose and inverse)."""

    def __call__(self, x):
        return np.asarray(x)[..., [1, 0, 2]]

    def transpose(self, v):
        return np.asarray(v)[..., [1, 0, 2]]


def _identity(x):
    return np.asarray(x)


_identity.transpose = _identity


def _continuous_references():
    draws = _draws()
    normal = MultivariateNormalReference.fit(draws)
    student = MultivariateStudentTReference.fit(draws)
    mixture_chols = np.stack([normal.chol, 0.5 * normal.chol])
    means = np.stack([normal.mean, normal.mean + 2.0])
    return {
        "normal": normal,
        "student_t": student,
        "truncated_normal": TruncatedNormalReference.fit(draws, scale=4.0),
        "warp3": Warp3Reference(mean=normal.mean, chol=normal.chol),
        "normal_mixture": MixtureReference(np.array([0.3, 0.7]), means, mixture_chols),
        "student_t_mixture": MixtureReference(
            np.array([0.3, 0.7]), means, mixture_chols, df=np.float64(4.0)
        ),
        "symmetrized": SymmetrizedReference(normal, (_identity, _Swap())),
    }


CONTINUOUS = _continuous_references()


def _points_with_bad_rows(good: np.ndarray) -> np.ndarray:
    """``good`` with NaN, +inf and -inf rows inserted at :data:`BAD_ROWS`."""
    points = np.insert(good, [1, 2, 2], np.nan, axis=0)
    points[BAD_ROWS[0], 0] = np.nan
    points[BAD_ROWS[1]] = np.array([0.0, np.inf, 1.0])
    points[BAD_ROWS[2]] = np.array([-np.inf, np.nan, np.inf])
    return points


def _good_mask(n: int) -> np.ndarray:
    mask = np.ones(n, dtype=bool)
    mask[list(BAD_ROWS)] = False
    return mask


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_reference_logpdf_is_minus_inf_at_nonfinite_rows(name):
    reference = CONTINUOUS[name]
    good = _draws(seed=1, n=6)
    points = _points_with_bad_rows(good)
    assert points.shape == (9, DIM)
    with np.errstate(all="raise"):  # no warnings from the masked rows either
        values = reference.logpdf(points)
    ok = _good_mask(points.shape[0])
    assert np.all(values[~ok] == -np.inf)
    # the same numbers as a batch of finite points only (bit-identical)
    np.testing.assert_array_equal(values[ok], reference.logpdf(good))
    assert np.all(np.isfinite(values[ok]) | (name == "truncated_normal"))
    # batch dimensions before the last are kept
    np.testing.assert_array_equal(reference.logpdf(points.reshape(3, 3, DIM)), values.reshape(3, 3))


@pytest.mark.parametrize("name", sorted(n for n in CONTINUOUS if CONTINUOUS[n].has_gradient))
def test_reference_gradient_is_zero_at_nonfinite_rows(name):
    reference = CONTINUOUS[name]
    good = _draws(seed=2, n=6)
    points = _points_with_bad_rows(good)
    with np.errstate(all="raise"):
        grad = reference.grad_logpdf(points)
    ok = _good_mask(points.shape[0])
    assert grad.shape == points.shape
    assert np.all(grad[~ok] == 0.0)
    np.testing.assert_array_equal(grad[ok], reference.grad_logpdf(good))


def test_discrete_references_logpdf_is_minus_inf_at_nonfinite_rows():
    bernoulli = BernoulliProductReference(np.array([0.3, -1.0, 2.0]))
    good = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0],
                     [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # fmt: skip
    points = _points_with_bad_rows(good)
    ok = _good_mask(points.shape[0])
    with np.errstate(all="raise"):
        values = bernoulli.logpdf(points)
    assert np.all(values[~ok] == -np.inf)
    np.testing.assert_array_equal(values[ok], bernoulli.logpdf(good))
    categorical = CategoricalProductReference.uniform([2, 3, 4])
    good = good + np.array([0.0, 1.0, 2.0]) * (good > 0)
    points = _points_with_bad_rows(good)
    with np.errstate(all="raise"):
        values = categorical.logpdf(points)
    assert np.all(values[~ok] == -np.inf)
    np.testing.assert_array_equal(values[ok], categorical.logpdf(good))


@pytest.fixture(scope="module")
def target():
    model, _ = normal_mean()
    return pme.LogDensity(model)


def test_prior_reference_logpdf_is_minus_inf_at_nonfinite_rows(target):
    reference = PriorReference(target)
    good = np.array([[0.1], [-1.0], [2.0]])
    points = np.array([[0.1], [np.nan], [-1.0], [np.inf], [-np.inf], [2.0]])
    values = reference.logpdf(points)
    ok = np.isfinite(points[:, 0])
    assert np.all(values[~ok] == -np.inf)
    np.testing.assert_array_equal(values[ok], reference.logpdf(good))


# ---------------------------------------------------------------------- the HMC kernel


@pytest.fixture(scope="module")
def fitted_path(target):
    rng = np.random.default_rng(3)
    draws = 1.0 + 0.2 * rng.standard_normal((500, 1))
    return GeometricPath(target, MultivariateStudentTReference.fit(draws))


@pytest.mark.parametrize("n_leapfrog", [1, 3])
def test_hmc_rejects_and_flags_a_trajectory_that_overflows(fitted_path, n_leapfrog):
    """A leapfrog step of size 1e308 overflows the position to inf: before the fix the
    reference's triangular solve raised ``ValueError: array must not contain infs or NaNs``."""
    path = fitted_path
    start = path.evaluate(np.array([[0.9], [1.1], [1.0], [0.8]]), with_grad=True)
    beta = np.array([0.0, 0.5, 1.0, 1.0])
    normal_sizes = np.full(4, 0.2)
    huge = normal_sizes.copy()
    huge[[1, 2]] = 1e308
    with np.errstate(all="raise"):  # no overflow or invalid warnings escape the kernel
        state, accepted, nonfinite = hmc_step(
            np.random.default_rng(5), path, start, beta, huge, n_leapfrog
        )
    np.testing.assert_array_equal(nonfinite, [False, True, True, False])
    assert not accepted[1] and not accepted[2]
    for field, before in zip(state, start, strict=True):
        np.testing.assert_array_equal(field[[1, 2]], before[[1, 2]])
        assert np.all(np.isfinite(field))
    # the other points move exactly as they do when no trajectory diverges (same draws)
    reference_state, reference_accepted, reference_nonfinite = hmc_step(
        np.random.default_rng(5), path, start, beta, normal_sizes, n_leapfrog
    )
    assert not reference_nonfinite.any()
    np.testing.assert_array_equal(accepted[[0, 3]], reference_accepted[[0, 3]])
    for field, expected in zip(state, reference_state, strict=True):
        np.testing.assert_array_equal(field[[0, 3]], expected[[0, 3]])


def test_hmc_rejects_and_flags_a_nonfinite_gradient(target):
    """A gradient that is NaN makes the momentum NaN: the next position is not evaluated and
    the move is rejected and flagged."""

    class NanGradient(MultivariateNormalReference):
        def grad_logpdf(self, x):
            grad = super().grad_logpdf(x)
            return np.where(np.asarray(x)[..., :1] > 3.0, np.nan, grad)

    reference = NanGradient(mean=np.array([1.0]), chol=np.array([[0.3]]))
    path = GeometricPath(target, reference)
    start = path.evaluate(np.array([[0.9], [3.5]]), with_grad=True)
    state, accepted, nonfinite = hmc_step(
        np.random.default_rng(0), path, start, np.array([0.5, 0.5]), np.array([0.1, 0.1]), 3
    )
    np.testing.assert_array_equal(nonfinite, [False, True])
    assert not accepted[1]
    np.testing.assert_array_equal(state.x[1], start.x[1])


def test_a_warp3_reflection_without_a_finite_density_counts_as_zero():
    """Warp-3 evaluates the model at each posterior draw's reflection ``2 mean - x``, which may
    lie where the log density is NaN: there ``f`` is zero, so the symmetrized target is the
    draw's own half, the weight stays finite and the reflection is counted."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
        pm.Potential("edge", pt.switch(pt.gt(x, 3.0), np.nan, 0.0))
    target = pme.LogDensity(model)
    draws = np.array([[1.0], [2.0], [2.5]])
    reference = Warp3Reference(
        mean=np.array([2.5]), chol=np.array([[1.0]])
    )  # reflections 4, 3, 2.5
    log_f = target.log_density(draws)
    assert np.isnan(log_weights(target, draws, reference, log_f=log_f)[0])
    lw, n_nonfinite = target_log_weights(target, draws, reference, log_f)
    assert n_nonfinite == 1 and np.all(np.isfinite(lw))
    assert lw[0] == pytest.approx(log_f[0] - np.log(2.0) - reference.logpdf(draws[:1])[0])
    assert lw[1] == pytest.approx(
        np.logaddexp(log_f[1], target.log_density(np.array([[3.0]]))[0]) - np.log(2.0)
        - reference.logpdf(draws[1:2])[0]
    )  # fmt: skip


def test_annealing_counts_every_diverged_move(fitted_path):
    """A ladder whose step size overflows every trajectory: the run finishes, every move is
    rejected, and the sampler's per-rung count (summed into the results' diagnostics as
    ``n_nonfinite_rejected`` by ``path_estimators._common_diagnostics``) holds them all."""
    betas = np.linspace(0.0, 1.0, 5)
    ladder = Ladder(betas, np.full(5, 1e308), np.zeros(5), "linear")
    rng = np.random.default_rng(2)
    state = fitted_path.sample_reference(rng, 20, with_grad=True)
    settings = AnnealingSamplerSettings(n_steps=2, progressbar=False)
    with np.errstate(all="raise"):
        record = anneal(rng, fitted_path, make_kernel("hmc", fitted_path.target), ladder, state,
                        settings)  # fmt: skip
    np.testing.assert_array_equal(record.nonfinite, [0, 40, 40, 40, 40])
    np.testing.assert_array_equal(record.acceptance, [0.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(record.final.x, state.x)
    assert np.all(np.isfinite(record.log_weights))


# ---------------------------------------------------------------------- the reported model


def galaxy_like_mixture() -> pm.Model:
    """Three normals on 82 observations on the scale of galaxy velocities (1000 km/s)."""
    rng = np.random.default_rng(20240601)
    which = rng.choice(3, size=82, p=[0.1, 0.8, 0.1])
    y = rng.normal(np.array([10.0, 21.0, 33.0])[which], np.array([1.0, 2.0, 1.0])[which])
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.ones(3))
        mu = pm.Normal("mu", mu=np.float64(20.0), sigma=np.float64(10.0), shape=3)
        sigma = pm.HalfNormal("sigma", sigma=np.float64(5.0), shape=3)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
    return model


def noncentered_random_intercept() -> pm.Model:
    """40 groups x 5 observations, non-centered, HalfNormal group and residual sds (43
    parameters)."""
    rng = np.random.default_rng(20240602)
    group = np.repeat(np.arange(40), 5)
    effect = rng.normal(0.0, 1.0, size=40)
    y = 2.0 + effect[group] + rng.normal(0.0, 0.5, size=group.size)
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(5.0))
        tau = pm.HalfNormal("tau", np.float64(2.0))
        z = pm.Normal("z", np.float64(0.0), np.float64(1.0), shape=40)
        sigma = pm.HalfNormal("sigma", np.float64(2.0))
        pm.Normal("y", mu + tau * z[group], sigma, observed=y)
    return model


def _log_zs(result) -> dict[str, float]:
    """``{method: log Z}`` of an ``Evidence`` or an ``EvidenceSet``."""
    if isinstance(result, pme.EvidenceSet):
        return {name: evidence.log_z for name, evidence in result.items()}
    return {result.method: result.log_z}


def _only_input_errors(model, method, seed: int) -> None:
    """``marginal_likelihood`` at defaults either returns finite log Z's or raises one of the
    library's own input errors (a method that does not apply to the model)."""
    try:
        result = pme.marginal_likelihood(model, method=method, random_seed=seed, progressbar=False)
    except pme.EvidenceInputError:
        return
    log_zs = _log_zs(result)
    assert all(np.isfinite(v) for v in log_zs.values()), log_zs


@pytest.fixture(scope="module")
def mixture():
    return galaxy_like_mixture()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("seed", range(1, 11))
@pytest.mark.parametrize("method", pme.METHODS)
def test_mixture_every_default_method_at_ten_seeds(mixture, method, seed):
    _only_input_errors(mixture, method, seed)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_intercept_path_methods(seed):
    _only_input_errors(noncentered_random_intercept(), ["ais", "raise", "rts", "ti"], seed)
