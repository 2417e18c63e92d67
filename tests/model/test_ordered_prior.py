"""Priors restricted by an ``ordered`` transform, drawn by sorting (issue 36, part 3).

PyMC's density of ``x ~ Normal(0, 1, shape=K, transform=ordered)`` is ``prod_i phi(x_i)`` on
``x_1 < ... < x_K``, mass ``1 / K!``; the sorted i.i.d. draws have ``K!`` times that density
(:class:`pm_evidence.model.prior.OrderedPrior`). Checked here: the reference integrates to 1
(quadrature on the unconstrained plane), its draws have the order statistics' law, models it
cannot draw are refused with the reason, and ``auto`` explores such a model and gets its exact
``log Z``.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pm_evidence as pme
from pm_evidence import LogDensity
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references import PriorReference

ordered = pm.distributions.transforms.ordered
f64 = np.float64
Y = np.array([0.9, -0.4])


def _two_ordered_means(transform=ordered):
    with pm.Model() as model:
        x = pm.Normal("x", f64(0), f64(1), shape=2, transform=transform)
        pm.Normal("y", x, f64(1), observed=Y)
    return model


def _exact_log_z() -> float:
    """``log int_{x_1 < x_2} prod_i N(x_i; 0, 1) N(y_i; x_i, 1) dx``: the unrestricted evidence
    ``prod_i N(y_i; 0, 2)`` times the posterior probability ``P(x_1 < x_2)``, the posterior's
    components being independent ``N(y_i / 2, 1 / 2)``."""
    unrestricted = stats.norm.logpdf(Y, 0.0, np.sqrt(2.0)).sum()
    return float(unrestricted + special.log_ndtr((Y[1] / 2 - Y[0] / 2) / 1.0))


@pytest.fixture(scope="module")
def target():
    return LogDensity(_two_ordered_means())


def test_sorted_prior_reference_integrates_to_one(target):
    """``exp(log p0)`` over the unconstrained plane ``(x_1, log(x_2 - x_1))``: 1 to 1e-6, where
    PyMC's own prior density has mass ``1 / 2!``."""
    reference = PriorReference(target)
    assert reference.log_normalizer == pytest.approx(math.log(2.0))
    u1 = np.linspace(-9.0, 9.0, 721)
    u2 = np.linspace(-14.0, 3.0, 681)
    grid = np.stack(np.meshgrid(u1, u2, indexing="ij"), axis=-1).reshape(-1, 2)
    cell = (u1[1] - u1[0]) * (u2[1] - u2[0])
    mass = np.exp(reference.logpdf(grid)).sum() * cell
    assert mass == pytest.approx(1.0, abs=1e-6)
    model_mass = np.exp(target.log_prior(grid)).sum() * cell
    assert model_mass == pytest.approx(0.5, abs=1e-6)


def test_sorted_draws_are_the_order_statistics(target):
    """The smaller of two i.i.d. N(0, 1) has CDF ``1 - (1 - Phi)^2``: a KS test of 4,000 draws
    (fixed seed; fails with probability 1e-3 were the law wrong by chance)."""
    x = target.sample_prior(np.random.default_rng(3), 4000)
    values = target.to_constrained(x)["x"]
    assert np.all(np.isfinite(x)) and np.all(np.diff(values, axis=-1) > 0)
    result = stats.kstest(values[:, 0], lambda v: 1.0 - stats.norm.sf(v) ** 2)
    assert result.pvalue > 1e-3


def test_descending_order_is_sorted_the_other_way():
    descending = pm.distributions.transforms.Ordered(ascending=False)
    target = LogDensity(_two_ordered_means(descending))
    values = target.to_constrained(target.sample_prior(np.random.default_rng(4), 50))["x"]
    assert np.all(np.diff(values, axis=-1) < 0)
    assert PriorReference(target).log_normalizer == pytest.approx(math.log(2.0))


def test_exchangeable_given_parents_and_several_vectors():
    """``x ~ N(mu, 1)`` with a free ``mu``: i.i.d. given its parent; a (2, 3) ordered variable
    is two vectors of 3, ``log normalizer = 2 log 3!``."""
    with pm.Model() as model:
        mu = pm.Normal("mu", f64(0), f64(1))
        pm.Normal("x", mu, f64(1), shape=(2, 3), transform=ordered)
        pm.Normal("w", f64(0), f64(1), shape=3, transform=ordered)
    target = LogDensity(model)
    assert target.prior_ordering.log_normalizer == pytest.approx(3 * math.log(6.0))
    values = target.to_constrained(target.sample_prior(np.random.default_rng(5), 20))
    assert np.all(np.diff(values["x"], axis=-1) > 0)


@pytest.mark.parametrize(
    ("build", "reason"),
    [
        (lambda: pm.Normal("x", np.array([0.0, 1.0]), f64(1), transform=ordered),
         "not exchangeable"),
        (lambda: pm.Normal("x", f64(0), f64(1), shape=2,
                           transform=pm.distributions.transforms.Ordered(positive=True)),
         "positive=True"),
        (lambda: pm.Normal("z", pm.Normal("x", f64(0), f64(1), shape=2, transform=ordered), 1.0),
         "another free variable depends on it"),
    ],
)  # fmt: skip
def test_orderings_sorting_cannot_draw_are_refused_with_the_reason(build, reason):
    with pm.Model() as model:
        build()
    target = LogDensity(model)
    with pytest.raises(EvidenceInputError, match=f"'x' has an ordered transform.*{reason}"):
        PriorReference(target)


def test_auto_explores_an_ordered_model_and_gets_its_exact_log_z():
    """Before: skipped ("the prior cannot be sampled as a reference"), NUTS alone."""
    ev = pme.marginal_likelihood(_two_ordered_means(), random_seed=1, progressbar=False)
    assert "exploration" not in ev.diagnostics  # set only where it was skipped
    assert ev.diagnostics["exploration_n_modes"] >= 1
    assert ev.reliable
    assert abs(ev.log_z - _exact_log_z()) < 4 * ev.se
