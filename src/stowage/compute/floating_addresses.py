"""A server's floating addresses in its ports' cached `vif` (Nova's network info cache).

Nova's info cache keeps, under each fixed IP of a port, the floating IPs the
Network service maps to it; the server view shows them as `OS-EXT-IPS:type`
"floating" on the fixed IP's network. Here each `ips` entry of a port's `vif`
(instance_ports.py) carries `floating`: the floating addresses of that fixed
address, asked of the Network service (`GET /floatingips?port_id=...`):

- when compute binds the port (conductor/ports.py `_remember_vif`),
- after `addFloatingIp` / `removeFloatingIp` and a proxied floating IP's
  release (api/floating_ips.py), for the server it was taken from too,
- on a `network-changed` event (api/server_external_events.py), which Neutron
  sends when a floating IP of the server's port changes.

A Network service without the L3 API (404 on /floatingips) has none: as Nova's
`_safe_get_floating_ips`, that is an empty list, not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from stowage.compute import instance_ports, instances
from stowage.db import Database
from stowage.network.client import NetworkClient, NetworkError

__all__ = ["floating_of_ports", "with_floating", "refresh", "refresh_quietly"]

LOG = logging.getLogger(__name__)

# port id -> fixed address -> the floating addresses mapped to it
Floating = dict[str, dict[str, list[str]]]


def floating_of_ports(network: NetworkClient, port_ids: Collection[str]) -> Floating:
    """The floating addresses of these ports' fixed addresses, in address order."""
    wanted = sorted(set(port_ids))
    if not wanted:
        return {}
    try:
        fips = network.list_floatingips(port_id=wanted)
    except NetworkError as exc:
        if exc.status == 404:  # no L3 API: no floating IPs
            return {}
        raise
    found: Floating = {}
    for fip in sorted(fips, key=lambda f: str(f.get("floating_ip_address"))):
        port_id, fixed = fip.get("port_id"), fip.get("fixed_ip_address")
        if port_id in wanted and fixed:
            found.setdefault(str(port_id), {}).setdefault(str(fixed), []).append(
                str(fip["floating_ip_address"]))
    return found


def with_floating(vif: Mapping[str, Any], floating: Mapping[str, Sequence[str]]
                  ) -> dict[str, Any]:
    """A copy of `vif` whose fixed IPs carry their floating addresses (fixed -> floating)."""
    ips = [{**ip, "floating": list(floating.get(str(ip.get("address")), ()))}
           for ip in vif.get("ips") or ()]
    return {**vif, "ips": ips}


def refresh(db: Database, network: NetworkClient, instance_uuid: str) -> None:
    """Rewrite the floating addresses of every port of the server whose vif is cached.

    The server's row is held while the Network service is asked, so two refreshes
    of one server run one after the other and the later answer is the one kept."""
    with db.write() as conn:
        instances.lock(conn, instance_uuid)
        rows = [r for r in instance_ports.of_instance(conn, instance_uuid)
                if r.port_id and r.vif is not None]
        floating = floating_of_ports(network, [str(r.port_id) for r in rows])
        for row in rows:
            assert row.port_id is not None and row.vif is not None
            fresh = with_floating(row.vif, floating.get(row.port_id, {}))
            if fresh != row.vif:
                instance_ports.set_vif(conn, instance_uuid, row.port_id, fresh)


def refresh_quietly(db: Database, network: NetworkClient, instance_uuid: str) -> None:
    """`refresh`, logging a failure: the change it follows is made and stays made."""
    try:
        refresh(db, network, instance_uuid)
    except Exception:  # noqa: BLE001 - the next refresh repairs the cache
        LOG.exception("could not refresh the floating addresses of server %s", instance_uuid)
