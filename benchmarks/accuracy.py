"""Accuracy and time of each estimator against exact log Z, next to PyMC's SMC.

For every exact-answer model of :mod:`pm_evidence.zoo.testing` and several seeds: NUTS once, then
each estimator on those draws; and ``pm.sample_smc`` with its own seed. Prints, per model and
method: mean error, RMSE and mean reported SE over seeds (in nats), |error| / SE, and wall time
(the estimators' time excludes NUTS, whose time is listed on its own row; SMC's includes its
sampling). Output is a Markdown table.

Run: python benchmarks/accuracy.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm

import pm_evidence as pme
from pm_evidence.zoo import testing

MODELS = {
    "normal mean (d=1)": testing.normal_mean,
    "regression n=200, d=10": testing.linear_regression,
    "inverse-gamma regression (d=4)": testing.regression_inverse_gamma,
    "beta-binomial (d=1)": testing.beta_binomial,
}
METHODS = {
    "bridge (normal)": lambda m, idata, s: pme.bridge_sampling(m, idata=idata, random_seed=s),
    "bridge (warp3)": lambda m, idata, s: pme.bridge_sampling(
        m, idata=idata, reference="warp3", random_seed=s
    ),
    "ds": lambda m, idata, s: pme.discriminance_sampling(m, idata=idata, random_seed=s),
    "is (student_t)": lambda m, idata, s: pme.importance_sampling(m, idata=idata, random_seed=s),
    "ris (normal)": lambda m, idata, s: pme.reverse_importance_sampling(
        m, idata=idata, random_seed=s
    ),
}


def timed(fn):
    """Call ``fn()``; return its result and the wall time in seconds."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def run(seeds: int, draws: int) -> None:
    rows = []
    for model_name, builder in MODELS.items():
        model, exact = builder()
        target = pme.LogDensity.for_model(model)
        target.log_density(np.zeros((1, target.dim)))  # compile outside the timings
        results = {name: [] for name in [*METHODS, "NUTS (shared draws)", "pm.sample_smc"]}
        for seed in range(seeds):
            options = {
                "draws": draws,
                "chains": 2,
                "cores": 1,
                "random_seed": seed,
                "progressbar": False,
                "compute_convergence_checks": False,
            }
            with model:
                idata, seconds = timed(lambda: pm.sample(tune=1000, **options))  # noqa: B023
            results["NUTS (shared draws)"].append((np.nan, np.nan, seconds))
            for name, method in METHODS.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ev, seconds = timed(lambda m=method: m(model, idata, seed))  # noqa: B023
                results[name].append((ev.log_z - exact, ev.se, seconds))
            with model:
                trace, seconds = timed(lambda: pm.sample_smc(**options))  # noqa: B023
            ev = pme.from_smc(trace)
            results["pm.sample_smc"].append((ev.log_z - exact, ev.se, seconds))
        for name, values in results.items():
            err, se, seconds = (np.array(v) for v in zip(*values, strict=True))
            rows.append((model_name, name, err, se, seconds))

    print(f"\n{seeds} seeds, {draws} posterior draws per chain x 2 chains; errors in nats\n")
    print("| model | method | mean error | RMSE | mean SE | max abs(error)/SE | time (s) |")
    print("|---|---|---|---|---|---|---|")
    for model_name, name, err, se, seconds in rows:
        if np.all(np.isnan(err)):
            print(f"| {model_name} | {name} | | | | | {seconds.mean():.2f} |")
            continue
        z = np.max(np.abs(err) / se)
        print(
            f"| {model_name} | {name} | {err.mean():+.4f} | {np.sqrt(np.mean(err**2)):.4f} | "
            f"{se.mean():.4f} | {z:.2f} | {seconds.mean():.2f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    run(args.seeds, args.draws)
