"""Golden values: ``log Z`` and its SE to 1e-12 (the last bits) for ``auto``, ``bridge``, ``ais`` and
``rts`` on three zoo models at ``random_seed=7`` (issue 34's guard rail: a refactoring changes no
number). Recorded at commit 7bc9e28 and unchanged by the layers redesign; re-recorded on purpose
for issue 35, where the posterior draws became batched HMC (every value within 1.7 of its SE of
the gold; the ais and rts values moved because their plan's reference is fitted to those draws),
and for the hierarchical model again in issue 35's third step, where the compiled functions
took one input per value variable (its gradient changed in the last bits, and with it the
chains' paths; the four values within 2.0 of their SEs of the gold, -31.03624). Re-recorded
on 2026-11-27 for a fresh install (PyMC 6.4.0, PyTensor 3.3.8, numba 0.68.0, NumPy 2.5.5): the
previous values no longer came out, neither at issue 35's sixth step nor at the commit before
it (87934be), and those two give the same twelve values; the twelve within 2.03 of their SEs of the
exact or quadrature log Z, all reliable (``auto`` on the label-switching mixture now returns
bridge's estimate, 0.6 SE from the gold, where it returned AIS's).
Re-recorded on 2026-11-27 (issue 35, step 8) when the model's compiled functions were built with
numba's fast-math flags off (``pm_evidence.model.compile_mode.model_function``): with them on,
a function compiled from empty caches and one compiled against cached callees differed in their
last bits, so these values depended on the cache's state; now they do not. The twelve are within
1.8 of their SEs of the exact or quadrature log Z, all reliable, each method the same as before.
Re-recorded for the label-switching mixture in issue 35's step 16, where a log-sum-exp's
gradient became the softmax alone (``pm_evidence.model.graphs.softmax_gradients``: the same
gradient to 1e-13, and with it other chains' paths); its four values within 1.2 of their SEs of
the gold, -85.50135, all reliable, each method the same as before.
Re-recorded for ``auto`` on 2026-11-29, where batched HMC's chains began to start at the
exploration's particles (its draws then differ from a bridge call's, which does not explore):
the three within 1.22 of their SEs of the gold, all reliable, each method the same as before.
Re-recorded for ``ais`` on the half-normal model on 2026-11-29, where AIS began to size its
next batch from the Pareto-smoothed SE of its weights (``pm_evidence.path.runs``): -1.37 of its
SE from the gold, reliable.
Floating-point results depend on the machine (BLAS, CPU) and on whether PyTensor's numba cache
was warm (docs/benchmarks.rst, "After batched HMC draws"), so this runs with the slow tests on
the project's machines.
"""

from __future__ import annotations

import pytest

import pm_evidence as pme
from pm_evidence.zoo.testing import ZOO

GOLDEN = {
    ("hierarchical_noncentered", "ais"): ("ais", -31.039173173979375, 0.004745561625539677),
    ("hierarchical_noncentered", "auto"): ("bridge", -31.03929369539374, 0.002967117231133426),
    ("hierarchical_noncentered", "bridge"): ("bridge", -31.040004753050155, 0.0028753257088278417),
    ("hierarchical_noncentered", "rts"): ("rts", -31.040918477257463, 0.0026533855506956344),
    ("label_switching_mixture", "ais"): ("ais", -85.50096361174438, 0.0022263041814040273),
    ("label_switching_mixture", "auto"): ("bridge", -85.50113772939693, 0.00018631258859498257),
    ("label_switching_mixture", "bridge"): ("bridge", -85.50118058512413, 0.0002250316753798708),
    ("label_switching_mixture", "rts"): ("rts", -85.50165171729151, 0.0002599649021194213),
    ("normal_halfnormal_sigma", "ais"): ("ais", -38.558660012150895, 0.00444056833033959),
    ("normal_halfnormal_sigma", "auto"): ("bridge", -38.55372269845231, 0.0009379074443303482),
    ("normal_halfnormal_sigma", "bridge"): ("bridge", -38.55376166424426, 0.0007053695538840431),
    ("normal_halfnormal_sigma", "rts"): ("rts", -38.551789103253256, 0.0007520333009639352),
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
