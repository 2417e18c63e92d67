"""Latency of a default call: ``method="auto"`` warm and cold against PyMC's SMC and
against each of its stages alone, on small models of the zoo and the multimodal zoo, in one run.

For each model (gold ``log Z`` computed without PyMC: :mod:`pm_evidence.zoo.testing`,
:mod:`pm_evidence.zoo.multimodal`) and each repeat ``r`` (seed ``--seed + r``), rows of
``model x method x mode``:

* method ``auto``: ``pm_evidence.marginal_likelihood(model, random_seed=seed,
  progressbar=False)``, i.e. the defaults (``method="auto"``);
* method ``smc``: ``pm.sample_smc(model=model, random_seed=seed, progressbar=False)`` at its
  defaults (2,000 particles, IMH kernel; on a 2-core machine PyMC's ``cores`` is 1, so two chains
  run one after the other in the calling process), ``log Z`` and SE read by
  :func:`pm_evidence.from_smc`;
* method ``stage:<name>``: each stage of ``auto`` alone (the public stage functions of
  :mod:`pm_evidence.auto`, composed as ``auto_evidence`` composes them, same seed: the result
  must equal the call's, checked and printed), with its share of the sum of the stages. Stages:
  ``setup`` (the model's compiled adapter, ``as_target``), ``exploration``, ``draws`` (NUTS),
  ``estimate`` (bridge; not run where the draws missed modes the exploration found:
  ``auto.estimate_skipped``), ``check`` (AIS), ``coverage`` (``auto.draws_coverage``, read
  by that judgement and by the coverage stage), ``confirmation`` (a second exploration and
  AIS, where the draws missed modes the exploration found; the arbiter, a third, is not
  composed here: where a call ran it, the stages' result differs and the table says so),
  ``term_check`` (where no exploration ran); a model with discrete variables has one
  ``rts+ais`` stage.

Modes:

* ``first``: the first call in a fresh worker process (one per model, method and seed),
  PyTensor's and numba's caches on disk as they are (usually warm from earlier runs): a second
  run of a user's script; SMC's worker loads the model pickled and imports pm_evidence only
  after its first call, as the cold child does (:func:`worker_cold`);
* ``warm``: the second call, same process, same model, same seed (the adapter and compiled
  functions kept); the stages alone run after it, warm too;
* ``cold``: the first call in a fresh process with EMPTY caches (``PYTENSOR_FLAGS`` with
  ``base_compiledir=`` and ``compiledir=``, and ``NUMBA_CACHE_DIR=``, in a fresh temporary
  folder: PyTensor's Numba backend caches under ``base_compiledir``, so ``compiledir=`` alone
  is not cold, see :func:`cold_env`); the child imports PyMC, then, for ``auto``,
  pm_evidence (both timed: ``import_s`` is PyMC's import for SMC and PyMC's plus pm_evidence's
  for ``auto``), builds the model (``build_s``; SMC's child loads it pickled by the parent and
  imports pm_evidence only after its call, so that its call pays the imports a user's would,
  PyTensor's numba backend among them) and makes the one call; ``proc_wall_s`` and
  ``proc_cpu_s`` are the whole child's (interpreter start to exit, from the parent). With
  ``--cold-stages`` the stages also run alone in such a child (the cold split of the call).

Columns: wall time (``time.perf_counter``), CPU time (``time.process_time`` plus the CPU of any
child process reaped during the call, ``resource.getrusage(RUSAGE_CHILDREN)``), ``log Z``, error
against the gold, the reported SE, ``reliable`` and the number of warnings (auto), the ratios
auto/SMC (wall and CPU, same model, mode and repeat), and for a stage its share of the sum of
the stages. With ``--repeats N`` the table shows medians over repeats; the CSV holds every
repeat's row. At the end: the medians over models of the ratios, and of the stage shares.

Run::

    python benchmarks/latency.py                                # default models, warm and cold
    python benchmarks/latency.py --models normal_mean eggbox --repeats 3
    python benchmarks/latency.py --no-cold                      # warm only (minutes)
    python benchmarks/latency.py --list

The CSV goes to ``benchmarks/results/latency.csv`` (``--out``). Ctrl-C (or ``kill``, SIGTERM)
stops the run: the worker running is ended and the rows finished so far are printed and written.
Each worker runs in its own session, so Ctrl-C reaches only this process, which ends it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from run_records import source_line, write_csv

RECORD = "LATENCY-RECORD "
EXACT_MODELS = (
    "normal_mean",
    "linear_regression",
    "regression_inverse_gamma",
    "hierarchical_noncentered",
    "beta_binomial",
)
MULTIMODAL_MODELS = ("trimodal_mixture_1d", "gaussian_shells_2d", "eggbox")
DEFAULT_MODELS = EXACT_MODELS + MULTIMODAL_MODELS
OUT = Path(__file__).resolve().parent / "results" / "latency.csv"
COLUMNS = (
    "model",
    "method",
    "mode",
    "repeat",
    "seed",
    "wall_s",
    "cpu_s",
    "share",
    "log_z",
    "gold",
    "error",
    "se",
    "reliable",
    "n_warnings",
    "wall_ratio",
    "cpu_ratio",
    "import_s",
    "build_s",
    "proc_wall_s",
    "proc_cpu_s",
    "note",
)
STAGE_ORDER = (
    "setup",
    "exploration",
    "draws",
    "estimate",
    "check",
    "coverage",
    "confirmation",
    "term_check",
)


# ------------------------------------------------------------------------------------ timing


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Clock:
    """Wall (``perf_counter``) and CPU (``process_time`` + reaped children) of a block."""

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self._kids = _children_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu + _children_cpu() - self._kids


# ------------------------------------------------------------------------------------ entries


def entry_of(name: str):
    """The zoo entry called ``name``, from the testing zoo or the multimodal zoo."""
    from pm_evidence.zoo.multimodal import MULTIMODAL_ZOO
    from pm_evidence.zoo.testing import ZOO

    for entry in (*ZOO, *MULTIMODAL_ZOO):
        if entry.name == name:
            return entry
    known = [e.name for e in (*ZOO, *MULTIMODAL_ZOO)]
    raise KeyError(f"Requested model {name!r} but it must be one of {known}.")


def _row(model: str, method: str, mode: str, seed: int, **values) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(model=model, method=method, mode=mode, seed=seed)
    row.update(values)
    return row


# ------------------------------------------------------------------------------------ calls


def call_auto(model, seed: int) -> dict:
    import pm_evidence as pme

    with warnings.catch_warnings(record=True) as caught, Clock() as clock:
        warnings.simplefilter("always")
        ev = pme.marginal_likelihood(model, random_seed=seed, progressbar=False)
    del caught
    note = f"{ev.method}; {ev.diagnostics.get('auto_pair', '')}"
    if ev.warnings:
        note += "; " + ev.warnings[0].strip().splitlines()[0][:120]
    return {
        "wall_s": clock.wall, "cpu_s": clock.cpu, "log_z": float(ev.log_z), "se": float(ev.se),
        "reliable": bool(ev.reliable), "n_warnings": len(ev.warnings), "note": note,
    }  # fmt: skip


def call_smc(model, seed: int) -> dict:
    import pymc as pm

    with warnings.catch_warnings(), Clock() as clock:
        warnings.simplefilter("ignore")
        trace = pm.sample_smc(model=model, random_seed=seed, progressbar=False)
    import pm_evidence as pme  # after the call: SMC's first call pays its own imports

    ev = pme.from_smc(trace, model)
    chains = ", ".join(f"{v:.3f}" for v in ev.draws["log_z_chain"])
    return {
        "wall_s": clock.wall, "cpu_s": clock.cpu, "log_z": float(ev.log_z), "se": float(ev.se),
        "note": f"chains: {chains}",
    }  # fmt: skip


def run_stages(model, seed: int) -> tuple[list[tuple[str, float, float]], object]:
    """``auto``'s stages run one by one, composed as ``auto_evidence`` composes them; each
    stage's (name, wall, CPU) and the result (equal to the call's for the same seed)."""
    from pm_evidence import auto
    from pm_evidence.auto import verdicts
    from pm_evidence.core.progress import quiet
    from pm_evidence.core.utils import one_blas_thread, root_sequence
    from pm_evidence.model.log_density import as_target
    from pm_evidence.run_methods import estimate_methods

    spent: dict[str, tuple[float, float]] = {}  # stage: (wall, CPU), in the order first run

    def times():
        return [(name, wall, cpu) for name, (wall, cpu) in spent.items()]

    def timed(name, fn):  # a stage timed in two parts (coverage) is one row, its times added
        with Clock() as clock:
            out = fn()
        wall, cpu = spent.get(name, (0.0, 0.0))
        spent[name] = (wall + clock.wall, cpu + clock.cpu)
        return out

    kwargs: dict = {}
    with warnings.catch_warnings(), quiet(True), one_blas_thread():
        warnings.simplefilter("ignore")
        target = timed("setup", lambda: as_target(model))
        primary, check = auto.auto_pair(target)
        seed_seq = root_sequence(seed)
        if target.has_discrete:  # RTS and AIS on one plan: one stage
            pair = timed(
                f"{primary}+{check}",
                lambda: estimate_methods(
                    target, [primary, check], None, seed_seq, False, kwargs, {}, term_check=False
                ),
            )
            return times(), verdicts.cross_checked(pair[primary], pair[check])
        skipped = auto.exploration_skipped(target, kwargs)
        exploration = None
        if not skipped:
            exploration = timed(
                "exploration",
                lambda: auto.exploration_stage(target, seed_seq, False, defer_second_pass=True),
            )
        plan = timed(
            "draws", lambda: auto.draws_stage(target, None, seed_seq, False, kwargs, exploration)
        )
        coverage = None
        if exploration is not None:
            coverage = timed("coverage", lambda: auto.draws_coverage(exploration, plan))
        skipped_estimate = auto.estimate_skipped(coverage, plan)  # where it cannot be the result
        first = None
        if not skipped_estimate:
            first = timed(
                "estimate",
                lambda: auto.estimate_stage(primary, target, plan, seed_seq, False, kwargs),
            )
        drawn = auto.check_from_the_draws(first, exploration, plan, coverage)
        if drawn:  # the check from a mixture fitted to the posterior draws
            options, added = timed(
                "check", lambda: auto.drawn_reference_stage(kwargs, plan, seed_seq)
            )
        else:
            if exploration is not None and exploration.second_pass_deferred:
                deferred = exploration
                exploration = timed(
                    "exploration",
                    lambda: auto.completed_exploration_stage(target, deferred, seed_seq, False),
                )
            options = auto.check_stage_options(target, kwargs, exploration, plan, skipped)
            options, added = auto.with_draws_outside_stage(
                target, options, exploration, plan, coverage, seed_seq
            )
        if first is not None:
            options = auto.check_precision(check, options, first, exploration, plan, coverage)
        second = timed(
            "check", lambda: auto.estimate_stage(check, target, plan, seed_seq, False, options)
        )
        if added:
            key = "reference_drawn_components" if drawn else "reference_draws_components"
            second = verdicts.with_diagnostics(second, {key: added})
        if exploration is not None:
            a, b, facts = timed(
                "coverage", lambda: auto.coverage_stage(first, second, exploration, plan, coverage)
            )
            why = verdicts.unconfirmed_draws(a, b, facts["exploration_missed_by_nuts"])
            if not why:
                return times(), verdicts.cross_checked(a, b)
            confirmation = timed(
                "confirmation",
                lambda: auto.confirmation_stage(
                    target, plan, seed_seq, False, kwargs, options["path"].reference
                ),
            )
            # the choice, as auto_evidence makes it (verdicts.confirmed_or_flagged; where it calls
            # the arbiter, a third exploration, the stages' result is not the call's, and the
            # table says so)
            return times(), verdicts.confirmed_or_flagged(b, a, confirmation, facts, why)
        result = verdicts.cross_checked(first, second)
        result = timed("term_check", lambda: auto.term_check_stage(target, result, plan, seed_seq))
        return times(), result


def stage_rows(name: str, seed: int, mode: str, times, result, call: dict | None) -> list[dict]:
    total_wall = sum(t[1] for t in times)
    rows = []
    for stage, wall, cpu in times:
        rows.append(
            _row(name, f"stage:{stage}", mode, seed, wall_s=wall, cpu_s=cpu,
                 share=wall / total_wall if total_wall > 0 else math.nan)
        )  # fmt: skip
    same = call is not None and result.log_z == call["log_z"] and result.se == call["se"]
    note = "" if call is None else ("= the call's log Z" if same else "DIFFERS from the call's")
    rows.append(
        _row(name, "stage:sum", mode, seed, wall_s=total_wall,
             cpu_s=sum(t[2] for t in times), share=1.0, log_z=float(result.log_z),
             se=float(result.se), note=note)
    )  # fmt: skip
    return rows


# ------------------------------------------------------------------------------------ workers


def emit(row: dict) -> None:
    print(RECORD + json.dumps(row), flush=True)


def worker_warm(name: str, seed: int, methods: list[str], model_file: str | None = None) -> None:
    """In one process: each method's first and second call on one model with one seed, then
    the stages. With ``model_file`` (SMC's worker) the model is loaded pickled, so that
    pm_evidence (and with it ``arviz_stats``, which SMC's first call imports itself) is not
    imported before SMC's first call (:func:`worker_cold`)."""
    if model_file:
        model = load_model(model_file)
    else:  # auto's worker: pm_evidence's own import timed (import_s of its first row)
        import pymc  # noqa: F401

        with Clock() as imported_pme:
            import pm_evidence  # noqa: F401
        model = entry_of(name).build()[0]
    imported = "pm_evidence" in sys.modules  # (False for SMC's pickled model: see pickled_model)
    calls = {}
    for method in methods:
        call = call_auto if method == "auto" else call_smc
        for mode in ("first", "warm"):
            calls[method, mode] = out = call(model, seed)
            if method == "smc" and mode == "first" and imported:
                out["note"] = f"pm_evidence imported before the call; {out['note']}"
            if method == "auto" and mode == "first" and not model_file:
                out["import_s"] = imported_pme.wall  # pm_evidence's alone (PyMC's not counted)
            emit(_row(name, method, mode, seed, **out))
    if "auto" in methods:
        times, result = run_stages(model, seed)
        for row in stage_rows(name, seed, "warm", times, result, calls["auto", "warm"]):
            emit(row)


def worker_cold(name: str, seed: int, what: str, model_file: str | None = None) -> None:
    """The first call in this process (started with empty caches by the parent).

    For SMC the model comes pickled from the parent (``model_file``) and pm_evidence is not
    imported before the call: building a zoo model imports pm_evidence, which imports
    PyTensor's numba backend and parts of SciPy that SMC's first call would otherwise import
    itself, so SMC's call would be timed shorter than a user's."""
    with Clock() as imported_pymc:
        import pymc  # noqa: F401
    with Clock() as imported_pme:
        if what != "smc":
            import pm_evidence  # noqa: F401
    with Clock() as built:
        if what == "smc":
            model = load_model(model_file)
        else:
            model = entry_of(name).build()[0]
    before = "pm_evidence" in sys.modules
    extra = {"build_s": built.wall}
    if what == "stages":
        times, result = run_stages(model, seed)
        for row in stage_rows(name, seed, "cold", times, result, None):
            emit(row)
        return
    out = call_auto(model, seed) if what == "auto" else call_smc(model, seed)
    extra["import_s"] = imported_pymc.wall + (imported_pme.wall if what == "auto" else 0.0)
    if what == "auto":
        pme_import = f"{imported_pme.wall:.1f} s more"
    else:
        pme_import = (
            "imported before the call (by the pickled model)" if before else "after the call"
        )
    out["note"] = f"import pymc {imported_pymc.wall:.1f} s, pm_evidence {pme_import}; {out['note']}"
    emit(_row(name, what, "cold", seed, **out, **extra))


# ------------------------------------------------------------------------------------ parent


class Runner:
    """Starts workers one at a time; ``stop()`` ends the one running (Ctrl-C)."""

    def __init__(self):
        self.process: subprocess.Popen | None = None

    def run(self, args: list[str], env: dict | None, report) -> tuple[list[dict], dict]:
        command = [sys.executable, os.path.abspath(__file__), *args]
        kids0, wall0 = _children_cpu(), time.perf_counter()
        rows = []
        with tempfile.TemporaryFile("w+") as err:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                start_new_session=True,  # Ctrl-C reaches the parent only; it ends the worker
            )  # fmt: skip
            for line in self.process.stdout:
                if line.startswith(RECORD):
                    row = json.loads(line[len(RECORD) :])
                    rows.append(row)
                    report(row)
            code = self.process.wait()
            self.process = None
            err.seek(0)
            tail = err.read()[-600:]
        proc = {"proc_wall_s": time.perf_counter() - wall0, "proc_cpu_s": _children_cpu() - kids0}
        if code != 0:
            print(f"  worker {args[1:3]} exited {code}: {tail}", file=sys.stderr, flush=True)
        return rows, proc

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def cold_env(folder: str) -> dict:
    """This environment with PyTensor's compile folders and numba's cache in ``folder`` (empty).

    Both ``base_compiledir`` and ``compiledir`` are set: PyTensor's Numba backend keeps its
    cache of compiled functions in ``base_compiledir / "numba"``
    (``pytensor.link.numba.cache.NUMBA_CACHE_PATH``), not under ``compiledir`` nor in
    ``NUMBA_CACHE_DIR``, so ``compiledir=`` alone leaves the model's compiled code warm.
    """
    env = dict(os.environ)
    base, numba_dir = os.path.join(folder, "pytensor"), os.path.join(folder, "numba")
    compiledir = os.path.join(base, "compiledir")
    os.makedirs(compiledir)
    os.makedirs(numba_dir)
    flags = [f for f in env.get("PYTENSOR_FLAGS", "").split(",") if f and "compiledir" not in f]
    env["PYTENSOR_FLAGS"] = ",".join(
        [*flags, f"base_compiledir={base}", f"compiledir={compiledir}"]
    )
    env["NUMBA_CACHE_DIR"] = numba_dir
    return env


def pickled_model(name: str, folder: str) -> str:
    """The zoo model ``name`` pickled (cloudpickle) into ``folder``: the path of the file."""
    import cloudpickle

    model_file = os.path.join(folder, "model.pkl")
    with open(model_file, "wb") as f:
        cloudpickle.dump(entry_of(name).build()[0], f)
    return model_file


def load_model(model_file: str):
    """A model pickled by :func:`pickled_model`, loaded without importing pm_evidence."""
    import cloudpickle

    with open(model_file, "rb") as f:
        return cloudpickle.load(f)


def run_warm(runner: Runner, name: str, seed: int, method: str, report) -> list[dict]:
    """One worker's first and warm calls of ``method``; SMC's model travels pickled."""
    folder = tempfile.mkdtemp(prefix="latency-warm-")
    try:
        args = ["--worker", "warm", name, "--seed", str(seed), "--methods", method]
        if method == "smc":  # see worker_warm
            args += ["--model-file", pickled_model(name, folder)]
        rows, _ = runner.run(args, None, report)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def run_cold(runner: Runner, name: str, seed: int, what: str, report) -> list[dict]:
    folder = tempfile.mkdtemp(prefix="latency-cold-")
    try:
        args = ["--worker", "cold", name, "--seed", str(seed), "--what", what]
        if what == "smc":  # the model travels pickled: see worker_cold
            args += ["--model-file", pickled_model(name, folder)]
        rows, proc = runner.run(args, cold_env(folder), lambda row: None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for row in rows:
        if row["method"] in ("auto", "smc"):
            row.update(proc)
        report(row)
    return rows


# ------------------------------------------------------------------------------------ output


def _num(value) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def add_ratios_and_errors(rows: list[dict], golds: dict[str, float]) -> None:
    by_key = {(r["model"], r["method"], r["mode"], r["seed"]): r for r in rows}
    for row in rows:
        gold = golds.get(row["model"], math.nan)
        row["gold"] = gold
        if math.isfinite(_num(row["log_z"])):
            row["error"] = row["log_z"] - gold
        if row["method"] == "auto":
            smc = by_key.get((row["model"], "smc", row["mode"], row["seed"]))
            if smc is not None:
                for col, ratio in (("wall_s", "wall_ratio"), ("cpu_s", "cpu_ratio")):
                    if _num(smc[col]) > 0:
                        row[ratio] = row[col] / smc[col]


def _median(values) -> float:
    values = [v for v in map(_num, values) if math.isfinite(v)]
    return statistics.median(values) if values else math.nan


def median_rows(rows: list[dict]) -> list[dict]:
    """One row per (model, method, mode): the median over repeats of the numeric columns."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["model"], row["method"], row["mode"]), []).append(row)
    out = []
    for group in groups.values():
        row = dict(group[0])
        if len(group) > 1:
            for col in COLUMNS:
                if isinstance(row[col], float) and col != "gold":
                    row[col] = _median(r[col] for r in group)
            row["repeat"] = f"median of {len(group)}"
        out.append(row)
    return out


def _f(value, spec: str) -> str:
    value = _num(value)
    return format(value, spec) if math.isfinite(value) else ""


HEADER = (
    f"{'model':26s} {'method':18s} {'mode':5s} {'wall_s':>7s} {'cpu_s':>7s} {'share':>6s} "
    f"{'error':>8s} {'SE':>7s} {'rel':>5s} {'wall/smc':>8s} {'cpu/smc':>7s} {'import':>6s}  note"
)


def format_row(row: dict) -> str:
    reliable = "" if row["reliable"] == "" else ("yes" if row["reliable"] else "NO")
    share = _f(_num(row["share"]) * 100, ".0f")
    return (
        f"{row['model']:26s} {row['method']:18s} {row['mode']:5s} {_f(row['wall_s'], '7.2f'):>7s} "
        f"{_f(row['cpu_s'], '7.2f'):>7s} {(share + '%') if share else '':>6s} "
        f"{_f(row['error'], '+8.4f'):>8s} {_f(row['se'], '7.4f'):>7s} {reliable:>5s} "
        f"{_f(row['wall_ratio'], '8.2f'):>8s} {_f(row['cpu_ratio'], '7.2f'):>7s} "
        f"{_f(row['import_s'], '6.1f'):>6s}  {str(row['note'])[:90]}"
    )


def _sort_key(row: dict, models: list[str]):
    mode_order = {"first": 0, "warm": 1, "cold": 2}
    method = row["method"]
    if method.startswith("stage:"):
        stage = method[6:]
        rank = 2 + (STAGE_ORDER.index(stage) if stage in STAGE_ORDER else len(STAGE_ORDER))
    else:
        rank = 0 if method == "auto" else 1
    model_rank = models.index(row["model"]) if row["model"] in models else len(models)
    return (model_rank, mode_order.get(row["mode"], 3), rank, str(row["seed"]))


def summary(rows: list[dict]) -> list[str]:
    """Medians over models of the ratios auto/SMC and of the stage shares."""
    lines = ["Medians over models (of each model's median over repeats):"]
    table = median_rows(rows)
    for mode in ("first", "warm", "cold"):
        autos = [r for r in table if r["method"] == "auto" and r["mode"] == mode]
        if not autos:
            continue
        wall, cpu = _median(r["wall_ratio"] for r in autos), _median(r["cpu_ratio"] for r in autos)
        a_wall = _median(r["wall_s"] for r in autos)
        s_wall = _median(r["wall_s"] for r in table if r["method"] == "smc" and r["mode"] == mode)
        lines.append(
            f"  {mode:5s}: wall auto/SMC {_f(wall, '.2f')}, CPU auto/SMC {_f(cpu, '.2f')} "
            f"(median wall: auto {_f(a_wall, '.2f')} s, SMC {_f(s_wall, '.2f')} s; "
            f"{len(autos)} models)"
        )
    for mode in ("warm", "cold"):
        stages = [r for r in table if r["method"].startswith("stage:") and r["mode"] == mode]
        names = sorted({r["method"][6:] for r in stages} - {"sum"}, key=_stage_rank)
        share = {(r["model"], r["method"][6:]): r["share"] for r in stages}
        models = sorted({r["model"] for r in stages})
        if names:  # a stage a model did not run is 0% of its call
            shares = ", ".join(
                f"{n} {_f(100 * _median(share.get((m, n), 0.0) for m in models), '.0f')}%"
                for n in names
            )
            lines.append(f"  stage shares ({mode}, {len(models)} models): {shares}")
    smc_first = {
        r["model"]: r["wall_s"] for r in table if r["method"] == "smc" and r["mode"] == "first"
    }
    with_import = [
        (r["wall_s"] + r["import_s"]) / smc_first[r["model"]]
        for r in table
        if r["method"] == "auto" and r["mode"] == "first" and r["import_s"] != ""
        and r["model"] in smc_first
    ]  # fmt: skip
    if with_import:
        lines.append(
            f"  first, counting pm_evidence's import (PyMC's is counted for neither): wall "
            f"auto/SMC {_f(_median(with_import), '.2f')}"
        )
    imports = [r["import_s"] for r in table if r["method"] == "auto" and r["mode"] == "cold"]
    smc_imports = [r["import_s"] for r in table if r["method"] == "smc" and r["mode"] == "cold"]
    if imports:
        lines.append(
            f"  cold import: pymc + pm_evidence {_f(_median(imports), '.1f')} s, "
            f"pymc alone {_f(_median(smc_imports), '.1f')} s (medians)"
        )
    return lines


def _stage_rank(name: str) -> int:
    return STAGE_ORDER.index(name) if name in STAGE_ORDER else len(STAGE_ORDER)






def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--repeats", type=int, default=1, help="seeds seed..seed+N-1; medians")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-cold", action="store_true", help="skip the empty-cache children")
    parser.add_argument(
        "--cold-stages", action="store_true", help="also run the stages alone from empty caches"
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"CSV (default {OUT})")
    parser.add_argument("--list", action="store_true", help="list the default models and exit")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--what", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--model-file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--methods", nargs="+", default=["auto", "smc"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        kind, name = args.worker
        if kind == "warm":
            worker_warm(name, args.seed, args.methods, args.model_file)
        else:
            worker_cold(name, args.seed, args.what, args.model_file)
        return 0

    entries = [entry_of(name) for name in args.models]  # unknown names fail here, before work
    golds = {e.name: e.gold().log_z for e in entries}
    if args.list:
        for e in entries:
            print(f"{e.name:26s} gold log Z {golds[e.name]:.6f}  tags {sorted(e.tags)}")
        return 0

    seeds = [args.seed + r for r in range(args.repeats)]
    print(f"latency: models {args.models}, seeds {seeds}, cold {'no' if args.no_cold else 'yes'}")
    print(f"{source_line()}; {os.cpu_count()} CPUs; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)  # fmt: skip
    runner = Runner()
    rows: list[dict] = []
    t0 = time.perf_counter()

    def report(row):
        row["repeat"] = seeds.index(row["seed"]) if row["seed"] in seeds else ""
        rows.append(row)
        wall = _f(row["wall_s"], ".2f")
        log_z = _f(row["log_z"], ".4f")
        print(f"    {row['method']:18s} {row['mode']:5s} {wall:>7s} s  {log_z}", flush=True)

    def stop_on_term(signum, frame):  # `kill` stops the run as Ctrl-C does
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop_on_term)
    interrupted = False
    try:
        for i, name in enumerate(args.models):
            print(f"[{i + 1}/{len(args.models)}] {name} (gold {golds[name]:.4f}), "
                  f"{time.perf_counter() - t0:.0f} s so far", flush=True)  # fmt: skip
            for seed in seeds:  # each method and seed in its own process: a "first" call
                for method in ("auto", "smc"):
                    run_warm(runner, name, seed, method, report)
            if args.no_cold:
                continue
            for seed in seeds:
                whats = ["auto", "smc"] + (["stages"] if args.cold_stages else [])
                for what in whats:
                    run_cold(runner, name, seed, what, report)
            write_csv(rows, args.out, COLUMNS)
    except KeyboardInterrupt:
        interrupted = True
        runner.stop()
        print("\nInterrupted (Ctrl-C): the rows finished so far follow.", flush=True)

    add_ratios_and_errors(rows, golds)
    rows.sort(key=lambda r: _sort_key(r, args.models))
    print(f"\nwall time of the run {time.perf_counter() - t0:.0f} s; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")  # fmt: skip
    print(HEADER)
    for row in median_rows(rows):
        print(format_row(row))
    print()
    for line in summary(rows):
        print(line)
    write_csv(rows, args.out, COLUMNS)
    print(f"\nCSV written to {args.out}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
