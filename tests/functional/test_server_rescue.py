"""rescue / unrescue: the guest boots a rescue disk on its host and back; nothing else moves.

    host1: vm (small), booted by a member of p1; its allocation is asserted after each step
"""

from __future__ import annotations

import pytest

from stowage.compute.states import RUNNING, SHUTDOWN
from tests.functional.conftest import MEMBER, READER, Cloud
from tests.functional.one_server import SMALL, OneServer
from tests.functional.servers import (
    action,
    assert_invariants,
    guests,
    held,
    image,
    new_uuid,
    server,
    settle,
)
from tests.functional.shelving import event_names, post_action, sts

Vm = OneServer
RESCUED_GUESTS = {("host1", ""): RUNNING, ("host1", "rescue"): SHUTDOWN}


@pytest.fixture
def vm(cloud: Cloud) -> Vm:
    return Vm(cloud)


def _rescued(cloud: Cloud, vm: Vm) -> None:
    """RESCUE, its own disk set aside on the same host, the same allocation."""
    assert sts(server(cloud, vm.id)) == ("RESCUE", "rescued", None, RUNNING, "host1")
    assert guests(cloud, vm.id) == RESCUED_GUESTS
    assert held(cloud, vm.id) == {vm.node: SMALL}


def test_rescue_and_unrescue_from_active_and_stopped(cloud: Cloud, vm: Vm) -> None:
    resp = action(cloud, vm.id, {"rescue": None}, status=200, client=vm.owner)
    password = resp.json()["adminPass"]
    assert len(password) >= 8 and set(resp.json()) == {"adminPass"}
    _rescued(cloud, vm)
    action(cloud, vm.id, {"unrescue": None}, client=vm.owner)
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    action(cloud, vm.id, {"os-stop": None}, client=vm.owner)
    resp = action(cloud, vm.id, {"rescue": {"adminPass": "s3cret", "rescue_image_ref": vm.image}},
                  status=200, client=vm.owner)
    assert resp.json() == {"adminPass": "s3cret"}
    _rescued(cloud, vm)
    assert any("Booting rescue disk " + vm.image in line
               for line in cloud.plane.agent("host1").driver.console_output(vm.id))
    action(cloud, vm.id, {"unrescue": {}}, client=vm.owner)
    vm.check(cloud, "ACTIVE", "active", RUNNING)  # Nova: unrescue always powers on
    names = [a["action"] for a in cloud.compute.get(
        f"/servers/{vm.id}/os-instance-actions").json()["instanceActions"]]
    assert names[:5] == ["unrescue", "rescue", "stop", "unrescue", "rescue"]
    assert event_names(cloud, vm.id, "rescue") == [("compute_rescue_instance", "Success")]
    assert event_names(cloud, vm.id, "unrescue") == [("compute_unrescue_instance", "Success")]
    usage = vm.owner.get("/limits").json()["limits"]["absolute"]
    assert (usage["totalCoresUsed"], usage["totalRAMUsed"]) == (1, 512)
    assert_invariants(cloud)


def test_a_rescued_server_refuses_other_actions(cloud: Cloud, vm: Vm) -> None:
    action(cloud, vm.id, {"rescue": None}, status=200)
    for body in ({"reboot": {"type": "HARD"}}, {"reboot": {"type": "SOFT"}}, {"pause": None},
                 {"suspend": None}, {"os-stop": None}, {"shelve": None}, {"rescue": None},
                 {"resize": {"flavorRef": vm.flavor}}, {"createImage": {"name": "x"}},
                 {"createBackup": {"name": "x", "backup_type": "daily", "rotation": 1}},
                 {"rebuild": {"imageRef": vm.image}}):
        resp = post_action(vm.owner, vm.id, body)
        assert resp.status_code == 409, (body, resp.text)
        name = {"os-stop": "stop"}.get(next(iter(body)), next(iter(body)))
        assert resp.json()["conflictingRequest"]["message"] == (
            f"Cannot '{name}' instance {vm.id} while it is in vm_state rescued"), body
    _rescued(cloud, vm)
    assert_invariants(cloud)
    assert cloud.compute.delete(f"/servers/{vm.id}").status_code == 204
    settle(cloud)  # a rescued server is deleted with its rescue disk and allocation
    assert cloud.compute.get(f"/servers/{vm.id}").status_code == 404
    assert guests(cloud, vm.id) == {} and held(cloud, vm.id) == {}


