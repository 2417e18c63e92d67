"""Every method at its defaults against ``pm.sample_smc`` at its defaults .

For each model with an exact or gold ``log Z`` computed without PyMC, and each method of
``pm_evidence.METHODS``, runs ::

    pm_evidence.marginal_likelihood(model, method=name, random_seed=seed, progressbar=False)

with no other option, and ::

    pm.sample_smc(model=model, random_seed=seed, progressbar=False)

with no other option (2,000 particles per chain, IMH kernel, ``chains = max(2, cores)`` run in
``cores`` processes: on a 2-core machine 2 chains in parallel), for seeds ``0 .. N-1``, in one run
on one machine. ``progressbar=False`` changes only what is printed.

SMC's ``log Z``. Read from the installed PyMC 6 source (``pymc/smc/kernels.py`` and
``sampling.py``): at every stage ``SMC_KERNEL.update_beta_and_weights`` adds
``logsumexp(log_weights_un) - log(draws)`` to ``self.log_marginal_likelihood``, with
``log_weights_un = (beta_new - beta_old) * log-likelihood`` of the particles; the IMH and MH
kernels' ``sample_stats()`` report it as the stat ``log_marginal_likelihood`` only once
``beta == 1`` (NaN at earlier stages); ``_save_sample_stats`` stores one sequence per chain
(``object`` dtype when chains ran different numbers of stages) in
``trace["sample_stats"]["log_marginal_likelihood"]``. The estimate is the mean over chains of
each chain's final (finite) value; its SE is the SD over chains / sqrt(chains), from 2 chains a
rough one. Both are what :func:`pm_evidence.from_smc` returns, which this script calls. SMC
attaches no warning to its estimate, so its runs are never counted as flagged.

Timing. ``time.perf_counter`` around the whole call: compilation, NUTS (where a method draws
posterior draws), the method itself, and for SMC ``pm.sample_smc`` plus reading its ``log Z``.
Every timed call gets a freshly built model, so nothing compiled for an earlier call is reused
in memory (``pm_evidence`` caches its compiled target per model object). Before the timed
seeds, one untimed warm-up per model fills PyTensor's on-disk compilation cache for both sides:
one ``pm.sample_smc`` call and one ``marginal_likelihood`` call with the list of all selected
methods (each method on its own if the list call fails), both with seed 1,000,000. Timed calls
thus include graph compilation and rewriting but not the C compilation of a never-seen graph, for
SMC and for ``pm_evidence`` alike.

Printed per model and method (over the seeds; a run that raised is left out of the statistics
and counted under ``errors``):

* ``RMSE`` and ``mean err`` of ``log Z`` against the gold (flagged runs included: the user got
  the number), ``mean SE``: the method's own reported SE;
* ``mean |z|`` with ``z = (log Z - gold) / hypot(SE, gold error)``, and ``max |z| ok``: the
  largest ``|z|`` among runs *not* flagged (``Evidence.reliable`` True); a non-finite estimate
  or SE counts as ``|z| = inf``;
* ``flagged``: runs with a warning attached (``not ev.reliable``), ``errors``: runs that raised,
  as ``k error: <type>``;
* ``time``: mean wall time per call, in seconds;
* ``eff``: efficiency against SMC, ``(MSE_smc * time_smc) / (MSE_m * time_m)`` (> 1: better than
  SMC at equal time);
* the targets: ``eff>=4`` (RTS, AIS and bridge only; a run that raised fails it)
  and ``4SE``: no run off by more than 4 SE without being flagged (every method; a run that
  raised returned no number, so it does not fail this one).

Models (gold ``log Z`` without PyMC; see :mod:`pm_evidence.zoo.testing`):

* ``linear_regression``: ``testing.linear_regression(n=50, d=5)``, closed form;
* ``regression_inverse_gamma``: closed form (multivariate t), 4 parameters;
* ``hierarchical_noncentered``: eight schools, 10 parameters, 1-D quadrature over ``tau``;
* ``peaked_normal_mean``: 20-D normal mean, n = 1000 per dimension, prior N(0, 10^2), closed form;
* ``pima_logistic``: real data, 532 Pima women (R ``MASS``), intercept + 4 standardized
  covariates, 5-D Gauss-Hermite quadrature in the Laplace frame (error ~3e-7);
* ``label_switching_mixture``: two exchangeable normal components, 2-D quadrature (two modes);
* ``gaussian_mixture_10d``: two 10-D Gaussian modes, closed form (``log Z = 0``).

Run::

    python benchmarks/defaults.py                        # all models, all methods, 3 seeds (long)
    python benchmarks/defaults.py --quick                # 1 seed, 2 small models (minutes)
    python benchmarks/defaults.py --models pima_logistic --methods bridge rts --seeds 5
    python benchmarks/defaults.py --out results/defaults # results/defaults.rst, .csv, _runs.csv
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import os
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QUICK_MODELS = ("linear_regression", "hierarchical_noncentered")
TARGET_METHODS = ("rts", "ais", "bridge")  # the target: efficiency >= 4x SMC's on every model
TARGET_EFFICIENCY = 4.0
Z_THRESHOLD = 4.0
WARMUP_SEED = 1_000_000


@dataclass(frozen=True)
class BenchModel:
    """A benchmark model: ``build() -> (pm.Model, gold log Z)`` (a new model object per call)
    and the gold's numerical error in nats."""

    name: str
    build: Callable
    gold_error: Callable[[], float]
    gold_method: str


