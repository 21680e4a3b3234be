"""Network devices in Placement as Neutron's agents report them, over real HTTP.

One host with an OVS bridge and an SR-IOV PF with VFs::

    net1                                    compute node (VCPU, MEMORY_MB, DISK_GB)
     ├── net1:Open vSwitch agent            CUSTOM_VNIC_TYPE_NORMAL
     │    └── net1:Open vSwitch agent:br-physnet0
     │           NET_BW_EGR/IGR 10 Gbit/s   CUSTOM_PHYSNET_PHYSNET0, CUSTOM_VNIC_TYPE_NORMAL
     └── net1:NIC Switch agent              CUSTOM_VNIC_TYPE_DIRECT, _MACVTAP, _DIRECT_PHYSICAL
          └── net1:NIC Switch agent:ens5
                 NET_BW_EGR/IGR 25 Gbit/s   CUSTOM_PHYSNET_PHYSNET1, the same vnic types
                 SRIOV_NET_VF 8

The agent is restarted with another configuration to see the tree follow it,
except where a provider still holds allocations.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from stowage.compute.agent import network_devices as nd
from stowage.compute.hosts import OVS, SRIOV, NetworkDevice
from stowage.compute.runtime import ControlPlane
from tests.functional.accounting import held, new_uuid, put
from tests.functional.conftest import Cloud

BRIDGE = NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=10_000_000,
                       ingress_kbps=10_000_000, vnic_types=("normal",))
PF = NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=25_000_000, ingress_kbps=25_000_000,
                   vnic_types=("direct", "macvtap", "direct-physical"), vfs=8)
BRIDGE_UUID = nd.device_uuid("net1", BRIDGE)
PF_UUID = nd.device_uuid("net1", PF)
OVS_AGENT = nd.agent_uuid("net1", OVS)
SRIOV_AGENT = nd.agent_uuid("net1", SRIOV)
EGR, IGR, VF = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "SRIOV_NET_VF"
SRIOV_VNICS = {"CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP",
               "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"}


def inventory(total: int, reserved: int = 0) -> dict[str, Any]:
    return {"total": total, "reserved": reserved, "min_unit": 1, "max_unit": total,
            "step_size": 1, "allocation_ratio": 1.0}


def tree(cloud: Cloud, node: str) -> dict[str, dict[str, Any]]:
    """name -> provider, for every provider of the node's tree."""
    resp = cloud.placement.get("/resource_providers", params={"in_tree": node})
    assert resp.status_code == 200, resp.text
    return {rp["name"]: rp for rp in resp.json()["resource_providers"]}


def inventories(cloud: Cloud, rp: str) -> dict[str, dict[str, Any]]:
    resp = cloud.placement.get(f"/resource_providers/{rp}/inventories")
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["inventories"])


def traits(cloud: Cloud, rp: str) -> set[str]:
    return set(cloud.placement.get(f"/resource_providers/{rp}/traits").json()["traits"])


def restart(cloud: Cloud, *devices: NetworkDevice) -> str:
    """Stop the agent of net1 and start it again with these devices; the node uuid."""
    cloud.plane.stop_host("net1")
    return cloud.add_host("net1", network_devices=devices)


def candidates(cloud: Cloud, **groups: str) -> list[dict[str, Any]]:
    params = {"resources": "VCPU:1,MEMORY_MB:512", "group_policy": "none", **groups}
    resp = cloud.placement.get("/allocation_candidates", params=params)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["allocation_requests"])


