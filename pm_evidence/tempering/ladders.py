"""Inverse-temperature ladders ``0 = beta_1 < ... < beta_K = 1`` for annealing and tempering.

The ladder fixes the intermediate densities ``f_beta = p0^(1 - beta) f^beta`` (seed 004 eq. (2);
seed 001). When ``p0`` is the prior and the data are informative, most of the change happens at
small ``beta``; a geometric ladder (equal steps in ``log beta``) spends its rungs there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.utils import warn_user

__all__ = ["LADDERS", "Ladder", "make_ladder"]

LADDERS = ("geometric", "linear", "sigmoid")
MAX_RUNGS = 10_000


@dataclass(frozen=True)
class Ladder:
    """Rungs ``0 = beta_1 < ... < beta_K = 1`` with the kernel's step size and the pilot's
    ``log Z_beta`` at each, and how they were chosen (made by
    ``PathPlan.ladder``; the samplers move along it).

    Attributes
    ----------
    betas : numpy.ndarray (K,)
        The inverse temperatures.
    step_size : numpy.ndarray (K,)
        The kernel's step size at each rung, tuned by the pilot and then held fixed: HMC's
        leapfrog step size, or the random-walk proposal's scale (the size of a random-walk
        step; :mod:`~pm_evidence.tempering.kernels`); 1 for kernels that take none. The
        results report it as ``step_size``. It was ``tuning`` before (still readable, with a
        ``FutureWarning``).
    log_z_pilot : numpy.ndarray (K,)
        The pilot's ``log Z_beta - log Z_0`` interpolated to the rungs.
    how : str
        How the rungs were chosen.
    """

    betas: np.ndarray
    step_size: np.ndarray
    log_z_pilot: np.ndarray
    how: str

    @property
    def n_rungs(self) -> int:
        return int(self.betas.size)

    @property
    def tuning(self) -> np.ndarray:
        """Deprecated name of :attr:`step_size`."""
        warn_user(
            "Ladder.tuning is deprecated and will be removed: read Ladder.step_size instead.",
            FutureWarning,
        )
        return self.step_size

    def reversed(self) -> Ladder:
        """The same rungs from ``beta = 1`` down to 0 (reverse annealing)."""
        return Ladder(
            self.betas[::-1], self.step_size[::-1], self.log_z_pilot[::-1],
            f"{self.how}, reversed",
        )  # fmt: skip


def make_ladder(
    ladder: str | np.ndarray = "geometric",
    n_rungs: int = 100,
    *,
    beta_min: float = 1e-4,
    sigmoid_width: float = 4.0,
) -> np.ndarray:
    """Return ``K = n_rungs`` inverse temperatures from 0 to 1 (both included).

    Parameters
    ----------
    ladder : {"geometric", "linear", "sigmoid"} or array_like
        ``"linear"``: ``beta_k = k / (K - 1)``. ``"geometric"``: 0, then ``K - 1`` values
        log-spaced from ``beta_min`` to 1. ``"sigmoid"``: ``expit`` of ``K`` points evenly
        spaced on ``[-w, w]``, rescaled to ``[0, 1]`` (dense at both ends; Grosse et al. 2013).
        An array is validated and used as given.
    n_rungs : int
        Number of rungs ``K`` (2 to 10,000), ignored for an array.
    beta_min : float
        Smallest non-zero inverse temperature of the geometric ladder.
    sigmoid_width : float
        ``w`` of the sigmoid ladder.
    """
    if not isinstance(ladder, str):
        betas = np.asarray(ladder, dtype=float)
        _check_betas(betas)
        return betas
    if ladder not in LADDERS:
        raise EvidenceInputError(
            f"Requested ladder {ladder!r} but it must be one of {list(LADDERS)} or an array of "
            f"inverse temperatures from 0 to 1."
        )
    if not 2 <= int(n_rungs) <= MAX_RUNGS:
        raise EvidenceInputError(f"n_rungs must be between 2 and {MAX_RUNGS}, got {n_rungs}.")
    n_rungs = int(n_rungs)
    if ladder == "linear":
        betas = np.linspace(0.0, 1.0, n_rungs)
    elif ladder == "geometric":
        if not 0 < beta_min < 1:
            raise EvidenceInputError(f"beta_min must be in (0, 1), got {beta_min}.")
        betas = np.concatenate([[0.0], np.geomspace(beta_min, 1.0, n_rungs - 1)])
    else:
        s = expit(np.linspace(-sigmoid_width, sigmoid_width, n_rungs))
        betas = (s - s[0]) / (s[-1] - s[0])
    betas[0], betas[-1] = 0.0, 1.0
    return betas


def _check_betas(betas: np.ndarray) -> None:
    if betas.ndim != 1 or betas.size < 2 or betas.size > MAX_RUNGS:
        raise EvidenceInputError(
            f"A ladder must be a 1-D array of 2 to {MAX_RUNGS} inverse temperatures, got shape "
            f"{betas.shape}."
        )
    if betas[0] != 0.0 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
        raise EvidenceInputError(
            "A ladder must start at 0, end at 1 and increase strictly (0 = beta_1 < ... < "
            f"beta_K = 1); got {np.array2string(betas, threshold=8)}."
        )
