"""Issue 13, part 4: label switching. Bridge, DS, IS and RIS fitted to NUTS draws of a mixture with
exchangeable components must not return log Z low by ``log |G|`` without saying so.

The label-switching mixture (gold log Z by 2-D quadrature) is compiled once and sampled once per
seed (module fixtures); seeds 1 and 3 put all four NUTS chains in one mirror mode (before the
fix bridge and DS were off by -0.693 with se 0.001 there, unflagged), seed 0 puts them in both.
The detector is tested on hand-made models, the symmetrized reference's normalization by its
importance identity, and the flag paths on synthetic draws (no NUTS).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import RHAT_MAX
from pm_evidence.model.log_density import LogDensity
from pm_evidence.model.modes import (
    MAX_GROUP_SIZE,
    AffineAction,
    check_coverage,
    find_symmetry,
    relabel,
)
from pm_evidence.references import MultivariateNormalReference, SymmetrizedReference
from pm_evidence.zoo.testing import label_switching_mixture, normal_mean

f64 = np.float64
SEEDS = (0, 1, 3)
ONE_MODE_SEEDS = (1, 3)  # all four chains in the same mirror mode
ESTIMATORS = {
    "bridge": pme.bridge_sampling,
    "ds": pme.discriminance_sampling,
    "is": pme.importance_sampling,
    "ris": pme.reverse_importance_sampling,
}


def assert_within_se(ev, exact, slack=0.02):
    err = ev.log_z - exact
    assert abs(err) < 4 * ev.se + slack, f"{ev.method}: error {err:.4f}, se {ev.se:.4f}"


def quiet(function, *args, **kwargs):
    """Call ``function`` and return ``(result, warning messages)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def mixture():
    model, gold = label_switching_mixture()
    return model, gold, LogDensity.for_model(model)


@pytest.fixture(scope="module")
def mixture_draws(mixture):
    """PyMC's NUTS draws at its defaults (4 chains x 1000), once per seed: with 4 chains some
    seeds leave every chain in one mirror mode (``ONE_MODE_SEEDS``), the case the relabelling
    is for (the default batched HMC's 16 chains visit both modes)."""
    from pm_evidence.model.draws import posterior_draws

    _, _, target = mixture
    nuts = {"nuts_sampler": "pymc"}
    return {
        seed: posterior_draws(
            target, None, rng=np.random.default_rng(seed), progressbar=False, sample_kwargs=nuts
        )
        for seed in SEEDS
    }


def _hand_made_mixture():
    """``y ~ sum_k w_k N(mu_k, 1)`` with ``w ~ Dirichlet(1, 1, 1)`` (simplex transform) and
    ``mu_k ~ N(0, 5^2)``, next to an unrelated regression on ``beta`` (also of length 3)."""
    rng = np.random.default_rng(5)
    y = np.concatenate([rng.normal(-4, 1, 10), rng.normal(0, 1, 10), rng.normal(4, 1, 10)])
    x = rng.normal(size=(8, 3))
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.ones(3))
        mu = pm.Normal("mu", f64(0), f64(5), shape=3)
        beta = pm.Normal("beta", f64(0), f64(1), shape=3)
        pm.NormalMixture("y", w=w, mu=mu, sigma=f64(1), observed=y)
        pm.Normal("z", pm.math.dot(x, beta), f64(1), observed=rng.normal(size=8))
    return model


@pytest.fixture(scope="module")
def hand_made_target():
    """The hand-made mixture's log-density, compiled once for the tests that use it."""
    return LogDensity(_hand_made_mixture())


# ---------------------------------------------------------------------- the detector
def test_detector_finds_the_joint_relabelling_of_a_dirichlet_mixture(hand_made_target):
    target = hand_made_target
    points = np.random.default_rng(0).normal(0.0, 0.7, size=(6, target.dim))
    search = find_symmetry(target, points)
    assert search.size == 6
    (factor,) = search.factors
    assert {a.variable for a in factor.axes} == {"w", "mu"}  # beta has length 3 but no symmetry
    assert factor.blocks == ((0, 1, 2),)
    assert [a.affine for a in factor.axes if a.variable == "w"] == [True]  # simplex: affine
    group = search.group
    assert group.size == 6 and group.actions[0].is_identity
    x = points[:3]
    for action in group.actions:  # log f invariant, |det| = 1
        np.testing.assert_allclose(target.log_density(action(x)), target.log_density(x), rtol=1e-9)
        jacobian = np.stack([action(np.eye(target.dim)[j]) - action(np.zeros(target.dim))
                             for j in range(target.dim)])  # fmt: skip
        assert abs(np.linalg.det(jacobian)) == pytest.approx(1.0, rel=1e-9)
    # relabelling w along the simplex is exact: the weights are permuted like mu
    constrained = target.to_constrained(x)
    moved = target.to_constrained(group.actions[3](x))
    order = [np.flatnonzero(np.isclose(moved["mu"][0], m))[0] for m in constrained["mu"][0]]
    np.testing.assert_allclose(moved["w"][:, order], constrained["w"], rtol=1e-9)


