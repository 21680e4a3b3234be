"""Functional fixtures: a live stowage server per backend, reached over real HTTP.

The server runs uvicorn in a background thread on a free loopback port; each
test starts from empty tables (standard classes and traits re-synced).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import uvicorn

from stowage import config
from stowage.cli import build_asgi, plane_of
from stowage.compute import cells, rpc
from stowage.compute import tables as compute_tables
from stowage.compute.cells import Cells
from stowage.compute.hosts import HostConfig
from stowage.compute.runtime import ControlPlane
from stowage.db import Database, roles, schema
from stowage.db.engine import CELL
from stowage.image import tables as image_tables
from stowage.network import tables as network_tables
from stowage.placement import changes, tables
from tests.conftest import BACKENDS
from tests.dbs import migrated_database


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
    plane: ControlPlane | None = None
    # The deployment's cells (None for a server without Compute).
    cells: Cells | None = None
    # What the server was started with (e.g. where the Image service stores data).
    settings: config.Settings | None = None

    @property
    def cell_db(self) -> Database:
        """The (first) cell's database: where hosts, servers and the journal are."""
        assert self.cells is not None
        return self.cells.database(self.cells.default())

    def cell_dbs(self) -> list[Database]:
        """Every cell's database once."""
        assert self.cells is not None
        return [db for _, db in self.cells.distinct()]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if self.plane is not None:
            self.plane.stop()

    def close(self) -> None:
        """Stop, and give every database connection back (a throw-away database is
        dropped next, which PostgreSQL and MySQL refuse while it is in use)."""
        self.stop()
        if self.cells is not None:
            self.cells.dispose()
        self.db.dispose()


# Every statement of the Compute service must keep to its side of the cells line
# (db/roles.py): "strict" (the default) refuses one that does not, a file path
# reports it there instead, "off" checks nothing.
CELL_ROLES = os.environ.get("STOWAGE_CELL_ROLES", "strict")


# STOWAGE_TEST_CELLS=apart: the shared server keeps cell1 in a database of its own
# (test_cells.py always does) -- tests that read cell tables through `live.db`
# then see an empty API side.
CELLS_APART = os.environ.get("STOWAGE_TEST_CELLS") == "apart"


def check_roles(db: Database) -> None:
    """Hold every statement of `db` to the API/cell split, as STOWAGE_CELL_ROLES says."""
    if CELL_ROLES == "off":
        return
    api_tables = {t.name for m in (compute_tables.metadata, image_tables.metadata,
                                   network_tables.metadata, tables.metadata)
                  for t in m.sorted_tables} - compute_tables.CELL_TABLES
    report = None
    if CELL_ROLES != "strict":
        def report(message: str) -> None:
            with open(CELL_ROLES, "a", encoding="utf-8") as out:
                out.write(message + "\n=====\n")
    roles.enforce(db.engine, compute_tables.CELL_TABLES, api_tables,
                  strict=CELL_ROLES == "strict", report=report)


def start_server(settings: config.Settings, at_root: bool = True) -> LiveServer:
    db = Database(settings.database)
    schema.upgrade(db)
    found = None
    if "compute" in settings.services:
        # cell1 where the settings say (docs/cells.md): the API database by default.
        found = cells.bootstrap_with(db, settings.compute)
        for _, cell_db in found.databases():
            if cell_db.engine is not db.engine:
                check_roles(cell_db)
    check_roles(db)
    app = build_asgi(settings, db, at_root=at_root, cells=found)
    port = free_port()
    server, thread = run_uvicorn(app, port)
    return LiveServer(f"http://127.0.0.1:{port}", db, server, thread, plane_of(app), found,
                      settings)


