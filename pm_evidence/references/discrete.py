"""References on discrete spaces: products of independent Bernoulli or categorical entries.

References
----------
seed 000 Fig. 2b (mean-field approximation); seed 004 §4.2 (the data base rate of RBMs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import special

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.references.base import Reference


@dataclass(frozen=True, eq=False)
class BernoulliProductReference(Reference):
    r"""Independent Bernoulli variables, ``p0(x) = prod_j sigma(l_j)^{x_j} sigma(-l_j)^{1 - x_j}``
    on ``x in {0, 1}^dim``, given by the logits ``l``.

    The uniform distribution (``l = 0``), a mean-field approximation (seed 000 Fig. 2b) and the
    data base rate distribution of RBMs (seed 004 §4.2) are of this form; see
    :mod:`pm_evidence.zoo.energy` for their constructors. ``logpdf`` is ``-inf`` off the binary
    points. ``grad_logpdf`` is that of the relaxed ``sum_j x_j log sigma(l_j) + (1 - x_j)
    log sigma(-l_j)``, i.e. ``l``, for gradient-informed flips.

    Parameters
    ----------
    logits : array_like, shape (dim,)
        Finite logits ``l_j`` of the success probabilities ``sigma(l_j)``; converted to a float
        array. ``from_probabilities`` builds them from (clipped) probabilities.
    name : str, default "bernoulli_product"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).

    Raises
    ------
    EvidenceInputError
        If ``logits`` is not 1-D or has a non-finite entry.
    """

    logits: np.ndarray
    name: str = "bernoulli_product"
    has_gradient: ClassVar[bool] = True  # of the relaxed log-density

    def __post_init__(self):
        logits = np.asarray(self.logits, dtype=float)
        if logits.ndim != 1 or not np.all(np.isfinite(logits)):
            raise EvidenceInputError(
                "BernoulliProductReference needs a 1-D array of finite logits (one per binary "
                "entry); clip probabilities away from 0 and 1 before taking logits."
            )
        object.__setattr__(self, "logits", logits)

    @classmethod
    def from_probabilities(cls, probs, *, clip: float = 1e-3, name: str = "bernoulli_product"):
        """From success probabilities, clipped to ``[clip, 1 - clip]`` so every state keeps
        positive mass (a reference must cover the target's support)."""
        probs = np.clip(np.asarray(probs, dtype=float), clip, 1.0 - clip)
        return cls(special.logit(probs), name=name)

    @property
    def dim(self) -> int:
        return self.logits.size

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        binary = np.all((x == 0.0) | (x == 1.0), axis=-1)
        with np.errstate(invalid="ignore"):  # inf - inf off the binary points (set to -inf)
            log_p = np.sum(x * -np.logaddexp(0.0, -self.logits) + (1.0 - x) * -np.logaddexp(
                0.0, self.logits), axis=-1)  # fmt: skip
        return np.where(binary, log_p, -np.inf)

    def grad_logpdf(self, x):
        return np.broadcast_to(self.logits, np.shape(x)).copy()

    def sample(self, rng, n):
        return (rng.random((n, self.dim)) < special.expit(self.logits)).astype(float)


@dataclass(frozen=True, eq=False)
class CategoricalProductReference(Reference):
    r"""Independent categorical entries, ``p0(x) = prod_j P_j(x_j)``, ``x_j in {0..L_j-1}``.

    ``log_probs`` has shape ``(dim, L)`` with ``L = max_j L_j``; row ``j`` holds the log
    probabilities of entry ``j``'s values, ``-inf`` past its ``L_j`` (each row normalized).
    ``logpdf`` is ``-inf`` off the grid of allowed values. :meth:`uniform` gives the uniform
    distribution over every entry's values, the reference of models with Categorical (and
    Bernoulli) free variables under ``reference="uniform"``.

    Parameters
    ----------
    log_probs : array_like, shape (dim, L)
        Log probabilities of each entry's values, ``-inf`` for values an entry does not have;
        every row must be normalized (``logsumexp`` over a row is 0), without NaN or ``+inf``.
    name : str, default "categorical_product"
        Name of the reference (reported as ``diagnostics["reference"]`` by the estimators).

    Raises
    ------
    EvidenceInputError
        If ``log_probs`` is not 2-D, has NaN or ``+inf``, or a row is not normalized.
    """

    log_probs: np.ndarray
    name: str = "categorical_product"

    def __post_init__(self):
        log_probs = np.asarray(self.log_probs, dtype=float)
        if log_probs.ndim != 2 or np.any(np.isnan(log_probs)) or np.any(log_probs == np.inf):
            raise EvidenceInputError(
                "CategoricalProductReference needs log probabilities of shape (dim, L) without "
                "NaN or +inf (-inf marks a value an entry does not have)."
            )
        if not np.allclose(special.logsumexp(log_probs, axis=1), 0.0, atol=1e-10):
            raise EvidenceInputError(
                "Each row of CategoricalProductReference.log_probs must be normalized "
                "(logsumexp over a row = 0)."
            )
        object.__setattr__(self, "log_probs", log_probs)

    @classmethod
    def uniform(cls, levels) -> CategoricalProductReference:
        """Uniform over ``0..L_j-1`` for each entry, from the numbers of values ``levels``."""
        levels = np.asarray(levels, dtype=int)
        if levels.ndim != 1 or np.any(levels < 1):
            raise EvidenceInputError("levels must be a 1-D array of positive integers.")
        values = np.arange(levels.max())
        log_probs = np.where(values < levels[:, None], -np.log(levels)[:, None], -np.inf)
        return cls(log_probs, name="uniform")

    @property
    def dim(self) -> int:
        return self.log_probs.shape[0]

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        n_levels = self.log_probs.shape[1]
        allowed = (x == np.round(x)) & (x >= 0) & (x < n_levels)
        index = np.where(allowed, x, 0).astype(int)
        terms = np.take_along_axis(
            np.broadcast_to(self.log_probs, (*x.shape[:-1], *self.log_probs.shape)),
            index[..., None],
            axis=-1,
        )[..., 0]
        return np.where(np.all(allowed, axis=-1), terms.sum(axis=-1), -np.inf)

    def sample(self, rng, n):
        cumulative = np.cumsum(np.exp(self.log_probs), axis=1)  # (dim, L)
        u = rng.random((n, self.dim, 1))
        values = (cumulative[None] <= u * cumulative[None, :, -1:]).sum(axis=2)
        return np.minimum(values, self.log_probs.shape[1] - 1).astype(float)
