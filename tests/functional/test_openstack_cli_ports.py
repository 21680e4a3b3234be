"""The stock `openstack` CLI booting a server with a QoS port, then resizing and migrating it.

    host1, host2 (simulated; each with br-physnet0 on physnet0, 10 Gbit/s each way)

network + subnet + QoS policy (1000 kbps egress, 2000 kbps ingress) + port ->
server create --nic port-id -> resize + confirm -> migrate + confirm; after
each step `openstack port show` says where the port is bound and which
bridge provider its bandwidth is allocated from. Then `server add port` /
`server remove port` of a QoS port to a server booted without one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute.agent import network_devices as nd
from stowage.compute.hosts import SIM_BRIDGE, HostConfig
from tests.functional.conftest import LiveServer, serving
from tests.functional.osc import needs_osc, osc, settle

pytestmark = needs_osc
HOSTS = ("host1", "host2")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with serving("sqlite") as live:
        assert live.plane is not None
        for name in HOSTS:
            live.plane.add_host(HostConfig(name=name, network_devices=(SIM_BRIDGE,)))
        yield live


def _bound(server: LiveServer, port: str, group: str) -> str:
    """The port's host, after checking its allocation names that host's bridge."""
    shown = osc(server, "port", "show", port)
    host = shown["binding_host_id"]
    assert host in HOSTS, shown
    assert shown["binding_profile"]["allocation"] == {group: nd.device_uuid(host, SIM_BRIDGE)}
    assert shown["device_owner"] == "compute:nova"
    return str(host)


def _qos_port(server: LiveServer, n: int, *segment: str) -> tuple[dict[str, str], str]:
    """Network net<n> on physnet0 (`segment`: its type and id), subnet 10.0.<n+5>.0/24,
    QoS policy qp<n> (1000 kbps egress, 2000 ingress) and port port<n> under it;
    returns the port and its request group id."""
    osc(server, "network", "create", f"net{n}", *segment,
        "--provider-physical-network", "physnet0")
    osc(server, "subnet", "create", f"sub{n}", "--network", f"net{n}", "--subnet-range",
        f"10.0.{n + 5}.0/24")
    osc(server, "network", "qos", "policy", "create", f"qp{n}")
    for direction, kbps in (("--egress", "1000"), ("--ingress", "2000")):
        osc(server, "network", "qos", "rule", "create", "--type", "minimum-bandwidth",
            "--min-kbps", kbps, direction, f"qp{n}")
    port = osc(server, "port", "create", f"port{n}", "--network", f"net{n}", "--qos-policy",
               f"qp{n}")
    return port, str(port["resource_request"]["request_groups"][0]["id"])


def test_server_with_a_qos_port_resized_and_migrated(server: LiveServer) -> None:
    port, group = _qos_port(server, 0, "--provider-network-type", "flat")
    osc(server, "flavor", "create", "m1.small", "--ram", "512", "--vcpus", "1", "--disk", "5")
    osc(server, "flavor", "create", "m1.large", "--ram", "1024", "--vcpus", "2", "--disk", "10")
    osc(server, "image", "create", "cirros")

    made = osc(server, "server", "create", "--flavor", "m1.small", "--image", "cirros",
               "--nic", f"port-id={port['id']}", "--wait", "vm")
    assert made["status"] == "ACTIVE"
    first = _bound(server, "port0", group)
    assert osc(server, "server", "show", "vm")["OS-EXT-SRV-ATTR:host"] == first
    assert "10.0.5." in str(osc(server, "server", "show", "vm")["addresses"])

    osc(server, "server", "resize", "--flavor", "m1.large", "--wait", "vm", json_out=False)
    assert osc(server, "server", "show", "vm")["status"] == "VERIFY_RESIZE"
    second = _bound(server, "port0", group)
    assert second != first
    osc(server, "server", "resize", "confirm", "vm", json_out=False)
    settle(server)
    assert osc(server, "server", "show", "vm")["status"] == "ACTIVE"
    assert _bound(server, "port0", group) == second

    osc(server, "server", "migrate", "--wait", "vm", json_out=False)
    assert osc(server, "server", "show", "vm")["status"] == "VERIFY_RESIZE"
    assert _bound(server, "port0", group) == first
    osc(server, "server", "resize", "confirm", "vm", json_out=False)
    settle(server)
    shown = osc(server, "server", "show", "vm")
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", first)
    assert _bound(server, "port0", group) == first

    osc(server, "server", "delete", "--wait", "vm", json_out=False)
    settle(server)
    released = osc(server, "port", "show", "port0")
    assert (released["device_id"], released["binding_host_id"]) == ("", "")


def _held_on_bridge(server: LiveServer, vm: str, host: str) -> dict[str, int]:
    """What the server holds on `host`'s bridge provider (empty: nothing)."""
    assert server.plane is not None
    held = server.plane.conductor.placement.holding(vm).allocations
    return held.get(nd.device_uuid(host, SIM_BRIDGE), {})


def test_server_add_and_remove_a_qos_port(server: LiveServer) -> None:
    port, group = _qos_port(server, 1, "--provider-network-type", "vlan",
                            "--provider-segment", "200")
    osc(server, "flavor", "create", "m1.tiny", "--ram", "256", "--vcpus", "1", "--disk", "1")
    osc(server, "image", "create", "cirros1")
    made = osc(server, "server", "create", "--flavor", "m1.tiny", "--image", "cirros1",
               "--nic", "none", "--wait", "vm1")
    host = str(made["OS-EXT-SRV-ATTR:host"])
    assert _held_on_bridge(server, made["id"], host) == {}

    osc(server, "server", "add", "port", "vm1", "port1", json_out=False)
    settle(server)
    assert _bound(server, "port1", group) == host
    assert _held_on_bridge(server, made["id"], host) == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 2000}
    assert "10.0.6." in str(osc(server, "server", "show", "vm1")["addresses"])

    osc(server, "server", "remove", "port", "vm1", "port1", json_out=False)
    settle(server)
    released = osc(server, "port", "show", "port1")
    assert (released["device_id"], released["binding_host_id"]) == ("", "")
    assert "allocation" not in released["binding_profile"]
    assert _held_on_bridge(server, made["id"], host) == {}
    osc(server, "server", "delete", "--wait", "vm1", json_out=False)
