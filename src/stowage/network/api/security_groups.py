"""`/v2.0/security-groups` and `/v2.0/security-group-rules` (extension `security-group`).

Anybody manages the groups and rules of their own project; admins those of
any. Listing groups makes the project's `default` group first, as Neutron
does (see `network.security_groups`), except for a listing by id or by
names other than "default". Rules are created and deleted, never
updated (Neutron's PUT of a rule takes only its description; stowage's does
not serve it: 405 through the router's method check).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sqlalchemy.engine import Connection

from stowage.errors import Invalid
from stowage.network import errors as e
from stowage.network import security_group_rules as rules
from stowage.network import security_groups as groups
from stowage.network import tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    STRING,
    Attr,
    integer,
    owned_attrs,
    parse,
    read_only,
    string,
    uuid_value,
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

GROUP_ATTRS = owned_attrs(Attr("name", STRING), DESCRIPTION,
                          *read_only("security_group_rules", "tags"))
GROUP_FILTERS = ("id", "name", "description", "tenant_id", "project_id", "revision_number",
                 *tags.FILTERS)


def _port(value: Any) -> int | None:
    """Neutron's convert_validate_port_value: 0-65535, else SecurityGroupInvalidPortValue."""
    try:
        return integer(0, 65535, nullable=True)(value)  # type: ignore[no-any-return]
    except ValueError:
        raise Invalid(f"Invalid value for port {value}",
                      e.SECURITY_GROUP_INVALID_PORT_VALUE) from None


def _remote_group(value: Any) -> str | None:
    """Any string: a remote group that is no uuid is simply not found (404)."""
    return None if value is None else str(string(255)(value))


def _prefix(value: Any) -> str | None:
    """Neutron's subnet_or_none: a CIDR (a bare address names a subnet, not a host)."""
    if value is None:
        return None
    try:
        network = ipaddress.ip_network(value, strict=False) if isinstance(value, str) else None
    except ValueError:
        network = None
    if network is None:
        raise ValueError(f"'{value}' is not a valid IP subnet")
    if "/" not in value:
        raise ValueError(f"'{value}' isn't a recognized IP subnet cidr, '{network}' is "
                         "recommended")
    return str(value)


def _direction(value: Any) -> str:
    if value not in rules.DIRECTIONS:
        raise ValueError(f"{value} is not in {list(rules.DIRECTIONS)}")
    return str(value)


RULE_ATTRS = owned_attrs(
    DESCRIPTION,
    Attr("security_group_id", uuid_value, required=True),
    Attr("direction", _direction, required=True),
    Attr("ethertype", rules.ethertype),
    Attr("protocol", rules.protocol),
    Attr("port_range_min", _port),
    Attr("port_range_max", _port),
    Attr("remote_ip_prefix", _prefix),
    Attr("remote_group_id", _remote_group),
)
RULE_FILTERS = ("id", "security_group_id", "direction", "ethertype", "protocol",
                "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id",
                "description", "tenant_id", "project_id", "revision_number")


def list_groups(req: Request) -> Response:
    filters = common.query_filters(req, GROUP_FILTERS)
    projects = (filters.get("project_id") or []) + (filters.get("tenant_id") or [])
    found: list[groups.Group] = []
    # Listing makes the project's default group, so a caller who may not read the
    # project's groups gets nothing and changes nothing.
    if common.guard(req).allows("get_security_group", req.context.policy_target()):
        found = common.write(req, lambda conn: groups.list_groups(
            conn, req.context, filters.get("id"), projects or None, filters.get("name")))
    shown = common.readable(req, "get_security_group",
                            [views.security_group(g) for g in found])
    return common.listing(req, shown, filters, "security_groups", "security-groups")


def show_group(req: Request) -> Response:
    group_id = req.params["security_group_id"]
    found = common.read(req, lambda conn: groups.get(conn, req.context, group_id))
    shown = common.readable(req, "get_security_group", [views.security_group(found)])
    if not shown:
        raise groups.missing(group_id)
    view = common.with_tags(req, "security_groups", shown)[0]
    return json_response({"security_group": common.select_fields(
        view, common.fields_of(req))})


def create_group(req: Request) -> Response:
    guard = common.guard(req)
    return common.created(req, "security_group", GROUP_ATTRS, "create_security_group",
                          lambda conn, values: views.security_group(
                              groups.create(conn, guard, values)))


def update_group(req: Request) -> Response:
    values = parse(req, "security_group", GROUP_ATTRS, create=False,
                   action="update_security_group")
    expected = common.expected_revision(req)
    changed = common.write(req, lambda conn: groups.update(
        conn, common.guard(req), req.params["security_group_id"], values, expected))
    return json_response({"security_group": common.with_tags(
        req, "security_groups", [views.security_group(changed)])[0]})


def delete_group(req: Request) -> Response:
    expected = common.expected_revision(req)
    group_id = req.params["security_group_id"]
    common.deleted(req, "security_groups", group_id, lambda conn: groups.delete(
        conn, common.guard(req), group_id, expected))
    return empty_response(204)


def list_rules(req: Request) -> Response:
    filters = common.query_filters(req, RULE_FILTERS)
    found, targets = common.read(req, lambda conn: _with_targets(
        conn, rules.list_rules(conn, req.context)))
    shown = common.readable(req, "get_security_group_rule",
                            [views.security_group_rule(r) for r in found], targets)
    return common.listing(req, shown, filters, "security_group_rules", "security-group-rules")


def _with_targets(conn: Connection, found: list[rules.Rule]
                  ) -> tuple[list[rules.Rule], dict[str, dict[str, object]]]:
    return found, groups.rule_targets(conn, found)


def show_rule(req: Request) -> Response:
    rule_id = req.params["rule_id"]
    found, targets = common.read(req, lambda conn: _with_targets(
        conn, [rules.get(conn, req.context, rule_id)]))
    shown = common.readable(req, "get_security_group_rule",
                            [views.security_group_rule(found[0])], targets)
    if not shown:
        raise rules.missing(rule_id)
    return json_response({"security_group_rule": common.select_fields(
        shown[0], common.fields_of(req))})


def create_rule(req: Request) -> Response:
    guard = common.guard(req)
    return common.created(req, "security_group_rule", RULE_ATTRS, "create_security_group_rule",
                          lambda conn, values: views.security_group_rule(
                              groups.create_rule(conn, guard, values)))


def delete_rule(req: Request) -> Response:
    common.write(req, lambda conn: groups.delete_rule(conn, common.guard(req),
                                                      req.params["rule_id"]))
    return empty_response(204)


_GROUP = "/v2.0/security-groups/{security_group_id}"
_RULE = "/v2.0/security-group-rules/{rule_id}"
ROUTES = [
    Route("GET", "/v2.0/security-groups", list_groups),
    Route("POST", "/v2.0/security-groups", create_group, json_body=True),
    Route("GET", _GROUP, show_group),
    Route("PUT", _GROUP, update_group, json_body=True),
    Route("DELETE", _GROUP, delete_group),
    Route("GET", "/v2.0/security-group-rules", list_rules),
    Route("POST", "/v2.0/security-group-rules", create_rule, json_body=True),
    Route("GET", _RULE, show_rule),
    Route("DELETE", _RULE, delete_rule),
]
