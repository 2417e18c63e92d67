"""Compile time, peak memory and time per evaluation of the model adapter on the zoo.

For each model of :data:`pm_evidence.zoo.testing.ZOO` (each in its own process, so that peak memory
is that model's alone) this prints:

- the block size (points per compiled call, chosen from the number of observations);
- the size of the log-density-and-gradient graph and whether the fused HMC transition is built
  (``MAX_FUSED_OPERATIONS``) or the NumPy transition is used;
- compile time of the batched log-density, of its gradient and of the fused HMC transition;
- time per point of a log-density (and gradient) evaluation on 1,000 points;
- the process's peak resident memory.

Run from the repository root::

    python benchmarks/adapter_cost.py                 # every zoo model
    python benchmarks/adapter_cost.py --models lkj_2d large_normal_mean_1e6
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def _compile_and_per_point(evaluate, x) -> tuple[float, float]:
    """Seconds of the first call (compilation) and microseconds per point of the next."""
    start = time.perf_counter()
    evaluate(x[:2])
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    evaluate(x)
    return compile_s, (time.perf_counter() - start) / x.shape[0] * 1e6


def measure(name: str) -> dict:
    from pm_evidence import LogDensity
    from pm_evidence.references import PriorReference
    from pm_evidence.tempering.compiled import MAX_FUSED_OPERATIONS, hmc_transition_function
    from pm_evidence.tempering.path import GeometricPath
    from pm_evidence.zoo.testing import zoo

    (entry,) = zoo([name])
    model, _ = entry.build()
    target = LogDensity(model)
    rng = np.random.default_rng(0)
    x = rng.normal(scale=0.5, size=(1000, target.dim))
    row = {
        "model": name,
        "dim": target.dim,
        "n_obs": target.n_observations,
        "block": target.block_size,
    }
    row["compile_logp_s"], row["logp_us_per_point"] = _compile_and_per_point(target.evaluate, x)
    if target.discrete_mask.all():
        row["fused"] = "n/a (discrete)"
    else:
        row["compile_grad_s"], row["grad_us_per_point"] = _compile_and_per_point(
            target.evaluate_with_grad, x
        )
        ops = target.gradient_graph_size
        row["graph_ops"] = ops
        try:
            path = GeometricPath(target, PriorReference(target))
        except Exception as error:  # e.g. an improper or restricted prior
            row["fused"] = f"n/a ({type(error).__name__})"
        else:
            start = time.perf_counter()
            fused = hmc_transition_function(path, 2)
            if fused is not None:
                row["fused"] = "yes"
            elif target.has_discrete:
                row["fused"] = "no (discrete entries: compound kernel)"
            else:
                row["fused"] = f"no (> {MAX_FUSED_OPERATIONS} ops)"
            row["compile_fused_s"] = time.perf_counter() - start
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    from pm_evidence.zoo.testing import zoo

    names = [entry.name for entry in zoo(args.models)]
    columns = ["model", "dim", "n_obs", "block", "graph_ops", "fused", "compile_logp_s",
               "compile_grad_s", "compile_fused_s", "logp_us_per_point", "grad_us_per_point",
               "peak_rss_mb"]  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for name in names:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"| {name} | failed: {done.stderr.strip().splitlines()[-1]} |")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        cells = []
        for column in columns:
            value = row.get(column, "")
            cells.append(f"{value:.3g}" if isinstance(value, float) else str(value))
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
