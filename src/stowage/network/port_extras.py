"""A port's allowed address pairs (extension `allowed-address-pairs`) and extra DHCP
options (`extra_dhcp_opt`): how they are kept (what may be sent:
network/api/port_extras.py).

Allowed address pairs are replaced as a whole by every write that names them;
a pair without `mac_address` takes the port's MAC. At most
`MAX_ADDRESS_PAIRS` (Neutron's `max_allowed_address_pair` default) per port;
a pair equal to one of the port's own fixed IPs with its own MAC is refused
(Neutron's AddressPairMatchesPortFixedIPAndMac). Port security
(`port_security_enabled`) is not served, so Neutron's
AddressPairAndPortSecurityRequired cannot arise.

Extra DHCP options are merged, as Neutron does: an option is named by
`opt_name` and `ip_version` (4 unless given); sending one with a value sets
it, with `opt_value: null` removes it (on create, such an option is simply
not added).

Both live in their own tables, written in the port's transaction after the
port's revision was bumped (its row lock), so concurrent writers of one
port run one after the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import Invalid
from stowage.network import tables as t

__all__ = ["pairs_of", "options_of", "set_pairs", "set_options", "MAX_ADDRESS_PAIRS"]

MAX_ADDRESS_PAIRS = 10
_AP = t.port_address_pairs
_DO = t.port_dhcp_options


def pairs_of(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {p: [] for p in port_ids}
    if port_ids:
        rows = conn.execute(sa.select(_AP).where(_AP.c.port_id.in_(list(port_ids)))
                            .order_by(_AP.c.port_id, _AP.c.position))
        for r in rows:
            found[r.port_id].append({"ip_address": r.ip_address, "mac_address": r.mac_address})
    return found


def options_of(conn: Connection, port_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {p: [] for p in port_ids}
    if port_ids:
        rows = conn.execute(sa.select(_DO).where(_DO.c.port_id.in_(list(port_ids)))
                            .order_by(_DO.c.port_id, _DO.c.ip_version, _DO.c.opt_name))
        for r in rows:
            found[r.port_id].append({"opt_name": r.opt_name, "opt_value": r.opt_value,
                                     "ip_version": int(r.ip_version)})
    return found


def set_pairs(conn: Connection, port_id: str, port_mac: str,
              fixed_ips: Sequence[str], pairs: Sequence[Mapping[str, Any]]) -> None:
    """Replace the port's pairs (the port's revision is already bumped)."""
    rows: list[dict[str, Any]] = []
    keys: set[tuple[str, str]] = set()
    for pair in pairs:
        mac = pair["mac_address"] or port_mac
        if pair["ip_address"] in fixed_ips and mac == port_mac:
            raise Invalid("Port's Fixed IP and Mac Address match an address pair entry.",
                          "AddressPairMatchesPortFixedIPAndMac")
        # The same pair twice once the default MAC is filled in: Neutron stores it once.
        if (pair["ip_address"], mac) not in keys:
            keys.add((pair["ip_address"], mac))
            rows.append({"port_id": port_id, "ip_address": pair["ip_address"],
                         "mac_address": mac, "position": len(rows)})
    conn.execute(_AP.delete().where(_AP.c.port_id == port_id))
    if rows:
        conn.execute(_AP.insert(), rows)


def set_options(conn: Connection, port_id: str, options: Sequence[Mapping[str, Any]]) -> None:
    """Merge `options` into the port's: a value sets, null removes."""
    for option in options:
        key = sa.and_(_DO.c.port_id == port_id, _DO.c.opt_name == option["opt_name"],
                      _DO.c.ip_version == option["ip_version"])
        conn.execute(_DO.delete().where(key))
        if option["opt_value"] is not None:
            conn.execute(_DO.insert().values(port_id=port_id, **option))
