"""compare_models: the same log Z serially, on a local process pool and on a real Dask cluster;
failures reported per model; streams by position; Ctrl-C; input errors.

Kept cheap (each worker process compiles the models anew): two one-parameter models and a model
with nothing to integrate (it fails at once), importance sampling from the prior with 1000
draws (no NUTS).
"""

from __future__ import annotations

import concurrent.futures as cf
import pickle
import threading
import warnings

import numpy as np
import pymc as pm
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError

OPTIONS = {"method": "is", "reference": "prior", "n_reference": 1000}
SEED = 20261125


def _models() -> dict[str, pm.Model]:
    y = np.array([0.3, 1.1, 0.8, 1.9])
    models = {}
    for name, tau in (("narrow", 0.5), ("wide", 5.0)):
        with pm.Model() as model:
            mu = pm.Normal("mu", np.float64(0.0), np.float64(tau))
            pm.Normal("y", mu, np.float64(1.0), observed=y)
        models[name] = model
    with pm.Model() as empty:  # no free variable: marginal_likelihood refuses it at once
        pass
    models["empty"] = empty
    return models


@pytest.fixture(scope="module")
def models() -> dict[str, pm.Model]:
    return _models()


@pytest.fixture(scope="module")
def expected(models) -> dict[str, pme.Evidence]:
    """Each model alone, with the stream of its position: what every engine must return."""
    seeds = np.random.SeedSequence(SEED).spawn(len(models))
    return {
        name: pme.marginal_likelihood(
            models[name], random_seed=seeds[k], progressbar=False, **OPTIONS
        )
        for k, name in enumerate(["narrow", "wide"])
    }


def _run(models, executor, **kwargs) -> pme.ModelComparison:
    with pytest.warns(UserWarning, match=r"1 of 3 models failed .*'empty' \(EvidenceInputError"):
        return pme.compare_models(
            models, executor=executor, random_seed=SEED, progressbar=False, **OPTIONS, **kwargs
        )


def _check(result: pme.ModelComparison, expected) -> None:
    assert list(result) == ["narrow", "wide"]  # the order given, not the order finished
    for name, ev in expected.items():
        assert result[name].log_z == ev.log_z  # identical, not close
        assert result[name].se == ev.se
        assert result[name] == ev
    assert list(result.failures) == ["empty"]
    failure = result.failures["empty"]
    assert failure.error == "EvidenceInputError"
    assert "no free variables" in failure.message
    assert "marginal_likelihood" in failure.traceback  # written where it was raised


def test_serial_run_equals_each_model_alone_with_its_stream(models, expected, capfd):
    result = _run(models, "serial")
    _check(result, expected)
    assert capfd.readouterr() == ("", "")  # progressbar=False prints nothing at all
    assert result == _run(models, "serial")  # the same call, the same result
    assert pickle.loads(pickle.dumps(result)) == result  # a plain value


def test_local_process_pool_gives_the_same_log_z(models, expected):
    _check(_run(models, None, max_workers=2), expected)


def test_dask_cluster_gives_the_same_log_z(models, expected):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        _check(_run(models, client), expected)


def test_a_failing_model_is_reported_and_the_others_kept(models, expected, capfd):
    # an entry that cannot be sent to a worker fails alone, before any worker runs
    broken = {**models, "unpicklable": (models["wide"], threading.Lock())}
    with pytest.warns(UserWarning, match=r"2 of 4 models failed .*'empty'.*'unpicklable'"):
        result = pme.compare_models(broken, executor="serial", random_seed=SEED, **OPTIONS)
    assert list(result) == ["narrow", "wide"]
    assert result["narrow"] == expected["narrow"]  # positions 0 and 1 kept their streams
    assert "could not be pickled" in result.failures["unpicklable"].message
    assert "empty" not in result
    with pytest.raises(KeyError, match=r"'empty' failed .*EvidenceInputError"):
        result["empty"]
    table = result.compare()
    assert list(table.index) == ["narrow", "wide"]
    assert "failed:" in repr(result) and "'unpicklable'" in repr(result)
    # one line per model on stderr as it finishes, after one naming the engine
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 5 and "4 models" in lines[0] and "in this process" in lines[0]
    assert "[1/4] 'narrow' log Z = " in lines[1]
    assert "[3/4] 'empty' failed: EvidenceInputError" in lines[3]


