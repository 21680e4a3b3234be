"""Floating IPs: an address of an external network, held by a port the service makes
(`device_owner` network:floatingip, no project), and its association with a fixed IP
of a port.

An association needs a router that has an interface on the fixed IP's
subnet and its gateway on the floating IP's network (else 404
ExternalGatewayForFloatingIPNotFound, as Neutron); the router becomes the
floating IP's `router_id`. `floatingips (floating_network_id, fixed_port_id,
fixed_ip_address)` is unique, so a fixed IP has one floating IP per external
network even when two requests associate at once (409
FloatingIPPortAlreadyAssociated). Status is ACTIVE while
associated, DOWN otherwise. Deleting the associated port disassociates
(ports.py); the quota is counted on `floatingips` rows.
"""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import NetworkSettings
from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import ipam, networks, ports, quotas, routers
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.standard import lock, utcnow

__all__ = ["FloatingIp", "OWNER", "missing", "target", "get", "list_floating_ips", "create",
           "update", "delete"]

OWNER = "network:floatingip"
_F = t.floatingips
_P = t.ports


@dataclass
class FloatingIp:
    id: str
    project_id: str
    description: str
    floating_network_id: str
    floating_port_id: str
    floating_ip_address: str
    port_id: str | None
    fixed_ip_address: str | None
    router_id: str | None
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime

    @property
    def status(self) -> str:
        return "ACTIVE" if self.port_id else "DOWN"


def missing(fip_id: str) -> DomainError:
    return e.not_found("FloatingIPNotFound", f"Floating IP {fip_id} could not be found")


def target(fip: FloatingIp) -> dict[str, object]:
    return {"id": fip.id, "project_id": fip.project_id, "tenant_id": fip.project_id}


def _fips(conn: Connection, where: sa.ColumnElement[bool]) -> list[FloatingIp]:
    rows = conn.execute(sa.select(_F).where(where).order_by(_F.c.created_at, _F.c.id))
    return [FloatingIp(r.id, r.project_id, r.description, r.floating_network_id,
                       r.floating_port_id, r.floating_ip_address, r.fixed_port_id,
                       r.fixed_ip_address, r.router_id, int(r.revision_number), r.created_at,
                       r.updated_at) for r in rows]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    return _F.c.project_id == (ctx.project_id or "")


def get(conn: Connection, ctx: RequestContext, fip_id: str) -> FloatingIp:
    found = _fips(conn, sa.and_(_F.c.id == fip_id, _visible(ctx)))
    if not found:
        raise missing(fip_id)
    return found[0]


def list_floating_ips(conn: Connection, ctx: RequestContext) -> list[FloatingIp]:
    return _fips(conn, _visible(ctx))


def _bad(message: str) -> DomainError:
    return e.bad_request("floatingip", message)


def _address_request(conn: Connection, values: Mapping[str, Any],
                     network_id: str) -> list[dict[str, str]] | None:
    """What the floating port asks IPAM for: the named address and/or subnet, else None
    (any IPv4 address of the network)."""
    subnet_id, address = values.get("subnet_id"), values.get("floating_ip_address")
    if subnet_id is not None:
        on = conn.execute(sa.select(t.subnets.c.network_id)
                          .where(t.subnets.c.id == subnet_id)).scalar()
        if on != network_id:
            raise _bad(f"Subnet {subnet_id} is not on the floating network {network_id}")
    if address is None and subnet_id is None:
        return None
    request = {"ip_address": address} if address else {}
    if subnet_id:
        request["subnet_id"] = subnet_id
    return [request]


def _external_network(conn: Connection, network_id: str) -> None:
    found = conn.execute(sa.select(t.networks.c.router_external)
                         .where(t.networks.c.id == network_id)).first()
    if found is None:
        raise networks.missing(network_id)
    if not found.router_external:
        raise _bad(f"Network {network_id} is not a valid external network")
    s = t.subnets
    if conn.execute(sa.select(s.c.id).where(s.c.network_id == network_id,
                                            s.c.ip_version == 4).limit(1)).first() is None:
        raise _bad(f"Network {network_id} does not contain any IPv4 subnet")


