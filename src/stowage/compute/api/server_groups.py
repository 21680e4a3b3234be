"""/os-server-groups: create, list, show and delete server groups, as Nova serves them.

Microversions that change this API:

    2.13  views carry project_id and user_id
    2.15  soft-affinity and soft-anti-affinity policies
    2.64  `policy` (a string) and `rules` replace the `policies` list and `metadata`;
          only anti-affinity takes rules (`max_server_per_host`)
    2.75  unknown query parameters on the list are a 400

A group belongs to its project: another project's group does not exist for a
non-admin (404). Creating one past the server_groups quota is a 403 (checked
before the write and again after it, as Nova's recheck_quota). Admins list
every project's groups with `all_projects`.
"""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import quota_checks
from stowage.compute import server_groups as groups
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    allowed,
    at_least,
    authorize,
    query_param,
    read_body,
    validate_body,
    validate_query,
)
from stowage.compute.api.quota_common import over_quota, owner
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

PROJECT_IN_VIEW = 13
SOFT_POLICIES = 15
POLICY_AND_RULES = 64
STRICT_QUERY = 75
_RULE = "os_compute_api:os-server-groups:"

_NAME = {"type": "string", "minLength": 1, "maxLength": 255,
         "pattern": r"^(?![\s])[\s\S]*(?<![\s])$"}
_POSITIVE = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 1,
             "minLength": 1}
_NON_NEGATIVE = {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0,
                 "minLength": 1}


def _create_schema(policies: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"server_group": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "policies": {"type": "array",
                             "items": [{"type": "string", "enum": policies}],
                             "uniqueItems": True, "minItems": 1, "maxItems": 1,
                             "additionalItems": False}},
            "required": ["name", "policies"],
            "additionalProperties": False}},
        "required": ["server_group"],
        "additionalProperties": False,
    }


CREATE_SCHEMA = _create_schema(list(groups.HARD_POLICIES))
CREATE_SCHEMA_2_15 = _create_schema(list(groups.POLICIES))
CREATE_SCHEMA_2_64 = copy.deepcopy(CREATE_SCHEMA_2_15)
_sg = CREATE_SCHEMA_2_64["properties"]["server_group"]
del _sg["properties"]["policies"]
_sg["properties"]["policy"] = {"type": "string", "enum": list(groups.POLICIES)}
_sg["properties"]["rules"] = {"type": "object",
                              "properties": {"max_server_per_host": _POSITIVE},
                              "additionalProperties": False}
_sg["required"] = ["name", "policy"]

INDEX_QUERY: dict[str, Any] = {
    "type": "object",
    "properties": {"all_projects": {"type": "string"}, "limit": _NON_NEGATIVE,
                   "offset": _NON_NEGATIVE},
    "additionalProperties": True,
}
INDEX_QUERY_2_75 = {**INDEX_QUERY, "additionalProperties": False}


def _view(req: Request, group: groups.ServerGroup) -> dict[str, Any]:
    view: dict[str, Any] = {"id": group.uuid, "name": group.name}
    if at_least(req, POLICY_AND_RULES):
        view["policy"] = group.policy
        view["rules"] = dict(group.rules)
    else:
        view["policies"] = [group.policy]
        view["metadata"] = {}
    view["members"] = list(group.members)
    if at_least(req, PROJECT_IN_VIEW):
        view["project_id"] = group.project_id
        view["user_id"] = group.user_id
    return view


def _policy_and_rules(req: Request, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if not at_least(req, POLICY_AND_RULES):
        schema = CREATE_SCHEMA_2_15 if at_least(req, SOFT_POLICIES) else CREATE_SCHEMA
        vals = validate_body(body, schema)["server_group"]
        return vals["policies"][0], {}
    vals = validate_body(body, CREATE_SCHEMA_2_64)["server_group"]
    policy, rules = vals["policy"], dict(vals.get("rules") or {})
    if rules and policy != "anti-affinity":
        raise HTTPError(400, "Only anti-affinity policy supports rules.")
    if "max_server_per_host" in rules:
        rules["max_server_per_host"] = int(rules["max_server_per_host"])
    return policy, rules


def create_group(req: Request) -> Response:
    ctx = req.context
    authorize(req, _RULE + "create", {"project_id": ctx.project_id, "user_id": ctx.user_id})
    body = read_body(req)
    policy, rules = _policy_and_rules(req, body)
    who = owner(req)
    with req.app.db.write() as conn:
        _check_quota(conn, who)
        group = groups.create(conn, body["server_group"]["name"], policy,
                              str(ctx.project_id), str(ctx.user_id), rules)
    if req.app.settings.quota.recheck_quota:
        _recheck_quota(req, who, group.uuid)
    return json_response({"server_group": _view(req, group)})


def _check_quota(conn: Connection, who: quota_checks.Owner, adding: int = 1) -> None:
    try:
        quota_checks.check_server_groups(conn, who, adding)
    except quota_checks.OverQuota as exc:
        raise over_quota(exc) from None


def _recheck_quota(req: Request, who: quota_checks.Owner, group_uuid: str) -> None:
    """Nova's recheck: with the group written, over the limit means a racing create took
    the room; this group is deleted again and the answer is the same 403."""
    try:
        with req.app.db.read() as conn:
            _check_quota(conn, who, adding=0)
    except HTTPError:
        with req.app.db.write() as conn:
            groups.delete(conn, group_uuid)
        raise


def _find(req: Request, action: str) -> groups.ServerGroup:
    """The group if the caller may see it: admins any, others their project's only (404)."""
    ctx = req.context
    project = None if ctx.is_admin else ctx.project_id
    with req.app.db.read() as conn:
        group = groups.get(conn, req.params["group_id"], project_id=project,
                           cell_db=req.app.cell_dbs())
    authorize(req, _RULE + action, {"project_id": group.project_id})
    return group


def show_group(req: Request) -> Response:
    return json_response({"server_group": _view(req, _find(req, "show"))})


def delete_group(req: Request) -> Response:
    group = _find(req, "delete")
    with req.app.db.write() as conn:
        groups.delete(conn, group.uuid)
    return empty_response(204)


def _page(req: Request) -> tuple[int, int]:
    offset = int(query_param(req, "offset") or 0)
    limit = query_param(req, "limit")
    return offset, min(int(limit), MAX_LIMIT) if limit is not None else MAX_LIMIT


def list_groups(req: Request) -> Response:
    ctx = req.context
    authorize(req, _RULE + "index", {"project_id": ctx.project_id})
    validate_query(req, INDEX_QUERY_2_75 if at_least(req, STRICT_QUERY) else INDEX_QUERY)
    offset, limit = _page(req)
    everyone = (query_param(req, "all_projects") is not None
                and allowed(req, _RULE + "index:all_projects"))
    with req.app.db.read() as conn:
        found = groups.list_groups(conn, None if everyone else ctx.project_id, offset, limit,
                                   cell_db=req.app.cell_dbs())
    return json_response({"server_groups": [_view(req, g) for g in found]})


_ONE = API_PREFIX + "/os-server-groups/{group_id}"
ROUTES = [
    Route("GET", API_PREFIX + "/os-server-groups", list_groups),
    Route("POST", API_PREFIX + "/os-server-groups", create_group, json_body=True),
    Route("GET", _ONE, show_group),
    Route("DELETE", _ONE, delete_group),
]
