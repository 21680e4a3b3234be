"""`/v2.0/subnetpools`: list, create, show, update, delete (extension `subnet_allocation`;
the records and allocation: network/subnetpools.py).

`prefixes` is a list of CIDRs (required on create); the prefix lengths are
non-negative integers; `shared` is set at creation only. Address scopes are
not served: `address_scope_id` may only be null. The `add_prefixes` /
`remove_prefixes` actions and `onboard_network_subnets` are not served.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from stowage.network import subnetpools, tags
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
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _prefixes(value: Any) -> list[str]:
    """Neutron's subnet_list: every item a valid CIDR."""
    if not isinstance(value, list):
        raise ValueError(f"'{value}' is not a list")
    for item in value:
        try:
            if not isinstance(item, str) or "/" not in item:
                raise ValueError
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"'{item}' is not a valid IP subnet") from None
    return list(value)


def _no_scope(value: Any) -> None:
    if value is not None:
        raise ValueError("address scopes are not supported by this service")


ATTRS = owned_attrs(
    NAME, DESCRIPTION,
    Attr("prefixes", _prefixes, required=True),
    Attr("default_prefixlen", integer(0)),
    Attr("min_prefixlen", integer(0)),
    Attr("max_prefixlen", integer(0)),
    Attr("shared", boolean, put=False),
    Attr("is_default", boolean),
    Attr("default_quota", integer(0, nullable=True)),
    Attr("address_scope_id", _no_scope),
    *read_only("ip_version", "tags"),
)
FILTERS = ("id", "name", "description", "tenant_id", "project_id", "ip_version",
           "default_prefixlen", "min_prefixlen", "max_prefixlen", "shared", "is_default",
           "default_quota", "address_scope_id", "revision_number", *tags.FILTERS)


def _view(req: Request, pool: subnetpools.Pool) -> dict[str, Any]:
    return common.with_tags(req, "subnetpools", [views.subnetpool(pool)])[0]


def list_pools(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    found = common.read(req, lambda conn: subnetpools.list_pools(conn, req.context,
                                                                 filters.get("id")))
    guard = common.guard(req)
    shown = [views.subnetpool(p) for p in found
             if guard.allows("get_subnetpool", subnetpools.target(p))]
    return common.listing(req, shown, filters, "subnetpools")


def show_pool(req: Request) -> Response:
    pool_id = req.params["subnetpool_id"]
    found = common.read(req, lambda conn: subnetpools.get(conn, req.context, pool_id))
    if not common.guard(req).allows("get_subnetpool", subnetpools.target(found)):
        raise subnetpools.missing(pool_id)
    return json_response({"subnetpool": common.select_fields(_view(req, found),
                                                             common.fields_of(req))})


def create_pool(req: Request) -> Response:
    guard = common.guard(req)
    return common.created(req, "subnetpool", ATTRS, "create_subnetpool",
                          lambda conn, values: views.subnetpool(
                              subnetpools.create(conn, guard, values)))


def update_pool(req: Request) -> Response:
    values = parse(req, "subnetpool", ATTRS, create=False, action="update_subnetpool")
    expected = common.expected_revision(req)
    changed = common.write(req, lambda conn: subnetpools.update(
        conn, common.guard(req), req.params["subnetpool_id"], values, expected))
    return json_response({"subnetpool": _view(req, changed)})


def delete_pool(req: Request) -> Response:
    expected = common.expected_revision(req)
    pool_id = req.params["subnetpool_id"]
    common.deleted(req, "subnetpools", pool_id, lambda conn: subnetpools.delete(
        conn, common.guard(req), pool_id, expected))
    return empty_response(204)


_ONE = "/v2.0/subnetpools/{subnetpool_id}"
ROUTES = [
    Route("GET", "/v2.0/subnetpools", list_pools),
    Route("POST", "/v2.0/subnetpools", create_pool, json_body=True),
    Route("GET", _ONE, show_pool),
    Route("PUT", _ONE, update_pool, json_body=True),
    Route("DELETE", _ONE, delete_pool),
]
