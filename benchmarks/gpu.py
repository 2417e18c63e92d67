"""``auto`` at defaults on each backend (Numba, JAX), on models whose log density is the cost.

For each model and backend: the first call (compiles) and a warm call with the same seed,
printing wall seconds, ``log Z``, SE, ``reliable``, the device and its ``parallel_width`` (the
samplers' chains there, as a multiple of the CPU's), and per model the ratio of
Numba's warm time to JAX's and the two answers' difference in combined SEs. Where JAX sees a
GPU the JAX rows run there; on a CPU JAX runs on the CPU (slower than Numba there: this script
then measures the backends' agreement, not speed).

Models (``--models``, in this order; ``--quick`` keeps the first three):

- ``eight_schools``: eight schools, non-centered (10 parameters);
- ``eight_schools_centered``: the same model centered (the funnel);
- ``poisson_glmm``: a Poisson GLMM with 100 groups (102 parameters);
- ``hierarchical_200``: a normal hierarchy with 200 groups (202 parameters);
- ``logistic_100k``: logistic regression, 100,000 observations, 20 covariates;
- ``rv_gp``: two Keplerian orbits and a quasi-periodic Gaussian-process noise term on 200
  simulated observations (16 parameters; a 200 x 200 Cholesky factorization per point):
  :func:`pm_evidence.zoo.support.rv_gp`;
- ``hierarchical_1000``: a normal hierarchy with 1,000 groups (1,002 parameters).

``--zoo`` runs instead every model of :data:`pm_evidence.zoo.testing.ZOO` (each with a gold
``log Z``) once per backend, printing each answer's error against the gold (its discrete
models run their Gibbs sweeps on the device). ``--method`` runs another method than ``auto``
(``rts``: the tempered sweeps on the device).

Run from the repository root (needs ``pip install -e ".[jax]"``; on an NVIDIA GPU also
``pip install "jax[cuda12]"``)::

    python benchmarks/gpu.py --quick
    python benchmarks/gpu.py --zoo
    python benchmarks/gpu.py --models rv_gp logistic_100k --backends jax
    python benchmarks/gpu.py --models eight_schools hierarchical_200 --method rts
    python benchmarks/gpu.py --backends jax --time-limit 420   # inside an 8-minute call
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm

import pm_evidence as pme


def logistic_100k(n: int = 100_000, d: int = 20, seed: int = 70):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-(-0.5 + X @ rng.normal(0.0, 0.5, size=d))))
    with pm.Model(name="logistic_100k") as model:
        alpha = pm.Normal("alpha", 0.0, 2.5)
        beta = pm.Normal("beta", 0.0, 1.0, shape=d)
        pm.Bernoulli("y", logit_p=alpha + pm.math.dot(X, beta), observed=y.astype(int))
    return model


def build_model(name: str):
    from pm_evidence.zoo import funnels, hierarchical, highdim, support

    builders = {
        "eight_schools": lambda: hierarchical.hierarchical_noncentered()[0],
        "eight_schools_centered": lambda: funnels.eight_schools_centered()[0],
        "poisson_glmm": lambda: highdim.poisson_glmm()[0],
        "hierarchical_200": lambda: highdim.hierarchical_normal(200)[0],
        "logistic_100k": logistic_100k,
        "rv_gp": lambda: support.rv_gp()[0],
        "hierarchical_1000": lambda: highdim.hierarchical_normal(1000)[0],
    }
    return builders[name]()


MODELS = (
    "eight_schools", "eight_schools_centered", "poisson_glmm", "hierarchical_200",
    "logistic_100k", "rv_gp", "hierarchical_1000",
)  # fmt: skip


def _timed(model, backend: str, seed: int, method: str = "auto"):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the result carries its warnings
        ev = pme.marginal_likelihood(
            model, method=method, random_seed=seed, progressbar=False, backend=backend
        )
    return time.perf_counter() - start, ev


def main(
    names, backends, seed: int, warm: bool, time_limit: float | None = None, method: str = "auto"
) -> None:
    start = time.perf_counter()
    print(f"{'model':24s} {'backend':7s} {'device':22s} {'width':>5s} {'first s':>8s} "
          f"{'warm s':>8s} {'log Z':>14s} {'SE':>8s} reliable")  # fmt: skip
    for name in names:
        model = build_model(name)
        results = {}
        for backend in backends:
            if time_limit is not None and time.perf_counter() - start > time_limit:
                print(f"{name:24s} {backend:7s} not started: past --time-limit {time_limit:g} s")
                continue
            first, ev = _timed(model, backend, seed, method)
            again = _timed(model, backend, seed, method)[0] if warm else float("nan")
            results[backend] = (again if warm else first, ev)
            print(
                f"{name:24s} {backend:7s} {ev.diagnostics.get('device', '?'):22s} "
                f"{ev.diagnostics.get('parallel_width', 1):5d} {first:8.1f} "
                f"{again:8.1f} {ev.log_z:14.4f} {ev.se:8.4f} {ev.reliable}",
                flush=True,
            )
        if {"numba", "jax"} <= set(results):
            (t_numba, a), (t_jax, b) = results["numba"], results["jax"]
            z = (a.log_z - b.log_z) / np.hypot(a.se, b.se)
            print(f"{name:24s} numba / jax time {t_numba / t_jax:6.2f}x   difference {z:+.1f} SE")


def zoo(backends, seed: int) -> None:
    from pm_evidence.zoo.testing import ZOO

    print(
        f"{'model':29s} "
        + "  ".join(f"{b + ' error':>13s} {'SE':>6s} {'s':>6s} rel" for b in backends)
    )
    for entry in ZOO:
        model, gold = entry.build()
        cells = []
        for backend in backends:
            try:
                seconds, ev = _timed(model, backend, seed)
            except pme.EvidenceInputError as error:
                cells.append(f"refused: {str(error)[:40]}")
                continue
            cells.append(
                f"{ev.log_z - gold:+13.4f} {ev.se:6.4f} {seconds:6.1f} {'yes' if ev.reliable else 'no'}"
            )
        print(f"{entry.name:29s} " + "  ".join(cells), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--quick", action="store_true", help="the first three models only")
    parser.add_argument("--backends", nargs="+", choices=("numba", "jax"), default=["numba", "jax"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-warm", action="store_true", help="first calls only")
    parser.add_argument("--zoo", action="store_true", help="every zoo model, against its gold")
    parser.add_argument(
        "--method", default="auto",
        help="the method of every call (default auto; rts, ti or mbar run their tempered sweeps "
        "on the device)",
    )  # fmt: skip
    parser.add_argument(
        "--time-limit", type=float, default=None,
        help="seconds after which no further model or backend is started (a device call's limit)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.zoo:
        zoo(args.backends, args.seed)
        raise SystemExit
    models = list(MODELS[:3]) if args.quick else args.models
    main(models, args.backends, args.seed, warm=not args.no_warm, time_limit=args.time_limit,
         method=args.method)  # fmt: skip
