"""Methods at their defaults against ``pm.sample_smc`` at its defaults on the high-dimensional zoo.

For each model of :data:`pm_evidence.zoo.highdim.HIGHDIM_ZOO` (100 to
1,002 parameters, gold ``log Z`` computed without PyMC), each seed and each method, one call ::

    pm_evidence.marginal_likelihood(model, method=m, random_seed=seed, progressbar=False)

for ``m`` in ``auto``, ``bridge``, ``ais``, ``rts`` (by default; any of
``pm_evidence.METHODS``), and ::

    pm.sample_smc(model=model, random_seed=seed, progressbar=False)

with no other option (2,000 particles per chain, IMH kernel, ``chains = max(2, cores)``), all
in one run on one machine. ``progressbar=False`` changes only what is
printed.

SMC's ``log Z``. As in ``benchmarks/defaults.py``, read from the installed PyMC source
(``pymc/smc/kernels.py``: at every stage ``update_beta_and_weights`` adds
``logsumexp(log_weights_un) - log(draws)`` to ``log_marginal_likelihood``; the IMH kernel's
``sample_stats()`` reports it once ``beta == 1``, NaN before; ``sampling.py`` stores one
sequence per chain in ``trace["sample_stats"]["log_marginal_likelihood"]``):
:func:`pm_evidence.from_smc` takes each chain's final finite value, the mean over chains as
``log Z`` and their SD / sqrt(chains) as SE (2 chains on a 2-core machine: a rough SE). SMC
attaches no warning, so its rows are always ``reliable``.

Each call runs in a fresh Python process (``--worker``), so nothing compiled or cached in memory
by an earlier call is reused and memory is measured per call:

* ``wall s``: ``time.perf_counter`` around the call alone (after imports and building the
  model; compilation, NUTS and the method included); ``cpu s``: user + system time of the
  worker and its child processes over the same span (steadier than wall time on a shared
  machine);
* ``peak MB``: the larger of the worker's own peak resident set during the call (``VmHWM``
  of ``/proc/self/status``, reset by writing 5 to ``/proc/self/clear_refs`` once the model is
  built: building computes the gold, which must not count) and the largest sum of resident sets
  over the worker and its child processes, sampled every 0.2 s by the parent from ``/proc``.
  Both include the ~170 MB of the imported libraries (the CSV has the RSS before the call,
  ``rss_before_mb``). Not ``getrusage``'s ``ru_maxrss``: Linux carries a process's peak across
  ``exec``, so a worker inherits the peak its parent had when it forked it. Off Linux: n/a;
* ``evals``: log-density evaluations where the result records them: for path methods the
  run's ``n_evaluations`` plus the plan's ``n_setup_evaluations`` (NUTS gradient evaluations not
  counted); for bridge sampling ``n_target + n_reference`` (the estimator's evaluations, NUTS not
  counted); for ``auto`` those of the result it returns (not the cross-check's); SMC: n/a;
* ``err`` = ``log Z - gold``; ``err/SE`` = ``err / hypot(SE, gold error)``; ``reliable`` is
  ``Evidence.reliable`` (no warning attached);
* ``eff``: efficiency against SMC as in ``benchmarks/defaults.py`` and docs/benchmarks.rst,
  ``(MSE_smc * time_smc) / (MSE_m * time_m)`` over the seeds of the run (MSE against the gold,
  mean wall time); > 1 is better than SMC at equal time. With one seed it is
  ``err_smc^2 t_smc / (err_m^2 t_m)``, a noisy figure.

A call that runs past ``--time-limit`` seconds (default 600, counted from the start of the call,
after imports) is killed with its child processes and recorded as ``timeout``; one that raises
is recorded as ``error: <type>`` (its ``wall s``: until the worker exited). Before a model's timed calls, an untimed warm-up (``--warmup``)
fills PyTensor's on-disk compilation cache as ``benchmarks/defaults.py`` does, so that timed
calls include graph compilation but not the C compilation of a never-seen graph: ``cheap`` (the
default) runs ``pm.sample_smc(draws=200)``, each selected posterior-draw method alone and the
selected path methods in one list (``auto`` counted as its pair ``bridge`` and ``ais``), with
small budgets (``draws=300, tune=300``, ``max_evaluations=200_000``; a warm-up call may fail on
so few draws after compiling what it needs: its status is printed, nothing else); ``full`` runs
the same calls at their defaults; ``none`` skips it.

PyMC's defaults on a 2-CPU machine: ``pymc.sampling.parallel._cpu_count()`` is
``cpu_count() // 2`` = 1, so ``pm.sample_smc`` runs its 2 chains one after the other in the
worker process (and ``pm.sample``, where a method draws NUTS, its chains likewise).

Usage (one process at a time on a shared machine)::

    nice -n 5 .venv/bin/python benchmarks/highdim.py \\
        --models hierarchical_normal_200 poisson_glmm --seeds 1 --out /tmp/highdim.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

DEFAULT_METHODS = ("smc", "auto", "bridge", "ais", "rts")
TIME_LIMIT = 600.0
STARTUP_LIMIT = 300.0  # imports and model build before the call starts
WARMUP_SEED = 1_000_000
CHEAP_NUTS = {"draws": 300, "tune": 300}
CHEAP_PATH = {"max_evaluations": 200_000}
Z_THRESHOLD = 4.0
POLL_S = 0.2
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 0.0


def _entries() -> dict:
    from pm_evidence.zoo.highdim import HIGHDIM_ZOO

    return {entry.name: entry for entry in HIGHDIM_ZOO}


def quiet_logging() -> None:
    """PyMC's, PyTensor's and pm_evidence's loggers to ERROR."""
    for name in ("pymc", "pytensor", "pm_evidence"):
        logging.getLogger(name).setLevel(logging.ERROR)


