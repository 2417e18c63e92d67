"""Golden values: ``log Z`` and its SE to 1e-12 (the last bits) for ``auto``, ``bridge``, ``ais`` and
``rts`` on three zoo models at ``random_seed=7`` (issue 34's guard rail: a refactoring changes no
number). Recorded at commit 7bc9e28 and unchanged by the layers redesign; floating-point results
depend on the machine (BLAS, CPU), so this runs with the slow tests on the project's machines.
"""

from __future__ import annotations

import pytest

import pm_evidence as pme
from pm_evidence.zoo.testing import ZOO

GOLDEN = {
    ("normal_halfnormal_sigma", "bridge"): ("bridge", -38.5500774691871, 0.0015480091499193453),
    ("normal_halfnormal_sigma", "ais"): ("ais", -38.55336759810859, 0.004439114200318922),
    ("normal_halfnormal_sigma", "rts"): ("rts", -38.55248059008471, 0.0007489113140689209),
    ("normal_halfnormal_sigma", "auto"): ("bridge", -38.5500774691871, 0.0015480091499193453),
    ("hierarchical_noncentered", "bridge"): ("bridge", -31.037924334193285, 0.005133230415954731),
    ("hierarchical_noncentered", "ais"): ("ais", -31.03398434113881, 0.004334903616171823),
    ("hierarchical_noncentered", "rts"): ("rts", -31.035743374978352, 0.0027069095032122826),
    ("hierarchical_noncentered", "auto"): ("ais", -31.039692951097855, 0.004815803153469031),
    ("label_switching_mixture", "bridge"): ("bridge", -85.50112166097767, 0.00022136043414628157),
    ("label_switching_mixture", "ais"): ("ais", -85.49920821293934, 0.0016152140263161053),
    ("label_switching_mixture", "rts"): ("rts", -85.5013933478324, 0.00017593853486865506),
    ("label_switching_mixture", "auto"): ("ais", -85.5080740470421, 0.004211530789306923),
}


@pytest.mark.slow
@pytest.mark.parametrize(("model_name", "method"), sorted(GOLDEN))
def test_golden_log_z(model_name, method):
    model, _ = next(e for e in ZOO if e.name == model_name).build()
    ev = pme.marginal_likelihood(model, method=method, random_seed=7, progressbar=False)
    method_used, log_z, se = GOLDEN[(model_name, method)]
    # to 1e-12: the last bit depends on the process's history (measured: bridge's SE ended in
    # ...453 when bridge ran first in the process, ...455 after auto); LogDensity picks its
    # compiled function by what it compiled before (issue 34, step 5)
    assert ev.method == method_used
    assert ev.log_z == pytest.approx(log_z, rel=1e-12, abs=0)
    assert ev.se == pytest.approx(se, rel=1e-12, abs=0)
