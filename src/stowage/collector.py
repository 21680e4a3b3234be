"""Python's cyclic garbage collector paused around one burst of short-lived objects.

Why: a scheduling decision over 1,000 candidates, or a /metrics scrape of
1,000 hosts, allocates tens of thousands of dicts, tuples and rows that all
die by reference count when it returns. With the collector on they trip young
collections that promote them, and now and then a full collection that walks
every object of the process (measured: a decision's mean 41 → 28 ms paused;
a scrape's worst case 226 ms wall, 149 ms of it one collection, against a
52 ms median). Paused, they are freed before the collector sees them; cycles
made meanwhile are collected once it runs again. It is off process-wide for
those milliseconds only; a thread that found it already off leaves it alone.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
