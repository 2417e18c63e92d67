"""Annealed and tempered methods on models with exact log Z (fixed seeds; |err| < 4 SE + slack).

Each model is compiled once per module; runs are small (tens of rungs, 50 chains).
"""

from __future__ import annotations

import signal
import warnings

import numpy as np
import pytest
import xarray as xr

import pm_evidence as pme
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.zoo import testing as exact_models

PATH_METHODS = ["ais", "raise", "ads", "rts", "ti", "mbar"]
SMALL = {"n_chains": 50, "n_sweeps": 300, "n_rungs": 30, "ladder": "linear"}


def assert_within_se(ev, exact, slack=0.02):
    err = ev.log_z - exact
    assert abs(err) < 4 * ev.se + slack, f"{ev.method}: error {err:.4f}, se {ev.se:.4f}"


@pytest.fixture(scope="module")
def mixture_2d():
    model, exact = exact_models.mixture_energy_2d()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # low-ESS warnings of AIS/RAISE at 30 rungs
        results = pme.marginal_likelihood(
            model, method=PATH_METHODS, random_seed=2, progressbar=False, **SMALL
        )
    return results, exact


@pytest.mark.parametrize("method", PATH_METHODS)
def test_seed003_mixture_energy_log_2pi(mixture_2d, method):
    results, exact = mixture_2d
    assert exact == pytest.approx(1.8379, abs=1e-4)
    assert_within_se(results[method], exact)


def test_list_form_shares_runs_and_reports(mixture_2d):
    results, _ = mixture_2d
    assert isinstance(results, pme.EvidenceSet)
    # ADS is computed on AIS's own run; TI and MBAR on RTS's tempered run
    np.testing.assert_array_equal(
        results["ads"].draws["log_weight"], results["ais"].draws["log_weight"]
    )
    for name in ("ti", "mbar"):
        assert (
            results[name].diagnostics["n_evaluations"]
            == results["rts"].diagnostics["n_evaluations"]
        )
        xr.testing.assert_equal(results[name].sample_stats, results["rts"].sample_stats)
    # a Flat prior is improper: the path starts from the fitted reference (normal or Student-t)
    # that overlaps the posterior draws best, judged on held-out draws
    diagnostics = results["ais"].diagnostics
    assert "the prior cannot be a reference" in diagnostics["reference_reason"]
    overlap = {name: diagnostics[f"reference_ess_{name}"] for name in ("normal", "student_t")}
    assert diagnostics["reference"] == max(overlap, key=overlap.get)
    summary = results.summary()
    assert list(summary.index) == PATH_METHODS
    assert summary.loc["ais", "bias"] == "stochastic lower bound"
    assert "not a bound" in summary.loc["raise", "bias"]
    assert results.sandwich == (results["ais"].log_z, results["raise"].log_z)


def test_tempered_diagnostics_in_datatree(mixture_2d):
    results, _ = mixture_2d
    tree = results["rts"].to_datatree()
    stats = tree["sample_stats"].to_dataset()
    k = SMALL["n_rungs"]
    assert stats["transitions"].dims == ("rung", "rung_to")
    assert stats["transitions"].shape == (k, k)
    assert stats["beta"].values[0] == 0 and stats["beta"].values[-1] == 1
    np.testing.assert_allclose(stats["occupancy"].sum(), 1.0)
    assert np.all((stats["acceptance"] > 0.2) & (stats["acceptance"] <= 1))
    assert "log_z_count" in tree["diagnostics"]


@pytest.fixture(scope="module")
def mixture_10d():
    model, exact = exact_models.gaussian_mixture_10d()
    results = pme.marginal_likelihood(
        model, method=["rts", "ti", "mbar"], random_seed=3, progressbar=False,
        n_chains=50, n_sweeps=400, n_rungs=50, ladder="linear",
    )  # fmt: skip
    return results, exact


@pytest.mark.parametrize("method", ["rts", "ti", "mbar"])
def test_seed004_ten_dimensional_mixture(mixture_10d, method):
    results, exact = mixture_10d
    assert_within_se(results[method], exact)


def test_rts_occupancy_matches_prior_after_initial_iterations(mixture_2d):
    """Seed 004 §2.4: after the initial iterations c_k ~ r_k on every rung."""
    ev = mixture_2d[0]["rts"]
    k = ev.diagnostics["n_rungs"]
    assert ev.diagnostics["init_max_abs_r_minus_c"] < 0.1 / k  # the stopping rule was met
    occupancy, r = ev.sample_stats["occupancy"].values, ev.sample_stats["prior_r"].values
    assert np.max(np.abs(occupancy - r)) < 0.5 / k
    # the count estimator is the noisier one (seed 004 Fig. 1)
    assert ev.diagnostics["se_count"] > ev.se


