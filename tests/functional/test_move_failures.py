"""An injected failure at every step of a move leaves the accounting as before the move.

    host1: server (small)          host2: the destination (and its faults)

For each step the test asserts what the user sees (server status, migration
status) and what Placement says each consumer holds.
"""

from __future__ import annotations

import pytest

from tests.functional.conftest import Cloud
from tests.functional.faults import arm
from tests.functional.servers import (
    EMPTY,
    action,
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    held,
    host_of,
    image,
    migrations_of,
    server,
    usages,
)

SMALL = flavor_amounts(1, 512, 5)
LARGE = flavor_amounts(2, 1024, 10)


@pytest.fixture
def moving(cloud: Cloud) -> dict[str, str]:
    nodes = {name: cloud.add_host(name, vcpus=16, memory_mb=8192, disk_gb=100)
             for name in ("host1", "host2")}
    flavor(cloud, "small", 1, 512, 5)
    nodes["large"] = flavor(cloud, "large", 2, 1024, 10)
    small = next(f["id"] for f in cloud.compute.get("/flavors").json()["flavors"]
                 if f["name"] == "small")
    nodes["server"] = boot(cloud, "vm", str(small), image(cloud))
    assert host_of(cloud, nodes["server"]) == "host1"
    return nodes


# (agent, driver step that fails, server status afterwards)
FAILURES = [
    ("host2", "claim", "ACTIVE"),  # prep_resize: the destination claim fails, no alternate
    ("host1", "migrate_disk_and_power_off", "ERROR"),  # resize_instance on the source
    ("host2", "finish_migration", "ERROR"),  # finish_resize on the destination
]


@pytest.mark.parametrize(("host", "step", "status"), FAILURES)
def test_resize_failure_restores_the_source_allocation(
        cloud: Cloud, moving: dict[str, str], host: str, step: str, status: str) -> None:
    server_id = moving["server"]
    arm(cloud, host, step, mode="always")  # as an operator would, over the API

    action(cloud, server_id, {"resize": {"flavorRef": moving["large"]}})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == (status, None)
    assert view["OS-EXT-SRV-ATTR:host"] == "host1"
    mig = migrations_of(cloud, server_id)[0]
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert usages(cloud, moving["host2"]) == EMPTY
    assert_invariants(cloud)


def test_no_valid_host_for_a_resize(cloud: Cloud, moving: dict[str, str]) -> None:
    cloud.plane.stop_host("host2")
    cloud.compute.put(f"/os-services/{_service_id(cloud, 'host2')}",
                      json={"forced_down": True})
    action(cloud, moving["server"], {"resize": {"flavorRef": moving["large"]}})
    assert server(cloud, moving["server"])["status"] == "ACTIVE"
    assert migrations_of(cloud, moving["server"])[0]["status"] == "error"
    assert held(cloud, moving["server"]) == {moving["host1"]: SMALL}
    assert_invariants(cloud)


def _service_id(cloud: Cloud, host: str) -> str:
    services = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    return str(next(s["id"] for s in services["services"] if s["host"] == host))


def test_failed_confirm_keeps_the_resize_open(cloud: Cloud, moving: dict[str, str]) -> None:
    server_id = moving["server"]
    action(cloud, server_id, {"resize": {"flavorRef": moving["large"]}})
    mig = migrations_of(cloud, server_id)[0]
    cloud.plane.agent("host1").driver.fail("confirm_migration")

    action(cloud, server_id, {"confirmResize": None}, status=204)
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert migrations_of(cloud, server_id)[0]["status"] == "finished"
    assert held(cloud, str(mig["uuid"])) == {moving["host1"]: SMALL}
    assert held(cloud, server_id) == {moving["host2"]: LARGE}
    assert_invariants(cloud)

    action(cloud, server_id, {"confirmResize": None}, status=204)  # the retry works
    assert server(cloud, server_id)["status"] == "ACTIVE"
    assert held(cloud, str(mig["uuid"])) == {}
    assert_invariants(cloud)


def test_revert_failing_on_the_destination_changes_nothing(
        cloud: Cloud, moving: dict[str, str]) -> None:
    server_id = moving["server"]
    action(cloud, server_id, {"resize": {"flavorRef": moving["large"]}})
    mig = migrations_of(cloud, server_id)[0]
    cloud.plane.agent("host2").driver.fail("destroy")

    action(cloud, server_id, {"revertResize": None})
    assert server(cloud, server_id)["status"] == "VERIFY_RESIZE"
    assert held(cloud, str(mig["uuid"])) == {moving["host1"]: SMALL}
    assert held(cloud, server_id) == {moving["host2"]: LARGE}
    assert_invariants(cloud)


