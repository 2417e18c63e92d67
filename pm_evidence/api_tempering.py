"""Model-facing annealed and tempered estimators: AIS, RAISE, ADS, RTS, TI and MBAR.

Each public function is three explicit steps, which a user can also take one by one:

1. :func:`~pm_evidence.plan.make_plan`: the reference ``p0`` (for continuous models the better
   of the prior and a Student-t fitted to NUTS draws, :func:`~pm_evidence.plan.auto_reference`),
   the kernel, and a pilot run that measures the path and tunes the kernel along it;
2. a run on the plan (:func:`~pm_evidence.runs.run_annealing`,
   :func:`~pm_evidence.runs.run_reverse_annealing`, :func:`~pm_evidence.runs.run_tempering`)
   on a ladder placed from the pilot, as long as ``target_se`` asks;
3. an estimator that reads the run (:mod:`pm_evidence.path_estimators`).

Options are small frozen dataclasses (:class:`~pm_evidence.plan.PathOptions`,
:class:`~pm_evidence.runs.AnnealingOptions`, :class:`~pm_evidence.runs.TemperingOptions`);
their fields may also be given as keywords (``n_chains=200``), and NUTS options (``draws``,
``tune``, ``chains``, ``sample_kwargs``) likewise. Every stage draws from its own random stream
(:func:`~pm_evidence.utils.stage_rngs`), so a method gives the same result alone and in a list.
"""

from __future__ import annotations

from dataclasses import fields, replace

import pymc as pm

from pm_evidence import path_estimators, registry
from pm_evidence.evidence import Evidence
from pm_evidence.exceptions import EvidenceInputError
from pm_evidence.plan import SAMPLE_KEYS, PathOptions, auto_reference, make_plan
from pm_evidence.runs import (
    AnnealingOptions,
    TemperingOptions,
)
from pm_evidence.target import LogDensity
from pm_evidence.utils import stage_rngs

__all__ = [
    "annealed_discriminance_sampling",
    "annealed_importance_sampling",
    "auto_reference",
    "mbar",
    "rao_blackwellized_tempered_sampling",
    "reverse_annealed_importance_sampling",
    "split_options",
    "thermodynamic_integration",
]


def split_options(keywords: dict, **given) -> tuple[dict, dict]:
    """Sort keyword options into the option dataclasses and the NUTS options.

    ``given`` maps a name to ``(cls, instance or None)``; every keyword that names a field of
    one or more of the classes sets it in each (``n_chains`` in both annealing and tempering
    options), and the NUTS options (``draws``, ``tune``, ``chains``, ``sample_kwargs``) are
    returned apart. Any other keyword is an error that lists the accepted names.

    Returns
    -------
    options : dict
        ``name -> instance`` (the given instance, or a default one, with the keywords applied).
    sampling : dict
        The NUTS options.
    """
    options, accepted = {}, set(SAMPLE_KEYS)
    for name, (cls, instance) in given.items():
        names = {f.name for f in fields(cls)}
        accepted |= names
        chosen = {k: v for k, v in keywords.items() if k in names}
        options[name] = replace(instance or cls(), **chosen)
    unknown = set(keywords) - accepted
    if unknown:
        raise EvidenceInputError(
            f"Unexpected options {sorted(unknown)}; accepted here: {sorted(accepted)}."
        )
    sampling = {k: v for k, v in keywords.items() if k in SAMPLE_KEYS}
    return options, sampling


def _path_method(name, model, path, run_options, idata, random_seed, progressbar, keywords,
                 **own):  # fmt: skip
    """One path method alone on a model, as its row of :mod:`pm_evidence.registry` says: the
    plan (with posterior draws if the method starts from them), the run it reads (keeping every
    draw if it needs them) from its own stage stream, and its follow-up on the run."""
    row = registry.method(name)
    kind = registry.RUN_KINDS[row.run]
    options, sampling = split_options(
        keywords, path=(PathOptions, path), run=(kind.options, run_options)
    )
    run_options = options["run"]
    if row.records_draws and not run_options.record:
        run_options = replace(run_options, record=True)  # keeps every draw; the same draws
    rngs = stage_rngs(random_seed)
    plan = make_plan(
        model, options["path"], idata=idata, sampling=sampling,
        need_posterior=row.needs_posterior, rngs=rngs, progressbar=progressbar,
    )  # fmt: skip
    run = kind.make(plan, run_options, rng=rngs[row.stream], progressbar=progressbar)
    return row.estimate(run, **own)


