"""Gibbs blocks found from the model (issue 21 part 6): the interaction graph from mixed second
differences, its colouring, and the blocked sampler on an exactly solvable MRF."""

from __future__ import annotations

import numpy as np
import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.model.log_density import LogDensity
from pm_evidence.tempering.blocks import (
    colour_blocks,
    detection_evaluations,
    gibbs_blocks,
    interaction_graph,
)
from pm_evidence.zoo import energy, testing


def _as_sets(blocks):
    return sorted(tuple(int(i) for i in b) for b in blocks)


def _check_colouring(adjacency, blocks):
    """The blocks cover every site once and no block holds an edge."""
    joined = np.sort(np.concatenate(blocks))
    assert np.array_equal(joined, np.arange(adjacency.shape[0]))
    for block in blocks:
        assert not adjacency[np.ix_(block, block)].any()


@pytest.fixture(scope="module")
def mrf_4x4():
    mrf = energy.grid_mrf(4, 4, sigma_p=0.5, seed=0)
    model = mrf.to_pymc(name="mrf_4x4")
    return mrf, model, LogDensity.for_model(model)


# ---------------------------------------------------------------------- interaction graph
def test_grid_mrf_gives_its_checkerboard(mrf_4x4):
    mrf, _, target = mrf_4x4
    finding = gibbs_blocks(target.evaluate, target.dim, np.random.default_rng(0))
    assert _as_sets(finding.blocks) == _as_sets(energy.checkerboard_blocks(mrf.shape))
    assert finding.n_evaluations == detection_evaluations(16) == 32 * (1 + 16 + 120)
    assert "2 blocks" in finding.how and "24 interacting pairs" in finding.how  # 2 * 4 * 3 edges


def test_fully_coupled_model_gives_single_sites():
    d = 7
    weights = np.triu(np.random.default_rng(1).normal(0, 1, (d, d)), 1)
    adjacency = interaction_graph(
        lambda x: np.einsum("ni,ij,nj->n", x, weights, x), d, np.random.default_rng(2)
    )
    assert adjacency.sum() == d * (d - 1)  # every pair, both directions
    assert _as_sets(colour_blocks(adjacency)) == [(i,) for i in range(d)]


def test_model_without_couplings_gives_one_block():
    bias = np.random.default_rng(3).normal(0, 1, 9)
    finding = gibbs_blocks(lambda x: x @ bias + 100.0, 9, np.random.default_rng(4))
    assert _as_sets(finding.blocks) == [tuple(range(9))]


def test_three_site_term_and_any_term_and_non_finite_states_count_as_interactions():
    def terms(x):  # a 3-site term in the second output only; x5 = x6 = 1 is outside the support
        third = 0.7 * x[:, 0] * x[:, 1] * x[:, 2]
        outside = np.where((x[:, 5] == 1) & (x[:, 6] == 1), -np.inf, 0.0)
        return x.sum(axis=1) + outside, third

    adjacency = interaction_graph(terms, 8, np.random.default_rng(5))
    edges = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(adjacency)), strict=True)}
    assert edges == {(0, 1), (0, 2), (1, 2), (5, 6)}


def test_tolerance_is_relative_to_the_scale_of_the_density():
    def log_f(x):  # a coupling of 1e-12 on a density of size 1e3: rounding, not an interaction
        return 1e3 + x.sum(axis=1) + 1e-12 * x[:, 0] * x[:, 1]

    assert not interaction_graph(log_f, 4, np.random.default_rng(6)).any()


def test_colouring_is_proper_and_two_colours_a_bipartite_graph():
    rng = np.random.default_rng(7)
    random_graph = np.triu(rng.random((30, 30)) < 0.2, 1)
    random_graph = random_graph | random_graph.T
    _check_colouring(random_graph, colour_blocks(random_graph))
    # an RBM's layers: complete bipartite between sites 0-3 and 4-8
    rbm = np.zeros((9, 9), dtype=bool)
    rbm[:4, 4:] = True
    rbm = rbm | rbm.T
    assert _as_sets(colour_blocks(rbm)) == [(0, 1, 2, 3), (4, 5, 6, 7, 8)]
    odd_cycle = np.roll(np.eye(5, dtype=bool), 1, axis=1)
    odd_cycle = odd_cycle | odd_cycle.T
    assert len(colour_blocks(odd_cycle)) == 3


def test_detection_is_skipped_when_it_would_cost_too_much():
    def never(x):
        raise AssertionError("evaluated although the detection was to be skipped")

    finding = gibbs_blocks(never, 400, np.random.default_rng(0))  # 2.56 million evaluations
    assert finding.blocks is None and finding.n_evaluations == 0
    assert "one site at a time" in finding.how and "400 sites" in finding.how


# ---------------------------------------------------------------------- in the plan
def test_plan_finds_blocks_for_kernel_auto_only(mrf_4x4):
    _, _, target = mrf_4x4
    state = np.random.get_state()[1].copy()  # noqa: NPY002 (the legacy global RNG is the point)
    auto = pme.make_plan(target, random_seed=1, progressbar=False)
    assert np.array_equal(np.random.get_state()[1], state)  # noqa: NPY002 (untouched)
    assert auto.kernel.name == "gibbs" and len(auto.kernel.blocks) == 2
    assert auto.kernel_reason.startswith("gibbs: 2 blocks")
    # the search is charged to the plan's set-up
    assert auto.n_setup_evaluations == auto.pilot.n_evaluations + detection_evaluations(16)
    again = pme.make_plan(target, random_seed=1, progressbar=False)
    assert np.array_equal(auto.pilot.log_z, again.pilot.log_z)  # reproducible
    single = pme.make_plan(
        target, pme.PathOptions(kernel="gibbs", n_pilot_chains=8), random_seed=1,
        progressbar=False,
    )  # fmt: skip
    assert len(single.kernel.blocks) == 16 and "one site at a time" in single.kernel_reason
    asked = pme.make_plan(
        target, pme.PathOptions(kernel="gibbs", blocks="auto", n_pilot_chains=8),
        random_seed=1, progressbar=False,
    )  # fmt: skip
    assert len(asked.kernel.blocks) == 2
    with pytest.raises(EvidenceInputError, match="blocks='auto' finds Gibbs blocks of binary"):
        pme.make_plan(target, pme.PathOptions(kernel="gwg", blocks="auto"), progressbar=False)
    with pytest.raises(EvidenceInputError, match="blocks must be 'auto'"):
        pme.make_plan(target, pme.PathOptions(blocks="checkerboard"), progressbar=False)


def test_categorical_model_keeps_single_sites():
    model, _ = testing.categorical_chain(n=3)
    plan = pme.make_plan(model, pme.PathOptions(n_pilot_chains=8), random_seed=0, progressbar=False)
    assert len(plan.kernel.blocks) == 3 and "one site at a time" in plan.kernel_reason


def test_blocked_sampler_matches_exact_log_z(mrf_4x4):
    mrf, model, _ = mrf_4x4
    exact = mrf.exact_model_log_z()
    results = pme.marginal_likelihood(
        model, method=["ais", "rts"], random_seed=3, progressbar=False, target_se=0.01
    )
    for ev in results.values():
        assert ev.diagnostics["n_gibbs_blocks"] == 2
        assert ev.diagnostics["kernel_reason"].startswith("gibbs: 2 blocks")
        assert abs(ev.log_z - exact) < 4 * ev.se, (ev.method, ev.log_z, exact, ev.se)
