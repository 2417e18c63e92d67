"""The entry point :func:`marginal_likelihood`: one method, several on shared draws, or
``method="auto"`` (:mod:`pm_evidence.auto`)."""

from __future__ import annotations

from collections.abc import Sequence

import pymc as pm

from pm_evidence import registry
from pm_evidence.auto import (
    auto_evidence,
    auto_pair,
    check_precision,
    cross_checked,
    exploration_skipped,
)
from pm_evidence.core.evidence import DISAGREEMENT_Z, Evidence, EvidenceSet, format_estimate
from pm_evidence.core.exceptions import EvidenceInputError
from pm_evidence.core.methods import accepted_options
from pm_evidence.core.options import (
    AnnealingOptions,
    BridgeOptions,
    PathOptions,
    PosteriorOptions,
    TemperingOptions,
)
from pm_evidence.core.progress import interruptible, only_the_results_warnings, quiet, status
from pm_evidence.core.utils import one_blas_thread, root_sequence, warn_user
from pm_evidence.interop.resolve import resolve_model
from pm_evidence.model.log_density import as_target
from pm_evidence.registry import METHODS, PATH_METHODS
from pm_evidence.run_methods import (
    EXPLORATION_MAX_DIM,
    check_options,
    deprecated_options,
    estimate_methods,
    validate_options,
)

__all__ = [
    "EXPLORATION_MAX_DIM",
    "METHODS",
    "PATH_METHODS",
    "accepted_options",
    "auto_pair",
    "check_options",
    "check_precision",
    "cross_checked",
    "exploration_skipped",
    "marginal_likelihood",
]


