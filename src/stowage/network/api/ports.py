"""`/v2.0/ports`: list, create, show, update, delete, with the `binding`, `qos`,
`qos-port-network-policy` and `port-resource-request(-groups)` attributes.

`security_groups` (extension `security-group`) lists the port's group ids;
absent on create, the port is in its project's default group.
`allowed_address_pairs` and `extra_dhcp_opts` (extensions `allowed-address-pairs`,
`extra_dhcp_opt`) are validated by api/port_extras.py and kept by
network/port_extras.py.
A port's MAC address is set at creation only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from stowage.network import compute_events, ports, tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    NAME,
    Attr,
    boolean,
    dict_or_none,
    fixed_ips,
    mac_address,
    one_of,
    owned_attrs,
    parse,
    read_only,
    string,
    uuid_or_none,
    uuid_value,
)
from stowage.network.api.port_extras import address_pairs, dhcp_options
from stowage.network.api.tags import tag_list
from stowage.network.mechanism import VNIC_TYPES
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _group_ids(value: Any) -> list[str]:
    """Neutron's uuid_list, null meaning none."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"'{value}' is not a list")
    return [uuid_value(item) for item in value]


def _host(value: Any) -> str:
    return "" if value is None else str(string(255)(value))


ATTRS = owned_attrs(
    NAME, DESCRIPTION,
    Attr("network_id", uuid_value, put=False, required=True),
    Attr("admin_state_up", boolean),
    Attr("mac_address", mac_address, put=False),
    Attr("fixed_ips", fixed_ips),
    Attr("device_id", string(255)),
    Attr("device_owner", string(255)),
    Attr("binding:vnic_type", one_of(VNIC_TYPES)),
    Attr("binding:host_id", _host),
    Attr("binding:profile", dict_or_none),
    Attr("qos_policy_id", uuid_or_none),
    Attr("security_groups", _group_ids),
    Attr("allowed_address_pairs", address_pairs),
    Attr("extra_dhcp_opts", dhcp_options),
    *read_only("status", "binding:vif_type", "binding:vif_details", "resource_request",
               "qos_network_policy_id"),
    Attr("tags", tag_list, put=False),
)
FILTERS = ("id", "name", "description", "network_id", "mac_address", "admin_state_up",
           "status", "device_id", "device_owner", "tenant_id", "project_id", "fixed_ips",
           "binding:host_id", "binding:vnic_type", "qos_policy_id", "revision_number",
           "security_groups", *tags.FILTERS)
# Filters the database applies (the others are applied to the rendered ports).
_SQL_FILTERS = {"id": "id", "network_id": "network_id", "device_id": "device_id",
                "device_owner": "device_owner", "project_id": "project_id",
                "tenant_id": "project_id"}


def _render(conn: Connection, req: Request, found: Sequence[ports.Port]) -> list[dict[str, Any]]:
    """The ports the caller may see (`get_port`), as they may see them (resource requests
    are computed only for callers `get_port:resource_request` lets see them)."""
    guard = common.guard(req)
    found = [p for p in found if guard.allows("get_port", ports.target(p))]
    requests: dict[str, Any] = {}
    if any(guard.allows("get_port:resource_request", ports.target(p)) for p in found):
        requests = ports.resource_requests(conn, found, req.app.settings.network
                                           .resource_request_format)
    return [views.port(p, guard, requests.get(p.id)) for p in found]


def list_ports(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    narrow: dict[str, list[str]] = {}
    for name, column in _SQL_FILTERS.items():
        if name in filters:
            narrow.setdefault(column, []).extend(filters[name])

    def work(conn: Connection) -> list[dict[str, Any]]:
        return _render(conn, req, ports.list_ports(conn, req.context, narrow))

    return common.listing(req, common.read(req, work), filters, "ports")


def _one(req: Request, port: ports.Port, conn: Connection) -> dict[str, Any]:
    shown = _render(conn, req, [port])
    if not shown:
        raise ports.missing(port.id)
    return shown[0]


def show_port(req: Request) -> Response:
    view = common.read(req, lambda conn: _one(
        req, ports.get(conn, req.context, req.params["port_id"]), conn))
    view = common.with_tags(req, "ports", [view])[0]
    return json_response({"port": common.select_fields(view, common.fields_of(req))})


def create_port(req: Request) -> Response:
    """Ports, each with the `tags` sent (tag-ports-during-bulk-creation)."""
    settings = req.app.settings.network
    guard = common.guard(req)

    def make(conn: Connection, values: dict[str, Any]) -> dict[str, Any]:
        port = ports.create(conn, guard, values, settings)
        tags.put_new(conn, "ports", port.id, values.get("tags") or [])
        return _one(req, port, conn)

    return common.created(req, "port", ATTRS, "create_port", make)


def update_port(req: Request) -> Response:
    values = parse(req, "port", ATTRS, create=False, action="update_port")
    expected = common.expected_revision(req)
    view = common.write(req, lambda conn: _one(
        req, ports.update(conn, common.guard(req), req.params["port_id"], values, expected),
        conn))
    return json_response({"port": common.with_tags(req, "ports", [view])[0]})


def delete_port(req: Request) -> Response:
    expected = common.expected_revision(req)
    port = common.deleted(req, "ports", req.params["port_id"], lambda conn: ports.delete(
        conn, common.guard(req), req.params["port_id"], expected))
    events = compute_events.vif_deleted(port.device_owner, port.device_id, port.id)
    if events and req.app.notify is not None:
        req.app.notify(events)
    return empty_response(204)


_ONE = "/v2.0/ports/{port_id}"
ROUTES = [
    Route("GET", "/v2.0/ports", list_ports),
    Route("POST", "/v2.0/ports", create_port, json_body=True),
    Route("GET", _ONE, show_port),
    Route("PUT", _ONE, update_port, json_body=True),
    Route("DELETE", _ONE, delete_port),
]
