"""reboot, pause/unpause, suspend/resume: the guest changes, nothing else does.

    host1: vm (small), booted by a member of p1; its allocation is asserted after each step
"""

from __future__ import annotations

from typing import Any

import pytest

from stowage.compute.instances import latest_faults
from stowage.compute.states import PAUSED_POWER, RUNNING, SHUTDOWN, SUSPENDED_POWER
from tests.functional.conftest import MEMBER, READER, Cloud
from tests.functional.one_server import SMALL, OneServer
from tests.functional.servers import (
    action,
    assert_invariants,
    guests,
    held,
    server,
)
from tests.functional.shelving import event_names, post_action, sts

Vm = OneServer


@pytest.fixture
def vm(cloud: Cloud) -> Vm:
    return Vm(cloud)


def test_every_guest_action_in_turn(cloud: Cloud, vm: Vm) -> None:
    steps: list[tuple[dict[str, Any], str, str, int]] = [
        ({"reboot": {"type": "SOFT"}}, "ACTIVE", "active", RUNNING),
        ({"pause": None}, "PAUSED", "paused", PAUSED_POWER),
        ({"unpause": None}, "ACTIVE", "active", RUNNING),
        ({"suspend": None}, "SUSPENDED", "suspended", SUSPENDED_POWER),
        ({"resume": None}, "ACTIVE", "active", RUNNING),
        ({"pause": None}, "PAUSED", "paused", PAUSED_POWER),
        ({"reboot": {"type": "hard"}}, "ACTIVE", "active", RUNNING),  # hard: from PAUSED too
        ({"os-stop": None}, "SHUTOFF", "stopped", SHUTDOWN),
        ({"reboot": {"type": "Hard"}}, "ACTIVE", "active", RUNNING),
    ]
    for body, status, vm_state, power in steps:
        action(cloud, vm.id, body, client=vm.owner)
        vm.check(cloud, status, vm_state, power)
    listed = cloud.compute.get(f"/servers/{vm.id}/os-instance-actions").json()
    names = [a["action"] for a in listed["instanceActions"]]
    assert names[:9] == ["reboot", "stop", "reboot", "pause", "resume", "suspend", "unpause",
                         "pause", "reboot"]
    assert event_names(cloud, vm.id, "suspend") == [("compute_suspend_instance", "Success")]
    assert_invariants(cloud)


@pytest.mark.parametrize(("setup", "body", "state"), [
    (None, {"unpause": None}, "vm_state active"),
    (None, {"resume": None}, "vm_state active"),
    ({"os-stop": None}, {"reboot": {"type": "SOFT"}}, "vm_state stopped"),
    ({"os-stop": None}, {"pause": None}, "vm_state stopped"),
    ({"pause": None}, {"suspend": None}, "vm_state paused"),
    ({"suspend": None}, {"reboot": {"type": "SOFT"}}, "vm_state suspended"),
    (None, {"unrescue": None}, "vm_state active"),  # rescue, unrescue (server_rescue.py)
    ({"pause": None}, {"rescue": None}, "vm_state paused"),
    ({"suspend": None}, {"rescue": None}, "vm_state suspended"),
])
def test_actions_refused_in_the_wrong_state(cloud: Cloud, vm: Vm, setup: Any, body: Any,
                                            state: str) -> None:
    if setup is not None:
        action(cloud, vm.id, setup)
    before = server(cloud, vm.id)
    resp = post_action(vm.owner, vm.id, body)
    assert resp.status_code == 409, resp.text
    (name,) = body
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot '{name}' instance {vm.id} while it is in {state}")
    assert sts(server(cloud, vm.id)) == sts(before)


