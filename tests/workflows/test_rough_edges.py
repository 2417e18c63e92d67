"""Rough edges of issue 33: compare_models' worker start-up, reprs, RAISE/AIS wording, plots."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
import types
from concurrent.futures.process import BrokenProcessPool

import pytest

import pm_evidence
from pm_evidence import Evidence
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.parallel import ModelComparison, WorkerStartup

PYTHON = sys.executable

# Two tiny models of the same 20 points; compare_models with the default pool, no guard.
NO_GUARD_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import pymc as pm
    import pm_evidence

    y = np.random.default_rng(0).normal(size=20)


    def make(sd):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, sd)
            pm.Normal("y", mu, 1.0, observed=y)
        return model


    result = pm_evidence.compare_models(
        {"A": make(1.0), "B": make(10.0)}, method="bridge", random_seed=1, progressbar=False
    )
    for name, failure in result.failures.items():
        print("FAILURE", name, failure)
    """
)


# ------------------------------------------------------------------------ item 8: start-up


def test_script_on_stdin_is_refused_before_the_pool_starts():
    run = subprocess.run(
        [PYTHON, "-"], input=NO_GUARD_SCRIPT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    assert "EvidenceInputError" in run.stderr
    assert "'<stdin>', which is not a file" in run.stderr
    assert 'if __name__ == "__main__":' in run.stderr
    assert 'executor="serial"' in run.stderr
    assert "BrokenProcessPool" not in run.stderr


def test_main_module_without_a_file_is_refused_in_process(monkeypatch):
    main = types.ModuleType("__main__")
    main.__file__ = "<stdin>"
    monkeypatch.setitem(sys.modules, "__main__", main)
    with pytest.raises(EvidenceInputError, match=r"'<stdin>', which is not a file.*serial"):
        pm_evidence.compare_models({"A": _tiny_model()}, progressbar=False)


def test_a_main_module_with_no_file_at_all_is_not_refused(monkeypatch):
    # a notebook or python -c: the workers do not import the main module
    from pm_evidence.parallel import check_main_importable

    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    check_main_importable(multiprocessing.get_context("spawn"))


def test_a_pool_broken_before_any_worker_started_says_why():
    startup = WorkerStartup(multiprocessing.get_context("spawn"))
    why = startup.explain(BrokenProcessPool("terminated abruptly"))
    assert why.startswith("the pool's worker processes died while starting, before any model ran")
    assert 'if __name__ == "__main__":' in why and 'executor="serial"' in why
    startup.event.set()  # a worker got through its start: the pool broke running a model
    assert startup.explain(BrokenProcessPool("terminated abruptly")) is None
    assert startup.explain(RuntimeError("other")) is None


@pytest.mark.slow
def test_script_without_the_guard_records_why(tmp_path):
    # about 15 s: every worker imports PyMC before it dies
    script = tmp_path / "no_guard.py"
    script.write_text(NO_GUARD_SCRIPT)
    run = subprocess.run(
        [PYTHON, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    failures = [line for line in run.stdout.splitlines() if line.startswith("FAILURE")]
    assert len(failures) == 2, run.stdout + run.stderr
    for line in failures:
        assert "died while starting, before any model ran" in line
        assert 'if __name__ == "__main__":' in line and 'executor="serial"' in line


# ------------------------------------------------------------------------ item 8: repr


def _tiny_model():
    import numpy as np
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(0.0), np.float64(1.0))
        pm.Normal("y", mu, np.float64(1.0), observed=np.zeros(3))
    return model


def _evidence(log_z, digest):
    return Evidence(log_z, 0.01, "bridge", observed_fingerprint=(("y", (20,), digest),))


def test_repr_shows_log_bf_for_models_of_the_same_data():
    result = ModelComparison({"A": _evidence(-27.0, "aa" * 8), "B": _evidence(-29.0, "aa" * 8)})
    text = repr(result)
    assert "log_bf" in text and "prob" in text
    assert "no log BF" not in text


def test_repr_leaves_out_log_bf_across_different_data_as_compare_does():
    result = ModelComparison({"A": _evidence(-27.0, "aa" * 8), "B": _evidence(-29.0, "bb" * 8)})
    with pytest.raises(EvidenceInputError, match="different observed data"):
        result.compare()
    text = repr(result)
    header = text.splitlines()[1]
    assert "log_z" in header and "log_bf" not in header and "prob" not in header
    assert "-27.0" in text and "-29.0" in text
    (why,) = [line for line in text.splitlines() if line.startswith("no log BF")]
    assert "'A' and 'B' were fitted to different observed data" in why
    assert "check_data=False" in why


# ------------------------------------------------------------------------ item 9a: short reprs


@pytest.fixture(scope="module")
def small_plan():
    from pm_evidence.zoo.testing import normal_mean

    model, _ = normal_mean()
    return pm_evidence.make_plan(
        pm_evidence.LogDensity(model),
        pm_evidence.PathOptions(reference="prior", n_pilot_chains=32),
        random_seed=1,
        progressbar=False,
    )


def test_plan_repr_is_short_and_names_reference_kernel_and_pilot(small_plan):
    text = repr(small_plan)
    assert len(text.splitlines()) <= 8
    assert text.startswith(f"PathPlan: dim {small_plan.target.dim}")
    assert "reference: prior" in text and "kernel: hmc" in text
    assert f"pilot: {small_plan.pilot.betas.size} rungs" in text
    assert "array(" not in text


def test_run_reprs_are_short_and_give_rungs_and_chains(small_plan):
    import numpy as np

    from pm_evidence.path import runs

    rng = np.random.default_rng(0)
    annealing = runs.run_annealing(
        small_plan,
        runs.AnnealingOptions(n_chains=20, n_rungs=10, target_se=None),
        rng=rng,
        progressbar=False,
    )
    text = repr(annealing)
    assert text.startswith("AnnealingRun: forward (AIS), dim 1, 10 rungs, 20 chains")
    assert "stopped by fixed" in text and "reference: prior" in text
    assert len(text.splitlines()) <= 10 and "array(" not in text
    tempering = runs.run_tempering(
        small_plan,
        runs.TemperingOptions(
            n_chains=20, n_sweeps=20, n_rungs=10, n_init_sweeps=5, target_se=None, min_sweeps=1
        ),
        rng=rng,
        progressbar=False,
    )
    text = repr(tempering)
    assert text.startswith("TemperingRun: dim 1, 10 rungs, 20 chains, 20 sweeps per chain")
    assert len(text.splitlines()) <= 10 and "array(" not in text


# ------------------------------------------------------------------------ item 9b: AIS / RAISE


def _method_set(ais_log_z, raise_log_z):
    return pm_evidence.EvidenceSet(
        {"ais": Evidence(ais_log_z, 0.002, "ais"), "raise": Evidence(raise_log_z, 0.001, "raise")}
    )


def test_summary_calls_ais_a_lower_bound_and_raise_no_bound():
    bias = _method_set(-39.882, -39.879).summary()["bias"]
    assert bias["ais"] == "stochastic lower bound"
    assert "not a bound" in bias["raise"] and "upper bound" not in bias["raise"]


@pytest.mark.parametrize(
    ("ais", "raise_", "reversed_"), [(-39.882, -39.879, False), (-39.882, -39.8855, True)]
)
def test_sandwich_prints_lower_before_upper_each_labelled(ais, raise_, reversed_):
    results = _method_set(ais, raise_)
    assert results.sandwich == (ais, raise_)  # the property keeps its (AIS, RAISE) order
    (line,) = [x for x in repr(results).splitlines() if x.startswith("AIS and RAISE")]
    low, high = sorted([(ais, "AIS"), (raise_, "RAISE")])
    assert line.index(f"({low[1]})") < line.index(f"({high[1]})")
    assert line.index(f"{low[0]:.4f}"[:-1]) < line.index(f"{high[0]:.4f}"[:-1])
    assert ("the reverse of the order expected" in line) == reversed_
    assert "upper bound" not in line


# ------------------------------------------------------------------------ item 9c: BF plot


def test_plot_bayes_factor_prints_small_errors_with_significant_digits():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ev1 = Evidence(-27.1569, 0.0025, "bridge")
    ev0 = Evidence(-29.4195, 0.0001, "bridge")
    ax = pm_evidence.plot_bayes_factor(ev1, ev0)
    label = ax.get_xlabel()
    assert "± 0.00 " not in label
    assert "2.2626 ± 0.0049 (95% interval)" in label  # 1.96 * hypot(0.0025, 0.0001)
    matplotlib.pyplot.close("all")


def test_plot_bayes_factor_labels_the_models():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ev1 = Evidence(-10.0, 0.3, "bridge")
    ev0 = Evidence(-12.5, 0.2, "bridge", model_name="wide")
    ax = pm_evidence.plot_bayes_factor(ev1, ev0)  # a model_name where there is one
    assert "log Z(H1) - log Z(wide)" in ax.get_xlabel()
    ax = pm_evidence.plot_bayes_factor(ev1, ev0, labels=("pooled", "separate"))
    assert "log Z(pooled) - log Z(separate)" in ax.get_xlabel()
    assert "favours separate" in ax.get_title() and "favours pooled" in ax.get_title()
    with pytest.raises(EvidenceInputError, match="labels must be two non-empty strings"):
        pm_evidence.plot_bayes_factor(ev1, ev0, labels="pooled")
    with pytest.raises(EvidenceInputError, match="labels must be two non-empty strings"):
        pm_evidence.plot_bayes_factor(ev1, ev0, labels=("pooled",))
    matplotlib.pyplot.close("all")
