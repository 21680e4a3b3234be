"""Who may change a project's servers under the default policy, and under the legacy opt-in.

The default is upstream's (`[policy] enforce_new_defaults = true`, secure RBAC);
every server here belongs to project p1 and was booted by a member of it::

    token        X-Roles          POST /servers, resize, confirm/revert,   GET /servers,
                                  os-stop/os-start, DELETE                 /servers/{id}
    demo:p1      member,reader    202 / 204                                200
    viewer:p1    reader           403                                      200
    plain:p1     (none)           403                                      403

With `enforce_new_defaults = false` the deprecated `admin_or_owner` rule is
ORed in, so plain:p1 may do all of it, as before.

    host1, host2 (16 VCPU, 8 GB, 100 GB each)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stowage.compute.hosts import HostConfig
from stowage.config import PolicySettings
from tests.conftest import BACKENDS
from tests.functional.conftest import MEMBER, READER, Cloud, api_client, serving
from tests.functional.servers import action, boot, flavor, server, settle

FORBIDDEN_ROLES = {"no role": (), "reader": READER}


def public_image(cloud: Cloud) -> str:
    with api_client(f"{cloud.live.url}/image") as glance:
        made = glance.post("/v2/images", json={"name": "cirros", "visibility": "public",
                                                "disk_format": "qcow2",
                                                "container_format": "bare"})
        assert made.status_code == 201, made.text
        # Queued until its data arrives, and only an active image boots.
        uploaded = glance.put(f"/v2/images/{made.json()['id']}/file", content=b"x",
                              headers={"content-type": "application/octet-stream"})
        assert uploaded.status_code == 204, uploaded.text
        return str(made.json()["id"])


@pytest.fixture
def project(cloud: Cloud) -> dict[str, str]:
    """Two hosts, a small and a large flavor, and a public image."""
    for host in ("host1", "host2"):
        cloud.add_host(host, vcpus=16, memory_mb=8192, disk_gb=100)
    return {"small": flavor(cloud, "small", 1, 512, 5),
            "large": flavor(cloud, "large", 2, 1024, 10), "image": public_image(cloud)}


@pytest.fixture
def member(cloud: Cloud) -> Iterator[httpx.Client]:
    with cloud.client("demo:p1", roles=MEMBER) as client:
        yield client


def boot_body(project: dict[str, str], name: str = "vm") -> dict[str, Any]:
    return {"server": {"name": name, "flavorRef": project["small"],
                       "imageRef": project["image"], "networks": "none"}}


def forbidden(resp: httpx.Response, rule: str) -> None:
    assert resp.status_code == 403, resp.text
    assert rule in resp.json()["forbidden"]["message"]


def all_servers(cloud: Cloud) -> list[str]:
    listed = cloud.compute.get("/servers", params={"all_tenants": 1}).json()["servers"]
    return sorted(s["id"] for s in listed)


@pytest.mark.parametrize("roles", FORBIDDEN_ROLES.values(), ids=FORBIDDEN_ROLES.keys())
def test_create_needs_the_member_role(cloud: Cloud, project: dict[str, str],
                                      member: httpx.Client, roles: tuple[str, ...]) -> None:
    with cloud.client("other:p1", roles=roles) as user:
        forbidden(user.post("/servers", json=boot_body(project)),
                  "os_compute_api:servers:create")
    settle(cloud)
    assert all_servers(cloud) == []

    resp = member.post("/servers", json=boot_body(project))
    assert resp.status_code == 202, resp.text
    settle(cloud)
    assert all_servers(cloud) == [resp.json()["server"]["id"]]


def test_reader_sees_a_server_but_cannot_change_it(cloud: Cloud, project: dict[str, str],
                                                  member: httpx.Client) -> None:
    vm = boot(cloud, "vm", project["small"], project["image"], client=member)
    with cloud.client("viewer:p1", roles=READER) as reader:
        assert reader.get(f"/servers/{vm}").status_code == 200
        assert [s["id"] for s in reader.get("/servers").json()["servers"]] == [vm]
        assert [s["id"] for s in reader.get("/servers/detail").json()["servers"]] == [vm]
    with cloud.client("plain:p1") as nobody:
        forbidden(nobody.get(f"/servers/{vm}"), "os_compute_api:servers:show")
        forbidden(nobody.get("/servers"), "os_compute_api:servers:index")

    for roles in FORBIDDEN_ROLES.values():
        with cloud.client("other:p1", roles=roles) as user:
            url = f"/servers/{vm}/action"
            forbidden(user.post(url, json={"resize": {"flavorRef": project["large"]}}),
                      "os_compute_api:servers:resize")
            forbidden(user.post(url, json={"os-stop": None}), "os_compute_api:servers:stop")
            forbidden(user.delete(f"/servers/{vm}"), "os_compute_api:servers:delete")
    settle(cloud)
    shown = server(cloud, vm)
    assert (shown["status"], shown["flavor"]["original_name"]) == ("ACTIVE", "small")

    action(cloud, vm, {"os-stop": None}, client=member)
    for roles in FORBIDDEN_ROLES.values():
        with cloud.client("other:p1", roles=roles) as user:
            forbidden(user.post(f"/servers/{vm}/action", json={"os-start": None}),
                      "os_compute_api:servers:start")
    settle(cloud)
    assert server(cloud, vm)["status"] == "SHUTOFF"
    action(cloud, vm, {"os-start": None}, client=member)
    assert server(cloud, vm)["status"] == "ACTIVE"


def test_only_a_member_confirms_or_reverts(cloud: Cloud, project: dict[str, str],
                                           member: httpx.Client) -> None:
    vm = boot(cloud, "vm", project["small"], project["image"], client=member)
    action(cloud, vm, {"resize": {"flavorRef": project["large"]}}, client=member)
    assert server(cloud, vm)["status"] == "VERIFY_RESIZE"
    for roles in FORBIDDEN_ROLES.values():
        with cloud.client("other:p1", roles=roles) as user:
            url = f"/servers/{vm}/action"
            forbidden(user.post(url, json={"confirmResize": None}),
                      "os_compute_api:servers:confirm_resize")
            forbidden(user.post(url, json={"revertResize": None}),
                      "os_compute_api:servers:revert_resize")
    settle(cloud)
    assert server(cloud, vm)["status"] == "VERIFY_RESIZE"

    action(cloud, vm, {"revertResize": None}, client=member)
    shown = server(cloud, vm)
    assert (shown["status"], shown["flavor"]["original_name"]) == ("ACTIVE", "small")
    resp = member.delete(f"/servers/{vm}")
    assert resp.status_code == 204, resp.text
    settle(cloud)
    assert all_servers(cloud) == []


@pytest.fixture(params=BACKENDS)
def legacy_cloud(request: pytest.FixtureRequest) -> Iterator[Cloud]:
    """A cloud of its own whose settings opt in to the deprecated policy defaults."""
    legacy = PolicySettings(enforce_new_defaults=False)
    with serving(request.param, policy=legacy) as live:
        assert live.plane is not None
        with api_client(f"{live.url}/compute/v2.1",
                        headers={"openstack-api-version": "compute latest"}) as compute, \
                api_client(f"{live.url}/placement",
                           headers={"openstack-api-version": "placement latest"}) as placement:
            yield Cloud(compute, placement, live.plane, live)
        live.plane.drain()


def test_legacy_defaults_let_any_token_of_the_project(legacy_cloud: Cloud) -> None:
    cloud = legacy_cloud
    for host in ("host1", "host2"):
        cloud.plane.add_host(HostConfig(name=host, vcpus=16, memory_mb=8192, disk_gb=100))
    small, large = flavor(cloud, "small", 1, 512, 5), flavor(cloud, "large", 2, 1024, 10)
    with cloud.client("plain:p1") as nobody:
        vm = boot(cloud, "vm", small, public_image(cloud), client=nobody)
        assert nobody.get(f"/servers/{vm}").json()["server"]["status"] == "ACTIVE"
        action(cloud, vm, {"resize": {"flavorRef": large}}, client=nobody)
        assert server(cloud, vm)["status"] == "VERIFY_RESIZE"
        action(cloud, vm, {"confirmResize": None}, status=204, client=nobody)
        assert server(cloud, vm)["flavor"]["original_name"] == "large"
        assert nobody.delete(f"/servers/{vm}").status_code == 204
    settle(cloud)
    assert all_servers(cloud) == []
