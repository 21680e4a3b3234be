"""`bulk.gc_paused`: the collector is off while any large request runs, back on only
when the last one ends, and left alone by small requests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from stowage.placement import bulk

BIG = bulk.GC_PAUSE_BYTES


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_overlapping_requests_keep_it_off_until_the_last_ends() -> None:
    first, second = bulk.gc_paused(BIG), bulk.gc_paused(BIG)
    first.__enter__()
    assert not gc.isenabled()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second is still running
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_small_bodies_do_not_touch_it() -> None:
    with bulk.gc_paused(BIG - 1):
        assert gc.isenabled()


def test_an_error_still_turns_it_back_on() -> None:
    with pytest.raises(ValueError), bulk.gc_paused(BIG):
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with bulk.gc_paused(BIG):
        pass
    assert not gc.isenabled()
