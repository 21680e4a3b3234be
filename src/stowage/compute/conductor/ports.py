"""A server's ports in the conductor's operations: their requests, their mapping, their binding.

    requests_of  the ports' resource requests read from the Network service now
                 (admin, as Nova's `get_requested_resource_for_instance`), recorded
                 on the server's `instance_ports` rows for the audit
    mapping      group -> provider: from the chosen candidate's `mappings`, else
                 from the allocation the server holds (revert, rollback, recovery)
    bind         each port on a host: device_id, device_owner compute:<zone>,
                 binding:host_id, binding:profile.allocation and, for a VF, its
                 pci_slot / pci_vendor_info / physical_network (Nova's
                 `_update_port_binding_for_instance`); a binding the Network
                 service could not make fails the step (PortBindingFailed)
    create       the ports of `{"uuid": net}` entries, made once per server (Nova's
                 `_create_port_minimal`: device_id set at creation); a port whose
                 network's QoS policy gives it a resource request is deleted again
                 and the build aborted (NetworksWithQoSPolicyNotSupported)
    release      the ports let go (Nova's `deallocate_for_instance`): a port Nova
                 created is deleted, any other unbound, keeping the user's own
                 binding:profile keys

Every write is idempotent: binding a port again to the same host with the
same mapping changes nothing the user sees, so a step a crash cut off is
simply done again. A server being deleted keeps no binding: `bind` leaves
the ports to the delete when it finds the server going (before, or right
after, it wrote them).

Network errors cross into the operations as `RemoteError`s named by
Neutron's error type, so a failed binding is handled like any failed step
(reschedule, rollback).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import aggregates, instance_ports, instances, services
from stowage.compute.conductor.common import Ops
from stowage.compute.floating_addresses import floating_of_ports, with_floating
from stowage.compute.instance_ports import InstancePort
from stowage.compute.port_requests import (
    VF_CLASS,
    NoMapping,
    PortRequest,
    from_allocation,
    from_mappings,
    from_port,
    profile_allocation,
)
from stowage.errors import NotFound
from stowage.messaging import RemoteError
from stowage.network.client import NetworkClient, NetworkError

__all__ = ["ServerPorts", "load", "load_in", "create", "create_at_boot", "boot_groups",
           "requests_of", "mapping", "vf_ports", "bind", "rebind", "release", "unbind_port",
           "require_network", "spec_entries", "from_holding", "host_profile", "owner_on",
           "NetworksWithQoSPolicyNotSupported", "PCI_KEYS"]

# The group every project has; ports made without a group list are in it.
DEFAULT_GROUP = "default"
LOG = logging.getLogger(__name__)

# The binding:profile keys Nova owns (and removes when it unbinds a port).
PCI_KEYS = ("pci_vendor_info", "pci_slot", "physical_network")
_NOVA_KEYS = ("allocation", *PCI_KEYS, "card_serial_number", "vf_num", "pf_mac_address",
              "device_mac_address", "arq_uuid")
_PORT_CLASSES = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", VF_CLASS)
Allocations = Mapping[str, Mapping[str, int]]


@dataclass
class ServerPorts:
    """The server's ports as an operation sees them: rows, and requests once read."""

    instance_uuid: str
    rows: list[InstancePort]
    requests: list[PortRequest]

    @property
    def port_ids(self) -> list[str]:
        return [r.port_id for r in self.rows if r.port_id]

    def __bool__(self) -> bool:
        return bool(self.port_ids)


def load(ops: Ops, instance_uuid: str) -> ServerPorts:
    """The server's port rows, with the requests last recorded on them (no network call)."""
    with ops.db.read() as conn:
        return load_in(conn, instance_uuid)


def load_in(conn: Connection, instance_uuid: str) -> ServerPorts:
    """`load` in a transaction of the cell's database the caller has open."""
    rows = instance_ports.of_instance(conn, instance_uuid)
    return ServerPorts(instance_uuid, rows,
                       [PortRequest.from_json(r.request) for r in rows if r.request])


