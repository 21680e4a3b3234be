"""os-aggregates and os-availability-zone over HTTP, with the Placement mirror.

    host1 ─┐                     host3 (hosts file zone "nova")
    host2 ─┴─ aggregate "rack1"  (availability_zone "az1" once set)

One cloud per test; the rules' words are Nova's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from stowage.compute.services import register_controller_services
from tests.functional.conftest import Cloud
from tests.functional.servers import boot, flavor, image, server

READER = ("reader",)


def create(cloud: Cloud, name: str, zone: str | None = None, status: int = 200) -> Any:
    body: dict[str, Any] = {"name": name}
    if zone is not None:
        body["availability_zone"] = zone
    resp = cloud.compute.post("/os-aggregates", json={"aggregate": body})
    assert resp.status_code == status, resp.text
    return resp.json().get("aggregate") if status == 200 else resp.json()


def act(cloud: Cloud, agg_id: int, body: dict[str, Any], status: int = 200) -> Any:
    resp = cloud.compute.post(f"/os-aggregates/{agg_id}/action", json=body)
    assert resp.status_code == status, resp.text
    return resp.json()


def rp_aggregates(cloud: Cloud, rp: str) -> list[str]:
    resp = cloud.placement.get(f"/resource_providers/{rp}/aggregates")
    assert resp.status_code == 200, resp.text
    return sorted(resp.json()["aggregates"])


def error(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    return str(next(iter(resp.json().values()))["message"])


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    return {name: cloud.add_host(name) for name in ("host1", "host2", "host3")}


def test_crud_and_views(cloud: Cloud) -> None:
    made = create(cloud, "rack1", "az1")
    assert set(made) == {"id", "name", "availability_zone", "created_at", "updated_at",
                         "deleted_at", "deleted", "uuid"}
    assert (made["name"], made["availability_zone"], made["deleted"]) == ("rack1", "az1", False)
    agg_id = made["id"]
    shown = cloud.compute.get(f"/os-aggregates/{agg_id}").json()["aggregate"]
    assert shown["hosts"] == [] and shown["metadata"] == {"availability_zone": "az1"}
    old = cloud.compute.get(f"/os-aggregates/{agg_id}",
                            headers={"openstack-api-version": "compute 2.40"})
    assert "uuid" not in old.json()["aggregate"]
    resp = cloud.compute.post("/os-aggregates", json={"aggregate": {"name": "rack1"}})
    assert error(resp, 409) == "Aggregate rack1 already exists."
    create(cloud, "rack2")
    resp = cloud.compute.put(f"/os-aggregates/{agg_id}", json={"aggregate": {"name": "rack2"}})
    assert error(resp, 409) == "Aggregate rack2 already exists."
    resp = cloud.compute.put(f"/os-aggregates/{agg_id}",
                             json={"aggregate": {"name": "rack9", "availability_zone": "az9"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["aggregate"]["availability_zone"] == "az9"
    assert resp.json()["aggregate"]["updated_at"] is not None
    listed = cloud.compute.get("/os-aggregates").json()["aggregates"]
    assert [a["name"] for a in listed] == ["rack9", "rack2"]
    assert cloud.compute.delete(f"/os-aggregates/{agg_id}").status_code == 200
    assert error(cloud.compute.get(f"/os-aggregates/{agg_id}"), 404) == \
        f"Aggregate {agg_id} could not be found."
    assert error(cloud.compute.get("/os-aggregates/x1"), 400) == \
        "Invalid input received: id must be an integer"


@pytest.mark.parametrize("body", [
    {"aggregate": {"name": " lead"}}, {"aggregate": {"name": "x", "availability_zone": "a:b"}},
    {"aggregate": {"name": ""}}, {"aggregate": {"name": "x", "extra": 1}}, {"name": "x"},
])
def test_bad_bodies_change_nothing(cloud: Cloud, body: dict[str, Any]) -> None:
    assert cloud.compute.post("/os-aggregates", json=body).status_code == 400
    assert cloud.compute.get("/os-aggregates").json() == {"aggregates": []}


def test_admin_only(cloud: Cloud) -> None:
    agg_id = create(cloud, "rack1")["id"]
    with cloud.client("demo:p1", roles=("member", "reader")) as member:
        assert member.get("/os-aggregates").status_code == 403
        assert member.post(f"/os-aggregates/{agg_id}/action",
                           json={"set_metadata": {"metadata": {"k": "v"}}}).status_code == 403
        zones = member.get("/os-availability-zone")
        assert zones.status_code == 200
        assert member.get("/os-availability-zone/detail").status_code == 403
    assert cloud.compute.get(f"/os-aggregates/{agg_id}").json()["aggregate"]["metadata"] == {}


def test_hosts_zones_and_placement_mirror(cloud: Cloud, hosts: dict[str, str]) -> None:
    agg = create(cloud, "rack1")
    agg_id, agg_uuid = agg["id"], agg["uuid"]
    shown = act(cloud, agg_id, {"add_host": {"host": "host1"}})["aggregate"]
    assert shown["hosts"] == ["host1"]
    assert agg_uuid in rp_aggregates(cloud, hosts["host1"])
    assert agg_uuid not in rp_aggregates(cloud, hosts["host2"])
    resp = cloud.compute.post(f"/os-aggregates/{agg_id}/action",
                              json={"add_host": {"host": "host1"}})
    assert error(resp, 409) == f"Aggregate {agg_id} already has host host1."
    resp = cloud.compute.post(f"/os-aggregates/{agg_id}/action",
                              json={"add_host": {"host": "nohost"}})
    assert error(resp, 404) == "Compute host nohost could not be found."
    act(cloud, agg_id, {"add_host": {"host": "host2"}})
    # The metadata makes the aggregate a zone: its hosts' services move there.
    shown = act(cloud, agg_id, {"set_metadata": {"metadata": {
        "availability_zone": "az1", "ssd": "true"}}})["aggregate"]
    assert shown["availability_zone"] == "az1"
    services = cloud.compute.get("/os-services", params={"binary": "nova-compute"}).json()
    assert {s["host"]: s["zone"] for s in services["services"]} == {
        "host1": "az1", "host2": "az1", "host3": "nova"}
    # A host is in one zone only.
    other = create(cloud, "rack2", "az2")["id"]
    resp = cloud.compute.post(f"/os-aggregates/{other}/action",
                              json={"add_host": {"host": "host1"}})
    assert error(resp, 409) == (f"Cannot add host to aggregate {other}. Reason: One or more "
                                "hosts already in availability zone(s) ['az1'].")
    plain = create(cloud, "plain")["id"]
    act(cloud, plain, {"add_host": {"host": "host1"}})
    resp = cloud.compute.post(f"/os-aggregates/{plain}/action", json={
        "set_metadata": {"metadata": {"availability_zone": "az2"}}})
    assert error(resp, 400).startswith(f"Cannot update metadata of aggregate {plain}. Reason: "
                                       "One or more hosts already in availability zone(s)")
    resp = cloud.compute.post(f"/os-aggregates/{agg_id}/action", json={
        "set_metadata": {"metadata": {"availability_zone": None}}})
    assert error(resp, 400) == (f"Cannot update metadata of aggregate {agg_id}. Reason: "
                                "Aggregate rack1 does not support empty named availability "
                                "zone.")
    # A null value deletes its key.
    shown = act(cloud, agg_id, {"set_metadata": {"metadata": {"ssd": None}}})["aggregate"]
    assert shown["metadata"] == {"availability_zone": "az1"}
    resp = cloud.compute.delete(f"/os-aggregates/{agg_id}")
    assert error(resp, 400) == (f"Cannot delete aggregate {agg_id}. Reason: Host aggregate is "
                                "not empty.")
    act(cloud, agg_id, {"remove_host": {"host": "host1"}})
    assert agg_uuid not in rp_aggregates(cloud, hosts["host1"])
    assert agg_uuid in rp_aggregates(cloud, hosts["host2"])
    resp = cloud.compute.post(f"/os-aggregates/{agg_id}/action",
                              json={"remove_host": {"host": "host1"}})
    assert error(resp, 404) == f"Cannot remove host host1 in aggregate {agg_id}"
    # The agent's next report keeps the aggregates os-aggregates put on its provider.
    cloud.plane.agents["host2"].update_available_resource()
    assert agg_uuid in rp_aggregates(cloud, hosts["host2"])


def test_zone_listing(cloud: Cloud, hosts: dict[str, str]) -> None:
    register_controller_services(cloud.live.cell_db, "ctl")  # nova-conductor, nova-scheduler
    agg_id = create(cloud, "rack1", "az1")["id"]
    act(cloud, agg_id, {"add_host": {"host": "host1"}})
    resp = cloud.compute.put("/os-services/" + _service_id(cloud, "host3"),
                             json={"status": "disabled"})
    assert resp.status_code == 200, resp.text
    with cloud.client("demo:p1", roles=("reader",)) as reader:
        zones = reader.get("/os-availability-zone").json()["availabilityZoneInfo"]
    assert zones == [{"zoneName": "az1", "zoneState": {"available": True}, "hosts": None},
                     {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None}]
    detail = cloud.compute.get("/os-availability-zone/detail").json()["availabilityZoneInfo"]
    by_name = {z["zoneName"]: z for z in detail}
    assert set(by_name) == {"az1", "nova", "internal"}
    assert set(by_name["az1"]["hosts"]) == {"host1"}
    assert set(by_name["nova"]["hosts"]) == {"host2"}
    state = by_name["az1"]["hosts"]["host1"]["nova-compute"]
    assert state["available"] is True and state["active"] is True and state["updated_at"]
    assert set(by_name["internal"]["hosts"]["ctl"]) == {"nova-conductor", "nova-scheduler"}
    # A hosts-file zone holds until a zone aggregate takes the host, and again after.
    cloud.add_host("host4", availability_zone="hz")
    assert _zone_of(cloud, "host4") == "hz"
    act(cloud, agg_id, {"add_host": {"host": "host4"}})
    assert _zone_of(cloud, "host4") == "az1"
    act(cloud, agg_id, {"remove_host": {"host": "host4"}})
    assert _zone_of(cloud, "host4") == "hz"


def _zone_of(cloud: Cloud, host: str) -> str:
    found = cloud.compute.get("/os-services", params={"host": host,
                                                      "binary": "nova-compute"}).json()
    return str(found["services"][0]["zone"])


def _service_id(cloud: Cloud, host: str) -> str:
    found = cloud.compute.get("/os-services", params={"host": host,
                                                      "binary": "nova-compute"}).json()
    return str(found["services"][0]["id"])


def test_boot_into_aggregate_zone(cloud: Cloud, hosts: dict[str, str]) -> None:
    agg_id = create(cloud, "rack1", "az1")["id"]
    act(cloud, agg_id, {"add_host": {"host": "host2"}})
    small, img = flavor(cloud, "small", 1, 128, 1), image(cloud)
    placed = {server(cloud, boot(cloud, f"s{i}", small, img, availability_zone="az1"))[
        "OS-EXT-SRV-ATTR:host"] for i in range(3)}
    assert placed == {"host2"}
    first = boot(cloud, "in-zone", small, img, availability_zone="az1")
    assert server(cloud, first)["OS-EXT-AZ:availability_zone"] == "az1"
    resp = cloud.compute.post("/servers", json={"server": {
        "name": "x", "flavorRef": small, "imageRef": img, "networks": "none",
        "availability_zone": "nowhere"}})
    assert error(resp, 400) == "The requested availability zone is not available"
    # The zone cannot be renamed under the instances of its hosts.
    resp = cloud.compute.put(f"/os-aggregates/{agg_id}",
                             json={"aggregate": {"availability_zone": "az2"}})
    assert error(resp, 400) == (f"Cannot update aggregate {agg_id}. Reason: One or more hosts "
                                "contain instances in this zone.")
    assert cloud.compute.get(f"/os-aggregates/{agg_id}").json()["aggregate"][
        "availability_zone"] == "az1"


def test_zone_prefilter_and_extra_specs_filter(cloud: Cloud, hosts: dict[str, str]) -> None:
    zone = create(cloud, "rack1", "az1")["id"]
    act(cloud, zone, {"add_host": {"host": "host3"}})
    fast = create(cloud, "fast")["id"]
    act(cloud, fast, {"add_host": {"host": "host1"}})
    act(cloud, fast, {"set_metadata": {"metadata": {"ssd": "true"}}})
    img = image(cloud)
    # Without AvailabilityZoneFilter, the zone's aggregates in the Placement query
    # (member_of) are what keeps the servers in the zone.
    cloud.configure(enabled_filters=("ComputeFilter", "AggregateInstanceExtraSpecsFilter"))
    small = flavor(cloud, "small", 1, 128, 1)
    assert {server(cloud, boot(cloud, f"z{i}", small, img, availability_zone="az1"))[
        "OS-EXT-SRV-ATTR:host"] for i in range(2)} == {"host3"}
    ssd = flavor(cloud, "ssd", 1, 128, 1, {"aggregate_instance_extra_specs:ssd": "<in> true"})
    assert {server(cloud, boot(cloud, f"s{i}", ssd, img))["OS-EXT-SRV-ATTR:host"]
            for i in range(2)} == {"host1"}
    act(cloud, fast, {"set_metadata": {"metadata": {"ssd": "false"}}})
    failed = server(cloud, boot(cloud, "nowhere", ssd, img))
    assert failed["status"] == "ERROR"


def test_racing_admins_cannot_give_a_host_two_zones(cloud: Cloud,
                                                    hosts: dict[str, str]) -> None:
    ids = [create(cloud, f"rack{z}", f"az{z}")["id"] for z in (1, 2)]

    def add(agg_id: int) -> int:
        with cloud.client("admin") as client:
            return client.post(f"/os-aggregates/{agg_id}/action",
                               json={"add_host": {"host": "host1"}}).status_code

    with ThreadPoolExecutor(2) as pool:
        statuses = sorted(pool.map(add, ids * 3))
    assert statuses.count(200) == 1 and set(statuses) == {200, 409}
    members = [cloud.compute.get(f"/os-aggregates/{i}").json()["aggregate"]["hosts"]
               for i in ids]
    assert sorted(members) == [[], ["host1"]]


def test_tenant_isolation_prefilter(cloud: Cloud, hosts: dict[str, str]) -> None:
    mine = create(cloud, "p1-only")["id"]
    act(cloud, mine, {"add_host": {"host": "host2"}})
    act(cloud, mine, {"set_metadata": {"metadata": {"filter_tenant_id": "other",
                                                    "filter_tenant_id2": "p1"}}})
    cloud.configure(limit_tenants_to_placement_aggregate=True,
                    placement_aggregate_required_for_tenants=True)
    small, img = flavor(cloud, "small", 1, 128, 1), image(cloud, visibility="public")
    with cloud.client("demo:p1", roles=("member", "reader")) as p1, \
            cloud.client("demo:p2", roles=("member", "reader")) as p2:
        placed = {server(cloud, boot(cloud, f"p1-{i}", small, img, client=p1))[
            "OS-EXT-SRV-ATTR:host"] for i in range(2)}
        assert placed == {"host2"}
        assert server(cloud, boot(cloud, "p2", small, img, client=p2))["status"] == "ERROR"
