"""Work sized to the device: on an accelerator the samplers move ``ACCELERATOR_WIDTH`` times
the CPU's chains (AIS's first batch, the tempered chains, the exploration's particles, batched
HMC's chains), options the user gave are kept, and the result records the width. No GPU is
needed: an adapter whose backend says it runs on one is sized as one."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.model.backend import ACCELERATOR_WIDTH, Backend
from pm_evidence.model.batched_hmc import WIDE_DRAWS, BatchedHMCSettings
from pm_evidence.model.log_density import LogDensity
from pm_evidence.path import path_estimators
from pm_evidence.search.exploration import ExplorationOptions
from pm_evidence.tempering import samplers
from pm_evidence.zoo.testing import zoo

GPU = Backend("jax", "cuda:0 (NVIDIA H200)", "auto")


def test_only_an_accelerator_is_wide():
    assert Backend("numba", "cpu", "auto").width == 1
    assert Backend("jax", "cpu:0", "jax").width == 1  # JAX on the CPU: the CPU's chains
    assert GPU.width == ACCELERATOR_WIDTH > 1
    assert GPU.diagnostics()["parallel_width"] == ACCELERATOR_WIDTH


def test_default_chains_grow_with_the_width_and_given_ones_are_kept():
    w = ACCELERATOR_WIDTH
    assert pme.AnnealingOptions().sized(1).chains_first == 100
    assert pme.AnnealingOptions().sized(w).chains_first == 100 * w
    assert pme.AnnealingOptions(first_batch=40).sized(w).chains_first == 40
    assert pme.AnnealingOptions(n_chains=30).sized(w).chains_first == 30
    assert pme.TemperingOptions().sized(1).n_chains == 1000
    assert pme.TemperingOptions().sized(w).n_chains == 1000 * w
    assert pme.TemperingOptions(n_chains=50).sized(w).n_chains == 50
    assert BatchedHMCSettings.sized(1) == BatchedHMCSettings()
    wide = BatchedHMCSettings.sized(w)
    assert (wide.chains, wide.draws) == (16 * w, max(WIDE_DRAWS, 512 // w))
    assert wide.chains * wide.draws > BatchedHMCSettings().chains * BatchedHMCSettings().draws
    assert BatchedHMCSettings.sized(w, chains=8, draws=64).chains == 8
    assert BatchedHMCSettings.sized(w, chains=8).draws == BatchedHMCSettings().draws
    assert ExplorationOptions().particles_for(10, w) == 512 * w
    assert ExplorationOptions(n_particles=300).particles_for(10, w) == 300
    assert ExplorationOptions().most_particles(w) == 2048 * w
    given = ExplorationOptions(max_particles=1000)  # given: a cap on both, whatever the width
    assert (given.particles_for(10, w), given.most_particles(w)) == (1000, 1000)
    assert ExplorationOptions().particles_for(2, 1) == 2048  # the CPU's, as before


def _on_a_gpu(model) -> LogDensity:
    """An adapter of ``model`` that runs on Numba but is sized as on a GPU."""
    target = LogDensity(model, backend="numba")
    target.backend = GPU
    return target


def test_a_wide_device_runs_more_chains_at_once_and_the_answer_stands():
    (entry,) = zoo(["normal_mean"])
    model, gold = entry.build()
    target = _on_a_gpu(model)
    ais = pme.marginal_likelihood(target, method="ais", random_seed=2, progressbar=False)
    assert ais.diagnostics["parallel_width"] == ACCELERATOR_WIDTH
    assert ais.diagnostics["n_chains"] >= 100 * ACCELERATOR_WIDTH
    assert abs(ais.log_z - gold) < 4 * ais.se
    pilot = pme.make_plan(target, random_seed=2, progressbar=False).pilot
    assert pilot.final.x.shape[0] == 128 * ACCELERATOR_WIDTH
    given = pme.make_plan(target, pme.PathOptions(n_pilot_chains=40), random_seed=2,
                          progressbar=False).pilot  # fmt: skip
    assert given.final.x.shape[0] == 40
    bridge = pme.marginal_likelihood(target, method="bridge", random_seed=2, progressbar=False)
    wide = BatchedHMCSettings.sized(ACCELERATOR_WIDTH)
    assert bridge.diagnostics["draws_chains"] == wide.chains
    extended = 1 + bridge.diagnostics["draws_extensions"]
    assert bridge.diagnostics["draws_per_chain"] == wide.draws * extended
    assert abs(bridge.log_z - gold) < 4 * bridge.se
    assert np.isfinite(bridge.se) and bridge.se > 0


def _spy_on_device(monkeypatch, name: str = "device_annealing") -> list:
    """Whether each run of the test found its loop on the device (``samplers.<name>``:
    ``device_annealing`` for AIS's rungs, ``device_tempering`` for the tempered sweeps)."""
    used, real = [], getattr(samplers, name)

    def spy(*args):
        found = real(*args)
        used.append(found is not None)
        return found

    monkeypatch.setattr(samplers, name, spy)
    return used


def test_on_an_accelerator_hmc_transitions_are_compiled_from_the_first(monkeypatch):
    """On a GPU every HMC transition of the samplers is one compiled call (the reference's
    density on the device too), from the first transition of a run (the pilot's, here); on a
    CPU only after ``FUSE_AFTER_POINT_TRANSITIONS`` points, so a short run makes none. AIS
    then anneals on the device (``device_annealing``), with the right answer."""
    (entry,) = zoo(["normal_mean"])
    model, gold = entry.build()
    used = _spy_on_device(monkeypatch)
    for target, compiled in ((LogDensity(model, backend="numba"), False), (_on_a_gpu(model), True)):
        plan = pme.make_plan(target, random_seed=3, progressbar=False)
        assert bool(plan.path.bound_transitions) is compiled  # the pilot's transitions
        run = pme.run_annealing(
            plan, pme.AnnealingOptions(n_chains=200, target_se=None), rng=np.random.default_rng(3),
            progressbar=False,
        )  # fmt: skip
        ais = path_estimators.ais(run)
        assert abs(ais.log_z - gold) < 4 * ais.se
        assert used[-1] is compiled  # AIS's rungs on the device only on the GPU


@pytest.mark.parametrize("field", ["first_batch", "n_chains"])
def test_chain_counts_must_be_positive(field):
    with pytest.raises(pme.EvidenceInputError, match=field):
        pme.AnnealingOptions(**{field: 0})
    with pytest.raises(pme.EvidenceInputError, match="n_chains"):
        pme.TemperingOptions(n_chains=0)


def test_a_pilot_of_too_few_chains_is_refused_by_name():
    (entry,) = zoo(["normal_mean"])
    with pytest.raises(pme.EvidenceInputError, match="n_pilot_chains"):
        pme.make_plan(entry.build()[0], pme.PathOptions(n_pilot_chains=0), progressbar=False)


def test_raise_keeps_the_cpus_chains_on_a_wide_device():
    """RAISE is one batch from the posterior draws the plan holds: not sized to the device."""
    (entry,) = zoo(["normal_mean"])
    model, _ = entry.build()
    ev = pme.marginal_likelihood(_on_a_gpu(model), method="raise", random_seed=1,
                                 progressbar=False)  # fmt: skip
    assert ev.diagnostics["n_chains"] == pme.AnnealingOptions().chains_first == 100


def test_auto_on_every_gpu_path_on_jax_cpu(monkeypatch):
    """``auto`` at defaults with a JAX adapter that says it runs on a GPU (JAX on this CPU): the
    wide sizing, batched HMC's steps in chunks, the transitions compiled from the first and
    AIS's rungs on the device, all at once, within 4 SEs of the exact log Z."""
    pytest.importorskip("jax")
    (entry,) = zoo(["normal_mean"])
    model, gold = entry.build()
    target = LogDensity(model, backend="jax")
    target.backend = GPU
    used = _spy_on_device(monkeypatch)
    ev = pme.marginal_likelihood(target, random_seed=1, progressbar=False)
    assert used and all(used)
    assert ev.diagnostics["parallel_width"] == ACCELERATOR_WIDTH
    assert ev.diagnostics["draws_chains"] == BatchedHMCSettings.sized(ACCELERATOR_WIDTH).chains
    assert ev.diagnostics["auto_other_method"] == "ais"  # the check: AIS, annealed on the device
    assert ev.reliable and abs(ev.log_z - gold) < 4 * ev.se


def test_on_an_accelerator_rts_sweeps_on_the_device(monkeypatch):
    """On a GPU the simulated-tempering sweeps of RTS, TI and MBAR run on the device
    (``device_tempering``: the transitions and the rung moves, ``TEMPERING_CHUNK_SWEEPS`` to a
    call); on a CPU they do not. Both give the exact log Z within 4 of their SEs."""
    pytest.importorskip("jax")
    (entry,) = zoo(["normal_mean"])
    model, gold = entry.build()
    used = _spy_on_device(monkeypatch, "device_tempering")
    options = pme.TemperingOptions(n_chains=200, record=True)
    for target, on_device in ((LogDensity(model, backend="numba"), False),
                              (_on_a_gpu(model), True)):  # fmt: skip
        plan = pme.make_plan(target, random_seed=4, progressbar=False)
        run = pme.run_tempering(plan, options, rng=np.random.default_rng(4), progressbar=False)
        assert used and all(u is on_device for u in used)
        used.clear()
        for estimate in (path_estimators.rts(run), path_estimators.mbar(run)):
            assert abs(estimate.log_z - gold) < 4 * estimate.se
