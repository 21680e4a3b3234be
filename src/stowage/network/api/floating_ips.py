"""`/v2.0/floatingips`: list, create, show, update (associate, disassociate, describe),
delete, with `port_details` (extension `fip-port-details`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from stowage.network import compute_events, floating_ips, ports, tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    Attr,
    ip_address,
    ip_address_or_none,
    owned_attrs,
    parse,
    read_only,
    uuid_or_none,
    uuid_value,
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

ATTRS = owned_attrs(
    DESCRIPTION,
    Attr("floating_network_id", uuid_value, put=False, required=True),
    Attr("floating_ip_address", ip_address, put=False),
    Attr("subnet_id", uuid_or_none, put=False),
    Attr("port_id", uuid_or_none),
    Attr("fixed_ip_address", ip_address_or_none),
    *read_only("status", "router_id", "port_details", "tags"),
)
FILTERS = ("id", "description", "floating_network_id", "floating_ip_address", "port_id",
           "fixed_ip_address", "router_id", "status", "tenant_id", "project_id",
           "revision_number", *tags.FILTERS)


def _render(conn: Connection, req: Request,
            found: Sequence[floating_ips.FloatingIp]) -> list[dict[str, Any]]:
    guard = common.guard(req)
    found = [f for f in found if guard.allows("get_floatingip", floating_ips.target(f))]
    attached = ports.of_ids(conn, [f.port_id for f in found if f.port_id])
    return [guard.shown("get_floatingip", views.floating_ip(f, attached.get(f.port_id or "")),
                        floating_ips.target(f)) for f in found]


def _one(conn: Connection, req: Request, fip: floating_ips.FloatingIp) -> dict[str, Any]:
    shown = _render(conn, req, [fip])
    if not shown:
        raise floating_ips.missing(fip.id)
    return shown[0]


def list_floating_ips(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    shown = common.read(req, lambda conn: _render(
        conn, req, floating_ips.list_floating_ips(conn, req.context)))
    return common.listing(req, shown, filters, "floatingips")


def show_floating_ip(req: Request) -> Response:
    view = common.read(req, lambda conn: _one(
        conn, req, floating_ips.get(conn, req.context, req.params["floatingip_id"])))
    view = common.with_tags(req, "floatingips", [view])[0]
    return json_response({"floatingip": common.select_fields(view, common.fields_of(req))})


def create_floating_ip(req: Request) -> Response:
    settings = req.app.settings.network
    guard = common.guard(req)
    made: list[dict[str, Any]] = []  # (a retried attempt's too: the events are idempotent)

    def make(conn: Connection, values: dict[str, Any]) -> dict[str, Any]:
        made.append(_one(conn, req, floating_ips.create(conn, guard, values, settings)))
        return made[-1]
    resp = common.created(req, "floatingip", ATTRS, "create_floatingip", make)
    _tell_compute(req, *made)
    return resp


def update_floating_ip(req: Request) -> Response:
    values = parse(req, "floatingip", ATTRS, create=False, action="update_floatingip")
    expected = common.expected_revision(req)
    fip_id = req.params["floatingip_id"]

    def work(conn: Connection) -> tuple[dict[str, Any], dict[str, Any]]:
        before = _one(conn, req, floating_ips.get(conn, req.context, fip_id))
        return before, _one(conn, req, floating_ips.update(
            conn, common.guard(req), fip_id, values, expected))
    before, view = common.write(req, work)
    _tell_compute(req, before, view)
    return json_response({"floatingip": common.with_tags(req, "floatingips", [view])[0]})


def delete_floating_ip(req: Request) -> Response:
    expected = common.expected_revision(req)
    fip_id = req.params["floatingip_id"]

    def work(conn: Connection) -> dict[str, Any]:
        before = _one(conn, req, floating_ips.get(conn, req.context, fip_id))
        floating_ips.delete(conn, common.guard(req), fip_id, expected)
        return before
    _tell_compute(req, common.deleted(req, "floatingips", fip_id, work))
    return empty_response(204)


def _tell_compute(req: Request, *views: dict[str, Any]) -> None:
    """Neutron's nova notifier: network-changed for the servers whose port a floating
    IP came to or left (compute_events.py), after the commit."""
    events = compute_events.network_changed(
        [(v.get("port_id"), v.get("port_details")) for v in views])
    if events and req.app.notify is not None:
        req.app.notify(events)


_ONE = "/v2.0/floatingips/{floatingip_id}"
ROUTES = [
    Route("GET", "/v2.0/floatingips", list_floating_ips),
    Route("POST", "/v2.0/floatingips", create_floating_ip, json_body=True),
    Route("GET", _ONE, show_floating_ip),
    Route("PUT", _ONE, update_floating_ip, json_body=True),
    Route("DELETE", _ONE, delete_floating_ip),
]
