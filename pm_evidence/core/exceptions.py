"""Domain exceptions raised by pm_evidence (after pymbar's ``ParameterError`` / ``ConvergenceError``)."""


class EvidenceInputError(ValueError):
    """Bad input at the public boundary: the message names the problem and the fix."""


class NonFiniteLogDensityError(EvidenceInputError):
    """The log-density is NaN (or +inf, or -inf at a posterior draw) where it must be finite."""


class OverlapError(EvidenceInputError):
    """The reference and the target do not overlap: the estimating equation has no unique root."""


class ConvergenceError(RuntimeError):
    """An iterative solver did not converge; no estimate is returned."""


class EstimationFailedError(RuntimeError):
    """Every stage of a call that runs several (``method="auto"``, a list of methods) failed;
    the message says what each stage tried and why it failed."""
