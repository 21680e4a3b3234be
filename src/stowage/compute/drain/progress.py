"""What a drain shows while it runs: a progress bar on a terminal, plain lines otherwise.

A terminal gets one line redrawn in place (`\\r`): the bar, the counts and the
server last settled; anything else (a log file, a pipe, CI) gets one line per
event, which reads in order afterwards. Both are written to one stream.
"""

from __future__ import annotations

import threading
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 30


class Progress:
    """Counts of settled servers out of `total`; thread-safe (moves run in parallel)."""

    def __init__(self, out: TextIO, tty: bool | None = None) -> None:
        self.out = out
        self.tty = out.isatty() if tty is None else tty
        self.total = 0
        self.done = 0
        self.counts = {"moved": 0, "failed": 0, "skipped": 0}
        self._lock = threading.Lock()
        self._drawn = False

    def start(self, total: int) -> None:
        with self._lock:
            self.total = max(self.total, total)
            self._redraw("planned")

    def note(self, line: str) -> None:
        """An event that settles nothing (a move started, a plan made again)."""
        with self._lock:
            if self.tty:
                self._redraw(line)
            else:
                self._line(line)

    def settled(self, result: str, line: str) -> None:
        """A server is done with: moved, failed or skipped."""
        with self._lock:
            self.done += 1
            self.total = max(self.total, self.done)
            self.counts[result] = self.counts.get(result, 0) + 1
            if self.tty:
                self._redraw(line)
            else:
                self._line(f"[{self.done}/{self.total}] {line}")

    def finish(self) -> None:
        with self._lock:
            if self.tty and self._drawn:
                self.out.write("\n")
                self.out.flush()
                self._drawn = False

    def bar(self) -> str:
        filled = _WIDTH * self.done // self.total if self.total else _WIDTH
        counts = " ".join(f"{k} {v}" for k, v in self.counts.items())
        return f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {self.done}/{self.total} {counts}"

    def _redraw(self, last: str) -> None:
        if not self.tty:
            return
        self.out.write(f"\r\033[K{self.bar()}  {last[:60]}")
        self.out.flush()
        self._drawn = True

    def _line(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()
