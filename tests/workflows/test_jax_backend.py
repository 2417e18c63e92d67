"""Every model of the zoo (pm_evidence.zoo.testing.ZOO; the first half here, the rest in
test_jax_backend_zoo.py) on the JAX backend, at defaults: within max(4 SE, 0.05) of its gold
log Z or flagged, and within 4 combined SEs of the Numba backend's answer for the same seed;
every method and Gibbs-with-gradients on JAX; rows split over several devices. JAX runs on this
machine's CPU here (CI has no GPU): the same code that runs on a GPU, where only the device
differs (pm_evidence.model.backend)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

import pm_evidence as pme
from pm_evidence.zoo.testing import ZOO
from tests.zoo_support import JAX_ZOO_SEED, assert_jax_matches_gold_and_numba, jax_zoo_params

pytest.importorskip("jax")

SEED = JAX_ZOO_SEED
# the zoo in two modules, so that the two workers of the test run share it (--dist loadfile)
FIRST_HALF = ZOO[: len(ZOO) // 2]


@pytest.mark.parametrize("entry", jax_zoo_params(FIRST_HALF))
def test_zoo_model_on_jax_against_its_gold_and_numba(entry):
    assert_jax_matches_gold_and_numba(entry)


SHARDED = """
import numpy as np, jax, pm_evidence as pme
from pm_evidence.zoo.testing import zoo
(entry,) = zoo(["poisson_regression"])
model, _ = entry.build()
ev = pme.marginal_likelihood(model, method="rts", random_seed=1, progressbar=False, backend="jax")
# bridge on batched HMC's draws: its leapfrog steps in chunks on the devices
on_draws = pme.marginal_likelihood(
    model, method="bridge", random_seed=1, progressbar=False, backend="jax"
)
# the exploration's particles kept on the devices (a backend that says it runs on a GPU)
from pm_evidence.model.backend import Backend
from pm_evidence.model.log_density import LogDensity
from pm_evidence.search.exploration import ExplorationOptions, explore
(mixture,) = zoo(["label_switching_mixture"])
target = LogDensity(mixture.build()[0], backend="jax")
target.backend = Backend("jax", "cuda:0 (stand-in)", "jax")
found = explore(target, np.random.default_rng(3), ExplorationOptions(max_particles=512))
print(len(jax.devices()), repr(ev.log_z), repr(ev.se), repr(on_draws.log_z), repr(found.log_z))
"""


def test_rows_sharded_over_several_devices_give_the_one_device_result():
    """Two devices (JAX's CPU split in two by XLA_FLAGS) against one, in fresh processes; the
    exploration's particles kept on the devices included."""
    lines = []
    for flags in ("", "--xla_force_host_platform_device_count=2"):
        done = subprocess.run(
            [sys.executable, "-c", SHARDED], capture_output=True, text=True, check=True,
            env={**os.environ, "XLA_FLAGS": flags},
        )  # fmt: skip
        lines.append(done.stdout.split())
    (one, log_z_1, se_1, bridge_1, explored_1), (two, log_z_2, se_2, bridge_2, explored_2) = lines
    assert (one, two) == ("1", "2")
    assert float(log_z_1) == pytest.approx(float(log_z_2), abs=1e-12)
    assert float(explored_1) == pytest.approx(float(explored_2), abs=1e-9)
    assert float(bridge_1) == pytest.approx(float(bridge_2), abs=1e-12)
    assert float(se_1) == pytest.approx(float(se_2), rel=1e-9)


def _entry(name):
    return next(e for e in ZOO if e.name == name)


def test_every_method_in_one_list_on_jax():
    """Each method of pm_evidence.METHODS but auto, on the JAX backend, one call: within 4 of
    its own SEs of the gold (or flagged)."""
    entry = _entry("normal_halfnormal_sigma")
    model, gold = entry.build()
    methods = [m for m in pme.METHODS if m != "auto"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = pme.marginal_likelihood(
            model, method=methods, random_seed=SEED, progressbar=False, backend="jax"
        )
    assert sorted(results) == sorted(methods)
    for name, ev in results.items():
        assert ev.diagnostics["backend"] == "jax", name
        assert abs(ev.log_z - gold) < 4 * ev.se + 1e-3 or not ev.reliable, (name, ev)


def test_gibbs_with_gradients_on_jax():
    """The relaxed gradient of an all-binary model (Gibbs-with-gradients) on JAX."""
    model, gold = _entry("bernoulli_only").build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = pme.marginal_likelihood(
            model, method="rts", kernel="gwg", random_seed=SEED, progressbar=False, backend="jax"
        )
    assert ev.diagnostics["backend"] == "jax" and ev.diagnostics["kernel"] == "gwg"
    assert abs(ev.log_z - gold) < 4 * ev.se + 1e-3