def test_detector_relabels_uniform_components():
    """PyMC's ``Interval`` transform (a Uniform's) subclasses ``IntervalTransform``: it is
    elementwise, so frequencies with i.i.d. uniform priors are relabelled jointly with their
    amplitudes (issue 36: before, ``f`` was left out and the three-frequency signal's 3! = 6
    mirror modes went unseen)."""
    rng = np.random.default_rng(4)
    t = np.linspace(0.0, 10.0, 30)
    y = np.sin(1.4 * t) + 0.5 * np.sin(3.9 * t) + rng.normal(0, 0.5, t.size)
    with pm.Model() as model:
        f = pm.Uniform("f", f64(0.2), f64(12), shape=2)
        a = pm.Normal("a", f64(0), f64(1), shape=2)
        pm.Normal("y", (a[:, None] * pm.math.sin(f[:, None] * t)).sum(0), f64(0.5), observed=y)
    target = LogDensity(model)
    search = find_symmetry(target, target.sample_prior(rng, 16))
    assert search.size == 2 and search.unchecked == ()
    assert search.describe() == "relabelling the 2 components of f and a"


def _fixed_weights_mixture(ordered: bool):
    """A mixture whose weights (0.5, 0.25, 0.25) make only components 1 and 2 exchangeable."""
    y = np.array([-3.0, -2.5, 0.1, 2.9, 3.3, 0.4])
    order = {"transform": pm.distributions.transforms.ordered,
             "initval": np.array([-1.0, 0.0, 1.0])} if ordered else {}  # fmt: skip
    with pm.Model() as model:
        mu = pm.Normal("mu", f64(0), f64(5), shape=3, **order)
        pm.NormalMixture("y", w=np.array([0.5, 0.25, 0.25]), mu=mu, sigma=f64(1), observed=y)
    return model


def test_detector_respects_ordered_transforms_and_partial_symmetries():
    target = LogDensity(_fixed_weights_mixture(ordered=False))
    search = find_symmetry(target, np.random.default_rng(2).normal(size=(6, 3)))
    assert search.size == 2 and search.factors[0].blocks == ((1, 2),)
    assert search.describe() == "relabelling components {1, 2} of mu"
    # the same model with mu ordered: no relabelling (ordered breaks it on purpose)
    target = LogDensity(_fixed_weights_mixture(ordered=True))
    points = np.random.default_rng(1).normal(0.0, 0.7, size=(6, target.dim))
    assert find_symmetry(target, points).describe() == "none"


def test_detector_finds_the_mirror_modes_of_the_label_switching_mixture(mixture, mixture_draws):
    _, _, target = mixture
    search = find_symmetry(target, mixture_draws[1][:, -1])
    assert search.size == 2 and search.group is not None
    assert "means" in search.describe()


def test_symmetrized_reference_is_normalized_and_samples_its_density(hand_made_target):
    """``E_q[q_G / q] = 1`` and ``E_{q_G}[q / q_G] = 1`` (importance identities): the actions
    (simplex ones included) are measure-preserving and ``sample`` draws ``q_G``."""
    target = hand_made_target
    points = np.random.default_rng(3).normal(0.0, 0.7, size=(6, target.dim))
    group = find_symmetry(target, points).group
    rng = np.random.default_rng(4)
    mean = rng.normal(0.0, 0.3, size=target.dim)
    base = MultivariateNormalReference(mean, np.diag(rng.uniform(0.8, 1.2, target.dim)))
    sym = SymmetrizedReference(base, group.actions)
    n = 200_000
    x = base.sample(rng, n)
    ratio = np.exp(sym.logpdf(x) - base.logpdf(x))
    assert abs(ratio.mean() - 1) < 4 * ratio.std() / np.sqrt(n)
    x = sym.sample(rng, n)
    ratio = np.exp(base.logpdf(x) - sym.logpdf(x))
    assert abs(ratio.mean() - 1) < 4 * ratio.std() / np.sqrt(n)
    # the gradient of the mixture's log density, against central differences
    point, eps = x[:2], 1e-6
    numeric = np.stack([(sym.logpdf(point + eps * e) - sym.logpdf(point - eps * e)) / (2 * eps)
                        for e in np.eye(target.dim)], axis=-1)  # fmt: skip
    np.testing.assert_allclose(sym.grad_logpdf(point), numeric, rtol=1e-5, atol=1e-6)


