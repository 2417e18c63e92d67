"""On an accelerator the pilot's and the exploration's particles stay on the device for the whole
run: their HMC transitions, the exploration's jumps (proposals evaluated there, merged there),
the mixtures' densities at the particles and the resampling run where the particles are, and
what comes to the host is vectors of values, the points each half's mixture is fitted to, the
kept candidates and the final particles. With the same seed the run is the one whose particles
come back after every call, up to rounding. No GPU is needed: a JAX adapter whose backend says
it runs on one (JAX on this CPU)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.model.backend import Backend, is_on_device
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import MixtureReference, PriorReference
from pm_evidence.search import exploration, jumps
from pm_evidence.search.climbing import kept_candidates
from pm_evidence.tempering import pilot
from pm_evidence.tempering.compiled import device_mixture_density
from pm_evidence.tempering.path import GeometricPath, state_on_device
from pm_evidence.zoo.testing import zoo

pytest.importorskip("jax")

STAND_IN_GPU = Backend("jax", "cuda:0 (stand-in)", "jax")


def _stand_in_target(name: str) -> LogDensity:
    (entry,) = zoo([name])
    target = LogDensity(entry.build()[0], backend="jax")
    target.backend = STAND_IN_GPU
    return target


def _where_jumps_ran(monkeypatch) -> collections.Counter:
    """Counts of the exploration's jumps' evaluations by where the particles were."""
    seen, real = collections.Counter(), jumps.evaluated

    def spy(path, x, with_grad, resident):
        seen["device" if resident else "host"] += 1
        seen["moved particles' gradients"] += is_on_device(x)  # read where they are
        return real(path, x, with_grad, resident)

    monkeypatch.setattr(jumps, "evaluated", spy)
    return seen


@pytest.mark.parametrize(
    ("name", "values_apart"), [("gaussian_mixture_10d", False), ("label_switching_mixture", True)]
)
def test_the_exploration_and_the_pilot_keep_their_particles_on_the_device(
    monkeypatch, name, values_apart
):
    """``values_apart``: the model's values taken without its gradient (as on a Gaussian
    process), so the repeated jumps evaluate values only and the gradient once, at the
    particles that moved (their index padded to a few lengths on the device)."""
    target = _stand_in_target(name)
    target.values_apart = values_apart
    options = exploration.ExplorationOptions(max_particles=512)
    seen = _where_jumps_ran(monkeypatch)
    runs = []
    for resident in (True, False):
        if not resident:  # the same run with the particles back on the host after every call
            monkeypatch.setattr(exploration, "resident_chains", lambda kernel, path: False)
            monkeypatch.setattr(pilot, "resident_chains", lambda kernel, path: False)
        found = exploration.explore(
            target, np.random.default_rng(3), options, progressbar=False
        )  # fmt: skip
        plan = pme.make_plan(target, random_seed=3, progressbar=False)
        runs.append((found, plan.pilot))
        if resident:
            assert seen["device"] > 0 and seen["host"] == 0
            assert (seen["moved particles' gradients"] > 0) is values_apart
            seen.clear()
    assert seen["host"] > 0 and seen["device"] == 0
    (on_device, pilot_on_device), (on_host, pilot_on_host) = runs
    assert isinstance(on_device.particles, np.ndarray)  # back on the host at the end
    assert on_device.n_modes == on_host.n_modes >= 2
    np.testing.assert_allclose(on_device.particles, on_host.particles, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(on_device.log_z, on_host.log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(on_device.mixture.means, on_host.mixture.means, atol=1e-9)
    assert on_device.n_evaluations == on_host.n_evaluations
    assert isinstance(pilot_on_device.final.x, np.ndarray)
    np.testing.assert_allclose(pilot_on_device.final.x, pilot_on_host.final.x, atol=1e-9)
    np.testing.assert_allclose(pilot_on_device.log_z, pilot_on_host.log_z, atol=1e-9)


@pytest.mark.parametrize("df", [None, 5.0])
@pytest.mark.parametrize("n_components", [3, 9])
def test_a_mixtures_density_on_the_device_is_its_density(df, n_components):
    """Padded with empty components to a multiple of 8 (one compile serves every mixture of
    up to 8 components, and of 9 to 16), the density is the mixture's."""
    target = _stand_in_target("gaussian_mixture_10d")
    rng = np.random.default_rng(1)
    dim = target.dim
    chols = np.tril(rng.normal(0.0, 0.3, (n_components, dim, dim)), -1) + np.eye(dim)
    q = MixtureReference(
        rng.dirichlet(np.ones(n_components)), rng.normal(0.0, 2.0, (n_components, dim)), chols, df
    )
    x = q.sample(rng, 300)
    density = device_mixture_density(target, q)
    np.testing.assert_allclose(density(x), q.logpdf(x), rtol=1e-12, atol=1e-12)


