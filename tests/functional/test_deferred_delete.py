"""Deferred delete: reclaim_instance_interval > 0 makes DELETE soft; restore,
forceDelete and the conductor's reclaim; the allocation is exact at every step.

    host1: vm (small), booted by a member of p1; [compute] reclaim_instance_interval = 3600
"""

from __future__ import annotations

import datetime

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.compute.states import RUNNING, SHUTDOWN
from stowage.timeutil import utcnow
from tests.functional.conftest import READER, Cloud
from tests.functional.one_server import SMALL, OneServer
from tests.functional.servers import (
    action,
    assert_invariants,
    guests,
    held,
    server,
    settle,
)
from tests.functional.shelving import event_names, post_action, sts


class Vm(OneServer):
    def __init__(self, cloud: Cloud) -> None:
        cloud.configure(reclaim_instance_interval=3600)
        super().__init__(cloud)

    def soft_delete(self, cloud: Cloud, server_id: str | None = None) -> None:
        assert self.owner.delete(f"/servers/{server_id or self.id}").status_code == 204
        settle(cloud)


@pytest.fixture
def vm(cloud: Cloud) -> Vm:
    return Vm(cloud)


def listed(cloud: Cloud, **params: str) -> list[str]:
    resp = cloud.compute.get("/servers", params={"all_tenants": "1", **params})
    assert resp.status_code == 200, resp.text
    return [s["id"] for s in resp.json()["servers"]]


def test_soft_delete_restore_and_force_delete(cloud: Cloud, vm: Vm) -> None:
    vm.soft_delete(cloud)
    assert sts(server(cloud, vm.id)) == ("SOFT_DELETED", "soft-delete", None, SHUTDOWN,
                                         "host1")
    assert guests(cloud, vm.id) == {("host1", ""): SHUTDOWN}
    assert held(cloud, vm.id) == {vm.node: SMALL}  # kept until reclaimed
    assert event_names(cloud, vm.id, "delete") == [("compute_soft_delete_instance", "Success")]
    assert listed(cloud) == [] and listed(cloud, status="SOFT_DELETED") == [vm.id]
    assert_invariants(cloud)

    action(cloud, vm.id, {"restore": None}, client=vm.owner)
    assert sts(server(cloud, vm.id)) == ("ACTIVE", "active", None, RUNNING, "host1")
    assert guests(cloud, vm.id) == {("host1", ""): RUNNING}
    assert held(cloud, vm.id) == {vm.node: SMALL}
    resp = post_action(vm.owner, vm.id, {"restore": None})
    assert resp.status_code == 409
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'restore' instance {vm.id} while it is in vm_state active")

    vm.soft_delete(cloud)
    action(cloud, vm.id, {"forceDelete": None}, client=vm.owner)
    assert cloud.compute.get(f"/servers/{vm.id}").status_code == 404
    assert held(cloud, vm.id) == {} and guests(cloud, vm.id) == {}
    assert_invariants(cloud)


def test_the_conductor_reclaims_what_stayed_soft_deleted(cloud: Cloud, vm: Vm) -> None:
    young = vm.boot(cloud)
    vm.soft_delete(cloud)
    vm.soft_delete(cloud, young)
    cloud.plane.conductor.reclaim_soft_deleted()  # both younger than the interval
    settle(cloud)
    assert server(cloud, vm.id)["status"] == "SOFT_DELETED"
    i = t.instances
    with cloud.live.cell_db.write() as conn:
        conn.execute(sa.update(i).where(i.c.uuid == vm.id).values(
            deleted_at=utcnow() - datetime.timedelta(seconds=3601)))
    cloud.plane.conductor.reclaim_soft_deleted()
    settle(cloud)
    assert cloud.compute.get(f"/servers/{vm.id}").status_code == 404
    assert held(cloud, vm.id) == {} and guests(cloud, vm.id) == {}
    assert server(cloud, young)["status"] == "SOFT_DELETED"
    assert held(cloud, young) == {vm.node: SMALL}
    assert_invariants(cloud)


def test_refusals_and_what_is_deleted_at_once(cloud: Cloud, vm: Vm) -> None:
    reader = cloud.client("demo:p1", roles=READER)
    vm.soft_delete(cloud)
    for body in ({"restore": None}, {"forceDelete": None}):
        assert post_action(reader, vm.id, body).status_code == 403
    action(cloud, vm.id, {"lock": None}, client=vm.owner)
    for body in ({"restore": None}, {"forceDelete": None}):
        resp = post_action(vm.owner, vm.id, body)
        assert resp.status_code == 409, resp.text
        assert resp.json()["conflictingRequest"]["message"] == f"Instance {vm.id} is locked"
    action(cloud, vm.id, {"unlock": None}, client=vm.owner)
    assert server(cloud, vm.id)["status"] == "SOFT_DELETED"
    # A server in ERROR is deleted at once, as is any with the setting off.
    action(cloud, vm.id, {"restore": None})
    action(cloud, vm.id, {"os-resetState": {"state": "error"}})
    vm.soft_delete(cloud)
    assert cloud.compute.get(f"/servers/{vm.id}").status_code == 404
    cloud.configure(reclaim_instance_interval=0)
    other = vm.boot(cloud)
    vm.soft_delete(cloud, other)
    assert cloud.compute.get(f"/servers/{other}").status_code == 404
    assert held(cloud, other) == {}
    assert_invariants(cloud)
