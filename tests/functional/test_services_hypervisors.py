"""os-services and os-hypervisors over HTTP, per microversion, admin only.

Two simulated hosts and the controller services; tests age heartbeats by
writing `last_seen_up` directly, as time passing would::

    host1 (nova-compute, az1)   host2 (nova-compute)   ctl (nova-conductor, nova-scheduler)
"""

from __future__ import annotations

import datetime
import json
import uuid as uuidlib
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from stowage.compute import instances, services, states
from stowage.compute import tables as t
from tests.functional.conftest import MEMBER, Cloud

FLAVOR = {"id": 1, "flavorid": "1", "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


def at(version: str) -> dict[str, str]:
    return {"openstack-api-version": f"compute {version}"}


@pytest.fixture
def hosts(cloud: Cloud) -> dict[str, str]:
    nodes = {"host1": cloud.add_host("host1", vcpus=8, availability_zone="az1"),
             "host2": cloud.add_host("host2")}
    services.register_controller_services(cloud.live.cell_db, "ctl")
    return nodes


def service_list(cloud: Cloud, version: str = "latest", **params: str) -> list[dict[str, Any]]:
    resp = cloud.compute.get("/os-services", params=params, headers=at(version))
    assert resp.status_code == 200, resp.text
    return list(resp.json()["services"])


def compute_service(cloud: Cloud, host: str, version: str = "latest") -> dict[str, Any]:
    (found,) = service_list(cloud, version, host=host, binary="nova-compute")
    return found


def traits(cloud: Cloud, rp: str) -> set[str]:
    return set(cloud.placement.get(f"/resource_providers/{rp}/traits").json()["traits"])


def fault(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    (body,) = resp.json().values()
    assert body["code"] == status
    return str(body["message"])


def age_heartbeat(cloud: Cloud, host: str, seconds: float) -> None:
    old = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(
        seconds=seconds)
    with cloud.live.cell_db.write() as conn:
        conn.execute(t.services.update().where(t.services.c.host == host)
                     .values(last_seen_up=old))


# --- os-services ---------------------------------------------------------------------
def test_service_list_per_microversion(cloud: Cloud, hosts: dict[str, str]) -> None:
    old = service_list(cloud, "2.1")
    assert sorted((s["binary"], s["host"], s["zone"]) for s in old) == [
        ("nova-compute", "host1", "az1"), ("nova-compute", "host2", "nova"),
        ("nova-conductor", "ctl", "internal"), ("nova-scheduler", "ctl", "internal")]
    assert all(isinstance(s["id"], int) and "forced_down" not in s for s in old)
    assert set(old[0]) == {"binary", "host", "id", "zone", "status", "state", "updated_at",
                           "disabled_reason"}
    assert all(s["forced_down"] is False for s in service_list(cloud, "2.11"))
    latest = service_list(cloud)
    assert all(uuidlib.UUID(s["id"]) for s in latest)
    assert {(s["state"], s["status"]) for s in latest} == {("up", "enabled")}


def test_service_list_filters(cloud: Cloud, hosts: dict[str, str]) -> None:
    assert [s["binary"] for s in service_list(cloud, host="ctl")] == [
        "nova-conductor", "nova-scheduler"]
    assert sorted(s["host"] for s in service_list(cloud, binary="nova-compute")) == [
        "host1", "host2"]
    assert service_list(cloud, host="nowhere") == []
    resp = cloud.compute.get("/os-services", params={"flavor": "x"}, headers=at("2.75"))
    assert "Invalid input for query parameters" in fault(resp, 400)
    assert service_list(cloud, "2.74", flavor="x")


def test_stale_heartbeat_is_down(cloud: Cloud, hosts: dict[str, str]) -> None:
    age_heartbeat(cloud, "host2", 3600)
    assert compute_service(cloud, "host2")["state"] == "down"
    assert compute_service(cloud, "host1")["state"] == "up"
    cloud.plane.agent("host2").heartbeat()
    assert compute_service(cloud, "host2")["state"] == "up"


def test_disable_and_enable_by_uuid_sync_the_status_trait(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    service_id = compute_service(cloud, "host1")["id"]
    resp = cloud.compute.put(f"/os-services/{service_id}",
                             json={"status": "disabled", "disabled_reason": "maintenance"})
    assert resp.status_code == 200, resp.text
    shown = resp.json()["service"]
    assert (shown["id"], shown["status"], shown["disabled_reason"], shown["state"],
            shown["forced_down"]) == (service_id, "disabled", "maintenance", "up", False)
    assert "COMPUTE_STATUS_DISABLED" in traits(cloud, hosts["host1"])
    assert "COMPUTE_STATUS_DISABLED" not in traits(cloud, hosts["host2"])
    cloud.plane.agent("host1").update_available_resource()
    assert "COMPUTE_STATUS_DISABLED" in traits(cloud, hosts["host1"])
    hyp = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}").json()["hypervisor"]
    assert (hyp["status"], hyp["service"]["disabled_reason"]) == ("disabled", "maintenance")

    resp = cloud.compute.put(f"/os-services/{service_id}", json={"status": "enabled"})
    assert resp.json()["service"]["status"] == "enabled"
    assert resp.json()["service"]["disabled_reason"] is None
    assert "COMPUTE_STATUS_DISABLED" not in traits(cloud, hosts["host1"])


def test_the_agent_restores_the_status_trait(cloud: Cloud, hosts: dict[str, str]) -> None:
    with cloud.live.cell_db.write() as conn:
        found = services.service_by_host(conn, "host2", services.COMPUTE)
        services.update_service(conn, found.id, disabled=True)
    assert "COMPUTE_STATUS_DISABLED" not in traits(cloud, hosts["host2"])
    cloud.plane.agent("host2").update_available_resource()
    assert "COMPUTE_STATUS_DISABLED" in traits(cloud, hosts["host2"])


def test_forced_down_by_uuid(cloud: Cloud, hosts: dict[str, str]) -> None:
    service_id = compute_service(cloud, "host2")["id"]
    resp = cloud.compute.put(f"/os-services/{service_id}", json={"forced_down": True})
    shown = resp.json()["service"]
    assert (shown["forced_down"], shown["state"], shown["status"]) == (True, "down", "enabled")
    cloud.plane.agent("host2").heartbeat()
    assert compute_service(cloud, "host2")["state"] == "down"
    resp = cloud.compute.put(f"/os-services/{service_id}", json={"forced_down": "false"})
    assert resp.json()["service"]["state"] == "up"


def test_old_style_updates_by_host_and_binary(cloud: Cloud, hosts: dict[str, str]) -> None:
    body = {"host": "host1", "binary": "nova-compute"}
    resp = cloud.compute.put("/os-services/disable", json=body, headers=at("2.1"))
    assert resp.json() == {"service": {**body, "status": "disabled"}}
    assert "COMPUTE_STATUS_DISABLED" in traits(cloud, hosts["host1"])
    resp = cloud.compute.put("/os-services/disable-log-reason", headers=at("2.1"),
                             json={**body, "disabled_reason": "broken fan"})
    assert resp.json() == {"service": {**body, "status": "disabled",
                                       "disabled_reason": "broken fan"}}
    assert compute_service(cloud, "host1")["disabled_reason"] == "broken fan"
    resp = cloud.compute.put("/os-services/enable", json=body, headers=at("2.1"))
    assert resp.json() == {"service": {**body, "status": "enabled"}}
    assert "COMPUTE_STATUS_DISABLED" not in traits(cloud, hosts["host1"])
    resp = cloud.compute.put("/os-services/force-down", headers=at("2.11"),
                             json={**body, "forced_down": True})
    assert resp.json() == {"service": {**body, "forced_down": True}}
    assert compute_service(cloud, "host1")["state"] == "down"


@pytest.mark.parametrize(("version", "path", "body", "status", "message"), [
    ("2.1", "force-down", {"host": "host1", "binary": "nova-compute", "forced_down": True},
     404, "Unknown action"),
    ("2.11", "force-down", {"host": "host1", "binary": "nova-compute"}, 400,
     "Missing forced_down field"),
    ("2.1", "disable-log-reason", {"host": "host1", "binary": "nova-compute"}, 400,
     "Missing disabled reason field"),
    ("2.1", "reboot", {"host": "host1", "binary": "nova-compute"}, 404, "Unknown action"),
    ("2.1", "disable", {"host": "nowhere", "binary": "nova-compute"}, 404,
     "Could not find binary nova-compute on host nowhere."),
    ("2.1", "disable", {"host": "ctl", "binary": "nova-scheduler"}, 400,
     "Updating a nova-scheduler service is not supported. Only nova-compute services "
     "can be updated."),
    ("2.1", "disable", {"host": "host1"}, 400, "Invalid input for field/attribute"),
    ("2.53", "disable", {"status": "disabled"}, 400, "Invalid uuid disable"),
])
def test_update_errors(cloud: Cloud, hosts: dict[str, str], version: str, path: str,
                       body: dict[str, Any], status: int, message: str) -> None:
    resp = cloud.compute.put(f"/os-services/{path}", json=body, headers=at(version))
    assert message in fault(resp, status)
    assert {s["status"] for s in service_list(cloud)} == {"enabled"}


def test_update_by_uuid_errors(cloud: Cloud, hosts: dict[str, str]) -> None:
    compute_id = compute_service(cloud, "host1")["id"]
    (scheduler,) = service_list(cloud, binary="nova-scheduler")
    cases = [
        (compute_id, {}, 400, "No updates were requested. Fields 'status' or 'forced_down' "
                              "should be specified."),
        (compute_id, {"disabled_reason": "x"}, 400, "No updates were requested"),
        (compute_id, {"status": "enabled", "disabled_reason": "x"}, 400,
         "Specifying 'disabled_reason' with status 'enabled' is invalid."),
        (compute_id, {"status": "off"}, 400, "Invalid input for field/attribute status"),
        (scheduler["id"], {"status": "disabled"}, 400,
         "Updating a nova-scheduler service is not supported."),
        (str(uuidlib.uuid4()), {"status": "disabled"}, 404, "could not be found"),
    ]
    for ident, body, status, message in cases:
        resp = cloud.compute.put(f"/os-services/{ident}", json=body)
        assert message in fault(resp, status), body
    assert compute_service(cloud, "host1")["status"] == "enabled"


def test_delete_refuses_a_host_with_instances(cloud: Cloud, hosts: dict[str, str]) -> None:
    with cloud.live.cell_db.write() as conn:
        instances.create(conn, instances.Instance(
            uuid=str(uuidlib.uuid4()), project_id="p", user_id="u", display_name="vm",
            flavor=FLAVOR, vm_state=states.ACTIVE, host="host1", reservation_id="r"))
    service_id = compute_service(cloud, "host1")["id"]
    resp = cloud.compute.delete(f"/os-services/{service_id}")
    assert fault(resp, 409) == ("Unable to delete compute service that is hosting instances. "
                                "Migrate or delete the instances first.")


def test_delete_a_stopped_host(cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.plane.stop_host("host2")
    service_id = compute_service(cloud, "host2", "2.1")["id"]
    assert cloud.compute.delete(f"/os-services/{service_id}", headers=at("2.1")).status_code \
        == 204
    assert [s["host"] for s in service_list(cloud, binary="nova-compute")] == ["host1"]
    assert cloud.placement.get(f"/resource_providers/{hosts['host2']}").status_code == 404
    names = [h["hypervisor_hostname"] for h in
             cloud.compute.get("/os-hypervisors").json()["hypervisors"]]
    assert names == ["host1"]
    resp = cloud.compute.delete(f"/os-services/{service_id}", headers=at("2.1"))
    assert fault(resp, 404) == f"Service {service_id} not found."
    assert "must be an integer" in fault(
        cloud.compute.delete("/os-services/abc", headers=at("2.1")), 400)
    assert fault(cloud.compute.delete("/os-services/abc"), 400) == "Invalid uuid abc"


@pytest.mark.parametrize("service_id", ["2147483648", "9223372036854775808", "0", "-1"])
def test_delete_an_id_no_service_can_have_is_404(cloud: Cloud, hosts: dict[str, str],
                                                 service_id: str) -> None:
    """An integer beyond the id column (SQLite's driver cannot even send it) names nothing."""
    resp = cloud.compute.delete(f"/os-services/{service_id}", headers=at("2.52"))
    assert fault(resp, 404) == f"Service {service_id} not found."
    assert len(service_list(cloud, binary="nova-compute")) == 2


# --- os-hypervisors ------------------------------------------------------------------
def test_hypervisor_list_per_microversion(cloud: Cloud, hosts: dict[str, str]) -> None:
    old = cloud.compute.get("/os-hypervisors", headers=at("2.1")).json()
    assert sorted(old) == ["hypervisors"]
    assert [set(h) for h in old["hypervisors"]] == [
        {"id", "hypervisor_hostname", "state", "status"}] * 2
    assert all(isinstance(h["id"], int) for h in old["hypervisors"])
    latest = cloud.compute.get("/os-hypervisors").json()["hypervisors"]
    assert {h["hypervisor_hostname"]: h["id"] for h in latest} == hosts


def test_hypervisor_detail_fields(cloud: Cloud, hosts: dict[str, str]) -> None:
    (one,) = [h for h in cloud.compute.get("/os-hypervisors/detail", headers=at("2.27"))
              .json()["hypervisors"] if h["hypervisor_hostname"] == "host1"]
    assert set(one) == {
        "id", "hypervisor_hostname", "state", "status", "hypervisor_type",
        "hypervisor_version", "host_ip", "service", "vcpus", "memory_mb", "local_gb",
        "vcpus_used", "memory_mb_used", "local_gb_used", "free_ram_mb", "free_disk_gb",
        "current_workload", "running_vms", "disk_available_least", "cpu_info"}
    assert json.loads(one["cpu_info"])["topology"]["cores"] == 8
    assert isinstance(one["service"]["id"], int) and one["service"]["host"] == "host1"
    shown = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}",
                              headers=at("2.87")).json()["hypervisor"]
    assert shown["cpu_info"]["arch"] == "x86_64"
    assert uuidlib.UUID(shown["service"]["id"])
    assert (shown["vcpus"], shown["state"], shown["host_ip"]) == (8, "up", "127.0.0.1")


def test_hypervisor_state_follows_the_service(cloud: Cloud, hosts: dict[str, str]) -> None:
    age_heartbeat(cloud, "host2", 3600)
    states_by_name = {h["hypervisor_hostname"]: h["state"]
                      for h in cloud.compute.get("/os-hypervisors").json()["hypervisors"]}
    assert states_by_name == {"host1": "up", "host2": "down"}


def test_hypervisor_paging(cloud: Cloud, hosts: dict[str, str]) -> None:
    first = cloud.compute.get("/os-hypervisors", params={"limit": 1}).json()
    assert [h["hypervisor_hostname"] for h in first["hypervisors"]] == ["host1"]
    (link,) = first["hypervisors_links"]
    assert link["rel"] == "next" and f"marker={hosts['host1']}" in link["href"]
    rest = cloud.compute.get("/os-hypervisors", params={"limit": 1, "marker": hosts["host1"]})
    assert [h["hypervisor_hostname"] for h in rest.json()["hypervisors"]] == ["host2"]
    resp = cloud.compute.get("/os-hypervisors/detail", params={"marker": "nope"})
    assert fault(resp, 400) == "marker [nope] not found"
    resp = cloud.compute.get("/os-hypervisors", params={"hypervisor_hostname_pattern": "host",
                                                         "limit": 1})
    assert "Paging over hypervisors" in fault(resp, 400)
    assert "hypervisors_links" not in cloud.compute.get(
        "/os-hypervisors", headers=at("2.32"), params={"limit": 1}).json()


def test_hostname_pattern_and_servers(cloud: Cloud, hosts: dict[str, str]) -> None:
    uuid = str(uuidlib.uuid4())
    with cloud.live.cell_db.write() as conn:
        instances.create(conn, instances.Instance(
            uuid=uuid, project_id="p", user_id="u", display_name="web", flavor=FLAVOR,
            vm_state=states.ACTIVE, host="host1", reservation_id="r"))
    found = cloud.compute.get("/os-hypervisors", params={
        "hypervisor_hostname_pattern": "st1", "with_servers": "true"}).json()["hypervisors"]
    assert [(h["hypervisor_hostname"], h["servers"]) for h in found] == [
        ("host1", [{"name": "web", "uuid": uuid}])]
    empty = cloud.compute.get("/os-hypervisors", params={
        "hypervisor_hostname_pattern": "host2", "with_servers": "1"}).json()["hypervisors"]
    assert empty[0]["servers"] == []
    empty = cloud.compute.get("/os-hypervisors", headers=at("2.74"), params={
        "hypervisor_hostname_pattern": "host2", "with_servers": "1"}).json()["hypervisors"]
    assert "servers" not in empty[0]
    resp = cloud.compute.get("/os-hypervisors", params={"hypervisor_hostname_pattern": "zz"})
    assert fault(resp, 404) == "No hypervisor matching 'zz' could be found."
    shown = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}",
                              params={"with_servers": "yes"}).json()["hypervisor"]
    assert shown["servers"] == [{"name": "web", "uuid": uuid}]
    assert "Invalid input for query parameters" in fault(cloud.compute.get(
        "/os-hypervisors", params={"bogus": "1"}), 400)


