"""Subnet records: an IP prefix of a network, its gateway and the pools ports get addresses from.

Subnets of one network must not overlap; creating or deleting one bumps the
network's revision (as Neutron does), which also serialises those checks.
A subnet with addresses still held by ports cannot be deleted (409
SubnetInUse), except those of ports the service owns itself.
"""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError, Invalid
from stowage.network import addresses as a
from stowage.network import errors as e
from stowage.network import networks, quotas
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.standard import lock, utcnow

__all__ = ["Subnet", "get", "get_any", "list_subnets", "of_network", "create", "update", "delete",
           "missing", "targets", "MAX_DNS_NAMESERVERS", "MAX_HOST_ROUTES"]

# Neutron's max_dns_nameservers and max_subnet_host_routes defaults.
MAX_DNS_NAMESERVERS = 5
MAX_HOST_ROUTES = 20
_S = t.subnets
_N = t.networks


@dataclass
class Subnet:
    id: str
    network_id: str
    project_id: str
    name: str
    description: str
    ip_version: int
    cidr: str
    gateway_ip: str | None
    allocation_pools: list[dict[str, str]]
    enable_dhcp: bool
    dns_nameservers: list[str]
    host_routes: list[dict[str, str]]
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    # The pool its prefix was allocated from (subnetpools.py), if any.
    subnetpool_id: str | None = None

    @property
    def net(self) -> a.Net:
        return ipaddress.ip_network(self.cidr)

    @property
    def pools(self) -> list[a.Pool]:
        return [a.Pool(ipaddress.ip_address(p["start"]), ipaddress.ip_address(p["end"]))
                for p in self.allocation_pools]


def missing(subnet_id: str) -> DomainError:
    return e.not_found(e.SUBNET_NOT_FOUND, f"Subnet {subnet_id} could not be found.")


def targets(conn: Connection, found: Sequence[Subnet]) -> dict[str, dict[str, object]]:
    """What the policy rules see of each subnet: itself, its network's owner and whether
    that network is shared (Neutron's `rule:shared` reads the network)."""
    ids = {s.network_id for s in found}
    # SELECT id, project_id, shared FROM networks WHERE id IN (:ids)
    rows = {r.id: r for r in conn.execute(sa.select(_N.c.id, _N.c.project_id, _N.c.shared)
                                          .where(_N.c.id.in_(list(ids))))} if ids else {}
    return {s.id: {"id": s.id, "project_id": s.project_id, "tenant_id": s.project_id,
                   "network_id": s.network_id,
                   "network:tenant_id": rows[s.network_id].project_id,
                   "network:project_id": rows[s.network_id].project_id,
                   "shared": bool(rows[s.network_id].shared)}
            for s in found if s.network_id in rows}


def _to_subnet(r: Any) -> Subnet:
    """A subnet of a row (with `subnetpool_id` where the query joined it: `_subnets`)."""
    return Subnet(r.id, r.network_id, r.project_id, r.name, r.description, int(r.ip_version),
                  r.cidr, r.gateway_ip, list(r.allocation_pools), bool(r.enable_dhcp),
                  list(r.dns_nameservers), list(r.host_routes), int(r.revision_number),
                  r.created_at, r.updated_at, r._mapping.get("subnetpool_id"))


def _subnets(conn: Connection, where: sa.ColumnElement[bool]) -> list[Subnet]:
    # SELECT subnets.*, subnetpool_allocations.subnetpool_id FROM subnets
    #  JOIN networks ON networks.id = subnets.network_id
    #  LEFT JOIN subnetpool_allocations ON subnet_id = subnets.id
    #  WHERE <where> ORDER BY subnets.created_at, subnets.id
    pools = t.subnetpool_allocations
    query = (sa.select(_S, pools.c.subnetpool_id)
             .select_from(_S.join(_N, _N.c.id == _S.c.network_id)
                          .outerjoin(pools, pools.c.subnet_id == _S.c.id))
             .where(where).order_by(_S.c.created_at, _S.c.id))
    return [_to_subnet(r) for r in conn.execute(query)]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    return sa.or_(_N.c.shared.is_(True), _S.c.project_id == (ctx.project_id or ""))


def get(conn: Connection, ctx: RequestContext, subnet_id: str) -> Subnet:
    found = _subnets(conn, sa.and_(_S.c.id == subnet_id, _visible(ctx)))
    if not found:
        raise missing(subnet_id)
    return found[0]


def get_any(conn: Connection, subnet_id: str) -> Subnet | None:
    """The subnet, whoever may see it (a router's view of its own interfaces)."""
    found = _subnets(conn, _S.c.id == subnet_id)
    return found[0] if found else None


def list_subnets(conn: Connection, ctx: RequestContext,
                 ids: Sequence[str] | None = None) -> list[Subnet]:
    where = _visible(ctx)
    if ids is not None:
        where = sa.and_(where, _S.c.id.in_(list(ids)))
    return _subnets(conn, where)


def of_network(conn: Connection, network_id: str, hold: bool = False) -> list[Subnet]:
    """The network's subnets in creation order; `hold` share-locks them until commit."""
    query = sa.select(_S).where(_S.c.network_id == network_id).order_by(_S.c.created_at,
                                                                        _S.c.id)
    if hold:
        query = query.with_for_update(read=True)
    return [_to_subnet(r) for r in conn.execute(query)]


def _gateway(values: Mapping[str, Any], net: a.Net, current: str | None) -> a.Addr | None:
    if "gateway_ip" not in values:
        return a.parse_address(current) if current else a.default_gateway(net)
    gateway = a.parse_address(values["gateway_ip"]) if values["gateway_ip"] else None
    a.check_gateway(net, gateway)
    return gateway


