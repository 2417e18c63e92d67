"""The work that stays on the CPU between an accelerator's calls, timed at a CPU's sizes and at
an accelerator's (``ACCELERATOR_WIDTH``, 16, times the particles and chains).

On a GPU the model's log density and gradient run on the device; the exploration's mixture
fits, the mixture's density at the particles, the resampling and the tempered samplers' moves
between rungs run on the host, and the device waits for them. Printed: the best of several
calls of each, for an exploration of 12 parameters whose particles sit in 4 modes (2,048 and
32,768 particles; a half's fit at most ``JUMP_FIT_POINTS`` points in the exploration itself)
and a tempered sweep over 32 rungs (1,000 and 16,000 chains).

Run from the repository root::

    python benchmarks/host_work.py
"""

from __future__ import annotations

import numpy as np
from run_records import best_of

from pm_evidence.model.backend import ACCELERATOR_WIDTH
from pm_evidence.search.mixtures import fit_gaussian_mixture, flattened
from pm_evidence.tempering.pilot import systematic_resample
from pm_evidence.tempering.samplers import beta_conditional, draw_categorical

DIM = 12
N_RUNGS = 32


def exploration_rung(rng, n: int) -> None:
    """A rung's host work at ``n`` particles: a half's mixture (components given, then searched
    by BIC), the mixture's density at every particle, systematic resampling."""
    x = np.concatenate([rng.normal(m, 1 + m / 10, size=(n // 4, DIM)) for m in (0, 4, 8, 12)])
    rng.shuffle(x)
    half = x[: n // 2]
    given = best_of(lambda: fit_gaussian_mixture(half, np.random.default_rng(1), 32, 4, False), 5)
    searched = best_of(lambda: fit_gaussian_mixture(half, np.random.default_rng(1), 32, 4, True), 3)
    q = flattened(fit_gaussian_mixture(half, np.random.default_rng(1), 32, 4, True))
    density = best_of(lambda: q.logpdf(x), 5)
    weights = rng.random(n)
    resampling = best_of(
        lambda: systematic_resample(np.random.default_rng(2), weights / weights.sum()), 5
    )
    print(
        f"{n:6d} particles: a half's fit {given * 1e3:7.1f} ms (components given), "
        f"{searched * 1e3:7.1f} ms (BIC search; {q.n_components} components); the mixture's "
        f"density at every particle {density * 1e3:6.1f} ms; resampling {resampling * 1e3:5.2f} ms"
    )


def tempered_sweep(rng, n: int) -> None:
    """A tempered sweep's host work at ``n`` chains: ``q(beta | x)``, the new rungs, the
    Rao-Blackwellized sums and the rung-transition counts."""
    delta = rng.normal(size=n) * 10
    betas, log_r, log_zhat = np.linspace(0, 1, N_RUNGS) ** 3, np.zeros(N_RUNGS), np.zeros(N_RUNGS)
    rung = rng.integers(0, N_RUNGS, n)
    sums = [np.zeros((N_RUNGS, n)) for _ in range(3)]

    def sweep() -> None:
        q = beta_conditional(delta, betas, log_r, log_zhat).T
        new = draw_categorical(rng, q.T)
        sums[0][:] += q
        q *= delta
        sums[1][:] += q
        q *= delta
        sums[2][:] += q
        np.bincount(rung * N_RUNGS + new, minlength=N_RUNGS * N_RUNGS)

    print(
        f"{n:6d} tempered chains, {N_RUNGS} rungs: a sweep's host work {best_of(sweep, 20) * 1e3:6.2f} ms"
    )


def main() -> None:
    rng = np.random.default_rng(0)
    for n in (2048, 2048 * ACCELERATOR_WIDTH):
        exploration_rung(rng, n)
    for n in (1000, 1000 * ACCELERATOR_WIDTH):
        tempered_sweep(rng, n)


if __name__ == "__main__":
    main()
