"""Helpers for servers with ports: hosts with devices, QoS ports, and what each binding says.

Hosts get an OVS bridge on physnet0 and/or an SR-IOV PF on physnet1 (`net_host`)::

    hostN                                    VCPU 16, MEMORY_MB 32768, DISK_GB 1000
     ├── hostN:Open vSwitch agent:br-physnet0   NET_BW_EGR/IGR (`bw` kbps each way)
     └── hostN:NIC Switch agent:ens5            NET_BW_EGR/IGR, SRIOV_NET_VF (`vfs`)

`Nets` makes the networks a test boots on: `net0` (flat on physnet0) and
`net1` (VLAN 100 on physnet1), each with a subnet, and a QoS policy asking
1000 kbps egress and 2000 kbps ingress. A QoS port's allocation is then
`{EGR: 1000, IGR: 2000}` on its device's provider (plus `SRIOV_NET_VF: 1` for
a `direct` port).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from stowage.compute.agent import network_devices as nd
from stowage.compute.hosts import OVS, SRIOV, NetworkDevice
from tests.functional import networking as n
from tests.functional.conftest import Cloud, api_client
from tests.functional.servers import flavor, held, image, migrations_of, server, settle

EGR, IGR, VF = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "SRIOV_NET_VF"
QOS = {EGR: 1000, IGR: 2000}
QOS_VF = {**QOS, VF: 1}


@dataclass(frozen=True)
class NetHost:
    """A host's compute node, bridge and PF provider uuids (None: it has no such device)."""

    name: str
    node: str
    bridge: str | None
    pf: str | None


def net_host(cloud: Cloud, name: str, bw: int = 10_000, vfs: int = 0, bridge: bool = True,
             pf_bw: int | None = None, **options: Any) -> NetHost:
    """A host with an OVS bridge on physnet0 (`bw` kbps each way) and, with `vfs`, an
    SR-IOV PF ens5 on physnet1 (`pf_bw` kbps, default `bw`)."""
    devices = []
    if bridge:
        devices.append(NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=bw,
                                     ingress_kbps=bw))
    if vfs:
        pf = pf_bw if pf_bw is not None else bw
        devices.append(NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=pf, ingress_kbps=pf,
                                     vfs=vfs))
    node = cloud.add_host(name, network_devices=tuple(devices), **options)
    return NetHost(name, node,
                   nd.device_uuid(name, devices[0]) if bridge else None,
                   nd.device_uuid(name, devices[-1]) if vfs else None)


class Nets:
    """An admin Networking client and the networks, subnets and QoS policy tests use."""

    def __init__(self, cloud: Cloud) -> None:
        self.client: httpx.Client = api_client(f"{cloud.live.url}/network")
        self.net0 = n.physnet(self.client, "net0", "physnet0")
        self.sub0 = n.subnet(self.client, self.net0["id"], "10.0.0.0/24")
        self.net1 = n.physnet(self.client, "net1", "physnet1", vlan=100)
        self.sub1 = n.subnet(self.client, self.net1["id"], "10.1.0.0/24")
        self.qos = n.qos_policy(self.client, "qp", egress=1000, ingress=2000)

    def close(self) -> None:
        self.client.close()

    def qos_port(self, name: str = "p", vnic: str = "normal", qos: bool = True,
                 **fields: Any) -> str:
        """A port on net0 (normal) or net1 (direct, macvtap), with the QoS policy."""
        net = self.net1 if vnic in ("direct", "macvtap") else self.net0
        values = {"name": name, "binding:vnic_type": vnic, **fields}
        if qos:
            values["qos_policy_id"] = self.qos["id"]
        return str(n.port(self.client, net["id"], **values)["id"])

    def port(self, port_id: str) -> dict[str, Any]:
        resp = self.client.get(f"/v2.0/ports/{port_id}")
        assert resp.status_code == 200, resp.text
        return dict(resp.json()["port"])

    def group_id(self, port_id: str) -> str:
        request = self.port(port_id)["resource_request"]
        return str(request["request_groups"][0]["id"])

    def binding(self, port_id: str) -> tuple[str, Any]:
        """(binding:host_id, binding:profile.allocation) of the port."""
        port = self.port(port_id)
        return port["binding:host_id"], port["binding:profile"].get("allocation")

    def assert_bound(self, port_id: str, server_id: str, host: str, rp: str | None) -> None:
        """The port is the server's, bound to `host` with its allocation on `rp`."""
        port = self.port(port_id)
        assert port["device_id"] == server_id, port
        assert port["device_owner"] == "compute:nova", port
        assert port["binding:host_id"] == host, port
        allocation = port["binding:profile"].get("allocation")
        if rp is None:
            assert allocation is None, port
        else:
            assert allocation == {self.group_id(port_id): rp}, port

    def assert_unbound(self, port_id: str) -> None:
        port = self.port(port_id)
        assert (port["device_id"], port["device_owner"], port["binding:host_id"]) == ("", "", ""), \
            port
        assert not set(port["binding:profile"]) & {"allocation", "pci_slot"}, port