def _layout(values: Mapping[str, Any], net: a.Net,
            current: Subnet | None) -> tuple[a.Addr | None, list[a.Pool]]:
    """The gateway and pools after applying `values` to `current` (None on create)."""
    gateway = _gateway(values, net, current.gateway_ip if current else None)
    if values.get("allocation_pools") is not None:
        return gateway, a.check_pools(net, values["allocation_pools"], gateway)
    if current is None:
        return gateway, a.default_pools(net, gateway)
    return gateway, a.check_pools(net, current.allocation_pools, gateway)


def _check_overlap(conn: Connection, network_id: str, net: a.Net) -> None:
    for other in of_network(conn, network_id):
        if other.net.version == net.version and other.net.overlaps(net):
            raise e.invalid_input(f"Requested subnet with cidr: {net} for network: "
                                  f"{network_id} overlaps with another subnet")


def _check_lists(values: Mapping[str, Any], net: a.Net, subnet_id: str | None) -> None:
    """Neutron's limits on the subnet's lists, counted before any entry is looked at."""
    shown = subnet_id or "new subnet"
    if len(values.get("dns_nameservers") or []) > MAX_DNS_NAMESERVERS:
        raise Invalid(f"Unable to complete operation for {shown}. The number of DNS "
                      f"nameservers exceeds the limit {MAX_DNS_NAMESERVERS}.",
                      e.DNS_NAMESERVERS_EXHAUSTED)
    routes = values.get("host_routes") or []
    if len(routes) > MAX_HOST_ROUTES:
        raise Invalid(f"Unable to complete operation for {shown}. The number of host routes "
                      f"exceeds the limit {MAX_HOST_ROUTES}.", e.HOST_ROUTES_EXHAUSTED)
    for route in routes:
        destination = ipaddress.ip_network(route["destination"])
        if destination.version != net.version:
            raise e.invalid_input(f"Host route {route['destination']} does not match the "
                                  f"subnet's IP version {net.version}")


def create(conn: Connection, guard: Guard, values: Mapping[str, Any]) -> Subnet:
    ctx = guard.ctx
    network_id = values["network_id"]
    project_id = values.get("project_id") or ctx.project_id or ""
    parent = networks.parent_target(conn, network_id)
    guard.check("create_subnet", {**values, "project_id": project_id, "tenant_id": project_id,
                                  **parent}, values)
    quotas.claim(conn, project_id, "subnet")
    networks.get(conn, ctx, network_id)
    lock(conn, _N, network_id, None, lambda: networks.missing(network_id))
    net = a.parse_cidr(values["cidr"], values["ip_version"])
    gateway, pools = _layout(values, net, None)
    _check_lists(values, net, None)
    _check_overlap(conn, network_id, net)
    now = utcnow()
    subnet_id = str(uuid.uuid4())
    conn.execute(_S.insert().values(
        id=subnet_id, network_id=network_id,
        project_id=project_id,
        name=values.get("name", ""), description=values.get("description", ""),
        ip_version=net.version, cidr=str(net),
        gateway_ip=str(gateway) if gateway else None, allocation_pools=a.pool_dicts(pools),
        enable_dhcp=values.get("enable_dhcp", True),
        dns_nameservers=list(values.get("dns_nameservers") or []),
        host_routes=list(values.get("host_routes") or []),
        revision_number=0, created_at=now, updated_at=now))
    return get(conn, ctx, subnet_id)


def _owned(conn: Connection, guard: Guard, subnet_id: str, action: str,
           expected: int | None, values: Mapping[str, Any] | None = None) -> Subnet:
    subnet = get(conn, guard.ctx, subnet_id)
    seen = targets(conn, [subnet])[subnet_id]
    guard.check(action, {**seen, **(values or {})}, values or (), lambda: missing(subnet_id),
                seen)
    lock(conn, _S, subnet_id, expected, lambda: missing(subnet_id))
    return subnet


def update(conn: Connection, guard: Guard, subnet_id: str,
           values: Mapping[str, Any], expected: int | None) -> Subnet:
    ctx = guard.ctx
    subnet = _owned(conn, guard, subnet_id, "update_subnet", expected, values)
    gateway, pools = _layout(values, subnet.net, subnet)
    _check_lists(values, subnet.net, subnet_id)
    changes = {k: values[k] for k in ("name", "description", "enable_dhcp",
                                      "dns_nameservers", "host_routes") if k in values}
    changes.update(gateway_ip=str(gateway) if gateway else None,
                   allocation_pools=a.pool_dicts(pools))
    conn.execute(_S.update().where(_S.c.id == subnet_id).values(**changes))
    return get(conn, ctx, subnet_id)


def delete(conn: Connection, guard: Guard, subnet_id: str,
           expected: int | None) -> None:
    subnet = get(conn, guard.ctx, subnet_id)
    lock(conn, _N, subnet.network_id, None, lambda: missing(subnet_id))
    _owned(conn, guard, subnet_id, "delete_subnet", expected)
    ips, p = t.ip_allocations, t.ports
    # SELECT ports.device_owner FROM ip_allocations JOIN ports ON ports.id = port_id
    #  WHERE ip_allocations.subnet_id = :subnet
    owners = conn.execute(sa.select(p.c.device_owner)
                          .select_from(ips.join(p, p.c.id == ips.c.port_id))
                          .where(ips.c.subnet_id == subnet_id)).scalars().all()
    if any(owner not in networks.AUTO_DELETED_OWNERS for owner in owners):
        raise e.in_use(e.SUBNET_IN_USE, f"Unable to complete operation on subnet {subnet_id}: "
                       "One or more ports have an IP allocation from this subnet.")
    conn.execute(ips.delete().where(ips.c.subnet_id == subnet_id))
    conn.execute(_S.delete().where(_S.c.id == subnet_id))
