"""A build killed between its API records and its cell records (compute/unbuilt.py).

    API database   instance_mappings, request_specs, server_group_members
    cell1 database (a database of its own)  instances, ...        host1, host2

The process ends right after POST /servers committed a server's API records
(`build:api_records:done`), before its cell transaction: the server exists
nowhere, its mapping, request spec and group membership do. After a restart
(lease 1 s, so the startup sweep already sees them as old) they are gone,
while those of a server built before the crash stay. SQLite, PostgreSQL and
MySQL: the point is one, and only a separate cell database can leave it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.db import Database, schema
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.crashing import Stowage, running

POINT = "build:api_records:done"


def _api_records(db: Database) -> dict[str, set[str]]:
    """table -> the instance uuids it names."""
    with db.read() as conn:
        return {table.name: {str(u) for u in conn.execute(
                    sa.select(table.c.instance_uuid)).scalars()}
                for table in (t.instance_mappings, t.request_specs, t.server_group_members)}


def _boot(s: Stowage, flavor: str, image: str, group: str) -> str:
    resp = s.compute.post("/servers", json={
        "server": {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none"},
        "os:scheduler_hints": {"group": group}})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["server"]["id"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_build_cut_off_before_its_cell_commit_leaves_no_api_records(
        backend: str, tmp_path: Path) -> None:
    with migrated_database(backend) as url, migrated_database(backend) as cell1_url:
        db = Database(url)
        schema.upgrade(db)
        options = f'cell1_database = "{cell1_url}"\nconductor_lease_seconds = 1\n'
        try:
            with running(url, tmp_path, crash_at=POINT, options=options) as s:
                flavor, _ = s.flavors()
                image = s.image()
                resp = s.compute.post("/os-server-groups", json={
                    "server_group": {"name": "g", "policy": "soft-anti-affinity"}})
                assert resp.status_code == 200, resp.text
                group = str(resp.json()["server_group"]["id"])
                with pytest.raises(Exception):  # noqa: B017, PT011 - the answer is cut off
                    _boot(s, flavor, image, group)
                assert s.crashed(), "the build never reached " + POINT
            [lost] = _api_records(db)["instance_mappings"]
            assert _api_records(db) == {name: {lost} for name in _api_records(db)}

            with running(url, tmp_path, options=options) as s:
                kept = _boot(s, flavor, image, group)
                s.wait_status(kept, "ACTIVE")
                for _ in range(120):  # the startup sweep, or the periodic one
                    if lost not in _api_records(db)["instance_mappings"]:
                        break
                    time.sleep(0.5)
                assert _api_records(db) == {name: {kept} for name in _api_records(db)}
                members = s.compute.get(f"/os-server-groups/{group}").json()
                assert members["server_group"]["members"] == [kept]
        finally:
            db.dispose()
