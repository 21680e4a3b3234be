"""The AMQP transport: stowage's RPC over RabbitMQ, with kombu.

Who talks to whom (names from amqp_wire; `ns` is the transport's namespace)::

    caller                                  broker                     endpoint process
    call/cast ──publish(mandatory, confirm)──> queue ns.t ──one of──> consumer of each
                                                                      registration of t
    fanout ────publish(confirm)──> exchange ns.t.fanout ──every──> ns.t.fanout.<id>
    call <──── queue ns.reply.<id> <──reply(correlation_id)────────── handler

- `register(t, endpoint)` consumes `ns.t` and a fanout queue of its own;
  several registrations of `t`, in this process or others, compete for `ns.t`
  and each receive every fanout. Every registration of a transport shares one
  consumer connection and thread (an agent process of 10,000 hosts has one,
  not 10,000: a broker allows a limited number of connections).
- `call` waits for the answer up to `default_timeout` (`call_long`:
  `long_timeout`) and raises MessagingTimeout after; the request expires from
  the queue at the same moment, so a late consumer does not run it. A target
  with no queue fails at once (the broker returns the mandatory message):
  MessagingTimeout, as LocalTransport raises. A target whose queue exists but
  has no consumer (its processes are down, `auto_delete=False`) keeps casts
  for when one comes back and lets calls time out.
- Handlers run on a pool of `max_workers` threads per transport; a message is
  acked after its handler ran (see amqp_consumer), replies and casts are
  confirmed by the broker (see amqp_publisher).
- Connections carry heartbeats and are re-opened with back-off when they
  drop: consumers resume, publishes retry until their deadline, calls in
  flight complete or time out.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from kombu.connection import Connection
from kombu.entity import Exchange, Queue
from kombu.message import Message

from stowage.messaging import MessagingError, MessagingTimeout
from stowage.messaging.amqp_consumer import ConsumerThread, Done, Subscription
from stowage.messaging.amqp_publisher import Outcome, Publisher
from stowage.messaging.amqp_replies import Replies
from stowage.messaging.amqp_wire import (
    Names,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    kombu_url,
    serve,
)
from stowage.metrics import process as metrics

__all__ = ["AmqpTransport"]

LOG = logging.getLogger(__name__)

# Seconds a handler keeps trying to answer a caller whose reply queue is missing.
REPLY_RETRY = 10.0


@dataclass
class _Registration:
    endpoint: object
    subscription: Subscription


class AmqpTransport:
    """RPC over RabbitMQ; safe to use from any number of threads; constructed without I/O.

    `url` is oslo.messaging's `rabbit://user:pass@host:port/vhost` (or kombu's
    `amqp://...`). `auto_delete` makes a target's queue go away with its last
    consumer (tests); by default it outlives them, so casts wait for a
    restarting service. Closing waits up to `drain_timeout` s for running
    handlers.
    """

    def __init__(self, url: str, *, namespace: str = "stowage", default_timeout: float = 60.0,
                 long_timeout: float = 1800.0, heartbeat: float = 30.0, max_workers: int = 16,
                 auto_delete: bool = False, drain_timeout: float = 30.0,
                 backoff: tuple[float, float] = (0.1, 5.0)) -> None:
        self._url = kombu_url(url) if url.startswith("rabbit://") else url
        self.names = Names(namespace)
        self.default_timeout = default_timeout
        self.long_timeout = long_timeout
        self._heartbeat = heartbeat
        self._max_workers = max_workers
        self._auto_delete = auto_delete
        self._drain_timeout = drain_timeout
        self._backoff = backoff
        self._lock = threading.Lock()
        # Stopping: no new work (handlers not started yet give their message back);
        # closed: stopped, and calls are refused too.
        self._stopping = False
        self._closed = False
        self._registrations: dict[str, list[_Registration]] = {}
        # Every registration's queues, on one connection (made on the first one).
        self._consumer: ConsumerThread | None = None
        self._pool: ThreadPoolExecutor | None = None
        # Messages handed to the pool and not done yet: what `drain` waits for.
        self._inflight = 0
        self._idle = threading.Condition(self._lock)
        self.publisher = Publisher(self._url, heartbeat=heartbeat, backoff=backoff)
        self.replies = Replies(self._url, self.names.reply_queue(uuid.uuid4().hex),
                               heartbeat=heartbeat, backoff=backoff,
                               on_tick=self.publisher.heartbeat)

    # -- the serving side ---------------------------------------------------------------

    def register(self, target: str, endpoint: object) -> None:
        """Serve `target` with `endpoint` (once per endpoint); returns once it consumes."""
        with self._lock:
            if self._stopping:
                raise MessagingError("transport is closed")
            registrations = self._registrations.setdefault(target, [])
            if any(r.endpoint is endpoint for r in registrations):
                return
            if self._consumer is None:
                self._consumer = ConsumerThread(
                    self._url, name="amqp-consumer",
                    prefetch=self._max_workers, heartbeat=self._heartbeat,
                    backoff=self._backoff, on_tick=self.publisher.heartbeat)
            registration = _Registration(endpoint, self._consumer.subscribe(
                self._queues(target), self._on_message(target, endpoint)))
            registrations.append(registration)
        if not registration.subscription.ready.wait(self.default_timeout):
            LOG.warning("%s is not consumed yet (broker unreachable?); still trying", target)

    def _queues(self, target: str) -> list[Queue]:
        names = self.names
        fanout = Exchange(names.fanout_exchange(target), type="fanout", durable=False,
                                auto_delete=True)
        return [Queue(names.queue(target), durable=True, auto_delete=self._auto_delete),
                Queue(names.fanout_queue(target, uuid.uuid4().hex), exchange=fanout,
                            exclusive=True, auto_delete=True)]

    def _on_message(self, target: str, endpoint: object) -> Callable[[Message, Done], None]:
        def on_message(message: Message, done: Done) -> None:
            self._dispatch(target, endpoint, message, done)
        return on_message

    def unregister(self, target: str, endpoint: object | None = None) -> None:
        """Stop serving `target` with `endpoint` (every endpoint of it when None).

        Waits (up to `drain_timeout`) for the handlers it is running.
        """
        with self._lock:
            registrations = self._registrations.get(target, [])
            gone = [r for r in registrations if endpoint is None or r.endpoint is endpoint]
            kept = [r for r in registrations if r not in gone]
            if kept:
                self._registrations[target] = kept
            else:
                self._registrations.pop(target, None)
            consumer = self._consumer
        if consumer is not None and gone:
            consumer.unsubscribe([r.subscription for r in gone], self._drain_timeout)

    def _dispatch(self, target: str, endpoint: object, message: Message,
                  done: Done) -> None:
        """On the consumer thread: hand the message to the pool (or back, when closing)."""
        with self._lock:
            if self._stopping:
                done(False)
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="amqp-rpc")
            pool = self._pool
            self._inflight += 1
        try:
            pool.submit(self._handle, target, endpoint, message, done)
        except RuntimeError:  # the pool is shut down: the message goes back to its queue
            self._handled()
            done(False)

    def _handled(self) -> None:
        with self._idle:
            self._inflight -= 1
            if not self._inflight:
                self._idle.notify_all()

    def _handle(self, target: str, endpoint: object, message: Message,
                done: Done) -> None:
        """On a pool thread: run the method, reply if it is a call, then let it be acked."""
        handled = True
        try:
            if self._stopping:
                handled = False  # closing: leave it to another consumer
                return
            method, args = decode_request(message.body)
            reply_to = message.properties.get("reply_to")
            reply = serve(endpoint, target, method, args, is_cast=not reply_to)
            if reply_to:
                self._reply(reply_to, message.properties.get("correlation_id"), reply)
        except Exception:
            LOG.exception("%s: dropping a message that could not be handled", target)
        finally:
            done(handled)
            self._handled()

    def _reply(self, reply_to: str, correlation_id: Any, reply: dict[str, Any]) -> None:
        """Send the answer; while its reply queue is missing, try again for a while.

        A missing reply queue usually means the caller's connection is coming
        back (its exclusive queue is declared again on reconnect); if the caller
        is gone for good, the answer is dropped after REPLY_RETRY seconds.
        """
        body = encode_reply(reply)
        deadline = time.monotonic() + min(self.default_timeout, REPLY_RETRY)
        delay = self._backoff[0]
        while True:
            outcome = self.publisher.publish(body, exchange="", routing_key=reply_to,
                                             mandatory=True, deadline=deadline,
                                             correlation_id=correlation_id)
            if outcome is Outcome.ROUTED:
                return
            if self._stopping or time.monotonic() + delay > deadline:
                LOG.info("the caller of %s is gone; reply dropped", correlation_id)
                return
            time.sleep(delay)
            delay = min(delay * 2, self._backoff[1])

    # -- the calling side ---------------------------------------------------------------

    def call(self, target: str, method: str, /, **kwargs: Any) -> Any:
        """Run `method` on one endpoint of `target`; wait up to `default_timeout` s."""
        return self._call(target, method, kwargs, self.default_timeout)

    def call_long(self, target: str, method: str, /, **kwargs: Any) -> Any:
        """`call`, waiting up to `long_timeout` s: for steps known to take long (moves)."""
        return self._call(target, method, kwargs, self.long_timeout)

    def _call(self, target: str, method: str, kwargs: dict[str, Any], timeout: float) -> Any:
        body = self._request(target, method, kwargs)
        deadline = time.monotonic() + timeout
        if not self.replies.ready(timeout):
            raise MessagingTimeout(f"{target}.{method}: the reply queue is not ready")
        correlation_id, future = self.replies.expect()
        try:
            # The request expires when the caller gives up: nobody runs it late.
            self._publish_to_queue(target, method, body, deadline, correlation_id=correlation_id,
                                   reply_to=self.replies.queue_name,
                                   expiration=max(deadline - time.monotonic(), 0.001))
            try:
                answer = future.result(max(deadline - time.monotonic(), 0))
            except FutureTimeout:
                raise MessagingTimeout(f"{target}.{method}: no answer in {timeout:g} s") from None
        finally:
            self.replies.forget(correlation_id)
            metrics.rpc_call(target, method, deadline - timeout)
        return decode_reply(answer)

    def cast(self, target: str, method: str, /, **kwargs: Any) -> None:
        """Queue `method` for one endpoint of `target`; returns once the broker has it."""
        body = self._request(target, method, kwargs)
        self._publish_to_queue(target, method, body, time.monotonic() + self.default_timeout)

    def fanout(self, target: str, method: str, /, **kwargs: Any) -> None:
        """Queue `method` for every endpoint of `target` now registered (none: no-op)."""
        body = self._request(target, method, kwargs)
        self.publisher.publish(body, exchange=self.names.fanout_exchange(target), routing_key="",
                               mandatory=False,
                               deadline=time.monotonic() + self.default_timeout)

    def _request(self, target: str, method: str, kwargs: dict[str, Any]) -> bytes:
        """The request's body; refuses what no endpoint serves or what is not JSON."""
        if self._closed:
            raise MessagingError("transport is closed")
        if method.startswith("_"):
            raise MessagingTimeout(f"no endpoint serves {target}.{method}")
        return encode_request(method, kwargs)

    def _publish_to_queue(self, target: str, method: str, body: bytes, deadline: float,
                          **properties: Any) -> None:
        outcome = self.publisher.publish(body, exchange="", routing_key=self.names.queue(target),
                                         mandatory=True, deadline=deadline, **properties)
        if outcome is not Outcome.ROUTED:
            raise MessagingTimeout(f"no endpoint serves {target}.{method}")

    # -- lifecycle ------------------------------------------------------------------------

    def connections(self) -> list[Connection]:
        """Every connection open now: the publisher's, the reply queue's, each consumer's.

        For diagnostics, and for tests that cut them to play a broker failure.
        """
        consumer = self._consumer
        found = [self.publisher.connection, self.replies.connection,
                 consumer.connection if consumer is not None else None]
        return [conn for conn in found if conn is not None]

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no handler of this transport is running; True when idle.

        Only this process's share: a message still queued on the broker, or
        prefetched and not yet handed to a handler, is not waited for (another
        process may be the one to run it). The control plane adds what it
        knows of the other processes' work (runtime.py).
        """
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._inflight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, drain_timeout: float | None = None) -> None:
        """Stop consuming, let running handlers finish (up to `drain_timeout` s, default the
        transport's), then close the reply queue and every connection. Idempotent."""
        drain = self._drain_timeout if drain_timeout is None else drain_timeout
        with self._lock:
            self._stopping = True
            self._registrations.clear()
            pool, self._pool = self._pool, None
            consumer = self._consumer
        if consumer is not None:
            consumer.stop(drain)
        if pool is not None:
            pool.shutdown(wait=True)
        self._closed = True
        self.replies.close(drain)
        self.publisher.close()