@contextmanager
def _network_errors() -> Iterator[None]:
    try:
        yield
    except NetworkError as exc:
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc


def require_network(ops: Ops) -> NetworkClient:
    """The Network service; a RemoteError when none is configured."""
    return _network(ops)


def _network(ops: Ops) -> NetworkClient:
    if ops.network is None:
        raise RemoteError("NetworkError", "no Network service is configured "
                                          "([compute] network_url)")
    return ops.network


class NetworksWithQoSPolicyNotSupported(Exception):
    """A port Nova created asks for resources: Nova aborts the build (no reschedule)."""


def create(ops: Ops, ports: ServerPorts, project_id: str,
           security_groups: Sequence[str] | None = None) -> None:
    """Create the port of each network entry that has none yet, and record it; in the
    `security_groups` (ids) the server was booted with, else the project's default group.

    A crash between the creation and its record leaves a port whose
    device_id is the server's: it is found again (by device_id and network)
    instead of being created twice.
    """
    missing = [r for r in ports.rows if r.port_id is None]
    if not missing:
        return
    network = _network(ops)
    with _network_errors():
        security_groups = _group_ids(network, project_id, security_groups)
        # Ports of the server's other rows are not strays (an attach on a network the
        # server is already on would otherwise take its first port again).
        with ops.db.read() as conn:
            known = set(ports.port_ids) | {
                r.port_id for r in instance_ports.of_instance(conn, ports.instance_uuid)
                if r.port_id}
        strays = [p for p in network.list_ports(device_id=ports.instance_uuid)
                  if p["id"] not in known]
        for row in missing:
            port = next((p for p in strays if p["network_id"] == row.network_id), None)
            if port is None:
                values: dict[str, Any] = {"network_id": row.network_id, "admin_state_up": True,
                                          "device_id": ports.instance_uuid,
                                          "project_id": project_id}
                if row.fixed_ip:
                    values["fixed_ips"] = [{"ip_address": row.fixed_ip}]
                if security_groups is not None:
                    values["security_groups"] = list(security_groups)
                port = network.create_port(values)
            else:
                strays.remove(port)
            if port.get("resource_request"):
                network.delete_port(str(port["id"]))
                raise NetworksWithQoSPolicyNotSupported(
                    f"Using networks with QoS policy is not supported for instance "
                    f"{ports.instance_uuid}. (Network ID is {row.network_id})")
            with ops.db.write() as conn:
                instance_ports.set_port(conn, row.id, str(port["id"]))
            row.port_id = str(port["id"])


def create_at_boot(ops: Ops, ports: ServerPorts, project_id: str) -> None:
    """`create` in the groups the server was booted with, read only when a port is
    missing (most servers have none to create: no read of the request spec then)."""
    if any(r.port_id is None for r in ports.rows):
        create(ops, ports, project_id, boot_groups(ops, ports.instance_uuid))


def boot_groups(ops: Ops, uuid: str) -> list[str] | None:
    """The security groups POST /servers resolved for the server (ids, and "default"),
    kept in its request spec; None for a spec without them (the default group)."""
    with ops.api_db.read() as conn:
        try:
            groups = instances.request_spec(conn, uuid).get("security_groups")
        except NotFound:
            return None
    return None if groups is None else [str(g) for g in groups]


def _group_ids(network: NetworkClient, project_id: str,
               groups: Sequence[str] | None) -> list[str] | None:
    """The ids to create ports in: None (the Network service's default) for the default
    group alone, else the ids, "default" replaced by the project's default group's."""
    if groups is None or list(groups) == [DEFAULT_GROUP]:
        return None
    if DEFAULT_GROUP not in groups:
        return list(groups)
    default = network.list_security_groups(name=DEFAULT_GROUP, project_id=project_id)
    return [str(default[0]["id"]) if g == DEFAULT_GROUP else g for g in groups]