def test_bad_bodies_and_policy(cloud: Cloud, vm: Vm) -> None:
    bads: list[dict[str, Any]] = [{"reboot": {"type": "WARM"}}, {"reboot": {}}, {"reboot": None},
                                  {"reboot": {"type": "SOFT", "x": 1}}]
    for bad in bads:
        resp = post_action(vm.owner, vm.id, bad)
        assert resp.status_code == 400, resp.text
        assert "badRequest" in resp.json()
    reader = cloud.client("demo:p1", roles=READER)
    for body in ({"pause": None}, {"suspend": None}, {"reboot": {"type": "HARD"}}):
        assert post_action(reader, vm.id, body).status_code == 403
        assert post_action(cloud.client("x:p2", roles=MEMBER), vm.id, body).status_code == 404
    vm.check(cloud, "ACTIVE", "active", RUNNING)


def last_fault(cloud: Cloud, server_id: str) -> str:
    with cloud.live.cell_db.read() as conn:
        return str(latest_faults(conn, [server_id])[server_id]["details"])


def test_failures_leave_the_server_as_nova_does(cloud: Cloud, vm: Vm) -> None:
    driver = cloud.plane.agent("host1").driver
    driver.fail("pause")
    action(cloud, vm.id, {"pause": None})
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # task state reverted, a fault recorded
    assert "injected fault in pause" in last_fault(cloud, vm.id)  # shown only once ERROR
    assert event_names(cloud, vm.id, "pause") == [("compute_pause_instance", "Error")]
    driver.fail("reboot")
    action(cloud, vm.id, {"reboot": {"type": "SOFT"}})
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # the guest still runs: not ERROR
    # A hard reboot brings a server in ERROR whose guest exists back to ACTIVE.
    action(cloud, vm.id, {"os-resetState": {"state": "error"}})
    assert post_action(vm.owner, vm.id, {"reboot": {"type": "SOFT"}}).status_code == 409
    action(cloud, vm.id, {"reboot": {"type": "HARD"}}, client=vm.owner)
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    # ... but not one whose guest is gone: it stays ERROR, with the reason.
    driver.destroy(vm.id)
    action(cloud, vm.id, {"reboot": {"type": "HARD"}})
    view = server(cloud, vm.id)
    assert sts(view)[:3] == ("ERROR", "error", None)
    assert "has no guest" in view["fault"]["message"]
    assert held(cloud, vm.id) == {vm.node: SMALL}
    assert_invariants(cloud)


def test_a_paused_or_suspended_server_can_be_shelved(cloud: Cloud, vm: Vm) -> None:
    action(cloud, vm.id, {"pause": None}, client=vm.owner)
    cloud.plane.agent("host1").driver.fail("snapshot")
    action(cloud, vm.id, {"shelve": None}, client=vm.owner)
    vm.check(cloud, "PAUSED", "paused", PAUSED_POWER)  # as it was: paused again
    action(cloud, vm.id, {"unpause": None}, client=vm.owner)
    action(cloud, vm.id, {"suspend": None}, client=vm.owner)
    action(cloud, vm.id, {"shelve": None}, client=vm.owner)
    assert server(cloud, vm.id)["status"] == "SHELVED_OFFLOADED"
    assert held(cloud, vm.id) == {}
    action(cloud, vm.id, {"unshelve": None}, client=vm.owner)
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    assert_invariants(cloud)


def test_a_paused_server_is_live_migrated_paused(cloud: Cloud, vm: Vm) -> None:
    node2 = cloud.add_host("host2", vcpus=8, memory_mb=4096, disk_gb=100)
    action(cloud, vm.id, {"pause": None})
    cloud.plane.agent("host1").driver.fail("live_migration_copy")
    live = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    action(cloud, vm.id, live)
    vm.check(cloud, "PAUSED", "paused", PAUSED_POWER)  # undone: paused on the source again
    action(cloud, vm.id, live)
    view = server(cloud, vm.id)
    assert sts(view) == ("PAUSED", "paused", None, PAUSED_POWER, "host2")
    assert guests(cloud, vm.id) == {("host2", ""): PAUSED_POWER}
    assert held(cloud, vm.id) == {node2: SMALL}
    action(cloud, vm.id, {"unpause": None})
    assert sts(server(cloud, vm.id)) == ("ACTIVE", "active", None, RUNNING, "host2")
    assert_invariants(cloud)
