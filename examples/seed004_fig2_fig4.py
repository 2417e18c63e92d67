"""Seed 004 Fig. 2 (10-D Gaussian mixture) and Fig. 4 (RMSE against the number of
temperatures K on an RBM): RTS against TI (right Riemann, trapezoid, Rao-Blackwellized),
the count estimator TS and MBAR, all on the same tempered draws.

Fig. 2: the mixture of seed 004 App. E.1 (two N(., 0.5 I) in 10-D, 5 apart; prior N(0, 30 I)
as the reference; exact log Z), adaptive HMC per rung, K = 30 geometric rungs, 100 chains, RMSE
over 10 repeats against the number of sweeps. Fig. 4: the 64-20 RBM of
``seed004_fig3_rbm.py`` (exact log Z), block Gibbs, DBR reference, linear ladders of K rungs,
100 chains x 2000 sweeps, RMSE over 10 repeats (MBAR only up to K = 100: it keeps every draw).

The paper claims: Fig. 2 — "all estimators give nearly identical performance" on the mixture,
RTS being the simplest and cheapest; Fig. 4 — RTS is "not greatly affected by adding more
temperatures once there are enough", RTS and TI-RB become alike as K grows, and the
non-Rao-Blackwellized estimators (TS, TI) become unstable at large K (empty bins).

Run:  .venv/bin/python examples/seed004_fig2_fig4.py [--quick] [--repeats R] [--out DIR]
(default: 10 repeats, sweeps 100..3000, K 10..1000; --quick: 2 repeats, sweeps 100 and 300,
K 10 and 30, 500 sweeps on the RBM)

Run time on the project's 2-core machine (measured 2026-11-24 with /usr/bin/time, another job
running): --quick 38 s wall, 28 s CPU with PyTensor's compile cache already filled by an earlier
run, 68 s wall, 61 s CPU from an empty cache; the default about 500 s (measured 2026-11-22).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
from _common import argument_parser, save_figure, subplots

import pm_evidence as pme
from pm_evidence.zoo import energy, testing

ESTIMATORS = ("RTS", "TS (counts)", "TI Riemann", "TI trapezoid", "TI-RB", "MBAR")
TRAINING = {"epochs": 200, "learning_rate": 0.1, "cd_steps": 5, "seed": 0}  # seed004_fig3_rbm


def paper_claim() -> str:
    """The paper's claim, as this script's docstring states it, on one line."""
    claim = __doc__[__doc__.index("The paper claims") :].split("\n\n")[0]
    return " ".join(claim.split())


def estimates(model, seed: int, with_mbar: bool, **options) -> dict:
    """Every estimator of the list from one shared tempered run."""
    methods = ["rts", "ti"] + (["mbar"] if with_mbar else [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pme.marginal_likelihood(
            model, method=methods, random_seed=seed, progressbar=False, n_chains=100, **options
        )
    ti = res["ti"].diagnostics
    out = {
        "RTS": res["rts"].log_z,
        "TS (counts)": res["rts"].diagnostics["log_z_count"],
        "TI Riemann": ti["log_z_riemann"],
        "TI trapezoid": ti["log_z_trapezoid"],
        "TI-RB": ti["log_z_rb"],
    }
    out["MBAR"] = res["mbar"].log_z if with_mbar else np.nan
    return out


def rmse_table(model, exact, settings, repeats, label, fixed) -> dict:
    """RMSE per estimator for each value of the varied setting."""
    (key, values), table = settings, {m: [] for m in ESTIMATORS}
    print(f"\n{label}: RMSE of log Z over {repeats} repeats")
    print(f"{key:>9s} " + " ".join(f"{m:>13s}" for m in ESTIMATORS))
    for v in values:
        opts = {**fixed, key: v}
        with_mbar = key != "n_rungs" or v <= 100
        errs = {m: [] for m in ESTIMATORS}
        for r in range(repeats):
            for m, log_z in estimates(model, 100 * r + 7, with_mbar, **opts).items():
                errs[m].append(log_z - exact)
        for m in ESTIMATORS:
            table[m].append(float(np.sqrt(np.mean(np.square(errs[m])))))
        print(f"{v:9d} " + " ".join(f"{table[m][-1]:13.4f}" for m in ESTIMATORS), flush=True)
    return table


def main(repeats: int, out: Path, quick: bool = False) -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    mixture, exact_mix = testing.gaussian_mixture_10d()
    sweeps = [100, 300] if quick else [100, 300, 1000, 3000]
    fig2 = rmse_table(
        mixture, exact_mix, ("n_sweeps", sweeps), repeats,
        "Fig. 2: 10-D mixture, K = 30 geometric rungs, 100 chains",
        {"n_rungs": 30, "beta_min": 1e-3},
    )  # fmt: skip

    train, _ = energy.binary_digits()
    rbm = energy.train_rbm(train, 20, **TRAINING)
    ref = rbm.data_base_rate_reference(train)
    ks = [10, 30] if quick else [10, 30, 100, 300, 1000]
    rbm_sweeps = 500 if quick else 2000
    fig4 = rmse_table(
        rbm.to_pymc(), rbm.exact_model_log_z(), ("n_rungs", ks), repeats,
        f"Fig. 4: 64-20 RBM, 100 chains x {rbm_sweeps} sweeps, linear ladder",
        {"n_sweeps": rbm_sweeps, "ladder": "linear", "kernel": rbm.block_gibbs_kernel(ref),
         "reference": ref},
    )  # fmt: skip

    print(f"\n{paper_claim()}\nMeasured: the two tables above (RMSE of log Z per estimator).")

    fig, axes = subplots(1, 2, figsize=(10, 3.8))
    for ax, x, table, xlabel, title in (
        (axes[0], sweeps, fig2, "sweeps per chain", "Fig. 2: 10-D mixture (K = 30)"),
        (axes[1], ks, fig4, "number of temperatures K", f"Fig. 4: 64-20 RBM ({rbm_sweeps} sweeps)"),
    ):
        for m in ESTIMATORS:
            ax.loglog(x, table[m], "o-", ms=3, label=m)
        ax.set(xlabel=xlabel, ylabel="RMSE of log Z", title=title)
    axes[0].legend(fontsize=7)
    fig.suptitle("Seed 004: RTS against TI, TS and MBAR on the same tempered draws")
    save_figure(fig, out, "seed004_fig2_fig4")


if __name__ == "__main__":
    parser = argument_parser()
    parser.add_argument("--repeats", type=int, default=None, help="default 10 (--quick: 2)")
    parser.add_argument("--quick", action="store_true", help="fewer budgets, 2 repeats")
    args = parser.parse_args()
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 10)
    main(repeats, args.out, quick=args.quick)