# --- the tree --------------------------------------------------------------------------
def test_devices_become_neutrons_provider_tree(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    found = tree(cloud, node)
    assert {name: (rp["uuid"], rp["parent_provider_uuid"]) for name, rp in found.items()} == {
        "net1": (node, None),
        "net1:Open vSwitch agent": (OVS_AGENT, node),
        "net1:Open vSwitch agent:br-physnet0": (BRIDGE_UUID, OVS_AGENT),
        "net1:NIC Switch agent": (SRIOV_AGENT, node),
        "net1:NIC Switch agent:ens5": (PF_UUID, SRIOV_AGENT)}
    assert {rp["root_provider_uuid"] for rp in found.values()} == {node}

    assert inventories(cloud, OVS_AGENT) == inventories(cloud, SRIOV_AGENT) == {}
    assert inventories(cloud, BRIDGE_UUID) == {EGR: inventory(10_000_000),
                                               IGR: inventory(10_000_000)}
    assert inventories(cloud, PF_UUID) == {EGR: inventory(25_000_000),
                                           IGR: inventory(25_000_000), VF: inventory(8)}
    assert traits(cloud, OVS_AGENT) == {"CUSTOM_VNIC_TYPE_NORMAL"}
    assert traits(cloud, BRIDGE_UUID) == {"CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"}
    assert traits(cloud, SRIOV_AGENT) == SRIOV_VNICS
    assert traits(cloud, PF_UUID) == {"CUSTOM_PHYSNET_PHYSNET1"} | SRIOV_VNICS
    # The compute node reports what it always did.
    assert sorted(inventories(cloud, node)) == ["DISK_GB", "MEMORY_MB", "VCPU"]
    assert traits(cloud, node) == set()
    # The agent's PCI tracker knows the PF's VFs.
    assert cloud.plane.agent("net1").pci.vf_stats() == {"ens5": {"total": 8, "free": 8}}


def test_a_restarted_agent_finds_the_same_providers_and_rewrites_nothing(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    before = tree(cloud, node)
    assert restart(cloud, BRIDGE, PF) == node
    after = tree(cloud, node)
    assert {n: (rp["uuid"], rp["generation"]) for n, rp in after.items()} == \
        {n: (rp["uuid"], rp["generation"]) for n, rp in before.items()}


def test_a_host_without_devices_reports_only_its_node(cloud: Cloud) -> None:
    node = cloud.add_host("plain")
    assert list(tree(cloud, node)) == ["plain"]


# --- scheduling ------------------------------------------------------------------------
def test_a_bandwidth_group_is_mapped_to_the_bridge(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    (normal,) = candidates(cloud, resources_BW=f"{EGR}:1000",
                           required_BW="CUSTOM_PHYSNET_PHYSNET0,CUSTOM_VNIC_TYPE_NORMAL")
    assert normal["mappings"] == {"": [node], "_BW": [BRIDGE_UUID]}
    assert normal["allocations"][BRIDGE_UUID]["resources"] == {EGR: 1000}

    # A direct port's bandwidth and its VF come from one PF.
    (direct,) = candidates(cloud, resources_SRIOV=f"{EGR}:1000,{IGR}:1000,{VF}:1",
                           required_SRIOV="CUSTOM_PHYSNET_PHYSNET1,CUSTOM_VNIC_TYPE_DIRECT")
    assert direct["mappings"] == {"": [node], "_SRIOV": [PF_UUID]}
    assert direct["allocations"][PF_UUID]["resources"] == {EGR: 1000, IGR: 1000, VF: 1}

    # No device serves a direct port on physnet0, nor more bandwidth than a bridge has.
    assert candidates(cloud, resources_BW=f"{EGR}:1000",
                      required_BW="CUSTOM_PHYSNET_PHYSNET0,CUSTOM_VNIC_TYPE_DIRECT") == []
    assert candidates(cloud, resources_BW=f"{EGR}:10000001",
                      required_BW="CUSTOM_PHYSNET_PHYSNET0") == []


# --- configuration changes -------------------------------------------------------------
def test_a_changed_configuration_updates_the_providers_on_restart(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    # A trait somebody else put on the bridge's provider stays.
    resp = cloud.placement.put("/traits/CUSTOM_OPERATOR_NOTE")
    assert resp.status_code in (201, 204)
    generation = tree(cloud, node)["net1:Open vSwitch agent:br-physnet0"]["generation"]
    resp = cloud.placement.put(f"/resource_providers/{BRIDGE_UUID}/traits", json={
        "resource_provider_generation": generation,
        "traits": sorted(traits(cloud, BRIDGE_UUID) | {"CUSTOM_OPERATOR_NOTE"})})
    assert resp.status_code == 200, resp.text

    faster = NetworkDevice("br-physnet0", OVS, "physnet9", egress_kbps=40_000_000,
                           vnic_types=("normal", "smart-nic"))
    fewer_vfs = NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=25_000_000,
                              ingress_kbps=25_000_000, vnic_types=("direct",), vfs=4)
    restart(cloud, faster, fewer_vfs)
    assert inventories(cloud, BRIDGE_UUID) == {EGR: inventory(40_000_000)}
    assert traits(cloud, BRIDGE_UUID) == {"CUSTOM_PHYSNET_PHYSNET9", "CUSTOM_VNIC_TYPE_NORMAL",
                                          "CUSTOM_VNIC_TYPE_SMART_NIC", "CUSTOM_OPERATOR_NOTE"}
    assert traits(cloud, OVS_AGENT) == {"CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_SMART_NIC"}
    assert inventories(cloud, PF_UUID)[VF] == inventory(4)
    assert traits(cloud, PF_UUID) == {"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT"}
    assert traits(cloud, SRIOV_AGENT) == {"CUSTOM_VNIC_TYPE_DIRECT"}

    # The PF is gone from the configuration: its provider and its agent's go too.
    restart(cloud, faster)
    assert sorted(tree(cloud, node)) == [
        "net1", "net1:Open vSwitch agent", "net1:Open vSwitch agent:br-physnet0"]
    # No devices at all: the node alone, as a host never configured with any.
    restart(cloud)
    assert list(tree(cloud, node)) == ["net1"]


def test_a_device_provider_holding_allocations_is_kept_until_they_are_released(
        cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    consumer = new_uuid()
    assert put(cloud.placement, consumer, {node: {"VCPU": 1},
                                           BRIDGE_UUID: {EGR: 1000}}).status_code == 204

    restart(cloud, PF)
    # Kept, with everything reserved: what is held stays, nothing new lands there.
    assert "net1:Open vSwitch agent:br-physnet0" in tree(cloud, node)
    assert "net1:Open vSwitch agent" in tree(cloud, node)
    assert inventories(cloud, BRIDGE_UUID) == {EGR: inventory(10_000_000, reserved=10_000_000)}
    assert held(cloud.placement, consumer) == {node: {"VCPU": 1}, BRIDGE_UUID: {EGR: 1000}}
    assert candidates(cloud, resources_BW=f"{EGR}:1000",
                      required_BW="CUSTOM_PHYSNET_PHYSNET0") == []

    assert cloud.placement.delete(f"/allocations/{consumer}").status_code == 204
    cloud.plane.agent("net1").update_available_resource()
    assert sorted(tree(cloud, node)) == ["net1", "net1:NIC Switch agent",
                                         "net1:NIC Switch agent:ens5"]


def test_an_allocated_class_dropped_from_a_device_stays_reserved(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    consumer = new_uuid()
    assert put(cloud.placement, consumer, {node: {"VCPU": 1},
                                           PF_UUID: {EGR: 1000, VF: 1}}).status_code == 204
    no_vfs = NetworkDevice("ens5", SRIOV, "physnet1", egress_kbps=25_000_000,
                           ingress_kbps=25_000_000, vfs=0)
    restart(cloud, BRIDGE, no_vfs)
    assert inventories(cloud, PF_UUID) == {EGR: inventory(25_000_000),
                                           IGR: inventory(25_000_000),
                                           VF: inventory(8, reserved=8)}
    assert cloud.placement.delete(f"/allocations/{consumer}").status_code == 204
    cloud.plane.agent("net1").update_available_resource()
    assert sorted(inventories(cloud, PF_UUID)) == [EGR, IGR]


def test_deleting_the_compute_service_deletes_the_whole_tree(cloud: Cloud) -> None:
    node = cloud.add_host("net1", network_devices=(BRIDGE, PF))
    cloud.plane.stop_host("net1")
    (service,) = cloud.compute.get("/os-services", params={"host": "net1"}).json()["services"]
    assert cloud.compute.delete(f"/os-services/{service['id']}").status_code == 204
    assert tree(cloud, node) == {}
    assert cloud.placement.get(f"/resource_providers/{PF_UUID}").status_code == 404


# --- simulated hosts ---------------------------------------------------------------------
def test_sim_hosts_get_the_default_bridge_only_when_configured(cloud: Cloud) -> None:
    """`stowage serve --sim-hosts 2` with `[compute] sim_network_devices = true`."""
    for wanted in (False, True):
        settings = dataclasses.replace(cloud.plane.settings, sim_hosts=2,
                                       sim_network_devices=wanted)
        plane = ControlPlane(settings, cloud.live.db, cloud.plane.placement)
        plane.start()
        try:
            node = plane.agent("host2").node_uuid
            names = sorted(tree(cloud, node))
        finally:
            plane.stop()
        assert names == (["host2", "host2:Open vSwitch agent",
                          "host2:Open vSwitch agent:br-physnet0"] if wanted else ["host2"])
    bridge = nd.device_uuid("host2", NetworkDevice("br-physnet0", OVS, "physnet0"))
    assert traits(cloud, bridge) == {"CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"}
    assert inventories(cloud, bridge) == {EGR: inventory(10_000_000),
                                          IGR: inventory(10_000_000)}
