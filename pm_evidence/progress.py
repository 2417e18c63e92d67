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
- :func:`interruptible` turns a Ctrl-C anywhere inside it (compilation, NUTS, a path sampler)
  into :class:`EvidenceInterrupted`, a :class:`KeyboardInterrupt` that names the phase and shows
  as one line instead of a traceback, in a script and in IPython alike. It installs no signal
  handler.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EvidenceInterrupted", "LongRun", "interruptible", "long_run", "quiet", "status"]

# What the library is doing now, innermost last (named in the Ctrl-C message).
_PHASES: list[str] = []
# Status lines being shown, innermost last (paused while a progress bar is shown).
_STATUSES: list = []
# Loggers that print during pm.sample and compilation.
QUIET_LOGGERS = ("pymc", "pytensor")


class EvidenceInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run of :func:`pm_evidence.marginal_likelihood`.

    A :class:`KeyboardInterrupt` (``except KeyboardInterrupt`` catches it), whose message names
    the phase that was running. Left uncaught, it ends the program with that one line instead of
    a traceback (also in IPython / Jupyter).

    Attributes
    ----------
    phase : str
        What was running: ``"compiling"``, ``"NUTS tuning"``, ``"tuning kernel"``, ...
    method : str
        The method being run.
    """

    def __init__(self, message: str, *, phase: str = "", method: str = ""):
        super().__init__(message)
        self.phase = phase
        self.method = method

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "interrupted"

    def _render_traceback_(self) -> list[str]:
        # IPython's hook for exceptions that draw their own traceback
        return [f"KeyboardInterrupt: {self}"]


def _one_line_excepthook(previous):
    def hook(exc_type, exc, tb):
        if isinstance(exc, EvidenceInterrupted):
            sys.stderr.write(f"KeyboardInterrupt: {exc}\n")
            sys.stderr.flush()
            return
        previous(exc_type, exc, tb)

    hook.pm_evidence_one_line = True
    return hook


def _install_one_line_excepthook() -> None:
    """Make an uncaught :class:`EvidenceInterrupted` print one line; other errors unchanged.

    Installed only once a run was interrupted (the user asked to stop); it hands every other
    exception to the hook it wraps.
    """
    if not getattr(sys.excepthook, "pm_evidence_one_line", False):
        sys.excepthook = _one_line_excepthook(sys.excepthook)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Name what runs inside; a Ctrl-C inside is tagged with the innermost name."""
    _PHASES.append(name)
    try:
        yield
    except KeyboardInterrupt as err:
        if not hasattr(err, "pm_evidence_phase"):
            err.pm_evidence_phase = _PHASES[-1]
        raise
    finally:
        _PHASES.pop()


@contextmanager
def interruptible(method: str, *, nothing_computed: str = "nothing was computed") -> Iterator[None]:
    """Turn a Ctrl-C inside into a one-line :class:`EvidenceInterrupted` naming the phase.

    Parameters
    ----------
    method : str
        The method being run (named in the message).
    nothing_computed : str
        The end of the message: what the user keeps.
    """
    try:
        yield
    except EvidenceInterrupted:
        raise
    except KeyboardInterrupt as err:
        where = getattr(err, "pm_evidence_phase", "setting up")
        detail = f" ({err})" if str(err) else ""
        _install_one_line_excepthook()
        raise EvidenceInterrupted(
            f"pm_evidence: {method!r} interrupted by Ctrl-C during {where}{detail}; "
            f"{nothing_computed}.",
            phase=where,
            method=method,
        ) from None


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
    (:func:`long_run`, :func:`progress_bar_shown`).

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
    _STATUSES.append(line)
    try:
        with phase(phase_name or message):
            yield
    finally:
        _STATUSES.pop()
        if line is not None:
            line.hide()


def set_status(message: str) -> None:
    """Change the innermost status line's message."""
    if _STATUSES and _STATUSES[-1] is not None:
        _STATUSES[-1].update(message)


@contextmanager
def progress_bar_shown() -> Iterator[None]:
    """Hide the status lines while another live display (a progress bar) is shown."""
    hidden = [line for line in _STATUSES if line is not None and line._shown]
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

    PyMC stops at a Ctrl-C and returns the draws it has; here that becomes a
    :class:`KeyboardInterrupt` tagged ``"NUTS tuning"`` or ``"NUTS sampling"``, so a caller
    never estimates ``log Z`` from a run the user stopped.

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

    with phase("NUTS (compiling, tuning, sampling)"), quiet(not progressbar), progress_bar_shown():
        idata = pm.sample(draws=draws, progressbar=progressbar, **kwargs)
    got = int(idata["posterior"].sizes.get("draw", 0))
    if got < draws:
        stopped = KeyboardInterrupt(f"NUTS stopped after {got} of {draws} draws per chain")
        stopped.pm_evidence_phase = "NUTS tuning" if got == 0 else "NUTS sampling"
        raise stopped
    return idata