def _models() -> dict[str, BenchModel]:
    from pm_evidence.zoo import testing

    def zoo_error(name: str) -> Callable[[], float]:
        return lambda: testing.zoo([name])[0].gold().error

    entries = [
        BenchModel(
            "linear_regression",
            lambda: testing.linear_regression(n=50, d=5),
            lambda: 0.0,
            "closed form",
        ),
        BenchModel(
            "regression_inverse_gamma",
            testing.regression_inverse_gamma,
            lambda: 0.0,
            "closed form (multivariate t)",
        ),
        BenchModel(
            "hierarchical_noncentered",
            testing.hierarchical_noncentered,
            zoo_error("hierarchical_noncentered"),
            "quadrature 1-D over tau",
        ),
        BenchModel("peaked_normal_mean", testing.peaked_normal_mean, lambda: 0.0, "closed form"),
        BenchModel(
            "pima_logistic",
            testing.pima_logistic,
            lambda: testing._pima_logistic_gold().error,
            "Gauss-Hermite 5-D, Laplace frame",
        ),
        BenchModel(
            "label_switching_mixture",
            testing.label_switching_mixture,
            zoo_error("label_switching_mixture"),
            "quadrature 2-D, one box per mode",
        ),
        BenchModel(
            "gaussian_mixture_10d", testing.gaussian_mixture_10d, lambda: 0.0, "closed form"
        ),
    ]
    return {entry.name: entry for entry in entries}


def quiet_logging() -> None:
    """PyMC's and PyTensor's loggers to ERROR: no 'Initializing SMC sampler...' lines."""
    for name in ("pymc", "pytensor", "pm_evidence"):
        logging.getLogger(name).setLevel(logging.ERROR)


# --------------------------------------------------------------------------------- one call
def run_smc(build: Callable, seed: int) -> dict:
    """``pm.sample_smc`` at its defaults; ``log Z`` by :func:`pm_evidence.from_smc`."""
    import pymc as pm

    import pm_evidence as pme

    model, _ = build()
    start = time.perf_counter()
    trace = pm.sample_smc(model=model, random_seed=seed, progressbar=False)
    ev = pme.from_smc(trace, model)
    elapsed = time.perf_counter() - start
    return {"log_z": ev.log_z, "se": ev.se, "reliable": True, "n_warnings": 0, "time_s": elapsed}


def run_method(build: Callable, method: str | list[str], seed: int) -> dict:
    """``pm_evidence.marginal_likelihood`` with no option."""
    import pm_evidence as pme

    model, _ = build()
    start = time.perf_counter()
    ev = pme.marginal_likelihood(model, method=method, random_seed=seed, progressbar=False)
    elapsed = time.perf_counter() - start
    if isinstance(method, list):
        return {"time_s": elapsed}
    return {
        "log_z": float(ev.log_z),
        "se": float(ev.se),
        "reliable": bool(ev.reliable),
        "n_warnings": len(ev.warnings),
        "first_warning": ev.warnings[0][:200] if ev.warnings else "",
        "time_s": elapsed,
    }


def timed_run(bench: BenchModel, method: str, seed: int, gold: float, gold_error: float) -> dict:
    """One timed call; an exception becomes ``error: <type>`` in the record."""
    record = {"model": bench.name, "method": method, "seed": seed, "gold": gold}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            if method == "smc":
                record.update(run_smc(bench.build, seed))
            else:
                record.update(run_method(bench.build, method, seed))
        except Exception as err:  # reported as a row, never raised
            message = (str(err).strip().splitlines() or [""])[0][:200]
            record.update(error=f"error: {type(err).__name__}", error_message=message)
            return record
    scale = math.hypot(record["se"], gold_error)
    error = record["log_z"] - gold
    if math.isfinite(error) and math.isfinite(scale) and scale > 0:
        record["z"] = error / scale
    elif math.isfinite(error) and scale == 0:
        record["z"] = 0.0 if error == 0 else math.copysign(math.inf, error)
    else:
        record["z"] = math.inf
    return record


