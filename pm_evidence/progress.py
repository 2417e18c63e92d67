"""Progress bars and graceful Ctrl-C for long runs.

:func:`long_run` is a context manager that shows a progress bar (``rich``, as PyMC uses) unless
``enabled=False`` and turns the first Ctrl-C into a flag instead of an exception: a sampler
checks ``run.interrupted`` between whole steps, so its accumulators are never left half-updated.
A second Ctrl-C raises :class:`KeyboardInterrupt` immediately.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

__all__ = ["LongRun", "long_run"]


class LongRun:
    """Handle yielded by :func:`long_run`: ``advance(n)`` and the ``interrupted`` flag."""

    def __init__(self, progress=None, task=None):
        self._progress = progress
        self._task = task
        self.interrupted = False

    def advance(self, n: int = 1) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def describe(self, description: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=description)


@contextmanager
def long_run(total: int, description: str, enabled: bool = True):
    """Progress bar over ``total`` steps plus a Ctrl-C flag (main thread only)."""
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
