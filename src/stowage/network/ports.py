"""Port records: create (MAC, fixed IPs, active binding), read, list, update and delete.

A port is in its project's default security group unless it is created
with `security_groups` (its groups must be its project's); the network's own
ports (`device_owner` network:*) are in none.

A port's `status` is derived: ACTIVE when it is administratively up and its
active binding is bound (a router's ports need no binding), DOWN otherwise;
a floating IP's port is N/A, as in Neutron. Every write locks in one order —
the network (shared), the network's subnets (shared, when addresses
change), then the port (its revision bump) — so that concurrent writers of
ports, subnets and networks never wait on each other in a circle.

The QoS policy of a port whose bandwidth is already allocated in Placement
(`binding:profile.allocation` is set) cannot be changed to one that asks
for different bandwidth: Neutron would rewrite the allocation, stowage's
Networking API does not talk to Placement (501, as Neutron's refusal for
rule changes).
"""

from __future__ import annotations

import datetime
import secrets
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import NetworkSettings
from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import (
    bindings,
    ipam,
    networks,
    port_extras,
    qos,
    quotas,
    resource_request,
    security_groups,
    subnets,
)
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.bindings import PortBinding
from stowage.network.ipam import FixedIp
from stowage.network.policy import Guard
from stowage.network.segments import Segment
from stowage.network.standard import lock, try_insert, utcnow

__all__ = ["Port", "get", "list_ports", "create", "create_owned", "update", "delete", "of_ids",
           "locked", "resource_requests", "missing", "target", "MAC_ATTEMPTS", "L3_OWNERS"]

# Neutron's mac_generation_retries.
MAC_ATTEMPTS = 16
_P = t.ports
_N = t.networks
# The ports routers and floating IPs own: not deleted through the port API (409), as Neutron.
L3_OWNERS = ("network:router_interface", "network:router_gateway", "network:floatingip")
_BINDING_KEYS = {"binding:host_id": "host", "binding:vnic_type": "vnic_type",
                 "binding:profile": "profile"}


@dataclass
class Port:
    id: str
    network_id: str
    project_id: str
    name: str
    description: str
    mac_address: str
    admin_state_up: bool
    device_id: str
    device_owner: str
    qos_policy_id: str | None
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    network_project_id: str
    network_qos_policy_id: str | None
    segment: Segment
    binding: PortBinding
    bindings: list[PortBinding] = field(default_factory=list)
    fixed_ips: list[FixedIp] = field(default_factory=list)
    security_groups: list[str] = field(default_factory=list)
    address_pairs: list[dict[str, str]] = field(default_factory=list)
    dhcp_options: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        # A router's ports are up at once (no L3 agent to wait for); a floating IP's port
        # is never bound, and Neutron shows it N/A.
        if self.device_owner == "network:floatingip":
            return "N/A"
        routed = self.device_owner in L3_OWNERS
        return "ACTIVE" if self.admin_state_up and (routed or self.binding.bound) else "DOWN"

    @property
    def effective_qos_policy_id(self) -> str | None:
        return self.qos_policy_id or self.network_qos_policy_id


def missing(port_id: str) -> DomainError:
    return e.not_found(e.PORT_NOT_FOUND, f"Port {port_id} could not be found.")


def target(port: Port) -> dict[str, object]:
    """What the policy rules see of a port: itself and its network's owner."""
    return {"id": port.id, "project_id": port.project_id, "tenant_id": port.project_id,
            "network_id": port.network_id, "device_owner": port.device_owner,
            "network:tenant_id": port.network_project_id,
            "network:project_id": port.network_project_id}


def _attributes(values: Mapping[str, Any]) -> list[str]:
    """The attributes sent, with `fixed_ips:ip_address` / `fixed_ips:subnet_id` when an
    address or a subnet is asked for (each has a rule of its own)."""
    names = list(values)
    for key in ("ip_address", "subnet_id"):
        if any(key in item for item in values.get("fixed_ips") or []):
            names.append(f"fixed_ips:{key}")
    return names