# --------------------------------------------------------------------------------- worker
def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * PAGE_MB
    except OSError:
        return math.nan


def _reset_peak_rss() -> bool:
    """Reset this process's peak resident set (Linux ``clear_refs``); False if impossible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss_mb() -> float:
    """This process's peak resident set since start or the last reset (``VmHWM``)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def _cpu_s() -> float:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(u.ru_utime + u.ru_stime for u in usage)


def _evaluations(diagnostics: dict) -> float:
    """Log-density evaluations recorded on a result (see the module docstring)."""
    if "n_evaluations" in diagnostics:
        return float(diagnostics["n_evaluations"]) + float(
            diagnostics.get("n_setup_evaluations", 0)
        )
    if "n_reference" in diagnostics and "n_target" in diagnostics:
        return float(diagnostics["n_reference"]) + float(diagnostics["n_target"])
    return math.nan


def worker(spec: dict, out: Path) -> None:
    """One call in this process; its record as JSON in ``out``; ``out.started`` marks the
    start of the call (the parent's time limit counts from it)."""
    import numpy as np
    import pymc as pm

    import pm_evidence as pme

    quiet_logging()
    model, gold = _entries()[spec["model"]].build()
    method, seed, options = spec["method"], spec["seed"], spec.get("options", {})
    record: dict = {"rss_before_mb": _rss_mb()}
    reset = _reset_peak_rss()
    out.with_suffix(".started").write_text(str(time.time()))
    cpu0, start = _cpu_s(), time.perf_counter()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        if method == "smc":
            trace = pm.sample_smc(model=model, random_seed=seed, progressbar=False, **options)
            ev = pme.from_smc(trace, model)
            beta = np.asarray(trace["sample_stats"]["beta"].values)
            record["smc_stages"] = int(beta.shape[-1]) if beta.ndim == 2 else math.nan
        else:
            ev = pme.marginal_likelihood(
                model, method=method, random_seed=seed, progressbar=False, **options
            )
    record["wall_s"] = time.perf_counter() - start
    record["cpu_s"] = _cpu_s() - cpu0
    record["worker_peak_mb"] = _peak_rss_mb() if reset else math.nan
    if isinstance(method, str):
        diagnostics = ev.diagnostics
        record.update(
            log_z=float(ev.log_z),
            se=float(ev.se),
            reliable=bool(ev.reliable),
            n_warnings=len(ev.warnings),
            first_warning=ev.warnings[0][:300] if ev.warnings else "",
            evals=_evaluations(diagnostics),
            result_method=ev.method,
        )
        for key in ("auto_pair", "auto_other_log_z", "auto_other_se", "auto_z", "reference",
                    "n_rungs", "stopped_by", "n_sweeps", "n_chains"):  # fmt: skip
            value = diagnostics.get(key)
            if isinstance(value, int | float | str | bool):
                record[key] = value
    record["gold"] = float(gold)
    out.write_text(json.dumps(record))


