"""Publishing for the AMQP transport: one connection in confirm mode, shared under a lock.

kombu connections and channels are not thread-safe, and the rest of stowage
publishes from many threads (API workers, the conductor's pool, handlers
replying). A single connection guarded by a lock is the simplest safe choice:
a publish holds the lock only until the broker confirms it (well under a
millisecond on a local broker), so callers queue briefly instead of each
opening a connection.

Every publish waits for the broker's confirm (publisher confirms), so
"published" means the broker has the message. Publishes to a target's queue
are `mandatory`: a message no queue takes comes back, and the caller learns at
once that nobody serves the target. When the connection breaks, the publish
is retried on a new connection with back-off until its deadline; a message
whose confirm was lost with the connection may thus reach the broker twice
(delivery is at least once; the agents' steps are idempotent).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import socket
import threading
import time
from typing import Any

import amqp
from amqp.exceptions import MessageNacked, NotFound
from kombu.connection import Connection
from kombu.exceptions import OperationalError
from kombu.messaging import Producer

from stowage.messaging import MessagingError
from stowage.messaging.amqp_wire import CONTENT_TYPE

__all__ = ["Publisher", "Outcome", "BROKER_ERRORS", "connection_name", "open_connection"]

LOG = logging.getLogger(__name__)

# What a broken connection or channel raises: the cure is a new connection.
BROKER_ERRORS: tuple[type[BaseException], ...] = (
    OSError, OperationalError, *amqp.Connection.connection_errors,
    *amqp.Connection.channel_errors)
# A publish may also be refused (nack: the broker could not take it): try again too.
_RETRIED = (*BROKER_ERRORS, MessageNacked)


def connection_name(purpose: str) -> str:
    """What RabbitMQ lists as the connection's name (`rabbitmqctl list_connections
    user_provided_name`, the management UI): which process on which host, and why, so
    that an operator can tell the connections of many stowage processes apart."""
    return f"stowage:{os.getpid()}:{socket.gethostname()}:{purpose}"


def open_connection(url: str, attempt: int, purpose: str, **options: Any) -> Connection:
    """Connect to one broker of `url` (kombu's `;`-separated list), the next one each attempt.

    One try only: the caller's back-off decides when to try again.
    """
    brokers = url.split(";")
    transport = {**options.pop("transport_options", {}),
                 "client_properties": {"connection_name": connection_name(purpose)}}
    conn = Connection(brokers[attempt % len(brokers)], transport_options=transport, **options)
    try:
        conn.ensure_connection(max_retries=0)
    except BaseException:
        conn.release()
        raise
    return conn


class Outcome(enum.Enum):
    ROUTED = "routed"  # the broker confirmed it and a queue took it
    UNROUTABLE = "unroutable"  # mandatory, and no queue took it
    NO_EXCHANGE = "no exchange"  # the exchange does not exist (no fanout subscriber)


class Publisher:
    """The transport's publishing connection; connects on first use."""

    def __init__(self, url: str, *, heartbeat: float, backoff: tuple[float, float]) -> None:
        self._url = url
        self._heartbeat = heartbeat
        self._backoff = backoff
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._producer: Producer | None = None
        self._returned = False
        self._last_tick = 0.0
        self._attempt = -1

    @property
    def connection(self) -> Connection | None:
        """The current connection (tests drop its socket to play a broker failure)."""
        return self._conn

    def publish(self, body: bytes, *, exchange: str, routing_key: str, mandatory: bool,
                deadline: float, **properties: Any) -> Outcome:
        """Publish and wait for the broker's confirm, retrying until `deadline` (monotonic)."""
        delay = self._backoff[0]
        with self._lock:
            while True:
                try:
                    return self._publish_once(body, exchange, routing_key, mandatory,
                                              deadline, properties)
                except NotFound:
                    self._producer = None  # the broker closed the channel, not the connection
                    return Outcome.NO_EXCHANGE
                except _RETRIED as exc:
                    self._drop()
                    if time.monotonic() + delay > deadline:
                        raise MessagingError(f"could not publish to {exchange or routing_key}: "
                                             f"{exc!r}") from exc
                    LOG.warning("publish failed (%r), retrying in %.1f s", exc, delay)
                    time.sleep(delay)
                    delay = min(delay * 2, self._backoff[1])

    def _publish_once(self, body: bytes, exchange: str, routing_key: str, mandatory: bool,
                      deadline: float, properties: dict[str, Any]) -> Outcome:
        producer = self._connected()
        self._returned = False
        producer.publish(body, exchange=exchange, routing_key=routing_key, mandatory=mandatory,
                         content_type=CONTENT_TYPE, content_encoding="utf-8", retry=False,
                         confirm_timeout=max(deadline - time.monotonic(), 0.1), **properties)
        return Outcome.UNROUTABLE if self._returned else Outcome.ROUTED

    def _connected(self) -> Producer:
        if self._conn is None:
            self._attempt += 1
            self._conn = open_connection(self._url, self._attempt, "publish",
                                         heartbeat=self._heartbeat,
                                         transport_options={"confirm_publish": True})
        if self._producer is None:
            self._producer = Producer(self._conn.channel(), on_return=self._on_return)
        return self._producer

    def _on_return(self, exc: Exception, exchange: str, routing_key: str, message: Any) -> None:
        """The broker hands back a mandatory message no queue took (before its confirm)."""
        self._returned = True

    def heartbeat(self) -> None:
        """Answer the broker's heartbeats while idle; consumer threads call this often.

        Never waits for the lock: a publish in progress is traffic enough.
        """
        now = time.monotonic()
        if now - self._last_tick < 1.0 or not self._lock.acquire(blocking=False):
            return
        try:
            self._last_tick = now
            if self._conn is not None:
                self._read_pending()
                self._conn.heartbeat_check()
        except Exception as exc:  # noqa: BLE001 - any failure means: reconnect on next publish
            LOG.info("publishing connection lost (%r); the next publish reconnects", exc)
            self._drop()
        finally:
            self._lock.release()

    def _read_pending(self) -> None:
        assert self._conn is not None
        with contextlib.suppress(TimeoutError):  # nothing was waiting
            self._conn.drain_events(timeout=0)

    def _drop(self) -> None:
        conn, self._conn, self._producer = self._conn, None, None
        if conn is not None:
            try:
                conn.release()
            except Exception:  # noqa: BLE001 - it is being thrown away
                LOG.debug("closing a broken publishing connection", exc_info=True)

    def close(self) -> None:
        with self._lock:
            self._drop()
