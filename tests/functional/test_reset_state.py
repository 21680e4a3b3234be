"""os-resetState: an admin's way back for a server stuck in ERROR (or one to mark broken).

    host1: vm (small), booted by a member of p1
"""

from __future__ import annotations

import pytest

from tests.functional.conftest import MEMBER, Cloud
from tests.functional.servers import (
    assert_invariants,
    boot,
    flavor,
    image,
    server,
    settle,
)


@pytest.fixture
def vm(cloud: Cloud) -> str:
    cloud.add_host("host1", vcpus=8, memory_mb=4096, disk_gb=100)
    owner = cloud.client("demo:p1", roles=MEMBER)
    image_id = image(cloud, visibility="public")
    return boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image_id, client=owner)


def reset(cloud: Cloud, server_id: str, state: object, token: str = "admin") -> int:
    client = cloud.compute if token == "admin" else cloud.client(token, roles=MEMBER)
    resp = client.post(f"/servers/{server_id}/action", json={"os-resetState": {"state": state}})
    settle(cloud)
    return resp.status_code


def test_reset_to_error_and_back_to_active(cloud: Cloud, vm: str) -> None:
    assert reset(cloud, vm, "error") == 202
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-STS:vm_state"], view["OS-EXT-STS:task_state"]) == (
        "ERROR", "error", None)
    assert reset(cloud, vm, "active") == 202
    view = server(cloud, vm)
    assert (view["status"], view["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert_invariants(cloud)  # nothing but the states changed: the allocation is intact
    actions = cloud.compute.get(f"/servers/{vm}/os-instance-actions").json()["instanceActions"]
    assert [a["action"] for a in actions][:2] == ["resetState", "resetState"]


def test_reset_clears_a_task_state(cloud: Cloud, vm: str) -> None:
    with cloud.live.cell_db.write() as conn:
        from stowage.compute import instances

        instances.update(conn, vm, task_state="resize_prep")
    assert reset(cloud, vm, "active") == 202
    assert server(cloud, vm)["OS-EXT-STS:task_state"] is None


def test_reset_is_for_admins(cloud: Cloud, vm: str) -> None:
    assert reset(cloud, vm, "error", token="demo:p1") == 403  # the owner, not an admin
    assert reset(cloud, vm, "error", token="x:p2") == 404  # another project sees no server
    assert server(cloud, vm)["status"] == "ACTIVE"


def test_unknown_server_and_bad_states(cloud: Cloud, vm: str) -> None:
    assert reset(cloud, "8a5e7c07-0d3e-4b8f-9a55-3a1a4c0e6f00", "active") == 404
    for bad in ("stopped", "ACTIVE", 1, None):
        assert reset(cloud, vm, bad) == 400
    resp = cloud.compute.post(f"/servers/{vm}/action",
                              json={"os-resetState": {"state": "active", "x": 1}})
    assert resp.status_code == 400
    assert server(cloud, vm)["status"] == "ACTIVE"
