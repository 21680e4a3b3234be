"""Cells: the API database and cell1's database apart, as a cells deployment keeps them.

Every other module runs with cell1 in the API database itself (one database,
both roles checked statement by statement, db/roles.py). Here cell1 has a
database of its own -- a second throw-away database on the same backend --
and the main flows run across the two: records land on their side and no
other, moves keep exact allocations, deletes leave nothing on either side.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stowage.compute import cell_copy, quota_usage
from stowage.compute import tables as t
from stowage.compute.api import server_queries as queries
from stowage.compute.cells import CELL1, SAME_DATABASE
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.db.engine import CELL
from tests.conftest import BACKENDS
from tests.dbs import migrated_database
from tests.functional.conftest import Cloud, LiveServer, serving
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    count_rows,
    flavor,
    flavor_amounts,
    flavor_id,
    held,
    image,
    migrations_of,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)


@pytest.fixture(scope="module", params=BACKENDS)
def live_stowage(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """This module's server (the conftest's `cloud` runs on it): cell1 in a database of
    its own, a second throw-away one on the same backend."""
    with migrated_database(request.param) as cell_url, \
            serving(request.param, compute=ComputeSettings(cell1_database=cell_url)) as live:
        yield live


@pytest.fixture
def two_hosts(cloud: Cloud) -> dict[str, str]:
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in ("host1", "host2")}
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    return nodes


def _boot(cloud: Cloud) -> str:
    server_id = boot(cloud, "vm", flavor_id(cloud, "small"), image(cloud))
    assert server(cloud, server_id)["status"] == "ACTIVE"
    return server_id


def test_cell1_has_a_database_of_its_own(cloud: Cloud) -> None:
    cell = cloud.live.cells.default()  # type: ignore[union-attr]
    assert cell.name == CELL1 and cell.database_connection != SAME_DATABASE
    assert cloud.live.cell_db.engine.url != cloud.live.db.engine.url


def test_a_server_lives_in_its_cell_and_is_mapped_in_the_api_database(
        cloud: Cloud, two_hosts: dict[str, str]) -> None:
    server_id = _boot(cloud)
    api, cell = cloud.live.db, cloud.live.cell_db
    # The cell side: the server, its action, its host's service and node, the journal.
    assert count_rows(cell, t.instances, uuid=server_id) == 1
    assert count_rows(cell, t.instance_actions, instance_uuid=server_id) == 1
    assert count_rows(cell, t.services, host="host1", binary="nova-compute") == 1
    assert count_rows(cell, t.operation_steps, instance_uuid=server_id) > 0
    # The API side: its request spec and mapping, the hosts' mappings; no cell records.
    assert count_rows(api, t.request_specs, instance_uuid=server_id) == 1
    assert count_rows(api, t.instance_mappings, instance_uuid=server_id) == 1
    assert count_rows(api, t.host_mappings) == 2
    for table in (t.instances, t.services, t.compute_nodes, t.operation_steps,
                  t.instance_actions):
        assert count_rows(api, table) == 0, table.name
    for table in (t.request_specs, t.instance_mappings, t.host_mappings, t.flavors):
        assert count_rows(cell, table) == 0, table.name
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    assert [s["id"] for s in cloud.compute.get("/servers").json()["servers"]] == [server_id]
    assert_invariants(cloud)


def test_resize_confirm_and_revert_across_the_two_databases(
        cloud: Cloud, two_hosts: dict[str, str]) -> None:
    first, second = _boot(cloud), _boot(cloud)
    for server_id in (first, second):
        action(cloud, server_id, {"resize": {"flavorRef": flavor_id(cloud, "large")}})
        assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
        [mig] = migrations_of(cloud, server_id)
        assert held(cloud, str(mig["uuid"])) == {two_hosts[mig["source_compute"]]: SMALL}
        assert held(cloud, server_id) == {two_hosts[mig["dest_compute"]]: LARGE}
    action(cloud, first, {"confirmResize": None}, status=204)
    action(cloud, second, {"revertResize": None})
    settle(cloud)
    assert server(cloud, first)["flavor"]["original_name"] == "large"
    assert server(cloud, second)["flavor"]["original_name"] == "small"
    assert [m["status"] for m in migrations_of(cloud, first)] == ["confirmed"]
    assert [m["status"] for m in migrations_of(cloud, second)] == ["reverted"]
    assert count_rows(cloud.live.db, t.migrations) == 0
    assert_invariants(cloud)


def test_group_policy_and_zones_read_from_both_sides(
        cloud: Cloud, two_hosts: dict[str, str]) -> None:
    """Anti-affinity: members (API database) on hosts (cell database); a zone made by an
    aggregate (API database) shows on the services and servers (cell database)."""
    group = cloud.compute.post("/os-server-groups", json={"server_group": {
        "name": "g", "policy": "anti-affinity"}}).json()["server_group"]["id"]
    ids = [boot(cloud, f"vm{i}", flavor_id(cloud, "small"), image(cloud),
                hints={"group": group}) for i in range(2)]
    hosts = {server(cloud, i)["OS-EXT-SRV-ATTR:host"] for i in ids}
    assert hosts == {"host1", "host2"}
    members = cloud.compute.get(f"/os-server-groups/{group}").json()["server_group"]
    assert sorted(members["members"]) == sorted(ids)
    agg = cloud.compute.post("/os-aggregates", json={"aggregate": {
        "name": "rack", "availability_zone": "az1"}}).json()["aggregate"]["id"]
    assert cloud.compute.post(f"/os-aggregates/{agg}/action",
                              json={"add_host": {"host": "host1"}}).status_code == 200
    zones = {s["host"]: s["zone"] for s in cloud.compute.get("/os-services").json()["services"]
             if s["binary"] == "nova-compute"}
    assert zones == {"host1": "az1", "host2": "nova"}
    on_host1 = next(i for i in ids if server(cloud, i)["OS-EXT-SRV-ATTR:host"] == "host1")
    assert server(cloud, on_host1)["OS-EXT-AZ:availability_zone"] == "az1"
    assert_invariants(cloud)


def test_delete_leaves_nothing_claimed_and_the_records_in_place(
        cloud: Cloud, two_hosts: dict[str, str]) -> None:
    server_id = _boot(cloud)
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == {}
    # As Nova until an archive: the mapping and request spec stay with the soft-deleted
    # record (whose instance actions are still shown).
    assert count_rows(cloud.live.db, t.instance_mappings, instance_uuid=server_id) == 1
    assert count_rows(cloud.live.cell_db, t.instances, uuid=server_id) == 1
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions")
    assert actions.status_code == 200
    assert_invariants(cloud)


# --- a server's records carried to another cell's database (cell_copy.py) ---------------
@pytest.fixture
def cell2(live_stowage: LiveServer) -> Iterator[Database]:
    """A second cell's database on the same backend (not mapped: the copy is the test)."""
    with migrated_database(live_stowage.db.backend) as url:
        database = Database(url)
        schema.upgrade(database)
        try:
            yield database.view(CELL)
        finally:
            database.dispose()


