r"""Whether the exploration's particles missed posterior mass that its mixture found, and where
posterior draws should then start.

At ``beta = 1`` the exploration's particles are approximately posterior draws, but only in the
modes they reached: a narrow, high mode that takes over near ``beta = 1`` (a first-order phase
transition, the exploration module's "Which modes it cannot find") can hold most of the mass
while no particle is in it, and only a climb from a visited point adds a component there
(:func:`~pm_evidence.search.climbing.climbed_modes`). The particles then misplace the
posterior draws' chains (started at particles: in the modes that hold little mass, where
they take tiny steps; measured: docs/benchmarks.rst, "The orbit with correlated noise"), and
the particles' shares misstate what the draws missed.

The test reads importance sampling from the exploration's reference ``q`` (its mixture, the
climbed components included): ``n`` draws ``x_i ~ q`` with weights ``w_i = f(x_i) / q(x_i)``,

.. math::
    \hat Z_{IS} = \frac1n \sum_i w_i, \qquad
    \hat s_k = \frac{\sum_i w_i r_k(x_i)}{\sum_i w_i}

(seed 002 eq. 18.41; ``r_k`` the mixture's responsibilities, so that ``s_k`` is component
``k``'s share of the posterior mass, the population Monte Carlo weight update of
:func:`~pm_evidence.search.mixtures.adapt_components`). The SMC estimate ``hat Z_SMC`` of the
exploration (seed 000 eq. (8) with resampling) counts the mass of the regions the particles
reached. Both are unbiased, and importance sampling with heavy-tailed weights errs low far more
often than high: so ``log hat Z_IS - log hat Z_SMC > MISSED_NATS`` says that the particles
missed at least ``1 - exp(-MISSED_NATS)`` of the mass, which the mixture's components found.
That alone also holds in a funnel, whose neck the particles under-fill (the first pass's SMC
``log Z`` 1.6-3.5 nats below the gold on the funnel in a box and the centered varying slopes,
seeds 1-10, importance sampling's 0.7-3.2 above it), where the draws reach the neck from the
particles' region by their own moves; what the test asks
besides is that components no particle visited (a particle share below a fifth of their
weight: :attr:`~pm_evidence.search.exploration.Exploration.unvisited`) hold
over ``UNVISITED_SHARE`` of the importance mass: a separate mode the particles never entered
(92% of the mass on a two-planet orbit; at most 10% in the funnels). Then the posterior
draws start at points resampled by those weights (systematic resampling), where the mass
is, and the importance shares, not the particles', say which components hold it
(:func:`~pm_evidence.search.coverage.compare_coverage`).

Where the test does not fire on a first pass whose mixture is a poor reference, the mixture
may lack the mode outright: no particle visited it, so no climb from a visited point added it.
A narrow mode with a wide basin (an orbit's period, reached by L-BFGS from anywhere within half
an alias spacing) is then found by climbing from particles spread over the prior's range
(:func:`spread_climbed`), and the test is made again with the components added at the modes
climbed (:func:`deferred_for_missed_mass`). Where it still does not fire, nothing changes: the
particles start the draws and their shares stand. After the exploration, ``method="auto"``
makes the test where the exploration could not weigh its mixture by importance
(``Exploration.weights_estimated`` False) or deferred its second pass for it: elsewhere the
mixture's weights already are importance estimates of the mass.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from pm_evidence.core.utils import CountedCalls, kish_ess, log_sum_exp
from pm_evidence.search.climbing import SPREAD_CLIMBS, spread_climbed_modes
from pm_evidence.search.mixtures import adapt_components, weighed_by_importance
from pm_evidence.tempering.pilot import systematic_resample

__all__ = [
    "CLIMBED_TEST_ESS", "MISSED_NATS", "N_DRAWS", "UNVISITED_SHARE", "MissedMass",
    "deferred_for_missed_mass",
    "missed_mass", "resampled_starts", "spread_climbed",
]  # fmt: skip

# Importance sampling's log Z above the exploration's SMC log Z by more than this: the particles
# missed at least 1 - e^-1 (63%) of the posterior mass (module text). The SMC's own error on the
# zoo is a few tenths of a nat where its particles are right.
MISSED_NATS = 1.0
# The components no particle visited hold more than this share of the importance mass: the mass
# the particles missed is in modes they never entered (module text).
UNVISITED_SHARE = 0.5
# Draws from the exploration's reference (one evaluation of the log density each, no gradient).
N_DRAWS = 4096
# The test made again after the climbs from spread particles defers the second pass only where
# its importance weights have at least this many effective draws. On a two-planet orbit at 50
# observations (seed 1) the climbs added components at minor modes and the test fired on an
# ESS of 2.3 draws of 4,096 (its log Z gap 1.0 nat, its shares two draws' noise); the draws
# then started at two points, and the call took 2.5 times as long for the same answer. Where
# the climbs found the planet's mode of a one-planet orbit at 200 observations, the ESS was
# 16.7 and 26.3 (seeds 1 and 2; measured: docs/benchmarks.rst, "Climbs from spread particles").
CLIMBED_TEST_ESS = 10.0


@dataclass(frozen=True)
class MissedMass:
    """Importance sampling from the exploration's reference, and what it says of the particles.

    Attributes
    ----------
    points : numpy.ndarray
        ``(n, dim)``: the draws from the reference.
    log_weights : numpy.ndarray
        ``(n,)``: ``log f - log q`` at them; ``-inf`` where ``log f`` is not finite (no mass).
    log_z : float
        ``log hat Z_IS``, the importance-sampling estimate of ``log Z``.
    smc_log_z : float
        The exploration's SMC estimate of ``log Z``.
    shares : numpy.ndarray
        ``(K,)``: each component of the exploration's mixture's share of the posterior mass,
        ``hat s_k`` (module text).
    ess : float
        Kish effective sample size of the weights (a number of draws).
    unvisited_share : float
        The share of the mass in components no particle visited (the sum of their
        ``shares``).
    """

    points: np.ndarray
    log_weights: np.ndarray
    log_z: float
    smc_log_z: float
    shares: np.ndarray
    ess: float
    unvisited_share: float

    @property
    def missed(self) -> bool:
        """Whether the particles missed mass the mixture found in modes they never entered:
        ``log_z - smc_log_z`` above ``MISSED_NATS`` and ``unvisited_share`` above
        ``UNVISITED_SHARE``."""
        return bool(
            self.log_z - self.smc_log_z > MISSED_NATS and self.unvisited_share > UNVISITED_SHARE
        )

    def diagnostics(self) -> dict:
        """What the test read, for a result's diagnostics."""
        return {
            "exploration_importance_log_z": self.log_z,
            "exploration_importance_ess": self.ess,
            "exploration_unvisited_share": self.unvisited_share,
            "exploration_particles_missed_mass": self.missed,
        }