# --------------------------------------------------------------------------------- parent
def _tree_rss_mb(root: int) -> float:
    """Resident set of ``root`` and its descendants (Linux ``/proc``); NaN elsewhere."""
    try:
        parents: dict[int, int] = {}
        rss: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/statm") as handle:
                    rss[int(entry)] = int(handle.read().split()[1]) * PAGE_MB
                parents[int(entry)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    except OSError:
        return math.nan
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid and c not in tree]
        tree.update(children)
        frontier += children
    return sum(rss.get(pid, 0.0) for pid in tree)


def run_call(model: str, method, seed: int, time_limit: float, options=None) -> dict:
    """One call in a fresh worker process: its record, ``status`` ``ok``, ``timeout`` or
    ``error: <type>``."""
    spec = {"model": model, "method": method, "seed": seed, "options": options or {}}
    record = {"model": model, "method": method if isinstance(method, str) else "+".join(method)}
    record |= {"seed": seed, "load_avg_1m": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="highdim_") as tmp:
        out = Path(tmp) / "record.json"
        started = out.with_suffix(".started")
        with open(Path(tmp) / "stderr.txt", "w+") as err:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--worker", json.dumps(spec), str(out)],
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,  # its own process group: killed as a whole
            )
            deadline = time.monotonic() + STARTUP_LIMIT
            call_started, call_start = False, math.nan
            peak = 0.0
            timed_out = False
            while proc.poll() is None:
                if not call_started and started.exists():
                    call_started = True
                    call_start = time.monotonic()
                    deadline = call_start + time_limit
                if call_started:
                    peak = max(peak, _tree_rss_mb(proc.pid))
                if time.monotonic() > deadline:
                    timed_out = True
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
                time.sleep(POLL_S)
            err.seek(0)
            stderr_tail = err.read()[-2000:]
        record["tree_peak_mb"] = peak if peak > 0 else math.nan
        if timed_out:
            record["status"] = "timeout"
            record["wall_s"] = time_limit if call_started else math.nan
        elif out.exists():
            record |= json.loads(out.read_text())
            record["status"] = "ok"
        else:
            lines = [line for line in stderr_tail.strip().splitlines() if line.strip()]
            last = lines[-1] if lines else f"exit code {proc.returncode}"
            record["status"] = f"error: {last.split(':', 1)[0][:60]}"
            record["error_message"] = last[:300]
            if call_started:  # until the process ended, traceback included
                record["wall_s"] = time.monotonic() - call_start
    if record["status"] == "ok" and "log_z" in record:
        record["error"] = record["log_z"] - record["gold"]
    record["peak_mb"] = peak_mb(record)
    return record


def peak_mb(record: dict) -> float:
    """The larger of the sampled process-tree peak and the worker's own peak (NaN if neither)."""
    peaks = [float(record.get(k, math.nan) or math.nan) for k in ("tree_peak_mb", "worker_peak_mb")]
    return max((p for p in peaks if math.isfinite(p)), default=math.nan)


