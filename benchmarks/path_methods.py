"""RMSE of log Z against cost for the annealed / tempered methods and pm.sample_smc.

Run:  .venv/bin/python benchmarks/path_methods.py [--repeats R] [--out docs/_static]

For every exact-answer model, each method is repeated R times with different seeds; we print
the RMSE and mean error against the exact log Z, the mean reported SE, wall time and the number
of log-density (or gradient) evaluations, and the ratio of SMC's RMSE to the best method's.
A second table gives RMSE against the number of rungs K for RTS and TI (seed 004 Fig. 4).
Prints ratios and RMSEs; it is not a timed test.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm

import pm_evidence as pme
from pm_evidence import testing

METHODS = ["ais", "raise", "ads", "rts", "ti", "mbar"]
MODELS = {
    "normal_mean (conjugate, 1-D)": (testing.normal_mean, {"n_rungs": 100}),
    "gaussian_mixture_10d (seed 004 E.1)": (
        testing.gaussian_mixture_10d,
        {"n_rungs": 100, "ladder": "linear"},
    ),
    "peaked_normal_mean (20-D, n=1000)": (
        testing.peaked_normal_mean,
        {"n_rungs": 100, "beta_min": 1e-6},
    ),
}


def run_methods(model, seed, options):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = pme.marginal_likelihood(
            model, method=METHODS, random_seed=seed, progressbar=False, n_chains=100,
            n_sweeps=500, **options,
        )  # fmt: skip
    elapsed = time.perf_counter() - start
    return results, elapsed


def run_smc(model, seed):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pm.sample_smc(
            draws=1000, chains=2, cores=1, model=model, random_seed=seed, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    ev = pme.from_smc(trace, model=model)
    return ev, time.perf_counter() - start


def main(repeats: int, out: Path | None):
    rows = []
    for label, (builder, options) in MODELS.items():
        model, exact = builder()
        errors = {m: [] for m in [*METHODS, "smc"]}
        ses = {m: [] for m in errors}
        evals = {m: [] for m in METHODS}
        wall = {"path methods (all six, shared runs)": [], "smc": []}
        for seed in range(repeats):
            results, elapsed = run_methods(model, seed + 100, options)
            wall["path methods (all six, shared runs)"].append(elapsed)
            for m in METHODS:
                errors[m].append(results[m].log_z - exact)
                ses[m].append(results[m].se)
                evals[m].append(results[m].diagnostics["n_evaluations"])
            ev, elapsed = run_smc(model, seed + 100)
            wall["smc"].append(elapsed)
            errors["smc"].append(ev.log_z - exact)
            ses["smc"].append(ev.se)
        print(f"\n## {label}: exact log Z = {exact:.4f}, {repeats} repetitions")
        print(f"{'method':8s} {'RMSE':>8s} {'mean err':>9s} {'mean SE':>8s} {'evals':>10s}")
        rmse = {}
        for m in errors:
            e = np.array(errors[m])
            rmse[m] = float(np.sqrt(np.mean(e**2)))
            n_eval = f"{np.mean(evals[m]):10.0f}" if m in evals else f"{'-':>10s}"
            print(f"{m:8s} {rmse[m]:8.4f} {e.mean():9.4f} {np.mean(ses[m]):8.4f} {n_eval}")
        best = min((m for m in METHODS), key=lambda m: rmse[m])
        for name, times in wall.items():
            print(f"wall time {name}: {np.mean(times):.1f} s")
        print(f"best here: {best}; RMSE(smc) / RMSE({best}) = {rmse['smc'] / rmse[best]:.1f}")
        rows.append((label, rmse, best))

    # RMSE against K for RTS and TI on the 10-D mixture (seed 004 Fig. 4 in spirit)
    model, exact = testing.gaussian_mixture_10d()
    print("\n## RMSE vs number of rungs K (gaussian_mixture_10d, 100 chains x 500 sweeps)")
    print(f"{'K':>5s} {'RTS':>8s} {'TI-RB':>8s} {'TI trap':>8s} {'TI riemann':>10s}")
    ks, table = [10, 30, 100, 300], []
    for k in ks:
        errs = {"rts": [], "rb": [], "trapezoid": [], "riemann": []}
        for seed in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = pme.marginal_likelihood(
                    model, method=["rts", "ti"], random_seed=seed, progressbar=False,
                    n_rungs=k, ladder="linear", n_chains=100, n_sweeps=500,
                )  # fmt: skip
            errs["rts"].append(res["rts"].log_z - exact)
            for v in ("rb", "trapezoid", "riemann"):
                errs[v].append(res["ti"].diagnostics[f"log_z_{v}"] - exact)
        r = {v: float(np.sqrt(np.mean(np.square(e)))) for v, e in errs.items()}
        table.append(r)
        print(f"{k:5d} {r['rts']:8.4f} {r['rb']:8.4f} {r['trapezoid']:8.4f} {r['riemann']:10.4f}")

    if out is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for v, label in (("rts", "RTS"), ("rb", "TI-RB"), ("trapezoid", "TI trapezoid"),
                         ("riemann", "TI Riemann")):  # fmt: skip
            ax.loglog(ks, [r[v] for r in table], "o-", label=label)
        ax.set_xlabel("number of rungs K")
        ax.set_ylabel("RMSE of log Z")
        ax.set_title("10-D mixture (seed 004 App. E.1)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "rmse_vs_rungs.png", dpi=120)
        fig, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 3.2))
        for ax, (label, rmse, _) in zip(np.atleast_1d(axes), rows, strict=True):
            names = list(rmse)
            ax.bar(names, [rmse[n] for n in names], color=["C0"] * len(METHODS) + ["C3"])
            ax.set_yscale("log")
            ax.set_title(label, fontsize=8)
            ax.set_ylabel("RMSE of log Z")
            ax.tick_params(axis="x", rotation=60, labelsize=7)
        fig.tight_layout()
        fig.savefig(out / "rmse_path_methods_vs_smc.png", dpi=120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    main(args.repeats, args.out)
