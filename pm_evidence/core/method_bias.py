"""Which way each method's ``log Z`` errs in expectation: data that the result type
(:mod:`pm_evidence.core.evidence`) and the method table (:mod:`pm_evidence.registry`) both read.

An unbiased estimate of ``Z`` (IS, AIS) gives a ``log Z`` biased low by Jensen's inequality: a
stochastic lower bound. An unbiased estimate of ``1/Z`` gives one biased high, but only where
the identity holds exactly: reverse IS needs exact posterior draws, and RAISE's reverse chains
start from posterior draws (seed 004 §3.2), so from MCMC draws neither is a bound.
"""

from __future__ import annotations

__all__ = ["BIAS", "LOWER_BOUND", "NO_DEFINITE_SIGN", "UPPER_BOUND", "bias_of", "bias_words"]

LOWER_BOUND = "lower bound"
UPPER_BOUND = "upper bound"
NO_DEFINITE_SIGN = "no definite sign"

# method name (the label of its results) -> bias direction; every other label has none
BIAS = {"is": LOWER_BOUND, "ris": UPPER_BOUND, "ais": LOWER_BOUND, "raise": UPPER_BOUND}


def bias_of(label: str) -> str:
    """The bias direction of the method whose results carry ``label`` (``"no definite
    sign"`` for any other label, e.g. ``"bridge_warp3"`` or ``"smc"``)."""
    return BIAS.get(label, NO_DEFINITE_SIGN)


def bias_words(label: str) -> str:
    """The bias of a result's ``method`` label in words that hold for the draws it had
    (:meth:`~pm_evidence.EvidenceSet.summary`)."""
    bias = bias_of(label)
    if bias == LOWER_BOUND:
        return "stochastic lower bound"
    if bias == UPPER_BOUND:  # E[1/Z_hat] = 1/Z for exact posterior draws only
        if label == "raise":
            return "upward if reverse chains good; not a bound"
        return "upward if draws exact; not a bound"
    return bias