def missed_mass(exploration, log_density, rng: np.random.Generator, n: int = N_DRAWS) -> MissedMass:
    """Importance sampling from ``exploration.reference()`` (``n`` draws, ``log_density(x (n,
    dim)) -> (n,)`` the unnormalized log posterior) and the test of the module text.

    Parameters
    ----------
    exploration : pm_evidence.search.exploration.Exploration
    log_density : callable
    rng : numpy.random.Generator
    n : int

    Returns
    -------
    MissedMass
    """
    reference = exploration.reference()
    x = reference.sample(rng, n)
    log_f = np.asarray(log_density(x), dtype=float)
    # a NaN or -inf density is no mass; +inf cannot come from a normalizable posterior's points
    log_w = np.where(np.isfinite(log_f), log_f - reference.logpdf(x), -np.inf)
    total = log_sum_exp(log_w)
    if not np.isfinite(total):  # no draw of finite density: nothing found, nothing missed
        shares = np.zeros(exploration.mixture.n_components)
        return MissedMass(x, log_w, -np.inf, float(exploration.log_z), shares, 0.0, 0.0)
    u = np.exp(log_w - total)
    shares = u @ exploration.mixture.responsibilities(x)
    return MissedMass(
        points=x,
        log_weights=log_w,
        log_z=float(total - np.log(n)),
        smc_log_z=float(exploration.log_z),
        shares=shares,
        ess=kish_ess(log_w),
        unvisited_share=float(shares[exploration.unvisited].sum()),
    )


