"""Batched HMC on an orbit's phase ridge, with and without the sheared circle
(:mod:`pm_evidence.model.shear_map`).

The model is :func:`pm_evidence.zoo.support.phase_ridge`: data that measure only the mean
longitude ``phi + atan2(k, h)`` of a phase ``phi`` and an eccentricity vector ``(h, k)``. For
each seed, :func:`~pm_evidence.model.batched_hmc.sample_batched_hmc` at its defaults
(``BatchedHMCSettings()``) and with ``shear_map=False`` (the phase on its circle alone), from
the same random stream; printed per run: the evaluations, the mean leapfrog steps and the step
size of the kept transitions, the divergences, the shear found, and the mean longitude's mean
resultant length against the exact one (``I_1(kappa) / I_0(kappa)``).

Run::

    .venv/bin/python benchmarks/phase_ridge.py [--seeds 5 6 7]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy import special

from pm_evidence.model.batched_hmc import BatchedHMCSettings, sample_batched_hmc
from pm_evidence.model.log_density import as_target
from pm_evidence.zoo.support import phase_ridge

CONCENTRATION = 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[5, 6, 7])
    args = parser.parse_args()
    model, _ = phase_ridge(CONCENTRATION)
    target = as_target(model)
    exact = special.i1(CONCENTRATION) / special.i0(CONCENTRATION)
    print(f"mean resultant length of the mean longitude, exact: {exact:.4f}")
    print("seed  shear  evaluations  leapfrog  step   divergences  resultant  shear found")
    for seed in args.seeds:
        for shear in (True, False):
            settings = BatchedHMCSettings(shear_map=shear)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                draws, stats = sample_batched_hmc(
                    target, np.random.default_rng(seed), settings, progressbar=False
                )
            phi = 2 * np.pi * special.expit(draws[..., 0])
            longitude = phi + np.arctan2(draws[..., 2], draws[..., 1])
            resultant = float(np.abs(np.mean(np.exp(1j * longitude))))
            print(
                f"{seed:4d}  {'on' if shear else 'off':5s}  {stats.evaluations:11,d}  "
                f"{stats.mean_leapfrog:8.1f}  {stats.step_size:5.3f}  {stats.divergences:11d}  "
                f"{resultant:9.4f}  {stats.shear_map}"
            )


if __name__ == "__main__":
    main()
