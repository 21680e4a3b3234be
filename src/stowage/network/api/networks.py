"""`/v2.0/networks`: list, create, show, update, delete (with extensions `provider`,
`network-mtu-writable`, `qos` and the standard attributes)."""

from __future__ import annotations

from stowage.network import networks
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
    Attr("shared", boolean, admin=True),
    Attr("mtu", integer(0)),
    Attr("qos_policy_id", uuid_or_none),
    Attr("provider:network_type", string(32), admin=True),
    Attr("provider:physical_network", lambda v: None if v is None else string(64)(v),
         admin=True),
    Attr("provider:segmentation_id", integer(nullable=True), admin=True),
    *read_only("status", "subnets"),
)
FILTERS = ("id", "name", "description", "status", "admin_state_up", "shared", "mtu",
           "tenant_id", "project_id", "qos_policy_id", "revision_number",
           "provider:network_type", "provider:physical_network", "provider:segmentation_id")


def list_networks(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    ids = filters.get("id")
    found = common.read(req, lambda conn: networks.list_networks(conn, req.context, ids))
    return common.listing(req, [views.network(n, req.context) for n in found], filters, "networks")


def show_network(req: Request) -> Response:
    found = common.read(req, lambda conn: networks.get(conn, req.context,
                                                       req.params["network_id"]))
    view = views.network(found, req.context)
    return json_response({"network": common.select_fields(view, common.fields_of(req))})


def create_network(req: Request) -> Response:
    settings = req.app.settings.network
    return common.created(req, "network", ATTRS, "create_network", lambda conn, values:
                          views.network(networks.create(conn, req.context, values, settings),
                                        req.context))


def update_network(req: Request) -> Response:
    values = parse(req, "network", ATTRS, create=False, action="update_network")
    expected = common.expected_revision(req)
    settings = req.app.settings.network
    changed = common.write(req, lambda conn: networks.update(
        conn, req.context, req.params["network_id"], values, expected, settings))
    return json_response({"network": views.network(changed, req.context)})


def delete_network(req: Request) -> Response:
    expected = common.expected_revision(req)
    common.write(req, lambda conn: networks.delete(conn, req.context,
                                                   req.params["network_id"], expected))
    return empty_response(204)


_ONE = "/v2.0/networks/{network_id}"
ROUTES = [
    Route("GET", "/v2.0/networks", list_networks),
    Route("POST", "/v2.0/networks", create_network, json_body=True),
    Route("GET", _ONE, show_network),
    Route("PUT", _ONE, update_network, json_body=True),
    Route("DELETE", _ONE, delete_network),
]