@pytest.fixture(scope="module")
def conjugate_repeats(normal_mean_case):
    """AIS, RAISE and ADS from the prior with only 4 rungs, 12 independent repetitions (the
    prior, far from the posterior, makes the biases of seed 000 Fig. 3 large enough to see)."""
    case = normal_mean_case
    errors = {m: [] for m in ("ais", "raise", "ads")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few rungs: low-ESS warnings are expected
        for seed in range(12):
            results = pme.marginal_likelihood(
                case.model, method=list(errors), idata=case.idata, random_seed=seed,
                progressbar=False, n_rungs=4, n_chains=50, beta_min=1e-2, reference="prior",
            )  # fmt: skip
            for m in errors:
                errors[m].append(results[m].log_z - case.exact)
    return {m: np.array(v) for m, v in errors.items()}


def test_sandwich_ais_below_raise_above_exact(conjugate_repeats):
    assert conjugate_repeats["ais"].mean() < 0 < conjugate_repeats["raise"].mean()


def test_ads_beats_ais_and_raise_at_few_rungs(conjugate_repeats):
    """Seed 000 Fig. 3: with few rungs, ADS on AIS's draws has a smaller RMSE than AIS and RAISE."""
    rmse = {m: np.sqrt(np.mean(v**2)) for m, v in conjugate_repeats.items()}
    assert rmse["ads"] < rmse["ais"] and rmse["ads"] < rmse["raise"], rmse


def test_conjugate_model_rts_and_ais_with_many_rungs(normal_mean_case):
    case = normal_mean_case
    for method, options in (("ais", {"n_rungs": 200}), ("rts", {"n_rungs": 50, "n_sweeps": 300})):
        ev = pme.marginal_likelihood(
            case.model, method=method, random_seed=5, progressbar=False, n_chains=50, **options
        )
        assert_within_se(ev, case.exact)
        # the data dominate the N(0, 2^2) prior: the default path starts from a fitted normal
        d = ev.diagnostics
        assert d["reference"] == "normal"  # the conjugate posterior is normal
        assert "overlaps it best" in d["reference_reason"]
        assert d["reference_ess_normal"] > d["reference_ess_prior"]


def test_user_kernel_hook_and_binary_flips():
    model, exact = exact_models.binary_field()
    ev = pme.marginal_likelihood(
        model, method="rts", kernel="flip", random_seed=4, progressbar=False,
        n_chains=50, n_rungs=20, n_sweeps=300, ladder="linear",
    )  # fmt: skip
    assert ev.diagnostics["kernel"] == "flip"
    assert_within_se(ev, exact)

    n = 6  # binary_field's number of variables
    calls = []

    def counting_identity(rng, x, beta):
        """The identity leaves every f_beta invariant (trivially valid, no mixing)."""
        calls.append(x.shape)
        assert beta.shape == (x.shape[0],)
        return x

    ev = pme.annealed_importance_sampling(
        model, kernel=counting_identity, random_seed=1, progressbar=False, n_chains=40,
        n_rungs=10, ladder="linear",
    )  # fmt: skip
    # with the identity kernel AIS is plain importance sampling from p0: still unbiased
    assert ev.diagnostics["kernel"] == "custom"
    assert all(shape[1] == n for shape in calls)  # batched: all chains in one call
    assert (40, n) in calls
    assert_within_se(ev, exact)


def test_a_path_method_called_alone_runs_in_one_blas_thread():
    """As in ``marginal_likelihood``, a path method called alone runs its kernels with one BLAS
    thread (many small solves; threads that wait for each other spin), and the caller's
    setting is back afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    model, _ = exact_models.binary_field()
    seen = []

    def identity(rng, x, beta):
        seen.append(blas_threads())
        return x

    with threadpool_limits(limits=2, user_api="blas"):
        outer = blas_threads()
        pme.annealed_importance_sampling(
            model, kernel=identity, random_seed=1, progressbar=False, n_chains=8, n_rungs=3,
            ladder="linear",
        )  # fmt: skip
        assert blas_threads() == outer
    assert seen and all(threads == {1} for threads in seen)


def test_ctrl_c_returns_partial_rts_and_aborts_ais(normal_mean_case):
    model = normal_mean_case.model
    calls = {"n": 0}

    def interrupting_identity(rng, x, beta):
        calls["n"] += x.shape[0] == 20  # count the tempered chains' calls (not the pilot's)
        if calls["n"] == 150:  # after at most 20 + 40 + 80 initial sweeps: in the final run
            signal.raise_signal(signal.SIGINT)
        return x

    with pytest.warns(UserWarning, match="interrupted after"):
        ev = pme.rao_blackwellized_tempered_sampling(
            model, kernel=interrupting_identity, random_seed=1, progressbar=False,
            n_chains=20, n_rungs=5, n_sweeps=500, n_init_sweeps=20, max_init_iterations=3,
        )  # fmt: skip
    assert ev.diagnostics["interrupted"]
    assert np.isfinite(ev.log_z) and np.isfinite(ev.se)
    assert ev.diagnostics["n_iterations"] < 20 * 500

    calls["n"] = 0

    def interrupt_at_rung_5(rng, x, beta):  # AIS runs 10 chains (the pilot 64)
        calls["n"] += x.shape[0] == 10
        if calls["n"] == 5:
            signal.raise_signal(signal.SIGINT)
        return x

    with pytest.raises(KeyboardInterrupt, match="no estimate of log Z"):
        pme.annealed_importance_sampling(
            model, kernel=interrupt_at_rung_5, random_seed=1, progressbar=False, n_chains=10,
            n_rungs=20,
        )  # fmt: skip


def test_path_method_errors(normal_mean_case):
    model = normal_mean_case.model
    with pytest.raises(EvidenceInputError, match="kernel='flip'"):
        pme.annealed_importance_sampling(model, kernel="flip", progressbar=False)
    with pytest.raises(EvidenceInputError, match="version"):
        pme.annealed_discriminance_sampling(model, version="ternary", progressbar=False)
    with pytest.raises(EvidenceInputError, match="prior_r"):
        pme.rao_blackwellized_tempered_sampling(model, prior_r=[1.0, 2.0], progressbar=False)
    with pytest.raises(EvidenceInputError, match="warp3"):
        pme.annealed_importance_sampling(
            model, reference="warp3", idata=normal_mean_case.idata, progressbar=False
        )
    with pytest.raises(EvidenceInputError, match=r"Unexpected options \[.n_sweps.\] for ais, rts"):
        pme.marginal_likelihood(model, method=["ais", "rts"], n_sweps=10, progressbar=False)
    binary, _ = exact_models.binary_field()
    with pytest.raises(EvidenceInputError, match="discrete"):
        pme.annealed_importance_sampling(binary, kernel="hmc", progressbar=False)
