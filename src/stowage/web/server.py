"""How `stowage serve` runs uvicorn: connection limits and a deadline for headers.

uvicorn bounds an idle keep-alive connection (`timeout_keep_alive`) and the
size of a request head (h11's incomplete-event limit), and answers 503 past
`limit_concurrency`, but it never times out a connection that is still
sending its request line and headers: a client that opens connections and
trickles (or never sends) headers holds each one, and its file descriptor,
for ever (slow-loris). `HeaderDeadlineProtocol` adds that deadline: from
the connection's start, or from the first byte of the next request on a
kept-alive connection, the headers must be complete within
`[api] header_timeout` seconds, else the client gets a bare 408 and the
connection is closed. Body deadlines are the ASGI side's (`web.limits`).

The h11 implementation is chosen explicitly so that `max_header_size` holds
whichever optional parsers (httptools) happen to be installed.
"""

from __future__ import annotations

import asyncio
import functools
import resource
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from stowage.config import ApiSettings

__all__ = ["HeaderDeadlineProtocol", "raise_open_files_limit", "uvicorn_options"]

_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\ncontent-length: 0\r\n\r\n")
# Descriptors a worker needs beside its connections: database pools, the
# broker, log files, the listening socket.
SPARE_FILES = 256


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self._awaiting_headers():
            self._arm()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        if not self._awaiting_headers():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _awaiting_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_headers():
            # h11 cannot answer a request it has not parsed: the bytes are written as is.
            self.transport.write(_TIMEOUT_408)
            self.transport.close()


def uvicorn_options(api: ApiSettings) -> dict[str, Any]:
    """uvicorn.Config keywords for `[api]`'s connection settings (the same in every worker)."""
    # A partial, not a subclass made on the fly: `--workers N` pickles the config.
    protocol = functools.partial(HeaderDeadlineProtocol, header_timeout=api.header_timeout)
    return {"http": protocol,
            # Pooled clients keep idle connections longer than uvicorn's 5 s default.
            "timeout_keep_alive": api.keepalive_timeout,
            "limit_concurrency": api.max_connections,
            "h11_max_incomplete_event_size": api.max_header_size}


def raise_open_files_limit(api: ApiSettings) -> str | None:
    """Lift the soft open-files limit toward the hard one when `max_connections` needs it.

    systemd's default soft limit (1024) leaves little room above the default
    `max_connections`; past it, accept() fails ("out of system resource") in a
    tight loop instead of the surplus clients getting a 503. The deploy units
    set LimitNOFILE. Returns a warning when the hard limit is still too low.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = api.max_connections + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < needed:
            return (f"open files limit {target} is below [api] max_connections "
                    f"({api.max_connections}) + {SPARE_FILES}; raise LimitNOFILE or lower "
                    "max_connections")
    return None