def test_rescue_from_error(cloud: Cloud, vm: Vm) -> None:
    action(cloud, vm.id, {"os-resetState": {"state": "error"}})
    action(cloud, vm.id, {"rescue": None}, status=200, client=vm.owner)
    _rescued(cloud, vm)
    action(cloud, vm.id, {"unrescue": None})
    vm.check(cloud, "ACTIVE", "active", RUNNING)


def test_bad_bodies_images_and_policy(cloud: Cloud, vm: Vm) -> None:
    for bad in ({"rescue": {"x": 1}}, {"rescue": {"rescue_image_ref": "nope"}},
                {"rescue": {"adminPass": 5}}, {"rescue": []}):
        resp = post_action(vm.owner, vm.id, bad)
        assert resp.status_code == 400, resp.text
        assert "badRequest" in resp.json()
    missing = new_uuid()
    private = image(cloud, "other-project's")  # the admin's project: p1 cannot see it
    for ref in (missing, private):
        resp = post_action(vm.owner, vm.id, {"rescue": {"rescue_image_ref": ref}})
        assert resp.status_code == 400, resp.text
        assert resp.json()["badRequest"]["message"] == (
            f"Requested rescue image '{ref}' is not supported")
    reader = cloud.client("demo:p1", roles=READER)
    other = cloud.client("x:p2", roles=MEMBER)
    for body in ({"rescue": None}, {"unrescue": None}):
        assert post_action(reader, vm.id, body).status_code == 403
        assert post_action(other, vm.id, body).status_code == 404
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    action(cloud, vm.id, {"lock": None}, client=vm.owner)
    resp = post_action(vm.owner, vm.id, {"rescue": None})
    assert resp.status_code == 409, resp.text
    assert resp.json()["conflictingRequest"]["message"] == f"Instance {vm.id} is locked"
    action(cloud, vm.id, {"rescue": None}, status=200)  # an admin may
    _rescued(cloud, vm)


def test_failures_leave_the_server_as_nova_does(cloud: Cloud, vm: Vm) -> None:
    driver = cloud.plane.agent("host1").driver
    driver.fail("rescue")
    action(cloud, vm.id, {"rescue": None}, status=200)
    view = server(cloud, vm.id)
    assert sts(view)[:3] == ("ERROR", "error", None)  # Nova's rescue_instance: ERROR
    assert "injected fault in rescue" in view["fault"]["message"]
    assert event_names(cloud, vm.id, "rescue") == [("compute_rescue_instance", "Error")]
    assert guests(cloud, vm.id) == {("host1", ""): RUNNING}  # the failed step changed nothing
    action(cloud, vm.id, {"rescue": None}, status=200)  # from ERROR
    _rescued(cloud, vm)
    driver.fail("unrescue")
    action(cloud, vm.id, {"unrescue": None})
    _rescued(cloud, vm)  # still rescued, a fault recorded
    action(cloud, vm.id, {"unrescue": None})
    vm.check(cloud, "ACTIVE", "active", RUNNING)
    assert held(cloud, vm.id) == {vm.node: SMALL}
    assert_invariants(cloud)


def test_password_not_returned_when_disabled(cloud: Cloud, vm: Vm) -> None:
    cloud.configure(enable_instance_password=False)
    resp = action(cloud, vm.id, {"rescue": {"adminPass": "x"}}, status=200)
    assert resp.json() == {}
    _rescued(cloud, vm)