def requests_of(ops: Ops, ports: ServerPorts) -> list[PortRequest]:
    """Each port's request as the Network service says now; recorded on the rows."""
    if not ports:
        ports.requests = []
        return []
    network = _network(ops)
    physnets: dict[str, str | None] = {}
    found = []
    with _network_errors():
        for port_id in ports.port_ids:
            port = network.show_port(port_id)
            if port is None:
                continue  # deleted behind the server's back: nothing to schedule for it
            net_id = str(port["network_id"])
            if net_id not in physnets:
                net = network.show_network(net_id) or {}
                physnets[net_id] = net.get("provider:physical_network")
            found.append(from_port(port, physnets[net_id]))
    with ops.db.write() as conn:
        instance_ports.set_request(conn, ports.instance_uuid, {
            r.port_id: (r.to_json() if r.groups else None) for r in found})
    ports.requests = found
    return found


def spec_entries(requests: Sequence[PortRequest]) -> list[dict[str, Any]]:
    """The ports' part of a request spec (`port_requests`), for the scheduler."""
    return [r.to_json() for r in requests if r.groups]


def mapping(ops: Ops, requests: Sequence[PortRequest], selection: Mapping[str, Any] | None,
            holder: str | None = None) -> dict[str, str]:
    """group id -> provider: the selection's `mappings` when it has them (a fresh claim),
    else found in what `holder` holds now (a revert, a rollback, a recovered step)."""
    if not any(r.groups for r in requests):
        return {}
    mappings = ((selection or {}).get("allocation_request") or {}).get("mappings")
    try:
        if mappings:
            return from_mappings(requests, mappings)
        assert holder is not None, "a mapping without mappings needs the consumer holding it"
        return from_holding(ops, requests, ops.placement.holding(holder).allocations)
    except NoMapping as exc:
        raise RemoteError("NoMapping", str(exc)) from exc


def from_holding(ops: Ops, requests: Sequence[PortRequest],
                 allocation: Allocations) -> dict[str, str]:
    traits = {rp: ops.placement.provider_part(rp, "traits") for rp, res in allocation.items()
              if any(rc in res for rc in _PORT_CLASSES)}
    port_part = {rp: allocation[rp] for rp in traits}
    return from_allocation(requests, port_part, traits)


def vf_ports(requests: Sequence[PortRequest], group_map: Mapping[str, str]) -> dict[str, str]:
    """port id -> the provider (a PF) whose VF each SR-IOV port gets."""
    return {r.port_id: group_map[g] for r in requests if (g := r.vf_group) is not None}


def _zone(ops: Ops, host: str) -> str:
    with ops.db.read() as conn:
        service = services.compute_service(conn, host)
    with ops.api_db.read() as conn:
        return aggregates.zone_of(conn, service, ops.settings.default_availability_zone)


def owner_on(ops: Ops, host: str) -> str:
    """The `device_owner` of a server's port on `host`: compute:<the host's zone>."""
    return f"compute:{_zone(ops, host)}"


def bind(ops: Ops, ports: ServerPorts, host: str, group_map: Mapping[str, str],
         pci: Mapping[str, Mapping[str, Any]], gone: Callable[[], bool]) -> None:
    """Point every port of the server at `host` with its allocation and VF (idempotent).

    `gone` tells whether the server is being deleted: its ports are the
    delete's then, and are released rather than bound.
    """
    if not ports or gone():
        return
    network = _network(ops)
    owner = f"compute:{_zone(ops, host)}"
    by_port = {r.port_id: r for r in ports.requests}
    with _network_errors():
        for port_id in ports.port_ids:
            port = network.show_port(port_id)
            if port is None:
                continue
            profile = _profile(port, by_port.get(port_id), group_map, pci.get(port_id))
            bound = network.update_port(port_id, {
                "device_id": ports.instance_uuid, "device_owner": owner,
                "binding:host_id": host, "binding:profile": profile})
            if bound.get("binding:vif_type") == "binding_failed":
                raise RemoteError("PortBindingFailed", f"Binding failed for port {port_id}, "
                                  "please check neutron logs for more information.")
            _remember_vif(ops, network, ports.instance_uuid, bound)
    if gone():
        release(ops, ports)