def warm_up(model: str, methods: list[str], mode: str, time_limit: float) -> str:
    """Untimed calls that fill PyTensor's compilation cache for ``model``; a one-line account.

    SMC; each posterior-draw method alone; the path methods in one list (one plan). ``cheap``
    uses small budgets (a call may then fail, e.g. bridge sampling on 300 draws: the graphs are
    compiled by then, and the failure is only reported); ``full`` the defaults."""
    if mode == "none":
        return "no warm-up"
    import pm_evidence as pme

    start = time.perf_counter()
    cheap = mode == "cheap"
    wanted = {m for m in methods if m not in ("smc", "auto")}
    if "auto" in methods:
        wanted |= {"bridge", "ais"}
    path = sorted(wanted & set(pme.PATH_METHODS))
    calls: list[tuple[str | list[str], dict]] = [("smc", {"draws": 200} if cheap else {})]
    calls += [(name, CHEAP_NUTS if cheap else {}) for name in sorted(wanted - set(path))]
    if path:
        calls.append((path if len(path) > 1 else path[0], CHEAP_NUTS | CHEAP_PATH if cheap else {}))
    outcomes = []
    for method, options in calls:
        status = run_call(model, method, WARMUP_SEED, time_limit, dict(options))["status"]
        label = method if isinstance(method, str) else "+".join(method)
        outcomes.append(f"{label} {status.removeprefix('error: pm_evidence.core.exceptions.')}")
    return f"warm-up ({mode}, untimed) {time.perf_counter() - start:.0f} s: {', '.join(outcomes)}"


