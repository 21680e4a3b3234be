"""The providers a host's network devices become: named, derived and decorated as Neutron does.

Neutron's L2 agents report each physical network device as a provider under
an agent provider under the compute node; stowage's agent reports them the
same way, so what the scheduler and a port's `binding:profile.allocation`
see is what a cloud with real Neutron agents would show::

    "host1"   compute node (VCPU, MEMORY_MB, DISK_GB)
     ├── "host1:Open vSwitch agent"              CUSTOM_VNIC_TYPE_NORMAL
     │    └── "host1:Open vSwitch agent:br-physnet0"
     │           NET_BW_EGR_KILOBIT_PER_SEC, NET_BW_IGR_KILOBIT_PER_SEC
     │           CUSTOM_PHYSNET_PHYSNET0, CUSTOM_VNIC_TYPE_NORMAL
     └── "host1:NIC Switch agent"                CUSTOM_VNIC_TYPE_DIRECT, ...
          └── "host1:NIC Switch agent:ens5"
                 NET_BW_EGR_KILOBIT_PER_SEC, NET_BW_IGR_KILOBIT_PER_SEC, SRIOV_NET_VF
                 CUSTOM_PHYSNET_PHYSNET1, CUSTOM_VNIC_TYPE_DIRECT, ..._MACVTAP, ..._DIRECT_PHYSICAL

Names: `<hypervisor>:<agent type>` and `<hypervisor>:<agent type>:<device>`,
where the hypervisor is the compute node provider's name (stowage's host
name). Nova reads the PF's interface name back from the last part of the
name (its `parent_ifname` for the PCI request), hence no ':' in device names.

Uuids: uuid5 in the namespace of the agent's mechanism driver, of the
hypervisor name (agent provider) or `<hypervisor>:<device>` (device
provider): the uuids Neutron's placement report derives, stable across
agent restarts and identical to what a real agent would report for the host.

Traits: a device carries its physnet's and its vnic types' traits, the agent
provider the vnic types of its devices (Neutron puts no agent-type trait on
either). Names are normalised as os-traits does: upper case, every run of
other characters than A-Z and 0-9 becomes '_'.

Inventories: each bandwidth direction with a figure (total = the configured
kbps, reserved 0, min_unit and step 1, max_unit = total, ratio 1.0) and, on
an SR-IOV PF with `vfs`, its virtual functions as `SRIOV_NET_VF`.

Why the VFs are on the PF's device provider rather than on a provider of
their own: a port's request group is served by one provider, so a group
asking for bandwidth *and* `SRIOV_NET_VF:1` under the PF's physnet and vnic
traits can only be met by a PF that has both free, and the mapping Placement
returns for that group names the PF whose VF the port gets. A separate VF
provider would need a second group tied to the first with `same_subtree`
(1.36) for the same guarantee. The agent's `PciTracker` keeps the VFs per PF
name, so the PCI claim of a `direct` port can take its VF from the PF the
port's allocation names.

Pure functions, no I/O: `resource_tracker.report` writes what `device_tree`
returns.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import os_resource_classes as orc

from stowage.compute.hosts import AGENT_TYPES, OVS, SRIOV, HostConfig, NetworkDevice
from stowage.network.resource_request import physnet_trait, vnic_type_trait

__all__ = ["DeviceProvider", "device_tree", "agent_uuid", "device_uuid", "agent_name",
           "device_name", "is_agent_owned",
           "OWNED_TRAIT_PREFIXES", "NAMESPACES", "sriov_vfs"]

# The uuid5 namespaces of Neutron's mechanism drivers (`resource_provider_uuid5_namespace`).
NAMESPACES = {OVS: uuidlib.UUID("87ee7d5c-73bb-11e8-9008-c4d987b2a692"),
              SRIOV: uuidlib.UUID("87f1895c-73bb-11e8-9008-c4d987b2a692")}
# The traits the agent owns on its device providers; it leaves any other trait alone.
OWNED_TRAIT_PREFIXES = ("CUSTOM_PHYSNET_", "CUSTOM_VNIC_TYPE_")


@dataclass(frozen=True)
class DeviceProvider:
    """One provider the agent keeps: an agent provider, or a device provider under one."""

    uuid: str
    name: str
    parent: str
    inventories: Mapping[str, Mapping[str, Any]]
    traits: frozenset[str]


def agent_name(hypervisor: str, kind: str) -> str:
    return f"{hypervisor}:{AGENT_TYPES[kind]}"


def device_name(hypervisor: str, device: NetworkDevice) -> str:
    return f"{agent_name(hypervisor, device.kind)}:{device.name}"


def agent_uuid(hypervisor: str, kind: str) -> str:
    return str(uuidlib.uuid5(NAMESPACES[kind], hypervisor))


def device_uuid(hypervisor: str, device: NetworkDevice) -> str:
    return str(uuidlib.uuid5(NAMESPACES[device.kind], f"{hypervisor}:{device.name}"))


def is_agent_owned(provider_name: str, hypervisor: str) -> bool:
    """A provider named as one of this host's agents or their devices."""
    return any(provider_name == agent_name(hypervisor, kind)
               or provider_name.startswith(agent_name(hypervisor, kind) + ":")
               for kind in AGENT_TYPES)


def sriov_vfs(host: HostConfig) -> dict[str, int]:
    """PF name -> its virtual functions, for the PCI tracker."""
    return {d.name: d.vfs for d in host.network_devices if d.kind == SRIOV and d.vfs}


def _inventory(total: int) -> dict[str, Any]:
    return {"total": total, "reserved": 0, "min_unit": 1, "max_unit": total, "step_size": 1,
            "allocation_ratio": 1.0}


def _device_inventories(device: NetworkDevice) -> dict[str, dict[str, Any]]:
    amounts = ((orc.NET_BW_EGR_KILOBIT_PER_SEC, device.egress_kbps),
               (orc.NET_BW_IGR_KILOBIT_PER_SEC, device.ingress_kbps),
               (orc.SRIOV_NET_VF, device.vfs))
    return {rc: _inventory(total) for rc, total in amounts if total > 0}


def _vnic_traits(devices: Iterable[NetworkDevice]) -> frozenset[str]:
    return frozenset(vnic_type_trait(v) for d in devices for v in d.vnic_types)


def device_tree(host: HostConfig, node_uuid: str) -> list[DeviceProvider]:
    """The agent and device providers of the host's devices, each parent before its children."""
    hypervisor = host.name
    tree = []
    for kind in AGENT_TYPES:
        devices = [d for d in host.network_devices if d.kind == kind]
        if not devices:
            continue
        parent = agent_uuid(hypervisor, kind)
        tree.append(DeviceProvider(parent, agent_name(hypervisor, kind), node_uuid, {},
                                   _vnic_traits(devices)))
        tree.extend(
            DeviceProvider(device_uuid(hypervisor, d), device_name(hypervisor, d), parent,
                           _device_inventories(d),
                           _vnic_traits([d]) | {physnet_trait(d.physnet)})
            for d in devices)
    return tree
