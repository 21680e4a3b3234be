"""Several cells: cell1 and cell2 with hosts each, cell0 for servers no host takes.

cell1 and cell2 each have a throw-away database of their own on the test's
backend (cell0 is where the deployment default puts it). A build is written
into cell1, scheduled over both cells' hosts and carried to the chosen
host's cell; a build no host takes goes to cell0; listings merge the cells;
moves stay in the server's cell.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import cell_copy
from stowage.compute import cells as cell_records
from stowage.compute import tables as t
from stowage.db import Database
from tests.conftest import BACKENDS
from tests.functional.conftest import Cloud, LiveServer
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    count_rows,
    flavor,
    flavor_amounts,
    flavor_id,
    guests,
    held,
    image,
    server,
    settle,
)
from tests.functional.two_cells import boot_on, cells_of, holders, serving_two_cells

SMALL = flavor_amounts(1, 512, 5)


@pytest.fixture(scope="module", params=BACKENDS)
def live_stowage(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with serving_two_cells(request.param) as live:
        yield live


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    """host1 in cell1; host2 and host3 in cell2."""
    nodes = {"host1": cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=50),
             "host2": cloud.add_host("host2", vcpus=8, memory_mb=4096, disk_gb=50,
                                     cell="cell2"),
             "host3": cloud.add_host("host3", vcpus=8, memory_mb=4096, disk_gb=50,
                                     cell="cell2")}
    flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "huge", 1, 8192, 5)  # more memory than any host has
    return nodes


def _where(cloud: Cloud, server_id: str) -> str:
    """The only cell holding the server (shown), which its mapping names."""
    [holder] = holders(cells_of(cloud), server_id)
    assert cells_of(cloud).of_instance(server_id).name == holder
    return holder


def test_a_build_is_carried_to_its_hosts_cell(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = boot_on(cloud, "host2")
    assert _where(cloud, server_id) == "cell2"
    assert cells_of(cloud).of_instance(server_id).name == "cell2"
    view = server(cloud, server_id)
    assert view["OS-EXT-SRV-ATTR:host"] == "host2"
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    # Its action and events came along; the build's journal ended in both cells.
    events = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    assert [a["action"] for a in events["instanceActions"]] == ["create"]
    for _, db in cells_of(cloud).distinct():
        with db.read() as conn:
            assert conn.execute(sa.text(
                "SELECT count(*) FROM operation_steps s WHERE NOT EXISTS (SELECT 1 FROM "
                "operation_steps e WHERE e.operation_uuid = s.operation_uuid AND "
                "e.step = 'end')")).scalar_one() == 0
    assert_invariants(cloud)
    # Actions and delete reach it in cell2.
    action(cloud, server_id, {"os-stop": None})
    assert server(cloud, server_id)["status"] == "SHUTOFF"
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert held(cloud, server_id) == {}
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert_invariants(cloud)


def test_a_build_no_host_takes_goes_to_cell0(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = boot(cloud, "big", flavor_id(cloud, "huge"), image(cloud))
    view = server(cloud, server_id)
    assert view["status"] == "ERROR"
    assert "No valid host" in view["fault"]["message"]
    assert cells_of(cloud).of_instance(server_id).name == "cell0"
    cell0 = cells_of(cloud).cell0()
    assert cell0 is not None
    cell0_db = cells_of(cloud).database(cell0)
    assert count_rows(cell0_db, t.instances, uuid=server_id) == 1
    assert count_rows(cells_of(cloud).database(cells_of(cloud).default()), t.instances,
                  uuid=server_id) == (1 if cell0_db.engine is cloud.live.cell_db.engine
                                      else 0)
    assert held(cloud, server_id) == {}
    listed = cloud.compute.get("/servers").json()["servers"]
    assert [s["id"] for s in listed] == [server_id]
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert_invariants(cloud)


def test_listing_merges_the_cells_and_pages_across_them(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    made = [boot_on(cloud, host, f"vm{i}")
            for i, host in enumerate(("host1", "host2", "host1", "host3", "host2"))]
    assert {_where(cloud, uuid) for uuid in made} == {"cell1", "cell2"}
    detail = cloud.compute.get("/servers/detail").json()["servers"]
    listed = [s["id"] for s in detail]
    assert sorted(listed) == sorted(made)
    # Newest first, whatever cell (MySQL keeps whole seconds: ties are broken by id, uuid).
    created = [s["created"] for s in detail]
    assert created == sorted(created, reverse=True)
    by_name = cloud.compute.get("/servers/detail", params={"sort_key": "display_name",
                                                           "sort_dir": "asc"}).json()
    assert [s["name"] for s in by_name["servers"]] == [f"vm{i}" for i in range(5)]
    assert {s["OS-EXT-SRV-ATTR:host"] for s in by_name["servers"]} == {
        "host1", "host2", "host3"}
    paged: list[str] = []
    marker: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"marker": marker} if marker else {})}
        page = [s["id"] for s in cloud.compute.get("/servers", params=params).json()[
            "servers"]]
        if not page:
            break
        paged += page
        marker = page[-1]
    assert paged == listed
    assert cloud.compute.get("/servers", params={"marker": "nope"}).status_code == 400
    services = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    assert sorted(s["host"] for s in services["services"]) == ["host1", "host2", "host3"]


def test_moves_stay_in_the_servers_cell(cloud: Cloud, hosts: dict[str, str]) -> None:
    server_id = boot_on(cloud, "host2")
    # host1 (cell1) is as free as host3; a cold migration keeps to cell2.
    for expected in ("host3", "host2"):
        action(cloud, server_id, {"migrate": None})
        assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
        action(cloud, server_id, {"confirmResize": None}, status=204)
        view = server(cloud, server_id)
        assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", expected)
        assert held(cloud, server_id) == {hosts[expected]: SMALL}
    assert _where(cloud, server_id) == "cell2"
    # With cell2 full for it (host3 disabled), a migration finds no host rather than
    # leaving the cell.
    [host3] = cloud.compute.get("/os-services", params={"host": "host3"}).json()["services"]
    resp = cloud.compute.put(f"/os-services/{host3['id']}", json={"status": "disabled"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["service"]["status"] == "disabled"
    action(cloud, server_id, {"migrate": None})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert held(cloud, server_id) == {hosts["host2"]: SMALL}
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    assert actions["instanceActions"][0]["action"] == "migrate"
    assert actions["instanceActions"][0]["message"] == "Error"
    assert_invariants(cloud)


def _down(cloud: Cloud, name: str) -> tuple[cell_records.CellMapping, str]:
    """Point `name`'s mapping at a database that cannot be opened; returns the cell and
    its real URL (for `_up`)."""
    cells = cells_of(cloud)
    cell = cells.by_name(name)
    with cells.api.write() as conn:
        conn.execute(t.cell_mappings.update().where(t.cell_mappings.c.id == cell.id).values(
            database_connection="sqlite:////nonexistent-stowage-dir/down.db"))
    cells.reload()
    return cell, cell.database_connection


def _up(cloud: Cloud, cell: cell_records.CellMapping, url: str) -> None:
    cells = cells_of(cloud)
    with cells.api.write() as conn:
        conn.execute(t.cell_mappings.update().where(t.cell_mappings.c.id == cell.id)
                     .values(database_connection=url))
    cells.reload()


def test_a_down_cell_is_answered_from_the_api_database(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    up_id = boot_on(cloud, "host1", "up")
    down_id = boot_on(cloud, "host2", "down")
    gone_id = boot_on(cloud, "host3", "gone")
    assert cloud.compute.delete(f"/servers/{gone_id}").status_code == 204
    settle(cloud)
    cell, url = _down(cloud, "cell2")
    try:
        old = cloud.client("admin", "2.68")
        new = cloud.client("admin", "2.69")
        # Below 2.69 the cell is left out; from it its live servers are minimal records,
        # first; a listing with a filter, sort key, limit or marker leaves them out.
        assert [s["id"] for s in old.get("/servers").json()["servers"]] == [up_id]
        listed = new.get("/servers").json()["servers"]
        assert [(s["id"], s.get("status")) for s in listed] == [(down_id, "UNKNOWN"),
                                                                 (up_id, None)]
        detail = new.get("/servers/detail").json()["servers"]
        assert set(detail[0]) == {"id", "status", "tenant_id", "created", "links"}
        assert (detail[0]["id"], detail[1]["id"]) == (down_id, up_id)
        assert [s["id"] for s in new.get("/servers", params={"limit": 5}).json()[
            "servers"]] == [up_id]
        # Show: from the mapping and the request spec; below 2.69 a 500, as Nova.
        shown = new.get(f"/servers/{down_id}").json()["server"]
        assert shown["status"] == "UNKNOWN" and shown["OS-EXT-STS:power_state"] == 0
        assert shown["flavor"]["vcpus"] == 1 and shown["user_id"]
        assert old.get(f"/servers/{down_id}").status_code == 500
        assert new.get(f"/servers/{gone_id}").status_code == 404
        assert new.get(f"/servers/{up_id}").json()["server"]["status"] == "ACTIVE"
        # Services: the down cell's hosts as the API maps them.
        services = new.get("/os-services", params={"binary": "nova-compute"}).json()
        assert sorted((s["host"], s["status"]) for s in services["services"]) == [
            ("host1", "enabled"), ("host2", "UNKNOWN"), ("host3", "UNKNOWN")]
        assert sorted(s["host"] for s in old.get("/os-services").json()["services"]
                      if s["binary"] == "nova-compute") == ["host1"]
    finally:
        _up(cloud, cell, url)
    assert server(cloud, down_id)["status"] == "ACTIVE"
    assert_invariants(cloud)


def test_a_delete_during_the_carry_is_not_lost(
        cloud: Cloud, hosts: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The DELETE finds the server in cell1 (mapping not switched yet) while its records
    are being copied to cell2: cell2 deletes it instead of building it."""
    deleted: list[int] = []
    original = cell_copy.copy_server

    def copy_then_delete(source: Database, target: Database, uuid: str,
                         hidden: bool = True) -> Any:
        found = original(source, target, uuid, hidden)
        deleted.append(cloud.compute.delete(f"/servers/{uuid}").status_code)
        return found
    monkeypatch.setattr(cell_copy, "copy_server", copy_then_delete)
    resp = cloud.compute.post("/servers", json={"server": {
        "name": "vm", "flavorRef": flavor_id(cloud, "small"), "imageRef": image(cloud),
        "networks": "none", "availability_zone": "nova:host2"}})
    assert resp.status_code == 202, resp.text
    server_id = resp.json()["server"]["id"]
    settle(cloud)
    assert deleted == [204]
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == {}
    assert guests(cloud, server_id) == {}
    assert_invariants(cloud)
