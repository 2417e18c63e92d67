"""RMSE of log Z against cost for the annealed / tempered methods and pm.sample_smc.

Run:  .venv/bin/python benchmarks/path_methods.py [--repeats R] [--out docs/_static]
      [--models PREFIX ...] [--skip-k]

For every exact-answer model, each group of methods is repeated R times with different seeds
at two budgets (``scale`` 0.25 and 1 of the settings below). Methods in one group share their
run (ADS on AIS's draws; TI and MBAR on RTS's tempered draws), so each is charged the whole
group's wall time (an upper bound on its own). We print RMSE, mean error and its z-score
(mean error / its standard error over the repetitions: ``|z| > 3`` means biased), the mean
reported SE, wall time and log-density (or gradient) evaluations.

Then ``pm.sample_smc`` runs at a wall time matched to that of the best method (the most
efficient: smallest RMSE^2 x time) (draws scaled from
two timed calibration runs), and we print RMSE(SMC) / RMSE(best): the target
is >= 2 on every model, with no method of ours biased where SMC is. SMC does not report how
many log-densities it evaluated, so its cost is wall time only.

A last table gives RMSE against the number of rungs K for RTS and TI (seed 004 Fig. 4).
Prints ratios and RMSEs; it is not a timed test.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm

import pm_evidence as pme
from pm_evidence.zoo import testing

logging.getLogger("pymc").setLevel(logging.ERROR)

SCALES = (0.25, 1.0)
# Every group runs alone and is charged its whole wall time. MBAR has its own group: it keeps
# every tempered draw and its solve costs more than RTS's running sums.
# model -> (builder, {group of methods sharing one run: options at scale 1})
MODELS = {
    "normal_mean (conjugate, 1-D)": (
        testing.normal_mean,
        {
            ("ais", "ads"): {"n_chains": 1000, "n_rungs": 200},
            ("raise",): {"n_chains": 1000, "n_rungs": 200},
            ("rts", "ti"): {"n_chains": 1000, "n_rungs": 30, "n_sweeps": 200},
            ("mbar",): {"n_chains": 1000, "n_rungs": 30, "n_sweeps": 200},
        },
    ),
    "gaussian_mixture_10d (seed 004 E.1)": (
        testing.gaussian_mixture_10d,
        {
            ("ais", "ads"): {"n_chains": 1000, "n_rungs": 1200, "beta_min": 1e-3},
            ("raise",): {"n_chains": 1000, "n_rungs": 1200, "beta_min": 1e-3},
            ("rts", "ti"): {"n_chains": 1000, "n_rungs": 30, "n_sweeps": 1000, "beta_min": 1e-3},
            ("mbar",): {"n_chains": 1000, "n_rungs": 30, "n_sweeps": 1000, "beta_min": 1e-3},
        },
    ),
    "peaked_normal_mean (20-D, n=1000)": (
        testing.peaked_normal_mean,
        {
            ("ais", "ads"): {"n_chains": 1000, "n_rungs": 40, "reference": "student_t",
                             "ladder": "linear"},
            ("raise",): {"n_chains": 1000, "n_rungs": 40, "reference": "student_t",
                         "ladder": "linear"},
            ("rts", "ti"): {"n_chains": 500, "n_rungs": 20, "n_sweeps": 200,
                            "reference": "student_t", "ladder": "linear"},
            ("mbar",): {"n_chains": 500, "n_rungs": 20, "n_sweeps": 200,
                        "reference": "student_t", "ladder": "linear"},
            ("ais (prior p0)",): {"n_chains": 300, "n_rungs": 3000, "beta_min": 1e-6},
        },
    ),
}  # fmt: skip
SCALED = ("n_rungs", "n_sweeps")  # what the budget scale multiplies (AIS rungs, RTS sweeps)


def _scaled(options, scale):
    key = "n_sweeps" if "n_sweeps" in options else "n_rungs"
    assert key in SCALED
    return {**options, key: max(round(options[key] * scale), 5)}


def run_group(model, group, options, seed):
    methods = [g.split(" ")[0] for g in group]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = pme.marginal_likelihood(
            model, method=methods, random_seed=seed, progressbar=False, **options
        )
    elapsed = time.perf_counter() - start
    return {g: results[m] for g, m in zip(group, methods, strict=True)}, elapsed


def run_smc(model, seed, draws):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = pm.sample_smc(
            draws=draws, chains=2, cores=1, model=model, random_seed=seed, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    ev = pme.from_smc(trace, model=model)
    return ev, time.perf_counter() - start


def summarize(errors, ses, times, evals=None):
    e = np.asarray(errors)
    sd = e.std(ddof=1) if e.size > 1 else np.nan
    return {
        "rmse": float(np.sqrt(np.mean(e**2))),
        "bias": float(e.mean()),
        "z": float(e.mean() / (sd / np.sqrt(e.size))) if sd > 0 else np.nan,
        "se": float(np.mean(ses)),
        "time": float(np.mean(times)),
        "evals": float(np.mean(evals)) if evals else np.nan,
    }


def print_row(name, s):
    evals = f"{s['evals']:10.3g}" if np.isfinite(s["evals"]) else f"{'-':>10s}"
    flag = "  BIASED" if abs(s["z"]) > 3 else ""
    print(
        f"{name:24s} {s['rmse']:8.4f} {s['bias']:+9.4f} {s['z']:+6.1f} {s['se']:8.4f} "
        f"{s['time']:7.2f} {evals}{flag}"
    )


def benchmark_model(label, builder, groups, repeats):
    model, exact = builder()
    print(f"\n## {label}: exact log Z = {exact:.4f}, {repeats} repetitions")
    print(f"{'method @ scale':24s} {'RMSE':>8s} {'mean err':>9s} {'z':>6s} {'mean SE':>8s} "
          f"{'time s':>7s} {'evals':>10s}")  # fmt: skip
    rows = {}
    for group, options in groups.items():
        run_group(model, group, _scaled(options, SCALES[0]), 0)  # warm-up (compilation)
        for scale in SCALES:
            opts = _scaled(options, scale)
            out = {g: ([], [], [], []) for g in group}
            for seed in range(repeats):
                results, elapsed = run_group(model, group, opts, 1000 + seed)
                for g in group:
                    out[g][0].append(results[g].log_z - exact)
                    out[g][1].append(results[g].se)
                    out[g][2].append(elapsed)
                    out[g][3].append(results[g].diagnostics["n_evaluations"])
            for g in group:
                rows[(g, scale)] = summarize(*out[g])
                print_row(f"{g} @ {scale}", rows[(g, scale)])
    # best = most efficient (RMSE^2 x time is constant for an estimator whose variance falls
    # like 1/cost), so the matched comparison happens at that method's own wall time
    best = min(
        (k for k in rows if k[1] == 1.0), key=lambda k: rows[k]["rmse"] ** 2 * rows[k]["time"]
    )
    # SMC at a matched wall time: two timed calibration runs (its time is not linear in draws)
    run_smc(model, 0, 200)  # warm-up
    matched_draws, t_cal = 1000, run_smc(model, 1, 1000)[1]
    for step in range(2):
        matched_draws = max(int(np.ceil(matched_draws * rows[best]["time"] / t_cal)), 100)
        t_cal = run_smc(model, 2 + step, matched_draws)[1]
    smc = {}
    for label_smc, draws in (("smc @ 1000 draws", 1000), ("smc @ matched time", matched_draws)):
        errors, ses, times = [], [], []
        for seed in range(repeats):
            ev, elapsed = run_smc(model, 2000 + seed, draws)
            errors.append(ev.log_z - exact)
            ses.append(ev.se)
            times.append(elapsed)
        smc[label_smc] = summarize(errors, ses, times)
        smc[label_smc]["draws"] = draws
        print_row(f"{label_smc} ({draws})", smc[label_smc])
    matched = smc["smc @ matched time"]
    ratio = matched["rmse"] / rows[best]["rmse"]
    ours_biased = [k[0] for k in rows if k[1] == 1.0 and abs(rows[k]["z"]) > 3]
    print(
        f"best here: {best[0]} (RMSE {rows[best]['rmse']:.4f} in {rows[best]['time']:.1f} s); "
        f"SMC at {matched['time']:.1f} s: RMSE {matched['rmse']:.4f}; "
        f"RMSE(smc) / RMSE(best) = {ratio:.1f} (target >= 2: {'met' if ratio >= 2 else 'NOT met'})"
    )
    if abs(matched["z"]) > 3:
        print(
            f"SMC biased (z = {matched['z']:+.1f}); ours biased at scale 1: {ours_biased or 'none'}"
        )
    return {"rows": rows, "smc": smc, "best": best, "ratio": ratio}


def rmse_vs_rungs(repeats):
    """RMSE against K for RTS and TI on the 10-D mixture (seed 004 Fig. 4 in spirit)."""
    model, exact = testing.gaussian_mixture_10d()
    print("\n## RMSE vs number of rungs K (gaussian_mixture_10d, 1000 chains x 500 sweeps)")
    print(f"{'K':>5s} {'RTS':>8s} {'TI-RB':>8s} {'TI-RB corr':>10s} {'TI trap':>8s} "
          f"{'TI riemann':>10s}")  # fmt: skip
    ks, table = [5, 10, 30, 100], []
    for k in ks:
        errs = {"rts": [], "rb": [], "rb_corrected": [], "trapezoid": [], "riemann": []}
        for seed in range(repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = pme.marginal_likelihood(
                    model, method=["rts", "ti"], random_seed=seed, progressbar=False,
                    n_rungs=k, beta_min=1e-3, n_chains=1000, n_sweeps=500,
                )  # fmt: skip
            errs["rts"].append(res["rts"].log_z - exact)
            for v in ("rb", "rb_corrected", "trapezoid", "riemann"):
                errs[v].append(res["ti"].diagnostics[f"log_z_{v}"] - exact)
        r = {v: float(np.sqrt(np.mean(np.square(e)))) for v, e in errs.items()}
        table.append(r)
        print(f"{k:5d} {r['rts']:8.4f} {r['rb']:8.4f} {r['rb_corrected']:10.4f} "
              f"{r['trapezoid']:8.4f} {r['riemann']:10.4f}")  # fmt: skip
    return ks, table


def plot(results, ks, table, out: Path):
    """Write ``rmse_vs_rungs.png`` (if the K sweep ran) and, per model run,
    ``rmse_vs_time_<model>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    if table:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for v, label in (("rts", "RTS"), ("rb", "TI-RB"), ("rb_corrected", "TI-RB, corrected"),
                         ("trapezoid", "TI trapezoid"), ("riemann", "TI Riemann")):  # fmt: skip
            ax.loglog(ks, [r[v] for r in table], "o-", label=label)
        ax.set_xlabel("number of rungs K")
        ax.set_ylabel("RMSE of log Z")
        ax.set_title("10-D mixture (seed 004 App. E.1)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "rmse_vs_rungs.png", dpi=120)
    for label, res in results.items():
        fig, ax = plt.subplots(figsize=(5, 3.8))
        methods = sorted({k[0] for k in res["rows"]})
        for i, m in enumerate(methods):
            pts = [res["rows"][(m, s)] for s in SCALES]
            ax.loglog([p["time"] for p in pts], [p["rmse"] for p in pts], "o-", color=f"C{i}",
                      label=m)  # fmt: skip
        pts = list(res["smc"].values())
        ax.loglog([p["time"] for p in pts], [p["rmse"] for p in pts], "s--", color="k",
                  label="pm.sample_smc")  # fmt: skip
        ax.set_title(label, fontsize=9)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # no overlapping labels
        ax.set_xlabel("wall time per run (s)")
        ax.set_ylabel("RMSE of log Z")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"rmse_vs_time_{label.split(' ')[0]}.png", dpi=120)


def main(repeats: int, out: Path | None, models: list[str] | None, skip_k: bool):
    results = {}
    for label, (builder, groups) in MODELS.items():
        if models and not any(label.startswith(m) for m in models):
            continue
        results[label] = benchmark_model(label, builder, groups, repeats)
    print("\n## Summary: RMSE(smc at matched wall time) / RMSE(best method here)")
    for label, res in results.items():
        print(f"{label:40s} best {res['best'][0]:16s} ratio {res['ratio']:5.1f}")
    ks, table = ([], []) if skip_k else rmse_vs_rungs(repeats)
    if out is not None:
        plot(results, ks, table, out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None, help="folder for the figures")
    parser.add_argument("--models", nargs="*", help="prefixes of the model labels to run")
    parser.add_argument("--skip-k", action="store_true", help="no RMSE-vs-K sweep")
    args = parser.parse_args()
    main(args.repeats, args.out, args.models, args.skip_k)