def _ports(conn: Connection, where: sa.ColumnElement[bool]) -> list[Port]:
    # SELECT ports.*, networks.project_id, networks.qos_policy_id, <segment>
    #  FROM ports JOIN networks ON networks.id = ports.network_id WHERE <where>
    query = (sa.select(_P, _N.c.project_id.label("net_project"),
                       _N.c.qos_policy_id.label("net_qos"), _N.c.network_type,
                       _N.c.physical_network, _N.c.segmentation_id)
             .select_from(_P.join(_N, _N.c.id == _P.c.network_id))
             .where(where).order_by(_P.c.created_at, _P.c.id))
    rows = conn.execute(query).all()
    ids = [r.id for r in rows]
    ips, all_bindings = ipam.of_ports(conn, ids), bindings.of_ports(conn, ids)
    groups = security_groups.of_ports(conn, ids)
    pairs, options = port_extras.pairs_of(conn, ids), port_extras.options_of(conn, ids)
    return [Port(r.id, r.network_id, r.project_id, r.name, r.description, r.mac_address,
                 bool(r.admin_state_up), r.device_id, r.device_owner, r.qos_policy_id,
                 int(r.revision_number), r.created_at, r.updated_at, r.net_project, r.net_qos,
                 Segment(r.network_type, r.physical_network, r.segmentation_id),
                 all_bindings[r.id][0], all_bindings[r.id], ips[r.id], groups[r.id],
                 pairs[r.id], options[r.id])
            for r in rows]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    project = ctx.project_id or ""
    return sa.or_(_P.c.project_id == project, _N.c.project_id == project)


def get(conn: Connection, ctx: RequestContext, port_id: str) -> Port:
    found = _ports(conn, sa.and_(_P.c.id == port_id, _visible(ctx)))
    if not found:
        raise missing(port_id)
    return found[0]


def of_ids(conn: Connection, port_ids: Sequence[str]) -> dict[str, Port]:
    """The ports of those ids, whoever may see them (a floating IP's `port_details`)."""
    if not port_ids:
        return {}
    return {p.id: p for p in _ports(conn, _P.c.id.in_(list(port_ids)))}


def list_ports(conn: Connection, ctx: RequestContext,
               narrow: Mapping[str, Sequence[str]] | None = None) -> list[Port]:
    """Visible ports; `narrow` maps id / network_id / device_id / device_owner /
    project_id to wanted values, filtered in SQL."""
    where = _visible(ctx)
    for name, values in (narrow or {}).items():
        where = sa.and_(where, _P.c[name].in_(list(values)))
    return _ports(conn, where)


def _mac(base_mac: str) -> str:
    """Neutron's generated MAC: base_mac's first three octets, three random ones."""
    head = base_mac.lower().split(":")[:3]
    return ":".join(head + [f"{b:02x}" for b in secrets.token_bytes(3)])


def _insert(conn: Connection, row: dict[str, Any], mac: str | None, base_mac: str) -> None:
    """Insert the port row; a MAC taken on the network is 409 if named, else drawn again."""
    if mac is not None:
        if not try_insert(conn, _P, {**row, "mac_address": mac}):
            raise e.in_use(e.MAC_ADDRESS_IN_USE, "Unable to complete operation for network "
                           f"{row['network_id']}. The mac address {mac} is in use.")
        return
    for _ in range(MAC_ATTEMPTS):
        if try_insert(conn, _P, {**row, "mac_address": _mac(base_mac)}):
            return
    raise e.StatusError(503, "Unable to generate unique mac on network "
                             f"{row['network_id']}.", "MacAddressGenerationFailure")


