"""Every method of ``pm_evidence.METHODS`` at its defaults on every model of the zoo.

For each zoo model (:data:`pm_evidence.zoo.testing.ZOO`, gold ``log Z`` computed without PyMC) and
each method, calls ``pm_evidence.marginal_likelihood(model, method=name, random_seed=seed,
progressbar=False)`` with no other option, and prints a Markdown table: model, method, estimate,
SE, error in SEs against the gold, wall time, peak resident memory (RSS) during the call, and a
status:

* ``ok``: within 4 standard errors of the gold (the SE combines the method's SE and the
  gold's own numerical error, which is below 1e-6 nats);
* ``WRONG``: off by more than 4 SE (or a non-finite estimate or SE) and no warning was issued;
* ``flagged``: off, but a warning was issued during the call (the user was told to distrust);
* ``unsupported: <first line>``: an ``EvidenceInputError`` (a clear refusal), with the subclass
  named when it is one (``OverlapError``, ``NonFiniteLogDensityError``);
* ``CRASH: <exception type>``: any other exception, a worker that died, or a time-out.

Each model runs in its own worker process (``--timeout`` seconds for all its methods), so a
crash or a memory blow-up is confined to one model; inside the worker a sampling thread reads
``VmRSS`` from ``/proc/self/status`` every 10 ms, and the reported peak is the largest value seen
during the call (it includes the interpreter, PyMC and the compiled model, ~0.3-0.5 GB).

Run::

    python benchmarks/zoo.py                       # every model, every method (long)
    python benchmarks/zoo.py --quick               # six small models, one per feature
    python benchmarks/zoo.py --models gamma_poisson lkj_2d --methods bridge ais
    python benchmarks/zoo.py --tags discrete --json results.json
    python benchmarks/zoo.py --list                # zoo models, tags and gold values
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from pathlib import Path

RECORD = "ZOO-RECORD "
QUICK_MODELS = (
    "gamma_poisson",
    "dirichlet_categorical",
    "normal_halfnormal_sigma",
    "bernoulli_switch",
    "ordered_means",
    "zero_sum_normal",
)
Z_THRESHOLD = 4.0
# warnings that say nothing about the estimate (environment, deprecations, caching)
NOISE = ("could not link to a BLAS", "Cannot cache compiled function")


class PeakRSS:
    """Largest ``VmRSS`` of this process seen by a thread polling ``/proc/self/status``."""

    def __init__(self, interval: float = 0.01):
        self.interval = interval
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def current_kb() -> int:
        try:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def _poll(self):
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, self.current_kb())
            self._stop.wait(self.interval)

    def __enter__(self):
        self.peak_kb = self.current_kb()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_kb = max(self.peak_kb, self.current_kb())


def _relevant(caught) -> list[str]:
    """Messages of the warnings that bear on the result (not deprecations or environment)."""
    out = []
    for w in caught:
        if issubclass(w.category, DeprecationWarning | PendingDeprecationWarning | FutureWarning):
            continue
        message = str(w.message)
        if any(noise in message for noise in NOISE):
            continue
        out.append(f"{w.category.__name__}: {message}")
    return out


def status_of(estimate, se, gold, gold_error, warned: bool) -> tuple[str, float]:
    """The status of a finished run and its error in standard errors."""
    scale = math.hypot(se, gold_error) if math.isfinite(se) else math.nan
    if not (math.isfinite(estimate) and math.isfinite(scale)):
        return ("flagged" if warned else "WRONG"), math.nan
    error = estimate - gold
    z = error / scale if scale > 0 else (0.0 if error == 0 else math.copysign(math.inf, error))
    if abs(z) <= Z_THRESHOLD:
        return "ok", z
    return ("flagged" if warned else "WRONG"), z


def run_cell(entry, method: str, seed: int) -> dict:
    """One model x method: build the model, run the method at its defaults, classify."""
    import pm_evidence as pme

    gold = entry.gold()
    model, _ = entry.build()
    record = {
        "model": entry.name,
        "method": method,
        "gold": gold.log_z,
        "gold_error": gold.error,
        "estimate": math.nan,
        "se": math.nan,
        "z": math.nan,
        "time_s": math.nan,
        "peak_rss_mb": math.nan,
        "warning": "",
    }
    with warnings.catch_warnings(record=True) as caught, PeakRSS() as rss:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            ev = pme.marginal_likelihood(model, method=method, random_seed=seed, progressbar=False)
        except pme.EvidenceInputError as err:
            first = (str(err).strip().splitlines() or [""])[0]
            kind = type(err).__name__
            named = "" if kind == "EvidenceInputError" else f"({kind}) "
            record["status"] = f"unsupported: {named}{first}"
        except Exception as err:  # every other failure is reported, not raised
            record["status"] = f"CRASH: {type(err).__name__}"
            record["detail"] = "".join(traceback.format_exception_only(err)).strip()[-500:]
        else:
            record["estimate"], record["se"] = float(ev.log_z), float(ev.se)
        record["time_s"] = time.perf_counter() - start
    record["peak_rss_mb"] = rss.peak_kb / 1024
    messages = _relevant(caught)
    record["warning"] = messages[0][:200] if messages else ""
    if "status" not in record:
        record["status"], record["z"] = status_of(
            record["estimate"], record["se"], gold.log_z, gold.error, bool(messages)
        )
    return record


def worker(model_name: str, methods: list[str], seed: int) -> None:
    """Run the methods on one model; one JSON record per line on stdout."""
    from pm_evidence.zoo.testing import zoo

    (entry,) = zoo([model_name])
    for method in methods:
        record = run_cell(entry, method, seed)
        print(RECORD + json.dumps(record), flush=True)


def run_model(model_name: str, methods: list[str], seed: int, timeout: float) -> list[dict]:
    """Run :func:`worker` in a fresh interpreter; records for methods it did not finish say
    why (a time-out or the worker's death)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        command = [sys.executable, __file__, "--worker", model_name, "--seed", str(seed)]
        command += ["--methods", *methods]
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        try:
            process.wait(timeout=timeout)
            reason = None if process.returncode == 0 else f"worker exit {process.returncode}"
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            reason = "Timeout"
        out.seek(0)
        records = [json.loads(line[len(RECORD) :]) for line in out if line.startswith(RECORD)]
        err.seek(0)
        stderr_tail = err.read()[-500:]
    done = {r["method"] for r in records}
    for method in methods:
        if method not in done:
            records.append(
                {
                    "model": model_name,
                    "method": method,
                    "status": f"CRASH: {reason or 'no record'}",
                    "detail": stderr_tail,
                }
            )
    return records


def _fmt(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, spec)


def _short_status(status: str, width: int = 110) -> str:
    """The status for the table (the JSON records keep it whole)."""
    status = status.replace("|", "/")
    return status if len(status) <= width else status[: width - 3] + "..."


def print_table(records: list[dict], file=sys.stdout) -> None:
    header = (
        "| model | method | estimate | SE | gold | error / SE | time (s) | peak RSS (MB) | status |"
    )
    print(header, file=file)
    print("|" + "---|" * 9, file=file)
    for r in records:
        cells = [
            r["model"],
            r["method"],
            _fmt(r.get("estimate"), ".4f"),
            _fmt(r.get("se"), ".4f"),
            _fmt(r.get("gold"), ".4f"),
            _fmt(r.get("z"), "+.1f"),
            _fmt(r.get("time_s"), ".1f"),
            _fmt(r.get("peak_rss_mb"), ".0f"),
            _short_status(r["status"]),
        ]
        print("| " + " | ".join(cells) + " |", file=file)


def print_summary(records: list[dict], file=sys.stdout) -> None:
    counts: dict[str, int] = {}
    for r in records:
        key = r["status"].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), file=file)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", help="zoo model names (default: all)")
    parser.add_argument("--tags", nargs="+", help="only models with any of these tags")
    parser.add_argument("--methods", nargs="+", help="method names (default: all METHODS)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_MODELS)}")
    parser.add_argument("--seed", type=int, default=0, help="random_seed of every call")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per model")
    parser.add_argument("--json", type=Path, help="also write the records to this file")
    parser.add_argument("--list", action="store_true", help="list the zoo and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(args.worker, args.methods, args.seed)
        return

    from pm_evidence.marginal import METHODS
    from pm_evidence.zoo.testing import zoo

    if args.list:
        print("| model | gold log Z | gold error | gold method | tags |\n|---|---|---|---|---|")
        for entry in zoo():
            gold = entry.gold()
            tags = ", ".join(sorted(entry.tags))
            print(
                f"| {entry.name} | {gold.log_z:.6f} | {gold.error:.1e} | {entry.gold_method} "
                f"| {tags} |"
            )
        return
    names = list(QUICK_MODELS) if args.quick and not args.models else args.models
    entries = zoo(names, args.tags)
    methods = args.methods or list(METHODS)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"unknown methods {unknown}; known: {list(METHODS)}")

    records = []
    for entry in entries:
        print(f"{entry.name}: {len(methods)} methods ...", file=sys.stderr, flush=True)
        for r in run_model(entry.name, methods, args.seed, args.timeout):
            print(
                f"  {r['method']:>18s}  {r['status']}  ({_fmt(r.get('time_s'), '.1f')} s)",
                file=sys.stderr,
                flush=True,
            )
            records.append(r)
    print_table(records)
    print_summary(records)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