def warm_up(bench: BenchModel, methods: list[str]) -> None:
    """Untimed calls that fill PyTensor's compilation cache for this model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run_smc(bench.build, WARMUP_SEED)
        except Exception:
            pass
        if not methods:
            return
        try:
            run_method(bench.build, list(methods), WARMUP_SEED)
        except Exception:
            for method in methods:
                try:
                    run_method(bench.build, method, WARMUP_SEED)
                except Exception:
                    pass


# --------------------------------------------------------------------------------- summary
def summarize(records: list[dict], smc_row: dict | None = None) -> dict:
    """Statistics of one model x method over its seeds (see the module docstring)."""
    first = records[0]
    done = [r for r in records if "error" not in r]
    failed = [r for r in records if "error" in r]
    row = {
        "model": first["model"],
        "method": first["method"],
        "gold": first["gold"],
        "runs": len(records),
        "errors": len(failed),
        "error_types": " ".join(sorted({r["error"].removeprefix("error: ") for r in failed})),
    }
    nan = math.nan
    if not done:
        row.update(
            rmse=nan, mean_error=nan, mean_se=nan, mean_abs_z=nan, max_abs_z_unflagged=nan,
            flagged=0, time_s=nan, efficiency=nan,
        )  # fmt: skip
    else:
        errors = np.array([r["log_z"] - r["gold"] for r in done])
        abs_z = np.abs([r["z"] for r in done])
        unflagged = [abs(r["z"]) for r in done if r["reliable"]]
        with np.errstate(invalid="ignore", over="ignore"):
            row.update(
                rmse=float(np.sqrt(np.mean(errors**2))),
                mean_error=float(np.mean(errors)),
                mean_se=float(np.mean([r["se"] for r in done])),
                mean_abs_z=float(np.mean(abs_z)),
                max_abs_z_unflagged=float(max(unflagged)) if unflagged else nan,
                flagged=sum(not r["reliable"] for r in done),
                time_s=float(np.mean([r["time_s"] for r in done])),
            )
    row["efficiency"] = efficiency(row, smc_row if smc_row is not None else row)
    met = row["efficiency"] >= TARGET_EFFICIENCY and not row["errors"]
    row["target_efficiency"] = ("yes" if met else "NO") if row["method"] in TARGET_METHODS else ""
    worst = row["max_abs_z_unflagged"]
    row["target_4se"] = "NO" if (isinstance(worst, float) and worst > Z_THRESHOLD) else "yes"
    return row


def efficiency(row: dict, smc_row: dict) -> float:
    """``(MSE_smc * time_smc) / (MSE_m * time_m)``."""
    mse, t = row.get("rmse", math.nan) ** 2, row.get("time_s", math.nan)
    mse_smc, t_smc = smc_row.get("rmse", math.nan) ** 2, smc_row.get("time_s", math.nan)
    cost = mse * t
    if not (math.isfinite(cost) and math.isfinite(mse_smc * t_smc)):
        return math.nan
    return math.inf if cost == 0 else mse_smc * t_smc / cost


# --------------------------------------------------------------------------------- output
COLUMNS = (
    ("model", "model"),
    ("method", "method"),
    ("runs", "runs"),
    ("rmse", "RMSE"),
    ("mean_error", "mean err"),
    ("mean_se", "mean SE"),
    ("mean_abs_z", "mean |z|"),
    ("max_abs_z_unflagged", "max |z| ok"),
    ("flagged", "flagged"),
    ("errors", "errors"),
    ("time_s", "time s"),
    ("efficiency", "eff"),
    ("target_efficiency", "eff>=4"),
    ("target_4se", "4SE"),
)


def _cell(key: str, row: dict) -> str:
    value = row.get(key, "")
    if key == "errors":
        return f"{value} error: {row['error_types']}" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if key in ("mean_abs_z", "max_abs_z_unflagged", "time_s"):
            return f"{value:.2f}" if math.isfinite(value) else "inf"
        if key == "efficiency":
            return f"{value:.3g}" if math.isfinite(value) else "inf"
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value) if value != "" else "-"


def table_lines(rows: list[dict], rst: bool = False) -> list[str]:
    """An aligned text table; with ``rst`` a reStructuredText simple table."""
    escape = (lambda c: c.replace("|", "\\|")) if rst else str  # RST: |z| is a substitution
    header = [escape(label) for _, label in COLUMNS]
    body = [[escape(_cell(key, row)) for key, _ in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "  ".join("=" * w for w in widths)
    if rst:
        return [rule, fmt(header), rule, *(fmt(line) for line in body), rule]
    return [fmt(header), "  ".join("-" * w for w in widths), *(fmt(line) for line in body)]


def environment_line(seeds: int) -> str:
    import pymc as pm
    import pytensor

    import pm_evidence as pme

    return (
        f"pm_evidence {pme.__version__}, PyMC {pm.__version__}, PyTensor {pytensor.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {seeds} seed(s) per cell; "
        "every method and SMC at defaults (no options)"
    )


def write_outputs(out: Path, rows: list[dict], runs: list[dict], models: list[dict], env: str):
    """``out.rst`` (the table, for docs/benchmarks.rst), ``out.csv`` (one row per model and
    method) and ``out_runs.csv`` (one row per call)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rst = out.with_suffix(".rst")
    lines = [env + ".", "", "Models and their gold log Z:", ""]
    lines += [
        f"* ``{m['model']}``: {m['n_params']} parameters, gold {m['gold']:.6f} "
        f"(error {m['gold_error']:.1e}, {m['gold_method']})"
        for m in models
    ]
    lines += ["", *table_lines(rows, rst=True), ""]
    rst.write_text("\n".join(lines))
    for path, records in (
        (out.with_suffix(".csv"), rows),
        (out.parent / f"{out.stem}_runs.csv", runs),
    ):
        keys: list[str] = []
        for record in records:
            keys += [k for k in record if k not in keys]
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=keys)
            writer.writeheader()
            writer.writerows(records)
    print(f"wrote {rst}, {out.with_suffix('.csv')}, {out.parent / f'{out.stem}_runs.csv'}")


