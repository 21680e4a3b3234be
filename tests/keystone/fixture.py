"""The session-scoped `keystone` fixture: one real Keystone for the whole test run.

Import it into a conftest (`from tests.keystone.fixture import keystone`) to
use it; `running_keystone()` is the same without pytest (bench/). Starting
takes ~10 s (db_sync, bootstrap, gunicorn), once per session (and per
xdist worker that needs it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.keystone.admin import KeystoneAdmin
from tests.keystone.server import ADMIN_PASSWORD, REGION, KeystoneServer

__all__ = ["Keystone", "keystone", "running_keystone"]


@dataclass
class Keystone:
    """A running Keystone: its server (stop/restart), URL and admin credentials."""

    server: KeystoneServer
    admin: KeystoneAdmin

    @property
    def auth_url(self) -> str:
        return self.server.auth_url

    admin_username = "admin"
    admin_password = ADMIN_PASSWORD
    admin_project = "admin"
    region = REGION

    def ensure_running(self) -> None:
        """Start Keystone again if a test stopped it (and left it stopped)."""
        if not self.server.running:
            self.server.restart()


@contextmanager
def running_keystone(expiration: int = 3600,
                     workdir: Path | None = None) -> Iterator[Keystone]:
    """A Keystone with `[token] expiration` seconds, stopped (and its files gone) at exit."""
    with tempfile.TemporaryDirectory(prefix="keystone-") as tmp:
        server = KeystoneServer(workdir or Path(tmp), expiration=expiration).start()
        try:
            yield Keystone(server, KeystoneAdmin(server.auth_url, ADMIN_PASSWORD))
        finally:
            server.stop()


@pytest.fixture(scope="session")
def keystone() -> Iterator[Keystone]:
    """One real Keystone for the session (see `running_keystone`)."""
    with running_keystone() as found:
        yield found
