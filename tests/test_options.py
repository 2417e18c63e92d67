"""Options of the model-level estimators (issue 22): option objects or their fields by name give
the same result, and deprecated keywords still work with a FutureWarning naming the new one."""

from __future__ import annotations

import warnings

import pytest

import pm_evidence as pme
from pm_evidence.exceptions import EvidenceInputError


@pytest.fixture(scope="module")
def case(normal_mean_case):
    return {"model": normal_mean_case.model, "idata": normal_mean_case.idata, "random_seed": 3}


def _same(a: pme.Evidence, b: pme.Evidence) -> None:
    assert (a.method, a.log_z, a.se) == (b.method, b.log_z, b.se)


@pytest.mark.parametrize("old", ["proposal", "method"])
def test_bridge_reference_under_its_deprecated_names(case, old):
    new = pme.bridge_sampling(**case, reference="warp3", n_reference=2000)
    with pytest.warns(FutureWarning, match=rf"bridge_sampling\({old}=\.\.\.\) is deprecated and "
                      r"will be removed: pass reference='warp3'"):  # fmt: skip
        deprecated = pme.bridge_sampling(**case, **{old: "warp3"}, n_reference=2000)
    _same(deprecated, new)
    assert new.method == "bridge_warp3"


def test_a_deprecated_name_and_its_new_one_together_are_an_error(case):
    with pytest.raises(EvidenceInputError, match="reference= and its deprecated name proposal="):
        pme.bridge_sampling(**case, reference="normal", proposal="warp3")


def test_the_new_names_do_not_warn(case):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        pme.bridge_sampling(**case, reference="normal", n_reference=2000)


def test_marginal_likelihood_keeps_proposal_for_bridge(case):
    """In a list ``reference=`` goes to every other method, so bridge's is ``proposal=`` there,
    without a warning, and reaches ``bridge_sampling(reference=)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        listed = pme.marginal_likelihood(
            **case, method=["bridge", "is"], proposal="warp3", reference="normal",
            n_reference=2000, progressbar=False,
        )  # fmt: skip
    _same(listed["bridge"], pme.bridge_sampling(**case, reference="warp3", n_reference=2000))
    _same(listed["is"], pme.importance_sampling(**case, reference="normal", n_reference=2000))


def test_an_option_object_is_its_fields_by_name(case):
    posterior = pme.PosteriorOptions(reference="student_t", n_reference=1500)
    _same(
        pme.discriminance_sampling(**case, posterior=posterior),
        pme.discriminance_sampling(**case, reference="student_t", n_reference=1500),
    )
    bridge = pme.BridgeOptions(repetitions=2, tol=1e-8)
    _same(
        pme.bridge_sampling(**case, bridge=bridge, n_reference=1000),
        pme.bridge_sampling(**case, repetitions=2, tol=1e-8, n_reference=1000),
    )
    # a field given by name replaces the object's value
    _same(
        pme.discriminance_sampling(**case, posterior=posterior, n_reference=1000),
        pme.discriminance_sampling(**case, reference="student_t", n_reference=1000),
    )


def test_auto_reference_is_the_methods_default(case):
    is_auto = pme.importance_sampling(**case, n_reference=2000)
    _same(is_auto, pme.importance_sampling(**case, reference="student_t", n_reference=2000))
    assert is_auto.diagnostics["reference"] == "student_t"
    _same(
        pme.discriminance_sampling(**case, reference="auto", n_reference=2000),
        pme.discriminance_sampling(**case, reference="normal", n_reference=2000),
    )
    _same(
        pme.bridge_sampling(**case, reference="auto", n_reference=2000),
        pme.bridge_sampling(**case, reference="normal", n_reference=2000),
    )
