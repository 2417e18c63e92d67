"""The multimodal zoo against every default method, PyMC's SMC and a nested
sampler, in one run.

For each model of :data:`pm_evidence.zoo.multimodal.MULTIMODAL_ZOO` (gold ``log Z`` computed
without PyMC, prior density included: see that module), each seed and each column:

* ``auto``, ``bridge``, ``ais``, ``rts``: ``pm_evidence.marginal_likelihood(model, method=m,
  random_seed=seed, progressbar=False)`` with no other option (``auto`` is the default call;
  ``bridge`` is the posterior-draw method ``auto`` usually returns; ``ais`` and ``rts`` the
  default path methods);
* ``smc``: ``pm.sample_smc(model=model, random_seed=seed, progressbar=False, cores=1)``, i.e. its
  defaults (IMH kernel, 2,000 draws, threshold 0.5, ``chains = max(2, cores)`` = 2 on this
  2-core machine) run sequentially in this process; ``log Z`` is the mean over chains of each
  chain's last-stage ``sample_stats["log_marginal_likelihood"]`` (the value PyMC's kernel stores
  at ``beta = 1``; earlier stages hold NaN), as ``pm_evidence.from_smc`` and PyMC's examples
  do; SE = spread over the chains / sqrt(chains) (two chains: a rough SE). The kernel is
  ``IMH`` subclassed only to count log-density evaluations (same algorithm and random stream);
* ``dynesty``: dynesty's static ``NestedSampler(loglike, prior_transform, ndim,
  rstate=np.random.default_rng(seed))`` and ``run_nested()`` at their defaults (500 live points,
  multi-ellipsoid bounds, ``sample="auto"``) on the same unit-cube form; SE = its ``logzerr``;
* ``nautilus``: nautilus-sampler at its defaults (``Sampler(prior, likelihood, seed=seed)``,
  ``run()``) on the entry's unit-cube form (:func:`pm_evidence.zoo.multimodal.unit_cube`;
  a 1-D model gets a dummy second coordinate, nautilus needs two); SE ``~ n_eff^-1/2`` (its
  importance-sampling effective sample size; approximate). Both nested samplers are imported
  lazily: without ``pip install nautilus-sampler`` (or ``dynesty``) the column is skipped with
  a message. They run after every other column (all models and seeds), being the slowest
  columns and the reference rather than the subject: on a busy 2-core machine nautilus's
  neural-network bounds take minutes per model.

Table columns: error = estimate - gold, SE, error/SE, ``reliable`` (pm_evidence methods only:
no warning on the result), wall time, log-density evaluations (``n_evaluations +
n_setup_evaluations`` of a path method's run; SMC's particle evaluations, prior and likelihood
counted once together; nautilus's ``n_like``; empty where unknown: NUTS's gradient evaluations
are not reported by ``auto`` and ``bridge``), and a status:

* ``ok``: within ``max(4 SE, 0.05)`` of the gold (the target);
* ``flagged``: off, and ``reliable=False`` (the user was told);
* ``WRONG``: off, and ``reliable=True``: a confident wrong number;
* ``off``: off, for SMC and nautilus (no reliability flag);
* ``unsupported: <error type>``: pm_evidence refused the model with an
  ``EvidenceInputError`` (the note starts with its message);
* ``timeout`` (the call ran past ``--timeout`` seconds and was killed), ``crash: <type>``,
  ``skipped: <why>``.

Each (model, seed) runs in a worker process; a call past ``--timeout`` kills the worker (and
NUTS's processes) and the remaining columns go on in a fresh one.

The zoo includes periodic signals (sums of 1, 2 and 3 sinusoids of unknown
frequency, unordered and ordered: tag ``periodic``) and two mirror-mode models (tag
``mirror``); ``--tags`` selects entries by tag. For an ordered entry the nested samplers get
the sorted uniforms (the order statistics: density ``K! / V^K`` on the ordered region, the
model's prior); ``pm.sample_smc`` gets the PyMC model as it is, like every other column.

Run::

    nice -n 5 python benchmarks/multimodal.py --seeds 1 2 --out results.csv
    python benchmarks/multimodal.py --tags periodic --methods auto smc dynesty nautilus
    python benchmarks/multimodal.py --quick
    python benchmarks/multimodal.py --models eggbox unequal_modes_5d --methods auto smc
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

from run_records import source_line, write_csv

RECORD = "MM-RECORD "
START = "MM-START "
ALL_METHODS = ("auto", "bridge", "ais", "rts", "smc", "dynesty", "nautilus")
NESTED = ("dynesty", "nautilus")
PME_METHODS = ("auto", "bridge", "ais", "rts")
QUICK_MODELS = ("trimodal_mixture_1d", "gaussian_shells_2d", "eggbox")
TOLERANCE_SE, TOLERANCE_NATS = 4.0, 0.05
NOISE = ("could not link to a BLAS", "Cannot cache compiled function", "at least 4 chains")
COLUMNS = (
    "model",
    "method",
    "seed",
    "gold",
    "log_z",
    "se",
    "error",
    "z",
    "reliable",
    "time_s",
    "n_evaluations",
    "status",
    "note",
)


# ------------------------------------------------------------------------------------ columns


def _relevant(caught) -> list[str]:
    out = []
    for w in caught:
        if issubclass(w.category, DeprecationWarning | PendingDeprecationWarning | FutureWarning):
            continue
        message = str(w.message).strip().splitlines()[0] if str(w.message).strip() else ""
        if any(noise in message for noise in NOISE):
            continue
        out.append(f"{w.category.__name__}: {message}")
    return out


def run_pm_evidence(model, method: str, seed: int) -> dict:
    import numpy as np

    import pm_evidence as pme

    ev = pme.marginal_likelihood(model, method=method, random_seed=seed, progressbar=False)
    diag = ev.diagnostics
    n_eval = diag.get("n_evaluations", np.nan)
    if "n_setup_evaluations" in diag:
        n_eval = n_eval + diag["n_setup_evaluations"]
    note = ""
    if method == "auto":
        note = f"{ev.method}; {diag.get('auto_pair', '')}"
    if ev.warnings:
        note += ("; " if note else "") + ev.warnings[0].strip().splitlines()[0][:160]
    return {
        "log_z": ev.log_z,
        "se": ev.se,
        "reliable": bool(ev.reliable),
        "n_evaluations": float(n_eval),
        "note": note,
    }


def _counting_imh():
    from pymc.smc.kernels import IMH

    class CountingIMH(IMH):
        """PyMC's IMH kernel, counting the particles' log-density evaluations."""

        count = 0

        def mutate(self):
            super().mutate()
            CountingIMH.count += (self.n_steps - 1) * self.draws

    return CountingIMH


def run_smc(model, seed: int) -> dict:
    import numpy as np
    import pymc as pm

    kernel = _counting_imh()
    kernel.count = 0
    idata = pm.sample_smc(kernel=kernel, model=model, random_seed=seed, progressbar=False, cores=1)
    stats = idata["sample_stats"]
    per_chain = []
    for chain_values in stats["log_marginal_likelihood"].values:
        finite = [float(v) for v in np.atleast_1d(chain_values) if np.isfinite(float(v))]
        per_chain.append(finite[-1] if finite else np.nan)
    per_chain = np.array(per_chain)
    n_chains = per_chain.size
    draws = int(stats.attrs.get("_n_draws", 2000))
    return {
        "log_z": float(per_chain.mean()),
        "se": float(per_chain.std(ddof=1) / np.sqrt(n_chains)) if n_chains > 1 else math.nan,
        "reliable": "",
        "n_evaluations": float(kernel.count + n_chains * draws),
        "note": f"{n_chains} chains: " + ", ".join(f"{v:.3f}" for v in per_chain),
    }


def run_nautilus(entry, seed: int) -> dict:
    import numpy as np

    try:
        from nautilus import Sampler
    except ImportError:
        return {"status": "skipped: nautilus-sampler not installed (pip install nautilus-sampler)"}
    from pm_evidence.zoo.multimodal import unit_cube

    dim, prior, log_likelihood = _padded(unit_cube(entry))  # nautilus needs two parameters
    sampler = Sampler(prior, log_likelihood, n_dim=dim, vectorized=True, seed=seed)
    sampler.run(verbose=False)
    return {
        "log_z": float(sampler.log_z),
        "se": float(1.0 / np.sqrt(sampler.n_eff)),
        "reliable": "",
        "n_evaluations": float(sampler.n_like),
        "note": f"n_eff={sampler.n_eff:.0f}",
    }


def _padded(form):
    """Prior transform and log-likelihood of a unit-cube form on at least two coordinates
    (a dummy second one for a 1-D model: Z is unchanged)."""
    import numpy as np

    dim = max(form.dim, 2)

    def transform(u):
        u = np.atleast_2d(u)
        theta = form.transform(u[:, : form.dim])
        return np.concatenate([theta, u[:, form.dim :]], axis=1) if dim > form.dim else theta

    def log_likelihood(theta):
        return form.log_likelihood(np.atleast_2d(theta)[:, : form.dim])

    return dim, transform, log_likelihood


def run_dynesty(entry, seed: int) -> dict:
    import numpy as np

    try:
        import dynesty
    except ImportError:
        return {"status": "skipped: dynesty not installed (pip install dynesty)"}
    from pm_evidence.zoo.multimodal import unit_cube

    dim, transform, log_likelihood = _padded(unit_cube(entry))
    sampler = dynesty.NestedSampler(
        lambda theta: float(log_likelihood(theta)[0]),
        lambda u: transform(u)[0],
        dim,
        rstate=np.random.default_rng(seed),
    )
    sampler.run_nested(print_progress=False)
    results = sampler.results
    return {
        "log_z": float(results.logz[-1]),
        "se": float(results.logzerr[-1]),
        "reliable": "",
        "n_evaluations": float(np.sum(results.ncall)),
        "note": f"nlive=500, {results.niter} iterations",
    }


def classify(row: dict) -> str:
    if not (math.isfinite(row["log_z"]) and math.isfinite(row["se"])):
        return "flagged" if row["reliable"] is False else ("WRONG" if row["reliable"] else "off")
    if abs(row["error"]) <= max(TOLERANCE_SE * row["se"], TOLERANCE_NATS):
        return "ok"
    if row["reliable"] == "":
        return "off"
    return "WRONG" if row["reliable"] else "flagged"


def run_cell(entry, model, method: str, seed: int) -> dict:
    """One model x method x seed."""
    gold = entry.gold()
    row = dict.fromkeys(COLUMNS, "")
    row.update(model=entry.name, method=method, seed=seed, gold=gold.log_z)
    row.update(log_z=math.nan, se=math.nan, error=math.nan, z=math.nan, n_evaluations=math.nan)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            if method in PME_METHODS:
                out = run_pm_evidence(model, method, seed)
            elif method == "smc":
                out = run_smc(model, seed)
            elif method == "nautilus":
                out = run_nautilus(entry, seed)
            elif method == "dynesty":
                out = run_dynesty(entry, seed)
            else:
                raise ValueError(
                    f"Requested method {method!r} but it must be one of {ALL_METHODS}."
                )
        except Exception as err:  # reported as a row, not raised
            from pm_evidence import EvidenceInputError

            if isinstance(err, EvidenceInputError):  # a clear refusal, not a crash
                message = " ".join(str(err).split())
                out = {"status": f"unsupported: {type(err).__name__}", "note": message[:300]}
            else:
                out = {
                    "status": f"crash: {type(err).__name__}",
                    "note": "".join(traceback.format_exception_only(err)).strip()[-300:],
                }
        row["time_s"] = time.perf_counter() - start
    row.update(out)
    if not row["status"]:
        row["error"] = row["log_z"] - gold.log_z
        row["z"] = row["error"] / row["se"] if row["se"] > 0 else math.nan
        row["status"] = classify(row)
    if not row["note"]:
        messages = _relevant(caught)
        row["note"] = messages[0][:160] if messages else ""
    return row


# ------------------------------------------------------------------------------------ workers


def worker(model_name: str, seed: int, methods: list[str]) -> None:
    """Build the model once and run the columns; ``START`` and ``RECORD`` lines on stdout."""
    from pm_evidence.zoo.multimodal import multimodal_zoo

    (entry,) = multimodal_zoo([model_name])
    model, _ = entry.build()
    for method in methods:
        print(START + method, flush=True)
        row = run_cell(entry, model, method, seed)
        print(RECORD + json.dumps(row), flush=True)


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _blank(model_name, method, seed, gold, status, note="", time_s=math.nan) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(model=model_name, method=method, seed=seed, gold=gold, status=status, note=note)
    row.update(log_z=math.nan, se=math.nan, error=math.nan, z=math.nan, n_evaluations=math.nan)
    row["time_s"] = time_s
    return row


def run_model(entry, seed: int, methods: list[str], timeout: float, report) -> list[dict]:
    """Run the columns of one (model, seed) in workers; a call past ``timeout`` seconds is a
    ``timeout`` row and the rest go on in a fresh worker."""
    rows: list[dict] = []
    remaining = list(methods)
    gold = entry.gold().log_z
    while remaining:
        command = [sys.executable, os.path.abspath(__file__), "--worker", entry.name]
        command += ["--seeds", str(seed), "--methods", *remaining]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: NUTS's workers die with it
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
        errors: list[str] = []
        threading.Thread(target=errors.extend, args=(process.stderr,), daemon=True).start()
        current, deadline, started_at = None, math.inf, 0.0
        killed = False
        while True:
            wait = None if current is None else max(deadline - time.monotonic(), 0.0)
            try:
                line = lines.get(timeout=wait if wait is None else max(wait, 0.01))
            except queue.Empty:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                row = _blank(
                    entry.name,
                    current,
                    seed,
                    gold,
                    "timeout",
                    f"killed after {timeout:.0f} s",
                    time.monotonic() - started_at,
                )
                rows.append(row)
                report(row)
                remaining.remove(current)
                killed = True
                break
            if line is None:
                break
            if line.startswith(START):
                current = line[len(START) :].strip()
                started_at = time.monotonic()
                deadline = started_at + timeout
            elif line.startswith(RECORD):
                row = json.loads(line[len(RECORD) :])
                rows.append(row)
                report(row)
                remaining.remove(row["method"])
                current, deadline = None, math.inf
        if not killed:
            process.wait()
            if remaining:  # the worker died: the running call and the rest are crashes
                tail = "".join(errors)[-300:].replace("\n", " ")
                for method in list(remaining):
                    row = _blank(
                        entry.name, method, seed, gold, f"crash: worker exit {process.returncode}"
                    )
                    row["note"] = tail
                    rows.append(row)
                    report(row)
                remaining.clear()
    return rows


# ------------------------------------------------------------------------------------ output


def _fmt(value, spec: str) -> str:
    if value == "" or value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return format(value, spec)


HEADER = (
    f"{'model':22s} {'method':9s} {'seed':>4s} {'gold':>12s} {'log_z':>12s} {'error':>9s} "
    f"{'SE':>9s} {'err/SE':>9s} {'reliable':>8s} {'time_s':>8s} {'n_eval':>10s}  status  note"
)


def format_row(row: dict) -> str:
    reliable = "" if row["reliable"] == "" else str(row["reliable"])
    return (
        f"{row['model']:22s} {row['method']:9s} {row['seed']:>4} {_fmt(row['gold'], '12.4f'):>12s} "
        f"{_fmt(row['log_z'], '12.4f'):>12s} {_fmt(row['error'], '+9.4f'):>9s} "
        f"{_fmt(row['se'], '9.4f'):>9s} {_fmt(row['z'], '+9.1f'):>9s} {reliable:>8s} "
        f"{_fmt(row['time_s'], '8.1f'):>8s} {_fmt(row['n_evaluations'], '10.3g'):>10s}  "
        f"{row['status']}  {str(row['note'])[:110]}"
    )






def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=None, help="default: the whole zoo")
    parser.add_argument(
        "--tags", nargs="+", default=None, help="only entries with any of these tags"
    )
    parser.add_argument("--methods", nargs="+", default=list(ALL_METHODS), choices=ALL_METHODS)
    parser.add_argument("--quick", action="store_true", help=f"models {QUICK_MODELS}, seed 1")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per call")
    parser.add_argument("--out", default=None, help="CSV path for the table")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker is not None:
        worker(args.worker, args.seeds[0], args.methods)
        return 0

    from pm_evidence.zoo.multimodal import MULTIMODAL_ZOO, multimodal_zoo

    names = args.models
    seeds = args.seeds
    if args.quick:
        names = names or list(QUICK_MODELS)
        seeds = [seeds[0]]
    entries = multimodal_zoo(names, args.tags) if names or args.tags else MULTIMODAL_ZOO
    for name, package in (("nautilus", "nautilus-sampler"), ("dynesty", "dynesty")):
        if name in args.methods:
            try:
                __import__(name)
            except ImportError:
                print(f"{package} is not installed: the {name} column is skipped.")
                args.methods = [m for m in args.methods if m != name]

    print(f"multimodal zoo: {len(entries)} models x {args.methods} x seeds {seeds}; "
          f"per-call limit {args.timeout:.0f} s")  # fmt: skip
    print(source_line())
    print(HEADER, flush=True)
    rows: list[dict] = []
    t0 = time.perf_counter()

    done: list[dict] = []  # every row so far, for the CSV written as the run goes

    def report(row):
        print(format_row(row), flush=True)
        done.append(row)
        if args.out:
            write_csv(done, args.out, COLUMNS)

    # the nested samplers last (the slowest columns, and the reference rather than the subject),
    # every model at the first seed before any at the next
    studied = [m for m in args.methods if m not in NESTED]
    nested = [m for m in args.methods if m in NESTED]
    cells = [(entry, seed, studied) for entry in entries for seed in seeds]
    cells += [(entry, seed, nested) for seed in seeds for entry in entries]
    for entry, seed, methods in cells:
        if methods:
            rows.extend(run_model(entry, seed, methods, args.timeout, report))
    print(f"\nwall time {time.perf_counter() - t0:.0f} s\n")

    print("Sorted table:")
    print(HEADER)
    order = {m: i for i, m in enumerate(ALL_METHODS)}
    rows.sort(key=lambda r: (r["model"], order.get(r["method"], 99), r["seed"]))
    for row in rows:
        print(format_row(row))
    wrong = [r for r in rows if r["status"] == "WRONG"]
    print(f"\nreliable=True but off by more than max({TOLERANCE_SE:g} SE, {TOLERANCE_NATS} nats): "
          f"{len(wrong)} rows")  # fmt: skip
    for row in wrong:
        print("  " + format_row(row))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"].split(":")[0]] = counts.get(row["status"].split(":")[0], 0) + 1
    print("status counts:", counts)
    if args.out:
        write_csv(rows, args.out, COLUMNS)
        print(f"CSV written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
