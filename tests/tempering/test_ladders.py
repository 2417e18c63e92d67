"""Ladders of inverse temperatures and their validation (``pm_evidence.tempering.ladders``)."""

from __future__ import annotations

import numpy as np
import pytest

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.tempering.ladders import make_ladder


def test_ladders_and_their_validation():
    for kind in ("linear", "geometric", "sigmoid"):
        betas = make_ladder(kind, 50)
        assert betas.size == 50 and betas[0] == 0 and betas[-1] == 1
        assert np.all(np.diff(betas) > 0)
    assert make_ladder("geometric", 10_000).size == 10_000
    with pytest.raises(EvidenceInputError, match="between 2 and 10000"):
        make_ladder("linear", 1)
    with pytest.raises(EvidenceInputError, match="start at 0, end at 1"):
        make_ladder([0.0, 0.5, 0.4, 1.0])
    with pytest.raises(EvidenceInputError, match="must be one of"):
        make_ladder("cosine", 10)
