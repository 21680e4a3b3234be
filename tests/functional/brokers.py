"""The RabbitMQ the AMQP transport tests talk to, and throw-away transports on it.

`STOWAGE_TEST_TRANSPORT_URL` (default the local broker, guest/guest) names it;
without a broker there the rabbit tests are skipped. Every transport made here
has a namespace of its own (`test<random>`), auto-deleted target queues and
short timeouts, so runs never see each other's queues nor leave any behind.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest

from stowage.messaging.amqp import AmqpTransport

URL = os.environ.get("STOWAGE_TEST_TRANSPORT_URL", "rabbit://guest:guest@127.0.0.1:5672/")

# Seconds a test call waits for its answer: long enough for a busy CI machine.
CALL_TIMEOUT = 3.0


def broker_is_up() -> bool:
    parts = urlsplit(URL)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5672), 2):
            return True
    except OSError:
        return False


def skip_without_broker() -> None:
    if not broker_is_up():
        pytest.skip(f"no RabbitMQ at {urlsplit(URL).hostname}:{urlsplit(URL).port}")


def namespace() -> str:
    return f"test{uuid.uuid4().hex[:12]}"


@contextmanager
def transports(**options: Any) -> Iterator[Any]:
    """`make(**more)` builds transports sharing one fresh namespace; all closed at the end."""
    skip_without_broker()
    made: list[AmqpTransport] = []
    ns = namespace()

    def make(url: str = URL, **more: Any) -> AmqpTransport:
        settings = {"namespace": ns, "default_timeout": CALL_TIMEOUT, "long_timeout": 30.0,
                    "auto_delete": True, "drain_timeout": 5.0, **options, **more}
        transport = AmqpTransport(url, **settings)
        made.append(transport)
        return transport

    try:
        yield make
    finally:
        for transport in made:
            transport.close()


def can_close_connections() -> bool:
    """The broker is the local RabbitMQ and its `rabbitmqctl` answers us (root)."""
    if urlsplit(URL).hostname not in ("127.0.0.1", "localhost") or not shutil.which(
            "rabbitmqctl"):
        return False
    return _rabbitmqctl("status").returncode == 0


def close_connections_of(pid: int) -> int:
    """Have the broker close every connection of process `pid` (named by the transport
    `stowage:<pid>:...`), as when the broker or the network drops it; how many it closed."""
    listing = _rabbitmqctl("list_connections", "--no-table-headers", "pid",
                           "client_properties")
    assert listing.returncode == 0, listing.stderr
    mine = [line.split("\t", 1)[0] for line in listing.stdout.splitlines()
            if re.search(rf'"connection_name","stowage:{pid}:', line)]
    for connection in mine:
        closed = _rabbitmqctl("close_connection", connection, "test: the broker drops it")
        assert closed.returncode == 0, closed.stderr
    return len(mine)


def _rabbitmqctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True,
                          timeout=60, check=False)
