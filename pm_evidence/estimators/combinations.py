"""Combinations of IS and reverse IS, the baselines of seed 000 §6.

All three combine ``log Z`` estimates; ``v`` below is the estimated variance of each ``log Z``
(the square of its standard error, which is the paper's ``v_is / n`` and ``v_ris / n``).

References
----------
seed 000 §6 "Setting": (1) naive averaging, (2) weighted averaging, (3) weighted selection.
"""

from __future__ import annotations

import numpy as np

from pm_evidence.core.methods import COMBINATION_RULES, check_choice
from pm_evidence.estimators.base import Estimate

__all__ = ["COMBINATION_RULES", "combine_is_ris_core"]



def combine_is_ris_core(is_estimate: Estimate, ris_estimate: Estimate, rule: str) -> Estimate:
    r"""Combine an IS and a reverse-IS estimate of ``log Z``.

    - ``"average"``: :math:`\log\hat Z_{avg} = (\log\hat Z_{is} + \log\hat Z_{ris})/2`;
    - ``"weighted"``: :math:`\log\hat Z_w = (v_{is}^{-1}\log\hat Z_{is} + v_{ris}^{-1}\log\hat Z_{ris})
      / (v_{is}^{-1} + v_{ris}^{-1})`;
    - ``"selection"``: the estimate with the smaller estimated variance.

    The estimates are treated as independent (they use different draws). The variance estimates
    inherit the failures of IS and reverse IS (seed 000 §6), so the reported SE of the weighted
    rules is only as trustworthy as those.
    """
    check_choice("rule", rule)
    a, b = is_estimate, ris_estimate
    va, vb = a.se**2, b.se**2
    diagnostics = {"log_z_is": a.log_z, "log_z_ris": b.log_z, "se_is": a.se, "se_ris": b.se}
    if rule == "average":
        return Estimate(0.5 * (a.log_z + b.log_z), 0.5 * float(np.hypot(a.se, b.se)), diagnostics)
    if rule == "weighted":
        if va == 0 or vb == 0:
            chosen = a if va == 0 else b
            return Estimate(chosen.log_z, chosen.se, diagnostics)
        wa, wb = 1 / va, 1 / vb
        log_z = (wa * a.log_z + wb * b.log_z) / (wa + wb)
        return Estimate(float(log_z), float(np.sqrt(1 / (wa + wb))), diagnostics)
    chosen = a if va < vb else b
    diagnostics["selected"] = "is" if va < vb else "ris"
    return Estimate(chosen.log_z, chosen.se, diagnostics)
