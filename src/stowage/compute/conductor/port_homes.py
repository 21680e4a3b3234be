"""Where a server's ports point when its host changes without a live source: evacuate, shelve.

    vf_profiles  the PCI part (pci_slot, pci_vendor_info, physical_network) of each
                 port's binding now: what a dead source's VFs were, kept so an undo
                 can bind the ports back there without asking its agent
    bind_back    the ports on a host whose agent may be dead (an evacuation's source),
                 mapped from what `holder` holds there, each VF as `vf_profiles` saw it
    park         the ports of an offloaded server (Nova's
                 `cleanup_instance_network_on_host`): binding:host_id cleared and
                 compute's binding:profile keys (allocation, the VF) removed; device_id
                 and device_owner kept, the ports stay the server's

Every write is idempotent, and none is made for a server being deleted (its
ports are the delete's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stowage.compute.conductor import ports
from stowage.compute.conductor.common import Ops
from stowage.messaging import RemoteError
from stowage.network.client import NetworkError

__all__ = ["vf_profiles", "bind_back", "park"]


def vf_profiles(ops: Ops, server_ports: ports.ServerPorts) -> dict[str, dict[str, Any]]:
    """port id -> the PCI keys of its binding now (ports without a VF left out)."""
    if not server_ports or ops.network is None:
        return {}
    found = {}
    try:
        for port_id in server_ports.port_ids:
            port = ops.network.show_port(port_id) or {}
            profile = port.get("binding:profile") or {}
            pci = {k: profile[k] for k in ports.PCI_KEYS if k in profile}
            if pci:
                found[port_id] = pci
    except NetworkError as exc:
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc
    return found


def bind_back(ops: Ops, server_ports: ports.ServerPorts, host: str, holder: str,
              pci: Mapping[str, Mapping[str, Any]], gone: Callable[[], bool]) -> None:
    """Bind the ports to `host` as `holder`'s allocation maps them, the VFs as they were."""
    if not server_ports or gone():
        return
    group_map = ports.mapping(ops, server_ports.requests, None, holder)
    ports.bind(ops, server_ports, host, group_map, pci, gone)


def park(ops: Ops, server_ports: ports.ServerPorts, gone: Callable[[], bool]) -> None:
    """Unbind the ports from any host, keeping them the server's (idempotent)."""
    if not server_ports or gone() or ops.network is None:
        return
    network = ops.network
    try:
        for port_id in server_ports.port_ids:
            port = network.show_port(port_id)
            if port is None:
                continue
            profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
                       if k not in ("allocation", *ports.PCI_KEYS)}
            if not port.get("binding:host_id") and profile == port.get("binding:profile"):
                continue
            network.update_port(port_id, {"binding:host_id": None, "binding:profile": profile})
    except NetworkError as exc:
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc
