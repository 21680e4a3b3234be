"""Router interfaces: `add_router_interface` / `remove_router_interface` by subnet or port,
and the atomic route changes of extension `extraroute-atomic`.

By subnet, the interface is a new port holding the subnet's gateway IP; by
port, the caller's port (without a device) becomes the interface. Either
way the port's `device_owner` is network:router_interface and its
`device_id` the router's id. A router has one interface per subnet and no
two interfaces on overlapping prefixes (400, Neutron's messages). Removing
an interface that floating IPs or static routes go through is 409.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.config import NetworkSettings
from stowage.network import errors as e
from stowage.network import networks, ports, routers, subnets
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.routers import INTERFACE, Router
from stowage.network.standard import lock

__all__ = ["add", "remove", "change_routes"]

_P = t.ports


def _bad(message: str) -> Exception:
    return e.bad_request("router", message)


def _check_info(info: Mapping[str, Any]) -> None:
    if "port_id" in info and "subnet_id" in info:
        raise _bad("Cannot specify both subnet-id and port-id")
    if "port_id" not in info and "subnet_id" not in info:
        raise _bad("Either subnet_id or port_id must be specified")


def _attached(conn: Connection, router: Router) -> list[subnets.Subnet]:
    """The subnets the router has interfaces on."""
    ids = {ip.subnet_id for p in routers.interface_ports(conn, router.id) for ip in p.fixed_ips}
    found = [subnets.get_any(conn, subnet_id) for subnet_id in sorted(ids)]
    return [s for s in found if s is not None]


def _check_new_subnets(conn: Connection, router: Router,
                       new: Sequence[subnets.Subnet]) -> None:
    """Neutron's duplicate and overlap checks of a new interface's subnets."""
    existing = _attached(conn, router)
    for subnet in new:
        for other in existing:
            if other.id == subnet.id:
                raise _bad(f"Router already has a port on subnet {subnet.id}")
            if subnet.net.overlaps(other.net):
                raise _bad(f"Cidr {subnet.cidr} of subnet {subnet.id} overlaps with cidr "
                           f"{other.cidr} of subnet {other.id}")


def _answer(router: Router, port: ports.Port) -> dict[str, Any]:
    """Neutron's answer: the router, and the port with its owner and subnets."""
    subnet_ids = [ip.subnet_id for ip in port.fixed_ips]
    return {"id": router.id, "tenant_id": port.project_id, "project_id": port.project_id,
            "port_id": port.id, "network_id": port.network_id,
            "subnet_id": subnet_ids[0] if subnet_ids else None, "subnet_ids": subnet_ids}


def _by_subnet(conn: Connection, guard: Guard, router: Router, subnet_id: str,
               settings: NetworkSettings) -> str:
    subnet = subnets.get(conn, guard.ctx, subnet_id)
    if not subnet.gateway_ip:
        raise _bad("Subnet for router interface must have a gateway IP")
    _check_new_subnets(conn, router, [subnet])
    return ports.create_owned(conn, subnet.network_id, subnet.project_id, INTERFACE,
                              router.id, [{"subnet_id": subnet.id,
                                           "ip_address": subnet.gateway_ip}],
                              settings.base_mac)


def _by_port(conn: Connection, guard: Guard, router: Router, port_id: str) -> str:
    port = ports.get(conn, guard.ctx, port_id)
    if port.device_id:
        raise e.in_use("PortInUse", f"Unable to complete operation on port {port.id} for "
                       f"network {port.network_id}. Port already has an attached device "
                       f"{port.device_id}.")
    if not port.fixed_ips:
        raise _bad("Router port must have at least one fixed IP")
    found = [subnets.get_any(conn, ip.subnet_id) for ip in port.fixed_ips]
    new = [s for s in found if s is not None]
    if len([s for s in new if s.ip_version == 4]) > 1:
        raise _bad("Cannot have multiple IPv4 subnets on router port")
    _check_new_subnets(conn, router, new)
    networks.hold(conn, port.network_id)
    lock(conn, _P, port.id, None, lambda: ports.missing(port_id))
    conn.execute(_P.update().where(_P.c.id == port.id).values(
        device_id=router.id, device_owner=INTERFACE))
    return port.id


