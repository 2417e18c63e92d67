"""Tutorial: from pm.sample to a saved, plotted, robustness-checked Bayes factor.

Data: the 23 Space Shuttle launches before the Challenger accident (Dalal, Fowlkes & Hoadley
1989): joint temperature (°F) and whether any O-ring showed thermal distress. Does temperature
predict distress?

H0: logit P(distress) = alpha                          (temperature irrelevant)
H1: logit P(distress) = alpha + beta * z(temperature)  (z: standardized temperature)

alpha ~ N(0, 2.5^2) in both; beta ~ N(0, s^2), with the slope's prior scale s = 2.5 in the
main analysis and s from 0.08 to 20 in the robustness check. The page ``docs/tutorials/
challenger_bayes_factor.rst`` walks through this script; ``tests/workflows/
test_challenger_tutorial.py`` runs it (a reduced run in the default suite, the full run
marked slow), so the page cannot go stale.

Run:  python examples/challenger_tutorial.py [--quick] [--out docs/_static]
It writes challenger_bayes_factor.png and challenger_robustness.png to --out, and
challenger_h1.nc (the fit with its evidence) to --data (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

import matplotlib
import numpy as np
import pymc as pm
import xarray as xr

import pm_evidence as pme

matplotlib.use("Agg")

TEMPERATURE = np.array(
    [66, 70, 69, 68, 67, 72, 73, 70, 57, 63, 70, 78, 67, 53, 67, 75, 70, 81, 76, 79, 75, 76, 58],
    dtype=float,
)
DISTRESS = np.array([0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1])
Z = (TEMPERATURE - TEMPERATURE.mean()) / TEMPERATURE.std()
SLOPE_SD = 2.5  # the main analysis' prior scale of the slope


def temperature_model(slope_sd: float) -> pm.Model:
    """H1: the log-odds of distress linear in the standardized temperature, slope ~ N(0, sd^2)."""
    with pm.Model(name="H1_temperature") as model:
        alpha = pm.Normal("alpha", np.float64(0.0), np.float64(2.5))
        beta = pm.Normal("beta", np.float64(0.0), np.float64(slope_sd))
        pm.Bernoulli("distress", logit_p=alpha + beta * Z, observed=DISTRESS)
    return model


def intercept_model() -> pm.Model:
    """H0: one probability of distress for every launch."""
    with pm.Model(name="H0_intercept") as model:
        alpha = pm.Normal("alpha", np.float64(0.0), np.float64(2.5))
        pm.Bernoulli("distress", logit_p=alpha, observed=DISTRESS)
    return model


def fit_and_compare(settings: dict, seed: int = 1):
    """Step 1 and 2: NUTS draws of both models, then the evidence of each from its draws."""
    h1, h0 = temperature_model(SLOPE_SD), intercept_model()
    draws = settings["nuts"]
    idata = {}
    for name, model in {"H1": h1, "H0": h0}.items():
        with model:
            idata[name] = pm.sample(**draws, random_seed=seed, progressbar=False)
    evidence = {}
    for name, model in {"H1": h1, "H0": h0}.items():
        evidence[name] = pme.marginal_likelihood(
            model, idata=idata[name], method=settings["method"], random_seed=seed,
            progressbar=False,
        )  # fmt: skip
    return idata, evidence


def save_and_reload(idata_h1, ev_h1, path: pathlib.Path) -> pme.Evidence:
    """Step 3: keep the evidence with the fit, save both, read the evidence back."""
    idata_h1["log_evidence"] = ev_h1.to_datatree()
    idata_h1.to_netcdf(path)
    with xr.open_datatree(path) as saved:
        return pme.Evidence.from_datatree(saved)


def build_models(slope_sd: float):
    """The models compared at one prior scale of the slope (H1 first, H0 second); H0 has no
    slope, so the same object serves every scale (it is estimated once)."""
    return temperature_model(slope_sd), H0


H0 = intercept_model()


def robustness_check(settings: dict, seed: int = 2) -> xr.Dataset:
    """Step 5: log BF10 over a grid of the slope's prior scale."""
    return pme.prior_robustness(
        build_models,
        settings["scales"],
        method=settings["method"],
        executor=settings["executor"],
        random_seed=seed,
        progressbar=False,
        draws=settings["nuts"]["draws"],
        tune=settings["nuts"]["tune"],
        chains=settings["nuts"]["chains"],
    )


FULL = {
    "nuts": {"draws": 1000, "tune": 1000, "chains": 4},
    "method": "auto",
    "scales": SLOPE_SD * 2.0 ** np.arange(-5, 4),  # 0.078 to 20, through 2.5
    "executor": None,  # a process pool (hence the __main__ guard below)
}
QUICK = {
    # PyMC's own NUTS, not nutpie where it is installed (pm.sample's default then): nutpie
    # compiles each model again, about 10 s from empty caches; the full run keeps the default
    "nuts": {"draws": 500, "tune": 500, "chains": 2, "nuts_sampler": "pymc"},
    "method": "bridge",
    "scales": np.array([0.5, 2.5, 12.5]),
    "executor": "serial",
}


def main(
    quick: bool = False,
    out: pathlib.Path = pathlib.Path("docs/_static"),
    data: pathlib.Path | None = None,
) -> dict:
    """Every step; returns what the test checks."""
    import matplotlib.pyplot as plt

    settings = QUICK if quick else FULL
    out.mkdir(parents=True, exist_ok=True)
    data = pathlib.Path(tempfile.mkdtemp()) if data is None else data
    data.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    idata, evidence = fit_and_compare(settings)
    bf = pme.bayes_factor(evidence["H1"], evidence["H0"])
    log_bf10 = float(bf["log_bayes_factor"].sel(bf_type="BF10"))
    print(f"log Z(H1) = {evidence['H1'].log_z:.3f} ± {evidence['H1'].se:.3f}")
    print(f"log Z(H0) = {evidence['H0'].log_z:.3f} ± {evidence['H0'].se:.3f}")
    print(
        f"log BF10 = {log_bf10:.3f} ± {float(bf['log_bayes_factor_se']):.3f} "
        f"(BF10 = {np.exp(log_bf10):.2f})"
    )

    reloaded = save_and_reload(idata["H1"], evidence["H1"], data / "challenger_h1.nc")
    assert reloaded == evidence["H1"]

    ax = pme.plot_bayes_factor(evidence["H1"], evidence["H0"], labels=("temperature", "intercept"))
    ax.figure.savefig(out / "challenger_bayes_factor.png", dpi=110)
    plt.close(ax.figure)

    check = robustness_check(settings)
    print(check[["log_bf", "log_bf_se"]].sel(model="H1").to_dataframe().round(3))
    ax = pme.plot_prior_robustness(check)
    ax.set_xlabel("prior scale of the slope (sd of beta, per sd of temperature)")
    ax.figure.savefig(out / "challenger_robustness.png", dpi=110)
    plt.close(ax.figure)
    print(f"took {time.perf_counter() - start:.0f} s")
    return {"evidence": evidence, "bayes_factor": bf, "robustness": check, "reloaded": reloaded}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the reduced run of the test")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("docs/_static"))
    parser.add_argument("--data", type=pathlib.Path, default=None)
    args = parser.parse_args()
    main(quick=args.quick, out=args.out, data=args.data)
