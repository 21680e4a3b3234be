"""/os-quota-class-sets/{class}: the limits of a quota class; only `default` is applied.

    GET  /os-quota-class-sets/{class}   admin: the class's limits over `[quota]`, with "id"
    PUT  /os-quota-class-sets/{class}   admin: set some; answers the limits, no "id"

Microversions (Nova's, which differ from os-quota-sets): before 2.50 the
answers leave out server_groups and server_group_members; from 2.50 they
leave out the nova-network keys instead (and a PUT refuses them); 2.57 drops
injected_file* as well. A class other than `default` can be written and
read, but no project's limits fall back to it (as in Nova).
"""

from __future__ import annotations

from typing import Any

from stowage.compute import quota_limits as limits
from stowage.compute.api.common import API_PREFIX, authorize, read_body, validate_body
from stowage.compute.api.quota_common import hidden_keys
from stowage.compute.api.quota_sets import QUOTA_VALUE
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

SERVER_GROUP_KEYS = 50
_RULE = "os_compute_api:os-quota-class-sets:"
_GROUP_KEYS = ("server_groups", "server_group_members")


def _hidden(minor: int) -> tuple[str, ...]:
    hidden = hidden_keys(minor, network_from=SERVER_GROUP_KEYS)
    return hidden if minor >= SERVER_GROUP_KEYS else hidden + _GROUP_KEYS


def _update_schema(minor: int) -> dict[str, Any]:
    # Before 2.50 the group keys may be set, only not shown (Nova's v2.1 schema).
    hidden = [k for k in hidden_keys(minor, network_from=SERVER_GROUP_KEYS)]
    keys = [r for r in limits.RESOURCES if r not in hidden]
    if minor < SERVER_GROUP_KEYS:
        keys.append("networks")
    return {"type": "object",
            "properties": {"quota_class_set": {
                "type": "object", "properties": {k: QUOTA_VALUE for k in keys},
                "additionalProperties": False}},
            "required": ["quota_class_set"], "additionalProperties": False}


def _shown(req: Request, values: dict[str, int], class_name: str | None) -> Response:
    hidden = _hidden(req.version.minor)
    body: dict[str, Any] = {} if class_name is None else {"id": class_name}
    body.update({r: values[r] for r in limits.RESOURCES if r not in hidden})
    return json_response({"quota_class_set": body})


def show(req: Request) -> Response:
    class_name = req.params["class_name"]
    authorize(req, _RULE + "show", {"quota_class": class_name})
    with req.app.db.read() as conn:
        values = limits.class_limits(conn, req.app.settings.quota, class_name)
    return _shown(req, values, class_name)


def update(req: Request) -> Response:
    class_name = req.params["class_name"]
    authorize(req, _RULE + "update", {"quota_class": class_name})
    if not 1 <= len(class_name) <= 255:
        raise HTTPError(400, "quota_class_name has a length outside 1-255 characters.")
    given = validate_body(read_body(req), _update_schema(req.version.minor))["quota_class_set"]
    wanted = {k: int(v) for k, v in given.items() if k != "networks"}
    for resource, value in wanted.items():
        if value < limits.UNLIMITED:
            raise HTTPError(400, f"Quota limit {value} for {resource} must be -1 or greater.")
    with req.app.db.write() as conn:
        for resource, value in wanted.items():
            limits.set_class_limit(conn, class_name, resource, value)
        values = limits.class_limits(conn, req.app.settings.quota, class_name)
    return _shown(req, values, None)


_ONE = API_PREFIX + "/os-quota-class-sets/{class_name}"
ROUTES = [
    Route("GET", _ONE, show),
    Route("PUT", _ONE, update, json_body=True),
]
