"""An injected failure at every step of a live migration: where the server ends, who holds what.

    host1: server (small)          host2: the destination (and its faults)

Before the guest reached the destination, every failure puts the server
back ACTIVE on host1 holding its allocation there, the migration `error`
holding nothing, and no guest on host2 (Nova's `_rollback_live_migration`).
After it (the post steps), the server stays on host2 in ERROR, holding its
allocation there, and the migration holds nothing.
"""

from __future__ import annotations

import pytest

from tests.functional.conftest import Cloud
from tests.functional.live import SMALL, events, guests, live_migrate, three_hosts
from tests.functional.servers import (
    EMPTY,
    assert_invariants,
    boot,
    flavor,
    held,
    image,
    migrations_of,
    server,
    usages,
)


@pytest.fixture
def moving(cloud: Cloud) -> dict[str, str]:
    return three_hosts(cloud, ("host1", "host2"))


# (agent, driver step that fails, the event that records it in Error)
BEFORE_THE_GUEST_MOVED = [
    ("host2", "check_can_live_migrate_destination",
     "compute_check_can_live_migrate_destination"),
    ("host1", "check_can_live_migrate_source", "compute_check_can_live_migrate_source"),
    ("host2", "pre_live_migration", "compute_pre_live_migration"),
    ("host1", "live_migration", "compute_live_migration"),
    ("host1", "live_migration_copy", "compute_live_migration"),
]


@pytest.mark.parametrize(("host", "step", "event"), BEFORE_THE_GUEST_MOVED)
def test_a_failure_before_the_guest_moved_rolls_back_to_the_source(
        cloud: Cloud, moving: dict[str, str], host: str, step: str, event: str) -> None:
    server_id = moving["server"]
    cloud.plane.agent(host).driver.fail(step, times=None)

    assert live_migrate(cloud, server_id).status_code == 202
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert view["OS-EXT-SRV-ATTR:host"] == "host1"
    [mig] = migrations_of(cloud, server_id)
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert usages(cloud, moving["host2"]) == EMPTY
    assert (guests(cloud, "host1"), guests(cloud, "host2")) == ([server_id], [])
    assert (event, host, "Error") in events(cloud, server_id, "live-migration")
    assert_invariants(cloud)


@pytest.mark.parametrize(("host", "step"), [("host2", "post_live_migration_at_destination"),
                                            ("host1", "post_live_migration")])
def test_a_failure_after_the_guest_moved_leaves_it_in_error_on_the_destination(
        cloud: Cloud, moving: dict[str, str], host: str, step: str) -> None:
    server_id = moving["server"]
    cloud.plane.agent(host).driver.fail(step, times=None)

    live_migrate(cloud, server_id)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host2")
    [mig] = migrations_of(cloud, server_id)
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host2"]: SMALL}
    assert usages(cloud, moving["host1"]) == EMPTY
    assert guests(cloud, "host2") == [server_id]
    assert_invariants(cloud)


def test_a_guest_the_source_cannot_take_back_leaves_the_server_in_error_there(
        cloud: Cloud, moving: dict[str, str]) -> None:
    """The copy fails and so does its undo: ERROR on host1, still holding host1 only."""
    server_id = moving["server"]
    driver = cloud.plane.agent("host1").driver
    driver.fail("live_migration_copy")
    driver.fail("rollback_live_migration")

    live_migrate(cloud, server_id)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    [mig] = migrations_of(cloud, server_id)
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert guests(cloud, "host2") == []
    assert_invariants(cloud)


def test_no_host_at_all_keeps_the_server_where_it_was(cloud: Cloud,
                                                      moving: dict[str, str]) -> None:
    cloud.plane.stop_host("host2")
    listed = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    service = next(s for s in listed["services"] if s["host"] == "host2")
    cloud.compute.put(f"/os-services/{service['id']}", json={"forced_down": True})

    live_migrate(cloud, moving["server"])
    assert server(cloud, moving["server"])["status"] == "ACTIVE"
    [mig] = migrations_of(cloud, moving["server"])
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, moving["server"]) == {moving["host1"]: SMALL}
    assert_invariants(cloud)


def test_a_server_with_pci_devices_does_not_move_live(cloud: Cloud) -> None:
    """Libvirt's rule: flavor-based PCI passthrough cannot be live migrated; the source's
    pre-check refuses on every destination and the server stays, holding its devices."""
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100,
                                  pci={"gpu": 2}) for name in ("host1", "host2")}
    gpu = flavor(cloud, "gpu", 1, 512, 5, extra_specs={"pci_passthrough:alias": "gpu:1"})
    server_id = boot(cloud, "vm", gpu, image(cloud))

    live_migrate(cloud, server_id)
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    [mig] = migrations_of(cloud, server_id)
    assert mig["status"] == "error"
    assert held(cloud, server_id) == {nodes["host1"]: SMALL}
    assert held(cloud, str(mig["uuid"])) == {}
    assert ("compute_check_can_live_migrate_source", "host1", "Error") in events(
        cloud, server_id, "live-migration")
    assert cloud.plane.agent("host1").pci.stats()["gpu"]["free"] == 1
    assert cloud.plane.agent("host2").pci.stats()["gpu"]["free"] == 2
    assert_invariants(cloud)