def test_a_generator_seed_is_advanced_once_and_the_global_rng_untouched(models, expected):
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (the legacy global RNG is the point)
    result = _run_with(models, np.random.default_rng(1))
    assert result == _run_with(models, np.random.default_rng(1))
    assert result["narrow"].log_z != expected["narrow"].log_z  # another seed, another stream
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002 (untouched)


def _run_with(models, random_seed) -> pme.ModelComparison:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the failure of 'empty'
        return pme.compare_models(
            models, executor="serial", random_seed=random_seed, progressbar=False, **OPTIONS
        )


# --- Ctrl-C ----------------------------------------------------------------------------------


class _InterruptedAfterOne(cf.Executor):
    """Runs the first task here; the second ends with a Ctrl-C (as a pool worker hit by it
    does) a moment later; the others never start."""

    def __init__(self):
        self.futures = []

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        if not self.futures:
            future.set_result(fn(*args, **kwargs))
        elif len(self.futures) == 1:
            threading.Timer(0.3, future.set_exception, (KeyboardInterrupt(),)).start()
        self.futures.append(future)
        return future


def test_ctrl_c_keeps_what_finished_and_cancels_the_rest(models, expected):
    executor = _InterruptedAfterOne()
    with pytest.warns(UserWarning, match="interrupted"):
        result = pme.compare_models(
            models, executor=executor, random_seed=SEED, progressbar=False, **OPTIONS
        )
    assert dict(result) == {"narrow": expected["narrow"]}
    assert [f.error for f in result.failures.values()] == ["KeyboardInterrupt"] * 2
    assert executor.futures[2].cancelled()


def test_ctrl_c_before_any_model_finished_is_one_line(models):
    class Interrupted(cf.Executor):
        def submit(self, fn, /, *args, **kwargs):
            future = cf.Future()
            future.set_exception(KeyboardInterrupt())
            return future

    with pytest.raises(KeyboardInterrupt, match=r"compare_models.*no model had finished"):
        pme.compare_models(models, executor=Interrupted(), progressbar=False, **OPTIONS)


# --- input errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("models", "kwargs", "match"),
    [
        ({}, {}, "models is empty"),
        ([pm.Model()], {}, "must be a dict"),
        ({"M1": "not a model"}, {}, "Entry 'M1' of models is a str, not a pymc.Model"),
        ({1: pm.Model()}, {}, "non-empty strings"),
        ({"M1": pm.Model()}, {"executor": object()}, "submit method"),
        ({"M1": pm.Model()}, {"executor": "threads"}, "must be 'serial'"),
        ({"M1": pm.Model()}, {"method": ["is", "ris"]}, "one method on every model"),
        ({"M1": pm.Model()}, {"method": "warp3"}, "Requested method 'warp3'"),
        ({"M1": pm.Model()}, {"method": "is", "propsal": "warp3"}, "Unexpected options"),
        ({"M1": pm.Model()}, {"idata": None}, r"models=\{name: \(model, idata\)\}"),
        ({"M1": pm.Model()}, {"executor": "serial", "max_workers": 2}, "default process pool"),
        ({"M1": pm.Model()}, {"max_workers": 0}, "positive int"),
    ],
)
def test_bad_input_is_refused_before_any_work(models, kwargs, match):
    with pytest.raises(EvidenceInputError, match=match):
        pme.compare_models(models, progressbar=False, **kwargs)


def test_an_executor_whose_futures_are_not_concurrent_futures_is_refused():
    class Odd:
        def submit(self, fn, *args):
            return "a future?"

    with pytest.raises(EvidenceInputError, match=r"not a concurrent\.futures\.Future"):
        pme.compare_models({"M1": pm.Model()}, executor=Odd(), progressbar=False)
