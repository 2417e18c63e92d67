"""The functions on PyTensor's Python linker with and without the fusion of elementwise operations,
and what that changes for a default call on a model with many bounded
parameters.

``PYTHON_LINKER`` (``pm_evidence.model.compile_mode``) runs the prior's forward draws and the
flat-to-named maps. PyTensor's Python linker runs a fused ``Composite`` one element at a time in
Python; unfused, each operation is one NumPy call on the whole array. This prints, for a model of
``--n`` Beta and ``--n`` Uniform parameters, the seconds of ``--draws`` prior draws and of the
maps both ways under each mode (built here, the mode's only difference being the fusion), and
then, for a beta-binomial model of ``--groups`` groups (exact log Z: a product of beta-binomial
evidences; data from seed 0), ``marginal_likelihood`` at its defaults (first and warm calls)
against ``pm.sample_smc`` at its defaults, with each one's error against the exact value
(``ordinary_models.compare_with_smc``).

Run from the repository root::

    python benchmarks/python_linker.py
    python benchmarks/python_linker.py --n 50 --groups 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pymc as pm

# benchmarks/ (this script's folder, first on sys.path when it is run as a script)
from ordinary_models import beta_binomial_groups, compare_with_smc
from pytensor.compile.mode import Mode

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

    model, exact = beta_binomial_groups(np.random.default_rng(0), args.groups)
    compare_with_smc(f"beta_binomial_groups ({args.groups} groups)", model, exact)


if __name__ == "__main__":
    main()
