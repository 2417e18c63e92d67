"""What the path estimators cost on a run record, against the run itself.

For each model, at defaults (no options): ``make_plan``, one annealing run
(``run_annealing``) and one tempered run (``run_tempering`` with ``record=True``, which keeps
every draw for MBAR and changes none); then every follow-up estimator on its record, timed
with ``time.perf_counter``. An estimator's time is the median of ``REPEATS`` calls on the same
record (the first call of a process also pays one-off warm-ups, e.g. NumPy's and xarray's
first dispatches, which are not a per-run cost; it is printed too). A run's time is the median
of three identical runs (same seed) when one takes under a second (timings of 10-50 ms runs
jitter by a few ms), else one run. Printed: the run's wall time, each estimator's wall time (median and first call),
and the ratio median / run (the target is at most 0.1).

Run::

    python benchmarks/estimator_overhead.py                       # the defaults.py models
    python benchmarks/estimator_overhead.py --models gaussian_mixture_10d
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace

import numpy as np
from defaults import _models, quiet_logging

import pm_evidence as pme
from pm_evidence.path import path_estimators

ANNEALING_FOLLOW_UPS = {"ais": path_estimators.ais, "ads": path_estimators.ads}
TEMPERED_FOLLOW_UPS = {
    "rts": path_estimators.rts,
    "ti": path_estimators.ti,
    "mbar": path_estimators.mbar,
}


REPEATS = 5  # calls of each estimator on the same record
SHORT_RUN_S = 1.0  # runs shorter than this are timed three times


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def timed_run(fn, *args, seed: int, **kwargs):
    """The run and its wall time: one run, or, when one takes under ``SHORT_RUN_S``, the median
    of three identical runs (each from a generator seeded alike: a default run's size is
    adaptive, so runs from different streams differ in size, up to 8x on eight schools)."""
    out, first = timed(fn, *args, rng=np.random.default_rng(seed), **kwargs)
    if first >= SHORT_RUN_S:
        return out, first
    times = [first]
    for _ in range(2):
        _, t = timed(fn, *args, rng=np.random.default_rng(seed), **kwargs)
        times.append(t)
    return out, float(np.median(times))


def timed_estimator(follow_up, run):
    """The estimate, the median wall time of ``REPEATS`` calls and the first call's."""
    ev, first = timed(follow_up, run)
    times = [first] + [timed(follow_up, run)[1] for _ in range(REPEATS - 1)]
    return ev, float(np.median(times)), first


def one_model(name: str, build, seed: int) -> list[tuple]:
    model, gold = build()
    plan, t_plan = timed(pme.make_plan, model, random_seed=seed, progressbar=False)
    rows = []
    annealing, t_annealing = timed_run(pme.run_annealing, plan, seed=seed, progressbar=False)
    for method, follow_up in ANNEALING_FOLLOW_UPS.items():
        ev, t, first = timed_estimator(follow_up, annealing)
        rows.append((name, method, t_annealing, t, first, ev.log_z - gold, ev.se))
    options = replace(pme.TemperingOptions(), record=True)
    tempered, t_tempered = timed_run(
        pme.run_tempering, plan, options, seed=seed + 1, progressbar=False
    )
    for method, follow_up in TEMPERED_FOLLOW_UPS.items():
        ev, t, first = timed_estimator(follow_up, tempered)
        rows.append((name, method, t_tempered, t, first, ev.log_z - gold, ev.se))
    print(f"{name}: plan {t_plan:.1f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    models = _models()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=sorted(models), default=sorted(models))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    quiet_logging()
    warnings.simplefilter("ignore")
    rows = []
    for name in args.models:
        rows += one_model(name, models[name].build, args.seed)
    print(f"{'model':26s} {'method':6s} {'run s':>7s} {'estimator s':>12s} {'first s':>8s} "
          f"{'ratio':>7s} {'error':>9s} {'se':>8s}")  # fmt: skip
    for name, method, t_run, t, first, err, se in rows:
        print(
            f"{name:26s} {method:6s} {t_run:7.3f} {t:12.4f} {first:8.4f} {t / t_run:7.3f} "
            f"{err:9.4f} {se:8.4f}"
        )
    worst = max(rows, key=lambda row: row[3] / row[2])
    print(f"largest ratio: {worst[3] / worst[2]:.3f} ({worst[1]} on {worst[0]}); target <= 0.1")


if __name__ == "__main__":
    main()
