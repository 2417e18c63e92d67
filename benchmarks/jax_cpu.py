"""The model's batched log density and gradient: PyTensor's JAX linker against the Numba
functions the library runs today, on this machine's CPU (and on a GPU where JAX sees one).

For each model: JAX's ``jit(vmap(logp and gradient))`` of the graph PyMC jaxifies
(``pymc.sampling.jax.get_jaxified_graph``, float64), and ``LogDensity.evaluate_with_grad`` (the
Numba backend). Printed: the first call (compile included; run in a fresh process for a cold
number) and warm throughput in points per second at ``B`` points per call, and the largest
difference of the two backends' ``log f`` and gradient. This is the measurement behind the
choice of a default backend; it does not run an estimator.

Run from the repository root (needs ``pip install jax``)::

    python benchmarks/jax_cpu.py
    python benchmarks/jax_cpu.py --models normal_mean circular_rv --points 100 1000 10000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

MODELS = (
    "normal_mean", "logistic_regression", "hierarchical_noncentered", "circular_rv",
    "poisson_glmm",
)  # fmt: skip


def _build(name):
    from pm_evidence.zoo import highdim, support, testing

    for registry in (testing.ZOO, highdim.HIGHDIM_ZOO, support.SUPPORT_ZOO):
        for entry in registry:
            if entry.name == name:
                return entry.build()[0]
    raise ValueError(name)


def _jax_function(model):
    import jax
    import pytensor
    from pymc.sampling.jax import get_jaxified_graph

    logp = model.logp()
    fn = get_jaxified_graph(
        inputs=model.value_vars, outputs=[logp, *pytensor.grad(logp, model.value_vars)]
    )

    def one(*values):
        out = fn(*values)
        return out[0], jax.numpy.concatenate([jax.numpy.ravel(g) for g in out[1:]])

    return jax.jit(jax.vmap(one))


def _blocking(function):
    """``function`` waiting for its result (JAX dispatches asynchronously)."""
    import jax

    return lambda *args: jax.block_until_ready(function(*args))


def _timed(call, args, repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        call(*args)
    return (time.perf_counter() - start) / repeats


def main(names, points) -> None:
    import jax

    import pm_evidence as pme

    jax.config.update("jax_enable_x64", True)
    print(f"JAX devices: {jax.devices()}")
    print(f"{'model':26s} {'dim':>4s} {'B':>6s} {'numba 1st s':>11s} {'jax 1st s':>9s} "
          f"{'numba pts/s':>12s} {'jax pts/s':>12s} {'ratio':>7s} {'max |diff|':>10s}")  # fmt: skip
    for name in names:
        model = _build(name)
        target = pme.LogDensity(model, reparametrize=False)
        rng = np.random.default_rng(0)
        for n in points:
            x = target.sample_prior(rng, n)
            start = time.perf_counter()
            log_prior, log_lik, g_prior, g_lik = target.evaluate_with_grad(x)
            numba_first = time.perf_counter() - start
            pieces = [
                x[:, v.start : v.stop].reshape(n, *v.value_shape) for v in target.layout
            ]
            start = time.perf_counter()
            jitted = _jax_function(target.model)
            jax_log_f, jax_grad = jax.block_until_ready(jitted(*pieces))
            jax_first = time.perf_counter() - start
            repeats = max(1, int(2e5 // (n * target.dim + 1)))
            numba_s = _timed(target.evaluate_with_grad, (x,), repeats)
            jax_s = _timed(_blocking(jitted), pieces, repeats)
            diff = max(
                np.max(np.abs(np.asarray(jax_log_f) - (log_prior + log_lik))),
                np.max(np.abs(np.asarray(jax_grad) - (g_prior + g_lik))),
            )
            print(f"{name:26s} {target.dim:4d} {n:6d} {numba_first:11.2f} {jax_first:9.2f} "
                  f"{n / numba_s:12.3g} {n / jax_s:12.3g} {numba_s / jax_s:7.2f} {diff:10.2g}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--points", nargs="+", type=int, default=[100, 1000, 10000])
    args = parser.parse_args()
    main(args.models, args.points)