def test_chains_that_did_not_mix_anywhere_are_no_sign_of_mirror_modes():
    """A funnel whose ``x_1, x_2`` are exchangeable: chains stuck at different depths of the
    neck (``v``, which no relabelling moves) disagree in ``v`` at least as much as in the
    ``x``; that is poor mixing, not chains in different mirror images. Chains that agree in
    ``v`` and disagree in the ``x`` are still judged to sit in mirror modes."""
    swap = AffineAction(np.array([0, 2, 1]))
    rng = np.random.default_rng(3)
    depth = np.array([-3.0, -1.0, 0.0, 2.0])[:, None]  # each chain's v
    v = depth + 0.1 * rng.standard_normal((4, 400))
    x = np.exp(v / 2)[..., None] * rng.standard_normal((4, 400, 2))
    stuck = np.concatenate([v[..., None], x], axis=-1)
    coverage = check_coverage([swap], stuck)
    assert coverage.rhat > RHAT_MAX and coverage.covered
    apart = np.concatenate([0.1 * rng.standard_normal((4, 400, 1)), x], axis=-1)
    apart[:2, :, 1] += 3.0  # two chains at x_1 ~ 3, two at x_2 ~ 3 (after the swap below)
    apart[2:, :, 2] += 3.0
    assert not check_coverage([swap], apart).covered


def test_relabelling_and_coverage_on_two_mirror_modes(mixture):
    _, _, target = mixture
    group = find_symmetry(target, np.array([[-2.0, 3.0], [1.0, -0.5]])).group
    rng = np.random.default_rng(6)
    one_mode = np.array([-3.0, 3.0]) + 0.2 * rng.standard_normal((4, 300, 2))
    both = one_mode.copy()
    both[2:] = both[2:, :, ::-1]  # two chains in the mirror mode
    assert not check_coverage(group.actions[1:], one_mode).covered  # mean shift of 30 sd
    assert not check_coverage(group.actions[1:], both).covered  # chains disagree (R-hat)
    mixing = np.where(rng.random((4, 300, 1)) < 0.5, one_mode, one_mode[..., ::-1])
    assert check_coverage(group.actions[1:], mixing).covered
    relabelled = relabel(group, both, pivot=np.array([3.0, -3.0]))
    assert relabelled.visited == 2
    np.testing.assert_allclose(relabelled.draws, one_mode[..., ::-1])


# ---------------------------------------------------------------------- the estimators
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", ["bridge", "ds", "is", "ris"])
def test_estimators_at_defaults_recover_the_mirror_mode(mixture, mixture_draws, method, seed):
    model, gold, _ = mixture
    ev, messages = quiet(ESTIMATORS[method], model, idata=mixture_draws[seed], random_seed=seed,
                         progressbar=False)  # fmt: skip
    assert_within_se(ev, gold)
    assert ev.reliable, messages
    assert ev.diagnostics["symmetrized"] is True
    assert ev.diagnostics["reference"].startswith("symmetrized_")
    if method == "bridge":  # warp-3 is no candidate for a symmetrized reference
        assert ev.diagnostics["reference_choice"].startswith("normal (symmetrized")
    assert (
        "relabelling the 2 components of label_switching_mixture::means"
        in (ev.diagnostics["symmetry"])
    )
    visited = ev.diagnostics["mirror_images_visited"]
    assert visited == (1 if seed in ONE_MODE_SEEDS else 2)


@pytest.mark.parametrize("seed", ONE_MODE_SEEDS)
def test_symmetrize_false_flags_the_missed_mirror_mode(mixture, mixture_draws, seed):
    model, gold, _ = mixture
    with pytest.warns(UserWarning, match="invariant under relabelling the 2 components"):
        ev = pme.bridge_sampling(model, idata=mixture_draws[seed], random_seed=seed,
                                 progressbar=False, symmetrize=False)  # fmt: skip
    assert ev.log_z - gold == pytest.approx(-math.log(2), abs=0.02)  # one mode's mass
    assert not ev.reliable
    assert "symmetrize=False" in ev.warnings[0] and "ordered" in ev.warnings[0]
    assert ev.diagnostics["symmetrized"] is False


