"""The second half of the zoo on the JAX backend (the first half, and what the check is, in
test_jax_backend.py): two modules, so that the two workers of the test run share the zoo."""

from __future__ import annotations

import pytest

from pm_evidence.zoo.testing import ZOO
from tests.zoo_support import assert_jax_matches_gold_and_numba, jax_zoo_params

pytest.importorskip("jax")

SECOND_HALF = ZOO[len(ZOO) // 2 :]


@pytest.mark.parametrize("entry", jax_zoo_params(SECOND_HALF))
def test_zoo_model_on_jax_against_its_gold_and_numba(entry):
    assert_jax_matches_gold_and_numba(entry)
