"""The functions on PyTensor's Python linker with and without the fusion of elementwise operations
(issue 35, step 5), and what that changes for a default call on a model with many bounded
parameters.

``PYTHON_LINKER`` (``pm_evidence.model.compile_mode``) runs the prior's forward draws and the
flat-to-named maps. PyTensor's Python linker runs a fused ``Composite`` one element at a time in
Python; unfused, each operation is one NumPy call on the whole array. This prints, for a model of
``--n`` Beta and ``--n`` Uniform parameters, the seconds of ``--draws`` prior draws and of the
maps both ways under each mode (built here, the mode's only difference being the fusion), and
then, for a beta-binomial model of ``--groups`` groups (exact log Z: a product of beta-binomial
evidences), ``marginal_likelihood`` at its defaults (warm: the second call in the process)
against ``pm.sample_smc`` at its defaults, with each one's error against the exact value.

Run from the repository root::

    python benchmarks/python_linker.py
    python benchmarks/python_linker.py --n 50 --groups 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm
from pytensor.compile.mode import Mode
from scipy.special import betaln, gammaln

import pm_evidence as pme
import pm_evidence.model.maps as maps
import pm_evidence.model.prior as prior
from pm_evidence.model.log_density import LogDensity

MODES = {
    "fused (before)": Mode(linker="py", optimizer="fast_run"),
    "unfused (PYTHON_LINKER)": Mode(linker="py", optimizer="fast_run").excluding("fusion"),
}


def bounded_model(n: int) -> pm.Model:
    with pm.Model() as model:
        pm.Beta("p", np.float64(2), np.float64(3), shape=n)
        pm.Uniform("u", np.float64(-1), np.float64(2), shape=n)
    return model


def time_draws_and_maps(n: int, draws: int, mode: Mode) -> tuple[float, float, float]:
    """Seconds of ``draws`` prior draws (mapped to flat vectors), of their map to named
    values and back, each the second call (the first compiles)."""
    prior.PYTHON_LINKER = maps.PYTHON_LINKER = mode
    target = LogDensity(bounded_model(n))
    rng = np.random.default_rng(0)
    target.to_unconstrained(target.to_constrained(target.sample_prior(rng, 8)))  # compile
    start = time.perf_counter()
    x = target.sample_prior(rng, draws)
    drawn = time.perf_counter()
    values = target.to_constrained(x)
    constrained = time.perf_counter()
    target.to_unconstrained(values)
    return drawn - start, constrained - drawn, time.perf_counter() - constrained


def beta_binomial_groups(groups: int, seed: int = 0) -> tuple[pm.Model, float]:
    rng = np.random.default_rng(seed)
    trials = rng.integers(5, 30, groups)
    y = rng.binomial(trials, rng.beta(2, 5, groups))
    with pm.Model() as model:
        p = pm.Beta("p", np.float64(2), np.float64(5), shape=groups)
        pm.Binomial("y", trials, p, observed=y)
    log_choose = gammaln(trials + 1) - gammaln(y + 1) - gammaln(trials - y + 1)
    exact = float((log_choose + betaln(y + 2, trials - y + 5) - betaln(2, 5)).sum())
    return model, exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="Beta and Uniform parameters each")
    parser.add_argument("--draws", type=int, default=4096)
    parser.add_argument("--groups", type=int, default=100)
    args = parser.parse_args()
    print(f"{args.draws} prior draws of {args.n} Beta + {args.n} Uniform parameters, seconds:")
    print(f"  {'mode':26s} {'draws':>8s} {'to named':>9s} {'to flat':>8s}")
    for name, mode in MODES.items():
        seconds = time_draws_and_maps(args.n, args.draws, mode)
        print(f"  {name:26s} " + " ".join(f"{s:8.3f}" for s in seconds))
    prior.PYTHON_LINKER = maps.PYTHON_LINKER = MODES["unfused (PYTHON_LINKER)"]

    model, exact = beta_binomial_groups(args.groups)
    print(f"\nbeta-binomial, {args.groups} groups, exact log Z {exact:.4f}; warm wall seconds:")
    pme.marginal_likelihood(model, random_seed=0, progressbar=False)
    start = time.perf_counter()
    result = pme.marginal_likelihood(model, random_seed=1, progressbar=False)
    auto_s = time.perf_counter() - start
    with model:
        pm.sample_smc(progressbar=False, random_seed=0)
        start = time.perf_counter()
        trace = pm.sample_smc(progressbar=False, random_seed=1)
        smc_s = time.perf_counter() - start
    smc = pme.from_smc(trace, model)
    print(f"  auto {auto_s:6.1f} s  log Z {result.log_z:.4f} ± {result.se:.4f}  error "
          f"{result.log_z - exact:+.4f} ({(result.log_z - exact) / result.se:+.1f} SE), "
          f"{result.method}, reliable {result.reliable}")
    print(f"  SMC  {smc_s:6.1f} s  log Z {smc.log_z:.4f} ± {smc.se:.4f}  error "
          f"{smc.log_z - exact:+.4f} ({(smc.log_z - exact) / smc.se:+.1f} SE)")
    print(f"  auto/SMC {auto_s / smc_s:.2f}")


if __name__ == "__main__":
    main()