def create(conn: Connection, guard: Guard, values: Mapping[str, Any],
           settings: NetworkSettings) -> Port:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    parent = networks.parent_target(conn, values["network_id"])
    guard.check("create_port", {**values, "project_id": project_id, "tenant_id": project_id,
                                **parent}, _attributes(values))
    quotas.claim(conn, project_id, "port")
    network = networks.hold(conn, values["network_id"], ctx)
    ipam.check_count(values.get("fixed_ips"), values.get("device_owner", ""))
    qos.check_usable(conn, ctx, values.get("qos_policy_id"))
    held = subnets.of_network(conn, network.id, hold=True)
    now = utcnow()
    row = {"id": str(uuid.uuid4()), "network_id": network.id, "project_id": project_id,
           "name": values.get("name", ""), "description": values.get("description", ""),
           "admin_state_up": values.get("admin_state_up", True),
           "device_id": values.get("device_id", ""),
           "device_owner": values.get("device_owner", ""),
           "qos_policy_id": values.get("qos_policy_id"), "revision_number": 0,
           "created_at": now, "updated_at": now}
    _insert(conn, row, values.get("mac_address"), settings.base_mac)
    bindings.add_active(conn, row["id"], values.get("binding:host_id") or "",
                        values.get("binding:vnic_type", "normal"),
                        values.get("binding:profile") or {}, network.segment)
    ipam.allocate(conn, row["id"], network.id, held, values.get("fixed_ips"))
    # Neutron puts a port in its project's default group unless told otherwise; the
    # network's own ports (DHCP, router) get no group.
    groups = values.get("security_groups")
    if groups is not None or not str(row["device_owner"]).startswith("network:"):
        security_groups.set_port_groups(conn, row["id"], row["project_id"], groups)
    port = get(conn, ctx, row["id"])
    return get(conn, ctx, port.id) if _set_extras(conn, port, values) else port


def create_owned(conn: Connection, network_id: str, project_id: str, owner: str,
                 device_id: str, fixed_ips: Sequence[Mapping[str, Any]] | None,
                 base_mac: str, ip_version: int | None = None) -> str:
    """A port the service makes for a router or a floating IP (no rules, no quota, no
    security group, as Neutron's L3 plugin makes them); returns its id. With
    `ip_version`, automatic addresses come from subnets of that version only."""
    network = networks.hold(conn, network_id)
    held = subnets.of_network(conn, network.id, hold=True)
    if ip_version is not None:
        held = [s for s in held if s.ip_version == ip_version]
    now = utcnow()
    port_id = str(uuid.uuid4())
    row = {"id": port_id, "network_id": network.id, "project_id": project_id,
           "name": "", "description": "", "admin_state_up": True, "device_id": device_id,
           "device_owner": owner, "qos_policy_id": None, "revision_number": 0,
           "created_at": now, "updated_at": now}
    _insert(conn, row, None, base_mac)
    bindings.add_active(conn, port_id, "", "normal", {}, network.segment)
    ipam.allocate(conn, port_id, network.id, held, fixed_ips)
    return port_id


def _set_extras(conn: Connection, port: Port, values: Mapping[str, Any]) -> bool:
    """Write the allowed address pairs and extra DHCP options sent (port_extras.py),
    the pairs checked against the port's addresses as they are now; whether anything
    was sent (a `port` read before is then stale)."""
    pairs, options = "allowed_address_pairs" in values, bool(values.get("extra_dhcp_opts"))
    if pairs:
        port_extras.set_pairs(conn, port.id, port.mac_address,
                              [ip.ip_address for ip in port.fixed_ips],
                              values["allowed_address_pairs"])
    if options:
        port_extras.set_options(conn, port.id, values["extra_dhcp_opts"])
    return pairs or options


def locked(conn: Connection, guard: Guard, port_id: str, expected: int | None,
           action: str, hold_subnets: bool = False,
           values: Mapping[str, Any] | None = None) -> Port:
    """The port, read after its network (and subnets) are share-locked and its revision
    bumped; 404 if the caller cannot see it, 403 if the rules refuse `action` with
    `values`."""
    ctx = guard.ctx
    port = get(conn, ctx, port_id)
    seen = target(port)
    guard.check(action, {**seen, **(values or {})}, _attributes(values or {}),
                lambda: missing(port_id), seen)
    networks.hold(conn, port.network_id)
    if hold_subnets:
        subnets.of_network(conn, port.network_id, hold=True)
    lock(conn, _P, port_id, expected, lambda: missing(port_id))
    return get(conn, ctx, port_id)


def _bandwidth(conn: Connection, policy_id: str | None) -> set[tuple[str, int]]:
    if policy_id is None:
        return set()
    return {(r.direction, r.min_kbps) for r in qos.rules_of(conn, [policy_id])[policy_id]}