def create(conn: Connection, guard: Guard, values: Mapping[str, Any],
           settings: NetworkSettings) -> FloatingIp:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    _check_port_given(values)
    guard.check("create_floatingip", {**values, "project_id": project_id,
                                      "tenant_id": project_id}, list(values))
    quotas.claim(conn, project_id, "floatingip")
    network_id = values["floating_network_id"]
    _external_network(conn, network_id)
    fip_id = str(uuid.uuid4())
    port_id = ports.create_owned(conn, network_id, "", OWNER, fip_id,
                                 _address_request(conn, values, network_id),
                                 settings.base_mac, ip_version=4)
    address = ipam.of_ports(conn, [port_id])[port_id]
    if not address:
        raise e.in_use(e.IP_GENERATION_FAILURE,
                       f"No more IP addresses available on network {network_id}.")
    now = utcnow()
    conn.execute(_F.insert().values(
        id=fip_id, project_id=project_id, description=values.get("description", ""),
        floating_network_id=network_id, floating_port_id=port_id,
        floating_ip_address=address[0].ip_address, fixed_port_id=None, fixed_ip_address=None,
        router_id=None, revision_number=0, created_at=now, updated_at=now))
    fip = get(conn, ctx, fip_id)
    if not values.get("port_id"):
        return fip
    _associate(conn, ctx, fip, values["port_id"], values.get("fixed_ip_address"),
               creating=True)
    return get(conn, ctx, fip_id)


def _check_port_given(values: Mapping[str, Any]) -> None:
    if values.get("fixed_ip_address") and not values.get("port_id"):
        raise _bad("fixed_ip_address cannot be specified without a port_id")


def _fixed_ip(port: ports.Port, wanted: str | None, fip_id: str | None) -> ipam.FixedIp:
    """The port's fixed IP the floating IP goes to: the one named, or its only IPv4 one."""
    if wanted is not None and ipaddress.ip_address(wanted).version != 4:
        if fip_id is None:
            raise _bad(f"Cannot create floating IP and bind it to {wanted}, since that is "
                       "not an IPv4 address")
        raise _bad(f"Floating IP {fip_id} is associated with non-IPv4 address {wanted} and "
                   "therefore cannot be bound")
    if wanted is not None:
        for ip in port.fixed_ips:
            if ipaddress.ip_address(ip.ip_address) == ipaddress.ip_address(wanted):
                return ip
        raise _bad(f"Port {port.id} does not have fixed ip {wanted}")
    v4 = [ip for ip in port.fixed_ips if ipaddress.ip_address(ip.ip_address).version == 4]
    if not v4:
        raise _bad(f"Cannot add floating IP to port {port.id} that has no fixed IPv4 "
                   "addresses")
    if len(v4) > 1:
        raise _bad(f"Port {port.id} has multiple fixed IPv4 addresses.  Must provide a "
                   "specific IPv4 address when assigning a floating IP")
    return v4[0]


def _router_for(conn: Connection, fip: FloatingIp, port_id: str, fixed: ipam.FixedIp) -> str:
    """The router joining the fixed IP's subnet to the floating IP's network."""
    a, r = t.ip_allocations, t.routers
    # SELECT routers.id FROM ip_allocations JOIN ports JOIN routers ON routers.id = device_id
    #  WHERE subnet_id = :subnet AND device_owner = interface AND gw_network_id = :net
    query = (sa.select(r.c.id).select_from(a.join(_P, _P.c.id == a.c.port_id)
                                           .join(r, r.c.id == _P.c.device_id))
             .where(a.c.subnet_id == fixed.subnet_id, _P.c.device_owner == routers.INTERFACE,
                    r.c.gw_network_id == fip.floating_network_id)
             .order_by(r.c.created_at, r.c.id).limit(1))
    found = conn.execute(query).scalar()
    if found is not None:
        # Share-lock the router, then look again: an interface or gateway removal that
        # held it (its revision bump) has committed by now, and is seen.
        conn.execute(sa.select(r.c.id).where(r.c.id == found).with_for_update(read=True))
        found = conn.execute(query).scalar()
    if found is None:
        raise e.not_found("ExternalGatewayForFloatingIPNotFound", "External network "
                          f"{fip.floating_network_id} is not reachable from subnet "
                          f"{fixed.subnet_id}.  Therefore, cannot associate Port {port_id} "
                          "with a Floating IP.")
    return str(found)


