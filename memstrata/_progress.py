"""Progress reporting for long operations: a tqdm bar, or the caller's callback.

``progress=True`` shows a bar (tqdm picks a notebook widget in Jupyter),
``progress=callable`` receives the number of items done since the last call,
``progress=False`` is silent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tqdm.auto import tqdm

__all__ = ["Progress", "ProgressBar"]

Progress = bool | Callable[[int], None]


class ProgressBar:
    """Advance a bar or a callback; a context manager that closes the bar."""

    def __init__(self, progress: Progress, total: int, desc: str, unit: str = "item") -> None:
        self._callback = progress if callable(progress) else None
        self._bar: Any = (
            tqdm(total=total, desc=desc, unit=unit, leave=False)
            if progress is True and total > 0
            else None
        )

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)
        elif self._callback is not None:
            self._callback(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
