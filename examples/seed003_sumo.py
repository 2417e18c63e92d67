"""Seed 003: ELBO, IWAE and SUMO estimates of log Z for the 2-D mixture energy.

``U(x) = -log(N([-2,0], I)/2 + N([2,0], 4I)/2) - log(2 pi)`` is written as a ``pm.Potential``
(:func:`pm_evidence.zoo.testing.mixture_energy_2d`), so ``log Z = log 2 pi = 1.8379``; its batched
log-density comes from the PyMC model. The proposal is the note's ``q = N(0, 5 I)``, and the
draw counts are the note's: 50,000 for the ELBO, 10,000 IWAE estimates of ``k = 5`` draws, and
SUMO batches until about a million draws are used. Plain importance sampling on the ELBO's
draws is shown for reference. The whole set is repeated (``--repeats``) to give each
estimator's bias and spread, next to the standard error it reports.

The note reports: ELBO 1.4595 (variance 0.9921), IWAE_5 1.7616 (variance 0.1544), SUMO 1.8359
(variance 4.1794, "very heavy-tailed"); ELBO and IWAE are biased low, SUMO unbiased.

Run:  .venv/bin/python examples/seed003_sumo.py [--repeats R] [--out examples/figures]

Run time on the project's 2-core machine (2026-11-23): 45 s with the default 20 repeats.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _common import argument_parser, save_figure, subplots

from pm_evidence.estimators import (
    draw_sumo_lengths,
    elbo_core,
    importance_core,
    iwae_core,
    sumo_core,
    sumo_values,
)
from pm_evidence.model.log_density import LogDensity
from pm_evidence.references import MultivariateNormalReference
from pm_evidence.zoo import testing

NOTE = {"ELBO": (1.4595, 0.9921), "IWAE (k=5)": (1.7616, 0.1544), "SUMO": (1.8359, 4.1794)}


def log_weights(target, q, rng, n: int) -> np.ndarray:
    """``log f(x) - log q(x)`` at ``n`` draws from ``q`` (one batched call of the model)."""
    x = q.sample(rng, n)
    log_prior, log_lik = target.evaluate(x)
    return log_prior + log_lik - q.logpdf(x)


def one_set(target, q, rng, n_sumo_draws: int = 1_000_000, batch: int = 10) -> dict:
    """The note's three estimates (plus IS) on fresh draws; values kept for the histograms."""
    lw_elbo = log_weights(target, q, rng, 50_000)
    lw_iwae = log_weights(target, q, rng, 50_000)
    lengths = []
    while sum(lengths) < n_sumo_draws:  # the note: batches of 10 estimates sharing one K
        k = int(draw_sumo_lengths(rng, 1)[0])
        lengths += [k + 1] * batch
    lengths = np.array(lengths)
    sumo = sumo_values(log_weights(target, q, rng, int(lengths.sum())), lengths)
    return {
        "ELBO": (elbo_core(lw_elbo), lw_elbo),
        "IWAE (k=5)": (iwae_core(lw_iwae, 5), np.logaddexp.reduce(lw_iwae.reshape(-1, 5), 1)
                       - np.log(5)),
        "SUMO": (sumo_core(sumo), sumo),
        "IS (ELBO's draws)": (importance_core(lw_elbo), None),
    }  # fmt: skip


def main(repeats: int, out: Path) -> None:
    model, exact = testing.mixture_energy_2d()
    target = LogDensity.for_model(model)
    q = MultivariateNormalReference(mean=np.zeros(2), chol=np.sqrt(5.0) * np.eye(2))
    rng = np.random.default_rng(2026)
    sets = [one_set(target, q, rng) for _ in range(repeats)]
    print(f"exact log Z = log(2 pi) = {exact:.4f}; proposal q = N(0, 5 I); {repeats} repeats\n")
    print(f"{'estimator':>18s} {'note':>8s} {'note var':>9s} {'first run':>10s} {'var':>8s} "
          f"{'mean over runs':>15s} {'sd over runs':>13s} {'mean reported se':>17s}")  # fmt: skip
    for name in sets[0]:
        est = np.array([s[name][0].log_z for s in sets])
        se = np.array([s[name][0].se for s in sets])
        values = sets[0][name][1]
        var = f"{values.var():8.4f}" if values is not None else f"{'':8s}"
        note, note_var = NOTE.get(name, (np.nan, np.nan))
        print(f"{name:>18s} {note:8.4f} {note_var:9.4f} {est[0]:10.4f} {var} {est.mean():15.4f} "
              f"{est.std(ddof=1):13.4f} {se.mean():17.4f}")  # fmt: skip
    sumo_share = max(s["SUMO"][0].diagnostics["max_share"] for s in sets)
    print(
        f"\nSUMO: largest single value's share of the squared spread, worst run: {sumo_share:.3f}"
    )

    fig, axes = subplots(1, 3, figsize=(11, 3.4), sharey=True)
    for ax, name in zip(axes, NOTE, strict=True):
        est, values = sets[0][name]
        ax.hist(values, bins=np.arange(-5, 10, 0.25), density=True, color="C0", alpha=0.7)
        ax.axvline(exact, color="k", lw=1, label="log 2π")
        ax.axvline(est.log_z, color="C3", lw=1, ls="--", label=f"mean {est.log_z:.3f}")
        ax.set(title=f"{name}: var {values.var():.2f}", xlabel="per-estimate value")
        ax.legend(fontsize=7)
    fig.suptitle("Seed 003: ELBO, IWAE and SUMO on the 2-D mixture energy")
    save_figure(fig, out, "seed003_sumo")


if __name__ == "__main__":
    parser = argument_parser()
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    main(args.repeats, args.out)