def _associate(conn: Connection, ctx: RequestContext, fip: FloatingIp, port_id: str,
               wanted: str | None, creating: bool = False) -> None:
    port = ports.get(conn, ctx, port_id)
    if port.project_id != fip.project_id and not ctx.is_admin:
        if creating:
            raise _bad(f"Cannot create floating IP and bind it to Port {port_id}, since "
                       "that port is owned by a different tenant")
        raise _bad(f"Port {port_id} is associated with a different tenant than Floating IP "
                   f"{fip.id} and therefore cannot be bound")
    fixed = _fixed_ip(port, wanted, None if creating else fip.id)
    subnet = conn.execute(sa.select(t.subnets.c.gateway_ip)
                          .where(t.subnets.c.id == fixed.subnet_id)).first()
    if subnet is not None and not subnet.gateway_ip:
        raise _bad(f"Cannot add floating IP to port on subnet {fixed.subnet_id} which has "
                   "no gateway_ip")
    router_id = _router_for(conn, fip, port_id, fixed)
    taken = conn.execute(sa.select(_F.c.id).where(
        _F.c.fixed_port_id == port_id, _F.c.fixed_ip_address == fixed.ip_address,
        _F.c.floating_network_id == fip.floating_network_id, _F.c.id != fip.id)).first()
    refusal = e.in_use("FloatingIPPortAlreadyAssociated", "Cannot associate floating IP "
                       f"{fip.floating_ip_address} ({fip.id}) with port {port_id} using "
                       f"fixed IP {fixed.ip_address}, as that fixed IP already has a floating "
                       f"IP on external network {fip.floating_network_id}.")
    if taken is not None:
        raise refusal
    try:
        # A concurrent association of the same fixed IP loses here (the unique key).
        with conn.begin_nested():
            conn.execute(_F.update().where(_F.c.id == fip.id).values(
                fixed_port_id=port_id, fixed_ip_address=fixed.ip_address,
                router_id=router_id))
    except sa.exc.IntegrityError:
        raise refusal from None

def _disassociate(conn: Connection, fip_id: str) -> None:
    conn.execute(_F.update().where(_F.c.id == fip_id).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None))


def _locked(conn: Connection, guard: Guard, fip_id: str, expected: int | None,
            action: str, values: Mapping[str, Any] | None = None) -> FloatingIp:
    fip = get(conn, guard.ctx, fip_id)
    seen = target(fip)
    guard.check(action, {**seen, **(values or {})}, list(values or ()),
                lambda: missing(fip_id), seen)
    lock(conn, _F, fip_id, expected, lambda: missing(fip_id))
    return get(conn, guard.ctx, fip_id)


def update(conn: Connection, guard: Guard, fip_id: str, values: Mapping[str, Any],
           expected: int | None) -> FloatingIp:
    fip = _locked(conn, guard, fip_id, expected, "update_floatingip", values)
    _check_port_given(values)
    if "description" in values:
        conn.execute(_F.update().where(_F.c.id == fip_id)
                     .values(description=values["description"]))
    if "port_id" in values:
        if values["port_id"] is None:
            _disassociate(conn, fip_id)
        else:
            _associate(conn, guard.ctx, fip, values["port_id"],
                       values.get("fixed_ip_address"))
    return get(conn, guard.ctx, fip_id)


def delete(conn: Connection, guard: Guard, fip_id: str, expected: int | None) -> None:
    fip = _locked(conn, guard, fip_id, expected, "delete_floatingip")
    conn.execute(_F.delete().where(_F.c.id == fip_id))
    networks.hold(conn, fip.floating_network_id)
    conn.execute(_P.delete().where(_P.c.id == fip.floating_port_id))