def test_warp3_cannot_be_symmetrized_and_says_so(mixture, mixture_draws):
    model, _, _ = mixture
    with pytest.warns(UserWarning, match="warp-3's reflection"):
        ev = pme.bridge_sampling(model, idata=mixture_draws[1], random_seed=1,
                                 progressbar=False, reference="warp3")  # fmt: skip
    assert not ev.reliable


def test_symmetrize_is_validated(mixture, mixture_draws):
    model, _, _ = mixture
    with pytest.raises(EvidenceInputError, match=r"symmetrize='yes' but it must be one of"):
        pme.bridge_sampling(model, idata=mixture_draws[1], symmetrize="yes")


# ---------------------------------------------------------------------- other symmetries
def test_no_symmetry_no_change():
    """A model without exchangeable components: nothing found, the reference as fitted."""
    model, exact = normal_mean()  # y_i ~ N(mu, 1), i = 1..30, mu ~ N(0, 2^2)
    y = np.asarray(model.rvs_to_values[model.observed_RVs[0]].data)
    precision = 1 / 2.0**2 + y.size
    target = LogDensity(model)
    x = y.sum() / precision + np.random.default_rng(7).standard_normal((4, 500, 1)) / np.sqrt(
        precision
    )
    ev, messages = quiet(pme.bridge_sampling, target, idata=x, random_seed=7, reference="normal")
    assert ev.diagnostics["symmetry"] == "none" and ev.diagnostics["symmetrized"] is False
    assert ev.diagnostics["reference"] == "normal"
    assert_within_se(ev, exact)
    assert ev.reliable, messages


def test_an_invariant_reference_is_reported_as_not_symmetrized():
    """symmetrize=True on ``y ~ N(t1 + t2, 1)`` with a given N(0, I) reference, already
    invariant under swapping ``t``: left as it is, and every method says so (the flag used to
    be written into the plan after the diagnostics were copied, so DS, RIS and bridge reported
    ``symmetrized=True``)."""
    y = np.array([0.7, 1.4, 1.1])
    with pm.Model() as model:
        t = pm.Normal("t", f64(0), f64(1), shape=2)
        pm.Normal("y", t[0] + t[1], f64(1), observed=y)
    x = np.random.default_rng(9).normal(0.3, 0.5, size=(4, 200, 2))
    reference = MultivariateNormalReference(np.zeros(2), np.eye(2))
    for method in (pme.discriminance_sampling, pme.reverse_importance_sampling):
        ev, _ = quiet(method, model, idata=x, reference=reference, symmetrize=True,
                      random_seed=9)  # fmt: skip
        assert ev.diagnostics["symmetrized"] is False, method.__name__
        assert ev.diagnostics["symmetry"].endswith("already invariant: left as it is)")


def test_symmetric_unimodal_posterior_covered_by_the_draws():
    """``y ~ N(t1 + t2, 1)``, ``t1, t2 ~ N(0, 1)``: invariant under swapping ``t``, one mode.
    Exact posterior draws cover the mirror image: found, not symmetrized, log Z exact."""
    y = np.array([0.7, 1.4, 1.1])
    with pm.Model() as model:
        t = pm.Normal("t", f64(0), f64(1), shape=2)
        pm.Normal("y", t[0] + t[1], f64(1), observed=y)
    ones = np.ones((3, 2))
    exact = stats.multivariate_normal(np.zeros(3), np.eye(3) + ones @ ones.T).logpdf(y)
    precision = np.eye(2) + ones.T @ ones
    cov = np.linalg.inv(precision)
    rng = np.random.default_rng(8)
    x = rng.multivariate_normal(cov @ ones.T @ y, cov, size=(4, 500))
    ev, messages = quiet(pme.bridge_sampling, model, idata=x, random_seed=8)
    assert ev.diagnostics["symmetry"].endswith("the draws cover them, reference not symmetrized")
    assert ev.diagnostics["symmetrized"] is False
    assert_within_se(ev, exact)
    assert ev.reliable, messages
    forced, _ = quiet(pme.bridge_sampling, model, idata=x, random_seed=8, symmetrize=True)
    assert forced.diagnostics["symmetrized"] is True
    assert_within_se(forced, exact)