def run_uvicorn(app: Any, port: int) -> tuple[uvicorn.Server, threading.Thread]:
    """`app` served on 127.0.0.1:`port` by a thread, once it accepts connections."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    return server, thread


# Kept across tests: the deployment's cells stay what the server started with.
_KEPT = frozenset({"cell_mappings"})


def reset_tables(db: Database, found: Cells | None = None) -> None:
    """Empty the tables, and tell every worker's snapshot to reload everything.

    The provider change log is kept (placement snapshots replay it); compute,
    image and network tables are simply emptied, children first, the cell
    tables in every cell's database.
    """
    cell_dbs = [d for _, d in found.databases()] if found is not None else [db.view(CELL)]
    for cell_db in cell_dbs:
        with cell_db.write() as conn:
            for table in reversed(compute_tables.metadata.sorted_tables):
                if table.name in compute_tables.CELL_TABLES:
                    conn.execute(table.delete())
    with db.write() as conn:
        for metadata in (compute_tables.metadata, image_tables.metadata,
                         network_tables.metadata):
            for table in reversed(metadata.sorted_tables):
                if table.name not in compute_tables.CELL_TABLES | _KEPT:
                    conn.execute(table.delete())
        for table in reversed(tables.metadata.sorted_tables):
            if table is tables.provider_changes:
                continue
            if table.name == "resource_providers":
                conn.execute(table.update().values(parent_provider_id=None,
                                                   root_provider_id=None))
            conn.execute(table.delete())
        schema.sync_standard_names(conn)
        changes.record_all(conn)


@contextmanager
def serving(backend: str, services: tuple[str, ...] | None = None,
            **overrides: Any) -> Iterator[LiveServer]:
    """A live server on a throw-away database: one service at `/`, or all mounted.

    `overrides` are other settings, e.g. `policy=PolicySettings(...)`.
    """
    with migrated_database(backend) as url, tempfile.TemporaryDirectory() as store:
        # Image data in a throw-away store too (the default is beside a SQLite file only).
        overrides.setdefault("image", config.ImageSettings(store_dir=store))
        if services:
            live = start_server(config.Settings(database=url, services=services, **overrides))
        else:
            live = start_server(config.Settings(database=url, **overrides), at_root=False)
        try:
            yield live
        finally:
            live.close()


@pytest.fixture(scope="session", params=BACKENDS)
def live_placement(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with serving(request.param, ("placement",)) as live:
        yield live


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


@pytest.fixture(scope="session", params=BACKENDS)
def live_stowage(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """Every service mounted under its name, as plain `stowage serve` runs them::

        http://127.0.0.1:PORT/placement   /compute   /image   /network   /identity
    """
    with contextlib.ExitStack() as stack:
        overrides: dict[str, Any] = {}
        if CELLS_APART:
            cell_url = stack.enter_context(migrated_database(request.param))
            overrides["compute"] = config.ComputeSettings(cell1_database=cell_url)
        yield stack.enter_context(serving(request.param, **overrides))


@pytest.fixture(scope="session", params=BACKENDS)
def live_identity(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """Every service mounted, tokens checked by the built-in identity service, with the
    directory drawn in `tests/functional/identity.py`."""
    from tests.functional.identity import identity_server

    with identity_server(request.param) as live:
        yield live


# The roles a Keystone token carries (noauth2 reads them from X-Roles): a
# member's token also carries reader, since Keystone's default roles imply it.
MEMBER = ("member", "reader")
READER = ("reader",)


def api_client(base_url: str, token: str = "admin",
               headers: dict[str, str] | None = None,
               roles: Sequence[str] | None = None) -> httpx.Client:
    """A client whose token names the caller; `roles` (if given) go in X-Roles."""
    role_header = {} if roles is None else {"x-roles": ",".join(roles)}
    return httpx.Client(base_url=base_url, timeout=30,
                        headers={"x-auth-token": token, "accept": "application/json",
                                 **role_header, **(headers or {})})


@pytest.fixture
def compute(live_stowage: LiveServer) -> Iterator[httpx.Client]:
    """An admin Compute client at `/compute/v2.1`, at the latest microversion, on empty tables."""
    reset_cloud(live_stowage)
    with api_client(f"{live_stowage.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute latest"}) as client:
        yield client


@dataclass
class Cloud:
    """A Compute API client (admin, latest microversion), a Placement client, and
    the control plane, so a test can add simulated hosts and inject faults."""

    compute: httpx.Client
    placement: httpx.Client
    plane: ControlPlane
    live: LiveServer

    def add_host(self, name: str, **options: object) -> str:
        """Start a simulated host; returns its compute node (= root provider) uuid."""
        agent = self.plane.add_host(HostConfig(name=name, **options))  # type: ignore[arg-type]
        return str(agent.node_uuid)

    def configure(self, **changes: object) -> None:
        """Change compute options (e.g. allow_resize_to_same_host) for this test only."""
        self.plane.reconfigure(dataclasses.replace(self.plane.settings, **changes))  # type: ignore[arg-type]

    def client(self, token: str, version: str = "latest",
               roles: Sequence[str] | None = None) -> httpx.Client:
        """A Compute client for `token` (e.g. "demo:p1", roles=MEMBER)."""
        return api_client(f"{self.live.url}/compute/v2.1", token=token, roles=roles,
                          headers={"openstack-api-version": f"compute {version}"})


def reset_cloud(live: LiveServer) -> ControlPlane:
    """Stop every agent, let running casts finish, then empty the tables."""
    plane = live.plane
    assert plane is not None
    for name in list(plane.agents):
        plane.stop_host(name)
    plane.drain()
    reset_tables(live.db, live.cells)
    return plane


@pytest.fixture
def cloud(live_stowage: LiveServer) -> Iterator[Cloud]:
    """An empty cloud: no hosts until the test adds them with `cloud.add_host(...)`."""
    plane = reset_cloud(live_stowage)
    settings = plane.settings
    with api_client(f"{live_stowage.url}/compute/v2.1",
                    headers={"openstack-api-version": "compute latest"}) as compute, \
            api_client(f"{live_stowage.url}/placement",
                       headers={"openstack-api-version": "placement latest"}) as placement:
        yield Cloud(compute, placement, plane, live_stowage)
    plane.drain()
    plane.reconfigure(settings)


@pytest.fixture
def nets(cloud: Cloud) -> Iterator[Any]:
    """The networks, subnets and QoS policy of `ports.Nets` on the cloud, closed after."""
    from tests.functional.ports import Nets  # ports builds on this module's Cloud

    made = Nets(cloud)
    yield made
    made.close()


@pytest.fixture
def image(live_stowage: LiveServer) -> Iterator[httpx.Client]:
    """An admin Image client at `/image`, on empty tables."""
    reset_cloud(live_stowage)
    with api_client(f"{live_stowage.url}/image") as client:
        yield client


@pytest.fixture
def network(live_stowage: LiveServer) -> Iterator[httpx.Client]:
    """An admin Networking client at `/network` (paths start with /v2.0), on empty tables."""
    reset_cloud(live_stowage)
    with api_client(f"{live_stowage.url}/network") as client:
        yield client


class RecordingConductor:
    """Stands in for the conductor: remembers every cast and does nothing."""

    def __init__(self) -> None:
        self.casts: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        def record(**kwargs: Any) -> None:
            self.casts.append((method, kwargs))
        return record


@pytest.fixture
def recorder(cloud: Cloud) -> Iterator[RecordingConductor]:
    fake = RecordingConductor()
    # register() adds an endpoint beside the others: take the real conductor out first.
    cloud.plane.transport.unregister(rpc.CONDUCTOR)
    cloud.plane.transport.register(rpc.CONDUCTOR, fake)
    try:
        yield fake
    finally:
        assert cloud.plane.drain(60), "control plane still busy after 60 s"
        cloud.plane.transport.unregister(rpc.CONDUCTOR)
        cloud.plane.transport.register(rpc.CONDUCTOR, cloud.plane.conductor)
