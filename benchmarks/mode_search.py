"""Which searcher reaches a narrow mode: ``auto``'s exploration and its posterior draws, seed by
seed, on the orbit with a Gaussian-process term (``pm_evidence.zoo.support.rv_gp``).

With 100 observations and one planet, the planet's orbit is a narrow joint mode (the planet's
period, a larger amplitude, another rotation period of the Gaussian-process term) that holds
about ``e^8.6`` times the mass of the modes where the Gaussian-process term explains the signal.
``auto`` is right only where some searcher reaches it: the exploration's particles, or a chain
of the posterior draws (whose region outside the exploration's mixture then joins AIS's
reference). This script runs those two stages of ``auto`` (``exploration_stage``, then
``draws_stage`` started from the exploration's particles, on the call's own streams) and prints,
per seed: the stages' wall time and evaluations, the highest ``log f`` of the exploration's final
particles, each chain's median ``log f``, and how many chains sit above every particle (their
median ``log f`` above the particles' highest). At 100 observations a chain in the planet's
mode sits about 14 nats above the other chains and 9 above the best particle; a seed with no
such chain is one where ``auto`` can miss the mode (measured: docs/benchmarks.rst, "The orbit
with correlated noise"). On a small data set the column means less: the posterior is wide, and
a chain's median can pass the best of the particles without a new mode.

Two variations measure what the exploration's second pass is for. ``--first-pass`` stops the
exploration after its first pass (``ExplorationOptions(second_pass_ess=0)``, which also leaves
out the refit to the last rung's particles alone that a poor first fit gets in ``auto``), whose
particles
on this model sit where the Gaussian-process term explains the signal while its mixture holds
the planet's mode as a component climbed to. ``--starts resampled`` starts the draws at
``IMPORTANCE_DRAWS`` draws of the exploration's reference resampled by their importance weights
``f / q`` (a point where the model's density is NaN weighs zero) instead of at its particles.

Run from the repository root (about 5 minutes a seed on one core; 10-15 at ``--n 200``)::

    python benchmarks/mode_search.py
    python benchmarks/mode_search.py --seeds 1 2 3 4 --n 100 --planets 1
    python benchmarks/mode_search.py --seeds 2 --n 200 --first-pass --starts resampled
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from pm_evidence.auto import draws_stage, exploration_stage
from pm_evidence.core.utils import kish_ess, normalized_weights, root_sequence, stage_rngs
from pm_evidence.model.log_density import LogDensity
from pm_evidence.search.exploration import ExplorationOptions, explore
from pm_evidence.zoo.support import rv_gp

IMPORTANCE_DRAWS = 4096  # reference draws resampled for --starts resampled


def resampled(target, exploration, rng):
    """``exploration`` with its particles replaced by draws of its reference resampled by their
    importance weights: points in every component, in the proportions the weights give."""
    reference = exploration.reference()
    x = reference.sample(rng, IMPORTANCE_DRAWS)
    log_f = target.log_density(x)
    log_w = np.where(np.isnan(log_f), -np.inf, log_f) - reference.logpdf(x)
    pick = rng.choice(
        IMPORTANCE_DRAWS, size=exploration.particles.shape[0], p=normalized_weights(log_w)
    )
    ess = kish_ess(log_w) / IMPORTANCE_DRAWS
    print(f"     importance resampling: ESS {ess:.2%} of {IMPORTANCE_DRAWS}", flush=True)
    return dataclasses.replace(exploration, particles=x[pick])


def main(seeds, n: int, planets: int, first_pass: bool, starts: str) -> None:
    model, _ = rv_gp(n=n, n_planets=planets)
    target = LogDensity(model)
    print(
        f"{'seed':>4s} {'explore s':>9s} {'evals':>9s} {'best particle':>13s} "
        f"{'draws s':>8s} {'evals':>9s} {'chain medians (min, max)':>26s} {'chains above':>12s}"
    )
    for seed in seeds:
        root = root_sequence(seed)
        start = time.perf_counter()
        if first_pass:
            options = ExplorationOptions(second_pass_ess=0.0)
            exploration = explore(target, stage_rngs(root)["exploration"], options)
        else:
            exploration = exploration_stage(target, root, False, defer_second_pass=True)
        explored = time.perf_counter() - start
        best = float(np.max(target.log_density(exploration.particles)))
        if starts == "resampled":
            exploration = resampled(target, exploration, np.random.default_rng(seed))
        start = time.perf_counter()
        plan = draws_stage(target, None, root, False, {}, exploration=exploration)
        drawn = time.perf_counter() - start
        chains, draws, dim = plan.draws.shape
        log_f = target.log_density(plan.draws.reshape(-1, dim)).reshape(chains, draws)
        medians = np.median(log_f, axis=1)
        above = int(np.sum(medians > best))
        print(
            f"{seed:4d} {explored:9.1f} {exploration.n_evaluations:9d} {best:13.2f} "
            f"{drawn:8.1f} {plan.facts.get('draws_evaluations', 0):9d} "
            f"{f'({medians.min():.1f}, {medians.max():.1f})':>26s} {above:>6d} of {chains}",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--n", type=int, default=100, help="observations")
    parser.add_argument("--planets", type=int, default=1)
    parser.add_argument(
        "--first-pass", action="store_true", help="the exploration's first pass only"
    )
    parser.add_argument("--starts", choices=["particles", "resampled"], default="particles")
    args = parser.parse_args()
    main(args.seeds, args.n, args.planets, args.first_pass, args.starts)
