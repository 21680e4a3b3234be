"""A consumer thread of the AMQP transport: one connection, its queues, acks after handlers.

Each consumer owns its connection and channel and is the only thread that
touches them, because kombu connections are not thread-safe. It does not run
handlers itself: it hands each message to its subscription's `on_message` with
a `done` callback (the transport runs the handler on its worker pool) and keeps
reading, so that a handler running for minutes neither stops the broker's
heartbeats being answered nor holds up the next message. When a handler is over
it calls `done(handled)`, which only queues the message; the consumer thread
acks it (or requeues it, if it was not handled) on its next turn, at most
`TICK` seconds later. A message is thus acknowledged only after its handler
ran: if the process dies or its connection drops first, the broker gives the
message to another consumer (at-least-once delivery).

One connection serves any number of *subscriptions* (a target's queues and
their handler), added and cancelled while it runs: an agent process with
thousands of hosts consumes all their queues on one connection and one
thread, not one each (a broker accepts a limited number of connections, and
each idle consumer thread wakes every `TICK`). Cancelling a subscription stops
its deliveries, waits for its handlers up to a drain timeout, and gives back
to the queue (requeues) what did not finish, as closing its own connection
would have.

When the connection drops, the thread reconnects with exponential back-off,
declares every subscription's queues again and resumes; messages in flight on
the old connection are not acked (their `done` is ignored) since the broker has
already requeued them.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kombu.connection import Connection
from kombu.entity import Queue
from kombu.message import Message
from kombu.messaging import Consumer

from stowage.messaging.amqp_publisher import BROKER_ERRORS, open_connection

__all__ = ["ConsumerThread", "Done", "Subscription", "TICK"]

LOG = logging.getLogger(__name__)

# Seconds between two looks at finished handlers, commands and heartbeats.
TICK = 0.1

Done = Callable[[bool], None]


@dataclass(eq=False)
class Subscription:
    """Queues consumed with one handler; `ready` once the broker delivers them to us."""

    queues: list[Queue]
    on_message: Callable[[Message, Done], None]
    ready: threading.Event = field(default_factory=threading.Event)
    # Set once a cancelled subscription has no handler running any more.
    drained: threading.Event = field(default_factory=threading.Event)
    # Touched by the consumer thread only: the kombu consumer of this connection,
    # and the messages delivered and not settled yet, by delivery tag.
    consumer: Consumer | None = None
    unsettled: dict[int, Message] = field(default_factory=dict)
    active: bool = True


class ConsumerThread:
    """Consume subscriptions on a connection of our own until stopped; built without I/O.

    `queues` and `on_message`, when given, are the first subscription;
    `subscribe` adds more at any time.
    """

    def __init__(self, url: str, queues: Sequence[Queue] = (),
                 on_message: Callable[[Message, Done], None] | None = None, *, name: str,
                 prefetch: int, heartbeat: float, backoff: tuple[float, float],
                 no_ack: bool = False, on_tick: Callable[[], None] | None = None) -> None:
        self._url = url
        self._prefetch = prefetch
        self._heartbeat = heartbeat
        self._backoff = backoff
        self._no_ack = no_ack
        self._on_tick = on_tick
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._start_lock = threading.Lock()
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._drain_timeout = 0.0
        self._finished: queue.SimpleQueue[tuple[int, Subscription, Message, bool]] = \
            queue.SimpleQueue()
        self._commands: queue.SimpleQueue[tuple[str, Subscription]] = queue.SimpleQueue()
        # Touched by the consumer thread only.
        self._subscriptions: list[Subscription] = (
            [Subscription(list(queues), on_message)] if queues and on_message else [])
        self._conn: Connection | None = None
        self._channel: object | None = None
        self._generation = 0

    @property
    def connection(self) -> Connection | None:
        """The current connection (tests drop its socket to play a broker failure)."""
        return self._conn

    def start(self, timeout: float) -> bool:
        """Start the thread (once); True once it consumes."""
        with self._start_lock:
            if not self._thread.is_alive() and not self._stopping.is_set():
                self._thread.start()
        return self._ready.wait(timeout)

    def wait_ready(self, timeout: float) -> bool:
        """True once the queues are consumed (again, after a reconnect)."""
        return self._ready.wait(timeout)

    def subscribe(self, queues: list[Queue],
                  on_message: Callable[[Message, Done], None]) -> Subscription:
        """Consume `queues` too (starting the thread if need be); wait on `.ready`."""
        subscription = Subscription(queues, on_message)
        self._commands.put(("add", subscription))
        self.start(0)
        return subscription

    def unsubscribe(self, subscriptions: Sequence[Subscription], drain_timeout: float) -> None:
        """Stop their deliveries, wait up to `drain_timeout` s for their running handlers,
        and give what did not finish back to its queue."""
        if not self._thread.is_alive():
            return
        for subscription in subscriptions:
            self._commands.put(("cancel", subscription))
        deadline = time.monotonic() + drain_timeout
        for subscription in subscriptions:
            if not subscription.drained.wait(max(deadline - time.monotonic(), 0)):
                self._commands.put(("forget", subscription))
                subscription.drained.wait(10 * TICK)

    def stop(self, drain_timeout: float) -> None:
        self.request_stop(drain_timeout)
        self.join()

    def request_stop(self, drain_timeout: float) -> None:
        """Stop taking messages, wait up to `drain_timeout` s for running handlers, close.

        Messages whose handlers did not finish in time go back to their queue.
        Returns at once; `join` waits for the thread.
        """
        self._drain_timeout = drain_timeout
        self._stopping.set()

    def join(self) -> None:
        if self._thread.is_alive():
            self._thread.join(self._drain_timeout + 10)
            if self._thread.is_alive():
                LOG.error("consumer %s did not stop", self._thread.name)

    def _run(self) -> None:
        delay = self._backoff[0]
        while not self._stopping.is_set():
            try:
                self._session()
            except BROKER_ERRORS as exc:
                self._lost()
                LOG.warning("consumer %s lost its connection (%r); reconnecting in %.1f s",
                            self._thread.name, exc, delay)
                self._wait(delay)
                delay = min(delay * 2, self._backoff[1])
            else:
                delay = self._backoff[0]
            finally:
                self._close_connection()
        self._apply_commands()  # what came in meanwhile: nothing runs any more
        for subscription in self._subscriptions:
            subscription.drained.set()

    def _lost(self) -> None:
        self._ready.clear()
        for subscription in list(self._subscriptions):
            subscription.ready.clear()
            subscription.unsettled.clear()  # the broker requeued them
            if not subscription.active:
                self._discard(subscription)

    def _wait(self, seconds: float) -> None:
        """Back-off, still applying commands (a cancel needs no broker)."""
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set() and time.monotonic() < deadline:
            self._apply_commands()
            self._stopping.wait(min(TICK, max(deadline - time.monotonic(), 0)))

    def _session(self) -> None:
        """One connection's life: declare, consume, ack; then drain when asked to stop."""
        self._generation += 1
        conn = open_connection(self._url, self._generation, "consume",
                               heartbeat=self._heartbeat)
        self._conn = conn
        channel = conn.channel()
        channel.basic_qos(0, self._prefetch, False)
        self._channel = channel
        for subscription in self._subscriptions:
            subscription.unsettled.clear()
            self._consume(subscription)
        self._apply_commands()
        self._ready.set()
        while not self._stopping.is_set():
            self._turn(conn)
        for subscription in self._subscriptions:
            if subscription.consumer is not None:
                subscription.consumer.cancel()
        deadline = time.monotonic() + self._drain_timeout
        while self._in_flight() and time.monotonic() < deadline:
            self._turn(conn)
        self._settle()

    def _consume(self, subscription: Subscription) -> None:
        def received(message: Message) -> None:
            self._received(subscription, message)

        subscription.consumer = Consumer(self._channel, queues=subscription.queues,
                                         on_message=received, no_ack=self._no_ack)
        subscription.consumer.consume()
        subscription.ready.set()

    def _in_flight(self) -> int:
        return sum(len(s.unsettled) for s in self._subscriptions)

    def _turn(self, conn: Connection) -> None:
        self._apply_commands()
        self._settle()
        with contextlib.suppress(TimeoutError):  # nothing came in TICK seconds
            conn.drain_events(timeout=TICK)
        conn.heartbeat_check()
        if self._on_tick is not None:
            self._on_tick()

    def _apply_commands(self) -> None:
        """Subscriptions added, cancelled, or given up on since the last turn."""
        while True:
            try:
                command, subscription = self._commands.get_nowait()
            except queue.Empty:
                return
            connected = self._channel is not None
            if command == "add":
                self._subscriptions.append(subscription)
                if connected and not self._stopping.is_set():
                    self._consume(subscription)
            elif command == "cancel":
                self._cancel(subscription, connected)
            else:  # forget: handlers overran the drain timeout; their messages go back
                for message in subscription.unsettled.values():
                    if not self._no_ack and self._channel is not None:
                        message.requeue()
                subscription.unsettled.clear()
                self._discard(subscription)

    def _cancel(self, subscription: Subscription, connected: bool) -> None:
        subscription.active = False
        if connected and subscription.consumer is not None:
            subscription.consumer.cancel()
        if not connected:
            subscription.unsettled.clear()  # no connection: the broker requeued them
        if not subscription.unsettled:
            self._discard(subscription)

    def _discard(self, subscription: Subscription) -> None:
        with contextlib.suppress(ValueError):
            self._subscriptions.remove(subscription)
        subscription.drained.set()

    def _received(self, subscription: Subscription, message: Message) -> None:
        generation = self._generation
        subscription.unsettled[message.delivery_tag] = message

        def done(handled: bool) -> None:
            self._finished.put((generation, subscription, message, handled))

        subscription.on_message(message, done)

    def _settle(self) -> None:
        """Ack what handlers finished, requeue what they gave back (this thread only)."""
        while True:
            try:
                generation, subscription, message, handled = self._finished.get_nowait()
            except queue.Empty:
                return
            if generation != self._generation:
                continue  # its connection is gone: the broker requeued it already
            if subscription.unsettled.pop(message.delivery_tag, None) is None:
                continue  # given back already (a drain timeout ran out)
            if not self._no_ack:
                if handled:
                    message.ack()
                else:
                    message.requeue()
            if not subscription.active and not subscription.unsettled:
                self._discard(subscription)

    def _close_connection(self) -> None:
        conn, self._conn, self._channel = self._conn, None, None
        if conn is not None:
            try:
                conn.release()
            except Exception:  # noqa: BLE001 - it is being thrown away
                LOG.debug("closing consumer connection", exc_info=True)