def test_group_too_large_is_flagged():
    """Six exchangeable components (720 relabellings, above MAX_GROUP_SIZE): draws in one
    mirror mode give a warning naming the variable and the remedies, and reliable=False."""
    rng = np.random.default_rng(9)
    centres = np.linspace(-10.0, 10.0, 6)
    y = np.repeat(centres, 5) + rng.normal(0, 0.5, 30)
    with pm.Model() as model:
        mu = pm.Normal("mu", f64(0), f64(10), shape=6)
        pm.NormalMixture("y", w=np.full(6, 1 / 6), mu=mu, sigma=f64(1), observed=y)
    x = centres + 0.2 * rng.standard_normal((4, 100, 6))  # one mirror mode
    with pytest.warns(UserWarning, match=f"more than the {MAX_GROUP_SIZE}"):
        ev = pme.bridge_sampling(model, idata=x, random_seed=9)
    assert not ev.reliable
    message = next(m for m in ev.warnings if "invariant" in m)
    assert "relabelling the 6 components of mu (720 mirror images)" in message
    assert "ordered" in message and "path method" in message
    assert ev.diagnostics["symmetry_group_size"] == 720


def _dirichlet_mixture_gold(y: np.ndarray) -> float:
    """log Z of ``y ~ w N(m1, 1) + (1 - w) N(m2, 1)``, ``w ~ Dirichlet(1, 1)``, ``m ~ N(0, 5^2)``:
    Gauss-Legendre over ``w`` in (0, 1) (60 nodes) times one box of +-1.5 (about 5.5 posterior
    sd) per mirror mode in ``(m1, m2)`` (40 x 40 nodes; 80 x 48 nodes agree to 1e-13)."""
    from scipy.special import logsumexp

    x_w, weights_w = np.polynomial.legendre.leggauss(60)
    w = 0.5 * (x_w + 1)
    x_m, weights_m = np.polynomial.legendre.leggauss(40)
    low, high = y[y < 0].mean(), y[y > 0].mean()
    per_mode = []
    for c1, c2 in [(low, high), (high, low)]:
        grid_w, m1, m2 = np.meshgrid(w, c1 + 1.5 * x_m, c2 + 1.5 * x_m, indexing="ij")
        first = np.log(grid_w)[..., None] + stats.norm.logpdf(y, m1[..., None], 1.0)
        second = np.log1p(-grid_w)[..., None] + stats.norm.logpdf(y, m2[..., None], 1.0)
        log_f = np.logaddexp(first, second).sum(-1) + stats.norm.logpdf([m1, m2], 0, 5).sum(0)
        log_weights = (np.log(0.5 * weights_w)[:, None, None] + np.log(1.5 * weights_m)[:, None]
                       + np.log(1.5 * weights_m))  # fmt: skip
        per_mode.append(logsumexp(log_f + log_weights))
    return float(logsumexp(per_mode))


@pytest.mark.slow  # about 20 s; the detector test above covers the Dirichlet relabelling
def test_dirichlet_weighted_mixture_end_to_end():
    """Weights ``w ~ Dirichlet(1, 1)`` are relabelled with the means through the simplex
    transform (an affine map of the unconstrained value): bridge at defaults, NUTS chains in one
    mirror mode, against a 3-D quadrature gold."""
    from pm_evidence.model.draws import posterior_draws

    rng = np.random.default_rng(12)
    y = np.concatenate([rng.normal(-2.5, 1, 14), rng.normal(2.5, 1, 26)])
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.ones(2))
        means = pm.Normal("means", f64(0), f64(5), shape=2)
        pm.NormalMixture("y", w=w, mu=means, sigma=f64(1), observed=y)
    gold = _dirichlet_mixture_gold(y)
    target = LogDensity.for_model(model)
    # PyMC's NUTS (sample_kwargs={}: its four chains stay in one mirror mode), not the default
    # batched HMC, whose many chains start in both
    x = posterior_draws(
        target, None, rng=np.random.default_rng(0), progressbar=False, sample_kwargs={}
    )
    ev, messages = quiet(pme.bridge_sampling, model, idata=x, random_seed=0)
    assert ev.diagnostics["symmetry"].startswith("relabelling the 2 components of w and means")
    assert ev.diagnostics["mirror_images_visited"] == 1
    assert_within_se(ev, gold)
    assert ev.reliable, messages
    off, _ = quiet(pme.bridge_sampling, model, idata=x, random_seed=0, symmetrize=False)
    assert off.log_z - gold == pytest.approx(-math.log(2), abs=0.02) and not off.reliable
