"""Ends of a resize that no user asks for: the automatic confirm, and a conductor
restart in the middle of a move.

    host1: server (small)        host2: where it was resized to
"""

from __future__ import annotations

import json
import time

import pytest

from stowage.compute import instances, migrations
from stowage.compute.conductor.tasks import Journal
from stowage.compute.migrations import Migration
from stowage.placement.client import Holding
from tests.functional.conftest import Cloud
from tests.functional.servers import (
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    held,
    image,
    migrations_of,
    new_uuid,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)


@pytest.fixture
def booted(cloud: Cloud) -> dict[str, str]:
    nodes = {h: cloud.add_host(h, vcpus=16, memory_mb=8192, disk_gb=100)
             for h in ("host1", "host2")}
    nodes["large"] = flavor(cloud, "large", 2, 1024, 10)
    nodes["server"] = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud))
    return nodes


def test_resize_is_confirmed_after_the_confirm_window(cloud: Cloud,
                                                      booted: dict[str, str]) -> None:
    cloud.configure(resize_confirm_window=1)
    action(cloud, booted["server"], {"resize": {"flavorRef": booted["large"]}})
    mig = migrations_of(cloud, booted["server"])[0]
    cloud.plane.conductor.confirm_expired_resizes()  # not yet due
    assert server(cloud, booted["server"])["status"] == "VERIFY_RESIZE"

    time.sleep(1.2)
    cloud.plane.conductor.confirm_expired_resizes()  # the periodic task may get there first
    deadline = time.monotonic() + 20
    while server(cloud, booted["server"])["status"] != "ACTIVE" and time.monotonic() < deadline:
        time.sleep(0.05)
    settle(cloud)
    assert server(cloud, booted["server"])["status"] == "ACTIVE"
    assert migrations_of(cloud, booted["server"])[0]["status"] == "confirmed"
    assert held(cloud, str(mig["uuid"])) == {}
    listed = cloud.compute.get(f"/servers/{booted['server']}/os-instance-actions").json()
    assert [a["action"] for a in listed["instanceActions"]][:1] == ["confirmResize"]
    assert_invariants(cloud)


def test_a_move_cut_off_by_a_restart_gives_the_source_back(cloud: Cloud,
                                                           booted: dict[str, str]) -> None:
    """The conductor died after handing the source to the migration and claiming host2."""
    server_id = booted["server"]
    migration = Migration(uuid=new_uuid(), instance_uuid=server_id, migration_type="resize",
                          status="migrating", source_compute="host1", source_node="host1",
                          dest_compute="host2", dest_node="host2", project_id="admin",
                          user_id="admin")
    with cloud.live.cell_db.write() as conn:
        migrations.create(conn, migration)
        instances.update(conn, server_id, task_state="resize_migrating")
    placement = cloud.plane.placement
    source = placement.holding(server_id)
    placement.write_many({
        migration.uuid: Holding(source.allocations, None, "admin", "admin", "MIGRATION"),
        server_id: Holding({booted["host2"]: flavor_amounts(2, 1024, 10)}, source.generation,
                           "admin", "admin", "INSTANCE")})
    journal = Journal(cloud.live.cell_db, "resize", server_id)
    journal.record("create_migration", "done", json.dumps({"migration_uuid": migration.uuid}))
    for step in ("claim_destination", "prep_resize"):
        journal.record(step, "done")
    journal.record("resize_instance", "executing")

    cloud.plane.conductor.start()  # what a restarted conductor does first

    assert held(cloud, migration.uuid) == {}
    assert held(cloud, server_id) == {booted["host1"]: SMALL}
    view = server(cloud, server_id)
    assert (view["OS-EXT-SRV-ATTR:host"], view["OS-EXT-STS:task_state"]) == ("host1", None)
    assert migrations_of(cloud, server_id)[0]["status"] == "error"
    assert_invariants(cloud)
    cloud.plane.conductor.start()  # a second restart finds nothing left to do
    assert held(cloud, server_id) == {booted["host1"]: SMALL}
