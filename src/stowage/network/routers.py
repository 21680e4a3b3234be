"""Router records (extensions `router`, `ext-gw-mode`, `extraroute`): create, read, list,
update, delete, and the external gateway.

A router's gateway is a port the service makes on an external network
(`device_owner` network:router_gateway, no project, as Neutron makes it) with
an address of each IP version the network has, or the `external_fixed_ips`
an admin names. Interfaces (router_interfaces.py) are ports with
`device_owner` network:router_interface and the router's id as `device_id`.

Every write locks the router's row first (its revision bump), then the
networks, subnets and ports it touches, in the order ports.py uses.
Static routes (`routes`) must go through a subnet the router has a port on,
and not to one of the router's own addresses (400 InvalidRoutes).
"""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import NetworkSettings
from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import ipam, networks, ports, quotas, subnets
from stowage.network import tables as t
from stowage.network.addresses import Net
from stowage.network.ipam import FixedIp
from stowage.network.policy import Guard
from stowage.network.standard import lock, utcnow

__all__ = ["Router", "GATEWAY", "INTERFACE", "MAX_ROUTES", "missing", "target", "get",
           "list_routers", "create", "update", "delete", "locked", "interface_ports",
           "check_routes", "gateway_attributes"]

GATEWAY = "network:router_gateway"
INTERFACE = "network:router_interface"
# Neutron's max_routes default.
MAX_ROUTES = 30
_R = t.routers
_P = t.ports


@dataclass
class Router:
    id: str
    project_id: str
    name: str
    description: str
    admin_state_up: bool
    gw_port_id: str | None
    gw_network_id: str | None
    enable_snat: bool
    routes: list[dict[str, str]]
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    gw_ips: list[FixedIp] = field(default_factory=list)
    status: str = "ACTIVE"


def missing(router_id: str) -> DomainError:
    return e.not_found("RouterNotFound", f"Router {router_id} could not be found")


def target(router: Router) -> dict[str, object]:
    return {"id": router.id, "project_id": router.project_id,
            "tenant_id": router.project_id}


def _routers(conn: Connection, where: sa.ColumnElement[bool]) -> list[Router]:
    rows = conn.execute(sa.select(_R).where(where).order_by(_R.c.created_at, _R.c.id)).all()
    ips = ipam.of_ports(conn, [r.gw_port_id for r in rows if r.gw_port_id])
    return [Router(r.id, r.project_id, r.name, r.description, bool(r.admin_state_up),
                   r.gw_port_id, r.gw_network_id, bool(r.enable_snat), list(r.routes),
                   int(r.revision_number), r.created_at, r.updated_at,
                   ips.get(r.gw_port_id or "", [])) for r in rows]


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    return _R.c.project_id == (ctx.project_id or "")


def get(conn: Connection, ctx: RequestContext, router_id: str) -> Router:
    found = _routers(conn, sa.and_(_R.c.id == router_id, _visible(ctx)))
    if not found:
        raise missing(router_id)
    return found[0]


def list_routers(conn: Connection, ctx: RequestContext,
                 ids: Sequence[str] | None = None) -> list[Router]:
    where = _visible(ctx)
    if ids is not None:
        where = sa.and_(where, _R.c.id.in_(list(ids)))
    return _routers(conn, where)


def gateway_attributes(values: Mapping[str, Any]) -> list[str]:
    """The attributes sent, with `external_gateway_info:<key>` for each key of the
    gateway sent (`...:external_fixed_ips` and `...:enable_snat` are admins' only)."""
    names = list(values)
    info = values.get("external_gateway_info")
    if isinstance(info, dict):
        names.extend(f"external_gateway_info:{key}" for key in info)
    return names


def locked(conn: Connection, guard: Guard, router_id: str, expected: int | None,
           action: str, values: Mapping[str, Any] | None = None) -> Router:
    """The router, its revision bumped (and row locked), once the rules allow `action`."""
    router = get(conn, guard.ctx, router_id)
    seen = target(router)
    guard.check(action, {**seen, **(values or {})}, gateway_attributes(values or {}),
                lambda: missing(router_id), seen)
    lock(conn, _R, router_id, expected, lambda: missing(router_id))
    return get(conn, guard.ctx, router_id)


def interface_ports(conn: Connection, router_id: str) -> list[ports.Port]:
    """The router's interfaces, oldest first."""
    found = ports.of_ids(conn, conn.execute(sa.select(_P.c.id).where(
        _P.c.device_id == router_id, _P.c.device_owner == INTERFACE)).scalars().all())
    return sorted(found.values(), key=lambda p: (p.created_at, p.id))


def _external(conn: Connection, network_id: str) -> networks.Network:
    """The gateway's network: it must exist and be external."""
    found = conn.execute(sa.select(t.networks.c.router_external)
                         .where(t.networks.c.id == network_id)).first()
    if found is None:
        raise networks.missing(network_id)
    if not found.router_external:
        raise e.bad_request("router", f"Network {network_id} is not an external network")
    return networks.hold(conn, network_id)


def _check_gateway_unused(conn: Connection, router: Router) -> None:
    """Neutron keeps a gateway that associated floating IPs reach the outside through."""
    f = t.floatingips
    used = conn.execute(sa.select(f.c.id).where(
        f.c.router_id == router.id, f.c.floating_network_id == router.gw_network_id).limit(1))
    if used.first() is not None:
        raise e.in_use("RouterExternalGatewayInUseByFloatingIp", "Gateway cannot be updated "
                       f"for router {router.id}, since a gateway to external network "
                       f"{router.gw_network_id} is required by one or more floating IPs.")


