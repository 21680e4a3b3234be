"""A scrape builds its answer with the cyclic collector paused, and leaves it as it found it
(why: `stowage.collector`; the figures: bench/metrics.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from stowage.metrics.endpoint import Sources, exposition
from stowage.metrics.text import Family


class Watching(Sources):
    """Sources whose gauges note whether the collector ran while they were read."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bool] = []

    def families(self) -> Iterator[Family]:
        self.seen.append(gc.isenabled())
        yield from ()


def test_the_collector_is_off_during_a_scrape_and_back_on_after() -> None:
    sources = Watching()
    assert gc.isenabled()
    body = exposition(sources)
    assert sources.seen == [False]
    assert gc.isenabled()
    assert b"stowage_http_requests" in body  # the process counters are still in it


def test_a_collector_already_off_stays_off() -> None:
    sources = Watching()
    gc.disable()
    try:
        exposition(sources)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert sources.seen == [False]