def resampled_starts(found: MissedMass, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, dim)`` points resampled from ``found``'s draws by their weights (systematic
    resampling: each draw taken about ``n u_i`` times). Where the weights are degenerate the
    points repeat; the chains started there separate in their first transitions."""
    u = np.exp(found.log_weights - log_sum_exp(found.log_weights))
    return found.points[systematic_resample(rng, u, n)]


def deferred_for_missed_mass(first, log_f, log_f_and_grad, rng, n_draws: int, rungs):
    """A poor ``first`` pass of the exploration (``Exploration``) with its second pass
    deferred (``second_pass_deferred``, this test as ``missed_mass``) where its particles
    missed mass its mixture found (:func:`missed_mass`), or where they did once components
    were added at the modes climbed from ``SPREAD_CLIMBS`` of them (:func:`spread_climbed`),
    the test then read from at least ``CLIMBED_TEST_ESS`` effective draws; else ``first`` as
    it was, its evaluations counting the climbs. The test and the climbs draw
    on streams spawned from ``rng``, so that where neither defers the second pass, that pass is
    the one it was without them. ``log_f`` and ``log_f_and_grad``: the posterior's log density
    (and its gradient) at the rows of ``x``; ``n_draws``: the importance draws that adapt the
    mixture; ``rungs``: the mixtures fitted at the pass's rungs."""
    missed = missed_mass(first, log_f, rng.spawn(1)[0])
    if not missed.missed:
        climbed = spread_climbed(first, log_f, log_f_and_grad, rng.spawn(1)[0], n_draws, rungs)
        if climbed.n_climbed_modes > first.n_climbed_modes:
            again = missed_mass(climbed, log_f, rng.spawn(1)[0])
            if again.missed and again.ess >= CLIMBED_TEST_ESS:
                first, missed = climbed, again
        if not missed.missed:
            return dataclasses.replace(first, n_evaluations=climbed.n_evaluations)
    return dataclasses.replace(
        first, second_pass_deferred=True, missed_mass=missed,
        n_evaluations=first.n_evaluations + missed.log_weights.size,
    )  # fmt: skip


def spread_climbed(first, log_f, log_f_and_grad, rng, n_draws: int, rungs):
    """``first`` (an ``Exploration``) with a component at each mode climbed from
    ``SPREAD_CLIMBS`` of its distinct particles where the posterior holds more than its
    mixture expects (:func:`~pm_evidence.search.climbing.spread_climbed_modes`: a narrow mode
    no particle visited, whose basin is wide), the mixture then adapted by importance sampling
    (``n_draws`` draws, :func:`~pm_evidence.search.mixtures.adapt_components`); ``first`` with
    only its evaluations raised where no mode was added."""
    distinct = np.unique(first.particles, axis=0)
    starts = distinct[rng.choice(distinct.shape[0], min(SPREAD_CLIMBS, distinct.shape[0]), False)]
    pool = (first.particles, np.asarray(log_f(first.particles), dtype=float))
    mixture, added, n_eval = spread_climbed_modes(first.mixture, starts, pool, log_f_and_grad)
    n_eval += first.particles.shape[0]
    if not added:
        return dataclasses.replace(first, n_evaluations=first.n_evaluations + n_eval)
    counted = CountedCalls(log_f)
    adapted, ess = adapt_components(mixture, counted, rng, n_draws)
    n_eval += counted.evaluations
    return dataclasses.replace(
        first,
        mixture=adapted,
        reweighting_ess=ess,
        weights_estimated=weighed_by_importance(mixture, adapted, ess),
        occupancy=np.array([adapted.occupancy(q.means, q.weights) for q in rungs]),
        n_climbed_modes=first.n_climbed_modes + added,
        n_evaluations=first.n_evaluations + n_eval,
    )
