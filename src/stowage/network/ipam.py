"""Fixed IPs of ports: allocate, keep and release them (Neutron's IPAM, reduced).

A port asks for addresses in one of three ways:

- nothing: one address of each IP version the network has subnets of, from
  the first subnet (in creation order) with a free address in its pools;
- `{"subnet_id": S}`: any free address of the pools of S;
- `{"ip_address": A}` (with or without `subnet_id`): exactly A, which must
  lie in the subnet (or in some subnet of the network), pools or not.

Each allocation is one INSERT into `ip_allocations`, whose primary key
(subnet_id, ip_address) lets one writer win when two ask for the same
address at once; the loser's savepoint is rolled back and it takes the next
free address, or gets 409 IpAddressInUse for an address it named.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import DomainError
from stowage.network import addresses as a
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.standard import try_insert
from stowage.network.subnets import Subnet

__all__ = ["FixedIp", "of_ports", "allocate", "reallocate"]

_A = t.ip_allocations


@dataclass(frozen=True)
class FixedIp:
    subnet_id: str
    ip_address: str


def of_ports(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[FixedIp]]:
    found: dict[str, list[FixedIp]] = {pid: [] for pid in port_ids}
    if not port_ids:
        return found
    rows = conn.execute(sa.select(_A).where(_A.c.port_id.in_(list(port_ids))))
    for row in rows:
        found[row.port_id].append(FixedIp(row.subnet_id, row.ip_address))
    for ips in found.values():
        ips.sort(key=lambda ip: (ipaddress.ip_address(ip.ip_address).version,
                                 ipaddress.ip_address(ip.ip_address)))
    return found


def _taken(conn: Connection, subnet_id: str) -> set[a.Addr]:
    rows = conn.execute(sa.select(_A.c.ip_address).where(_A.c.subnet_id == subnet_id))
    return {ipaddress.ip_address(ip) for ip in rows.scalars()}


def _claim(conn: Connection, port_id: str, subnet: Subnet, address: a.Addr) -> bool:
    return try_insert(conn, _A, {"subnet_id": subnet.id, "ip_address": str(address),
                                 "port_id": port_id, "network_id": subnet.network_id})


def _any_free(conn: Connection, port_id: str, subnet: Subnet) -> FixedIp | None:
    taken = _taken(conn, subnet.id)
    gateway = a.parse_address(subnet.gateway_ip)
    if gateway is not None:
        taken.add(gateway)
    for address in a.candidates(subnet.pools, taken):
        if _claim(conn, port_id, subnet, address):
            return FixedIp(subnet.id, str(address))
    return None


def _exactly(conn: Connection, port_id: str, subnet: Subnet, address: a.Addr) -> FixedIp:
    if not a.usable(subnet.net, address):
        raise DomainError(f"IP address {address} is not a valid IP for the specified subnet.",
                          e.INVALID_IP_FOR_SUBNET)
    if not _claim(conn, port_id, subnet, address):
        raise e.in_use(e.IP_ADDRESS_IN_USE, f"Unable to complete operation for network "
                       f"{subnet.network_id}. The IP address {address} is in use.")
    return FixedIp(subnet.id, str(address))


def _subnet_for(request: Mapping[str, Any], subnets: Sequence[Subnet],
                network_id: str) -> Subnet:
    """The subnet a fixed-IP request names, or the one holding its address."""
    if request.get("subnet_id"):
        for subnet in subnets:
            if subnet.id == request["subnet_id"]:
                return subnet
        raise e.invalid_input(f"Failed to create port on network {network_id}, because "
                              f"fixed_ips included invalid subnet {request['subnet_id']}")
    address = ipaddress.ip_address(request["ip_address"])
    for subnet in subnets:
        if address in subnet.net:
            return subnet
    raise DomainError(f"IP address {address} is not a valid IP for any of the subnets on the "
                      "specified network.", e.INVALID_IP_FOR_NETWORK)


def _one(conn: Connection, port_id: str, request: Mapping[str, Any],
         subnets: Sequence[Subnet], network_id: str) -> FixedIp:
    subnet = _subnet_for(request, subnets, network_id)
    if request.get("ip_address"):
        return _exactly(conn, port_id, subnet, ipaddress.ip_address(request["ip_address"]))
    found = _any_free(conn, port_id, subnet)
    if found is None:
        raise e.in_use(e.IP_GENERATION_FAILURE,
                       f"No more IP addresses available for subnet {subnet.id}.")
    return found


def _automatic(conn: Connection, port_id: str, subnets: Sequence[Subnet],
               network_id: str) -> None:
    """One address per IP version, from the first subnet of that version with room."""
    for version in (4, 6):
        candidates = [s for s in subnets if s.ip_version == version]
        if candidates and not any(_any_free(conn, port_id, s) for s in candidates):
            raise e.in_use(e.IP_GENERATION_FAILURE,
                           f"No more IP addresses available on network {network_id}.")


def allocate(conn: Connection, port_id: str, network_id: str, subnets: Sequence[Subnet],
             requested: Iterable[Mapping[str, Any]] | None) -> None:
    """Give a new port its addresses: the requested ones, or the automatic ones (None)."""
    if requested is None:
        _automatic(conn, port_id, subnets, network_id)
        return
    for request in requested:
        _one(conn, port_id, request, subnets, network_id)


def _kept(request: Mapping[str, Any], current: Sequence[FixedIp],
          taken: set[FixedIp]) -> FixedIp | None:
    """The port's existing address that satisfies `request`, if any (Neutron keeps it)."""
    address = request.get("ip_address")
    for ip in current:
        if ip in taken:
            continue
        if address and ipaddress.ip_address(address) == ipaddress.ip_address(ip.ip_address) \
                and request.get("subnet_id") in (None, ip.subnet_id):
            return ip
        if not address and request.get("subnet_id") == ip.subnet_id:
            return ip
    return None


def reallocate(conn: Connection, port_id: str, network_id: str, subnets: Sequence[Subnet],
               current: Sequence[FixedIp], requested: Sequence[Mapping[str, Any]]) -> None:
    """Make the port's addresses what `requested` lists, keeping those it already has."""
    kept: set[FixedIp] = set()
    new = []
    for request in requested:
        found = _kept(request, current, kept)
        if found is None:
            new.append(request)
        else:
            kept.add(found)
    for ip in current:
        if ip not in kept:
            conn.execute(_A.delete().where(_A.c.subnet_id == ip.subnet_id,
                                           _A.c.ip_address == ip.ip_address))
    for request in new:
        _one(conn, port_id, request, subnets, network_id)
