"""What every transport promises, checked on the in-process one and on RabbitMQ.

Code written against LocalTransport must keep working over a broker, so the
same tests run on both (`transport` is parametrized). What only one of them
can show lives beside: tests/unit/test_messaging.py (in-process details) and
test_amqp_transport.py (acks, confirms, reconnects).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from stowage.messaging import MessagingTimeout, RemoteError
from stowage.messaging.local import LocalTransport
from tests.functional import brokers

WAIT = 10.0  # seconds a test waits for something it expects; never reached when all is well


class Echo:
    """An endpoint that answers, fails, remembers what it was sent and can be held."""

    def __init__(self, arrived: threading.Condition | None = None) -> None:
        self.seen: list[Any] = []
        # Notified on each message; endpoints that compete share one.
        self.arrived = arrived or threading.Condition()
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()

    def echo(self, value: Any) -> Any:
        return value

    def fail(self) -> None:
        raise ValueError("no such flavor")

    def remember(self, value: Any) -> None:
        self.started.set()
        assert self.gate.wait(WAIT)
        with self.arrived:
            self.seen.append(value)
            self.arrived.notify_all()

    def slow_echo(self, value: Any, seconds: float) -> Any:
        """Answer `seconds` after being asked (the long call's endpoint)."""
        time.sleep(seconds)
        return value

    def _secret(self) -> str:
        return "never served"

    def wait_for(self, count: int) -> list[Any]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.seen) >= count, WAIT), self.seen
            return list(self.seen)


@pytest.fixture(params=["local", "rabbit"])
def transport(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "local":
        local = LocalTransport()
        yield local
        local.close()
    else:
        with brokers.transports() as make:
            yield make()


def wait_total(endpoints: list[Echo], count: int) -> list[list[Any]]:
    """What each endpoint saw, once together they saw `count` messages (same Condition)."""
    arrived = endpoints[0].arrived
    with arrived:
        assert arrived.wait_for(lambda: sum(len(e.seen) for e in endpoints) >= count, WAIT)
        return [list(e.seen) for e in endpoints]


def test_call_returns_json_values(transport: Any) -> None:
    transport.register("t", Echo())
    assert transport.call("t", "echo", value={"a": (1, 2), "b": None}) == {"a": [1, 2],
                                                                          "b": None}


def test_non_json_argument_is_refused_at_the_caller(transport: Any) -> None:
    endpoint = Echo()
    transport.register("t", endpoint)
    with pytest.raises(TypeError):
        transport.call("t", "echo", value=object())
    with pytest.raises(TypeError):
        transport.cast("t", "remember", value={1, 2})
    assert endpoint.seen == []


def test_remote_exception_crosses_as_remote_error(transport: Any) -> None:
    transport.register("t", Echo())
    with pytest.raises(RemoteError) as info:
        transport.call("t", "fail")
    assert (info.value.exc_type, info.value.message) == ("ValueError", "no such flavor")


def test_unserved_target_times_out(transport: Any) -> None:
    with pytest.raises(MessagingTimeout):
        transport.call("compute.gone", "echo", value=1)
    endpoint = Echo()
    transport.register("compute.left", endpoint)
    transport.unregister("compute.left")
    with pytest.raises(MessagingTimeout):
        transport.call("compute.left", "echo", value=1)


def test_private_and_missing_methods_are_not_served(transport: Any) -> None:
    transport.register("t", Echo())
    for method in ("__init__", "_secret", "no_such_method", "seen"):
        with pytest.raises(MessagingTimeout):
            transport.call("t", method)


def test_cast_runs_in_the_background(transport: Any) -> None:
    endpoint = Echo()
    endpoint.gate.clear()
    transport.register("t", endpoint)
    transport.cast("t", "remember", value=[1])  # returns while the endpoint is held
    assert endpoint.started.wait(WAIT)
    assert endpoint.seen == []
    endpoint.gate.set()
    assert endpoint.wait_for(1) == [[1]]


def test_fanout_reaches_every_endpoint_of_the_target(transport: Any) -> None:
    agents = [Echo() for _ in range(3)]
    for agent in agents:
        transport.register("agents", agent)
    bystander = Echo()
    transport.register("other", bystander)
    transport.fanout("agents", "remember", value="refresh")
    assert [agent.wait_for(1) for agent in agents] == [["refresh"]] * 3
    transport.fanout("nobody", "remember", value="lost")  # no endpoint: not an error
    assert transport.call("other", "echo", value=1) == 1
    assert bystander.seen == []


def test_competing_endpoints_share_a_targets_casts(transport: Any) -> None:
    arrived = threading.Condition()
    conductors = [Echo(arrived), Echo(arrived)]
    for conductor in conductors:
        transport.register("conductor", conductor)
    for i in range(20):
        transport.cast("conductor", "remember", value=i)
    first, second = wait_total(conductors, 20)
    assert first and second, (first, second)
    assert sorted(first + second) == list(range(20))  # each exactly once


def test_long_call_outlasts_the_default_timeout(transport: Any) -> None:
    transport.register("t", Echo())
    # In-process calls have no timeout; over a broker `call` would give up here.
    seconds = getattr(transport, "default_timeout", 0.0) + 0.5
    assert transport.call_long("t", "slow_echo", value="moved", seconds=seconds) == "moved"


def test_concurrent_calls_get_their_own_answers(transport: Any) -> None:
    transport.register("t", Echo())
    answers: dict[int, list[Any]] = {}

    def caller(n: int) -> None:
        answers[n] = [transport.call("t", "echo", value=[n, i]) for i in range(10)]

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert answers == {n: [[n, i] for i in range(10)] for n in range(8)}


def test_drain_waits_for_the_handlers_running_in_this_process(transport: Any) -> None:
    held = Echo()
    held.gate.clear()
    transport.register("conductor", held)
    transport.cast("conductor", "remember", value="build")
    assert held.started.wait(WAIT)
    assert transport.drain(0.05) is False  # the cast is still running
    held.gate.set()
    assert transport.drain(WAIT) is True
    assert held.seen == ["build"]
    assert transport.drain(0) is True  # idle: at once
