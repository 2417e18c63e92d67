"""The posterior plan: draws and symmetry search made once for every method on posterior draws."""

from __future__ import annotations

import pytest

import pm_evidence as pme
import pm_evidence.model.draws
import pm_evidence.model.modes
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.zoo import testing


@pytest.fixture
def count_searches(monkeypatch):
    calls = []
    search = pm_evidence.model.modes.find_symmetry

    def counted(*args, **kwargs):
        calls.append(1)
        return search(*args, **kwargs)

    monkeypatch.setattr(pm_evidence.model.modes, "find_symmetry", counted)
    monkeypatch.setattr(pm_evidence.model.draws, "find_symmetry", counted)
    return calls


def test_a_list_searches_the_draws_once(normal_mean_case, count_searches):
    methods = ["bridge", "ds", "is", "ris", "is_ris_selection"]
    results = pme.marginal_likelihood(
        normal_mean_case.model, idata=normal_mean_case.idata, method=methods, random_seed=3,
        progressbar=False,
    )  # fmt: skip
    assert len(count_searches) == 1
    assert list(results) == methods


def test_a_plan_gives_the_same_result_as_its_idata(normal_mean_case):
    model, idata = normal_mean_case.model, normal_mean_case.idata
    plan = pme.make_posterior_plan(model, idata)
    assert plan.draws.shape == (2, 1000, 1) and not plan.search.found
    for method in (pme.bridge_sampling, pme.reverse_importance_sampling):
        with_plan = method(model, idata=plan, random_seed=5, progressbar=False)
        assert with_plan == method(model, idata=idata, random_seed=5, progressbar=False)


def test_a_plan_of_another_model_is_refused(normal_mean_case):
    plan = pme.make_posterior_plan(normal_mean_case.model, normal_mean_case.idata)
    other, _ = testing.normal_mean(n=10)
    with pytest.raises(EvidenceInputError, match="made for another model"):
        pme.bridge_sampling(other, idata=plan, progressbar=False)
