"""Priors with their own support: transforms that cut the prior, and those that cut nothing.

PyMC's prior density of ``x ~ N(0, 1)`` declared with ``transform=Interval(-1, 1)`` is the
normal on ``(-1, 1)``, not renormalized (:class:`pm_evidence.model.prior.PriorCut`). Checked
here: a ``CustomDist`` whose draws stay inside its ``Interval`` is no cut and a reference as it
is; a cut's mass is exact where the CDF gives it and estimated from forward draws elsewhere,
with an SE that matches the spread over streams; draws of the cut prior lie inside and have
its law; the prior reference of a cut model integrates to 1; a cut of tiny mass is refused
with its reason.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from pymc.distributions.transforms import Interval
from scipy import integrate, special, stats

from pm_evidence import LogDensity
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references import PriorReference
from pm_evidence.zoo import support

f64 = np.float64


def _cut_normal_model(bound: float = 1.0):
    with pm.Model() as model:
        x = pm.Normal("x", f64(0), f64(1), transform=Interval(f64(-bound), f64(bound)))
        pm.Normal("y", x, f64(1), observed=np.array([0.5, 0.9]))
    return model


@pytest.fixture(scope="module")
def cut_target():
    return LogDensity(_cut_normal_model())


@pytest.fixture(scope="module")
def hierarchical_target():
    return LogDensity(support.hierarchical_cut_normal()[0])


def test_custom_dist_priors_inside_their_interval_are_no_cut_and_a_reference():
    target = LogDensity(support.circular_rv()[0])
    cut = target.prior_cut
    assert set(cut.candidates) == {"circular_rv::period", "circular_rv::jitter"}
    assert cut.cut == () and cut.log_mass == 0.0 and cut.log_mass_se == 0.0
    reference = PriorReference(target)  # refused before: "a transform that restricts its support"
    assert reference.log_normalizer == 0.0
    values = target.to_constrained(reference.sample(np.random.default_rng(1), 2000))
    assert np.all((values["circular_rv::period"] > 2) & (values["circular_rv::period"] < 60))


@pytest.mark.parametrize(
    ("build", "args", "interval"),
    [(support.jeffreys, (2.0, 60.0), (2.0, 60.0)), (support.modified_jeffreys, (1.0, 20.0), (0.0, 20.0))],
)  # fmt: skip
def test_the_custom_dist_priors_are_normalized(build, args, interval):
    """``int exp(logp) = 1`` over the interval (adaptive quadrature): what their gold assumes."""
    with pm.Model():
        rv = build("p", *args)
    value = rv.type()
    logp = pm.pytensorf.compile([value], pm.logp(rv, value))
    mass, _ = integrate.quad(lambda p: math.exp(logp(np.float64(p))), *interval, limit=200)
    assert mass == pytest.approx(1.0, abs=1e-8)


def test_a_cut_normal_has_its_exact_mass_and_the_reference_integrates_to_one(cut_target):
    cut = cut_target.prior_cut
    assert cut.cut == ("x",) and cut.log_mass_se == 0.0 and "exact" in cut.how
    # PyMC's normal log-CDF scales by a float32 sqrt(2) (relative error 1.7e-8; the zoo's tests)
    assert cut.log_mass == pytest.approx(math.log(special.ndtr(1) - special.ndtr(-1)), abs=1e-7)
    reference = PriorReference(cut_target)
    u = np.linspace(-40.0, 40.0, 80_001)[:, None]  # the unconstrained line, logit of (x + 1) / 2
    mass = np.exp(reference.logpdf(u)).sum() * (u[1, 0] - u[0, 0])
    assert mass == pytest.approx(1.0, abs=1e-6)


def test_draws_of_a_cut_prior_lie_inside_and_have_its_law(cut_target):
    """A KS test against the normal truncated to (-1, 1) (fixed seed; p > 1e-3)."""
    values = cut_target.to_constrained(cut_target.sample_prior(np.random.default_rng(2), 4000))
    x = values["x"]
    assert len(x) == 4000 and np.all(np.abs(x) < 1)
    assert stats.kstest(x, stats.truncnorm(-1, 1).cdf).pvalue > 1e-3


def test_a_log_transform_on_a_normal_is_a_cut_of_half_its_mass():
    with pm.Model() as model:
        pm.Normal("s", f64(0), f64(1), transform=pm.distributions.transforms.log)
    reference = PriorReference(LogDensity.for_model(model))
    assert reference.log_normalizer == pytest.approx(math.log(2.0), abs=1e-12)


def test_a_cut_whose_mass_depends_on_a_parent_is_estimated_with_its_binomial_se(
    hierarchical_target,
):
    """``x | mu ~ N(mu, 1)``, ``mu ~ N(0, 1)``, cut to (-1, 1): mass ``P(|N(0, 2)| < 1)``."""
    exact = math.log(2 * special.ndtr(1 / math.sqrt(2)) - 1)
    cut = hierarchical_target.prior_cut
    assert cut.cut == ("hierarchical_cut_normal::x",) and "forward draws" in cut.how
    assert cut.log_mass_se > 0
    assert abs(cut.log_mass - exact) < 4 * cut.log_mass_se


def test_the_cut_mass_se_matches_its_spread_over_streams(hierarchical_target):
    """30 streams of 2,000 draws: SD of ``log m`` over the mean reported SE within 0.6-1.5 (the
    ratio's own sampling SD is about 0.13 at 30 replicates)."""
    cuts = [
        hierarchical_target.measure_prior_cut(np.random.default_rng(100 + i), 2000)
        for i in range(30)
    ]
    spread = np.std([c.log_mass for c in cuts], ddof=1)
    ratio = spread / np.mean([c.log_mass_se for c in cuts])
    assert 0.6 < ratio < 1.5, ratio


def test_an_estimated_cut_adds_its_se_to_results_from_the_prior(hierarchical_target):
    import pm_evidence as pme

    model = hierarchical_target.model
    ev = pme.marginal_likelihood(
        model, method="ais", reference="prior", random_seed=3, progressbar=False
    )
    assert ev.diagnostics["reference"] == "prior"
    cut = hierarchical_target.prior_cut
    assert ev.diagnostics["prior_cut_log_mass_se"] == cut.log_mass_se
    assert ev.se >= cut.log_mass_se
    gold = support.SUPPORT_ZOO[1].gold().log_z
    assert abs(ev.log_z - gold) < 4 * ev.se


def test_a_cut_of_tiny_mass_is_refused_with_its_reason():
    with pm.Model() as model:
        pm.Normal("x", f64(0), f64(1), transform=Interval(f64(4.0), f64(5.0)))
    with pytest.raises(EvidenceInputError, match=r"\['x'\] keep 3.1e-05 of the prior's forward"):
        PriorReference(LogDensity.for_model(model))


def test_prior_draws_of_a_tiny_cut_are_refused_not_attempted():
    """Rejection at a mass of 3e-5 would draw 30,000 times the draws asked for."""
    with pm.Model() as model:
        pm.Normal("x", f64(0), f64(1), transform=Interval(f64(4.0), f64(5.0)))
    with pytest.raises(EvidenceInputError, match="cannot be drawn forward"):
        LogDensity.for_model(model).sample_prior(np.random.default_rng(0), 10)
