"""`/v2.0/subnets`: list, create, show, update, delete.

Subnet pools, IPv6 address modes and segments are not served: those
attributes are shown as null and only null may be sent for them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.network import errors as e
from stowage.network import subnetpools, subnets, tags
from stowage.network.api import common, views
from stowage.network.api.attributes import (
    DESCRIPTION,
    NAME,
    Attr,
    allocation_pools,
    boolean,
    host_routes,
    integer,
    ip_address_or_none,
    nameservers,
    one_of,
    owned_attrs,
    parse,
    read_only,
    string,
    uuid_or_none,
    uuid_value,
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _null_only(what: str) -> Any:
    def check(value: Any) -> None:
        if value is not None:
            raise ValueError(f"{what} is not supported by this service")
    return check


def _ip_version(value: Any) -> int:
    return int(one_of([4, 6])(integer()(value)))


ATTRS = owned_attrs(
    NAME, DESCRIPTION,
    Attr("network_id", uuid_value, put=False, required=True),
    Attr("ip_version", _ip_version, put=False, required=True),
    Attr("cidr", string(64), put=False),
    Attr("gateway_ip", ip_address_or_none),
    Attr("allocation_pools", allocation_pools),
    Attr("enable_dhcp", boolean),
    Attr("dns_nameservers", nameservers),
    Attr("host_routes", host_routes),
    Attr("ipv6_ra_mode", _null_only("ipv6_ra_mode")),
    Attr("ipv6_address_mode", _null_only("ipv6_address_mode")),
    Attr("subnetpool_id", uuid_or_none, put=False),
    Attr("prefixlen", integer(0), put=False),
    Attr("segment_id", _null_only("segment_id")),
    *read_only("tags"),
)
FILTERS = ("id", "name", "description", "network_id", "ip_version", "cidr", "gateway_ip",
           "enable_dhcp", "tenant_id", "project_id", "revision_number", "ipv6_ra_mode",
           "ipv6_address_mode", "subnetpool_id", *tags.FILTERS)


def list_subnets(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    ids = filters.get("id")
    found, targets = common.read(req, lambda conn: _with_targets(
        conn, subnets.list_subnets(conn, req.context, ids)))
    shown = common.readable(req, "get_subnet", [views.subnet(s) for s in found], targets)
    return common.listing(req, shown, filters, "subnets")


def _with_targets(conn: Connection, found: list[subnets.Subnet]
                  ) -> tuple[list[subnets.Subnet], dict[str, dict[str, object]]]:
    return found, subnets.targets(conn, found)


def show_subnet(req: Request) -> Response:
    subnet_id = req.params["subnet_id"]
    found, targets = common.read(req, lambda conn: _with_targets(
        conn, [subnets.get(conn, req.context, subnet_id)]))
    shown = common.readable(req, "get_subnet", [views.subnet(found[0])], targets)
    if not shown:
        raise subnets.missing(subnet_id)
    view = common.with_tags(req, "subnets", shown)[0]
    return json_response({"subnet": common.select_fields(view, common.fields_of(req))})


def _create_one(conn: Connection, req: Request, values: dict[str, Any]) -> dict[str, Any]:
    """A subnet with the `cidr` given, or one allocated from `subnetpool_id` (with
    `prefixlen`, or the `cidr` asked of the pool)."""
    pool_id = values.get("subnetpool_id")
    if not pool_id:
        if not values.get("cidr"):
            raise e.bad_request("subnet", "a subnetpool must be specified in the absence of "
                                          "a cidr")
        return views.subnet(subnets.create(conn, common.guard(req), values))
    if values.get("cidr") and "prefixlen" in values:
        raise e.bad_request("subnets", "cidr and prefixlen must not be supplied together")
    values = {**values, "cidr": subnetpools.allocate(conn, req.context, values)}
    made = subnets.create(conn, common.guard(req), values)
    subnetpools.record(conn, made.id, pool_id)
    return views.subnet(subnets.get(conn, req.context, made.id))


def create_subnet(req: Request) -> Response:
    return common.created(req, "subnet", ATTRS, "create_subnet",
                          lambda conn, values: _create_one(conn, req, values))


def update_subnet(req: Request) -> Response:
    values = parse(req, "subnet", ATTRS, create=False, action="update_subnet")
    expected = common.expected_revision(req)
    changed = common.write(req, lambda conn: subnets.update(
        conn, common.guard(req), req.params["subnet_id"], values, expected))
    return json_response({"subnet": common.with_tags(req, "subnets",
                                                     [views.subnet(changed)])[0]})


def delete_subnet(req: Request) -> Response:
    expected = common.expected_revision(req)
    common.deleted(req, "subnets", req.params["subnet_id"], lambda conn: subnets.delete(
        conn, common.guard(req), req.params["subnet_id"], expected))
    return empty_response(204)


_ONE = "/v2.0/subnets/{subnet_id}"
ROUTES = [
    Route("GET", "/v2.0/subnets", list_subnets),
    Route("POST", "/v2.0/subnets", create_subnet, json_body=True),
    Route("GET", _ONE, show_subnet),
    Route("PUT", _ONE, update_subnet, json_body=True),
    Route("DELETE", _ONE, delete_subnet),
]