def boot(cloud: Cloud, name: str, flavor_id: str, image_id: str, networks: Any,
         status: int = 202) -> str:
    """POST /servers with `networks` and wait; returns the server id ("" if refused)."""
    body = {"server": {"name": name, "flavorRef": flavor_id, "imageRef": image_id,
                       "networks": networks}}
    resp = cloud.compute.post("/servers", json=body)
    assert resp.status_code == status, resp.text
    settle(cloud)
    return str(resp.json()["server"]["id"]) if status == 202 else ""


def holding(cloud: Cloud, consumer: str) -> dict[str, dict[str, int]]:
    """What `consumer` holds per provider (empty providers left out)."""
    return {rp: res for rp, res in held(cloud, consumer).items() if res}


def vf_usage(cloud: Cloud, host: str) -> dict[str, int]:
    """PF name -> VFs in use, as the host's agent counts them."""
    stats = cloud.plane.agent(host).pci.vf_stats()
    return {pf: v["total"] - v["free"] for pf, v in stats.items()}


class MovingServer:
    """host1 and host2 (br-physnet0 and ens5 with 4 VFs each); a server booted on host1
    (flavor `small`) with a `normal` QoS port (`self.normal`, on the bridge) and a
    `direct` one (`self.direct`, bandwidth and a VF on the PF); flavor `large` to resize to.
    """

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.hosts: dict[str, NetHost] = {name: net_host(cloud, name, vfs=4)
                                          for name in ("host1", "host2")}
        self.nets = Nets(cloud)
        small = flavor(cloud, "small", 1, 512, 5)
        self.large = flavor(cloud, "large", 2, 1024, 10)
        self.normal = self.nets.qos_port("a")
        self.direct = self.nets.qos_port("b", vnic="direct")
        cloud.configure(weigher="pack")  # the first server lands on host1 (names break ties)
        self.server = boot(cloud, "vm", small, image(cloud),
                           [{"port": self.normal}, {"port": self.direct}])
        cloud.configure(weigher="spread")
        assert server(cloud, self.server)["OS-EXT-SRV-ATTR:host"] == "host1"

    def on(self, host: str, flavor_amounts: dict[str, int]) -> dict[str, dict[str, int]]:
        """What the server holds when it is on `host` with that flavor."""
        h = self.hosts[host]
        assert h.bridge is not None and h.pf is not None
        return {h.node: flavor_amounts, h.bridge: QOS, h.pf: QOS_VF}

    def assert_ports_on(self, host: str) -> None:
        h = self.hosts[host]
        self.nets.assert_bound(self.normal, self.server, host, h.bridge)
        self.nets.assert_bound(self.direct, self.server, host, h.pf)

    def migration(self) -> str:
        return str(migrations_of(self.cloud, self.server)[0]["uuid"])