# --------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    import pm_evidence as pme

    catalogue = _models()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 (default 3)")
    parser.add_argument("--models", nargs="+", choices=sorted(catalogue), help="default: all")
    parser.add_argument("--methods", nargs="+", choices=pme.METHODS, help="default: all METHODS")
    parser.add_argument(
        "--quick", action="store_true", help=f"1 seed, models {' and '.join(QUICK_MODELS)}"
    )
    parser.add_argument("--out", type=Path, help="write OUT.rst, OUT.csv and OUT_runs.csv")
    args = parser.parse_args(argv)

    seeds = 1 if args.quick else args.seeds
    names = args.models or (list(QUICK_MODELS) if args.quick else list(catalogue))
    methods = list(args.methods or pme.METHODS)
    quiet_logging()
    env = environment_line(seeds)
    print(env, flush=True)

    rows, runs, model_info = [], [], []
    for name in names:
        bench = catalogue[name]
        model, gold = bench.build()
        gold_error = float(bench.gold_error())
        n_params = int(sum(np.size(v) for v in model.initial_point().values()))
        model_info.append(
            {"model": name, "n_params": n_params, "gold": gold, "gold_error": gold_error,
             "gold_method": bench.gold_method}
        )  # fmt: skip
        print(
            f"\n{name}: {n_params} parameters, gold log Z {gold:.6f} "
            f"(error {gold_error:.1e}, {bench.gold_method})",
            flush=True,
        )
        start = time.perf_counter()
        warm_up(bench, methods)
        print(f"  warm-up (untimed) {time.perf_counter() - start:.0f} s", flush=True)
        per_method: dict[str, list[dict]] = {m: [] for m in ["smc", *methods]}
        for seed in range(seeds):
            for method in per_method:
                record = timed_run(bench, method, seed, gold, gold_error)
                per_method[method].append(record)
                runs.append(record)
                shown = record.get("error") or (
                    f"{record['log_z']:.4f} ± {record['se']:.4f}  z {record['z']:+.1f}"
                    f"{'' if record['reliable'] else '  flagged'}  {record['time_s']:.1f} s"
                )
                print(f"  seed {seed} {method:<17} {shown}", flush=True)
        smc_row = summarize(per_method["smc"])
        model_rows = [smc_row] + [summarize(per_method[m], smc_row) for m in methods]
        rows += model_rows
        print("", *table_lines(model_rows), sep="\n", flush=True)

    print("\nAll models:", *table_lines(rows), sep="\n")
    if args.out is not None:
        write_outputs(args.out, rows, runs, model_info, env)


if __name__ == "__main__":
    main()
