"""Security group rules: Neutron's value checks, and the rule records.

A rule is checked as Neutron's plugin checks it before anything is written:

- a port range needs a protocol (SecurityGroupProtocolRequiredWithPorts);
  for TCP, UDP, DCCP, SCTP and UDP-Lite both ends are 1-65535 with min <= max
  (SecurityGroupInvalidPortValue / SecurityGroupInvalidPortRange); for ICMP
  and ICMPv6 they are the type and code, 0-255, and a code needs a type;
  other protocols take no ports;
- `remote_ip_prefix` and `remote_group_id` exclude each other, and the
  prefix's IP version must be the ethertype's (SecurityGroupRuleParameterConflict);
  a prefix with host bits (10.0.0.5/24) is kept as given, and matches its
  network (10.0.0.0/24) in the duplicate check.

A rule exists once per group: `rule_key` joins every matching attribute
(protocol by number, an any-address prefix as none) under a unique index,
so that two identical rules created at once leave one (409
SecurityGroupRuleExists).
"""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError, Invalid
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.standard import try_insert, utcnow

__all__ = ["Rule", "target", "PROTOCOLS", "ETHERTYPES", "DIRECTIONS", "protocol", "ethertype",
           "check",
           "insert", "of_groups", "get", "list_rules", "missing"]

