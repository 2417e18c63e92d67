"""The entry point :func:`marginal_likelihood`: one method, or several on shared draws."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence

import pymc as pm

from pm_evidence.api import (
    _target,
    bridge_sampling,
    discriminance_sampling,
    importance_sampling,
    is_ris_combination,
    posterior_draws,
    reverse_importance_sampling,
)
from pm_evidence.api_tempering import (
    annealed_discriminance_sampling,
    annealed_importance_sampling,
    mbar,
    rao_blackwellized_tempered_sampling,
    reverse_annealed_importance_sampling,
    thermodynamic_integration,
)
from pm_evidence.evidence import DISAGREEMENT_Z, Evidence, EvidenceSet
from pm_evidence.exceptions import EvidenceInputError
from pm_evidence.progress import interruptible, quiet, status
from pm_evidence.utils import as_generator

__all__ = ["METHODS", "marginal_likelihood"]

_METHOD_FUNCTIONS: dict[str, Callable[..., Evidence]] = {
    "is": importance_sampling,
    "ris": reverse_importance_sampling,
    "ds": discriminance_sampling,
    "bridge": bridge_sampling,
    "is_ris_average": lambda model=None, **kw: is_ris_combination(model, rule="average", **kw),
    "is_ris_weighted": lambda model=None, **kw: is_ris_combination(model, rule="weighted", **kw),
    "is_ris_selection": lambda model=None, **kw: is_ris_combination(model, rule="selection", **kw),
    "ais": annealed_importance_sampling,
    "raise": reverse_annealed_importance_sampling,
    "ads": annealed_discriminance_sampling,
    "rts": rao_blackwellized_tempered_sampling,
    "ti": thermodynamic_integration,
    "mbar": mbar,
}
METHODS: tuple[str, ...] = tuple(_METHOD_FUNCTIONS)
"""Names accepted by ``marginal_likelihood(method=...)`` (read-only)."""
# methods along the geometric path: they share one set-up (reference, ladder, kernel tuning)
PATH_METHODS = ("ais", "raise", "ads", "rts", "ti", "mbar")
SAMPLE_KEYS = ("draws", "tune", "chains", "sample_kwargs")


def marginal_likelihood(
    model: pm.Model | None = None,
    *,
    method: str | Sequence[str] = "bridge",
    idata=None,
    random_seed=None,
    progressbar: bool = True,
    **kwargs,
) -> Evidence | EvidenceSet:
    """Estimate the log marginal likelihood ``log p(y | M)`` of a PyMC model.

    Parameters
    ----------
    model : pymc.Model, optional
        Taken from the ``with model:`` context when omitted.
    method : str or list of str
        One of :data:`~pm_evidence.METHODS`: ``"is"``, ``"ris"``, ``"ds"``, ``"bridge"``, the IS/RIS
        combinations of seed 000 §6, and the path methods ``"ais"``, ``"raise"``, ``"ads"``,
        ``"rts"``, ``"ti"``, ``"mbar"``. A list runs each on shared samples where the maths
        allows: posterior draws are sampled once; the path methods share one reference, ladder
        and kernel tuning; ``ads`` reuses the AIS run; ``ti`` and ``mbar`` reuse the tempered
        run of ``rts``.
    idata : xarray.DataTree, optional
        Posterior draws of this model (``pm.sample()`` output); drawn with NUTS when needed.
    random_seed : int or numpy.random.Generator, optional
    progressbar : bool
        Show progress bars (NUTS, annealing, tempering).
    **kwargs
        Options of the method's own function (e.g. ``reference=``, ``n_rungs=``, or
        ``proposal="warp3"`` for ``"bridge"``, whose result is then labelled
        ``"bridge_warp3"``). With a list, every method receives the options it accepts.

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
        For an unknown method or options no requested method accepts.
    KeyboardInterrupt
        On Ctrl-C: one line naming the phase (compilation, NUTS tuning, ...), no traceback when
        uncaught. With a list of methods, a Ctrl-C after the first finished returns those that
        finished, with a warning; the tempered methods return their partial estimate.

    Notes
    -----
    ``progressbar=False`` prints nothing: PyMC's and PyTensor's loggers are raised to ``ERROR``
    for the run and restored afterwards. With ``progressbar=True`` a status line (on a
    terminal) shows what runs while no progress bar does, e.g. compilation.

    Examples
    --------
    >>> ev = pm_evidence.marginal_likelihood(model, method="rts", random_seed=1)
    >>> ev.log_z, ev.se
    >>> results = pm_evidence.marginal_likelihood(model, method=["ais", "raise", "ads", "rts"])
    >>> results.summary()
    """
    label = method if isinstance(method, str) else ", ".join(method)
    with quiet(not progressbar), interruptible(label):
        return _marginal_likelihood(model, method, idata, random_seed, progressbar, kwargs)


def _run_method(name: str, model, progressbar: bool, **options) -> Evidence:
    """One method, with a status line until its progress bars take over."""
    with status(
        f"pm_evidence {name}: compiling the model's log-density and setting up",
        progressbar,
        phase_name=f"compilation / set-up of {name!r}",
    ):
        return _METHOD_FUNCTIONS[name](model, progressbar=progressbar, **options)


def _marginal_likelihood(model, method, idata, random_seed, progressbar, kwargs):
    if isinstance(method, str):
        _check_method(method)
        return _run_method(
            method, model, progressbar, idata=idata, random_seed=random_seed, **kwargs
        )
    methods = list(method)
    for name in methods:
        _check_method(name)
    target = _target(model)
    rng = as_generator(random_seed)
    plain = [m for m in methods if m not in PATH_METHODS]
    # RAISE on a discrete model draws its own posterior with the path's kernel (no NUTS)
    needs_posterior = bool(plain) or ("raise" in methods and not target.has_discrete)
    if idata is None and needs_posterior:
        sampling = {k: kwargs.pop(k) for k in SAMPLE_KEYS if k in kwargs}
        # shared as flat draws: no round trip through named values
        idata = posterior_draws(target, None, rng=rng, progressbar=progressbar, **sampling)
    unused = set(kwargs) - set().union(*(_accepted_options(m) for m in methods))
    if unused:
        raise EvidenceInputError(
            f"Options {sorted(unused)} are not accepted by any of the methods {methods}."
        )
    runs = {"record_tempered": "mbar" in methods}
    results = EvidenceSet()
    for name in methods:
        accepted = _accepted_options(name)
        options = {k: v for k, v in kwargs.items() if k in accepted}
        if name in PATH_METHODS:
            options["_runs"] = runs
        try:
            results[name] = _run_method(
                name, target, progressbar, idata=idata, random_seed=rng, **options
            )
        except KeyboardInterrupt:
            if not results:
                raise
            warnings.warn(
                f"Interrupted (Ctrl-C) while running {name!r}: returning the methods that "
                f"finished, {list(results)}; {methods[len(results) :]} did not run.",
                UserWarning,
                stacklevel=3,
            )
            break
        if results[name].diagnostics.get("interrupted") and name != methods[-1]:
            warnings.warn(
                f"{name!r} was interrupted (Ctrl-C) and returned a partial estimate; "
                f"{methods[len(results) :]} did not run.",
                UserWarning,
                stacklevel=3,
            )
            break
    for a, b, z in results.disagreements():
        warnings.warn(
            f"Methods {a!r} and {b!r} disagree by {z:.1f} combined standard errors "
            f"(> {DISAGREEMENT_Z:g}): log Z = {results[a].log_z:.4f} ± {results[a].se:.4f} vs "
            f"{results[b].log_z:.4f} ± {results[b].se:.4f}. At least one of them is wrong or "
            f"under-states its error; check their diagnostics (ESS, occupancy, overlap).",
            UserWarning,
            stacklevel=3,
        )
    return results


def _accepted_options(name: str) -> set[str]:
    """Keyword options the method's function accepts (its signature plus NUTS options)."""
    function = _METHOD_FUNCTIONS[name]
    if name.startswith("is_ris_"):
        function = is_ris_combination
    parameters = inspect.signature(function).parameters
    return {p for p in parameters if not p.startswith("_")} | set(SAMPLE_KEYS)


def _check_method(name) -> None:
    if name not in METHODS:
        raise EvidenceInputError(
            f"Requested method {name!r} but it must be one of {list(METHODS)}."
        )
