"""Cutting unbounded lists into pieces that every database takes in one statement.

SQLite refuses a statement with more bound variables than its compile-time
limit (32,766 by default, 250,000 in Debian's build), and every backend gets
slow parsing a huge ``IN (...)``. Writers that take a client's list (traits,
aggregates, consumers of POST /allocations) select and delete in chunks of
`CHUNK` values, and insert with executemany, so the number of statements
grows with N / CHUNK and the work per item stays constant.

`gc_paused` keeps Python's cyclic garbage collector out of a large bulk
request: decoding and writing 10,000 consumers allocates a few hundred
thousand objects, each allocation burst triggers collections that traverse
every live object again, and that cost 11 µs of a 40 µs consumer.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["CHUNK", "chunks", "rows_in", "delete_in", "gc_paused", "GC_PAUSE_BYTES"]

# Well under any backend's bound-parameter limit, with room for the other
# parameters of the statement.
CHUNK = 500

T = TypeVar("T")


def chunks(values: Iterable[T], size: int | None = None) -> Iterator[list[T]]:
    """`values` (sorted if they are a set, for a stable lock order) in lists of `size`
    (default `CHUNK`, read at each call so that tests can make chunks tiny)."""
    size = size or CHUNK
    ordered: Sequence[T] = (sorted(values) if isinstance(values, set | frozenset)
                            else list(values))
    for start in range(0, len(ordered), size):
        yield list(ordered[start:start + size])


def rows_in(conn: Connection, build: Callable[[list[Any]], sa.Executable],
            values: Iterable[Any]) -> list[sa.Row[Any]]:
    """All rows of `build(chunk)` for each chunk of `values`, in chunk order."""
    found: list[sa.Row[Any]] = []
    for part in chunks(values):
        found.extend(conn.execute(build(part)))
    return found


def delete_in(conn: Connection, build: Callable[[list[Any]], sa.Executable],
              values: Iterable[Any]) -> int:
    """Run the DELETE `build(chunk)` for each chunk; returns the rows deleted."""
    deleted = 0
    for part in chunks(values):
        deleted += int(conn.execute(build(part)).rowcount)
    return deleted


# Bodies smaller than this allocate too little for collections to matter.
GC_PAUSE_BYTES = 64 * 1024


class _Pause:
    """How many requests are inside `gc_paused`, and whether the collector was on
    when the first of them began."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.was_enabled = True


_PAUSE = _Pause()


@contextlib.contextmanager
def gc_paused(body_bytes: int) -> Iterator[None]:
    """No automatic garbage collection while a request of `body_bytes` runs.

    The collector is process-wide: the first of overlapping bulk requests
    turns it off and the last one to end turns it back on (only if it was on
    before), so no request re-enables it under another. Nothing is lost:
    cycles made meanwhile are collected at the next run.
    """
    if body_bytes < GC_PAUSE_BYTES:
        yield
        return
    with _PAUSE.lock:
        if _PAUSE.depth == 0:
            _PAUSE.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSE.depth += 1
    try:
        yield
    finally:
        with _PAUSE.lock:
            _PAUSE.depth -= 1
            if _PAUSE.depth == 0 and _PAUSE.was_enabled:
                gc.enable()