# --------------------------------------------------------------------------------- summary
def add_efficiency(records: list[dict]) -> None:
    """``eff`` per model and method, ``(MSE_smc * t_smc) / (MSE_m * t_m)`` over the seeds
    (``benchmarks/defaults.efficiency``); NaN when a call did not return a number."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        groups.setdefault((record["model"], record["method"]), []).append(record)

    def cost(rows):
        if not rows or any("error" not in r for r in rows):
            return math.nan, math.nan
        mse = sum(r["error"] ** 2 for r in rows) / len(rows)
        return mse, sum(r["wall_s"] for r in rows) / len(rows)

    for (model, _method), rows in groups.items():
        mse, t = cost(rows)
        mse_smc, t_smc = cost(groups.get((model, "smc"), []))
        if math.isfinite(mse * t) and math.isfinite(mse_smc * t_smc):
            eff = math.inf if mse * t == 0 else mse_smc * t_smc / (mse * t)
        else:
            eff = math.nan
        for row in rows:
            row["eff"] = eff


COLUMNS = (
    ("model", "model"),
    ("method", "method"),
    ("seed", "seed"),
    ("log_z", "log Z"),
    ("error", "err"),
    ("se", "SE"),
    ("z", "err/SE"),
    ("reliable", "reliable"),
    ("wall_s", "wall s"),
    ("cpu_s", "cpu s"),
    ("evals", "evals"),
    ("peak_mb", "peak MB"),
    ("eff", "eff"),
    ("status", "status"),
)


def _cell(key: str, row: dict) -> str:
    value = row.get(key, "")
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if not math.isfinite(value):
            return "inf" if value > 0 else "-inf"
        if key in ("wall_s", "cpu_s", "z"):
            return f"{value:.1f}" if key != "z" else f"{value:+.1f}"
        if key == "peak_mb":
            return f"{value:.0f}"
        if key == "evals":
            return f"{value:.3g}"
        if key == "eff":
            return f"{value:.3g}"
        if key == "log_z":
            return f"{value:.3f}"
        return f"{value:+.4f}" if key == "error" else f"{value:.4f}"
    if isinstance(value, int):
        return f"{value:.3g}" if key == "evals" else str(value)
    return str(value) if value != "" else "-"


def table_lines(rows: list[dict]) -> list[str]:
    header = [label for _, label in COLUMNS]
    body = [[_cell(key, row) for key, _ in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *(fmt(line) for line in body)]


def environment_line() -> str:
    import pymc as pm
    import pytensor

    import pm_evidence as pme

    return (
        f"pm_evidence {pme.__version__}, PyMC {pm.__version__}, PyTensor {pytensor.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at start; "
        "every method and SMC at defaults (no options), one fresh process per call"
    )


def read_csv(path: Path) -> list[dict]:
    """Records written by :func:`write_csv`, numbers and booleans restored; ``peak_mb``
    recomputed by :func:`peak_mb` (a CSV of an older version may carry a ``maxrss_mb``,
    inflated by the peak inherited across ``exec``: it is ignored)."""
    records = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            record: dict = {}
            for key, value in row.items():
                if value == "":
                    continue
                if value in ("True", "False"):
                    record[key] = value == "True"
                elif key == "seed":
                    record[key] = int(value)
                else:
                    try:
                        record[key] = float(value)
                    except ValueError:
                        record[key] = value
            record["peak_mb"] = peak_mb(record)
            records.append(record)
    return records


def report(records: list[dict]) -> None:
    """The table of all calls and the rows reliable but more than 4 SE off."""
    add_efficiency(records)
    print("\nAll calls:", *table_lines(records), sep="\n")
    bad = [
        r for r in records
        if r.get("reliable") and "z" in r and abs(r["z"]) > Z_THRESHOLD
    ]  # fmt: skip
    print(f"\nreliable=True but more than {Z_THRESHOLD:g} SE off: ", end="")
    print(", ".join(f"{r['model']}/{r['method']}/seed {r['seed']} (z {r['z']:+.1f})" for r in bad)
          or "none")  # fmt: skip


def write_csv(path: Path, records: list[dict]) -> None:
    keys: list[str] = []
    for record in records:
        keys += [k for k in record if k not in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys)
        writer.writeheader()
        writer.writerows(records)


# --------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    import numpy as np

    import pm_evidence as pme

    catalogue = _entries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=list(catalogue), help="default: all")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=["smc", *pme.METHODS],
        default=list(DEFAULT_METHODS),
        help=f"default: {' '.join(DEFAULT_METHODS)} (smc: pm.sample_smc at its defaults)",
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[1], help="default: 1")
    parser.add_argument("--out", type=Path, help="CSV file, one row per call")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=TIME_LIMIT,
        help=f"seconds per call (default {TIME_LIMIT:.0f}); a call past it is recorded as timeout",
    )
    parser.add_argument("--warmup", choices=["cheap", "full", "none"], default="cheap")
    parser.add_argument(
        "--from-csv",
        type=Path,
        nargs="+",
        help="print the table of saved runs (CSV files of --out) and run nothing",
    )
    args = parser.parse_args(argv)
    if args.from_csv:
        report([record for path in args.from_csv for record in read_csv(path)])
        return

    names = args.models or list(catalogue)
    methods = list(dict.fromkeys(args.methods))
    print(environment_line(), flush=True)
    records: list[dict] = []
    for name in names:
        entry = catalogue[name]
        model, _ = entry.build()
        gold = entry.gold()
        n_params = int(sum(np.size(v) for v in model.initial_point().values()))
        print(
            f"\n{name}: {n_params} parameters, gold log Z {gold.log_z:.6f} "
            f"(error {gold.error:.1e}, {entry.gold_method})",
            flush=True,
        )
        print("  " + warm_up(name, methods, args.warmup, args.time_limit), flush=True)
        for seed in args.seeds:
            for method in methods:
                record = run_call(name, method, seed, args.time_limit)
                record["gold_error"] = gold.error
                if "error" in record:
                    scale = math.hypot(record["se"], gold.error)
                    error = record["error"]
                    record["z"] = error / scale if scale > 0 else math.copysign(math.inf, error)
                records.append(record)
                shown = (
                    f"{record['log_z']:.4f} ± {record['se']:.4f}  err {record['error']:+.4f}  "
                    f"z {record['z']:+.1f}{'' if record['reliable'] else '  flagged'}  "
                    f"{record['wall_s']:.1f} s"
                    if "error" in record
                    else f"{record['status']} {record.get('error_message', '')}"
                )
                print(f"  seed {seed} {method:<7} {shown}", flush=True)
        if args.out is not None:
            add_efficiency(records)
            write_csv(args.out, records)

    report(records)
    if args.out is not None:
        write_csv(args.out, records)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]), Path(sys.argv[3]))
    else:
        main()
