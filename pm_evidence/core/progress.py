"""Progress bars, status lines, quiet runs and graceful Ctrl-C.

- :func:`long_run` shows a progress bar (``rich``, as PyMC uses) unless ``enabled=False`` and,
  for the duration of the loop only, turns the first Ctrl-C into a flag instead of an exception:
  a sampler checks ``run.interrupted`` between whole steps, so its accumulators are never left
  half-updated. A second Ctrl-C raises :class:`KeyboardInterrupt` immediately.
- :func:`status` shows a transient one-line status (a spinner and the elapsed time) while work
  without a progress bar runs, e.g. compiling the model's log-density; it steps aside while a
  progress bar (ours or PyMC's) is shown.
- :func:`quiet` silences PyMC's and PyTensor's loggers below ``ERROR`` while it is active and
  restores their levels afterwards (``progressbar=False`` prints nothing).
- :func:`only_the_results_warnings` holds back the warnings issued inside and issues again only
  those that the result carries (and deprecations), once each.
- What runs now (phases, status lines) is per thread (``_ACTIVITY``), display state that no
  computation reads.
- :func:`interruptible` turns a Ctrl-C anywhere inside it (compilation, NUTS, a path sampler)
  into a :class:`KeyboardInterrupt` that names the phase and shows as one line instead of a
  traceback, in a script and in IPython alike (:func:`interruption`). It installs no signal
  handler; once a run was interrupted, ``sys.excepthook`` is wrapped so that this one exception
  prints as one line (every other exception goes to the previous hook).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from pm_evidence.core.utils import warn_user

_log = logging.getLogger(__name__)

__all__ = [
    "HeldWarnings",
    "LongRun",
    "interruptible",
    "interruption",
    "long_run",
    "only_the_results_warnings",
    "quiet",
    "status",
]



class _Activity(threading.local):
    """What this thread of the library is doing now: display state only, never read by a
    computation (a thread of ``compare_models`` has its own).

    Attributes
    ----------
    phases : list of str
        What runs, innermost last (named in the Ctrl-C message).
    statuses : list
        Status lines being shown, innermost last (paused while a progress bar is shown).
    swallowed : list of str
        Phases in which compiled code swallowed a Ctrl-C (raised at the next phase boundary).
    """

    def __init__(self):
        self.phases: list[str] = []
        self.statuses: list = []
        self.swallowed: list[str] = []


_ACTIVITY = _Activity()
# Loggers that print during pm.sample and compilation.
QUIET_LOGGERS = ("pymc", "pytensor")


def interruption(message: str, *, phase: str = "", method: str = "") -> KeyboardInterrupt:
    """A :class:`KeyboardInterrupt` that names the phase and, left uncaught, shows as one line.

    A plain ``KeyboardInterrupt`` (``except KeyboardInterrupt`` catches it, and an uncaught one
    ends the program with the usual status 130), with attributes ``phase`` (what was running:
    ``"NUTS tuning"``, ``"tuning kernel"``, ...) and ``method``. It prints as
    ``KeyboardInterrupt: <message>`` instead of a traceback, also in IPython / Jupyter.
    """
    err = KeyboardInterrupt(message)
    err.phase = phase
    err.method = method
    err.pm_evidence_one_line = True
    # IPython's hook for exceptions that draw their own traceback
    err._render_traceback_ = lambda: [f"KeyboardInterrupt: {message}"]
    return err


def _one_line_excepthook(previous):
    def hook(exc_type, exc, tb):
        if getattr(exc, "pm_evidence_one_line", False):
            sys.stderr.write(f"KeyboardInterrupt: {exc}\n")
            sys.stderr.flush()
            return
        previous(exc_type, exc, tb)

    hook.pm_evidence_one_line = True
    return hook


def _install_one_line_excepthook() -> None:
    """Make an uncaught :func:`interruption` print one line; other exceptions unchanged.

    Installed only once a run was interrupted (the user asked to stop); it hands every other
    exception to the hook it wraps.
    """
    if not getattr(sys.excepthook, "pm_evidence_one_line", False):
        sys.excepthook = _one_line_excepthook(sys.excepthook)


def _raise_if_swallowed() -> None:
    """Re-raise a Ctrl-C that compiled code swallowed (see :func:`interruptible`)."""
    if _ACTIVITY.swallowed:
        where = _ACTIVITY.swallowed[0]
        _ACTIVITY.swallowed.clear()
        err = KeyboardInterrupt()
        err.pm_evidence_phase = where
        raise err


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Name what runs inside; a Ctrl-C inside is tagged with the innermost name.

    On entry and exit, a Ctrl-C that compiled code swallowed in the meantime is raised.
    """
    _raise_if_swallowed()
    _ACTIVITY.phases.append(name)
    _log.debug("phase started: %s", name)
    try:
        yield
    except KeyboardInterrupt as err:
        if not hasattr(err, "pm_evidence_phase"):
            err.pm_evidence_phase = _ACTIVITY.phases[-1]
        raise
    finally:
        _ACTIVITY.phases.pop()
    _raise_if_swallowed()