def _rows(db: Database, table: sa.Table, column: str, value: str) -> list[dict[str, object]]:
    with db.view(None).read() as conn:
        return [{k: v for k, v in row._mapping.items() if k not in ("id", "action_id")}
                for row in conn.execute(sa.select(table).where(table.c[column] == value)
                                        .order_by(*table.primary_key.columns))]


def test_a_servers_records_are_copied_hidden_and_purged(
        cloud: Cloud, two_hosts: dict[str, str], cell2: Database) -> None:
    server_id = _boot(cloud)
    assert cloud.compute.put(f"/servers/{server_id}/tags/blue").status_code == 201
    action(cloud, server_id, {"resize": {"flavorRef": flavor_id(cloud, "large")}})
    action(cloud, server_id, {"confirmResize": None}, status=204)
    source = cloud.live.cell_db
    copied = cell_copy.copy_server(source, cell2, server_id)
    assert len(copied[t.instance_actions.name]) == 3  # create, resize, confirmResize
    for table, column in ((t.instance_faults, "instance_uuid"), (t.tags, "resource_id"),
                          (t.migrations, "instance_uuid"), (t.instance_ports, "instance_uuid"),
                          (t.instance_actions, "instance_uuid")):
        expected = _rows(source, table, column, server_id)
        if table is t.migrations:  # a server's migrations hide and show with it
            expected = [{**row, "hidden": True} for row in expected]
        assert _rows(cell2, table, column, server_id) == expected, table.name
    [original] = _rows(source, t.instances, "uuid", server_id)
    [copy] = _rows(cell2, t.instances, "uuid", server_id)
    # The copy's updated_at says when it was made (cell_copy.hidden_before).
    assert copy.pop("updated_at") >= original.pop("updated_at")
    assert copy == {**original, "hidden": True}
    # Each event hangs off the copy of its own action.
    events = sa.select(t.instance_actions.c.action, t.instance_action_events.c.event).join(
        t.instance_action_events,
        t.instance_action_events.c.action_id == t.instance_actions.c.id).order_by(
        t.instance_action_events.c.event)
    with source.view(None).read() as a, cell2.view(None).read() as b:
        assert [tuple(r) for r in a.execute(events)] == [tuple(r) for r in b.execute(events)]
    # Hidden: not listed, not counted; shown again once the flag is swapped.
    with cell2.read() as conn:
        assert queries.list_servers(conn, queries.ServerQuery(deleted=False)) == []
        assert quota_usage.instances(conn, "admin") == 0
    cell_copy.set_hidden(cell2, server_id, False)
    with cell2.read() as conn:
        assert [i.uuid for i in queries.list_servers(conn, queries.ServerQuery(
            deleted=False))] == [server_id]
        assert quota_usage.instances(conn, "admin") == 1
    # Again (an interrupted attempt re-run): one copy, hidden again; then purged, twice.
    cell_copy.copy_server(source, cell2, server_id)
    assert [r["hidden"] for r in _rows(cell2, t.instances, "uuid", server_id)] == [True]
    for _ in range(2):
        cell_copy.purge_server(cell2, server_id)
    for table, column in ((t.instances, "uuid"), (t.instance_actions, "instance_uuid"),
                          (t.tags, "resource_id"), (t.migrations, "instance_uuid")):
        assert _rows(cell2, table, column, server_id) == [], table.name
    assert count_rows(cell2, t.instance_action_events) == 0
    # The source is untouched, and a copy within one database is refused.
    assert server(cloud, server_id)["status"] == "ACTIVE"
    with pytest.raises(ValueError, match="one database"):
        cell_copy.copy_server(source, source, server_id)
    assert_invariants(cloud)
