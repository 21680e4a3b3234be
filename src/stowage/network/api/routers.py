"""`/v2.0/routers`: list, create, show, update, delete; `add_router_interface` /
`remove_router_interface`; `add_extraroutes` / `remove_extraroutes` (extensions
`router`, `ext-gw-mode`, `extraroute`, `extraroute-atomic`)."""

from __future__ import annotations

from typing import Any

from stowage.network import router_interfaces, routers, tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    NAME,
    Attr,
    bad,
    boolean,
    fixed_ips,
    host_routes,
    owned_attrs,
    parse,
    read_only,
    uuid_value,
)
from stowage.web.body import InvalidJSON, load_json
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_GATEWAY_KEYS = {"network_id": uuid_value, "enable_snat": boolean,
                 "external_fixed_ips": fixed_ips}


def _gateway(value: Any) -> dict[str, Any] | None:
    """Neutron's external_gateway_info: null or {} (no gateway), else a network_id with
    optional enable_snat and external_fixed_ips."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"'{value}' is not a dictionary")
    unknown = sorted(set(value) - set(_GATEWAY_KEYS))
    if unknown:
        raise ValueError(f"Unexpected keys supplied: {', '.join(unknown)}")
    if value and "network_id" not in value:
        raise ValueError("Validation of dictionary's keys failed. Expected keys: "
                         "{'network_id'}")
    return {k: _GATEWAY_KEYS[k](v) for k, v in value.items()}


ATTRS = owned_attrs(
    NAME, DESCRIPTION,
    Attr("admin_state_up", boolean),
    Attr("external_gateway_info", _gateway),
    Attr("routes", host_routes, post=False),
    *read_only("status", "tags"),
)
FILTERS = ("id", "name", "description", "status", "admin_state_up", "tenant_id",
           "project_id", "revision_number", *tags.FILTERS)
_INTERFACE = (Attr("subnet_id", uuid_value), Attr("port_id", uuid_value))
_ROUTES = (Attr("routes", host_routes, required=True),)


def _view(req: Request, router: routers.Router) -> dict[str, Any]:
    """The router less the attributes a `get_router:<attribute>` rule hides."""
    return common.guard(req).shown("get_router", views.router(router), routers.target(router))


def _tagged(req: Request, router: routers.Router) -> dict[str, Any]:
    """The router's view with its `tags` (a single router's answer)."""
    return common.with_tags(req, "routers", [_view(req, router)])[0]


def list_routers(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    found = common.read(req, lambda conn: routers.list_routers(conn, req.context,
                                                               filters.get("id")))
    guard = common.guard(req)
    seen = [_view(req, r) for r in found if guard.allows("get_router", routers.target(r))]
    return common.listing(req, seen, filters, "routers")


def show_router(req: Request) -> Response:
    router_id = req.params["router_id"]
    found = common.read(req, lambda conn: routers.get(conn, req.context, router_id))
    if not common.guard(req).allows("get_router", routers.target(found)):
        raise routers.missing(router_id)
    return json_response({"router": common.select_fields(_tagged(req, found),
                                                         common.fields_of(req))})


def create_router(req: Request) -> Response:
    settings = req.app.settings.network
    guard = common.guard(req)
    return common.created(req, "router", ATTRS, "create_router", lambda conn, values:
                          _view(req, routers.create(conn, guard, values, settings)))


def update_router(req: Request) -> Response:
    values = parse(req, "router", ATTRS, create=False, action="update_router")
    expected = common.expected_revision(req)
    settings = req.app.settings.network
    changed = common.write(req, lambda conn: routers.update(
        conn, common.guard(req), req.params["router_id"], values, expected, settings))
    return json_response({"router": _tagged(req, changed)})


def delete_router(req: Request) -> Response:
    expected = common.expected_revision(req)
    router_id = req.params["router_id"]
    common.deleted(req, "routers", router_id, lambda conn: routers.delete(
        conn, common.guard(req), router_id, expected))
    return empty_response(204)


def _interface_body(req: Request) -> dict[str, Any]:
    """The body is the interface itself (`{"subnet_id": ...}`), under no resource key."""
    try:
        raw = load_json(req.body) if req.body else None
    except InvalidJSON:
        raise bad("Malformed request body") from None
    if not isinstance(raw, dict):
        raise bad("Resource body required")
    known = {a.name: a for a in _INTERFACE}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise bad(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    values = {}
    for name, value in raw.items():
        try:
            values[name] = known[name].validate(value)
        except ValueError as exc:
            raise bad(f"Invalid input for {name}. Reason: {exc}.") from None
    return values


def add_interface(req: Request) -> Response:
    info = _interface_body(req)
    settings = req.app.settings.network
    answer = common.write(req, lambda conn: router_interfaces.add(
        conn, common.guard(req), req.params["router_id"], info, settings))
    return json_response(answer)


def remove_interface(req: Request) -> Response:
    info = _interface_body(req)
    answer = common.write(req, lambda conn: router_interfaces.remove(
        conn, common.guard(req), req.params["router_id"], info))
    return json_response(answer)


def _change_routes(req: Request, adding: bool) -> Response:
    action = "add_extraroutes" if adding else "remove_extraroutes"
    values = parse(req, "router", _ROUTES, create=True, action=action)
    changed = common.write(req, lambda conn: router_interfaces.change_routes(
        conn, common.guard(req), req.params["router_id"], values["routes"], adding))
    return json_response({"router": _tagged(req, changed)})


def add_extraroutes(req: Request) -> Response:
    return _change_routes(req, adding=True)


def remove_extraroutes(req: Request) -> Response:
    return _change_routes(req, adding=False)


_ONE = "/v2.0/routers/{router_id}"
ROUTES = [
    Route("GET", "/v2.0/routers", list_routers),
    Route("POST", "/v2.0/routers", create_router, json_body=True),
    Route("GET", _ONE, show_router),
    Route("PUT", _ONE, update_router, json_body=True),
    Route("DELETE", _ONE, delete_router),
    Route("PUT", f"{_ONE}/add_router_interface", add_interface, json_body=True),
    Route("PUT", f"{_ONE}/remove_router_interface", remove_interface, json_body=True),
    Route("PUT", f"{_ONE}/add_extraroutes", add_extraroutes, json_body=True),
    Route("PUT", f"{_ONE}/remove_extraroutes", remove_extraroutes, json_body=True),
]
