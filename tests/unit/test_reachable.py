"""`until_reachable`: which failures are waited out, and which are the step's own."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest

from stowage.compute.reachable import until_reachable
from stowage.placement.client import PlacementError


def _flaky(*failures: Exception) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def step() -> str:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return "up"
    return calls, step


def test_unreachable_and_5xx_are_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    calls, step = _flaky(httpx.ConnectError("refused"), PlacementError(503, None, "busy"),
                         httpx.ReadTimeout("slow"))
    assert until_reachable(step, "host h1: start", threading.Event(), first=0.0) == "up"
    assert len(calls) == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w.split(" (")[0] for w in warnings] == [
        "host h1: start: a service it needs cannot be reached"] * 3
    assert "(ConnectError: refused)" in warnings[0] and "(attempt 3)" in warnings[2]


def test_a_4xx_or_another_error_is_raised_at_once() -> None:
    calls, step = _flaky(PlacementError(400, None, "bad"))
    with pytest.raises(PlacementError):
        until_reachable(step, "x", threading.Event(), first=0.0)
    calls, step = _flaky(ValueError("unknown cell"))
    with pytest.raises(ValueError):
        until_reachable(step, "x", threading.Event(), first=0.0)
    assert len(calls) == 1


def test_a_stop_ends_the_waiting() -> None:
    stop = threading.Event()

    def step() -> str:
        stop.set()  # SIGTERM arrives while Placement is still away
        raise httpx.ConnectError("refused")
    assert until_reachable(step, "x", stop, first=0.0) is None
