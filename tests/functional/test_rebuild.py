"""rebuild: the guest recreated from an image on its own host; the allocation never moves.

    host1 (trait CUSTOM_GOLD): vm (small), booted by a member of p1 from `cirros`
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stowage.compute.states import RUNNING, SHUTDOWN
from tests.functional.conftest import MEMBER, READER, Cloud
from tests.functional.one_server import SMALL, OneServer
from tests.functional.servers import (
    action,
    assert_invariants,
    held,
    image,
    server,
    settle,
)
from tests.functional.shelving import event_names, post_action, sts


class Vm(OneServer):
    def __init__(self, cloud: Cloud) -> None:
        super().__init__(cloud, traits=("CUSTOM_GOLD",))

    def rebuild(self, cloud: Cloud, status: int = 202, client: httpx.Client | None = None,
                **body: Any) -> httpx.Response:
        resp = post_action(client or self.owner, self.id, {"rebuild": body})
        assert resp.status_code == status, resp.text
        settle(cloud)
        return resp


@pytest.fixture
def vm(cloud: Cloud) -> Vm:
    return Vm(cloud)


def test_rebuild_with_a_new_image_name_and_metadata(cloud: Cloud, vm: Vm) -> None:
    other = image(cloud, "fedora", visibility="public")
    resp = vm.rebuild(cloud, imageRef=other, name="vm2", metadata={"role": "db"},
                      adminPass="s3cret", preserve_ephemeral=True, description="again")
    answer = resp.json()["server"]
    assert (answer["status"], answer["adminPass"], answer["name"]) == ("REBUILD", "s3cret",
                                                                       "vm2")
    assert answer["OS-EXT-STS:task_state"] == "rebuilding"  # 2.75+: the whole view
    vm.check(cloud, "ACTIVE", "active", RUNNING, other)
    view = server(cloud, vm.id)
    assert (view["name"], view["metadata"], view["description"]) == ("vm2", {"role": "db"},
                                                                      "again")
    assert event_names(cloud, vm.id, "rebuild") == [("compute_rebuild_instance", "Success")]
    # Stopped: rebuilt and powered off again; the same image and a generated password.
    action(cloud, vm.id, {"os-stop": None})
    old = cloud.client("demo:p1", version="2.74", roles=MEMBER)
    answer = vm.rebuild(cloud, client=old, imageRef=other).json()["server"]
    assert len(answer["adminPass"]) == 12 and "OS-EXT-STS:task_state" not in answer
    vm.check(cloud, "SHUTOFF", "stopped", SHUTDOWN, other)
    assert_invariants(cloud)


def test_rebuild_sets_access_ips_disk_config_and_key_pair(cloud: Cloud, vm: Vm) -> None:
    key = ("ssh-ed25519 "
           "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl")
    made = vm.owner.post("/os-keypairs", json={"keypair": {"name": "k1", "public_key": key}})
    assert made.status_code == 201, made.text
    vm.rebuild(cloud, imageRef=vm.image, accessIPv4="10.0.0.9", accessIPv6="fe80::0001",
               key_name="k1", **{"OS-DCF:diskConfig": "MANUAL"})
    view = server(cloud, vm.id)
    assert (view["accessIPv4"], view["accessIPv6"]) == ("10.0.0.9", "fe80::1")
    assert (view["key_name"], view["OS-DCF:diskConfig"]) == ("k1", "MANUAL")
    vm.check(cloud, "ACTIVE", "active", RUNNING, vm.image)
    # 2.57 stores user data; the answer (the base view before 2.75) adds key_name and it.
    at_2_57 = cloud.client("demo:p1", version="2.57", roles=MEMBER)
    answer = vm.rebuild(cloud, client=at_2_57, imageRef=vm.image, user_data="aGk=").json()
    assert (answer["server"]["key_name"], answer["server"]["user_data"]) == ("k1", "aGk=")
    assert server(cloud, vm.id)["OS-EXT-SRV-ATTR:user_data"] == "aGk="
    answer = cloud.compute.post(f"/servers/{vm.id}/action", json={"rebuild": {
        "imageRef": vm.image}}).json()["server"]  # 2.75+: the whole view, user_data once
    assert answer["user_data"] == "aGk=" and "OS-EXT-SRV-ATTR:user_data" not in answer
    settle(cloud)
    at_2_54 = cloud.client("demo:p1", version="2.54", roles=MEMBER)
    answer = vm.rebuild(cloud, client=at_2_54, imageRef=vm.image, key_name=None).json()
    assert answer["server"]["key_name"] is None and "user_data" not in answer["server"]


def test_rebuild_brings_back_a_server_whose_guest_is_gone(cloud: Cloud, vm: Vm) -> None:
    cloud.plane.agent("host1").driver.fail("rebuild")
    vm.rebuild(cloud, imageRef=vm.image)
    view = server(cloud, vm.id)
    assert sts(view)[:3] == ("ERROR", "error", None)
    assert "injected fault in rebuild" in view["fault"]["message"]
    assert held(cloud, vm.id) == {vm.node: SMALL}
    cloud.plane.agent("host1").driver.destroy(vm.id)
    vm.rebuild(cloud, imageRef=vm.image)
    vm.check(cloud, "ACTIVE", "active", RUNNING, vm.image)
    assert_invariants(cloud)


def test_image_traits_are_checked_against_the_servers_providers(cloud: Cloud, vm: Vm) -> None:
    silver = image(cloud, "silver", visibility="public", **{"trait:CUSTOM_SILVER": "required"})
    vm.rebuild(cloud, imageRef=silver)
    view = server(cloud, vm.id)
    assert sts(view)[:3] == ("ERROR", "error", None)
    assert view["image"]["id"] == vm.image  # Nova puts the old image back
    assert "Image traits cannot be satisfied" in view["fault"]["message"]
    assert held(cloud, vm.id) == {vm.node: SMALL}
    assert event_names(cloud, vm.id, "rebuild") == []
    gold = image(cloud, "gold", visibility="public", **{"trait:CUSTOM_GOLD": "required"})
    vm.rebuild(cloud, imageRef=gold)  # from ERROR, the host has it
    vm.check(cloud, "ACTIVE", "active", RUNNING, gold)
    assert_invariants(cloud)


def test_bad_requests_and_refusals(cloud: Cloud, vm: Vm) -> None:
    missing = "8a5e7c07-0d3e-4b8f-9a55-3a1a4c0e6f00"
    bodies: list[tuple[dict[str, Any], str]] = [
        ({}, "imageRef"), ({"imageRef": "nope"}, "imageRef"),
        ({"imageRef": missing}, "Cannot find image for rebuild"),
        ({"imageRef": vm.image, "key_name": "k"}, "Invalid key_name provided."),
        ({"imageRef": vm.image, "user_data": "a"}, "base64"),
        ({"imageRef": vm.image, "accessIPv4": "1.2.3"}, "ipv4"),
        ({"imageRef": vm.image, "trusted_image_certificates": []}, "trusted_image"),
        ({"imageRef": vm.image, "preserve_ephemeral": "maybe"}, "preserve_ephemeral"),
        ({"imageRef": vm.image, "name": " x"}, "name"),
    ]
    for body, words in bodies:
        resp = post_action(vm.owner, vm.id, {"rebuild": body})
        assert resp.status_code == 400, (body, resp.text)
        assert words in resp.json()["badRequest"]["message"], resp.text
    old = cloud.client("demo:p1", version="2.56", roles=MEMBER)
    assert post_action(old, vm.id, {"rebuild": {"imageRef": vm.image,
                                                "user_data": "eA=="}}).status_code == 400
    for body in ({"key_name": None}, {"user_data": None}, {"trusted_image_certificates": None}):
        vm.rebuild(cloud, imageRef=vm.image, **body)  # accepted at the latest version
    reader = cloud.client("demo:p1", roles=READER)
    assert post_action(reader, vm.id, {"rebuild": {"imageRef": vm.image}}).status_code == 403
    action(cloud, vm.id, {"pause": None})
    resp = vm.rebuild(cloud, status=409, imageRef=vm.image)
    assert resp.json()["conflictingRequest"]["message"] == (
        f"Cannot 'rebuild' instance {vm.id} while it is in vm_state paused")
    action(cloud, vm.id, {"unpause": None})
    action(cloud, vm.id, {"lock": None})
    resp = vm.rebuild(cloud, status=409, imageRef=vm.image)
    assert resp.json()["conflictingRequest"]["message"] == f"Instance {vm.id} is locked"
    vm.check(cloud, "ACTIVE", "active", RUNNING, vm.image)