def _clear_gateway(conn: Connection, router: Router) -> None:
    if router.gw_port_id is None:
        return
    _check_gateway_unused(conn, router)
    conn.execute(_R.update().where(_R.c.id == router.id).values(
        gw_port_id=None, gw_network_id=None, enable_snat=True))
    conn.execute(_P.delete().where(_P.c.id == router.gw_port_id))


def _set_gateway(conn: Connection, router: Router, info: Mapping[str, Any],
                 settings: NetworkSettings) -> None:
    """Make the router's gateway what `info` says (None or {}: no gateway)."""
    network_id = (info or {}).get("network_id")
    if network_id is None:
        _clear_gateway(conn, router)
        return
    snat = bool(info.get("enable_snat", True))
    fixed = info.get("external_fixed_ips")
    if network_id != router.gw_network_id:
        _clear_gateway(conn, router)
        _external(conn, network_id)
        port_id = ports.create_owned(conn, network_id, "", GATEWAY, router.id, fixed or None,
                                     settings.base_mac)
        conn.execute(_R.update().where(_R.c.id == router.id).values(
            gw_port_id=port_id, gw_network_id=network_id, enable_snat=snat))
        return
    conn.execute(_R.update().where(_R.c.id == router.id).values(enable_snat=snat))
    if fixed and router.gw_port_id is not None:
        networks.hold(conn, network_id)
        ipam.reallocate(conn, router.gw_port_id, network_id,
                        subnets.of_network(conn, network_id, hold=True), router.gw_ips, fixed)


def _router_cidrs(conn: Connection, router: Router) -> tuple[list[Net], set[str]]:
    """The prefixes of the subnets the router has ports on, and its own addresses."""
    a = t.ip_allocations
    # SELECT subnet_id, ip_address FROM ip_allocations JOIN ports ... WHERE device_id = :r
    rows = conn.execute(sa.select(a.c.subnet_id, a.c.ip_address)
                        .select_from(a.join(_P, _P.c.id == a.c.port_id))
                        .where(_P.c.device_id == router.id,
                               _P.c.device_owner.in_([GATEWAY, INTERFACE]))).all()
    cidrs = conn.execute(sa.select(t.subnets.c.cidr).where(
        t.subnets.c.id.in_([r.subnet_id for r in rows]))).scalars().all()
    return [ipaddress.ip_network(c) for c in cidrs], {r.ip_address for r in rows}


def _invalid_routes(routes: Sequence[Mapping[str, str]], reason: str) -> DomainError:
    return DomainError(f"Invalid format for routes: {list(routes)}, {reason}",
                       "InvalidRoutes")


def check_routes(conn: Connection, router: Router,
                 routes: Sequence[Mapping[str, str]]) -> None:
    """400 unless every route's nexthop is on a subnet the router is connected to and
    is none of the router's own addresses; at most MAX_ROUTES of them."""
    if len(routes) > MAX_ROUTES:
        raise DomainError(f"Unable to complete operation for {router.id}. The number of "
                          f"routes exceeds the maximum {MAX_ROUTES}.", "RoutesExhausted")
    cidrs, own = _router_cidrs(conn, router)
    for route in routes:
        nexthop = ipaddress.ip_address(route["nexthop"])
        if not any(nexthop in cidr for cidr in cidrs):
            raise _invalid_routes(routes, "the nexthop is not connected with router")
        if str(nexthop) in own:
            raise _invalid_routes(routes, "the nexthop is used by router")


def create(conn: Connection, guard: Guard, values: Mapping[str, Any],
           settings: NetworkSettings) -> Router:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    owner = {"project_id": project_id, "tenant_id": project_id}
    guard.check("create_router", {**values, **owner}, gateway_attributes(values))
    quotas.claim(conn, project_id, "router")
    now = utcnow()
    row = {"id": str(uuid.uuid4()), "project_id": project_id,
           "name": values.get("name", ""), "description": values.get("description", ""),
           "admin_state_up": values.get("admin_state_up", True), "gw_port_id": None,
           "gw_network_id": None, "enable_snat": True, "routes": [], "revision_number": 0,
           "created_at": now, "updated_at": now}
    conn.execute(_R.insert().values(**row))
    router = get(conn, ctx, row["id"])
    if not values.get("external_gateway_info"):
        return router
    _set_gateway(conn, router, values["external_gateway_info"], settings)
    return get(conn, ctx, row["id"])


def update(conn: Connection, guard: Guard, router_id: str, values: Mapping[str, Any],
           expected: int | None, settings: NetworkSettings) -> Router:
    router = locked(conn, guard, router_id, expected, "update_router", values)
    changes = {k: values[k] for k in ("name", "description", "admin_state_up") if k in values}
    if changes:
        conn.execute(_R.update().where(_R.c.id == router_id).values(**changes))
    if "external_gateway_info" in values:
        _set_gateway(conn, router, values["external_gateway_info"], settings)
        router = get(conn, guard.ctx, router_id)
    if "routes" in values:
        check_routes(conn, router, values["routes"])
        conn.execute(_R.update().where(_R.c.id == router_id).values(routes=values["routes"]))
    return get(conn, guard.ctx, router_id)


def delete(conn: Connection, guard: Guard, router_id: str, expected: int | None) -> None:
    router = locked(conn, guard, router_id, expected, "delete_router")
    if interface_ports(conn, router_id):
        raise e.in_use("RouterInUse", f"Router {router_id} still has ports")
    f = t.floatingips
    if conn.execute(sa.select(f.c.id).where(f.c.router_id == router_id).limit(1)).first():
        raise e.in_use("RouterInUse", f"Router {router_id} still has ports")
    _clear_gateway(conn, router)
    conn.execute(_R.delete().where(_R.c.id == router_id))
