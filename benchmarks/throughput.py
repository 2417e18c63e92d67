"""Batched log-density throughput vs a point-by-point loop of ``model.compile_logp()``.

Model: Bayesian linear regression with n = 200 observations and d = 10 coefficients.
Prints time per point of each and their ratio (target: batched >= 20x faster).

Run: python benchmarks/throughput.py
"""

from __future__ import annotations

import numpy as np
from run_records import best_of

from pm_evidence import LogDensity
from pm_evidence.zoo.testing import linear_regression


def main(n_points: int = 20_000, n_loop: int = 2_000) -> None:
    model, _ = linear_regression(n=200, d=10)
    target = LogDensity(model)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n_points, target.dim))
    logp_fn = model.compile_logp()
    points = [
        {v.value_name: xi[v.start : v.stop].reshape(v.value_shape) for v in target.layout}
        for xi in x[:n_loop]
    ]
    # warm up (compilation and first-call JIT)
    target.log_density(x[:2])
    target.log_density_and_grad(x[:2])
    logp_fn(points[0])

    loop = best_of(lambda: [logp_fn(p) for p in points]) / n_loop
    batched = best_of(lambda: target.log_density(x)) / n_points
    batched_grad = best_of(lambda: target.log_density_and_grad(x)) / n_points
    np.testing.assert_allclose(
        target.log_density(x[:n_loop]), [logp_fn(p) for p in points], rtol=1e-10
    )
    print(f"regression n=200, d=10; {n_points} points batched, {n_loop} looped")
    print(f"  loop of model.compile_logp()   {loop * 1e6:8.2f} us/point")
    print(f"  LogDensity.log_density batched {batched * 1e6:8.2f} us/point")
    print(f"  log_density_and_grad batched   {batched_grad * 1e6:8.2f} us/point")
    print(f"  speed-up (log-density)         {loop / batched:8.1f}x  (target >= 20x)")


if __name__ == "__main__":
    main()