def test_search_and_servers_routes_before_2_53(cloud: Cloud, hosts: dict[str, str]) -> None:
    found = cloud.compute.get("/os-hypervisors/host/search", headers=at("2.52"))
    assert sorted(h["hypervisor_hostname"] for h in found.json()["hypervisors"]) == [
        "host1", "host2"]
    servers = cloud.compute.get("/os-hypervisors/host2/servers", headers=at("2.52"))
    assert [set(h) for h in servers.json()["hypervisors"]] == [
        {"id", "hypervisor_hostname", "state", "status"}]
    assert fault(cloud.compute.get("/os-hypervisors/zz/search", headers=at("2.52")), 404) \
        == "No hypervisor matching 'zz' could be found."
    assert cloud.compute.get("/os-hypervisors/host/search").status_code == 404


def test_show_errors(cloud: Cloud, hosts: dict[str, str]) -> None:
    assert fault(cloud.compute.get("/os-hypervisors/123"), 400) == "Invalid uuid 123"
    missing = str(uuidlib.uuid4())
    assert fault(cloud.compute.get(f"/os-hypervisors/{missing}"), 404) == (
        f"Hypervisor with ID '{missing}' could not be found.")
    assert fault(cloud.compute.get("/os-hypervisors/abc", headers=at("2.1")), 404) == (
        "Hypervisor with ID 'abc' could not be found.")


