"""RabbitMQ's side of the metrics: call latency, and the depth of the control plane's queues.

A call's histogram moves with each call, by target kind; casts to a
`scheduler` queue nobody consumes (its consumer gone, the queue kept) are
counted in `stowage_rpc_queue_messages` until a consumer takes them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kombu.connection import Connection
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from stowage.messaging.amqp_wire import kombu_url
from stowage.metrics import plane, process
from stowage.metrics.text import render
from tests.functional import brokers
from tests.functional.test_transport_contract import Echo


@pytest.fixture
def make() -> Iterator[Any]:
    with brokers.transports() as make:
        yield make


def _depth(transport: Any) -> str:
    return render(plane.queue_families(transport))


def _calls() -> float:
    """Calls to the scheduler's `echo` timed so far in this process."""
    text = generate_latest(process.REGISTRY).decode()
    return next((sample.value for family in text_string_to_metric_families(text)
                 for sample in family.samples
                 if sample.name == "stowage_rpc_call_duration_seconds_count"
                 and sample.labels == {"target": "scheduler", "method": "echo"}), 0.0)


def test_calls_are_timed_and_waiting_casts_counted(make: Any) -> None:
    transport = make(auto_delete=False)
    queue = transport.names.queue("scheduler")
    try:
        transport.register("scheduler", Echo())
        before = _calls()
        assert transport.call("scheduler", "echo", value=1) == 1
        assert _calls() == before + 1
        assert 'stowage_rpc_queue_messages{queue="scheduler"} 0\n' in _depth(transport)
        transport.unregister("scheduler")
        for n in range(3):
            transport.cast("scheduler", "remember", value=n)
        deadline = time.monotonic() + 10
        while 'queue="scheduler"} 3\n' not in _depth(transport):
            assert time.monotonic() < deadline, _depth(transport)
            time.sleep(0.1)
        endpoint = Echo()
        transport.register("scheduler", endpoint)
        assert endpoint.wait_for(3) == [0, 1, 2]
    finally:
        transport.close()
        with Connection(kombu_url(brokers.URL)) as conn:
            conn.default_channel.queue_delete(queue)
