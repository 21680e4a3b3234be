"""An injected failure at every step of shelve, offload and unshelve leaves exact accounting.

    host1: vm (small), where it is shelved      host2: the other choice on unshelve

Each case arms a fault in one host's simulated hypervisor, sends the user's
request, and asserts what the user sees (status, instance action events),
what each consumer holds per provider, the guests, and the snapshot image.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functional.conftest import Cloud
from tests.functional.servers import action, assert_invariants, held, server
from tests.functional.shelving import (
    SMALL,
    event_names,
    guest_power,
    images_named,
    sts,
    two_hosts_and_a_server,
)

SHUTDOWN, RUNNING = 4, 1


def _action_message(cloud: Cloud, server_id: str, name: str) -> Any:
    actions = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    return next(a["message"] for a in actions["instanceActions"] if a["action"] == name)


@pytest.mark.parametrize(("step", "stopped"), [
    ("power_off", False), ("snapshot", False), ("snapshot", True)])
def test_a_failed_shelve_leaves_the_server_as_it_was(cloud: Cloud, step: str,
                                                     stopped: bool) -> None:
    shelf = two_hosts_and_a_server(cloud)
    if stopped:
        action(cloud, shelf.server, {"os-stop": None})
    cloud.plane.agent("host1").driver.fail(step)

    action(cloud, shelf.server, {"shelve": None})
    power = SHUTDOWN if stopped else RUNNING
    status, vm_state = ("SHUTOFF", "stopped") if stopped else ("ACTIVE", "active")
    assert sts(server(cloud, shelf.server)) == (status, vm_state, None, power, "host1")
    assert guest_power(cloud, "host1", shelf.server) == power  # powered on again if it ran
    assert held(cloud, shelf.server) == {shelf.nodes["host1"]: SMALL}
    assert images_named(cloud, "vm-shelved") == []
    assert _action_message(cloud, shelf.server, "shelve") == "Error"
    if step == "snapshot":
        assert event_names(cloud, shelf.server, "shelve") == [
            ("compute_shelve_instance", "Error")]
    assert_invariants(cloud)

    action(cloud, shelf.server, {"shelve": None})  # the fault was once: it works now
    assert server(cloud, shelf.server)["status"] == "SHELVED_OFFLOADED"
    assert_invariants(cloud)


@pytest.mark.parametrize("operation", ["shelve", "shelveOffload"])
def test_a_failed_offload_leaves_the_server_shelved_on_its_host(cloud: Cloud,
                                                                operation: str) -> None:
    """The guest could not be destroyed: still SHELVED on host1, holding its flavor there."""
    shelf = two_hosts_and_a_server(cloud, offload_time=0 if operation == "shelve" else -1)
    if operation == "shelveOffload":
        action(cloud, shelf.server, {"shelve": None})
    cloud.plane.agent("host1").driver.fail("destroy")

    action(cloud, shelf.server, {operation: None})
    assert sts(server(cloud, shelf.server)) == ("SHELVED", "shelved", None, SHUTDOWN, "host1")
    assert held(cloud, shelf.server) == {shelf.nodes["host1"]: SMALL}
    assert guest_power(cloud, "host1", shelf.server) == SHUTDOWN
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert event_names(cloud, shelf.server, operation)[-1] == (
        "compute_shelve_offload_instance", "Error")
    assert_invariants(cloud)

    action(cloud, shelf.server, {"shelveOffload": None})
    assert server(cloud, shelf.server)["status"] == "SHELVED_OFFLOADED"
    assert held(cloud, shelf.server) == {}
    assert_invariants(cloud)


@pytest.mark.parametrize("step", ["spawn", "claim"])
def test_a_failed_spawn_on_unshelve_reschedules_to_an_alternate(cloud: Cloud,
                                                                step: str) -> None:
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    cloud.plane.agent("host1").driver.fail(step)

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == ("ACTIVE", "active", None, RUNNING, "host2")
    assert held(cloud, shelf.server) == {shelf.nodes["host2"]: SMALL}
    assert guest_power(cloud, "host1", shelf.server) == 0
    assert guest_power(cloud, "host2", shelf.server) == RUNNING
    assert images_named(cloud, "vm-shelved") == []
    assert_invariants(cloud)


def test_unshelve_failing_everywhere_stays_offloaded_holding_nothing(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud)
    action(cloud, shelf.server, {"shelve": None})
    for host in ("host1", "host2"):
        cloud.plane.agent(host).driver.fail("spawn", times=None)

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == (
        "SHELVED_OFFLOADED", "shelved_offloaded", None, SHUTDOWN, None)
    assert held(cloud, shelf.server) == {}
    assert all(guest_power(cloud, h, shelf.server) == 0 for h in ("host1", "host2"))
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert event_names(cloud, shelf.server, "unshelve")[-1] == (
        "compute_unshelve_instance", "Error")
    assert_invariants(cloud)

    for host in ("host1", "host2"):
        cloud.plane.agent(host).driver.clear_faults()
    action(cloud, shelf.server, {"unshelve": None})
    assert server(cloud, shelf.server)["status"] == "ACTIVE"
    assert_invariants(cloud)


def test_a_failed_power_on_leaves_the_server_shelved(cloud: Cloud) -> None:
    shelf = two_hosts_and_a_server(cloud, offload_time=-1)
    action(cloud, shelf.server, {"shelve": None})
    cloud.plane.agent("host1").driver.fail("power_on")

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == ("SHELVED", "shelved", None, SHUTDOWN, "host1")
    assert held(cloud, shelf.server) == {shelf.nodes["host1"]: SMALL}
    assert len(images_named(cloud, "vm-shelved")) == 1
    assert event_names(cloud, shelf.server, "unshelve") == [("compute_start_instance", "Error")]
    assert_invariants(cloud)

    action(cloud, shelf.server, {"unshelve": None})
    assert sts(server(cloud, shelf.server)) == ("ACTIVE", "active", None, RUNNING, "host1")
    assert images_named(cloud, "vm-shelved") == []
    assert_invariants(cloud)
