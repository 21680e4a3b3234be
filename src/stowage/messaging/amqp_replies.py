"""The caller's side of AMQP calls: one exclusive reply queue per transport.

Every call names this queue in `reply_to` and a fresh `correlation_id`; the
reply consumer thread hands each answer to the caller waiting for that id.
The queue is exclusive to its connection: if the connection drops, the broker
deletes it, the consumer declares it again (same name) on reconnect, and an
answer sent in between is lost -- its caller gets MessagingTimeout when its
timeout runs out, never a hang.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future

from kombu.connection import Connection
from kombu.entity import Queue
from kombu.message import Message

from stowage.messaging import MessagingError
from stowage.messaging.amqp_consumer import ConsumerThread, Done

__all__ = ["Replies"]

LOG = logging.getLogger(__name__)


class Replies:
    """Pending calls by correlation id, and the thread that answers them; starts on first call."""

    def __init__(self, url: str, queue_name: str, *, heartbeat: float,
                 backoff: tuple[float, float], on_tick: Callable[[], None]) -> None:
        self.queue_name = queue_name
        self._lock = threading.Lock()
        self._pending: dict[str, Future[bytes]] = {}
        self._consumer = ConsumerThread(
            url, [Queue(queue_name, exclusive=True, auto_delete=True)], self._received,
            name=f"amqp-{queue_name}", prefetch=0, heartbeat=heartbeat, backoff=backoff,
            no_ack=True, on_tick=on_tick)
        self._started = False

    @property
    def connection(self) -> Connection | None:
        return self._consumer.connection

    def ready(self, timeout: float) -> bool:
        """Start the reply consumer if need be; True once it consumes."""
        with self._lock:
            start, self._started = not self._started, True
        if start:
            return self._consumer.start(timeout)
        return self._consumer.wait_ready(timeout)

    def expect(self) -> tuple[str, Future[bytes]]:
        """A new correlation id and the future its reply will complete."""
        correlation_id = uuid.uuid4().hex
        future: Future[bytes] = Future()
        with self._lock:
            self._pending[correlation_id] = future
        return correlation_id, future

    def forget(self, correlation_id: str) -> None:
        with self._lock:
            self._pending.pop(correlation_id, None)

    def _received(self, message: Message, done: Done) -> None:
        with self._lock:
            future = self._pending.pop(str(message.properties.get("correlation_id")), None)
        if future is None:
            LOG.info("reply to %s came after its caller gave up",
                     message.properties.get("correlation_id"))
        elif not future.done():
            future.set_result(message.body)
        done(True)

    def close(self, drain_timeout: float) -> None:
        """Stop the consumer; calls still waiting fail with MessagingError."""
        if self._started:
            self._consumer.stop(drain_timeout)
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(MessagingError("transport closed while waiting for a reply"))
