"""lock / unlock: a locked server refuses changes by non-admins; who may unlock it.

    host1: vm (small), booted by a member of p1
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import action, boot, flavor, image, server, settle
from tests.functional.shelving import post_action


@pytest.fixture
def vm(cloud: Cloud) -> tuple[str, httpx.Client]:
    cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100)
    owner = cloud.client("demo:p1", roles=MEMBER)
    small = flavor(cloud, "small", 1, 512, 5)
    flavor(cloud, "large", 2, 1024, 10)
    return boot(cloud, "vm", small, image(cloud, visibility="public"), client=owner), owner


def lock_view(client: httpx.Client, server_id: str) -> tuple[Any, Any]:
    view = client.get(f"/servers/{server_id}").json()["server"]
    return view["locked"], view["locked_reason"]


def test_a_locked_server_refuses_non_admins(cloud: Cloud, vm: tuple[str, httpx.Client]) -> None:
    server_id, owner = vm
    action(cloud, server_id, {"lock": {"locked_reason": "maintenance"}}, client=owner)
    assert lock_view(owner, server_id) == (True, "maintenance")
    for body in ({"pause": None}, {"reboot": {"type": "HARD"}}, {"os-stop": None},
                 {"resize": {"flavorRef": "large"}}, {"shelve": None}, {"suspend": None}):
        resp = post_action(owner, server_id, body)
        assert resp.status_code == 409, resp.text
        assert resp.json()["conflictingRequest"]["message"] == f"Instance {server_id} is locked"
    resp = owner.delete(f"/servers/{server_id}")
    assert resp.status_code == 409, resp.text
    assert server(cloud, server_id)["status"] == "ACTIVE"
    action(cloud, server_id, {"pause": None})  # an admin may
    assert server(cloud, server_id)["status"] == "PAUSED"
    action(cloud, server_id, {"unlock": None}, client=owner)
    assert lock_view(owner, server_id) == (False, None)
    action(cloud, server_id, {"unpause": None}, client=owner)
    assert server(cloud, server_id)["status"] == "ACTIVE"
    listed = cloud.compute.get(f"/servers/{server_id}/os-instance-actions").json()
    assert [a["action"] for a in listed["instanceActions"]][:4] == [
        "unpause", "unlock", "pause", "lock"]


def test_who_may_unlock(cloud: Cloud, vm: tuple[str, httpx.Client]) -> None:
    server_id, owner = vm
    action(cloud, server_id, {"lock": None})  # an admin of another project: locked_by admin
    assert lock_view(owner, server_id) == (True, None)
    assert post_action(owner, server_id, {"unlock": None}).status_code == 403
    assert post_action(cloud.client("x:p2", roles=MEMBER), server_id,
                       {"unlock": None}).status_code == 404
    assert lock_view(owner, server_id) == (True, None)
    action(cloud, server_id, {"unlock": None})  # unlock_override: admins
    # The owner's lock: the owner and admins may unlock it; the owner locking again is a no-op.
    action(cloud, server_id, {"lock": None}, client=owner)
    action(cloud, server_id, {"lock": {"locked_reason": "again"}}, client=owner)
    assert lock_view(owner, server_id) == (True, None)
    action(cloud, server_id, {"unlock": None})
    assert lock_view(owner, server_id) == (False, None)
    reader = cloud.client("demo:p1", roles=("reader",))
    assert post_action(reader, server_id, {"lock": None}).status_code == 403


def test_lock_bodies_per_microversion(cloud: Cloud, vm: tuple[str, httpx.Client]) -> None:
    server_id, _ = vm
    for bad in ({"locked_reason": ""}, {"locked_reason": "x" * 256}, {"reason": "x"},
                {"locked_reason": 5}):
        resp = post_action(cloud.compute, server_id, {"lock": bad})
        assert resp.status_code == 400, resp.text
        assert "badRequest" in resp.json()
    old = cloud.client("admin", version="2.72")
    assert post_action(old, server_id, {"lock": {"locked_reason": ""}}).status_code == 202
    settle(cloud)
    view = old.get(f"/servers/{server_id}").json()["server"]
    assert view["locked"] is True and "locked_reason" not in view
    assert "locked" not in cloud.client("admin", version="2.8").get(
        f"/servers/{server_id}").json()["server"]
