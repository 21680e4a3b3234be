"""What the guest shows: os-getConsoleOutput, diagnostics and injectNetworkInfo over HTTP.

One real server, booted through the API onto a simulated host whose driver
keeps the guest's console log::

    host1 (simulated)
     └── vm  flavor 2 vCPUs, 1024 MB, 5 GB root + 1 GB ephemeral; one port (stored row)
"""

from __future__ import annotations

import uuid as uuidlib

from stowage.compute import instance_ports
from stowage.compute.instance_ports import Requested
from tests.functional.conftest import Cloud
from tests.functional.serverdata import at, member, reader, stored_server
from tests.functional.servers import action, boot, image, start_agent, stop_agent

MAC = "fa:16:3e:12:34:56"


def _server(cloud: Cloud) -> str:
    cloud.add_host("host1")
    resp = cloud.compute.post("/flavors", json={"flavor": {
        "name": "gc.medium", "vcpus": 2, "ram": 1024, "disk": 5, "OS-FLV-EXT-DATA:ephemeral": 1}})
    assert resp.status_code == 200, resp.text
    flavor_id = str(resp.json()["flavor"]["id"])
    server = boot(cloud, "vm", flavor_id, image(cloud, visibility="public"), client=member(cloud))
    port = str(uuidlib.uuid4())
    with cloud.live.cell_db.write() as conn:
        instance_ports.record_requested(conn, server, [Requested(port_id=port)])
        instance_ports.set_vif(conn, server, port, {
            "network": "net0", "mac": MAC, "ips": [{"address": "10.0.0.9", "version": 4}]})
    return server


def _console(cloud: Cloud, server: str, **args: object) -> str:
    resp = cloud.compute.post(f"/servers/{server}/action", json={"os-getConsoleOutput": args})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["output"])


def test_console_output_follows_the_guest(cloud: Cloud) -> None:
    server = _server(cloud)
    full = _console(cloud, server).split("\n")
    assert full[-1] == "gc.medium login: " and len(full) > 3
    assert f"uuid={server}" in full[1]
    assert _console(cloud, server, length=3).split("\n") == full[-3:]
    assert _console(cloud, server, length="-1").split("\n") == full
    assert _console(cloud, server, length=0) == ""
    for bad in ({"length": -2}, {"length": "x"}, {"length": 1.5}, {"other": 1}):
        assert cloud.compute.post(f"/servers/{server}/action",
                                  json={"os-getConsoleOutput": bad}).status_code == 400
    action(cloud, server, {"os-stop": None})
    stopped = _console(cloud, server).split("\n")  # a stopped guest's log is still there
    assert stopped[len(full):] == ["Stopping services... OK",
                                   "[   99.000000] reboot: Power down"]
    action(cloud, server, {"os-start": None})
    config = stop_agent(cloud, "host1")
    start_agent(cloud, config)  # the log is the hypervisor's: a restarted agent still has it
    restarted = _console(cloud, server).split("\n")
    assert restarted[:len(stopped)] == stopped
    assert restarted[-1] == "gc.medium login: " and len(restarted) == len(stopped) + len(full)
    with member(cloud) as alice:
        assert alice.post(f"/servers/{server}/action",
                          json={"os-getConsoleOutput": {"length": 1}}).json() == {
            "output": "gc.medium login: "}
    with reader(cloud) as viewer:
        assert viewer.post(f"/servers/{server}/action",
                           json={"os-getConsoleOutput": {}}).status_code == 403


def test_diagnostics(cloud: Cloud) -> None:
    server = _server(cloud)
    found = cloud.compute.get(f"/servers/{server}/diagnostics", headers=at("2.48")).json()
    assert isinstance(found.pop("uptime"), int)
    assert found == {
        "state": "running", "driver": "libvirt", "hypervisor": "fake", "hypervisor_os": "linux",
        "config_drive": False, "num_cpus": 2, "num_nics": 1, "num_disks": 2,
        "memory_details": {"maximum": 1024, "used": 1024},
        "cpu_details": [{"id": 0, "time": 0, "utilisation": 0},
                        {"id": 1, "time": 0, "utilisation": 0}],
        "nic_details": [{"mac_address": MAC, **{f"{way}_{what}": 0 for way in ("rx", "tx")
                         for what in ("octets", "errors", "drop", "packets", "rate")}}],
        "disk_details": [{"read_bytes": 0, "read_requests": 0, "write_bytes": 0,
                          "write_requests": 0, "errors_count": 0}] * 2}
    legacy = cloud.compute.get(f"/servers/{server}/diagnostics", headers=at("2.47")).json()
    assert legacy["memory"] == 1024 * 1024 and "cpu1_time" in legacy and "vdb_read" in legacy
    with member(cloud) as alice:
        assert alice.get(f"/servers/{server}/diagnostics").status_code == 403
    action(cloud, server, {"os-stop": None})
    stopped = cloud.compute.get(f"/servers/{server}/diagnostics")
    assert (stopped.status_code, stopped.json()["conflictingRequest"]["message"]) == (
        409, f"Cannot 'get_diagnostics' instance {server} while it is in power state shutdown")


def test_inject_network_info_and_servers_without_a_guest(cloud: Cloud) -> None:
    server = _server(cloud)
    with member(cloud) as alice:
        assert alice.post(f"/servers/{server}/action",
                          json={"injectNetworkInfo": None}).status_code == 403
    action(cloud, server, {"injectNetworkInfo": None})
    assert _console(cloud, server, length=2).split("\n") == [
        "network configuration injected:", f"  {MAC} on net0: 10.0.0.9"]
    actions = cloud.compute.get(f"/servers/{server}/os-instance-actions").json()
    assert [a["action"] for a in actions["instanceActions"]] == ["create"]  # none, as Nova
    unplaced = stored_server(cloud, host=None, node=None)
    for body in ({"os-getConsoleOutput": {}}, {"injectNetworkInfo": None}):
        resp = cloud.compute.post(f"/servers/{unplaced}/action", json=body)
        assert (resp.status_code, resp.json()["conflictingRequest"]["message"]) == \
            (409, f"Instance {unplaced} is not ready")
    assert cloud.compute.get(f"/servers/{unplaced}/diagnostics").status_code == 409
    ghost = stored_server(cloud)  # on host1, but its hypervisor has no such guest
    missing = cloud.compute.post(f"/servers/{ghost}/action", json={"os-getConsoleOutput": {}})
    assert (missing.status_code, missing.json()["itemNotFound"]["message"]) == \
        (404, "Guest does not have a console available.")
