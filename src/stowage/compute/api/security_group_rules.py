"""Nova's security group rules, translated to and from the Network service's.

Nova's proxy knows ingress rules only, with `ip_protocol` tcp, udp or icmp,
`from_port`/`to_port` (ICMP type/code, -1 for any), and a `cidr` (default
0.0.0.0/0) or a source `group_id`. The checks, in Nova's order and words:

- a rule from a group with tcp/udp and no ports opens 1-65535, icmp -1/-1;
- a cidr rule needs a protocol and both ports ("Not enough parameters to
  build a valid rule.");
- ports must be integers, the protocol tcp/udp/icmp (400 "Invalid IP
  protocol"), tcp/udp ranges 1-65535 and from <= to, ICMP -1..255;
- a cidr must be a network, and only 0.0.0.0/0 and ::/0 may have prefix 0;
- the same rule twice is 400 "This rule already exists in group ...".

The rule sent to the Network service is ingress, with the cidr's ethertype
(IPv4 for a group rule), and without the ports Nova writes as -1.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from stowage.compute.api.network_proxy import translated
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError

__all__ = ["nova_rule", "create", "ANY_CIDR"]

ANY_CIDR = "0.0.0.0/0"
_PORTED = ("TCP", "UDP")


def _nova_fields(rule: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's rule dict (`_convert_to_nova_security_group_rule_format`)."""
    protocol = rule.get("protocol")
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    if protocol and low is None and high is None:
        low, high = (1, 65535) if protocol.upper() in _PORTED else (-1, -1)
    return {"id": rule["id"], "parent_group_id": rule["security_group_id"],
            "protocol": protocol, "from_port": low, "to_port": high,
            "group_id": rule.get("remote_group_id"),
            "cidr": rule.get("remote_ip_prefix") or ANY_CIDR}


def nova_rule(rule: Mapping[str, Any],
              remotes: Mapping[str, dict[str, str]]) -> dict[str, Any] | None:
    """The API view of a rule; None when its remote group is gone (Nova skips it)."""
    fields = _nova_fields(rule)
    view: dict[str, Any] = {"id": fields["id"], "parent_group_id": fields["parent_group_id"],
                            "ip_protocol": fields["protocol"], "from_port": fields["from_port"],
                            "to_port": fields["to_port"], "group": {}, "ip_range": {}}
    if fields["group_id"]:
        if fields["group_id"] not in remotes:
            return None
        view["group"] = dict(remotes[fields["group_id"]])
    else:
        view["ip_range"] = {"cidr": fields["cidr"]}
    return view


def _cidr(value: Any) -> str:
    if not value:
        return ANY_CIDR
    try:
        ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise HTTPError(400, f"{value} is not a valid IP network.") from None
    return str(value)


def _ports(protocol: str, low: Any, high: Any) -> tuple[int, int]:
    try:
        low, high = int(low), int(high)
    except (TypeError, ValueError):
        what = ("Type and Code must be integers for ICMP protocol type"
                if protocol.upper() == "ICMP" else "To and From ports must be integers")
        raise HTTPError(400, f"Invalid input received: {what}") from None
    if protocol.upper() not in ("TCP", "UDP", "ICMP"):
        raise HTTPError(400, f"Invalid IP protocol {protocol}.")
    bad = f"Invalid port range {low}:{high}. "
    if protocol.upper() in _PORTED and low > high:
        raise HTTPError(400, bad + "Former value cannot be greater than the later")
    if protocol.upper() in _PORTED and (low < 1 or high > 65535):
        raise HTTPError(400, bad + f"Valid {protocol.upper()} ports should be between 1-65535")
    if protocol.upper() == "ICMP" and not (-1 <= low <= 255 and -1 <= high <= 255):
        raise HTTPError(400, bad + "For ICMP, the type:code must be valid")
    return low, high


def _new_rule(body: Mapping[str, Any], group_id: str | None) -> dict[str, Any] | None:
    """Nova's `_new_ingress_rule`: the rule's values, or None if a cidr rule is short."""
    protocol, low, high = body.get("ip_protocol"), body.get("from_port"), body.get("to_port")
    values: dict[str, Any] = {}
    if group_id is not None:
        values["group_id"] = group_id
        upper = str(protocol).upper() if protocol else ""
        if low is None and high is None and upper == "ICMP":
            low, high = -1, -1
        elif low is None and high is None and upper in _PORTED:
            low, high = 1, 65535
    else:
        values["cidr"] = _cidr(body.get("cidr"))
    if protocol and low is not None and high is not None:
        values["protocol"] = str(protocol)
        values["from_port"], values["to_port"] = _ports(str(protocol), low, high)
    elif group_id is None:
        return None
    return values


def _exists(group: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    keys = ("group_id", "cidr", "from_port", "to_port", "protocol")
    for rule in group["security_group_rules"]:
        if rule["direction"] != "ingress":
            continue
        mine = _nova_fields(rule)
        if all(mine.get(k) == new.get(k) for k in keys):
            return True
    return False


def _network_rule(parent_id: str, new: Mapping[str, Any]) -> dict[str, Any]:
    cidr = new.get("cidr")
    version = ipaddress.ip_network(cidr, strict=False).version if cidr else 4
    rule: dict[str, Any] = {"security_group_id": parent_id, "direction": "ingress",
                            "ethertype": f"IPv{version}", "protocol": new.get("protocol"),
                            "remote_ip_prefix": cidr, "remote_group_id": new.get("group_id")}
    if new.get("from_port", -1) != -1:
        rule["port_range_min"] = new["from_port"]
    if new.get("to_port", -1) != -1:
        rule["port_range_max"] = new["to_port"]
    return rule


def create(network: NetworkClient, parent: Mapping[str, Any],
           source: Mapping[str, Any] | None, body: Mapping[str, Any]) -> dict[str, Any]:
    """Check the rule as Nova does, create it, and answer Nova's view of it."""
    new = _new_rule(body, None if source is None else str(source["id"]))
    if new is None:
        raise HTTPError(400, "Not enough parameters to build a valid rule.")
    if "cidr" in new:
        network_part, _, prefix = new["cidr"].partition("/")
        if network_part not in ("0.0.0.0", "::") and prefix == "0":
            raise HTTPError(400, f"Bad prefix for network in cidr {new['cidr']}")
    if _exists(parent, new):
        raise HTTPError(400, f"This rule already exists in group {parent['id']}")
    with translated(conflict=403):
        made = network.create_security_group_rule(_network_rule(str(parent["id"]), new))
    remotes = {} if source is None else {
        str(source["id"]): {"name": str(source["name"]), "tenant_id": str(source["project_id"])}}
    view = nova_rule(made, remotes)
    assert view is not None
    return view

