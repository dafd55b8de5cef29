"""Progress reporting for long operations: a bar on a terminal, a log line elsewhere.

``progress=True`` shows a tqdm bar on standard error when it is a terminal (or a
widget in Jupyter); when standard error is a file, a pipe or a CI log, it writes
one line when a phase starts and one when it ends instead of a wall of redraws.
``progress=callable`` receives the number of items done since the last call;
``progress=False`` is silent.

A bar is always closed (and, ``leave=False``, erased) before the operation
returns, so a report printed afterwards never interleaves with it: bars and
phase lines go to standard error, reports to standard output.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["Progress", "ProgressBar", "on_terminal", "say"]

Progress = bool | Callable[[int], None]


def _stream() -> TextIO:
    return sys.stderr


def on_terminal(stream: TextIO | None = None) -> bool:
    """Is ``stream`` (default: standard error) an interactive terminal?"""
    isatty = getattr(stream or _stream(), "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def _in_notebook() -> bool:
    """Does tqdm pick its widget here (a Jupyter kernel)? ``tqdm.auto`` always makes a
    subclass; ``tqdm.autonotebook`` is the plain console class outside a kernel."""
    import warnings

    from tqdm.std import tqdm as std_tqdm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its "use tqdm.auto" hint
        from tqdm.autonotebook import tqdm as notebook_tqdm

    return notebook_tqdm is not std_tqdm


def say(message: str) -> None:
    """One progress line on standard error, flushed at once."""
    print(message, file=_stream(), flush=True)


class ProgressBar:
    """Advance a bar, a callback, or count for the phase's log lines; a context
    manager that closes the bar (or writes the phase's closing line)."""

    def __init__(self, progress: Progress, total: int, desc: str, unit: str = "item") -> None:
        self._callback = progress if callable(progress) else None
        self._bar: Any = None
        self._log = False
        self._desc = desc
        self._unit = unit
        self._total = total
        self._done = 0
        self._start = time.perf_counter()
        if progress is True and total > 0:
            if on_terminal() or _in_notebook():
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False,
                                 file=_stream())
            else:
                self._log = True
                say(f"{desc}: {total:,} {unit}{'' if total == 1 else 's'} ...")

    def advance(self, n: int) -> None:
        self._done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._callback is not None:
            self._callback(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._log:
            self._log = False
            seconds = time.perf_counter() - self._start
            say(f"{self._desc}: done, {self._done:,} of {self._total:,} {self._unit}"
                f"{'' if self._total == 1 else 's'} in {seconds:.1f} s")

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
