"""Try a start-up step again while a service it needs cannot be reached, as nova-compute does.

An agent started before the API (a reboot, a deployment brought up in any
order) used to exit with a traceback at its first Placement call. A step
wrapped in `until_reachable` is tried again instead, after 1, 2, 4 ... s
(never more than `MOST` s), each failure logged as a warning naming the
step and why, until it succeeds or the process is asked to stop.

What counts as "cannot be reached": the connection failed or timed out
(httpx's TransportError), or the service answered 5xx (up, but not able to
serve yet: 502/503 from a proxy, say). Any other error is the step's own and
is raised at once -- a 4xx will not get better by waiting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import httpx

from stowage.placement.client import PlacementError

__all__ = ["until_reachable", "FIRST", "MOST"]

LOG = logging.getLogger(__name__)
T = TypeVar("T")

# Seconds before the first retry, and the longest wait between two.
FIRST = 1.0
MOST = 30.0


def _unreachable(exc: Exception) -> bool:
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, PlacementError) and exc.status >= 500


def until_reachable(step: Callable[[], T], what: str, stop: threading.Event,
                    first: float = FIRST, most: float = MOST) -> T | None:
    """`step()`'s result, tried until it gets through; None when `stop` is set first."""
    delay, tries = first, 0
    while not stop.is_set():
        try:
            result = step()
        except Exception as exc:
            if not _unreachable(exc):
                raise
            tries += 1
            LOG.warning("%s: a service it needs cannot be reached (%s: %s); trying again "
                        "in %g s (attempt %d)", what, type(exc).__name__, exc, delay, tries)
            stop.wait(delay)
            delay = min(delay * 2, most)
            continue
        if tries:
            LOG.info("%s: done after %d failed attempt(s)", what, tries)
        return result
    return None
