"""A build carried to another cell, killed at each point of the carry, then restarted.

The service runs as a subprocess (tests/functional/crashing.py) with cell1's
hosts host1, host2 and cell2's host3 (a hosts file); a boot asks for host3,
so its server is carried from cell1, where the API wrote it, to cell2. The
process ends at `build:carry:executing` (before the copy), `:switched`
(right after the instance mapping points at cell2) or `:done` (records
purged in cell1, the continuation not cast yet). After a restart without the
hook the server must be ACTIVE on host3, its records in cell2 only, its
mapping on cell2, its claim exactly its flavor, and the audit clean.

A cross-cell resize (host1 in cell1, host2 in cell2) is killed at the
hand-over and at each of cell2's steps, and, once in VERIFY_RESIZE, inside
its confirm and its revert: the server ends in one cell with one guest, no
snapshot image of the move is left, and the audit is clean.
"""

from __future__ import annotations

import contextlib
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
from tests.dbs import migrated_database
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
    with migrated_database(backend) as url, migrated_database(backend) as cell2_url:
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
    # In the target cell, before the swap: undone, the records carried back to cell1.
    ("cross_cell_resize:prep_resize:executing", "ACTIVE", "cell1"),
    ("cross_cell_resize:snapshot_at_source:executing", "ACTIVE", "cell1"),
    ("cross_cell_resize:resize_instance:executing", "ACTIVE", "cell1"),
    ("cross_cell_resize:finish_resize:executing", "ACTIVE", "cell1"),
    ("cross_cell_resize:swap:executing", "VERIFY_RESIZE", "cell2"),  # finished forward
]


def _cell2_options(tmp_path: Path) -> str:
    """Settings naming host2 in cell2 and the policy that lets resizes cross cells."""
    hosts, policy = tmp_path / "hosts.toml", tmp_path / "policy.yaml"
    hosts.write_text(HOST2_IN_CELL2, encoding="utf-8")
    policy.write_text(POLICY, encoding="utf-8")
    return f'hosts_file = "{hosts}"\n[policy]\nfile = "{policy}"\n'


def _sampled_cases(points: list[tuple[str, str, str]], on_servers: str) -> list[Any]:
    """Every point on SQLite; on PostgreSQL and MySQL those whose name starts `on_servers`."""
    return [pytest.param(backend, *case, id=f"{backend}-{case[0]}")
            for backend in BACKENDS for case in points
            if backend == "sqlite" or case[0].startswith(on_servers)]


@pytest.mark.parametrize(("backend", "point", "status", "cell"),
                         _sampled_cases(CROSS_CELL_POINTS, "cross_cell_resize:resize"))
def test_a_cross_cell_resize_cut_off_anywhere_ends_in_one_cell(
        backend: str, point: str, status: str, cell: str, tmp_path: Path) -> None:
    """host1 in cell1 (--sim-hosts 1 names it), host2 in cell2 (the hosts file)."""
    options = _cell2_options(tmp_path)
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
            _assert_settled(s, cells, server_id, host)


def _assert_settled(s: Stowage, cells: cell_records.Cells, server_id: str, host: str) -> None:
    """One guest, on `host`; no snapshot of the move left; the audit clean."""
    assert _guests(cells, server_id) == {(host, ""): 1}
    resp = s.compute.get(f"{s.base}/image/v2/images", params={"name": "vm-cross-cell-resize"})
    assert resp.status_code == 200 and resp.json()["images"] == [], resp.text
    client = PlacementClient.over_http(f"{s.base}/placement")
    try:
        assert audit([db for _, db in cells.distinct()], client) == []
    finally:
        client.close()


def _guests(cells: cell_records.Cells, server_id: str) -> dict[tuple[str, str], int]:
    """(host, migration or "") -> power state, over every cell's hypervisor records."""
    g = t.simulated_guests
    found = {}
    for _, db in cells.distinct():
        with db.view(None).read() as conn:
            found.update(((r.host, r.migration_uuid), r.power_state) for r in conn.execute(
                sa.select(g.c.host, g.c.migration_uuid, g.c.power_state)
                .where(g.c.instance_uuid == server_id)))
    return found


# --- a cross-cell confirm or revert killed ------------------------------------------------
# (where the process ends, the host and cell the server ends in, ACTIVE either way)
END_POINTS = [
    ("confirm_resize:confirm_on_source:executing", "host2", "cell2"),
    ("confirm_resize:forget_source_copy:executing", "host2", "cell2"),
    ("confirm_resize:settle:executing", "host2", "cell2"),
    ("revert_resize:revert_on_destination:executing", "host1", "cell1"),
    ("revert_resize:finish_revert_resize:executing", "host1", "cell1"),
    ("revert_resize:settle:executing", "host1", "cell1"),
]


@pytest.mark.parametrize(("backend", "point", "host", "cell"),
                         _sampled_cases(END_POINTS, "revert_resize:finish_revert"))
def test_a_cross_cell_confirm_or_revert_cut_off_ends_in_one_cell(
        backend: str, point: str, host: str, cell: str, tmp_path: Path) -> None:
    """The resize reached VERIFY_RESIZE in cell2; its confirm (the server stays in cell2,
    cell1's hidden copy goes) or revert (the records go back to cell1) is killed."""
    options = _cell2_options(tmp_path)
    body = {"confirmResize": None} if point.startswith("confirm") else {"revertResize": None}
    with _deployment(backend) as (url, cells):
        with running(url, tmp_path, crash_at=point, options=options, sim_hosts=1) as s:
            small, large = s.flavors()
            resp = s.compute.post("/servers", json={"server": {
                "name": "vm", "flavorRef": small, "imageRef": s.image(),
                "networks": "none", "availability_zone": "nova:host1"}})
            server_id = str(resp.json()["server"]["id"])
            s.wait_status(server_id, "ACTIVE")
            assert s.action(server_id, {"resize": {"flavorRef": large}}).status_code == 202
            s.wait_status(server_id, "VERIFY_RESIZE")
            with contextlib.suppress(Exception):  # the answer may be cut off
                s.action(server_id, body)
            assert s.crashed(), "the end of the resize never reached " + point
        with running(url, tmp_path, options=options, sim_hosts=1) as s:
            view = s.wait_status(server_id, "ACTIVE")
            assert view["OS-EXT-SRV-ATTR:host"] == host
            assert holders(cells, server_id) == [cell]
            assert cells.of_instance(server_id).name == cell
            [mig] = s.migrations(server_id)
            assert mig["status"] == ("confirmed" if cell == "cell2" else "reverted")
            assert s.held(server_id) == {s.node(host): LARGE if cell == "cell2" else SMALL}
            assert s.held(mig["uuid"]) == {}
            _assert_settled(s, cells, server_id, host)
