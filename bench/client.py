"""HTTP clients for talking to a Placement target the way a real caller does.

Why a helper: the builder, the timing loops and the throughput threads all need
the same headers (noauth2 admin token, latest microversion), a kept-alive
connection, and a retry on the transient 5xx that SQLite's single writer can
produce when several server workers write at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

__all__ = ["HEADERS", "call", "new_client", "retries_so_far", "thread_client"]

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest",
           "Accept": "application/json"}
_local = threading.local()
_retried = [0]  # retried requests, all threads (reported after a build)
_retried_lock = threading.Lock()


def retries_so_far() -> int:
    """How many requests had to be retried since the process started."""
    return _retried[0]


def _note_retry(attempt: int) -> None:
    with _retried_lock:
        _retried[0] += 1
    time.sleep(0.1 * 2 ** attempt)


def new_client(base_url: str, timeout: float = 600.0) -> httpx.Client:
    """One kept-alive connection pool; loopback only."""
    return httpx.Client(base_url=base_url, headers=HEADERS, timeout=timeout,
                        limits=httpx.Limits(max_connections=4, max_keepalive_connections=4))


def thread_client(base_url: str) -> httpx.Client:
    """A client private to the calling thread (closed with the process)."""
    clients: dict[str, httpx.Client] = getattr(_local, "clients", None) or {}
    _local.clients = clients
    if base_url not in clients:
        clients[base_url] = new_client(base_url)
    return clients[base_url]


def call(client: httpx.Client, method: str, path: str, body: Any = None,
         ok: tuple[int, ...] = (200, 201, 204), retries: int = 5) -> httpx.Response:
    """Send one request; retry 5xx/transport errors; raise on any other status."""
    for attempt in range(retries + 1):
        try:
            resp = client.request(method, path, json=body)
        except httpx.TransportError:
            if attempt == retries:
                raise
            _note_retry(attempt)
            continue
        if resp.status_code in ok:
            return resp
        if resp.status_code < 500 or attempt == retries:
            raise RuntimeError(f"{method} {path} -> {resp.status_code}: {resp.text[:500]}")
        _note_retry(attempt)
    raise AssertionError("unreachable")
