"""`/v2.0/networks`: list, create, show, update, delete (with extensions `provider`,
`network-mtu-writable`, `qos` and the standard attributes)."""

from __future__ import annotations

from stowage.network import networks, tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    NAME,
    Attr,
    boolean,
    integer,
    owned_attrs,
    parse,
    read_only,
    string,
    uuid_or_none,
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


ATTRS = owned_attrs(
    NAME, DESCRIPTION,
    Attr("admin_state_up", boolean),
    Attr("shared", boolean),
    Attr("mtu", integer(0)),
    Attr("qos_policy_id", uuid_or_none),
    Attr("provider:network_type", string(32)),
    Attr("provider:physical_network", lambda v: None if v is None else string(64)(v)),
    Attr("provider:segmentation_id", integer(nullable=True)),
    Attr("router:external", boolean),
    *read_only("status", "subnets", "tags"),
)
FILTERS = ("id", "name", "description", "status", "admin_state_up", "shared", "mtu",
           "tenant_id", "project_id", "qos_policy_id", "revision_number",
           "provider:network_type", "provider:physical_network", "provider:segmentation_id",
           "router:external", *tags.FILTERS)


def list_networks(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    ids = filters.get("id")
    found = common.read(req, lambda conn: networks.list_networks(conn, req.context, ids))
    guard = common.guard(req)
    seen = [n for n in found if guard.allows("get_network", networks.target(n))]
    return common.listing(req, [views.network(n, guard) for n in seen], filters, "networks")


def show_network(req: Request) -> Response:
    network_id = req.params["network_id"]
    found = common.read(req, lambda conn: networks.get(conn, req.context, network_id))
    guard = common.guard(req)
    if not guard.allows("get_network", networks.target(found)):
        raise networks.missing(network_id)
    view = common.with_tags(req, "networks", [views.network(found, guard)])[0]
    return json_response({"network": common.select_fields(view, common.fields_of(req))})


def create_network(req: Request) -> Response:
    settings = req.app.settings.network
    guard = common.guard(req)
    return common.created(req, "network", ATTRS, "create_network", lambda conn, values:
                          views.network(networks.create(conn, guard, values, settings), guard))


def update_network(req: Request) -> Response:
    values = parse(req, "network", ATTRS, create=False, action="update_network")
    expected = common.expected_revision(req)
    settings = req.app.settings.network
    guard = common.guard(req)
    changed = common.write(req, lambda conn: networks.update(
        conn, guard, req.params["network_id"], values, expected, settings))
    return json_response({"network": common.with_tags(
        req, "networks", [views.network(changed, guard)])[0]})


def delete_network(req: Request) -> Response:
    expected = common.expected_revision(req)
    common.deleted(req, "networks", req.params["network_id"], lambda conn: networks.delete(
        conn, common.guard(req), req.params["network_id"], expected))
    return empty_response(204)


_ONE = "/v2.0/networks/{network_id}"
ROUTES = [
    Route("GET", "/v2.0/networks", list_networks),
    Route("POST", "/v2.0/networks", create_network, json_body=True),
    Route("GET", _ONE, show_network),
    Route("PUT", _ONE, update_network, json_body=True),
    Route("DELETE", _ONE, delete_network),
]
