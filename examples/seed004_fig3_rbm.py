"""Seed 000 Fig. 3 and seed 004 Fig. 3: log Z of an RBM trained on real binary images, by AIS,
RAISE, annealed discriminance sampling (ADS) and RTS against the number of Gibbs sweeps.

The RBM is trained by CD-5 on scikit-learn's 8x8 digits (thresholded at 7 of 16) and written
as a PyMC model (Bernoulli(1/2) units plus a Potential); log Z is exact by enumerating the
hidden layer. Every method runs 100 parallel chains with the RBM's block Gibbs kernel
(``h | v, v | h``) through the custom-kernel hook and the data-base-rate (DBR) reference, and
is charged every evaluation it makes, set-up included (RAISE's burn-in for its target draws,
RTS's pilot and initial iterations). At a budget of S sweeps per chain:

* AIS: S rungs, linear ladder (seed 000 §6: "linearly spaced intermediate temperatures");
* ADS: binary-sequential ADS on AIS's own draws and weights (same cost as AIS);
* RAISE: S/2 sweeps of burn-in for its 100 target draws, then S/2 rungs (seed 000 notes
  RAISE costs twice AIS at equal rungs);
* RTS: K=100 rungs (seed 004 §4.2), initial iterations of S/20 sweeps (at most 5), then the
  rest of the budget; only from S = 256 (its pilot and initial iterations alone cost about
  100 sweeps).

A 64-16 RBM trained briefly by CD-1 turned out too easy to separate the methods (AIS within
0.06 nats at 100 sweeps), so the default RBM is 64-20, trained longer and harder (CD-5, 200
epochs, learning rate 0.1; log-likelihood -17.3 per image).

The papers claim: seed 000 Fig. 3 — ADS "significantly outperforms" AIS and RAISE when the
intermediate temperatures are few; seed 004 Fig. 3 — the bias of RTS falls faster than that of
AIS and RAISE, and AIS needs over ten times the sweeps to reach RTS's RMSE at 1000 sweeps.
Both papers' RBMs are 784-500 (MNIST); ours are 64-20 (exact log Z) and, with ``--full``, also
a 64-100 RBM whose reference value is the average of long AIS and long RTS runs, as in
seed 004 §4.2.

Run:  .venv/bin/python examples/seed004_fig3_rbm.py [--quick | --full] [--out DIR]
(default: 64-20 RBM, budgets 4..4096 sweeps, 10 repeats; --quick: budgets 4..256, 3 repeats,
so that RTS runs at one budget only; --full: also 16384 sweeps and a 64-100 RBM)

Run time on the project's 2-core machine: --quick 13 s wall, 11 s CPU (measured 2026-11-24 with
/usr/bin/time, another job running); the default was not measured (its largest budget is 16x
--quick's, with 10 repeats instead of 3).
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import numpy as np
from _common import argument_parser, save_figure, subplots

import pm_evidence as pme
from pm_evidence.zoo import energy

METHODS = ("AIS", "ADS", "RAISE", "RTS")
N_CHAINS = 100
RTS_MIN_BUDGET = 256
TRAINING = {"epochs": 200, "learning_rate": 0.1, "cd_steps": 5, "seed": 0}


def one_run(model, kernel, ref, method: str, budget: int, seed: int) -> tuple[float, float]:
    """``(log Z of the model, cost in sweeps per chain)`` of one method at one budget."""
    common = dict(kernel=kernel, reference=ref, n_chains=N_CHAINS, random_seed=seed,
                  progressbar=False)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low-ESS warnings are expected at small budgets
        if method in ("AIS", "ADS"):
            results = pme.marginal_likelihood(
                model, method=["ais", "ads"], n_rungs=budget + 1, ladder="linear", **common
            )
            ev = results["ais" if method == "AIS" else "ads"]
        elif method == "RAISE":
            ev = pme.reverse_annealed_importance_sampling(
                model, n_rungs=budget // 2 + 1, ladder="linear", draws=N_CHAINS,
                tune=budget // 2, **common,
            )  # fmt: skip
        else:
            init = max(budget // 20, 5)
            main_sweeps = max(budget - 64 - 5 * init, budget // 2)
            ev = pme.rao_blackwellized_tempered_sampling(
                model, n_rungs=100, ladder="linear", n_init_sweeps=init, max_init_iterations=5,
                n_sweeps=main_sweeps, **common,
            )  # fmt: skip
    cost = (ev.diagnostics["n_evaluations"] + ev.diagnostics["n_setup_evaluations"]) / N_CHAINS
    return ev.log_z, cost


def sweep_budgets(rbm, data, budgets, repeats, truth) -> dict:
    """Errors ``(budget, repeat)`` and mean cost per method, against ``truth`` (model scale)."""
    model = rbm.to_pymc()
    ref = rbm.data_base_rate_reference(data)
    kernel = rbm.block_gibbs_kernel(ref)
    out = {m: {"error": np.zeros((len(budgets), repeats)), "cost": np.zeros(len(budgets))}
           for m in METHODS}  # fmt: skip
    for i, budget in enumerate(budgets):
        start = time.perf_counter()
        for m in METHODS:
            if m == "RTS" and budget < RTS_MIN_BUDGET:
                out[m]["error"][i], out[m]["cost"][i] = np.nan, np.nan
                continue
            costs = []
            for r in range(repeats):
                log_z, cost = one_run(model, kernel, ref, m, budget, seed=1000 * i + r)
                out[m]["error"][i, r] = log_z - truth
                costs.append(cost)
            out[m]["cost"][i] = np.mean(costs)
        print(f"  budget {budget:6d} sweeps: {time.perf_counter() - start:6.1f} s", flush=True)
    return out


def print_table(title: str, budgets, res) -> None:
    print(f"\n{title}\nmean error / RMSE of log Z (nats); cost = sweeps per chain actually made")
    print(f"{'budget':>7s} " + " ".join(f"{m:>22s}" for m in METHODS))
    for i, b in enumerate(budgets):
        cells = []
        for m in METHODS:
            e = res[m]["error"][i]
            if np.isnan(e).all():
                cells.append("-")
                continue
            rmse = np.sqrt(np.mean(e**2))
            cells.append(f"{e.mean():+7.3f}/{rmse:6.3f} @{res[m]['cost'][i]:5.0f}")
        print(f"{b:7d} " + " ".join(f"{c:>22s}" for c in cells))


def rmse_at(res, method: str, cost: float) -> float:
    """RMSE at a given cost, interpolated in log-log between the budgets."""
    ok = np.isfinite(res[method]["cost"])
    c = res[method]["cost"][ok]
    rmse = np.sqrt(np.mean(res[method]["error"][ok] ** 2, axis=1))
    return float(np.exp(np.interp(np.log(cost), np.log(c), np.log(rmse))))


def verdicts(res) -> list[str]:
    """The seeds' headline claims, checked on these runs."""
    lines = []
    rmse = {m: np.sqrt(np.mean(res[m]["error"] ** 2, axis=1)) for m in METHODS}
    few = 0  # the smallest budget: "few intermediate temperatures"
    bias = {m: np.abs(res[m]["error"].mean(axis=1)) for m in METHODS}
    ads_wins = rmse["ADS"][few] < min(rmse["AIS"][few], rmse["RAISE"][few])
    lines.append(
        f"seed 000: ADS beats AIS and RAISE at few rungs -> RMSE "
        f"{'smaller' if ads_wins else 'NOT smaller'} at the smallest budget (ADS "
        f"{rmse['ADS'][few]:.3f}, AIS {rmse['AIS'][few]:.3f}, RAISE {rmse['RAISE'][few]:.3f}), "
        f"|bias| ADS {bias['ADS'][few]:.3f} against AIS {bias['AIS'][few]:.3f} and RAISE "
        f"{bias['RAISE'][few]:.3f}; RMSE ADS < AIS at {int(np.sum(rmse['ADS'] < rmse['AIS']))} "
        f"of {rmse['AIS'].size} budgets"
    )
    ran = np.isfinite(bias["RTS"])
    rts_bias_wins = int(np.sum(bias["RTS"][ran] < np.minimum(bias["AIS"], bias["RAISE"])[ran]))
    lines.append(
        f"seed 004: |bias| of RTS below AIS and RAISE at {rts_bias_wins} of {int(ran.sum())} "
        f"budgets where RTS ran -> "
        f"{'holds' if rts_bias_wins > ran.sum() / 2 else 'does NOT hold'}"
    )
    ref_cost = min(1000.0, np.nanmax(res["RTS"]["cost"]))
    target = rmse_at(res, "RTS", ref_cost)
    ais_cost = res["AIS"]["cost"]
    reached = ais_cost[rmse["AIS"] <= target]
    factor = reached[0] / ref_cost if reached.size else np.inf
    lines.append(
        f"seed 004: AIS needs > 10x the sweeps to match RTS's RMSE at {ref_cost:.0f} sweeps "
        f"({target:.3f}) -> "
        + (
            f"holds (not reached within {ais_cost[-1]:.0f} sweeps)"
            if not reached.size
            else f"{'holds' if factor > 10 else 'does NOT hold'} (AIS reaches it at "
            f"{reached[0]:.0f} sweeps, {factor:.1f}x)"
        )
    )
    return lines


