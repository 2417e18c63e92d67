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
Floating-point results depend on the machine (BLAS, CPU) and on whether PyTensor's numba cache
was warm (docs/benchmarks.rst, "After batched HMC draws"), so this runs with the slow tests on
the project's machines.
"""

from __future__ import annotations

import pytest

import pm_evidence as pme
from pm_evidence.zoo.testing import ZOO

GOLDEN = {
    ("hierarchical_noncentered", "ais"): ("ais", -31.029180937145227, 0.004970257804734196),
    ("hierarchical_noncentered", "auto"): ("bridge", -31.04161421284202, 0.002648822382145851),
    ("hierarchical_noncentered", "bridge"): ("bridge", -31.04161421284202, 0.002648822382145851),
    ("hierarchical_noncentered", "rts"): ("rts", -31.03963792259684, 0.0025456808280998854),
    ("label_switching_mixture", "ais"): ("ais", -85.4989558778649, 0.0013861869995403665),
    ("label_switching_mixture", "auto"): ("bridge", -85.50124356922258, 0.00016697613790975452),
    ("label_switching_mixture", "bridge"): ("bridge", -85.50124356922258, 0.00016697613790975452),
    ("label_switching_mixture", "rts"): ("rts", -85.50142834406768, 0.00014579319268409155),
    ("normal_halfnormal_sigma", "ais"): ("ais", -38.55000057342653, 0.004039991445346287),
    ("normal_halfnormal_sigma", "auto"): ("bridge", -38.55397254033131, 0.0007356691706490432),
    ("normal_halfnormal_sigma", "bridge"): ("bridge", -38.55397254033131, 0.0007356691706490432),
    ("normal_halfnormal_sigma", "rts"): ("rts", -38.5510777924537, 0.0007572447481626337),
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
