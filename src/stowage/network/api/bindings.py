"""`/v2.0/ports/{port_id}/bindings` (extension `binding-extended`), admin only:
list, create (INACTIVE), show, update, activate, delete. See `network.bindings`."""

from __future__ import annotations

from typing import Any

from stowage.network import port_bindings
from stowage.network.api import common, views
from stowage.network.api.attributes import Attr, dict_or_none, one_of, parse, read_only, string
from stowage.network.mechanism import VNIC_TYPES
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _host(value: Any) -> str:
    host = str(string(255)(value))
    if not host:
        raise ValueError("'' is not a valid host name")
    return host


ATTRS = (
    Attr("host", _host, put=False, required=True),
    Attr("vnic_type", one_of(VNIC_TYPES)),
    Attr("profile", dict_or_none),
    Attr("project_id", string(255), put=False),
    *read_only("status", "vif_type", "vif_details"),
)
FILTERS = ("host", "status", "vif_type", "vnic_type")


def list_bindings(req: Request) -> Response:
    common.authorize(req, "get_port_binding")
    filters = common.query_filters(req, FILTERS)
    found = common.read(req, lambda conn: port_bindings.list_bindings(
        conn, req.context, req.params["port_id"]))
    shown = common.apply_filters([views.binding(b) for b in found], filters)
    fields = common.fields_of(req)
    return json_response({"bindings": [common.select_fields(v, fields) for v in shown]})


def show_binding(req: Request) -> Response:
    common.authorize(req, "get_port_binding")
    found = common.read(req, lambda conn: port_bindings.get_binding(
        conn, req.context, req.params["port_id"], req.params["host"]))
    return json_response({"binding": common.select_fields(views.binding(found),
                                                          common.fields_of(req))})


def create_binding(req: Request) -> Response:
    common.authorize(req, "create_port_binding")
    values = parse(req, "binding", ATTRS, create=True, action="create_port_binding")
    made = common.write(req, lambda conn: port_bindings.create(
        conn, common.guard(req), req.params["port_id"], values))
    return json_response({"binding": views.binding(made)}, status=201)


def update_binding(req: Request) -> Response:
    common.authorize(req, "update_port_binding")
    values = parse(req, "binding", ATTRS, create=False, action="update_port_binding")
    changed = common.write(req, lambda conn: port_bindings.update(
        conn, common.guard(req), req.params["port_id"], req.params["host"], values))
    return json_response({"binding": views.binding(changed)})


def activate_binding(req: Request) -> Response:
    common.authorize(req, "activate")
    active = common.write(req, lambda conn: port_bindings.activate(
        conn, common.guard(req), req.params["port_id"], req.params["host"]))
    return json_response({"binding": views.binding(active)})


def delete_binding(req: Request) -> Response:
    common.authorize(req, "delete_port_binding")
    common.write(req, lambda conn: port_bindings.delete(
        conn, common.guard(req), req.params["port_id"], req.params["host"]))
    return empty_response(204)


_ALL = "/v2.0/ports/{port_id}/bindings"
_ONE = _ALL + "/{host}"
ROUTES = [
    Route("GET", _ALL, list_bindings),
    Route("POST", _ALL, create_binding, json_body=True),
    Route("GET", _ONE, show_binding),
    Route("PUT", _ONE, update_binding, json_body=True),
    Route("DELETE", _ONE, delete_binding),
    Route("PUT", _ONE + "/activate", activate_binding),
]