def add(conn: Connection, guard: Guard, router_id: str, info: Mapping[str, Any],
        settings: NetworkSettings) -> dict[str, Any]:
    """Attach a subnet or a port; returns Neutron's answer (router, port, subnets)."""
    _check_info(info)
    router = routers.locked(conn, guard, router_id, None, "add_router_interface")
    if "port_id" in info:
        port_id = _by_port(conn, guard, router, info["port_id"])
    else:
        port_id = _by_subnet(conn, guard, router, info["subnet_id"], settings)
    return _answer(router, ports.of_ids(conn, [port_id])[port_id])


def _interface(conn: Connection, router: Router, info: Mapping[str, Any]) -> ports.Port:
    """The interface `info` names: by port, or the one holding an address of the subnet."""
    found = routers.interface_ports(conn, router.id)
    if "port_id" in info:
        for port in found:
            if port.id == info["port_id"]:
                subnet_ids = {ip.subnet_id for ip in port.fixed_ips}
                if "subnet_id" in info and info["subnet_id"] not in subnet_ids:
                    raise _bad(f"Subnet on port {port.id} does not match the requested "
                               f"subnet {info['subnet_id']}")
                return port
        raise e.not_found("RouterInterfaceNotFound", f"Router {router.id} does not have an "
                          f"interface with id {info['port_id']}")
    for port in found:
        if any(ip.subnet_id == info["subnet_id"] for ip in port.fixed_ips):
            return port
    raise e.not_found("RouterInterfaceNotFoundForSubnet", f"Router {router.id} has no "
                      f"interface on subnet {info['subnet_id']}")


def _check_unused(conn: Connection, router: Router, port: ports.Port) -> None:
    """409 while floating IPs or static routes go through the interface's subnets."""
    f = t.floatingips
    fixed = conn.execute(sa.select(f.c.fixed_ip_address).where(
        f.c.router_id == router.id, f.c.fixed_ip_address.is_not(None))).scalars().all()
    for ip in port.fixed_ips:
        subnet = subnets.get_any(conn, ip.subnet_id)
        if subnet is None:
            continue
        if any(ipaddress.ip_address(a) in subnet.net for a in fixed):
            raise e.in_use("RouterInterfaceInUseByFloatingIP", "Router interface for subnet "
                           f"{subnet.id} on router {router.id} cannot be deleted, as it is "
                           "required by one or more floating IPs.")
        if any(ipaddress.ip_address(r["nexthop"]) in subnet.net for r in router.routes):
            raise e.in_use("RouterInterfaceInUseByRoute", "Router interface for subnet "
                           f"{subnet.id} on router {router.id} cannot be deleted, as it is "
                           "required by one or more routes.")


def remove(conn: Connection, guard: Guard, router_id: str,
           info: Mapping[str, Any]) -> dict[str, Any]:
    """Detach an interface (its port is deleted, as Neutron does); returns the answer."""
    if "port_id" not in info and "subnet_id" not in info:
        raise _bad("Either subnet_id or port_id must be specified")
    router = routers.locked(conn, guard, router_id, None, "remove_router_interface")
    port = _interface(conn, router, info)
    _check_unused(conn, router, port)
    networks.hold(conn, port.network_id)
    conn.execute(_P.delete().where(_P.c.id == port.id))
    return _answer(router, port)


def change_routes(conn: Connection, guard: Guard, router_id: str,
                  routes: Sequence[Mapping[str, str]], adding: bool) -> Router:
    """`add_extraroutes` / `remove_extraroutes`: the router's routes plus (or less) these,
    in one locked read-modify-write."""
    action = "add_extraroutes" if adding else "remove_extraroutes"
    router = routers.locked(conn, guard, router_id, None, action)
    current = [dict(r) for r in router.routes]
    wanted = [dict(r) for r in routes]
    if adding:
        result = current + [r for r in wanted if r not in current]
        routers.check_routes(conn, router, result)
    else:
        result = [r for r in current if r not in wanted]
    conn.execute(t.routers.update().where(t.routers.c.id == router_id).values(routes=result))
    return routers.get(conn, guard.ctx, router_id)
