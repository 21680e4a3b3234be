"""The in-process transport behaves like a broker would: JSON only, errors as RemoteError."""

from __future__ import annotations

import threading

import pytest

from stowage.messaging import MessagingTimeout, RemoteError
from stowage.messaging.local import LocalTransport


class Echo:
    def __init__(self) -> None:
        self.seen: list[object] = []
        self.done = threading.Event()

    def echo(self, value: object) -> object:
        return value

    def fail(self) -> None:
        raise ValueError("no such flavor")

    def remember(self, value: object) -> None:
        self.seen.append(value)
        self.done.set()


def test_call_returns_json_values() -> None:
    transport = LocalTransport()
    transport.register("t", Echo())
    assert transport.call("t", "echo", value={"a": (1, 2)}) == {"a": [1, 2]}


def test_non_json_argument_is_refused_at_the_caller() -> None:
    transport = LocalTransport()
    transport.register("t", Echo())
    with pytest.raises(TypeError):
        transport.call("t", "echo", value=object())


def test_remote_exception_crosses_as_remote_error() -> None:
    transport = LocalTransport()
    transport.register("t", Echo())
    with pytest.raises(RemoteError) as info:
        transport.call("t", "fail")
    assert (info.value.exc_type, info.value.message) == ("ValueError", "no such flavor")


def test_unserved_target_times_out_and_private_methods_are_not_served() -> None:
    transport = LocalTransport()
    transport.register("t", Echo())
    with pytest.raises(MessagingTimeout):
        transport.call("compute.gone", "echo", value=1)
    with pytest.raises(MessagingTimeout):
        transport.call("t", "__init__")


def test_cast_runs_in_the_background_and_drain_waits() -> None:
    transport = LocalTransport()
    endpoint = Echo()
    transport.register("t", endpoint)
    transport.cast("t", "remember", value=[1])
    assert transport.drain(10)
    assert endpoint.seen == [[1]]
    transport.close()
