"""/os-quota-sets/{project_id}: a project's (or, with ?user_id=, a user's) quota limits.

    GET     /os-quota-sets/{p}            limits, with "id"
    GET     /os-quota-sets/{p}/defaults   the defaults (class `default` over `[quota]`)
    GET     /os-quota-sets/{p}/detail     {in_use, limit, reserved} per resource
    PUT     /os-quota-sets/{p}            admin: set limits; answers the limits, no "id"
    DELETE  /os-quota-sets/{p}            admin: back to the defaults, 202

Microversions: 2.36 drops the nova-network keys from answers and refuses
them in a PUT; 2.57 does the same with injected_file*; 2.75 refuses unknown
query parameters. A PUT is checked as a whole before anything is written
(Nova's two passes): -1 is unlimited, below -1 is a 400; unless `force`, a
project's limit may not go below its usage (or the sum of its users' limits),
nor a user's below the user's usage or above what the project has left.
"""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import quota_limits as limits
from stowage.compute import quota_usage as usage
from stowage.compute.api.common import (
    API_PREFIX,
    BOOLEAN,
    as_bool,
    at_least,
    authorize,
    query_param,
    read_body,
    validate_body,
    validate_query,
)
from stowage.compute.api.quota_common import NO_NETWORK, hidden_keys, owner
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "QUOTA_VALUE"]

STRICT_QUERY = 75
_RULE = "os_compute_api:os-quota-sets:"
# Nova's common_quota: an integer (or its string), -1 (unlimited) up to the db's MAX_INT.
QUOTA_VALUE: dict[str, Any] = {"type": ["integer", "string"], "pattern": "^-?[0-9]+$",
                               "minimum": -1, "maximum": 0x7FFFFFFF}
_QUERY: dict[str, Any] = {"type": "object", "properties": {"user_id": {"type": "string"}},
                          "additionalProperties": True}
_QUERY_2_75 = {**_QUERY, "additionalProperties": False}


def _update_schema(minor: int) -> dict[str, Any]:
    keys = [r for r in limits.RESOURCES if r not in hidden_keys(minor)]
    if minor < NO_NETWORK:
        keys.append("networks")  # accepted by the schema, then refused: nova-network only
    props: dict[str, Any] = {k: QUOTA_VALUE for k in keys}
    props["force"] = BOOLEAN
    return {"type": "object",
            "properties": {"quota_set": {"type": "object", "properties": copy.deepcopy(props),
                                         "additionalProperties": False}},
            "required": ["quota_set"], "additionalProperties": False}


def _user_id(req: Request) -> str | None:
    validate_query(req, _QUERY_2_75 if at_least(req, STRICT_QUERY) else _QUERY)
    return query_param(req, "user_id") or None


def _shown(req: Request, values: dict[str, Any], project_id: str | None) -> Response:
    hidden = hidden_keys(req.version.minor)
    body: dict[str, Any] = {} if project_id is None else {"id": project_id}
    body.update({r: values[r] for r in limits.RESOURCES if r not in hidden and r in values})
    return json_response({"quota_set": body})


def _limits(conn: Connection, req: Request, project_id: str,
            user_id: str | None) -> dict[str, int]:
    settings = req.app.settings.quota
    if user_id:
        return limits.user_limits(conn, settings, project_id, user_id)
    return limits.project_limits(conn, settings, project_id)


def _in_use(conn: Connection, req: Request, project_id: str,
            user_id: str | None) -> dict[str, int]:
    """Per resource what is used now; 0 for the absolute (uncounted) ones."""
    who = owner(req, project_id, user_id)
    counted = who.used(conn, usage.COUNTED, user_id)
    return {r: counted.get(r, 0) for r in limits.RESOURCES}


def show(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "show", {"project_id": project_id})
    user_id = _user_id(req)
    with req.app.db.read() as conn:
        return _shown(req, _limits(conn, req, project_id, user_id), project_id)


def detail(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "detail", {"project_id": project_id})
    user_id = _user_id(req)
    with req.app.db.read() as conn:
        cap = _limits(conn, req, project_id, user_id)
        used = _in_use(conn, req, project_id, user_id)
    return _shown(req, {r: {"in_use": used[r], "limit": cap[r], "reserved": 0}
                        for r in limits.RESOURCES}, project_id)


def defaults(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "defaults", {"project_id": project_id})
    with req.app.db.read() as conn:
        return _shown(req, limits.class_limits(conn, req.app.settings.quota), project_id)


def _bounds(conn: Connection, req: Request, project_id: str,
            user_id: str | None) -> dict[str, tuple[int, int]]:
    """Nova's settable quotas: resource -> (minimum, maximum), -1 = no maximum."""
    used = _in_use(conn, req, project_id, user_id)
    project = limits.project_limits(conn, req.app.settings.quota, project_id)
    if user_id is None:
        handed_out = limits.user_rows_sum(conn, project_id)
        return {r: (used[r] if project[r] == limits.UNLIMITED
                    else max(handed_out.get(r, 0), used[r]), limits.UNLIMITED)
                for r in limits.RESOURCES}
    others = limits.user_rows_sum(conn, project_id, except_user=user_id)
    return {r: (used[r], limits.UNLIMITED if project[r] == limits.UNLIMITED
                else project[r] - others.get(r, 0))
            for r in limits.RESOURCES}


def _check_limit(resource: str, limit: int, minimum: int, maximum: int) -> None:
    def inf(value: int) -> float:
        return float("inf") if value == limits.UNLIMITED else value

    if inf(limit) < inf(minimum):
        raise HTTPError(400, f"Quota limit {limit} for {resource} must be greater than or "
                             f"equal to already used and reserved {minimum}.")
    if inf(limit) > inf(maximum):
        raise HTTPError(400, f"Quota limit {limit} for {resource} must be less than or "
                             f"equal to {maximum}.")


def _checked(conn: Connection, req: Request, project_id: str, user_id: str | None,
             given: dict[str, Any]) -> dict[str, int]:
    """Pass 1: every value valid (or forced) before anything is written."""
    if "networks" in given:
        raise HTTPError(400, "The networks quota is disabled")
    force = as_bool(given.get("force", False))
    wanted = {k: int(v) for k, v in given.items() if k != "force"}
    for resource, value in wanted.items():
        if value < limits.UNLIMITED:
            raise HTTPError(400, f"Quota limit {value} for {resource} must be -1 or greater.")
    if not force and wanted:
        bounds = _bounds(conn, req, project_id, user_id)
        for resource, value in wanted.items():
            _check_limit(resource, value, *bounds[resource])
    return wanted


def update(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "update", {"project_id": project_id})
    user_id = _user_id(req)
    given = validate_body(read_body(req), _update_schema(req.version.minor))["quota_set"]
    with req.app.db.write() as conn:
        for resource, value in _checked(conn, req, project_id, user_id, given).items():
            limits.set_project_limit(conn, project_id, user_id, resource, value)
        values = _limits(conn, req, project_id, user_id)
    return _shown(req, values, None)


def delete(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "delete", {"project_id": project_id})
    user_id = _user_id(req)
    with req.app.db.write() as conn:
        limits.delete_limits(conn, project_id, user_id)
    return empty_response(202)


_ONE = API_PREFIX + "/os-quota-sets/{project_id}"
ROUTES = [
    Route("GET", _ONE + "/defaults", defaults),
    Route("GET", _ONE + "/detail", detail),
    Route("GET", _ONE, show),
    Route("PUT", _ONE, update, json_body=True),
    Route("DELETE", _ONE, delete),
]
