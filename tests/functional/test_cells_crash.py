"""A build carried to another cell, killed at each point of the carry, then restarted.

The service runs as a subprocess (tests/functional/crashing.py) with cell1's
hosts host1, host2 and cell2's host3 (a hosts file); a boot asks for host3,
so its server is carried from cell1, where the API wrote it, to cell2. The
process ends at `build:carry:executing` (before the copy), `:switched`
(right after the instance mapping points at cell2) or `:done` (records
purged in cell1, the continuation not cast yet). After a restart without the
hook the server must be ACTIVE on host3, its records in cell2 only, its
mapping on cell2, its claim exactly its flavor, and the audit clean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import cells as cell_records
from stowage.compute import tables as t
from stowage.compute.audit import audit
from stowage.compute.conductor import carry
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.placement.client import PlacementClient
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.crashing import SMALL, Stowage, running

HOSTS_FILE = '''
[[hosts]]
name = "host3"
cell = "cell2"
'''


def _cases() -> list[Any]:
    """Every point on SQLite, the switch on the other backends."""
    return [pytest.param(backend, point, id=f"{backend}-{point}")
            for backend in BACKENDS for point in carry.CRASH_POINTS
            if backend == "sqlite" or point.endswith("switched")]


@contextmanager
def _deployment(backend: str) -> Iterator[tuple[str, cell_records.Cells]]:
    """An API database with cell0, cell1 and cell2 (cell2 in a second database)."""
    with throwaway_database(backend) as url, throwaway_database(backend) as cell2_url:
        api = Database(url)
        schema.upgrade(api)
        cells = cell_records.bootstrap_with(api, ComputeSettings())
        schema.upgrade(Database(cell2_url))
        with cells.api.write() as conn:
            cell_records.create_cell(conn, "cell2", cell2_url)
        cells.reload()
        try:
            yield url, cells
        finally:
            cells.dispose()
            api.dispose()


def _boot_on_host3(s: Stowage) -> str:
    flavor_id, _ = s.flavors()
    resp = s.compute.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor_id, "imageRef": s.image(), "networks": "none",
        "availability_zone": "nova:host3"}})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["server"]["id"])


def _holders(cells: cell_records.Cells, server_id: str) -> list[str]:
    found = []
    for members, db in cells.distinct():
        with db.view(None).read() as conn:
            rows = conn.execute(sa.select(t.instances.c.hidden).where(
                t.instances.c.uuid == server_id)).all()
        found += [f"{members[0].name}{' (hidden)' if row.hidden else ''}" for row in rows]
    return found


@pytest.mark.parametrize(("backend", "point"), _cases())
def test_a_carry_cut_off_anywhere_ends_with_the_server_in_its_hosts_cell(
        backend: str, point: str, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(HOSTS_FILE, encoding="utf-8")
    options = f'hosts_file = "{hosts}"\n'
    with _deployment(backend) as (url, cells):
        with running(url, tmp_path, crash_at=f"build:{point}", options=options) as s:
            server_id = _boot_on_host3(s)
            assert s.crashed(), "the carry never reached " + point
        with running(url, tmp_path, options=options) as s:
            view = s.wait_settled(server_id)
            assert view is not None
            assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host3")
            assert s.held(server_id) == {s.node("host3"): SMALL}
            assert _holders(cells, server_id) == ["cell2"]
            assert cells.mapped(server_id).name == "cell2"
            client = PlacementClient.over_http(f"{s.base}/placement")
            try:
                assert audit([db for _, db in cells.distinct()], client) == []
            finally:
                client.close()
