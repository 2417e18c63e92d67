"""Every public method against its row of the method registry (no model is run)."""

from __future__ import annotations

import ast
import inspect
from functools import partial

import pytest

import pm_evidence as pme
from pm_evidence import registry
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.options import SAMPLE_KEYS, field_names
from pm_evidence.core.utils import STAGES
from pm_evidence.path import path_estimators

ROWS = list(registry.REGISTRY.values())


def _function(estimate):
    return estimate.func if isinstance(estimate, partial) else estimate


def test_methods_are_the_rows_in_order():
    assert pme.METHODS == ("auto", *(row.name for row in ROWS))
    assert pme.PATH_METHODS == tuple(row.name for row in ROWS if row.family == "path")
    assert len({row.name for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_row_matches_the_package(row):
    public = getattr(pme, row.function)
    assert row.function in pme.__all__ and callable(public)
    assert row.stream in STAGES
    classes = row.option_classes
    assert all(name in pme.__all__ for name in (cls.__name__ for cls in classes.values()))
    # the function's signature names its option objects and NUTS options; the fields of the
    # objects come by name (**fields)
    parameters = inspect.signature(public).parameters
    assert all(k in parameters for k in (*row.objects, *SAMPLE_KEYS, *row.own))
    assert all(f not in parameters for cls in classes.values() for f in field_names(cls))
    if row.family == "posterior":
        assert _function(row.estimate) is public
        assert row.run is None and not row.records_draws and not row.needs_posterior
    else:
        assert row.family == "path"
        assert row.estimate is getattr(path_estimators, row.estimate.__name__)
        assert row.estimate.__name__ in path_estimators.__all__
        assert row.run in registry.RUN_KINDS and row.stream == row.run
        kind = registry.RUN_KINDS[row.run]
        assert classes == {"path": pme.PathOptions, kind.keyword: kind.options}
        follow_up = inspect.signature(row.estimate).parameters
        assert all(option in follow_up for option in row.own)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_the_function_takes_the_keywords_of_its_row(row):
    """Every model-level function refuses an unknown keyword before touching the model (None
    here), listing what it accepts: exactly ``row.keywords``."""
    with pytest.raises(EvidenceInputError, match=r"Unexpected options \['no_such_option'\]") as err:
        getattr(pme, row.function)(None, no_such_option=1)
    accepted = ast.literal_eval(str(err.value).split("accepted here: ", 1)[1].rstrip("."))
    assert set(accepted) == row.keywords


def test_every_public_estimator_has_a_row():
    """A public function that takes a model and returns an Evidence is some method's."""
    functions = {row.function for row in ROWS}
    for name in pme.__all__:
        obj = getattr(pme, name)
        if not inspect.isfunction(obj) or name == "marginal_likelihood":
            continue
        signature = inspect.signature(obj)
        first = next(iter(signature.parameters), None)
        if first == "model" and signature.return_annotation in ("Evidence", pme.Evidence):
            assert name in functions, name


def test_bias_directions():
    assert [registry.bias_of(m) for m in ("is", "ais", "ris", "raise")] == [
        "lower bound", "lower bound", "upper bound", "upper bound",
    ]  # fmt: skip
    assert registry.bias_of("bridge_warp3") == registry.bias_of("smc") == "no definite sign"


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(EvidenceInputError, match=r"'chib' but it must be one of \['auto', 'is'"):
        registry.method("chib")
