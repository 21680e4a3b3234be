"""A consumer thread of the AMQP transport: one connection, its queues, acks after handlers.

Each consumer owns its connection and channel and is the only thread that
touches them, because kombu connections are not thread-safe. It does not run
handlers itself: it hands each message to `on_message` with a `done` callback
(the transport runs the handler on its worker pool) and keeps reading, so that
a handler running for minutes neither stops the broker's heartbeats being
answered nor holds up the next message. When a handler is over it calls
`done(handled)`, which only queues the message; the consumer thread acks it
(or requeues it, if it was not handled) on its next turn, at most `TICK`
seconds later. A message is thus acknowledged only after its handler ran: if
the process dies or its connection drops first, the broker gives the message
to another consumer (at-least-once delivery).

When the connection drops, the thread reconnects with exponential back-off,
declares its queues again and resumes; messages in flight on the old
connection are not acked (their `done` is ignored) since the broker has
already requeued them.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable

from kombu.connection import Connection
from kombu.entity import Queue
from kombu.message import Message
from kombu.messaging import Consumer

from stowage.messaging.amqp_publisher import BROKER_ERRORS, open_connection

__all__ = ["ConsumerThread", "Done", "TICK"]

LOG = logging.getLogger(__name__)

# Seconds between two looks at finished handlers and heartbeats.
TICK = 0.1

Done = Callable[[bool], None]


class ConsumerThread:
    """Consume `queues` on a connection of our own until stopped; constructed without I/O."""

    def __init__(self, url: str, queues: list[Queue],
                 on_message: Callable[[Message, Done], None], *, name: str,
                 prefetch: int, heartbeat: float, backoff: tuple[float, float],
                 no_ack: bool = False, on_tick: Callable[[], None] | None = None) -> None:
        self._url = url
        self._queues = queues
        self._on_message = on_message
        self._prefetch = prefetch
        self._heartbeat = heartbeat
        self._backoff = backoff
        self._no_ack = no_ack
        self._on_tick = on_tick
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._drain_timeout = 0.0
        self._finished: queue.SimpleQueue[tuple[int, Message, bool]] = queue.SimpleQueue()
        # Touched by the consumer thread only.
        self._conn: Connection | None = None
        self._generation = 0
        self._in_flight = 0

    @property
    def connection(self) -> Connection | None:
        """The current connection (tests drop its socket to play a broker failure)."""
        return self._conn

    def start(self, timeout: float) -> bool:
        """Start the thread; True once its queues are declared and consumed."""
        self._thread.start()
        return self._ready.wait(timeout)

    def wait_ready(self, timeout: float) -> bool:
        """True once the queues are consumed (again, after a reconnect)."""
        return self._ready.wait(timeout)

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
                self._ready.clear()
                LOG.warning("consumer %s lost its connection (%r); reconnecting in %.1f s",
                            self._thread.name, exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, self._backoff[1])
            else:
                delay = self._backoff[0]
            finally:
                self._close_connection()

    def _session(self) -> None:
        """One connection's life: declare, consume, ack; then drain when asked to stop."""
        self._generation += 1
        conn = open_connection(self._url, self._generation, "consume",
                               heartbeat=self._heartbeat)
        self._conn = conn
        self._in_flight = 0
        channel = conn.channel()
        channel.basic_qos(0, self._prefetch, False)
        consumer = Consumer(channel, queues=self._queues, on_message=self._received,
                                  no_ack=self._no_ack)
        consumer.consume()
        self._ready.set()
        while not self._stopping.is_set():
            self._turn(conn)
        consumer.cancel()
        deadline = time.monotonic() + self._drain_timeout
        while self._in_flight and time.monotonic() < deadline:
            self._turn(conn)
        self._settle()

    def _turn(self, conn: Connection) -> None:
        self._settle()
        with contextlib.suppress(TimeoutError):  # nothing came in TICK seconds
            conn.drain_events(timeout=TICK)
        conn.heartbeat_check()
        if self._on_tick is not None:
            self._on_tick()

    def _received(self, message: Message) -> None:
        generation = self._generation
        self._in_flight += 1

        def done(handled: bool) -> None:
            self._finished.put((generation, message, handled))

        self._on_message(message, done)

    def _settle(self) -> None:
        """Ack what handlers finished, requeue what they gave back (this thread only)."""
        while True:
            try:
                generation, message, handled = self._finished.get_nowait()
            except queue.Empty:
                return
            if generation != self._generation:
                continue  # its connection is gone: the broker requeued it already
            self._in_flight -= 1
            if self._no_ack:
                continue
            if handled:
                message.ack()
            else:
                message.requeue()

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.release()
            except Exception:  # noqa: BLE001 - it is being thrown away
                LOG.debug("closing consumer connection", exc_info=True)
