"""``auto`` at defaults on the orbit with a Gaussian-process term
(``pm_evidence.zoo.support.rv_gp``), each of its stages timed.

The call is ``pm_evidence.marginal_likelihood(model, random_seed=seed)``, as a user makes it.
The stages of ``pm_evidence.auto`` (the exploration, the test of its particles, the posterior
draws, the estimate and its check, the draws' mixture for the check, the coverage, a second
exploration's confirmation) are wrapped in timers for this process only, so that the script
prints each stage's wall time as it ends, then both estimates of the pair (their SE,
evaluations and what stopped AIS), the result and the diagnostics of the exploration and the
draws. A model call costs one Cholesky factor of an ``n x n`` matrix per point: at ``n = 200``
the call takes 10-20 minutes on one core.

Run from the repository root::

    python benchmarks/auto_stages.py
    python benchmarks/auto_stages.py --n 100 --planets 1 --seed 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pm_evidence as pme
import pm_evidence.auto as auto
from pm_evidence.zoo.support import rv_gp

STAGES = (
    "exploration_stage", "missed_mass_stage", "draws_stage", "drawn_reference_stage",
    "estimate_and_check", "coverage_stage", "completed_exploration_stage", "_confirmed",
)  # fmt: skip
PAIR_FACTS = (
    "n_chains", "n_evaluations", "ess_fraction", "pareto_k", "stopped_by", "draws_evaluations",
    "draws_mean_leapfrog", "draws_divergences", "reference_drawn_components",
)  # fmt: skip


def timed(name: str, seconds: dict) -> None:
    """Replace ``auto``'s stage ``name`` by the same function, timed into ``seconds``."""
    stage = getattr(auto, name)

    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return stage(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
            print(f"stage {name}: {seconds[name]:.1f} s", flush=True)

    setattr(auto, name, run)


def printed_pair() -> None:
    """Print both estimates where ``auto`` compares them."""
    compare = auto.cross_checked

    def run(first, second, prefer_first=False):
        for ev in (first, second):
            facts = {k: ev.diagnostics.get(k) for k in PAIR_FACTS if k in ev.diagnostics}
            print(f"pair {ev.method}: {ev.log_z:.4f} (SE {ev.se:.4f}), reliable={ev.reliable}, "
                  f"{facts}, warnings={[w[:200] for w in ev.warnings]}", flush=True)  # fmt: skip
        return compare(first, second, prefer_first)

    auto.cross_checked = run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="observations")
    parser.add_argument("--planets", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    seconds: dict[str, float] = {}
    for name in STAGES:
        timed(name, seconds)
    printed_pair()
    model, _ = rv_gp(n=args.n, n_planets=args.planets)
    start = time.perf_counter()
    ev = pme.marginal_likelihood(model, random_seed=args.seed, progressbar=False)
    print(f"the call: {time.perf_counter() - start:.1f} s; {ev}; reliable={ev.reliable}")
    for warning in ev.warnings:
        print("warning:", warning)
    for key, value in ev.diagnostics.items():
        scalar = isinstance(value, int | float | str | bool | np.floating | np.integer)
        if key.startswith(("exploration", "auto", "draws")) and scalar:
            print(f"  {key} {value}")


if __name__ == "__main__":
    main()
