"""The VFs a host's SR-IOV ports use: taken from the PF Placement chose, shown as Nova shows them.

A `direct` or `macvtap` port's request group holds `SRIOV_NET_VF: 1` beside
its bandwidth, so the provider the group maps to is the PF whose VF the
port gets. The conductor passes each such port with that provider (port id
-> provider uuid); the agent turns the provider into the PF's name (the
last part of the device provider's name, Nova's `parent_ifname`), claims a
VF of that PF in its `PciTracker` under the step's claim key, and answers
with what Nova writes into the port's `binding:profile` for a VF:
`pci_slot`, `pci_vendor_info`, `physical_network`.

The simulated PCI addresses: the host's n-th PF (hosts-file order) is bus
0x81 + n, its VF k device 0x10 + k // 8, function k % 8, as an Intel X710's
VFs enumerate.

After a restart the agent rebuilds the VF claims of its PFs from Placement
(`reclaim_from_allocations`): what each consumer holds of `SRIOV_NET_VF` on
this host's PF providers is what it held here, under the key its move gives
it (see `pci.py`); the ports are named again when a step needs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stowage.compute.agent.network_devices import device_uuid
from stowage.compute.agent.pci import ClaimKey, PciClaimFailed, PciTracker, VfSlot
from stowage.compute.hosts import SRIOV, HostConfig
from stowage.compute.migrations import Migration
from stowage.placement.client import PlacementClient, PlacementError

__all__ = ["pf_of_providers", "claim", "attach", "detach", "profiles",
           "reclaim_from_allocations", "VENDOR_INFO"]

# What an Intel X710 VF reports (vendor:product), as Nova copies it into the profile.
VENDOR_INFO = "8086:154c"
_VF_CLASS = "SRIOV_NET_VF"


def pf_of_providers(host: HostConfig) -> dict[str, str]:
    """PF provider uuid -> PF name, for the host's SR-IOV devices with VFs."""
    return {device_uuid(host.name, d): d.name for d in host.network_devices
            if d.kind == SRIOV and d.vfs}


def claim(tracker: PciTracker, host: HostConfig, key: ClaimKey,
          vf_ports: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """One VF per port, of the PF its provider names; port id -> the profile's PCI part."""
    pfs = pf_of_providers(host)
    wanted = {}
    for port, provider in vf_ports.items():
        if provider not in pfs:
            raise PciClaimFailed(f"VF request for port {port} failed on host {host.name}: "
                                 f"provider {provider} is no PF of this host")
        wanted[port] = pfs[provider]
    return profiles(host, tracker.claim_port_vfs(key, wanted))


def attach(tracker: PciTracker, host: HostConfig, instance_uuid: str, port: str,
           provider: str) -> dict[str, Any]:
    """A VF of the PF `provider` names for a port attached to the running server, under
    the key its own devices have here; the profile's PCI part (idempotent)."""
    pf = pf_of_providers(host).get(provider)
    if pf is None:
        raise PciClaimFailed(f"VF request for port {port} failed on host {host.name}: "
                             f"provider {provider} is no PF of this host")
    slot = tracker.add_port_vf(tracker.instance_key(instance_uuid), port, pf)
    return profiles(host, {port: slot})[port]


def detach(tracker: PciTracker, instance_uuid: str, port: str) -> None:
    """The VF of a detached port goes back to its PF (idempotent)."""
    tracker.drop_port_vf(tracker.instance_key(instance_uuid), port)


def profiles(host: HostConfig, slots: Mapping[str, VfSlot]) -> dict[str, dict[str, Any]]:
    """port id -> pci_slot, pci_vendor_info, physical_network of the VF it holds."""
    devices = [d for d in host.network_devices if d.kind == SRIOV]
    index = {d.name: n for n, d in enumerate(devices)}
    physnet = {d.name: d.physnet for d in devices}
    return {port: {"pci_slot": f"0000:{0x81 + index[pf]:02x}:{0x10 + vf // 8:02x}.{vf % 8}",
                   "pci_vendor_info": VENDOR_INFO, "physical_network": physnet[pf]}
            for port, (pf, vf) in slots.items()}


def reclaim_from_allocations(tracker: PciTracker, host: HostConfig,
                             placement: PlacementClient, here: Iterable[str],
                             moves: Iterable[Migration]) -> None:
    """Rebuild the VF claims of this host's PFs from what consumers hold there.

    A migration holds a move's source (key: its instance, ""); an instance
    that moves here holds the destination (key: instance, migration); any
    other instance holds its own VFs (key: instance, "").
    """
    pfs = pf_of_providers(host)
    if not pfs:
        return
    local = set(here)
    by_migration = {m.uuid: m for m in moves}
    incoming = {m.instance_uuid: m.uuid for m in by_migration.values()
                if m.dest_compute == host.name}
    held: dict[ClaimKey, dict[str, int]] = {}
    for provider, pf in pfs.items():
        try:
            allocations = placement.provider_allocations(provider)
        except PlacementError as exc:
            if exc.status != 404:
                raise
            continue  # a first start: the agent has not reported the PF yet
        for consumer, amounts in allocations.items():
            count = int(amounts.get(_VF_CLASS, 0))
            if not count:
                continue
            if consumer in by_migration:
                key: ClaimKey = (by_migration[consumer].instance_uuid, "")
            elif consumer in incoming:
                key = (consumer, incoming[consumer])
            elif consumer in local:
                key = (consumer, "")
            else:
                continue
            held.setdefault(key, {})[pf] = count
    for key, counts in held.items():
        tracker.claim_vfs(key, counts)
