"""In-process details of the transports; the rules both follow are in
tests/functional/test_transport_contract.py."""

from __future__ import annotations

import threading

import pytest

from stowage.messaging import MessagingTimeout, RemoteError, get_transport
from stowage.messaging.amqp import AmqpTransport
from stowage.messaging.amqp_wire import kombu_url
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


def test_endpoints_of_a_target_take_turns_and_leave_one_by_one() -> None:
    transport = LocalTransport()
    first, second = Echo(), Echo()
    transport.register("t", first)
    transport.register("t", second)
    transport.register("t", first)  # already there: still two endpoints
    for i in range(4):
        transport.cast("t", "remember", value=i)
    assert transport.drain(10)
    assert (first.seen, second.seen) == ([0, 2], [1, 3])
    transport.unregister("t", first)
    transport.cast("t", "remember", value=4)
    assert transport.drain(10)
    assert (first.seen, second.seen) == ([0, 2], [1, 3, 4])
    transport.close()


def test_call_long_is_call_in_process() -> None:
    transport = LocalTransport()
    transport.register("t", Echo())
    assert transport.call_long("t", "echo", value=[1]) == [1]


@pytest.mark.parametrize("url", [None, "", "local://"])
def test_get_transport_in_process(url: str | None) -> None:
    assert isinstance(get_transport(url), LocalTransport)


def test_get_transport_rabbit_connects_only_when_used() -> None:
    before = set(threading.enumerate())
    transport = get_transport("rabbit://u:secret@broker.invalid:5672/stowage")
    assert isinstance(transport, AmqpTransport)
    assert set(threading.enumerate()) == before
    transport.close()


def test_get_transport_refuses_other_schemes_without_repeating_the_url() -> None:
    with pytest.raises(ValueError, match="not kafka://") as info:
        get_transport("kafka://u:secret@broker:9092")
    assert "secret" not in str(info.value)


@pytest.mark.parametrize(("url", "expected"), [
    ("rabbit://guest:guest@127.0.0.1:5672/", "amqp://guest:guest@127.0.0.1:5672//"),
    ("rabbit://guest:guest@127.0.0.1:5672", "amqp://guest:guest@127.0.0.1:5672//"),
    ("rabbit://u:p@h:5672/nova", "amqp://u:p@h:5672/nova"),
    ("rabbit://u:p@h1:5672,u:p@h2:5673/nova", "amqp://u:p@h1:5672/nova;amqp://u:p@h2:5673/nova"),
])
def test_oslo_urls_become_kombu_urls(url: str, expected: str) -> None:
    assert kombu_url(url) == expected
