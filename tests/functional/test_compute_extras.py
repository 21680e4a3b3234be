"""The smaller Compute APIs over HTTP: os-hosts, the usage audit log, /extensions,
a server's /ips, its os-server-password and the ip/ip6 list filters.

Servers here are stored records (serverdata.py) on a simulated host1; their
ports are `instance_ports` rows with the addresses the conductor would write::

    host1 (simulated, VCPU 16, MEMORY_MB 32768, DISK_GB 1000)
     ├── vm-a  project p1  ports: net-a 10.0.0.5, net-b 10.1.0.7 + 2001:db8::7
     └── vm-b  project p2  ports: net-a 10.0.0.51
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from typing import Any

from stowage.compute import instance_ports
from stowage.compute import services as svc
from stowage.compute.api.extensions import EXTENSIONS
from stowage.compute.instance_ports import Requested
from tests.functional.conftest import Cloud
from tests.functional.serverdata import at, instance, member, reader, stored_server


def _ip(address: str) -> dict[str, Any]:
    return {"address": address, "version": 6 if ":" in address else 4}


def _with_ports(cloud: Cloud, server: str, *vifs: tuple[str, list[str]]) -> None:
    """Give a stored server one port per (network name, addresses), in order."""
    ports = [str(uuidlib.uuid4()) for _ in vifs]
    with cloud.live.cell_db.write() as conn:
        instance_ports.record_requested(conn, server, [Requested(port_id=p) for p in ports])
        for port, (network, addresses) in zip(ports, vifs, strict=True):
            instance_ports.set_vif(conn, server, port, {
                "network": network, "mac": "fa:16:3e:00:00:0" + str(len(addresses)),
                "ips": [_ip(a) for a in addresses]})


def _world(cloud: Cloud) -> tuple[str, str]:
    cloud.add_host("host1")
    a = stored_server(cloud, display_name="vm-a")
    b = stored_server(cloud, project="p2", display_name="vm-b")
    _with_ports(cloud, a, ("net-a", ["10.0.0.5"]), ("net-b", ["10.1.0.7", "2001:db8::7"]))
    _with_ports(cloud, b, ("net-a", ["10.0.0.51"]))
    return a, b


def test_ips_and_the_ip_filters(cloud: Cloud) -> None:
    a, b = _world(cloud)
    with reader(cloud) as alice:
        assert alice.get(f"/servers/{a}/ips").json() == {"addresses": {
            "net-a": [{"version": 4, "addr": "10.0.0.5"}],
            "net-b": [{"version": 4, "addr": "10.1.0.7"}, {"version": 6, "addr": "2001:db8::7"}]}}
        assert alice.get(f"/servers/{a}/ips/net-b").json() == {"net-b": [
            {"version": 4, "addr": "10.1.0.7"}, {"version": 6, "addr": "2001:db8::7"}]}
        missing = alice.get(f"/servers/{a}/ips/net-c")
        assert (missing.status_code, missing.json()["itemNotFound"]["message"]) == \
            (404, "Instance is not a member of specified network")
        assert alice.get(f"/servers/{b}/ips").status_code == 404  # another project's

    def listed(**params: str) -> set[str]:
        resp = cloud.compute.get("/servers", params={"all_tenants": "1", **params})
        assert resp.status_code == 200, resp.text
        return {s["id"] for s in resp.json()["servers"]}
    # Anchored at the start of the address, as Nova's in-memory filter matches.
    assert listed(ip="10.0.0.5") == {a, b}
    assert listed(ip="10.0.0.51") == {b}
    assert listed(ip="10.1") == {a}
    assert listed(ip="0.0.5") == set()
    assert listed(ip=r"10\.0\.0\.5$") == {a}
    assert listed(ip6="2001:db8::7") == {a}
    assert listed(ip6="10.0") == set()  # an IPv4 address never matches ip6
    assert cloud.compute.get("/servers", params={"ip": "(a"}).status_code == 400


def test_server_password_is_read_and_cleared(cloud: Cloud) -> None:
    cloud.add_host("host1")
    chunks = {"password_0": "x" * 255, "password_1": "yz", "shelved_image_id": "keep"}
    server = stored_server(cloud, system_metadata=chunks)
    plain = stored_server(cloud)
    path = f"/servers/{server}/os-server-password"
    with reader(cloud) as viewer:
        assert viewer.get(path).json() == {"password": "x" * 255 + "yz"}
        assert viewer.get(f"/servers/{plain}/os-server-password").json() == {"password": ""}
        assert viewer.delete(path).status_code == 403  # readers do not clear it
    with member(cloud) as alice:
        assert alice.delete(path).status_code == 204
        assert alice.get(path).json() == {"password": ""}
    meta = instance(cloud, server).system_metadata or {}
    assert meta["shelved_image_id"] == "keep"
    assert [meta[f"password_{n}"] for n in range(4)] == ["", "", "", ""]


def test_os_hosts(cloud: Cloud) -> None:
    a, b = _world(cloud)
    cloud.add_host("host2", availability_zone="az2")
    hosts = cloud.compute.get("/os-hosts", headers=at("2.42")).json()["hosts"]
    assert {"host_name": "host1", "service": "compute", "zone": "nova"} in hosts
    assert {"host_name": "host2", "service": "compute", "zone": "az2"} in hosts
    assert {h["zone"] for h in hosts if h["service"] != "compute"} <= {"internal"}
    zoned = cloud.compute.get("/os-hosts", params={"zone": "az2"}, headers=at("2.42"))
    assert zoned.json()["hosts"] == [{"host_name": "host2", "service": "compute",
                                      "zone": "az2"}]
    # An aggregate's zone (the API database's) is the host's zone too.
    agg = cloud.compute.post("/os-aggregates", json={"aggregate": {
        "name": "rack1", "availability_zone": "az1"}}).json()["aggregate"]["id"]
    assert cloud.compute.post(f"/os-aggregates/{agg}/action",
                              json={"add_host": {"host": "host1"}}).status_code == 200
    listed = cloud.compute.get("/os-hosts", params={"zone": "az1"}, headers=at("2.42"))
    assert listed.json()["hosts"] == [{"host_name": "host1", "service": "compute",
                                       "zone": "az1"}]
    rows = [r["resource"] for r in
            cloud.compute.get("/os-hosts/host1", headers=at("2.1")).json()["host"]]
    assert rows[0] == {"host": "host1", "project": "(total)", "cpu": 16, "memory_mb": 32768,
                       "disk_gb": 1000}
    assert rows[1]["project"] == "(used_now)"
    assert rows[2] == {"host": "host1", "project": "(used_max)", "cpu": 2, "memory_mb": 1024,
                       "disk_gb": 2}
    assert sorted(rows[3:], key=lambda r: r["project"]) == [
        {"host": "host1", "project": p, "cpu": 1, "memory_mb": 512, "disk_gb": 1}
        for p in ("p1", "p2")]
    assert cloud.compute.get("/os-hosts/nohost", headers=at("2.42")).status_code == 404
    assert cloud.compute.get("/os-hosts", headers=at("2.43")).status_code == 404
    with reader(cloud, version="2.1") as alice:
        assert alice.get("/os-hosts").status_code == 403


def _disabled(cloud: Cloud, host: str) -> bool:
    with cloud.live.cell_db.read() as conn:
        service = svc.compute_service(conn, host)
    assert service is not None
    return service.disabled


def test_os_hosts_update_and_power_actions(cloud: Cloud) -> None:
    cloud.add_host("host1")
    old = at("2.42")
    off = cloud.compute.put("/os-hosts/host1", json={"status": "disable"}, headers=old)
    assert (off.status_code, off.json()) == (200, {"host": "host1", "status": "disabled"})
    assert _disabled(cloud, "host1")
    assert "host1" not in {h["host_name"] for h in
                           cloud.compute.get("/os-hosts", headers=old).json()["hosts"]}
    # Maintenance mode is a driver feature: 501, and the status asked with it is not set.
    both = cloud.compute.put("/os-hosts/host1", json={"status": "Enable",
                                                      "maintenance_mode": "enable"}, headers=old)
    assert (both.status_code, both.json()["notImplemented"]["message"]) == \
        (501, "The requested functionality is not supported.")
    assert _disabled(cloud, "host1")
    on = cloud.compute.put("/os-hosts/host1", json={"status": "ENABLE"}, headers=old)
    assert (on.status_code, on.json()) == (200, {"host": "host1", "status": "enabled"})
    assert not _disabled(cloud, "host1")
    for body in ({}, {"status": "on"}, {"status": "enable", "other": 1}):
        assert cloud.compute.put("/os-hosts/host1", json=body, headers=old).status_code == 400
    assert cloud.compute.put("/os-hosts/nohost", json={"status": "enable"},
                             headers=old).status_code == 404
    for verb in ("reboot", "shutdown", "startup"):
        assert cloud.compute.get(f"/os-hosts/host1/{verb}", headers=old).status_code == 501
        assert cloud.compute.get(f"/os-hosts/nohost/{verb}", headers=old).status_code == 404
    assert cloud.compute.put("/os-hosts/host1", json={"status": "disable"},
                             headers=at("2.43")).status_code == 404
    assert not _disabled(cloud, "host1")


def test_usage_audit_log(cloud: Cloud) -> None:
    cloud.add_host("host1")
    cloud.add_host("host2")
    cloud.compute.put("/os-services/disable", headers=at("2.52"),
                      json={"host": "host2", "binary": "nova-compute"})
    now = datetime.datetime.now(datetime.UTC)
    log = cloud.compute.get("/os-instance_usage_audit_log").json()["instance_usage_audit_logs"]
    first = datetime.datetime(now.year, now.month, 1)
    assert log["period_ending"] == str(first)
    assert log["period_beginning"] < log["period_ending"]
    assert (log["num_hosts"], log["num_hosts_done"], log["num_hosts_not_run"]) == (2, 0, 2)
    assert sorted(log["hosts_not_run"]) == ["host1", "host2"]
    assert log["overall_status"] == "0 of 2 hosts done. 0 errors."
    assert log["log"] == {}
    shown = cloud.compute.get("/os-instance_usage_audit_log/2020-03-15 10:00:00.5")
    assert shown.json()["instance_usage_audit_log"]["period_beginning"] == "2020-02-01 00:00:00"
    assert shown.json()["instance_usage_audit_log"]["period_ending"] == "2020-03-01 00:00:00"
    january = cloud.compute.get("/os-instance_usage_audit_log/2021-01-01 00:00:00").json()
    assert january["instance_usage_audit_log"]["period_beginning"] == "2020-11-01 00:00:00"
    bad = cloud.compute.get("/os-instance_usage_audit_log/yesterday")
    assert (bad.status_code, bad.json()["badRequest"]["message"]) == \
        (400, "Invalid timestamp for date yesterday")
    with reader(cloud) as alice:
        assert alice.get("/os-instance_usage_audit_log").status_code == 403


def test_extensions(cloud: Cloud) -> None:
    with reader(cloud) as alice:
        listed = alice.get("/extensions").json()["extensions"]
        assert [e["alias"] for e in listed] == [alias for alias, _, _ in EXTENSIONS]
        shown = alice.get("/extensions/os-hosts").json()["extension"]
        assert shown == {"alias": "os-hosts", "name": "Hosts",
                         "description": "Admin-only host administration.",
                         "namespace": "http://docs.openstack.org/compute/ext/fake_xml",
                         "updated": "2014-12-03T00:00:00Z", "links": []}
        assert alice.get("/extensions/os-nothing").status_code == 404