def test_statistics_and_uptime(cloud: Cloud, hosts: dict[str, str]) -> None:
    v287 = at("2.87")  # both routes are gone from 2.88
    stats = cloud.compute.get("/os-hypervisors/statistics", headers=v287).json()[
        "hypervisor_statistics"]
    assert (stats["count"], stats["vcpus"], stats["running_vms"]) == (2, 24, 0)
    service_id = compute_service(cloud, "host2")["id"]
    cloud.compute.put(f"/os-services/{service_id}", json={"status": "disabled"})
    stats = cloud.compute.get("/os-hypervisors/statistics", headers=v287).json()[
        "hypervisor_statistics"]
    assert (stats["count"], stats["vcpus"]) == (1, 8)
    uptime = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}/uptime", headers=v287).json()
    assert " up 0 days" in uptime["hypervisor"]["uptime"]
    age_heartbeat(cloud, "host1", 3600)
    resp = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}/uptime", headers=v287)
    assert fault(resp, 400) == "Compute service of host1 is unavailable at this time."


def test_2_88_drops_usage_and_routes_and_shows_uptime(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    for path in ("/os-hypervisors/statistics", f"/os-hypervisors/{hosts['host1']}/uptime"):
        assert fault(cloud.compute.get(path), 404) == "The resource could not be found."
    shown = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}").json()["hypervisor"]
    assert set(shown) == {"id", "hypervisor_hostname", "state", "status", "hypervisor_type",
                          "hypervisor_version", "host_ip", "service", "uptime"}
    assert " up 0 days" in shown["uptime"]
    listed = cloud.compute.get("/os-hypervisors/detail").json()["hypervisors"]
    assert all(set(h) == set(shown) for h in listed)
    v287 = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}", headers=at("2.87")).json()
    assert "uptime" not in v287["hypervisor"] and v287["hypervisor"]["vcpus"] == 8
    age_heartbeat(cloud, "host1", 3600)
    down = cloud.compute.get(f"/os-hypervisors/{hosts['host1']}").json()["hypervisor"]
    assert (down["state"], down["uptime"]) == ("down", None)


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/os-services"), ("PUT", "/os-services/disable"), ("DELETE", "/os-services/1"),
    ("GET", "/os-hypervisors"), ("GET", "/os-hypervisors/detail"),
    ("GET", "/os-hypervisors/statistics"), ("GET", "/os-hypervisors/1"),
])
def test_non_admin_is_forbidden(cloud: Cloud, hosts: dict[str, str], method: str,
                                path: str) -> None:
    with cloud.client("alice:proj-a", version="2.1", roles=MEMBER) as alice:
        resp = alice.request(method, path, json={"host": "host1", "binary": "nova-compute"}
                             if method == "PUT" else None)
    assert fault(resp, 403).startswith("Policy does not allow os_compute_api:")
    assert {s["status"] for s in service_list(cloud)} == {"enabled"}


def test_services_table_holds_one_live_row_per_host_and_binary(
        cloud: Cloud, hosts: dict[str, str]) -> None:
    cloud.plane.stop_host("host1")
    cloud.add_host("host1", availability_zone="az2")
    with cloud.live.cell_db.read() as conn:
        rows = conn.execute(sa.select(t.services.c.availability_zone).where(
            t.services.c.host == "host1", t.services.c.deleted == 0)).all()
    assert [r.availability_zone for r in rows] == ["az2"]
