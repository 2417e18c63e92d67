"""Options of the model-level estimators (issue 22): option objects or their fields by name give
the same result, and deprecated keywords still work with a FutureWarning naming the new one."""

from __future__ import annotations

import warnings

import pytest

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError


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


def test_reference_in_a_list_is_every_methods_bridge_included(case):
    """In a list, a field given by name goes to every method that has it: ``reference=`` is
    bridge's too, and each result is the method's alone (its own stream)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        listed = pme.marginal_likelihood(
            **case, method=["bridge", "is"], reference="warp3", n_reference=2000,
            progressbar=False,
        )  # fmt: skip
    _same(listed["bridge"], pme.bridge_sampling(**case, reference="warp3", n_reference=2000))
    _same(listed["is"], pme.importance_sampling(**case, reference="warp3", n_reference=2000))
    assert listed["bridge"].method == "bridge_warp3"


def test_marginal_likelihood_takes_the_posterior_option_objects(case):
    """``posterior=`` and ``bridge=`` reach the methods on posterior draws that take them, as
    ``path=`` reaches the path methods; a field by name replaces the object's value."""
    posterior = pme.PosteriorOptions(reference="warp3", n_reference=1500)
    bridge = pme.BridgeOptions(repetitions=2)
    listed = pme.marginal_likelihood(
        **case, method=["bridge", "ds"], posterior=posterior, bridge=bridge, n_reference=1000,
        progressbar=False,
    )  # fmt: skip
    _same(
        listed["bridge"],
        pme.bridge_sampling(**case, reference="warp3", repetitions=2, n_reference=1000),
    )
    _same(listed["ds"], pme.discriminance_sampling(**case, posterior=posterior, n_reference=1000))


def test_marginal_likelihood_proposal_is_deprecated_and_keeps_its_meaning(case):
    """``proposal=`` was bridge's reference alone in a list: it still is (over ``reference=``,
    which the other methods take), with a FutureWarning naming ``reference=``."""
    message = (
        r"marginal_likelihood\(proposal=\.\.\.\) is deprecated and will be removed: pass "
        r"reference='warp3' instead"
    )
    with pytest.warns(FutureWarning, match=message):
        listed = pme.marginal_likelihood(
            **case, method=["bridge", "is"], proposal="warp3", reference="normal",
            n_reference=2000, progressbar=False,
        )  # fmt: skip
    _same(listed["bridge"], pme.bridge_sampling(**case, reference="warp3", n_reference=2000))
    _same(listed["is"], pme.importance_sampling(**case, reference="normal", n_reference=2000))
    with pytest.warns(FutureWarning, match=message):
        alone = pme.marginal_likelihood(
            **case, method="bridge", proposal="warp3", n_reference=2000, progressbar=False
        )
    _same(alone, listed["bridge"])
    # a method list without bridge refuses it, as any option no listed method takes
    with pytest.raises(
        EvidenceInputError, match=r"Unexpected options \[.proposal.\] for is; accepted here"
    ):
        pme.marginal_likelihood(**case, method="is", proposal="warp3")


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


def test_auto_gives_reference_to_its_path_method_alone(case):
    """``method="auto"`` hands ``reference=`` to its path method only (as
    ``path=PathOptions(reference=...)``): bridge keeps its normal fitted to the draws, so the
    pair shares no reference; each half is the method's result alone."""
    auto = pme.marginal_likelihood(**case, reference="prior", progressbar=False)
    bridge = pme.marginal_likelihood(**case, method="bridge", progressbar=False)
    ais = pme.marginal_likelihood(**case, method="ais", reference="prior", progressbar=False)
    assert bridge.diagnostics["proposal"] == "normal" and ais.diagnostics["reference"] == "prior"
    pair = {auto.method: auto.log_z, auto.diagnostics["auto_other_method"]:
            auto.diagnostics["auto_other_log_z"]}  # fmt: skip
    assert pair == {"bridge": bridge.log_z, "ais": ais.log_z}
    assert auto.diagnostics["exploration"].startswith("skipped: a reference or path options")