# Neutron's named IP protocols and their numbers.
PROTOCOLS = {"ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "icmp": 1, "icmpv6": 58,
             "igmp": 2, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58,
             "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113,
             "rsvp": 46, "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112}
ETHERTYPES = ("IPv4", "IPv6")
DIRECTIONS = ("ingress", "egress")
_PORTED = {6, 17, 33, 132, 136}
_ICMP = {1, 58}
_R = t.security_group_rules


@dataclass
class Rule:
    id: str
    security_group_id: str
    project_id: str
    description: str
    direction: str
    ethertype: str
    protocol: str | None
    port_range_min: int | None
    port_range_max: int | None
    remote_ip_prefix: str | None
    remote_group_id: str | None
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime


def missing(rule_id: str) -> DomainError:
    return e.not_found(e.SECURITY_GROUP_RULE_NOT_FOUND,
                       f"Security group rule {rule_id} does not exist")


def _invalid(code: str, message: str) -> Invalid:
    return Invalid(message, code)


def protocol(value: Any) -> str | None:
    """Neutron's convert_protocol: a known name (any case) or a number 0-255, as a string."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        if value.lower() in PROTOCOLS:
            return value.lower()
        if value.lower() == "any":
            return None
        if value.isascii() and value.isdigit() and 0 <= int(value) <= 255:
            return str(int(value))
    raise _invalid(e.SECURITY_GROUP_RULE_INVALID_PROTOCOL,
                   f"Security group rule protocol {value} not supported. Only protocol values "
                   f"{[None, *sorted(PROTOCOLS)]} and integer representations [0 to 255] are "
                   "supported.")


def ethertype(value: Any) -> str:
    for known in ETHERTYPES:
        if isinstance(value, str) and value.lower() == known.lower():
            return known
    raise _invalid(e.SECURITY_GROUP_RULE_INVALID_ETHERTYPE,
                   f"Security group rule for ethertype '{value}' not supported. Allowed values "
                   f"are {list(ETHERTYPES)}.")


def _number(name: str | None) -> int | None:
    if name is None:
        return None
    return PROTOCOLS[name] if name in PROTOCOLS else int(name)


def _check_ports(values: Mapping[str, Any]) -> None:
    low, high = values.get("port_range_min"), values.get("port_range_max")
    if low is None and high is None:
        return
    number = _number(values.get("protocol"))
    if number is None:
        raise _invalid(e.SECURITY_GROUP_PROTOCOL_REQUIRED_WITH_PORTS,
                       "Must also specify protocol if port range is given.")
    if number in _PORTED:
        if low == 0 or high == 0:
            raise _invalid(e.SECURITY_GROUP_INVALID_PORT_VALUE, "Invalid value for port 0")
        if low is None or high is None or low > high:
            raise _invalid(e.SECURITY_GROUP_INVALID_PORT_RANGE,
                           "For TCP/UDP protocols, port_range_min must be <= port_range_max")
    elif number in _ICMP:
        for attr, value, what in (("port_range_min", low, "type"),
                                  ("port_range_max", high, "code")):
            if value is not None and not 0 <= value <= 255:
                raise _invalid(e.SECURITY_GROUP_INVALID_ICMP_VALUE,
                               f"Invalid value for ICMP {what} ({attr}) {value}. It must be 0 "
                               "to 255.")
        if low is None:
            raise _invalid(e.SECURITY_GROUP_MISSING_ICMP_TYPE,
                           f"ICMP code (port-range-max) {high} is provided but ICMP type "
                           "(port-range-min) is missing.")
    else:
        raise _invalid(e.SECURITY_GROUP_INVALID_PROTOCOL_FOR_PORT_RANGE,
                       f"Invalid protocol {values.get('protocol')} for port range, only "
                       "supported for TCP, UDP, UDPLITE, SCTP and DCCP.")


def check(values: dict[str, Any]) -> dict[str, Any]:
    """The rule's values checked and normalized (see the module docstring)."""
    _check_ports(values)
    prefix = values.get("remote_ip_prefix")
    if prefix is not None and values.get("remote_group_id") is not None:
        raise _invalid(e.SECURITY_GROUP_REMOTE_GROUP_AND_PREFIX,
                       "Only remote_ip_prefix or remote_group_id may be provided.")
    if prefix is not None:
        network = ipaddress.ip_network(prefix, strict=False)
        kind = values.get("ethertype", "IPv4")
        if f"IPv{network.version}" != kind:
            raise _invalid(e.SECURITY_GROUP_RULE_PARAMETER_CONFLICT,
                           f"Conflicting value ethertype {kind} for CIDR {prefix}")
    return values


def _key(group_id: str, values: Mapping[str, Any]) -> str:
    prefix = values.get("remote_ip_prefix")
    if prefix is not None:
        prefix = str(ipaddress.ip_network(prefix, strict=False))
    if prefix in ("0.0.0.0/0", "::/0"):
        prefix = None
    parts = (group_id, values["direction"], values.get("ethertype", "IPv4"),
             _number(values.get("protocol")), values.get("port_range_min"),
             values.get("port_range_max"), prefix, values.get("remote_group_id"))
    return "|".join("" if p is None else str(p) for p in parts)


def _existing(conn: Connection, key: str) -> str | None:
    found = conn.execute(sa.select(_R.c.id).where(_R.c.rule_key == key)).scalar()
    return None if found is None else str(found)


def insert(conn: Connection, group_id: str, project_id: str, values: Mapping[str, Any]) -> str:
    """Insert a checked rule; 409 SecurityGroupRuleExists if the group has it already."""
    key, now = _key(group_id, values), utcnow()
    row = {"id": str(uuid.uuid4()), "security_group_id": group_id, "project_id": project_id,
           "description": values.get("description", ""), "direction": values["direction"],
           "ethertype": values.get("ethertype", "IPv4"), "protocol": values.get("protocol"),
           "port_range_min": values.get("port_range_min"),
           "port_range_max": values.get("port_range_max"),
           "remote_ip_prefix": values.get("remote_ip_prefix"),
           "remote_group_id": values.get("remote_group_id"), "rule_key": key,
           "revision_number": 0, "created_at": now, "updated_at": now}
    if not try_insert(conn, _R, row):
        raise e.in_use(e.SECURITY_GROUP_RULE_EXISTS, "Security group rule already exists. "
                       f"Rule id is {_existing(conn, key)}.")
    return str(row["id"])


def _rules(conn: Connection, where: sa.ColumnElement[bool]) -> list[Rule]:
    rows = conn.execute(sa.select(_R).where(where).order_by(_R.c.created_at, _R.c.id)).all()
    return [Rule(r.id, r.security_group_id, r.project_id, r.description, r.direction,
                 r.ethertype, r.protocol, r.port_range_min, r.port_range_max,
                 r.remote_ip_prefix, r.remote_group_id, int(r.revision_number), r.created_at,
                 r.updated_at) for r in rows]


def of_groups(conn: Connection, group_ids: Collection[str]) -> dict[str, list[Rule]]:
    found: dict[str, list[Rule]] = {g: [] for g in group_ids}
    if found:
        for rule in _rules(conn, _R.c.security_group_id.in_(list(found))):
            found[rule.security_group_id].append(rule)
    return found


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    """A rule is seen by its project and by the project owning its group."""
    if ctx.is_admin:
        return sa.true()
    project = ctx.project_id or ""
    owners = sa.select(t.security_groups.c.id).where(t.security_groups.c.project_id == project)
    return sa.or_(_R.c.project_id == project, _R.c.security_group_id.in_(owners))


def target(rule: Rule, group_project: str | None) -> dict[str, object]:
    """What the policy rules see of a rule: itself and its group's owner."""
    return {"id": rule.id, "project_id": rule.project_id, "tenant_id": rule.project_id,
            "security_group_id": rule.security_group_id,
            "security_group:tenant_id": group_project}


def get(conn: Connection, ctx: RequestContext, rule_id: str) -> Rule:
    found = _rules(conn, sa.and_(_R.c.id == rule_id, _visible(ctx)))
    if not found:
        raise missing(rule_id)
    return found[0]


def list_rules(conn: Connection, ctx: RequestContext) -> list[Rule]:
    return _rules(conn, _visible(ctx))