def test_revert_failing_on_the_source_ends_in_error_with_the_source_allocation(
        cloud: Cloud, moving: dict[str, str]) -> None:
    server_id = moving["server"]
    action(cloud, server_id, {"resize": {"flavorRef": moving["large"]}})
    mig = migrations_of(cloud, server_id)[0]
    cloud.plane.agent("host1").driver.fail("finish_revert_migration")

    action(cloud, server_id, {"revertResize": None})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ERROR", "host1")
    assert migrations_of(cloud, server_id)[0]["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert usages(cloud, moving["host2"]) == EMPTY
    assert_invariants(cloud)


def test_prep_failure_reschedules_to_an_alternate(cloud: Cloud, moving: dict[str, str]) -> None:
    """host2 refuses the claim once; host3 is the alternate that takes the server."""
    third = cloud.add_host("host3", vcpus=16, memory_mb=8192, disk_gb=100)
    cloud.plane.agent("host2").driver.fail("claim")
    server_id = moving["server"]

    action(cloud, server_id, {"resize": {"flavorRef": moving["large"]}})
    mig = migrations_of(cloud, server_id)[0]
    assert (server(cloud, server_id)["status"], mig["dest_compute"]) == ("VERIFY_RESIZE",
                                                                         "host3")
    assert held(cloud, server_id) == {third: LARGE}
    assert usages(cloud, moving["host2"]) == EMPTY
    assert_invariants(cloud)


def test_pci_claim_failure_reschedules_the_boot(cloud: Cloud) -> None:
    """Both hosts report one GPU; host1's claim fails, so the server lands on host2."""
    nodes = {h: cloud.add_host(h, vcpus=16, memory_mb=8192, disk_gb=100, pci={"gpu": 1})
             for h in ("host1", "host2")}
    gpu = flavor(cloud, "gpu", 1, 512, 5, extra_specs={"pci_passthrough:alias": "gpu:1"})
    cloud.plane.agent("host1").driver.fail("claim")

    server_id = boot(cloud, "vm", gpu, image(cloud))
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host2")
    assert held(cloud, server_id) == {nodes["host2"]: SMALL}
    assert usages(cloud, nodes["host1"]) == EMPTY
    assert_invariants(cloud)


def test_shrinking_a_local_root_disk_is_refused_and_rolled_back(
        cloud: Cloud, moving: dict[str, str]) -> None:
    """As libvirt: the source refuses before touching the guest (InstanceFaultRollback),
    so the server is ACTIVE again, the migration is in error and the source is its own."""
    server_id = moving["server"]
    tiny = flavor(cloud, "tiny", 1, 512, 1)
    action(cloud, server_id, {"resize": {"flavorRef": tiny}})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "host1")
    mig = migrations_of(cloud, server_id)[0]
    assert mig["status"] == "error"
    assert held(cloud, str(mig["uuid"])) == {}
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert usages(cloud, moving["host2"]) == EMPTY
    events = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    resize = next(a for a in events["instanceActions"] if a["action"] == "resize")
    detail = cloud.compute.get(
        f"/servers/{server_id}/os-instance-actions/{resize['request_id']}").json()
    results = {e["event"]: e["result"] for e in detail["instanceAction"]["events"]}
    assert results["compute_resize_instance"] == "Error"
    assert_invariants(cloud)


def test_failed_stop_leaves_the_server_running(cloud: Cloud, moving: dict[str, str]) -> None:
    server_id = moving["server"]
    cloud.plane.agent("host1").driver.fail("power_off")
    action(cloud, server_id, {"os-stop": None})
    view = server(cloud, server_id)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    action(cloud, server_id, {"os-stop": None})  # the fault was for one attempt
    assert server(cloud, server_id)["status"] == "SHUTOFF"
    assert_invariants(cloud)


def test_failed_delete_keeps_the_server_and_its_allocation(
        cloud: Cloud, moving: dict[str, str]) -> None:
    server_id = moving["server"]
    cloud.plane.agent("host1").driver.fail("destroy")
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    cloud.plane.drain(60)
    assert server(cloud, server_id)["status"] == "ERROR"
    assert held(cloud, server_id) == {moving["host1"]: SMALL}
    assert_invariants(cloud)
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204  # retry works
    cloud.plane.drain(60)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
    assert held(cloud, server_id) == {}
    assert usages(cloud, moving["host1"]) == EMPTY
    assert_invariants(cloud)
