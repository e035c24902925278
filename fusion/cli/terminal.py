"""Progress of long commands (``generate``, ``bench``, ``reconcile``) on the terminal.

Attached to a terminal, a rich progress bar with counts and a rate; in a log
file or a CI run, one plain line every few seconds and one at the end, so a
redirected run still shows it is alive without filling the file with frames.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

PLAIN_EVERY = 5.0  # seconds between plain progress lines


class Tracker:
    """``with Tracker(console, "producing", unit="records", total=n) as t: t.update(done)``."""

    def __init__(
        self,
        console: Console,
        description: str,
        unit: str,
        total: int | None = None,
        rate: bool = True,
        every: float = PLAIN_EVERY,
    ) -> None:
        self.console = console
        self.rate = rate
        self.description = description
        self.unit = unit
        self.total = total
        self.every = every
        self.completed = 0
        self._started = time.monotonic()
        self._said_at = -every  # the first update says where it starts
        self._bar: Progress | None = None
        self._steps_begun = False
        self._said: tuple[str, int] | None = None  # the last plain line's phase and count

    def __enter__(self) -> Tracker:
        if self.console.is_terminal:
            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            count, rate = self._fields()
            self._task = self._bar.add_task(
                self.description, total=self.total, count=count, rate=rate
            )
        return self

    def update(
        self, completed: int, total: int | None = None, description: str | None = None
    ) -> None:
        """``completed`` units so far (of ``total``); a new ``description`` starts a new phase."""
        if description is not None and description != self.description:
            self._said_at = -self.every  # a new phase is worth a line at once
            self.description = description
        self.completed = completed
        self.total = total if total is not None else self.total
        if self._bar is not None:
            count, rate = self._fields()
            self._bar.update(
                self._task,
                completed=completed,
                total=self.total,
                description=self.description,
                count=count,
                rate=rate,
            )
        elif time.monotonic() - self._said_at >= self.every:
            self._say()

    def step(self, description: str) -> None:
        """One more step, named ``description``, has begun (the previous ones are done)."""
        self.update(self.completed + (1 if self._steps_begun else 0), description=description)
        self._steps_begun = True

    def _fields(self) -> tuple[str, str]:
        """The count (``1,234 of 5,000 records``) and the rate (``617 records/s``, or "")."""
        of = f" of {self.total:,}" if self.total is not None else ""
        elapsed = time.monotonic() - self._started
        shown = self.rate and elapsed >= 0.5
        rate = f"{self.completed / elapsed:,.0f} {self.unit}/s" if shown else ""
        return f"{self.completed:,}{of} {self.unit}", rate

    def _say(self) -> None:
        count, rate = self._fields()
        rate = f", {rate}" if rate else ""
        self.console.print(f"{self.description}: {count}{rate}", highlight=False)
        self._said_at = time.monotonic()
        self._said = (self.description, self.completed)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif (
            exc_type is None and self.completed and self._said != (self.description, self.completed)
        ):
            self._say()  # the end, unless the last line said it already
