"""GET /os-migrations and /servers/{id}/migrations: filters, paging and views per microversion.

Migration rows are written straight into the database, as the conductor
would write them, so that every status and type can be shown::

    resize     vm1  host1 -> host2  finished        (project p1)
    migration  vm1  host2 -> host3  confirmed       (project p1)
    live       vm2  host1 -> host3  running         (project p2)
    resize     vm2  host3 -> host3  error, hidden   (project p2)
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute import tables as t
from stowage.timeutil import utcnow
from tests.functional.conftest import MEMBER, Cloud


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


def _instance(cloud: Cloud, project: str) -> str:
    with cloud.live.cell_db.write() as conn:
        made = inst.create(conn, inst.Instance(
            uuid=str(uuidlib.uuid4()), project_id=project, user_id="u-" + project,
            display_name="vm", flavor={"id": 1, "flavorid": "1", "name": "small"},
            vm_state="active", host="host1", launched_at=utcnow()))
    return made.uuid


def _migration(cloud: Cloud, instance_uuid: str, kind: str, status: str, source: str,
               dest: str, project: str, hidden: bool = False) -> migs.Migration:
    with cloud.live.cell_db.write() as conn:
        return migs.create(conn, migs.Migration(
            uuid=str(uuidlib.uuid4()), instance_uuid=instance_uuid, migration_type=kind,
            status=status, source_compute=source, source_node=source, dest_compute=dest,
            dest_node=dest, dest_host="192.0.2.1", old_flavor_id=1, new_flavor_id=2,
            project_id=project, user_id="u-" + project, hidden=hidden))


@pytest.fixture
def moves(cloud: Cloud) -> dict[str, Any]:
    vm1, vm2 = _instance(cloud, "p1"), _instance(cloud, "p2")
    made = {
        "resize": _migration(cloud, vm1, "resize", "finished", "host1", "host2", "p1"),
        "cold": _migration(cloud, vm1, "migration", "confirmed", "host2", "host3", "p1"),
        "live": _migration(cloud, vm2, "live-migration", "running", "host1", "host3", "p2"),
        "hidden": _migration(cloud, vm2, "resize", "error", "host3", "host3", "p2",
                             hidden=True),
    }
    return {"vm1": vm1, "vm2": vm2, **made}


def uuids(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    return [m["uuid"] for m in resp.json()["migrations"]]


def test_newest_first_without_hidden(cloud: Cloud, moves: dict[str, Any]) -> None:
    assert uuids(cloud.compute.get("/os-migrations")) == [
        moves["live"].uuid, moves["cold"].uuid, moves["resize"].uuid]


@pytest.mark.parametrize(("params", "expected"), [
    ({"host": "host2"}, ["cold", "resize"]),
    ({"source_compute": "host1"}, ["live", "resize"]),
    ({"status": "running"}, ["live"]),
    ({"migration_type": "migration"}, ["cold"]),
    ({"project_id": "p2"}, ["live"]),
    ({"user_id": "u-p1", "status": "finished"}, ["resize"]),
])
def test_filters(cloud: Cloud, moves: dict[str, Any], params: dict[str, str],
                 expected: list[str]) -> None:
    assert uuids(cloud.compute.get("/os-migrations", params=params)) == [
        moves[name].uuid for name in expected]


def test_instance_filter(cloud: Cloud, moves: dict[str, Any]) -> None:
    found = uuids(cloud.compute.get("/os-migrations", params={"instance_uuid": moves["vm2"]}))
    assert found == [moves["live"].uuid]


def test_views_per_microversion(cloud: Cloud, moves: dict[str, Any]) -> None:
    base = {"id", "status", "instance_uuid", "source_compute", "source_node", "dest_compute",
            "dest_node", "dest_host", "old_instance_type_id", "new_instance_type_id",
            "created_at", "updated_at"}
    old = cloud.compute.get("/os-migrations", headers=at("2.22")).json()["migrations"]
    assert all(set(m) == base for m in old)
    v223 = cloud.compute.get("/os-migrations", headers=at("2.23")).json()["migrations"]
    live = next(m for m in v223 if m["migration_type"] == "live-migration")
    assert set(live) == base | {"migration_type", "links"}
    assert live["links"][0]["href"].endswith(
        f"/servers/{moves['vm2']}/migrations/{moves['live'].id}")
    assert all("links" not in m for m in v223 if m is not live)
    v259 = cloud.compute.get("/os-migrations", headers=at("2.59")).json()["migrations"]
    assert all("uuid" in m and "user_id" not in m for m in v259)
    v280 = cloud.compute.get("/os-migrations", headers=at("2.80")).json()["migrations"]
    resize = next(m for m in v280 if m["uuid"] == moves["resize"].uuid)
    assert (resize["user_id"], resize["project_id"]) == ("u-p1", "p1")
    assert (resize["old_instance_type_id"], resize["new_instance_type_id"]) == (1, 2)
    # Microseconds as the backend keeps them (MySQL keeps none).
    assert resize["created_at"][:19] == moves["resize"].created_at.strftime("%Y-%m-%dT%H:%M:%S")
    assert len(resize["created_at"]) == len("2024-01-01T00:00:00.000000")


def test_paging_from_2_59(cloud: Cloud, moves: dict[str, Any]) -> None:
    page = cloud.compute.get("/os-migrations", params={"limit": 2}).json()
    assert [m["uuid"] for m in page["migrations"]] == [moves["live"].uuid, moves["cold"].uuid]
    assert f"marker={moves['cold'].uuid}" in page["migrations_links"][0]["href"]
    rest = cloud.compute.get(page["migrations_links"][0]["href"]).json()
    assert [m["uuid"] for m in rest["migrations"]] == [moves["resize"].uuid]
    assert "migrations_links" not in rest
    bad = cloud.compute.get("/os-migrations", params={"marker": "nope"})
    assert bad.status_code == 400
    assert bad.json()["badRequest"]["message"] == "Marker nope could not be found."
    assert cloud.compute.get("/os-migrations", params={"bogus": 1}).status_code == 400
    assert cloud.compute.get("/os-migrations", params={"bogus": 1},
                             headers=at("2.58")).status_code == 200
    assert cloud.compute.get("/os-migrations", params={"user_id": "x"},
                             headers=at("2.79")).status_code == 400


def test_changes_since_and_before(cloud: Cloud, moves: dict[str, Any]) -> None:
    past = (utcnow() - datetime.timedelta(hours=1)).isoformat()
    future = (utcnow() + datetime.timedelta(hours=1)).isoformat()
    assert len(uuids(cloud.compute.get("/os-migrations", params={"changes-since": past}))) == 3
    assert uuids(cloud.compute.get("/os-migrations", params={"changes-since": future})) == []
    assert uuids(cloud.compute.get("/os-migrations",
                                   params={"changes-before": past})) == []
    resp = cloud.compute.get("/os-migrations",
                             params={"changes-since": future, "changes-before": past})
    assert resp.status_code == 400
    assert cloud.compute.get("/os-migrations", params={"changes-before": past},
                             headers=at("2.65")).status_code == 400


def test_only_admins_list_migrations(cloud: Cloud, moves: dict[str, Any]) -> None:
    resp = cloud.client("u-p1:p1", roles=MEMBER).get("/os-migrations")
    assert resp.status_code == 403
    assert "os-migrations:index" in resp.json()["forbidden"]["message"]


def test_server_migrations_show_in_progress_live_ones(cloud: Cloud,
                                                      moves: dict[str, Any]) -> None:
    listed = cloud.compute.get(f"/servers/{moves['vm2']}/migrations").json()["migrations"]
    assert [m["uuid"] for m in listed] == [moves["live"].uuid]
    assert listed[0]["server_uuid"] == moves["vm2"]
    assert listed[0]["memory_total_bytes"] is None and listed[0]["project_id"] == "p2"
    assert cloud.compute.get(f"/servers/{moves['vm1']}/migrations").json() == {
        "migrations": []}
    shown = cloud.compute.get(f"/servers/{moves['vm2']}/migrations/{moves['live'].id}")
    assert shown.json()["migration"]["uuid"] == moves["live"].uuid
    cold = cloud.compute.get(f"/servers/{moves['vm1']}/migrations/{moves['cold'].id}")
    assert cold.status_code == 404
    assert "is not live-migration" in cold.json()["itemNotFound"]["message"]
    assert cloud.compute.get(f"/servers/{moves['vm2']}/migrations",
                             headers=at("2.22")).status_code == 404
    v258 = cloud.compute.get(f"/servers/{moves['vm2']}/migrations",
                             headers=at("2.58")).json()["migrations"][0]
    assert "uuid" not in v258 and "user_id" not in v258
    owner = cloud.client("u-p2:p2", roles=MEMBER).get(f"/servers/{moves['vm2']}/migrations")
    assert owner.status_code == 403


def _soft_delete(cloud: Cloud, mig: migs.Migration) -> None:
    """As Nova's instance_destroy (and stowage's instances.soft_delete) leaves it."""
    m = t.migrations
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(m).where(m.c.uuid == mig.uuid).values(deleted=m.c.id))


def test_soft_deleted_migrations_are_not_listed(cloud: Cloud, moves: dict[str, Any]) -> None:
    """Nova reads migrations with read_deleted="no": a deleted server's are gone from view."""
    with cloud.live.cell_db.write() as conn:
        inst.soft_delete(conn, moves["vm1"])
    assert uuids(cloud.compute.get("/os-migrations")) == [moves["live"].uuid]
    assert uuids(cloud.compute.get("/os-migrations",
                                   params={"instance_uuid": moves["vm1"]})) == []
    assert uuids(cloud.compute.get("/os-migrations", params={"host": "host2"})) == []
    resp = cloud.compute.get("/os-migrations", params={"marker": moves["cold"].uuid})
    assert resp.status_code == 400
    assert resp.json()["badRequest"]["message"] == (
        f"Marker {moves['cold'].uuid} could not be found.")


def test_a_soft_deleted_live_migration_is_not_found_on_its_server(
        cloud: Cloud, moves: dict[str, Any]) -> None:
    live = moves["live"]
    _soft_delete(cloud, live)
    listed = cloud.compute.get(f"/servers/{moves['vm2']}/migrations")
    assert listed.status_code == 200 and listed.json() == {"migrations": []}
    shown = cloud.compute.get(f"/servers/{moves['vm2']}/migrations/{live.id}")
    assert shown.status_code == 404
    assert shown.json()["itemNotFound"]["message"] == (
        f"In-progress live migration {live.id} is not found for server {moves['vm2']}.")
    assert uuids(cloud.compute.get("/os-migrations")) == [moves["cold"].uuid,
                                                           moves["resize"].uuid]