@contextmanager
def interruptible(method: str, *, nothing_computed: str = "nothing was computed") -> Iterator[None]:
    """Turn a Ctrl-C inside into a one-line :func:`interruption` that names the phase.

    A Ctrl-C that lands in a C callback (numba's LLVM compiler calls back into Python through
    ``ctypes``) is swallowed there and reported to ``sys.unraisablehook``, and compilation goes
    on in a broken state. While the block runs, ``sys.unraisablehook`` is wrapped to note such
    a ``KeyboardInterrupt`` (instead of printing its traceback); it is raised at the next phase
    boundary. Every other unraisable exception goes to the previous hook, restored afterwards.

    Parameters
    ----------
    method : str
        The method being run (named in the message).
    nothing_computed : str
        The end of the message: what the user keeps.
    """
    previous_hook = sys.unraisablehook

    def _note_swallowed(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _ACTIVITY.swallowed.append(_ACTIVITY.phases[-1] if _ACTIVITY.phases else "setting up")
            return
        previous_hook(unraisable)

    sys.unraisablehook = _note_swallowed
    try:
        yield
        _raise_if_swallowed()
    except KeyboardInterrupt as err:
        if getattr(err, "pm_evidence_one_line", False):
            raise
        where = getattr(err, "pm_evidence_phase", "setting up")
        detail = f" ({err})" if str(err) else ""
        _install_one_line_excepthook()
        raise interruption(
            f"pm_evidence: {method!r} interrupted by Ctrl-C during {where}{detail}; "
            f"{nothing_computed}.",
            phase=where,
            method=method,
        ) from None
    finally:
        sys.unraisablehook = previous_hook
        _ACTIVITY.swallowed.clear()


@contextmanager
def quiet(enabled: bool = True, loggers: tuple[str, ...] = QUIET_LOGGERS) -> Iterator[None]:
    """Raise the given loggers to ``ERROR`` inside (when ``enabled``) and restore them after.

    Parameters
    ----------
    enabled : bool
        Do nothing when ``False``.
    loggers : tuple of str
        Logger names (PyMC's and PyTensor's by default).
    """
    if not enabled:
        yield
        return
    saved = [(logging.getLogger(name), logging.getLogger(name).level) for name in loggers]
    for logger, _ in saved:
        if logger.getEffectiveLevel() < logging.ERROR:
            logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


class _StatusLine:
    """A rich status line that can step aside for a progress bar and come back."""

    def __init__(self, message: str):
        from rich.console import Console

        self._console = Console(stderr=True)
        self._status = self._console.status(message, spinner="dots")
        self._shown = False

    def show(self) -> None:
        if not self._shown:
            self._status.start()
            self._shown = True

    def hide(self) -> None:
        if self._shown:
            self._status.stop()
            self._shown = False

    def update(self, message: str) -> None:
        self._status.update(message)


@contextmanager
def status(message: str, enabled: bool = True, *, phase_name: str | None = None) -> Iterator[None]:
    """A transient one-line status (spinner) on stderr while the block runs.

    Shown only on a terminal and when ``enabled``; hidden while a progress bar is shown
    (:func:`long_run`, ``progress_bar_shown``).

    Parameters
    ----------
    message : str
        What is being done, e.g. ``"compiling the model's log-density"``.
    enabled : bool
        ``False`` shows nothing.
    phase_name : str, optional
        The phase named by a Ctrl-C message (default: ``message``).
    """
    line = None
    if enabled:
        try:
            line = _StatusLine(message)
            line.show()
        except Exception:  # a console that cannot show it: run without
            line = None
    _ACTIVITY.statuses.append(line)
    try:
        with phase(phase_name or message):
            yield
    finally:
        _ACTIVITY.statuses.pop()
        if line is not None:
            line.hide()


def set_status(message: str) -> None:
    """Change the innermost status line's message."""
    if _ACTIVITY.statuses and _ACTIVITY.statuses[-1] is not None:
        _ACTIVITY.statuses[-1].update(message)


@contextmanager
def progress_bar_shown() -> Iterator[None]:
    """Hide the status lines while another live display (a progress bar) is shown."""
    hidden = [line for line in _ACTIVITY.statuses if line is not None and line._shown]
    for line in hidden:
        line.hide()
    try:
        yield
    finally:
        for line in hidden:
            line.show()


class LongRun:
    """Handle yielded by :func:`long_run`: ``advance(n)`` and the ``interrupted`` flag."""

    def __init__(self, progress=None, task=None):
        self._progress = progress
        self._task = task
        self.interrupted = False

    def advance(self, n: int = 1) -> None:
        """Advance the bar by ``n`` steps."""
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def describe(self, description: str) -> None:
        """Change the bar's description."""
        if self._progress is not None:
            self._progress.update(self._task, description=description)


@contextmanager
def long_run(total: int, description: str, enabled: bool = True) -> Iterator[LongRun]:
    """Progress bar over ``total`` steps plus a Ctrl-C flag (main thread only).

    The process's SIGINT handler is replaced only inside this block and restored on exit.
    """
    with phase(description), progress_bar_shown():
        progress = task = None
        if enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            task = progress.add_task(description, total=total)
            progress.start()
        run = LongRun(progress, task)

        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if in_main else None

        def _handler(signum, frame):
            if run.interrupted:  # second Ctrl-C: stop now
                raise KeyboardInterrupt
            run.interrupted = True

        if in_main:
            signal.signal(signal.SIGINT, _handler)
        try:
            yield run
        finally:
            if in_main:
                signal.signal(signal.SIGINT, previous)
            if progress is not None:
                progress.stop()


def pymc_sample(*, draws: int, progressbar: bool, **kwargs):
    """``pm.sample`` with its logger silenced when ``progressbar=False`` and Ctrl-C passed on.

    PyMC catches a Ctrl-C, stops the chain it was sampling (others go on) and returns what it
    has. While ``pm.sample`` runs, a SIGINT handler that notes the Ctrl-C and then calls the
    previous handler is installed (and restored afterwards); a noted Ctrl-C becomes a
    :class:`KeyboardInterrupt` tagged ``"NUTS tuning"`` or ``"NUTS sampling"``, so that no caller
    estimates ``log Z`` from a run the user stopped.

    Parameters
    ----------
    draws : int
        Draws per chain requested.
    progressbar : bool
        PyMC's progress bar; ``False`` also silences PyMC's log lines.
    **kwargs
        Passed to :func:`pymc.sample`.

    Returns
    -------
    xarray.DataTree
        ``pm.sample``'s output.
    """
    import pymc as pm

    noted = []
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if in_main else None

    def _note_and_pass_on(signum, frame):
        noted.append(signum)
        if callable(previous):
            previous(signum, frame)
        else:  # SIG_DFL (or None: set outside Python): Python's default action
            raise KeyboardInterrupt

    user_callback = kwargs.pop("callback", None)

    in_tuning = [True]  # whether the last draw PyMC reported was a tuning draw

    def _stop_every_chain(trace, draw):
        # PyMC stops only the chain a Ctrl-C hit; this stops the ones after it at their first draw
        in_tuning[0] = bool(draw.tuning)
        if user_callback is not None:
            user_callback(trace=trace, draw=draw)
        if noted:
            raise KeyboardInterrupt

    watch = in_main and previous is not signal.SIG_IGN
    if watch:
        signal.signal(signal.SIGINT, _note_and_pass_on)
    try:
        with (
            phase("NUTS (compiling, tuning, sampling)"),
            quiet(not progressbar),
            progress_bar_shown(),
        ):
            idata = pm.sample(
                draws=draws, progressbar=progressbar, callback=_stop_every_chain, **kwargs
            )
    except Exception as err:
        if not noted:
            raise
        # a run stopped part-way can fail when PyMC assembles it: report the Ctrl-C
        stopped = KeyboardInterrupt()
        stopped.pm_evidence_phase = "NUTS tuning" if in_tuning[0] else "NUTS sampling"
        raise stopped from err
    finally:
        if watch:
            signal.signal(signal.SIGINT, previous)
    got = int(idata["posterior"].sizes.get("draw", 0))
    if noted or got < draws:
        stopped = KeyboardInterrupt(f"{got} of {draws} draws per chain" if got < draws else "")
        stopped.pm_evidence_phase = "NUTS tuning" if got == 0 or in_tuning[0] else "NUTS sampling"
        raise stopped
    return idata


def _messages_on(result) -> list[str]:
    """The warnings a result carries, in order: an Evidence's ``warnings``, those of every
    Evidence of an EvidenceSet, and its ``failures``."""
    if hasattr(result, "warnings"):
        return list(result.warnings)
    if isinstance(result, dict):
        found = [m for value in result.values() for m in _messages_on(value)]
        return found + list(getattr(result, "failures", {}).values())
    return []


class HeldWarnings:
    """The warnings held back by :func:`only_the_results_warnings` and the results whose
    warnings are to be issued (append them to ``results``)."""

    def __init__(self):
        self.results: list = []
        self.held: list = []

    def issue(self) -> None:
        """Issue, once each and at the caller's line (:func:`~pm_evidence.core.utils.warn_user`:
        the caller's filters and "once per line" apply), every warning the results carry
        (``_messages_on``) and every held ``FutureWarning`` / ``DeprecationWarning``; the
        others go to the debug log. Call it after the ``with`` block, from the public
        function."""
        wanted = [m for r in self.results for m in _messages_on(r)]
        category = {}
        for w in self.held:
            category.setdefault(str(w.message), w.category)
            if issubclass(w.category, FutureWarning | DeprecationWarning):
                warn_user(str(w.message), w.category)
            elif str(w.message) not in wanted:
                _log.debug("warning held back (not on the result): %s: %s", w.category, w)
        for text in dict.fromkeys(wanted):
            kind = category.get(text, UserWarning)
            if not issubclass(kind, FutureWarning | DeprecationWarning):
                warn_user(text, kind)


@contextmanager
def only_the_results_warnings() -> Iterator[HeldWarnings]:
    """Hold back every warning issued inside, for :meth:`HeldWarnings.issue` to issue those
    that the results appended to ``HeldWarnings.results`` carry, and the deprecations.

    What is held back goes to the debug log: NumPy's ``RuntimeWarning`` from computations
    whose non-finite outcomes the code handles (an overflow in a weight that is then
    rejected), PyMC's notes on the NUTS run the library started, and the warnings of an
    internal stage whose result was not returned (``method="auto"``'s cross-check). So
    every warning that matters is on the result and issued, and ``progressbar=False`` prints
    nothing else. ``warnings.catch_warnings`` is process-wide: calls from several threads at
    once (a thread pool given to ``compare_models``) can lose each other's warnings;
    processes are safe.
    """
    held = HeldWarnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield held
        finally:
            held.held = list(caught)