def rebind(ops: Ops, ports: ServerPorts, host: str, holder: str, migration_uuid: str,
           gone: Callable[[], bool]) -> None:
    """Bind the ports to `host` as `holder`'s allocation maps them, each SR-IOV port to the
    VF it holds there under (instance, `migration_uuid`): a revert, a rollback, or a
    step done again after a crash, which have no fresh candidate to read the mapping from.
    """
    if not ports or gone():
        return
    group_map = mapping(ops, ports.requests, None, holder)
    wanted = vf_ports(ports.requests, group_map)
    pci = ops.call_agent(host, "port_devices", instance_uuid=ports.instance_uuid,
                         migration_uuid=migration_uuid, vf_ports=wanted) if wanted else {}
    bind(ops, ports, host, group_map, pci, gone)


def host_profile(port: Mapping[str, Any], request: PortRequest | None,
                 group_map: Mapping[str, str], pci: Mapping[str, Any] | None) -> dict[str, Any]:
    """The profile a binding of `port` on a host gets (a live migration's inactive one)."""
    return _profile(port, request, group_map, pci)


def _profile(port: Mapping[str, Any], request: PortRequest | None,
             group_map: Mapping[str, str], pci: Mapping[str, Any] | None) -> dict[str, Any]:
    """The port's profile with Nova's keys rewritten for this host; the user's stay."""
    profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
               if k not in _NOVA_KEYS}
    if request is not None:
        allocation = profile_allocation(request, group_map)
        if allocation is not None:
            profile["allocation"] = allocation
    profile.update(pci or {})
    return profile


def _remember_vif(ops: Ops, network: NetworkClient, instance_uuid: str,
                  port: Mapping[str, Any]) -> None:
    """The server view's addresses of this port, floating ones too (Nova's info cache);
    the floating ones read with the server's row held, as floating_addresses.refresh."""
    net = network.show_network(str(port["network_id"])) or {}
    ips = [{"address": ip["ip_address"], "version": ipaddress.ip_address(ip["ip_address"]).version}
           for ip in port.get("fixed_ips") or ()]
    vif = {"network_id": port["network_id"], "network": net.get("name", ""),
           "mac": port.get("mac_address"), "ips": ips}
    with ops.db.write() as conn:
        instances.lock(conn, instance_uuid)
        try:
            floating = floating_of_ports(network, [str(port["id"])]).get(str(port["id"]), {})
        except NetworkError as exc:  # the binding stands; network-changed repairs the cache
            LOG.warning("floating IPs of port %s not read: %s", port["id"], exc)
            floating = {}
        instance_ports.set_vif(conn, instance_uuid, str(port["id"]), with_floating(vif, floating))


def release(ops: Ops, ports: ServerPorts) -> None:
    """Delete the ports Nova created, unbind the others, forget them all (idempotent)."""
    if not ports.rows:
        return
    if ports.port_ids:
        network = _network(ops)
        with _network_errors():
            for row in ports.rows:
                if row.port_id is None:
                    continue
                if row.created:
                    network.delete_port(row.port_id)
                else:
                    _unbind(network, row.port_id)
    with ops.db.write() as conn:
        instance_ports.forget(conn, ports.instance_uuid)


def unbind_port(network: NetworkClient, port_id: str) -> None:
    """Let one port go: device and host cleared, Nova's profile keys removed (idempotent)."""
    _unbind(network, port_id)


def _unbind(network: NetworkClient, port_id: str) -> None:
    port = network.show_port(port_id)
    if port is None:
        return
    if str(port.get("device_owner") or "").startswith("compute:"):
        # a live migration's destination binding goes first: it needs a compute port
        for binding in network.list_bindings(port_id):
            if binding.get("status") == "INACTIVE":
                network.delete_binding(port_id, str(binding["host"]))
    profile = {k: v for k, v in (port.get("binding:profile") or {}).items()
               if k not in _NOVA_KEYS}
    network.update_port(port_id, {"device_id": "", "device_owner": "",
                                  "binding:host_id": None, "binding:profile": profile})