def _check_qos_change(conn: Connection, ctx: RequestContext, port: Port,
                      policy_id: str | None) -> None:
    qos.check_usable(conn, ctx, policy_id)
    if "allocation" not in port.binding.profile:
        return
    after = policy_id or port.network_qos_policy_id
    if _bandwidth(conn, port.effective_qos_policy_id) != _bandwidth(conn, after):
        raise e.StatusError(501, "Changing the minimum bandwidth of a port whose bandwidth "
                                 "is allocated in Placement is not supported",
                            e.NOT_IMPLEMENTED)


def _binding_changes(values: Mapping[str, Any]) -> dict[str, Any]:
    """The active binding's new host / vnic_type / profile; null host and profile clear them."""
    changes = {_BINDING_KEYS[k]: v for k, v in values.items() if k in _BINDING_KEYS}
    if "host" in changes:
        changes["host"] = changes["host"] or ""
    if "profile" in changes:
        changes["profile"] = changes["profile"] or {}
    return changes


def update(conn: Connection, guard: Guard, port_id: str, values: Mapping[str, Any],
           expected: int | None) -> Port:
    ctx = guard.ctx
    port = locked(conn, guard, port_id, expected, "update_port",
                  hold_subnets="fixed_ips" in values, values=values)
    ipam.check_count(values.get("fixed_ips"), values.get("device_owner", port.device_owner))
    if "qos_policy_id" in values:
        _check_qos_change(conn, ctx, port, values["qos_policy_id"])
    changes = {k: values[k] for k in ("name", "description", "admin_state_up", "device_id",
                                      "device_owner", "qos_policy_id") if k in values}
    if changes:
        conn.execute(_P.update().where(_P.c.id == port_id).values(**changes))
    if "fixed_ips" in values:
        ipam.reallocate(conn, port_id, port.network_id,
                        subnets.of_network(conn, port.network_id), port.fixed_ips,
                        values["fixed_ips"])
    if "security_groups" in values:
        security_groups.set_port_groups(conn, port_id, port.project_id,
                                        values["security_groups"])
    binding = _binding_changes(values)
    if binding:
        bindings.rebind_active(conn, port.binding, port.bindings, binding, port.segment)
    if "allowed_address_pairs" in values or "fixed_ips" in values:
        after = get(conn, ctx, port_id)
        _set_extras(conn, after, {"allowed_address_pairs": values.get(
            "allowed_address_pairs", after.address_pairs), **values})
    elif values.get("extra_dhcp_opts"):
        _set_extras(conn, port, values)
    return get(conn, ctx, port_id)


def delete(conn: Connection, guard: Guard, port_id: str, expected: int | None) -> Port:
    """Delete the port; returns it as it was (its owner is told, see compute_events.py)."""
    port = locked(conn, guard, port_id, expected, "delete_port")
    if port.device_owner in L3_OWNERS and _device_exists(conn, port):
        raise e.in_use("ServicePortInUse", f"Port {port_id} cannot be deleted directly via "
                       f"the port API: has device owner {port.device_owner}.")
    # Neutron disassociates the port's floating IPs (the foreign key would only clear
    # the port).
    fip = t.floatingips
    conn.execute(fip.update().where(fip.c.fixed_port_id == port_id).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None,
        revision_number=fip.c.revision_number + 1, updated_at=utcnow()))
    conn.execute(_P.delete().where(_P.c.id == port_id))
    return port


def _device_exists(conn: Connection, port: Port) -> bool:
    """Whether the router or floating IP a port says it belongs to exists (Neutron lets
    a stray one be deleted)."""
    table = t.floatingips if port.device_owner == "network:floatingip" else t.routers
    found = conn.execute(sa.select(table.c.id).where(table.c.id == port.device_id))
    return found.first() is not None


def resource_requests(conn: Connection, ports: Sequence[Port],
                      fmt: str) -> dict[str, dict[str, Any] | None]:
    """Each port's `resource_request` in format `fmt` (see `resource_request`)."""
    rules = qos.rules_of(conn, {p.effective_qos_policy_id for p in ports
                                if p.effective_qos_policy_id})
    found: dict[str, dict[str, Any] | None] = {}
    for port in ports:
        applied = rules.get(port.effective_qos_policy_id or "", [])
        found[port.id] = resource_request.build(
            port.id, port.binding.vnic_type, port.segment.physical_network,
            [resource_request.BandwidthRule(r.id, r.direction, r.min_kbps) for r in applied],
            fmt)
    return found
