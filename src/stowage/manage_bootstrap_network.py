"""The demo's networks for `stowage manage bootstrap`: `private`, `public` and `router1`.

As DevStack lays them out: `private` (FIXED_RANGE 10.0.0.0/26) for the
servers, `public` an external network (router:external, not shared, the
admin's) whose `public-subnet` is DevStack's FLOATING_RANGE 172.24.4.0/24
with gateway 172.24.4.1 and no DHCP, and `router1` with its gateway on
`public` and an interface on `private-subnet`, so that

    openstack floating ip create public

gives an address a server on `private` can take. Each object is looked up
by name and made only when missing, through the Network service's own
domain functions (so the same rules, quotas and IP allocation apply).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage import config
from stowage.network import networks, policy, router_interfaces, routers, subnets
from stowage.network import tables as network_tables

__all__ = ["NETWORK_NAME", "SUBNET_NAME", "SUBNET_CIDR", "PUBLIC_NAME", "PUBLIC_SUBNET_NAME",
           "PUBLIC_CIDR", "PUBLIC_GATEWAY", "ROUTER_NAME", "ensure"]

NETWORK_NAME = "private"
SUBNET_NAME = "private-subnet"
# DevStack's FIXED_RANGE for the `private` network's IPv4 subnet.
SUBNET_CIDR = "10.0.0.0/26"
PUBLIC_NAME = "public"
PUBLIC_SUBNET_NAME = "public-subnet"
# DevStack's FLOATING_RANGE and PUBLIC_NETWORK_GATEWAY.
PUBLIC_CIDR = "172.24.4.0/24"
PUBLIC_GATEWAY = "172.24.4.1"
ROUTER_NAME = "router1"
_N = network_tables.networks


def ensure(conn: Connection, guard: policy.Guard, settings: config.NetworkSettings) -> list[str]:
    """Make whichever of the demo's networks, subnets and router is missing."""
    made: list[str] = []
    private = _network(conn, guard, {"name": NETWORK_NAME, "shared": True}, settings, made)
    private_subnet = _subnet(conn, guard, private, {"name": SUBNET_NAME, "ip_version": 4,
                                                    "cidr": SUBNET_CIDR}, made)
    public = _network(conn, guard, {"name": PUBLIC_NAME, "shared": False,
                                    "router:external": True}, settings, made)
    _subnet(conn, guard, public, {"name": PUBLIC_SUBNET_NAME, "ip_version": 4,
                                  "cidr": PUBLIC_CIDR, "gateway_ip": PUBLIC_GATEWAY,
                                  "enable_dhcp": False}, made)
    _router(conn, guard, public, private_subnet, settings, made)
    return made


def _network(conn: Connection, guard: policy.Guard, values: dict[str, object],
             settings: config.NetworkSettings, made: list[str]) -> str:
    """The id of the network named values["name"], created if there is none."""
    found = conn.execute(sa.select(_N.c.id).where(_N.c.name == values["name"])
                         .order_by(_N.c.created_at, _N.c.id)).first()
    if found is not None:
        return str(found.id)
    network_id = networks.create(conn, guard, values, settings).id
    made.append(f"network {values['name']} created ({network_id})")
    return network_id


def _subnet(conn: Connection, guard: policy.Guard, network_id: str,
            values: dict[str, object], made: list[str]) -> subnets.Subnet:
    """The network's subnet so named (else its first), created if it has none."""
    found = subnets.of_network(conn, network_id)
    named = [s for s in found if s.name == values["name"]]
    if named or found:
        return (named or found)[0]
    subnet = subnets.create(conn, guard, {"network_id": network_id, **values})
    made.append(f"subnet {values['name']} {values['cidr']} created")
    return subnet


def _router(conn: Connection, guard: policy.Guard, public_id: str,
            private_subnet: subnets.Subnet, settings: config.NetworkSettings,
            made: list[str]) -> None:
    """`router1`, its gateway on `public`, with an interface on the private subnet.

    A router1 that exists already is left as it is but for the interface: an
    operator who moved its gateway elsewhere keeps it so."""
    r = network_tables.routers
    found = conn.execute(sa.select(r.c.id).where(r.c.name == ROUTER_NAME)
                         .order_by(r.c.created_at, r.c.id)).first()
    if found is None:
        router_id = routers.create(conn, guard, {
            "name": ROUTER_NAME, "external_gateway_info": {"network_id": public_id}},
            settings).id
        made.append(f"router {ROUTER_NAME} created ({router_id})")
    else:
        router_id = str(found.id)
    attached = {ip.subnet_id for port in routers.interface_ports(conn, router_id)
                for ip in port.fixed_ips}
    if private_subnet.id not in attached:
        router_interfaces.add(conn, guard, router_id, {"subnet_id": private_subnet.id},
                              settings)
        made.append(f"router {ROUTER_NAME} interface on {private_subnet.name} added")
