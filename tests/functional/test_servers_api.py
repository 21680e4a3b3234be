"""The servers API over HTTP: create validation, views per microversion, lists, policy, actions.

Most tests write instance records straight into the database (a server the
conductor already built, or one in a given state) so that what is under test
is the API alone; the tests marked "end to end" boot through the real
conductor on simulated hosts::

    host1 (16 VCPU, 8192 MB, 100 GB, zone "nova")
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Any

import httpx
import pytest

from stowage.compute import flavors as flv
from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute import states
from stowage.compute.conductor import tasks
from stowage.timeutil import utcnow
from tests.functional.conftest import MEMBER, Cloud, RecordingConductor
from tests.functional.servers import action, flavor, image, settle

# --- fixtures and records ----------------------------------------------------------


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


def make_instance(cloud: Cloud, flavorid: str = "1", **fields: Any) -> inst.Instance:
    """An instance record as the conductor leaves a built server (ACTIVE on host1)."""
    with cloud.live.db.read() as conn:
        snapshot = flv.snapshot(flv.get(conn, flavorid))
    with cloud.live.cell_db.write() as conn:
        values: dict[str, Any] = {
            "uuid": str(uuidlib.uuid4()), "project_id": "admin", "user_id": "admin",
            "display_name": "vm", "flavor": snapshot, "vm_state": states.ACTIVE,
            "power_state": states.RUNNING, "host": "host1", "node": "host1",
            "hostname": "vm", "reservation_id": "r-abcdefgh", "launched_at": utcnow(),
            "image_ref": str(uuidlib.uuid4())}
        values.update(fields)
        return inst.create(conn, inst.Instance(**values))


def set_state(cloud: Cloud, uuid: str, **values: Any) -> None:
    with cloud.live.cell_db.write() as conn:
        inst.update(conn, uuid, **values)


def instance(cloud: Cloud, uuid: str) -> inst.Instance:
    with cloud.live.cell_db.read() as conn:
        return inst.get(conn, uuid, read_deleted=True)


@pytest.fixture
def flavors(cloud: Cloud) -> dict[str, str]:
    ids = {}
    for name, fid, vcpus, ram, disk in (("small", "1", 1, 512, 5), ("large", "2", 2, 1024, 10),
                                        ("tiny", "3", 1, 256, 1), ("nodisk", "4", 1, 512, 0)):
        resp = cloud.compute.post("/flavors", json={"flavor": {
            "name": name, "id": fid, "vcpus": vcpus, "ram": ram, "disk": disk}})
        assert resp.status_code == 200, resp.text
        ids[name] = fid
    return ids


def public_image(cloud: Cloud, **values: Any) -> str:
    with httpx.Client(base_url=f"{cloud.live.url}/image", timeout=30,
                      headers={"x-auth-token": "admin"}) as glance:
        made = glance.post("/v2/images", json={"name": "img", "visibility": "public",
                                                "disk_format": "qcow2",
                                                "container_format": "bare", **values})
        assert made.status_code == 201, made.text
        # Queued until its data arrives, and only an active image boots.
        uploaded = glance.put(f"/v2/images/{made.json()['id']}/file", content=b"x",
                              headers={"content-type": "application/octet-stream"})
        assert uploaded.status_code == 204, uploaded.text
        return str(made.json()["id"])


def servers_of(client: httpx.Client, **params: Any) -> list[str]:
    resp = client.get("/servers/detail", params=params)
    assert resp.status_code == 200, resp.text
    return [s["id"] for s in resp.json()["servers"]]


def boot_body(flavor_ref: str, image_ref: str, **extra: Any) -> dict[str, Any]:
    return {"server": {"name": "vm", "flavorRef": flavor_ref, "imageRef": image_ref,
                       "networks": "none", **extra}}


def fault_of(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    (body,) = resp.json().values()
    assert body["code"] == status
    return str(body["message"])


# --- create ------------------------------------------------------------------------


def test_boot_records_the_request_and_casts_the_build(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    image_id = image(cloud)
    resp = cloud.compute.post("/servers", json=boot_body(
        "2", image_id, metadata={"k": "v"}, description="first",
        availability_zone="nova"))
    assert resp.status_code == 202, resp.text
    created = resp.json()["server"]
    assert set(created) == {"id", "links", "OS-DCF:diskConfig", "security_groups",
                            "adminPass"}
    assert resp.headers["location"] == created["links"][0]["href"]
    settle(cloud)
    assert [m for m, _ in recorder.casts] == ["build_instances"]
    assert recorder.casts[0][1]["instance_uuids"] == [created["id"]]
    request_id = resp.headers["x-openstack-request-id"]
    assert resp.headers["x-compute-request-id"] == request_id
    assert recorder.casts[0][1]["request_id"] == request_id

    shown = cloud.compute.get(f"/servers/{created['id']}").json()["server"]
    assert (shown["status"], shown["OS-EXT-STS:task_state"]) == ("BUILD", "scheduling")
    assert shown["metadata"] == {"k": "v"} and shown["description"] == "first"
    assert shown["flavor"]["original_name"] == "large"
    assert shown["image"]["id"] == image_id
    assert shown["OS-EXT-SRV-ATTR:reservation_id"].startswith("r-")
    with cloud.live.db.read() as conn:
        spec = inst.request_spec(conn, created["id"])
    assert spec["flavor"]["flavorid"] == "2" and spec["is_volume_backed"] is False
    assert spec["availability_zone"] == "nova" and spec["move"] is False
    assert spec["image"]["id"] == image_id and spec["ignore_hosts"] == []
    events = cloud.compute.get(f"/servers/{created['id']}/os-instance-actions").json()
    assert [(a["action"], a["request_id"]) for a in events["instanceActions"]] == [
        ("create", request_id)]


def test_boot_several_with_a_reservation_id(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    resp = cloud.compute.post("/servers", json=boot_body(
        "1", image(cloud), min_count=2, max_count=3, return_reservation_id=True))
    assert resp.status_code == 202, resp.text
    reservation = resp.json()["reservation_id"]
    found = cloud.compute.get("/servers/detail",
                              params={"reservation_id": reservation}).json()["servers"]
    assert sorted(s["name"] for s in found) == ["vm-1", "vm-2", "vm-3"]
    assert sorted(s["OS-EXT-SRV-ATTR:launch_index"] for s in found) == [0, 1, 2]


def test_boot_from_volume_needs_no_image(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    volume = str(uuidlib.uuid4())
    bdm = [{"uuid": volume, "source_type": "volume", "destination_type": "volume",
            "boot_index": 0}]
    resp = cloud.client("demo:p1", roles=MEMBER).post("/servers", json=boot_body(
        "4", "", block_device_mapping_v2=bdm))
    assert resp.status_code == 202, resp.text
    server_id = resp.json()["server"]["id"]
    shown = cloud.client("demo:p1", roles=MEMBER).get(f"/servers/{server_id}").json()["server"]
    assert shown["image"] == ""
    with cloud.live.db.read() as conn:
        assert inst.request_spec(conn, server_id)["is_volume_backed"] is True


def _bad_bodies(image_id: str) -> list[tuple[str, dict[str, Any], str, int]]:
    bfv_no_root = [{"uuid": str(uuidlib.uuid4()), "source_type": "volume",
                    "destination_type": "volume", "boot_index": 1}]
    return [
        ("2.79", {"server": {"name": "vm", "imageRef": image_id, "networks": "none"}},
         "'flavorRef' is a required property", 400),
        ("2.79", {"server": {"name": "vm", "flavorRef": "1", "imageRef": image_id}},
         "'networks' is a required property", 400),
        ("2.79", boot_body("1", image_id, name=" vm"), "Can not start or end with whitespace",
         400),
        ("2.79", boot_body("1", image_id, bogus=1), "Additional properties are not allowed",
         400),
        ("2.18", {"server": {"name": "vm", "flavorRef": "1", "imageRef": image_id,
                             "description": "x"}},
         "Additional properties are not allowed", 400),
        ("2.79", boot_body("99", image_id), "Flavor 99 could not be found.", 400),
        ("2.79", boot_body("1", str(uuidlib.uuid4())), "Can not find requested image", 400),
        ("2.79", boot_body("1", ""), "Missing imageRef attribute", 400),
        ("2.79", boot_body("1", "", block_device_mapping_v2=bfv_no_root),
         "Boot sequence for the instance and image/block device mapping combination is not "
         "valid.", 400),
        ("2.79", boot_body("1", image_id, availability_zone="mars"),
         "The requested availability zone is not available", 400),
        ("2.79", boot_body("1", image_id, min_count=3, max_count=2),
         "min_count must be <= max_count", 400),
        ("2.79", {**boot_body("1", image_id),
                  "os:scheduler_hints": {"group": str(uuidlib.uuid4())}},
         "could not be found.", 400),
        ("2.79", boot_body("1", image_id, host="nowhere"),
         "Compute host nowhere could not be found.", 400),
        ("2.73", boot_body("1", image_id, host="host1"),
         "Additional properties are not allowed", 400),
        ("2.79", boot_body("3", image_id), "Flavor's disk is smaller than the minimum size "
         "specified in image metadata. Flavor disk is 1073741824 bytes, minimum size is "
         "2147483648 bytes.", 400),
        ("2.79", boot_body("1", image_id, networks="some"), "is not valid under any", 400),
    ]


def test_bad_boot_requests_create_nothing(cloud: Cloud, flavors: dict[str, str],
                                          recorder: RecordingConductor) -> None:
    for version, body, message, status in _bad_bodies(public_image(cloud, min_disk=2)):
        resp = cloud.compute.post("/servers", json=body, headers=at(version))
        assert message in fault_of(resp, status), (version, body)
    assert servers_of(cloud.compute, all_tenants=1, deleted=1) == []
    assert servers_of(cloud.compute, all_tenants=1) == []
    assert recorder.casts == []


def test_zero_disk_flavor_is_for_volumes_unless_admin(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    image_id = public_image(cloud)
    user = cloud.client("demo:p1", roles=MEMBER)
    resp = user.post("/servers", json=boot_body("4", image_id))
    assert "Only volume-backed servers are allowed" in fault_of(resp, 403)
    assert cloud.compute.post("/servers", json=boot_body("4", image_id)).status_code == 202


def test_disabled_flavor_and_private_flavor_are_not_found(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    resp = cloud.compute.post("/flavors", json={"flavor": {
        "name": "private", "id": "9", "vcpus": 1, "ram": 256, "disk": 1,
        "os-flavor-access:is_public": False}})
    assert resp.status_code == 200
    resp = cloud.client("demo:p1", roles=MEMBER).post(
        "/servers", json=boot_body("9", public_image(cloud)))
    assert fault_of(resp, 400) == "Flavor 9 could not be found."


# --- views -------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "flavor_keys"), [
    ("2.46", {"id", "links"}),
    ("2.47", {"original_name", "vcpus", "ram", "disk", "ephemeral", "swap", "extra_specs"}),
])
def test_flavor_in_the_view_follows_the_microversion(
        cloud: Cloud, flavors: dict[str, str], version: str, flavor_keys: set[str]) -> None:
    server = make_instance(cloud, "2")
    for view in (cloud.compute.get(f"/servers/{server.uuid}", headers=at(version))
                 .json()["server"],
                 cloud.compute.get("/servers/detail", headers=at(version))
                 .json()["servers"][0]):
        assert set(view["flavor"]) == flavor_keys
    if version == "2.46":
        assert view["flavor"]["id"] == "2"
        assert view["flavor"]["links"][0]["href"].endswith("/compute/flavors/2")
    else:
        assert view["flavor"]["original_name"] == "large" and view["flavor"]["ram"] == 1024


@pytest.mark.parametrize(("version", "present", "absent"), [
    ("2.1", {"OS-EXT-SRV-ATTR:host", "OS-EXT-STS:vm_state"},
     {"locked", "description", "tags", "OS-EXT-SRV-ATTR:hostname", "host_status"}),
    ("2.3", {"OS-EXT-SRV-ATTR:hostname", "OS-EXT-SRV-ATTR:reservation_id"}, {"locked"}),
    ("2.9", {"locked"}, {"host_status"}),
    ("2.16", {"host_status"}, {"description"}),
    ("2.19", {"description"}, {"tags"}),
    ("2.26", {"tags"}, {"trusted_image_certificates"}),
    ("2.63", {"trusted_image_certificates"}, {"server_groups", "locked_reason"}),
    ("2.71", {"server_groups"}, {"locked_reason"}),
    ("2.73", {"locked_reason", "server_groups"}, set()),
])
def test_view_keys_per_microversion(cloud: Cloud, flavors: dict[str, str], version: str,
                                    present: set[str], absent: set[str]) -> None:
    server = make_instance(cloud)
    view = cloud.compute.get(f"/servers/{server.uuid}", headers=at(version)).json()["server"]
    assert present <= set(view), present - set(view)
    assert not absent & set(view), absent & set(view)
    listed = cloud.compute.get("/servers/detail", headers=at(version)).json()["servers"][0]
    assert "server_groups" not in listed


def test_detailed_view_at_latest(cloud: Cloud, flavors: dict[str, str]) -> None:
    server = make_instance(cloud, key_name="k", metadata={"a": "b"})
    view = cloud.compute.get(f"/servers/{server.uuid}").json()["server"]
    assert view["status"] == "ACTIVE" and view["progress"] == 0
    assert view["OS-EXT-STS:power_state"] == 1 and view["OS-EXT-STS:task_state"] is None
    assert view["OS-EXT-SRV-ATTR:instance_name"] == f"instance-{server.id:08x}"
    assert view["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "host1"
    assert view["OS-EXT-AZ:availability_zone"] == "nova"
    assert len(view["hostId"]) == 56 and view["tenant_id"] == "admin"
    assert view["addresses"] == {} and view["accessIPv4"] == ""
    assert view["host_status"] == ""  # no compute service record for host1
    assert view["os-extended-volumes:volumes_attached"] == []
    assert view["key_name"] == "k" and view["metadata"] == {"a": "b"}
    assert view["created"].endswith("Z") and view["OS-SRV-USG:launched_at"]
    assert view["links"][0]["href"].endswith(f"/compute/v2.1/servers/{server.uuid}")
    assert "fault" not in view


def test_error_server_shows_its_fault(cloud: Cloud, flavors: dict[str, str]) -> None:
    server = make_instance(cloud, vm_state=states.ERROR, project_id="p1")
    with cloud.live.cell_db.write() as conn:
        inst.add_fault(conn, server.uuid, 500, "NoValidHost", details="trace")
    admin = cloud.compute.get(f"/servers/{server.uuid}").json()["server"]
    assert admin["status"] == "ERROR"
    assert {k: admin["fault"][k] for k in ("code", "message", "details")} == {
        "code": 500, "message": "NoValidHost", "details": "trace"}
    owner = cloud.client("demo:p1", roles=MEMBER).get(f"/servers/{server.uuid}").json()["server"]
    assert "details" not in owner["fault"]
    assert "OS-EXT-SRV-ATTR:host" not in owner and "host_status" not in owner


# --- lists and policy --------------------------------------------------------------


def test_non_admin_sees_only_its_project(cloud: Cloud, flavors: dict[str, str]) -> None:
    mine = make_instance(cloud, project_id="p1", user_id="demo")
    theirs = make_instance(cloud, project_id="p2", user_id="other")
    user = cloud.client("demo:p1", roles=MEMBER)
    assert servers_of(user) == [mine.uuid]
    assert [s["id"] for s in user.get("/servers").json()["servers"]] == [mine.uuid]
    assert servers_of(user, project_id="p2") == [mine.uuid]
    assert "could not be found" in fault_of(user.get(f"/servers/{theirs.uuid}"), 404)
    assert user.delete(f"/servers/{theirs.uuid}").status_code == 404
    assert user.get("/servers/detail", params={"all_tenants": 1}).status_code == 403
    assert set(servers_of(cloud.compute, all_tenants=1)) == {mine.uuid, theirs.uuid}
    assert servers_of(cloud.compute, all_tenants=1, project_id="p2") == [theirs.uuid]
    assert servers_of(cloud.compute) == []  # admin's own project holds nothing


def test_list_filters(cloud: Cloud, flavors: dict[str, str]) -> None:
    web1 = make_instance(cloud, display_name="web-1")
    web2 = make_instance(cloud, "2", display_name="web-2", vm_state=states.STOPPED,
                         host="host2")
    db = make_instance(cloud, display_name="db", vm_state=states.RESIZED)
    gone = make_instance(cloud, display_name="gone")
    with cloud.live.cell_db.write() as conn:
        inst.soft_delete(conn, gone.uuid)
    assert set(servers_of(cloud.compute, name="^web")) == {web1.uuid, web2.uuid}
    assert servers_of(cloud.compute, status="SHUTOFF") == [web2.uuid]
    assert servers_of(cloud.compute, status="VERIFY_RESIZE") == [db.uuid]
    assert fault_of(cloud.compute.get("/servers", params={"status": "NOPE"}), 400) == \
        "Invalid status value"
    assert servers_of(cloud.compute, flavor="2") == [web2.uuid]
    assert servers_of(cloud.compute, host="host2") == [web2.uuid]
    assert servers_of(cloud.compute, deleted=True) == [gone.uuid]
    assert servers_of(cloud.compute, deleted="False") == servers_of(cloud.compute)
    since = (utcnow() - datetime.timedelta(minutes=1)).isoformat()
    assert gone.uuid in servers_of(cloud.compute, **{"changes-since": since})
    resp = cloud.compute.get("/servers", params={"bogus": 1})
    assert "Additional properties are not allowed" in fault_of(resp, 400)
    assert cloud.compute.get("/servers", params={"bogus": 1},
                             headers=at("2.74")).status_code == 200


def test_non_admin_filters_are_dropped(cloud: Cloud, flavors: dict[str, str]) -> None:
    a = make_instance(cloud, project_id="p1", host="host1")
    b = make_instance(cloud, project_id="p1", host="host2")
    user = cloud.client("demo:p1", "2.74", roles=MEMBER)
    assert set(servers_of(user, host="host2")) == {a.uuid, b.uuid}
    resp = user.get("/servers/detail", params={"sort_key": "host"})
    assert fault_of(resp, 403) == "Only administrators can sort servers by host"


def test_paging_and_sorting(cloud: Cloud, flavors: dict[str, str]) -> None:
    made = [make_instance(cloud, display_name=f"vm{i}") for i in range(5)]
    newest_first = [m.uuid for m in reversed(made)]
    assert servers_of(cloud.compute) == newest_first
    page = cloud.compute.get("/servers", params={"limit": 2}).json()
    assert [s["id"] for s in page["servers"]] == newest_first[:2]
    next_href = page["servers_links"][0]["href"]
    assert f"marker={newest_first[1]}" in next_href
    page2 = cloud.compute.get(next_href).json()
    assert [s["id"] for s in page2["servers"]] == newest_first[2:4]
    last = cloud.compute.get("/servers", params={"limit": 2, "marker": newest_first[3]})
    assert [s["id"] for s in last.json()["servers"]] == newest_first[4:]
    assert "servers_links" not in last.json()
    resp = cloud.compute.get("/servers", params={"marker": str(uuidlib.uuid4())})
    assert "not found" in fault_of(resp, 400)
    by_name = servers_of(cloud.compute, sort_key="display_name", sort_dir="asc")
    assert by_name == [m.uuid for m in made]


def test_update_name_and_description(cloud: Cloud, flavors: dict[str, str]) -> None:
    server = make_instance(cloud, project_id="p1")
    user = cloud.client("demo:p1", roles=MEMBER)
    resp = user.put(f"/servers/{server.uuid}",
                    json={"server": {"name": "renamed", "description": "d"}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()["server"]["name"], resp.json()["server"]["description"]) == (
        "renamed", "d")
    resp = user.put(f"/servers/{server.uuid}", json={"server": {"description": "x"}},
                    headers=at("2.18"))
    assert "Additional properties are not allowed" in fault_of(resp, 400)
    old = user.put(f"/servers/{server.uuid}", json={"server": {"name": "again"}},
                   headers=at("2.74")).json()["server"]
    assert "OS-EXT-STS:vm_state" not in old and old["name"] == "again"
    assert "OS-EXT-STS:vm_state" in user.put(f"/servers/{server.uuid}", json={
        "server": {}}).json()["server"]


# --- delete ------------------------------------------------------------------------


def test_delete_casts_and_error_without_host_is_deleted_here(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    built = make_instance(cloud)
    failed = make_instance(cloud, vm_state=states.ERROR, host=None, node=None)
    busy = make_instance(cloud, task_state=states.TASK.RESIZE_MIGRATING)
    assert cloud.compute.delete(f"/servers/{built.uuid}").status_code == 204
    assert instance(cloud, built.uuid).task_state == "deleting"
    assert cloud.compute.delete(f"/servers/{failed.uuid}").status_code == 204
    assert cloud.compute.get(f"/servers/{failed.uuid}").status_code == 404
    # Nova deletes in any task state; the running move notices and stops.
    assert cloud.compute.delete(f"/servers/{busy.uuid}").status_code == 204
    assert instance(cloud, busy.uuid).task_state == "deleting"
    settle(cloud)
    assert [(method, kw["instance_uuid"]) for method, kw in recorder.casts] == [
        ("delete_instance", built.uuid), ("delete_instance", busy.uuid)]
    assert cloud.compute.delete(f"/servers/{built.uuid}").status_code == 204  # idempotent


# --- actions -----------------------------------------------------------------------


def test_resize_checks_and_casts(cloud: Cloud, flavors: dict[str, str],
                                 recorder: RecordingConductor) -> None:
    cloud.add_host("host1")  # moves need the server's compute service up
    server = make_instance(cloud, "2", project_id="p1", user_id="demo")
    user = cloud.client("demo:p1", roles=MEMBER)
    url = f"/servers/{server.uuid}/action"
    assert fault_of(user.post(url, json={"resize": {"flavorRef": "2"}}), 400) == \
        "When resizing, instances must change flavor!"
    assert fault_of(user.post(url, json={"resize": {"flavorRef": "4"}}), 400) == \
        "Resize to zero disk flavor is not allowed."
    assert fault_of(user.post(url, json={"resize": {"flavorRef": "77"}}), 400) == \
        "Flavor 77 could not be found."
    assert "'flavorRef' is a required property" in fault_of(
        user.post(url, json={"resize": {}}), 400)
    assert fault_of(user.post(url, json={"frobnicate": {"type": "HARD"}}), 400) == \
        "There is no such action: frobnicate"
    resp = user.post(url, json={"resize": {"flavorRef": "http://x/flavors/4"}})
    assert "zero disk" in fault_of(resp, 400)
    assert recorder.casts == []

    large = cloud.compute.post("/flavors", json={"flavor": {
        "name": "xl", "id": "5", "vcpus": 4, "ram": 2048, "disk": 20}})
    assert large.status_code == 200
    resp = user.post(url, json={"resize": {"flavorRef": "5"}})
    assert resp.status_code == 202, resp.text
    assert instance(cloud, server.uuid).task_state == "resize_prep"
    assert user.get(f"/servers/{server.uuid}").json()["server"]["status"] == "RESIZE"
    settle(cloud)
    (method, args), = recorder.casts
    assert method == "migrate_server" and args["host"] is None
    assert args["new_flavor"]["flavorid"] == "5" and args["instance_uuid"] == server.uuid
    again = user.post(url, json={"resize": {"flavorRef": "5"}})
    assert fault_of(again, 409) == (f"Cannot 'resize' instance {server.uuid} while it is in "
                                    "task_state resize_prep")


def test_volume_backed_server_may_shrink_its_flavor(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    cloud.add_host("host1")  # moves need the server's compute service up
    server = make_instance(cloud, "2", volume_backed=True, image_ref="")
    resp = cloud.compute.post(f"/servers/{server.uuid}/action",
                              json={"resize": {"flavorRef": "1"}})
    assert resp.status_code == 202, resp.text


def test_migrate_is_for_admins(cloud: Cloud, flavors: dict[str, str],
                               recorder: RecordingConductor) -> None:
    cloud.add_host("host1")  # moves need the server's compute service up
    server = make_instance(cloud, project_id="p1")
    url = f"/servers/{server.uuid}/action"
    resp = cloud.client("demo:p1", roles=MEMBER).post(url, json={"migrate": None})
    assert "os-migrate-server:migrate" in fault_of(resp, 403)
    resp = cloud.compute.post(url, json={"migrate": {"host": "nowhere"}})
    assert fault_of(resp, 400) == "Compute host nowhere could not be found."
    resp = cloud.compute.post(url, json={"migrate": {"host": "host1"}})
    assert fault_of(resp, 400) == "Cannot migrate to the host where the server exists."
    resp = cloud.compute.post(url, json={"migrate": {"host": "h2"}}, headers=at("2.55"))
    assert resp.status_code == 202, resp.text  # below 2.56 the host is ignored
    settle(cloud)
    (method, args), = recorder.casts
    assert (method, args) == ("migrate_server", {
        "instance_uuid": server.uuid, "request_id": args["request_id"],
        "new_flavor": None, "host": None, "operation_uuid": args["operation_uuid"]})
    [op] = tasks.interrupted(cloud.live.cell_db)  # accepted, durably, with what to run
    assert (op.operation_uuid, op.operation, op.args) == (
        args["operation_uuid"], "migrate", {"new_flavor": None, "host": None})


def test_stop_start_and_their_states(cloud: Cloud, flavors: dict[str, str],
                                     recorder: RecordingConductor) -> None:
    server = make_instance(cloud, project_id="p1")
    user = cloud.client("demo:p1", roles=MEMBER)
    url = f"/servers/{server.uuid}/action"
    assert fault_of(user.post(url, json={"os-start": None}), 409) == (
        f"Cannot 'start' instance {server.uuid} while it is in vm_state active")
    assert user.post(url, json={"os-stop": None}).status_code == 202
    assert instance(cloud, server.uuid).task_state == "powering-off"
    set_state(cloud, server.uuid, vm_state=states.STOPPED, task_state=None)
    assert user.post(url, json={"os-start": None}).status_code == 202
    assert instance(cloud, server.uuid).task_state == "powering-on"
    settle(cloud)
    assert [(m, a["on"]) for m, a in recorder.casts] == [("power", False), ("power", True)]
    building = make_instance(cloud, vm_state=states.BUILDING, launched_at=None, host=None)
    resp = cloud.compute.post(f"/servers/{building.uuid}/action", json={"os-stop": None})
    assert fault_of(resp, 409) == (f"Cannot 'stop' instance {building.uuid} while it is in "
                                   "vm_state building")


def test_confirm_and_revert_need_a_finished_migration(
        cloud: Cloud, flavors: dict[str, str], recorder: RecordingConductor) -> None:
    active = make_instance(cloud)
    url = f"/servers/{active.uuid}/action"
    assert fault_of(cloud.compute.post(url, json={"confirmResize": None}), 409) == (
        f"Cannot 'confirmResize' instance {active.uuid} while it is in vm_state active")
    resized = make_instance(cloud, vm_state=states.RESIZED)
    url = f"/servers/{resized.uuid}/action"
    for name in ("confirmResize", "revertResize"):
        resp = cloud.compute.post(url, json={name: None})
        assert fault_of(resp, 400) == "Instance has not been resized."
    with cloud.live.cell_db.write() as conn:
        mig = migs.create(conn, migs.Migration(
            uuid=str(uuidlib.uuid4()), instance_uuid=resized.uuid, migration_type="resize",
            status="finished", source_compute="host1", dest_compute="host2"))
    assert cloud.compute.post(url, json={"revertResize": None}).status_code == 202
    assert instance(cloud, resized.uuid).task_state == "resize_reverting"
    assert cloud.compute.get(f"/servers/{resized.uuid}").json()["server"]["status"] == \
        "REVERT_RESIZE"
    set_state(cloud, resized.uuid, task_state=None)
    assert cloud.compute.post(url, json={"confirmResize": None}).status_code == 204
    settle(cloud)
    assert [(m, a["migration_uuid"]) for m, a in recorder.casts] == [
        ("revert_resize", mig.uuid), ("confirm_resize", mig.uuid)]


# --- end to end (real conductor, simulated host) ------------------------------------


def wait_for(cloud: Cloud, server_id: str, status: str, timeout: float = 30) -> dict[str, Any]:
    """Poll GET /servers/{id} as a user would, until `status`."""
    settle(cloud)
    view = cloud.compute.get(f"/servers/{server_id}").json()["server"]
    assert view["status"] == status, view
    return dict(view)


def test_end_to_end_boot_resize_confirm_stop_start_delete(cloud: Cloud) -> None:
    cloud.add_host("host1", vcpus=16, memory_mb=8192, disk_gb=100)
    small, large = flavor(cloud, "small", 1, 512, 5), flavor(cloud, "large", 2, 1024, 10)
    resp = cloud.compute.post("/servers", json=boot_body(small, image(cloud)))
    assert resp.status_code == 202, resp.text
    server_id = resp.json()["server"]["id"]
    view = wait_for(cloud, server_id, "ACTIVE")
    assert view["OS-EXT-SRV-ATTR:host"] == "host1" and view["host_status"] == "UP"
    cloud.configure(allow_resize_to_same_host=True)
    action(cloud, server_id, {"resize": {"flavorRef": large}})
    assert wait_for(cloud, server_id, "VERIFY_RESIZE")["flavor"]["original_name"] == "large"
    action(cloud, server_id, {"confirmResize": None}, status=204)
    wait_for(cloud, server_id, "ACTIVE")
    action(cloud, server_id, {"os-stop": None})
    assert wait_for(cloud, server_id, "SHUTOFF")["OS-EXT-STS:power_state"] == 4
    action(cloud, server_id, {"os-start": None})
    wait_for(cloud, server_id, "ACTIVE")
    names = [a["action"] for a in cloud.compute.get(
        f"/servers/{server_id}/os-instance-actions").json()["instanceActions"]]
    assert names == ["start", "stop", "confirmResize", "resize", "create"]
    assert cloud.compute.delete(f"/servers/{server_id}").status_code == 204
    settle(cloud)
    assert cloud.compute.get(f"/servers/{server_id}").status_code == 404