def test_candidates_read_from_the_device_are_those_read_on_the_host():
    target = _stand_in_target("gaussian_mixture_10d")
    path = GeometricPath(target, PriorReference(target))
    rng = np.random.default_rng(2)
    state = path.evaluate(path.reference.sample(rng, 200))
    q = MixtureReference.single(np.asarray(state.x)[:50])
    earlier = (rng.normal(size=(5, target.dim)), np.zeros(5), np.linspace(-1.0, 30.0, 5))
    on_host = kept_candidates(earlier, state, q)
    device_state = state_on_device(state)
    assert is_on_device(device_state.x) and not is_on_device(state.x)
    log_q = jumps.mixture_density(path, q, device_state.x)
    on_device = kept_candidates(earlier, device_state, q, log_q)
    for a, b in zip(on_device, on_host, strict=True):
        assert isinstance(a, np.ndarray)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_the_pilots_gibbs_sweeps_keep_the_chains_on_the_device(monkeypatch):
    """A model of binary entries: the pilot's Gibbs sweeps run on the device, the chains kept
    there between sweeps; the same pilot as with the chains back on the host after each."""
    target = _stand_in_target("binary_field")
    seen, real = [], pilot.state_on_host

    def spy(state):
        seen.append(is_on_device(state.x))
        return real(state)

    monkeypatch.setattr(pilot, "state_on_host", spy)
    on_device = pme.make_plan(target, random_seed=4, progressbar=False).pilot
    assert seen == [True]
    monkeypatch.setattr(pilot, "resident_chains", lambda kernel, path: False)
    on_host = pme.make_plan(target, random_seed=4, progressbar=False).pilot
    assert seen == [True]  # not copied back: never on the device
    assert isinstance(on_device.final.x, np.ndarray)
    np.testing.assert_array_equal(on_device.final.x, on_host.final.x)
    np.testing.assert_allclose(on_device.log_z, on_host.log_z, rtol=1e-12, atol=1e-12)


def test_a_compound_models_chains_stay_on_the_device_and_give_the_hosts_answer(monkeypatch):
    """A model with continuous and discrete entries (``hmc+gibbs``: HMC on the continuous
    entries, its steps zero at the discrete ones, then the Gibbs sweep and the new point's
    gradient, all on the device): the pilot's chains stay on the device, AIS's rungs and the
    tempered sweeps run there 8 to a call, each run's chains copied back once; with the same
    seeds the runs of one transition a call, the chains back on the host after each, give
    the same log Z up to rounding, and both the exact one within 4 SEs."""
    from pm_evidence.path import path_estimators
    from pm_evidence.tempering import samplers

    (entry,) = zoo(["bernoulli_switch"])
    model, gold = entry.build()
    target = LogDensity(model, backend="jax")
    target.backend = STAND_IN_GPU
    seen = []
    for module in (pilot, samplers):
        real = module.state_on_host

        def spy(state, real=real):
            seen.append(is_on_device(state.x))
            return real(state)

        monkeypatch.setattr(module, "state_on_host", spy)
    answers = []
    for resident in (True, False):
        if not resident:
            for module in (pilot, samplers):
                monkeypatch.setattr(module, "resident_chains", lambda kernel, path: False)
            for loop in ("device_annealing", "device_tempering"):
                monkeypatch.setattr(samplers, loop, lambda *args: None)
        plan = pme.make_plan(target, random_seed=5, progressbar=False)
        assert plan.kernel.name == "hmc+gibbs"
        loops = [samplers.device_annealing(plan.kernel, plan.path, 1),
                 samplers.device_tempering(plan.kernel, plan.path, 1)]  # fmt: skip
        assert all(loop is not None for loop in loops) is resident
        annealed = pme.run_annealing(plan, pme.AnnealingOptions(n_chains=200, target_se=None),
                                     rng=np.random.default_rng(5), progressbar=False)  # fmt: skip
        tempered = pme.run_tempering(plan, pme.TemperingOptions(n_chains=200, n_sweeps=100,
                                                                target_se=None),
                                     rng=np.random.default_rng(5), progressbar=False)  # fmt: skip
        answers.append((path_estimators.ais(annealed), path_estimators.rts(tempered)))
        if resident:  # the pilot, AIS and the tempering each copied their chains back once
            assert len(seen) >= 3 and all(seen)
            seen.clear()
    assert not seen
    for on_device, on_host in zip(*answers, strict=True):
        np.testing.assert_allclose(on_device.log_z, on_host.log_z, rtol=1e-9, atol=1e-9)
        assert abs(on_device.log_z - gold) < 4 * on_device.se
