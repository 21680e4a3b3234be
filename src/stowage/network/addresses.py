"""Subnet arithmetic with `ipaddress`: CIDRs, gateways, allocation pools, candidate addresses.

Pure functions; the messages are Neutron's where it has one. Defaults follow
Neutron's IPAM: the gateway is the first address of the subnet; the pool is
every other usable address (IPv4 keeps its network and broadcast addresses
out, IPv6 only its subnet-router anycast address).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stowage.errors import DomainError
from stowage.network import errors as e

__all__ = ["Net", "Addr", "Pool", "parse_cidr", "parse_address", "usable", "default_gateway",
           "default_pools", "check_gateway", "check_pools", "candidates", "pool_dicts"]

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
Addr = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Pool:
    start: Addr
    end: Addr

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"

    def __contains__(self, address: object) -> bool:
        if not isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
            return False
        return (address.version == self.start.version
                and int(self.start) <= int(address) <= int(self.end))


def parse_cidr(cidr: str, ip_version: int) -> Net:
    """The subnet of `cidr`; 400 unless it is a canonical prefix of `ip_version`."""
    try:
        interface = ipaddress.ip_interface(cidr)
    except ValueError:
        raise e.invalid_input(f"'{cidr}' is not a valid IP subnet") from None
    net = interface.network
    if "/" not in cidr or interface.ip != net.network_address:
        raise e.invalid_input(f"'{cidr}' isn't a recommended CIDR, use '{net}' instead")
    if net.version != ip_version:
        raise e.invalid_input(f"Cidr {cidr} does not match IP version {ip_version}")
    return net


def parse_address(text: Any) -> Addr | None:
    """The address `text` names, or None when it names none."""
    if not isinstance(text, str):
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _bounds(net: Net) -> tuple[Addr, Addr]:
    """First and last address a host may have."""
    if net.version == 4 and net.prefixlen < 31:
        return net.network_address + 1, net.broadcast_address - 1
    if net.version == 6 and net.prefixlen < 128:
        return net.network_address + 1, net.broadcast_address
    return net.network_address, net.broadcast_address


def usable(net: Net, address: Addr) -> bool:
    """Whether a port may hold `address` on `net`."""
    first, last = _bounds(net)
    return address.version == net.version and int(first) <= int(address) <= int(last)


def default_gateway(net: Net) -> Addr | None:
    first, last = _bounds(net)
    return first if int(first) < int(last) else None


def _split(pool: Pool, hole: Addr | None) -> list[Pool]:
    if hole is None or hole not in pool:
        return [pool]
    parts = []
    if int(pool.start) < int(hole):
        parts.append(Pool(pool.start, hole - 1))
    if int(hole) < int(pool.end):
        parts.append(Pool(hole + 1, pool.end))
    return parts


def default_pools(net: Net, gateway: Addr | None) -> list[Pool]:
    first, last = _bounds(net)
    return _split(Pool(first, last), gateway)


def check_gateway(net: Net, gateway: Addr | None) -> None:
    if gateway is not None and not usable(net, gateway):
        raise e.invalid_input(f"Gateway IP {gateway} is not valid on subnet {net}")


def _pool(raw: Mapping[str, Any], net: Net) -> Pool:
    start, end = parse_address(raw.get("start")), parse_address(raw.get("end"))
    if start is None or end is None or start.version != net.version \
            or end.version != net.version:
        raise e.invalid_input(f"Invalid allocation pool {dict(raw)}")
    if int(start) > int(end):
        raise e.invalid_input(f"Start IP ({start}) is greater than end IP ({end})")
    pool = Pool(start, end)
    if not (usable(net, start) and usable(net, end)):
        raise DomainError(f"The allocation pool {pool} spans beyond the subnet cidr {net}.",
                          e.OUT_OF_BOUNDS_POOL)
    return pool


def check_pools(net: Net, raw_pools: Sequence[Mapping[str, Any]],
                gateway: Addr | None) -> list[Pool]:
    """The requested pools, in order, once inside the subnet, disjoint and clear of the gateway."""
    pools = [_pool(raw, net) for raw in raw_pools]
    ordered = sorted(pools, key=lambda p: int(p.start))
    for left, right in zip(ordered, ordered[1:], strict=False):
        if int(right.start) <= int(left.end):
            raise e.in_use(e.OVERLAPPING_POOLS, f"Found overlapping allocation pools: {left} "
                                                f"{right} for subnet {net}.")
    for pool in pools:
        if gateway is not None and gateway in pool:
            raise e.in_use(e.GATEWAY_CONFLICT,
                           f"Gateway ip {gateway} conflicts with allocation pool {pool}.")
    return pools


def candidates(pools: Sequence[Pool], taken: set[Addr]) -> Iterator[Addr]:
    """Free addresses of the pools, lowest first within each pool, pools in order."""
    for pool in pools:
        address = pool.start
        while int(address) <= int(pool.end):
            if address not in taken:
                yield address
            if address == pool.end:
                break
            address += 1


def pool_dicts(pools: Sequence[Pool]) -> list[dict[str, str]]:
    return [{"start": str(p.start), "end": str(p.end)} for p in pools]
