"""Model-facing annealed and tempered estimators: AIS, RAISE, ADS, RTS, TI and MBAR.

Each public function is three explicit steps, which a user can also take one by one:

1. :func:`~pm_evidence.path.plan.make_plan`: the reference ``p0`` (for continuous models the better
   of the prior and a Student-t fitted to NUTS draws, :func:`~pm_evidence.path.plan.auto_reference`),
   the kernel, and a pilot run that measures the path and tunes the kernel along it;
2. a run on the plan (:func:`~pm_evidence.path.runs.run_annealing`,
   :func:`~pm_evidence.path.runs.run_reverse_annealing`, :func:`~pm_evidence.path.runs.run_tempering`)
   on a ladder placed from the pilot, as long as ``target_se`` asks;
3. an estimator that reads the run (:mod:`pm_evidence.path.path_estimators`).

Every function has the signature of :func:`~pm_evidence.marginal_likelihood` without
``method`` (:mod:`pm_evidence.core.methods`). Options are small frozen dataclasses, given by name
(``path=`` :class:`~pm_evidence.path.plan.PathOptions`, ``annealing=``
:class:`~pm_evidence.path.runs.AnnealingOptions`, ``tempering=``
:class:`~pm_evidence.path.runs.TemperingOptions`); their fields may also be given as keywords
(``n_chains=200``), and NUTS options (``draws``, ``tune``, ``chains``, ``sample_kwargs``)
likewise. Every stage draws from its own random stream (:func:`~pm_evidence.core.utils.stage_rngs`),
so a method gives the same result alone and in a list.
"""

from __future__ import annotations

from dataclasses import replace

from pm_evidence.core.evidence import Evidence
from pm_evidence.core.methods import RUN_OPTIONS, method_row, route_options
from pm_evidence.core.options import AnnealingOptions, PathOptions, TemperingOptions
from pm_evidence.core.utils import runs_with_one_blas_thread, stage_rngs
from pm_evidence.model.log_density import ModelLike
from pm_evidence.path import path_estimators
from pm_evidence.path.plan import auto_reference, make_plan
from pm_evidence.path.runs import run_annealing, run_reverse_annealing, run_tempering

__all__ = [
    "annealed_discriminance_sampling",
    "annealed_importance_sampling",
    "auto_reference",
    "mbar",
    "rao_blackwellized_tempered_sampling",
    "reverse_annealed_importance_sampling",
    "thermodynamic_integration",
]


RUN_MAKERS = {
    "annealing": run_annealing,
    "reverse_annealing": run_reverse_annealing,
    "tempering": run_tempering,
}
"""The function that makes each kind of run of :data:`~pm_evidence.core.methods.RUN_OPTIONS`."""

PATH_ESTIMATES = {
    "ais": path_estimators.ais,
    "raise": path_estimators.raise_,
    "ads": path_estimators.ads,
    "rts": path_estimators.rts,
    "ti": path_estimators.ti,
    "mbar": path_estimators.mbar,
}
"""The follow-up on its run that computes each path method (joined to its row by
:mod:`pm_evidence.registry`)."""


@runs_with_one_blas_thread
def _path_method(name, model, idata, random_seed, progressbar, keywords, backend):
    """One path method alone on a model, as its row of
    :data:`~pm_evidence.core.methods.METHOD_TABLE` says: the plan (with posterior draws if the
    method starts from them), the run it reads (keeping every draw if it needs them) from its
    own stage stream, and its follow-up on the run with the method's own options (checked, with
    every other option, by :func:`~pm_evidence.core.methods.route_options` before any work), in
    one BLAS thread as in ``marginal_likelihood``."""
    row = method_row(name)
    options = route_options(name, keywords)[name]
    run_options = options.objects[RUN_OPTIONS[row.run]]
    if row.records_draws and not run_options.record:
        run_options = replace(run_options, record=True)  # keeps every draw; the same draws
    rngs = stage_rngs(random_seed)
    plan = make_plan(
        model, options.objects["path"], idata=idata, sampling=options.sampling,
        need_posterior=row.needs_posterior, rngs=rngs, progressbar=progressbar,
        backend=backend,
    )  # fmt: skip
    run = RUN_MAKERS[row.run](plan, run_options, rng=rngs[row.stream], progressbar=progressbar)
    return PATH_ESTIMATES[name](run, **options.own)