def _check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise EvidenceInputError(
            f"Requested {name} {value!r} but it must be one of {list(allowed)}."
        )


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
    **options
        Fields of the option dataclasses by name (e.g. ``n_chains=200``, ``target_se=0.005``,
        ``reference="prior"``) and NUTS options (``draws``, ``tune``, ``chains``,
        ``sample_kwargs``)."""


def annealed_importance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
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
        See :func:`pm_evidence.path_estimators.ais`. Its ``warnings`` name what failed: weight
        ESS below 30, Pareto k-hat of the weights above ``min(1 - 1/log10(n), 0.7)``, R-hat of
        the NUTS draws above 1.01, an improper prior.
    """
    return _path_method("ais", model, path, annealing, idata, random_seed, progressbar, options)


def reverse_annealed_importance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
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
        See :func:`pm_evidence.path_estimators.reverse_ais`.

    Raises
    ------
    EvidenceInputError
        If fewer posterior draws than ``n_chains`` are available.
    """
    return _path_method("raise", model, path, annealing, idata, random_seed, progressbar, options)


def annealed_discriminance_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    version: str = "binary",
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
) -> Evidence:
    r"""Annealed discriminance sampling (seed 000 §5) on AIS's own draws and weights.

    Parameters
    ----------
    version : {{"binary", "multinomial"}}
        Sequential binary classifications (Alg. 1) or one multinomial classification (Alg. 2).{common}
    annealing : AnnealingOptions, optional
        As :func:`annealed_importance_sampling` (the same run).

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path_estimators.ads`.
    """
    _check_choice("version", version, path_estimators.ADS_VERSIONS)  # before the run
    return _path_method("ads", model, path, annealing, idata, random_seed, progressbar, options,
                        version=version)  # fmt: skip


def rao_blackwellized_tempered_sampling(
    model: pm.Model | LogDensity | None = None,
    *,
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
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
        See :func:`pm_evidence.path_estimators.rts`.
    """
    return _path_method("rts", model, path, tempering, idata, random_seed, progressbar, options)


def thermodynamic_integration(
    model: pm.Model | LogDensity | None = None,
    *,
    variant: str = "rb",
    corrected: bool = True,
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
) -> Evidence:
    r"""Thermodynamic integration on simulated-tempering draws (seed 004 §3.4, eqs. (20)-(21)).

    The same tempered run as :func:`rao_blackwellized_tempered_sampling` (so not an independent
    check of it), read by :func:`pm_evidence.path_estimators.ti`.

    Parameters
    ----------
    variant : {{"rb", "trapezoid", "riemann"}}
    corrected : bool
        Add the Euler-Maclaurin correction to the trapezoid variants.{common}
    tempering : TemperingOptions, optional
        As :func:`rao_blackwellized_tempered_sampling`.

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path_estimators.ti`.
    """
    _check_choice("variant", variant, path_estimators.TI_VARIANTS)  # before the run
    return _path_method("ti", model, path, tempering, idata, random_seed, progressbar, options,
                        variant=variant, corrected=corrected)  # fmt: skip


def mbar(
    model: pm.Model | LogDensity | None = None,
    *,
    path: PathOptions | None = None,
    tempering: TemperingOptions | None = None,
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **options,
) -> Evidence:
    r"""MBAR on simulated-tempering draws (seed 004 eq. (18); Shirts & Chodera 2008).

    The same tempered run as :func:`rao_blackwellized_tempered_sampling`, keeping ``Delta`` and
    the rung of every draw, read by :func:`pm_evidence.path_estimators.mbar`.

    Parameters
    ----------{common}
    tempering : TemperingOptions, optional
        As :func:`rao_blackwellized_tempered_sampling` (``record`` is set).

    Returns
    -------
    Evidence
        See :func:`pm_evidence.path_estimators.mbar`.
    """
    return _path_method("mbar", model, path, tempering, idata, random_seed, progressbar, options)


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
        .replace("{{", "{")
        .replace("}}", "}")
    )
