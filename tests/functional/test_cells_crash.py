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

from stowage.compute import cells as cell_records
from stowage.compute.audit import audit
from stowage.compute.conductor import carry
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.placement.client import PlacementClient
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database
from tests.functional.crashing import LARGE, SMALL, Stowage, running
from tests.functional.two_cells import holders

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
            assert holders(cells, server_id) == ["cell2"]
            assert cells.of_instance(server_id).name == "cell2"
            client = PlacementClient.over_http(f"{s.base}/placement")
            try:
                assert audit([db for _, db in cells.distinct()], client) == []
            finally:
                client.close()


# --- a cross-cell resize killed in each cell ------------------------------------------
POLICY = 'compute:servers:resize:cross_cell: "rule:context_is_admin"\n'
HOST2_IN_CELL2 = '''
[[hosts]]
name = "host2"
cell = "cell2"
'''
# (where the process ends, what the user sees after the restart, the cell holding it)
CROSS_CELL_POINTS = [
    ("resize:hand_over:executing", "ACTIVE", "cell1"),  # undone from the source cell
    ("cross_cell_resize:resize_instance:executing", "ACTIVE", "cell1"),  # undone, back
    ("cross_cell_resize:swap:executing", "VERIFY_RESIZE", "cell2"),  # finished forward
]


def _cross_cell_cases() -> list[Any]:
    return [pytest.param(backend, point, status, cell, id=f"{backend}-{point}")
            for backend in BACKENDS for point, status, cell in CROSS_CELL_POINTS
            if backend == "sqlite" or point.startswith("cross_cell_resize:resize")]


@pytest.mark.parametrize(("backend", "point", "status", "cell"), _cross_cell_cases())
def test_a_cross_cell_resize_cut_off_anywhere_ends_in_one_cell(
        backend: str, point: str, status: str, cell: str, tmp_path: Path) -> None:
    """host1 in cell1 (--sim-hosts 1 names it), host2 in cell2 (the hosts file)."""
    hosts, policy = tmp_path / "hosts.toml", tmp_path / "policy.yaml"
    hosts.write_text(HOST2_IN_CELL2, encoding="utf-8")
    policy.write_text(POLICY, encoding="utf-8")
    options = f'hosts_file = "{hosts}"\n[policy]\nfile = "{policy}"\n'
    with _deployment(backend) as (url, cells):
        with running(url, tmp_path, crash_at=point, options=options, sim_hosts=1) as s:
            small, large = s.flavors()
            resp = s.compute.post("/servers", json={"server": {
                "name": "vm", "flavorRef": small, "imageRef": s.image(),
                "networks": "none", "availability_zone": "nova:host1"}})
            server_id = str(resp.json()["server"]["id"])
            s.wait_status(server_id, "ACTIVE")
            assert s.action(server_id, {"resize": {"flavorRef": large}}).status_code == 202
            assert s.crashed(), "the resize never reached " + point
        with running(url, tmp_path, options=options, sim_hosts=1) as s:
            view = s.wait_status(server_id, status)
            host = "host1" if cell == "cell1" else "host2"
            assert view["OS-EXT-SRV-ATTR:host"] == host
            assert holders(cells, server_id) == ([cell] if cell == "cell1"
                                                 else ["cell1 (hidden)", "cell2"])
            assert cells.of_instance(server_id).name == cell
            [mig] = s.migrations(server_id)
            assert mig["status"] == ("error" if cell == "cell1" else "finished")
            if cell == "cell2":
                assert s.action(server_id, {"confirmResize": None}).status_code == 204
                s.wait_status(server_id, "ACTIVE")
                assert holders(cells, server_id) == ["cell2"]
            amounts = SMALL if cell == "cell1" else LARGE
            assert s.held(server_id) == {s.node(host): amounts}
            assert s.held(mig["uuid"]) == {}
            client = PlacementClient.over_http(f"{s.base}/placement")
            try:
                assert audit([db for _, db in cells.distinct()], client) == []
            finally:
                client.close()
