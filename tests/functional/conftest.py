"""Functional fixtures: a live stowage server per backend, reached over real HTTP.

The server runs uvicorn in a background thread on a free loopback port; each
test starts from empty tables (standard classes and traits re-synced).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import sqlalchemy as sa
import uvicorn

from stowage import config
from stowage.cli import build_asgi
from stowage.db import Database, schema
from stowage.placement import changes, tables
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    db: Database
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_server(settings: config.Settings, at_root: bool = True) -> LiveServer:
    db = Database(settings.database)
    schema.upgrade(db)
    app = build_asgi(settings, db, at_root=at_root)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    return LiveServer(f"http://127.0.0.1:{port}", db, server, thread)


def reset_tables(db: Database) -> None:
    """Empty the tables, and tell every worker's snapshot to reload everything."""
    with db.write() as conn:
        for table in reversed(tables.metadata.sorted_tables):
            if table is tables.provider_changes:
                continue
            if table.name == "resource_providers":
                conn.execute(table.update().values(parent_provider_id=None,
                                                   root_provider_id=None))
            conn.execute(table.delete())
        schema.sync_standard_names(conn)
        changes.record_all(conn)


@pytest.fixture(scope="session", params=BACKENDS)
def live_placement(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with throwaway_database(request.param) as url:
        live = start_server(config.Settings(database=url, services=("placement",)))
        try:
            yield live
        finally:
            live.stop()
            live.db.dispose()


@pytest.fixture
def placement(live_placement: LiveServer) -> Iterator[httpx.Client]:
    """An admin client at the latest microversion, on empty tables."""
    reset_tables(live_placement.db)
    headers = {"x-auth-token": "admin", "openstack-api-version": "placement latest",
               "accept": "application/json"}
    with httpx.Client(base_url=live_placement.url, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture
def db_engine(live_placement: LiveServer) -> sa.Engine:
    return live_placement.db.engine