def plot(axes, budgets, res, title: str) -> None:
    for m in METHODS:
        e = res[m]["error"]
        axes[0].semilogx(res[m]["cost"], e.mean(axis=1), "o-", ms=3, label=m)
        axes[1].loglog(res[m]["cost"], np.sqrt(np.mean(e**2, axis=1)), "o-", ms=3, label=m)
    axes[0].axhline(0.0, color="k", lw=0.8)
    axes[0].set(title=title, ylabel="mean error of log Z", xlabel="Gibbs sweeps per chain")
    axes[1].set(ylabel="RMSE of log Z", xlabel="Gibbs sweeps per chain")
    axes[0].legend(fontsize=7)


def main(full: bool, repeats: int, out: Path, quick: bool = False) -> None:
    logging.getLogger("pymc").setLevel(logging.ERROR)
    train, _ = energy.binary_digits()
    rbm = energy.train_rbm(train, 20, **TRAINING)
    exact = rbm.exact_model_log_z()
    budgets = (
        [4, 16, 64, 256] if quick else [4, 16, 64, 256, 1024, 4096] + ([16384] if full else [])
    )
    ll = rbm.average_log_likelihood(train, exact + rbm.size * np.log(2))
    print(f"RBM 64-20 (CD-5, 200 epochs) on {train.shape[0]} thresholded digits; exact log Z of "
          f"the RBM {exact + rbm.size * np.log(2):.4f} (train log-likelihood {ll:.2f} per "
          f"image); {N_CHAINS} chains, {repeats} repeats")  # fmt: skip
    res = sweep_budgets(rbm, train, budgets, repeats, exact)
    print_table("64-20 RBM (exact log Z)", budgets, res)
    claims = verdicts(res)
    print("\n" + "\n".join(claims))
    panels = [("64-20 RBM, exact log Z", budgets, res)]

    if full:
        big = energy.train_rbm(train, 100, **TRAINING)
        model, ref = big.to_pymc(), big.data_base_rate_reference(train)
        kernel = big.block_gibbs_kernel(ref)
        start = time.perf_counter()
        long_ais = pme.annealed_importance_sampling(
            model, kernel=kernel, reference=ref, n_chains=100, n_rungs=100_000,
            ladder="linear", random_seed=7, progressbar=False,
        )  # fmt: skip
        long_rts = pme.rao_blackwellized_tempered_sampling(
            model, kernel=kernel, reference=ref, n_chains=100, n_rungs=100, ladder="linear",
            n_sweeps=100_000, random_seed=8, progressbar=False,
        )  # fmt: skip
        truth = 0.5 * (long_ais.log_z + long_rts.log_z)
        print(f"\n64-100 RBM: long AIS {long_ais.log_z:.4f} +- {long_ais.se:.4f}, long RTS "
              f"{long_rts.log_z:.4f} +- {long_rts.se:.4f} (model scale; "
              f"{time.perf_counter() - start:.0f} s); reference value = their average")  # fmt: skip
        big_budgets = budgets[:-1]
        res_big = sweep_budgets(big, train, big_budgets, repeats, truth)
        print_table("64-100 RBM (reference: long AIS and RTS)", big_budgets, res_big)
        print("\n" + "\n".join(verdicts(res_big)))
        panels.append(("64-100 RBM, long-run reference", big_budgets, res_big))

    fig, axes = subplots(2, len(panels), figsize=(5 * len(panels), 7), squeeze=False)
    for j, (title, b, r) in enumerate(panels):
        plot(axes[:, j], b, r, title)
    fig.suptitle("Seed 000 / 004 Fig. 3: RBM, 8x8 digits", fontsize=10)
    save_figure(fig, out, "seed004_fig3_rbm")


if __name__ == "__main__":
    parser = argument_parser()
    parser.add_argument("--full", action="store_true", help="more budgets and a 64-100 RBM")
    parser.add_argument("--quick", action="store_true", help="budgets up to 256 sweeps, 3 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="default 10 (--quick: 3)")
    args = parser.parse_args()
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 10)
    main(args.full, repeats, args.out, quick=args.quick)
