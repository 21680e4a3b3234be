"""What only the RabbitMQ transport can show: acks, confirms, reconnects, clean close.

The rules both transports share are in test_transport_contract.py. Here two
transports on one namespace stand for two processes; cutting a transport's
sockets stands for the broker dropping its connections.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from amqp.exceptions import NotFound
from kombu.connection import Connection

from stowage.messaging import MessagingError, MessagingTimeout
from stowage.messaging.amqp import AmqpTransport
from stowage.messaging.amqp_publisher import Outcome
from stowage.messaging.amqp_wire import kombu_url
from tests.functional import brokers
from tests.functional.test_transport_contract import WAIT, Echo


@pytest.fixture
def make() -> Iterator[Any]:
    with brokers.transports() as make:
        yield make


def cut(transport: AmqpTransport) -> None:
    """Drop every connection of the transport under its feet, as a broker restart would."""
    connections = transport.connections()
    assert connections
    for conn in connections:
        conn.connection.sock.shutdown(socket.SHUT_RDWR)


def queue_exists(name: str) -> bool:
    with Connection(kombu_url(brokers.URL)) as conn:
        try:
            conn.default_channel.queue_declare(queue=name, passive=True)
        except NotFound:
            return False
        return True


def test_a_message_is_acked_only_after_its_handler_ran(make: Any) -> None:
    # Process 1 takes the cast and dies mid-handler; the broker gives it to process 2.
    first, second = make(), make()
    dying, survivor = Echo(), Echo()
    dying.gate.clear()
    first.register("conductor", dying)
    first.cast("conductor", "remember", value="build")
    assert dying.started.wait(WAIT)
    second.register("conductor", survivor)
    closer = threading.Thread(target=first.close, kwargs={"drain_timeout": 0})
    closer.start()  # gone without waiting for its handler: the message was never acked
    try:
        assert survivor.wait_for(1) == ["build"]
    finally:
        dying.gate.set()
        closer.join(WAIT)
    assert not closer.is_alive()


def test_publishes_wait_for_the_brokers_confirm(make: Any) -> None:
    # Without confirms a publish returns before the broker has looked at it, and
    # neither a missing exchange nor an unroutable message could be reported.
    publisher = make().publisher
    deadline = time.monotonic() + WAIT
    missing_exchange = publisher.publish(b"{}", exchange="no-such-exchange", routing_key="x",
                                         mandatory=False, deadline=deadline)
    unroutable = publisher.publish(b"{}", exchange="", routing_key="no-such-queue",
                                   mandatory=True, deadline=deadline)
    assert (missing_exchange, unroutable) == (Outcome.NO_EXCHANGE, Outcome.UNROUTABLE)
    assert publisher.connection is not None
    options = publisher.connection.transport_options
    assert options["confirm_publish"] is True
    assert options["client_properties"]["connection_name"].startswith(
        f"stowage:{os.getpid()}:")  # which process: what rabbitmqctl shows the operator


def test_a_call_without_an_answer_in_time_times_out(make: Any) -> None:
    transport = make(default_timeout=0.5)
    endpoint = Echo()
    endpoint.gate.clear()
    transport.register("t", endpoint)
    started = time.monotonic()
    with pytest.raises(MessagingTimeout, match="no answer in 0.5 s"):
        transport.call("t", "remember", value=1)
    assert time.monotonic() - started < WAIT
    endpoint.gate.set()
    assert endpoint.wait_for(1) == [1]  # the late reply is dropped, nothing breaks
    assert transport.call("t", "echo", value=2) == 2


def test_a_cast_waits_for_a_consumer_and_a_call_expires_with_its_timeout(make: Any) -> None:
    # Without auto-delete (the default), a target's queue outlives its consumers:
    # what is cast while the service restarts is handled when it is back; a call
    # made meanwhile times out, and its request is not run late.
    transport = make(auto_delete=False, default_timeout=0.5)
    queue = transport.names.queue("conductor")
    try:
        transport.register("conductor", Echo())
        transport.unregister("conductor")
        transport.cast("conductor", "remember", value="queued")
        with pytest.raises(MessagingTimeout, match="no answer"):
            transport.call("conductor", "remember", value="expired")
        endpoint = Echo()
        transport.register("conductor", endpoint)
        assert endpoint.wait_for(1) == ["queued"]
        # The queue is first in, first out: had the request survived, it came before this.
        assert transport.call("conductor", "echo", value="after") == "after"
        assert endpoint.seen == ["queued"]
    finally:
        transport.close()
        with Connection(kombu_url(brokers.URL)) as conn:
            conn.default_channel.queue_delete(queue)


def test_calls_and_casts_work_again_after_the_connections_drop(make: Any) -> None:
    transport = make()
    endpoint = Echo()
    transport.register("t", endpoint)
    assert transport.call("t", "echo", value=0) == 0
    cut(transport)
    deadline = time.monotonic() + WAIT
    while True:  # the first calls may find the queues not yet declared again
        try:
            assert transport.call("t", "echo", value=1) == 1
            break
        except MessagingError:
            assert time.monotonic() < deadline, "no successful call 10 s after the drop"
    transport.cast("t", "remember", value="after")
    assert endpoint.wait_for(1) == ["after"]


def test_a_call_in_flight_when_connections_drop_ends(make: Any) -> None:
    transport = make()
    endpoint = Echo()
    endpoint.gate.clear()
    transport.register("t", endpoint)
    outcome: list[Any] = []

    def call() -> None:
        try:
            outcome.append(transport.call("t", "remember", value="x"))
        except MessagingError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert endpoint.started.wait(WAIT)
    cut(transport)
    endpoint.gate.set()
    caller.join(brokers.CALL_TIMEOUT + WAIT)
    assert not caller.is_alive(), "a call in flight hung after the drop"
    assert outcome == [None] or isinstance(outcome[0], MessagingTimeout), outcome


def test_close_leaves_no_threads_and_no_queues(make: Any) -> None:
    before = set(threading.enumerate())
    transport = make()
    endpoints = [Echo(), Echo()]
    for endpoint in endpoints:
        transport.register("t", endpoint)
    transport.fanout("t", "remember", value=1)
    assert transport.call("t", "echo", value=1) == 1
    assert [e.wait_for(1) for e in endpoints] == [[1], [1]]
    reply_queue = transport.replies.queue_name
    transport.close()
    assert set(threading.enumerate()) - before == set()
    assert not queue_exists(transport.names.queue("t"))
    assert not queue_exists(reply_queue)
    with pytest.raises(MessagingError):
        transport.call("t", "echo", value=1)


def test_without_a_broker_nothing_hangs() -> None:
    before = set(threading.enumerate())
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    transport = AmqpTransport(f"rabbit://guest:guest@127.0.0.1:{port}/", default_timeout=0.5,
                              namespace=brokers.namespace())
    transport.register("t", Echo())  # gives up waiting, keeps trying in the background
    with pytest.raises(MessagingTimeout):
        transport.call("t", "echo", value=1)
    with pytest.raises(MessagingError):
        transport.cast("t", "echo", value=1)
    transport.close()
    assert set(threading.enumerate()) - before == set()



def test_a_broker_that_refuses_is_skipped_for_the_next_one(make: Any) -> None:
    live = urlsplit(brokers.URL)
    url = f"rabbit://guest:guest@127.0.0.1:1,{live.netloc}{live.path}"
    transport = make(url=url)
    transport.register("t", Echo())
    assert transport.call("t", "echo", value="failover") == "failover"


def test_every_registration_shares_one_consumer_connection_and_thread(make: Any) -> None:
    # An agent process registers one target per host: 10,000 hosts must not mean
    # 10,000 connections (the broker's socket limit) nor 10,000 polling threads.
    transport = make()
    transport.register("first", Echo())
    threads = set(threading.enumerate())
    for i in range(50):
        transport.register(f"host{i}", Echo())
    assert set(threading.enumerate()) - threads == set()
    assert transport.call("host0", "echo", value=0) == 0
    assert transport.call("host49", "echo", value=49) == 49
    consumers = {id(c) for c in transport.connections()} - {
        id(transport.publisher.connection), id(transport.replies.connection)}
    assert len(consumers) == 1


def test_unregistering_one_target_waits_for_its_handler_and_leaves_the_others(
        make: Any) -> None:
    transport = make(auto_delete=False)
    held, other = Echo(), Echo()
    held.gate.clear()
    transport.register("held", held)
    transport.register("other", other)
    try:
        transport.cast("held", "remember", value="running")
        assert held.started.wait(WAIT)
        leaving = threading.Thread(target=transport.unregister, args=("held",))
        leaving.start()
        time.sleep(0.3)
        assert leaving.is_alive()  # its handler still runs
        assert transport.call("other", "echo", value=1) == 1
        held.gate.set()
        leaving.join(WAIT)
        assert not leaving.is_alive()
        assert held.seen == ["running"]
        # Acked once handled: a new endpoint of the target gets nothing more.
        again = Echo()
        transport.register("held", again)
        transport.cast("held", "remember", value="next")
        assert again.wait_for(1) == ["next"]
        assert transport.call("other", "echo", value=2) == 2
    finally:
        transport.close()
        with Connection(kombu_url(brokers.URL)) as conn:
            conn.default_channel.queue_delete(transport.names.queue("held"))
            conn.default_channel.queue_delete(transport.names.queue("other"))


def test_a_handler_that_outlasts_the_drain_gives_its_message_back(make: Any) -> None:
    # As when a process's connection closed: the message goes to another consumer.
    first, second = make(drain_timeout=0.2), make()
    stuck, survivor = Echo(), Echo()
    stuck.gate.clear()
    first.register("t", stuck)
    first.register("kept", Echo())  # keeps the shared connection open
    try:
        first.cast("t", "remember", value="build")
        assert stuck.started.wait(WAIT)
        second.register("t", survivor)
        first.unregister("t")
        assert survivor.wait_for(1) == ["build"]
        assert first.call("kept", "echo", value=1) == 1
    finally:
        stuck.gate.set()
