"""The providers a host's network devices become: Neutron's names, uuids and traits.

The uuids are pinned: they are what Neutron's placement report derives for
the same hypervisor and device (uuid5 in the OVS or SR-IOV mechanism
driver's namespace), and a change would orphan every reported provider.
"""

from __future__ import annotations

from stowage.compute.agent import network_devices as nd
from stowage.compute.hosts import OVS, SRIOV, HostConfig, NetworkDevice

NODE = "0d9ae7a0-0000-4000-8000-000000000001"
BRIDGE = NetworkDevice("br-physnet0", OVS, "physnet0", egress_kbps=10_000_000,
                       ingress_kbps=5_000_000)
PF = NetworkDevice("ens5", SRIOV, "phys-net.1", egress_kbps=1000, vfs=8)
PF2 = NetworkDevice("ens6", SRIOV, "phys-net.1", vnic_types=("direct",))


def inventory(total: int) -> dict[str, object]:
    return {"total": total, "reserved": 0, "min_unit": 1, "max_unit": total, "step_size": 1,
            "allocation_ratio": 1.0}


def test_names_follow_neutron() -> None:
    assert nd.agent_name("host1", OVS) == "host1:Open vSwitch agent"
    assert nd.agent_name("host1", SRIOV) == "host1:NIC Switch agent"
    assert nd.device_name("host1", BRIDGE) == "host1:Open vSwitch agent:br-physnet0"
    assert nd.device_name("host1", PF) == "host1:NIC Switch agent:ens5"


def test_uuids_are_neutrons_and_stable() -> None:
    assert nd.agent_uuid("host1", OVS) == "4d87e232-417a-5919-b34b-eb83699e2d3c"
    assert nd.device_uuid("host1", BRIDGE) == "2263ec7c-c040-5571-b82c-b0df450b0f0a"
    assert nd.agent_uuid("host1", SRIOV) == "9119e9a6-143e-5466-bd68-0eac08800ef0"
    assert nd.device_uuid("host1", PF) == "a602822f-78e4-5dd8-b7fa-b311d328c96c"
    # Another host, another uuid; another kind of device of the same name, another uuid.
    assert nd.device_uuid("host2", BRIDGE) != nd.device_uuid("host1", BRIDGE)
    assert nd.device_uuid("host1", NetworkDevice("br-physnet0", SRIOV, "x")) != \
        nd.device_uuid("host1", BRIDGE)


def test_a_host_without_devices_has_no_device_providers() -> None:
    assert nd.device_tree(HostConfig("host1"), NODE) == []


def test_the_tree_puts_agents_under_the_node_and_devices_under_their_agent() -> None:
    host = HostConfig("host1", network_devices=(PF, BRIDGE, PF2))
    tree = nd.device_tree(host, NODE)
    ovs_agent, bridge, sriov_agent, pf, pf2 = tree
    assert [(rp.name, rp.parent) for rp in tree] == [
        ("host1:Open vSwitch agent", NODE),
        ("host1:Open vSwitch agent:br-physnet0", ovs_agent.uuid),
        ("host1:NIC Switch agent", NODE),
        ("host1:NIC Switch agent:ens5", sriov_agent.uuid),
        ("host1:NIC Switch agent:ens6", sriov_agent.uuid)]
    assert (ovs_agent.inventories, sriov_agent.inventories) == ({}, {})
    assert ovs_agent.traits == {"CUSTOM_VNIC_TYPE_NORMAL"}
    assert sriov_agent.traits == {"CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP",
                                  "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"}
    assert bridge.inventories == {"NET_BW_EGR_KILOBIT_PER_SEC": inventory(10_000_000),
                                  "NET_BW_IGR_KILOBIT_PER_SEC": inventory(5_000_000)}
    assert bridge.traits == {"CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"}
    # The VFs are on the PF's own provider, beside its bandwidth; no figure, no inventory.
    assert pf.inventories == {"NET_BW_EGR_KILOBIT_PER_SEC": inventory(1000),
                              "SRIOV_NET_VF": inventory(8)}
    assert pf.traits == {"CUSTOM_PHYSNET_PHYS_NET_1", "CUSTOM_VNIC_TYPE_DIRECT",
                         "CUSTOM_VNIC_TYPE_MACVTAP", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"}
    assert (pf2.inventories, pf2.traits) == (
        {}, {"CUSTOM_PHYSNET_PHYS_NET_1", "CUSTOM_VNIC_TYPE_DIRECT"})


def test_which_providers_the_agent_owns() -> None:
    assert nd.is_agent_owned("host1:Open vSwitch agent", "host1")
    assert nd.is_agent_owned("host1:NIC Switch agent:ens9", "host1")
    assert not nd.is_agent_owned("host1", "host1")
    assert not nd.is_agent_owned("host10:NIC Switch agent:ens9", "host1")
    assert not nd.is_agent_owned("host1:Linux bridge agent:eth0", "host1")


def test_the_pci_tracker_learns_the_vfs_of_each_pf() -> None:
    host = HostConfig("host1", network_devices=(BRIDGE, PF, PF2))
    assert nd.sriov_vfs(host) == {"ens5": 8}