_COMMON_PARAMETERS = """
    model : pymc.Model or LogDensity, optional
        Taken from the ``with model:`` context when omitted.
    path : PathOptions, optional
        The plan: ``reference`` (``"auto"``: the prior or a Student-t fitted to NUTS draws,
        whichever overlaps the posterior better; for discrete models the prior), ``kernel``
        (``"auto"``: HMC, Gibbs, or both for mixed models; for all-binary models Gibbs in
        blocks found from the model), ``n_leapfrog``, ``n_flips``, ``blocks``,
        ``n_pilot_chains``.
    idata : xarray.DataTree, optional
        Posterior draws of this model; drawn with NUTS when needed.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
    backend : {"auto", "numba", "jax"}
        The engine of the model's compiled functions: ``"auto"`` JAX where JAX sees a GPU, else
        Numba (:mod:`pm_evidence.model.backend`)."""

# the last parameters of every function, after its run's options object
_BY_NAME = """
    draws, tune, chains, sample_kwargs
        NUTS options, when the plan draws from the posterior (``None``: the plan's defaults).
    **fields
        Any field of the option objects by name (``n_chains=200``, ``target_se=0.005``,
        ``reference="prior"``: it replaces the object's value). Another name is an error that
        lists the accepted ones."""


def annealed_importance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""Annealed importance sampling (Neal 2001; seed 001; seed 000 eq. (8)).

    Chains start at ``p0`` and are annealed along the geometric path
    ``f_beta = p0^(1-beta) f^beta``, with rungs placed from the pilot at equal thermodynamic
    length; batches of chains are added until the standard error is at most ``target_se`` or
    the run has spent ``max_evaluations`` log-density evaluations.
    ``log Z = log mean w``: unbiased for ``Z``, so a stochastic **lower bound** on ``log Z``.

    Parameters
    ----------{common}
    annealing : AnnealingOptions, optional
        ``n_chains`` (None: batches until ``target_se``), ``ladder``, ``n_rungs`` (adaptive default
        ``clip(5 L^2, 20, 5000)`` for a path of thermodynamic length ``L``), ``beta_min``,
        ``n_steps``, ``target_se`` (0.005), ``max_chains``, ``max_evaluations`` (20 million: the
        run stops there even above ``target_se``, and its diagnostics say so: ``stopped_by``,
        ``se_reached``, ``n_evaluations``), ``time_limit``.

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.ais`. Its ``warnings`` name what failed: weight
        ESS below 30, Pareto k-hat of the weights above ``min(1 - 1/log10(n), 0.7)``, R-hat of
        the NUTS draws above 1.01, an improper prior.
    """
    options = dict(
        path=path, annealing=annealing, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("ais", model, idata, random_seed, progressbar, options, backend)


def reverse_annealed_importance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""Reverse AIS, RAISE (Burda et al. 2015; seed 004 §3.2; seed 000 §6).

    ``n_chains`` posterior draws (chosen at random without replacement from ``idata``'s
    draws, or drawn by NUTS; for discrete models a burn-in of the path's kernel) are annealed
    from ``beta = 1`` down to the reference. ``log Z = -log mean w``, an upper bound for exact
    posterior draws; from MCMC draws an estimate, and the result says so.

    Parameters
    ----------{common}
    annealing : AnnealingOptions, optional
        As :func:`annealed_importance_sampling` (one batch; ``target_se`` is not used).

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.raise_`.

    Raises
    ------
    EvidenceInputError
        If fewer posterior draws than ``n_chains`` are available.
    """
    options = dict(
        path=path, annealing=annealing, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("raise", model, idata, random_seed, progressbar, options, backend)


def annealed_discriminance_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    version: str = "binary",
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""Annealed discriminance sampling (seed 000 §5) on AIS's own draws and weights.

    Parameters
    ----------
    version : {{"binary", "multinomial"}}, default "binary"
        Sequential binary classifications (Alg. 1) or one multinomial classification (Alg. 2).{common}
    annealing : AnnealingOptions, optional
        As :func:`annealed_importance_sampling` (the same run).

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.ads`: diagnostics ``version`` and ``min_gamma``
        (binary) or ``n_iter`` (multinomial).
    """
    options = dict(
        path=path, annealing=annealing, version=version, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("ads", model, idata, random_seed, progressbar, options, backend)


def rao_blackwellized_tempered_sampling(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""Rao-Blackwellized tempered sampling, RTS (seed 004 §2, Alg. 1).

    Simulated tempering over ``(x, beta)`` with ``q(x, beta_k) propto f_k(x) r_k / Zhat_k``;
    ``c_k = mean_t q(beta_k | x_t)`` (eq. (9)) and ``Z_k = Zhat_k (r_1/r_k)(c_k/c_1)`` (eq.
    (12)). ``Zhat`` starts from the pilot and is refined by the initial iterations of §2.4; the
    final run goes until the SE (eq. (16)) is at most ``target_se``. Ctrl-C during the final run
    returns the estimate from the sweeps completed, with a warning.

    Parameters
    ----------{common}
    tempering : TemperingOptions, optional
        ``n_chains``, ``n_sweeps`` (None: until ``target_se`` = 0.005), ``ladder``
        (``"adaptive"``), ``n_rungs`` (adaptive default ``clip(L / 0.15 + 1, 8, 200)``),
        ``prior_r``, the initial iterations, ``min_sweeps``, ``max_sweeps``,
        ``max_evaluations`` (20 million, initial iterations included: the run stops there even
        above ``target_se``, and its diagnostics say so), ``time_limit``.

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.rts`: the count estimator too
        (``log_z_count``), and per-rung occupancy, ``prior_r`` and the transition matrix in
        ``sample_stats``.
    """
    options = dict(
        path=path, tempering=tempering, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("rts", model, idata, random_seed, progressbar, options, backend)


def thermodynamic_integration(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    variant: str = "rb",
    corrected: bool = True,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""Thermodynamic integration on simulated-tempering draws (seed 004 §3.4, eqs. (20)-(21)).

    The same tempered run as :func:`rao_blackwellized_tempered_sampling` (so not an independent
    check of it), read by :func:`pm_evidence.path.path_estimators.ti`.

    Parameters
    ----------
    variant : {{"rb", "trapezoid", "riemann"}}, default "rb"
    corrected : bool
        If True (the default), add the Euler-Maclaurin correction to the trapezoid variants.{common}
    tempering : TemperingOptions, optional
        As :func:`rao_blackwellized_tempered_sampling`.

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.ti`: every variant's value in the diagnostics
        (``log_z_rb``, ``log_z_trapezoid_corrected``, ...).
    """
    options = dict(
        path=path, tempering=tempering, variant=variant, corrected=corrected, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("ti", model, idata, random_seed, progressbar, options, backend)


def mbar(
    model: ModelLike = None,
    *,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    **fields,
) -> Evidence:
    r"""MBAR on simulated-tempering draws (seed 004 eq. (18); Shirts & Chodera 2008).

    The same tempered run as :func:`rao_blackwellized_tempered_sampling`, keeping ``Delta`` and
    the rung of every draw, read by :func:`pm_evidence.path.path_estimators.mbar`.

    Parameters
    ----------{common}
    tempering : TemperingOptions, optional
        As :func:`rao_blackwellized_tempered_sampling` (``record`` is set).

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path.path_estimators.mbar`; rungs without draws are dropped and counted
        in ``n_dropped_rungs``.
    """
    options = dict(
        path=path, tempering=tempering, draws=draws, tune=tune, chains=chains, sample_kwargs=sample_kwargs, **fields,
    )  # fmt: skip
    return _path_method("mbar", model, idata, random_seed, progressbar, options, backend)


for _function in (
    annealed_importance_sampling,
    reverse_annealed_importance_sampling,
    annealed_discriminance_sampling,
    rao_blackwellized_tempered_sampling,
    thermodynamic_integration,
    mbar,
):
    _function.__doc__ = (
        _function.__doc__.replace("{common}", _COMMON_PARAMETERS)
        .replace("\n\n    Returns", _BY_NAME + "\n\n    Returns", 1)
        .replace("{{", "{")
        .replace("}}", "}")
    )
