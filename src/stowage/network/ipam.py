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

Cost: a request reads a subnet's taken addresses once and resumes its scan
of the pools where its previous address was found (`_Allocator`), so k
addresses cost one read and k inserts, however full the subnet is. A port
holds at most `MAX_FIXED_IPS_PER_PORT` addresses (Neutron's
max_fixed_ips_per_port, 400 InvalidInput beyond), except the network's own
ports (`device_owner` network:*), which Neutron trusts.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import DomainError
from stowage.network import addresses as a
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.standard import try_insert
from stowage.network.subnets import Subnet

__all__ = ["FixedIp", "of_ports", "allocate", "reallocate", "check_count",
           "MAX_FIXED_IPS_PER_PORT"]

# Neutron's max_fixed_ips_per_port default.
MAX_FIXED_IPS_PER_PORT = 5
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


def check_count(requested: Sequence[Mapping[str, Any]] | None, device_owner: str) -> None:
    """400 when a port asks for more addresses than Neutron allows (its own ports excepted);
    checked before any address is looked at, so a huge list costs nothing."""
    if requested is None or str(device_owner).startswith("network:"):
        return
    if len(requested) > MAX_FIXED_IPS_PER_PORT:
        raise e.invalid_input("Exceeded maximum amount of fixed ips per port")


def _taken(conn: Connection, subnet: Subnet) -> set[a.Addr]:
    """The subnet's allocated addresses, and its gateway (never handed out automatically)."""
    rows = conn.execute(sa.select(_A.c.ip_address).where(_A.c.subnet_id == subnet.id))
    taken = {ipaddress.ip_address(ip) for ip in rows.scalars()}
    gateway = a.parse_address(subnet.gateway_ip)
    if gateway is not None:
        taken.add(gateway)
    return taken


@dataclass
class _Allocator:
    """One request's address allocations on one port: each subnet's taken addresses are
    read once, and its pool scan resumes where the previous address was found."""
    conn: Connection
    port_id: str
    network_id: str
    subnets: Sequence[Subnet]
    _taken: dict[str, set[a.Addr]] = field(default_factory=dict)
    _scans: dict[str, Iterator[a.Addr]] = field(default_factory=dict)

    def _claim(self, subnet: Subnet, address: a.Addr) -> bool:
        claimed = try_insert(self.conn, _A, {
            "subnet_id": subnet.id, "ip_address": str(address), "port_id": self.port_id,
            "network_id": subnet.network_id})
        if claimed and subnet.id in self._taken:
            self._taken[subnet.id].add(address)
        return claimed

    def any_free(self, subnet: Subnet) -> FixedIp | None:
        if subnet.id not in self._scans:
            self._taken[subnet.id] = _taken(self.conn, subnet)
            self._scans[subnet.id] = a.candidates(subnet.pools, self._taken[subnet.id])
        for address in self._scans[subnet.id]:
            # A concurrent writer may have taken it since the read: try the next one.
            if self._claim(subnet, address):
                return FixedIp(subnet.id, str(address))
        return None

    def exactly(self, subnet: Subnet, address: a.Addr) -> FixedIp:
        if not a.usable(subnet.net, address):
            raise DomainError(f"IP address {address} is not a valid IP for the specified "
                              "subnet.", e.INVALID_IP_FOR_SUBNET)
        if not self._claim(subnet, address):
            raise e.in_use(e.IP_ADDRESS_IN_USE, f"Unable to complete operation for network "
                           f"{subnet.network_id}. The IP address {address} is in use.")
        return FixedIp(subnet.id, str(address))

    def one(self, request: Mapping[str, Any]) -> FixedIp:
        subnet = _subnet_for(request, self.subnets, self.network_id)
        if request.get("ip_address"):
            return self.exactly(subnet, ipaddress.ip_address(request["ip_address"]))
        found = self.any_free(subnet)
        if found is None:
            raise e.in_use(e.IP_GENERATION_FAILURE,
                           f"No more IP addresses available for subnet {subnet.id}.")
        return found

    def automatic(self) -> None:
        """One address per IP version, from the first subnet of that version with room."""
        for version in (4, 6):
            candidates = [s for s in self.subnets if s.ip_version == version]
            if candidates and not any(self.any_free(s) for s in candidates):
                raise e.in_use(e.IP_GENERATION_FAILURE,
                               f"No more IP addresses available on network {self.network_id}.")


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


def allocate(conn: Connection, port_id: str, network_id: str, subnets: Sequence[Subnet],
             requested: Iterable[Mapping[str, Any]] | None) -> None:
    """Give a new port its addresses: the requested ones, or the automatic ones (None)."""
    allocator = _Allocator(conn, port_id, network_id, subnets)
    if requested is None:
        allocator.automatic()
        return
    for request in requested:
        allocator.one(request)


def _split(current: Sequence[FixedIp], requested: Sequence[Mapping[str, Any]]
           ) -> tuple[set[FixedIp], list[Mapping[str, Any]]]:
    """The port's addresses that `requested` keeps, and the requests still to allocate.

    As Neutron does: requests naming an address keep that address first, then a
    request naming only a subnet keeps one of the port's remaining addresses there.
    Indexed, so a port with many addresses costs linear time."""
    by_address = {ipaddress.ip_address(ip.ip_address): ip for ip in current}
    kept: set[FixedIp] = set()
    new: list[Mapping[str, Any]] = []
    for request in requested:
        if not request.get("ip_address"):
            continue
        ip = by_address.get(ipaddress.ip_address(request["ip_address"]))
        if ip is not None and ip not in kept and request.get("subnet_id") in (None, ip.subnet_id):
            kept.add(ip)
        else:
            new.append(request)
    by_subnet: dict[str, list[FixedIp]] = {}
    for ip in reversed(current):
        if ip not in kept:
            by_subnet.setdefault(ip.subnet_id, []).append(ip)
    for request in requested:
        if request.get("ip_address"):
            continue
        remaining = by_subnet.get(str(request.get("subnet_id")))
        if remaining:
            kept.add(remaining.pop())
        else:
            new.append(request)
    return kept, new


def reallocate(conn: Connection, port_id: str, network_id: str, subnets: Sequence[Subnet],
               current: Sequence[FixedIp], requested: Sequence[Mapping[str, Any]]) -> None:
    """Make the port's addresses what `requested` lists, keeping those it already has."""
    kept, new = _split(current, requested)
    for ip in current:
        if ip not in kept:
            conn.execute(_A.delete().where(_A.c.subnet_id == ip.subnet_id,
                                           _A.c.ip_address == ip.ip_address))
    allocator = _Allocator(conn, port_id, network_id, subnets)
    for request in new:
        allocator.one(request)