def marginal_likelihood(
    model: pm.Model | None = None,
    *,
    method: str | Sequence[str] = "auto",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    posterior: PosteriorOptions | None = None,
    bridge: BridgeOptions | None = None,
    path: PathOptions | None = None,
    annealing: AnnealingOptions | None = None,
    tempering: TemperingOptions | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    sample_kwargs: dict | None = None,
    backend: str = "auto",
    **kwargs,
) -> Evidence | EvidenceSet:
    """Estimate the log marginal likelihood ``log p(y | M)`` of a PyMC model.

    Parameters
    ----------
    model : pymc.Model or Bambi model (bambi.Model), optional
        Taken from the ``with model:`` context when omitted. A Bambi model (built or not) is
        the PyMC model it builds, with Bambi's priors
        (:func:`~pm_evidence.interop.bambi.from_bambi`).
    method : str or list of str
        ``"auto"`` (default): the estimator a numerical expert would pick for this model, checked
        by one of another family that shares neither its draws nor its reference (see
        ``pm_evidence.marginal.auto_pair``): on continuous models bridge sampling on posterior draws,
        checked by AIS from the mixture found by tempering from the prior
        (``pm_evidence.search.exploration``), and a warning on either result where the other found
        posterior mass it missed; the better-supported of the two is returned, and a
        disagreement by more than 4 combined SEs is a warning on the result. Or one of
        :data:`~pm_evidence.METHODS`: ``"is"``, ``"ris"``, ``"ds"``, ``"bridge"``, the IS/RIS
        combinations of seed 000 §6, and the path methods ``"ais"``, ``"raise"``, ``"ads"``,
        ``"rts"``, ``"ti"``, ``"mbar"``. A list runs each on shared samples where the maths
        allows: posterior draws are sampled once; the path methods share one plan
        (:func:`~pm_evidence.make_plan`: reference, kernel, pilot); ``ais`` and ``ads`` read one
        annealing run, ``rts``, ``ti`` and ``mbar`` one tempered run. Every stage draws from its
        own random stream, so each method's result is the same alone and in a list, in any
        order.
    idata : xarray.DataTree, optional
        Posterior draws of this model (``pm.sample()`` output, any of its NUTS samplers, or a
        Bambi model's ``fit()``); drawn when needed: batched HMC
        (:mod:`pm_evidence.model.batched_hmc`) on models of at most 250 parameters, PyMC's NUTS
        on larger ones or where ``sample_kwargs`` is given.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
        Show progress bars (posterior draws, annealing, tempering).
    backend : {"auto", "numba", "jax"}
        The engine that compiles and runs the model's log density (and the fused HMC
        transitions around it): ``"auto"`` (default) JAX where JAX sees a GPU, else PyTensor's
        Numba backend; ``"jax"`` JAX on its default device (the CPU where it has no other;
        ``pip install "pm_evidence[jax]"``). The estimators are the same on both; the result
        records the engine and the device (``diagnostics["backend"]``, ``["device"]``). On
        JAX, an operation PyTensor cannot compile to JAX is an error naming it; with
        ``"auto"`` the model then runs on Numba (``diagnostics["backend_fallback"]`` says why).
    posterior, bridge : PosteriorOptions, BridgeOptions, optional
        The option objects of the methods on posterior draws.
    path, annealing, tempering : PathOptions, AnnealingOptions, TemperingOptions, optional
        The option objects of the path methods.
    draws, tune, chains, sample_kwargs
        Options of the posterior draws, where a method draws them (``None``: the sampler's
        defaults: batched HMC 16 chains of 400 tuning and 512 kept transitions; PyMC's NUTS 4
        chains of 1,000 and 1,000). ``sample_kwargs`` (``pm.sample``'s options; ``{}`` for
        its defaults) selects PyMC's NUTS.
    **kwargs
        Options: the option objects above (``posterior=``
        :class:`~pm_evidence.PosteriorOptions`, ``bridge=`` :class:`~pm_evidence.BridgeOptions`,
        ``path=`` :class:`~pm_evidence.PathOptions`, ``annealing=``
        :class:`~pm_evidence.AnnealingOptions`, ``tempering=``
        :class:`~pm_evidence.TemperingOptions`), or any of their fields by
        name (``reference="warp3"``, ``n_reference=``, ``target_se=0.005``, ``n_chains=200``);
        the methods' own options ``version`` (ads), ``variant``/``corrected`` (ti); NUTS options
        (``draws``, ``tune``, ``chains``, ``sample_kwargs``). With a list, every method receives
        the options it accepts: an option object goes to every method that takes it, and a
        field given by name to every method that has it, over the object's value
        (``reference=`` sets the reference of every listed method, bridge included;
        ``posterior=PosteriorOptions(reference=...)`` only those on posterior draws,
        ``path=PathOptions(reference=...)`` only the path methods). An option no requested
        method takes is an error. With ``method="auto"``, ``reference=`` is the path method's
        reference (AIS's; bridge keeps its normal fitted to posterior draws, so that the pair
        shares no reference). ``proposal=`` (bridge's reference alone) is deprecated: a
        ``FutureWarning``; pass ``reference=``. Bridge's result is labelled by its reference
        when not the default (``"bridge_warp3"``).

    Returns
    -------
    Evidence or EvidenceSet
        One :class:`~pm_evidence.Evidence` for one method; for a list, an
        :class:`~pm_evidence.EvidenceSet` (a dict of method name to Evidence with a combined
        report: ``summary()``, ``sandwich``). A warning is issued when two methods disagree by
        more than 4 combined standard errors.

    Raises
    ------
    EvidenceInputError
        For an unknown method, an option no requested method accepts or a value one refuses
        (all checked before any work), or ``idata`` of another model or other data.
    EstimationFailedError
        With ``method="auto"`` or a list, where every method (stage) failed: the message lists
        what each tried and why it failed. While one is left, a failed one is a warning on the
        result (``auto``: in ``warnings``, ``reliable`` False; a list: in ``failures``, method
        name to message). A single method's failure is raised as it is.
    KeyboardInterrupt
        On Ctrl-C: one line naming the phase (compilation, NUTS tuning, ...), no traceback when
        uncaught. With a list of methods, a Ctrl-C after the first finished returns those that
        finished, the others in the result's ``failures`` (and a warning); with
        ``method="auto"``, a Ctrl-C during the cross-check returns the estimate with a warning
        on it that it is unchecked; the tempered methods return their partial estimate.

    Notes
    -----
    ``progressbar=False`` prints nothing: PyMC's and PyTensor's loggers are raised to ``ERROR``
    for the run and restored afterwards. Whatever ``progressbar``, the only warnings issued are
    those the result carries (and deprecations): a warning of an internal stage whose result
    is not returned, NumPy's notes on overflows the code handles and PyMC's notes on the NUTS
    run it started go to the debug log
    (:func:`~pm_evidence.core.progress.only_the_results_warnings`). With ``progressbar=True`` a status line (on a
    terminal) shows what runs while no progress bar does, e.g. compilation.

    Examples
    --------
    >>> ev = pm_evidence.marginal_likelihood(model, method="rts", random_seed=1)
    >>> ev.log_z, ev.se
    >>> results = pm_evidence.marginal_likelihood(model, method=["ais", "raise", "ads", "rts"])
    >>> results.summary()
    """
    methods = _checked_methods(method)
    explicit = {
        "posterior": posterior, "bridge": bridge, "path": path, "annealing": annealing,
        "tempering": tempering, "draws": draws, "tune": tune, "chains": chains,
        "sample_kwargs": sample_kwargs,
    }  # fmt: skip
    kwargs = {**{k: v for k, v in explicit.items() if v is not None}, **kwargs}
    kwargs, only = deprecated_options(methods, kwargs)
    # auto's pair depends on the model (auto_pair): both pairs' options are checked here, the
    # model's own pair once the model is read
    validate_options(["bridge", "ais", "rts"] if methods == ["auto"] else methods, kwargs)
    model, idata = resolve_model(model, idata)  # a bambi.Model: its PyMC model and draws
    label = ", ".join(methods)
    # one BLAS thread (pm_evidence.core.utils.one_blas_thread): the many small solves run faster
    # with it on an idle machine up to 500 parameters, and far faster on a busy one
    with (
        quiet(not progressbar), interruptible(label), one_blas_thread(),
        only_the_results_warnings() as held,
    ):  # fmt: skip
        with status(
            f"pm_evidence {label}: compiling the model's log-density",
            progressbar,
            phase_name=f"compilation / set-up of {label!r}",
        ):
            target = as_target(model, backend)
        if methods == ["auto"]:
            result = auto_evidence(target, idata, random_seed, progressbar, kwargs)
        else:
            seed = root_sequence(random_seed)  # every callee gets the same stage streams
            result = estimate_methods(target, methods, idata, seed, progressbar, kwargs, only)
        held.results.append(result)
    held.issue()
    if isinstance(method, str):
        return result if methods == ["auto"] else result[method]
    for a, b, z in result.disagreements():
        warn_user(
            f"Methods {a!r} and {b!r} disagree by {z:.1f} combined standard errors "
            f"(> {DISAGREEMENT_Z:g}): log Z = {format_estimate(result[a].log_z, result[a].se)} "
            f"vs {format_estimate(result[b].log_z, result[b].se)}. At least one of them is "
            f"wrong or under-states its error; check their diagnostics (ESS, occupancy, "
            f"overlap).",
        )
    return result


def _checked_methods(method) -> list[str]:
    """``method`` as a list of known names without repeats (``["auto"]`` alone)."""
    if isinstance(method, str) and method == "auto":
        return ["auto"]
    if not isinstance(method, str) and not isinstance(method, Sequence):
        raise EvidenceInputError(
            f"method must be a name or a list of names of {list(METHODS)}, got "
            f"{type(method).__name__}."
        )
    if not isinstance(method, str) and "auto" in method:
        raise EvidenceInputError(
            "method='auto' picks two methods itself and cannot be part of a list; list the "
            f"methods to run instead (any of {list(METHODS[1:])})."
        )
    methods = [method] if isinstance(method, str) else list(method)
    for name in methods:
        registry.method(name)  # an unknown name is an error that lists the valid ones
    if len(set(methods)) != len(methods):
        raise EvidenceInputError(f"A method is listed twice in {methods}.")
    return methods
