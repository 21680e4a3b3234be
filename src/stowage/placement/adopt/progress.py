"""Progress of a copy on stderr: the table, rows done of rows to do, and rows/s.

Why: importing 100k providers moves over a million rows; an operator watching
a terminal must see it advance and at what speed, and a log must not get a
line per batch. On a terminal the line rewrites itself; otherwise one line at
most every few seconds, and one per finished table.
"""

from __future__ import annotations

import resource
import time
from typing import TextIO

__all__ = ["Progress"]


def cpu_seconds() -> float:
    """User+system CPU of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Progress:
    """Counts rows per table and in total; `out=None` keeps quiet."""

    EVERY = 5.0  # seconds between lines when not on a terminal

    def __init__(self, verb: str, out: TextIO | None) -> None:
        self.verb = verb
        self.out = out
        self.tty = bool(out is not None and out.isatty())
        self.started = time.monotonic()
        self.cpu_started = cpu_seconds()
        self.rows = 0
        self.table = ""
        self.total = 0
        self.done = 0
        self.table_started = self.started
        self.shown = self.started

    def begin(self, table: str, total: int) -> None:
        self.table, self.total, self.done = table, total, 0
        self.table_started = time.monotonic()

    def advance(self, rows: int) -> None:
        self.done += rows
        self.rows += rows
        now = time.monotonic()
        if self.out is not None and now - self.shown >= (0.5 if self.tty else self.EVERY):
            self.shown = now
            self._line(end="" if self.tty else "\n")

    def end(self) -> None:
        if self.out is not None:
            self._line(end="\n")

    def _line(self, end: str) -> None:
        assert self.out is not None
        elapsed = max(time.monotonic() - self.table_started, 1e-6)
        start = "\r" if self.tty else ""
        print(f"{start}stowage: {self.verb} {self.table}: {self.done}/{self.total} rows "
              f"({self.done / elapsed:,.0f} rows/s)", end=end, file=self.out, flush=True)

    def summary(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return (f"{self.rows} rows in {elapsed:.1f} s ({self.rows / elapsed:,.0f} rows/s, "
                f"{cpu_seconds() - self.cpu_started:.1f} CPU s)")
