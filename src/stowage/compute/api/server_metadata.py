"""/servers/{id}/metadata[/{key}]: a server's user metadata, as Nova's server-metadata API.

    GET    /metadata        {"metadata": {...}}
    POST   /metadata        merge the given items in, answer them all
    PUT    /metadata        replace every item, answer the new set
    GET    /metadata/{key}  {"meta": {key: value}}, 404 "Metadata item was not found"
    PUT    /metadata/{key}  {"meta": {key: value}}: one item, whose key must be the
                            URL's (400 "Request body and URI mismatch")
    DELETE /metadata/{key}  204, 404 when the server has no such key

Keys are 1..255 of [a-zA-Z0-9-_:. ], values strings of at most 255. Writes
need the server launched and active, paused, suspended or stopped, whatever
its task (409 "Cannot 'update metadata' ..." otherwise: Nova's
`check_instance_state(vm_state=[...], task_state=None)`, which leaves the task
unchecked), and not locked (unless by an admin); the resulting set may hold
at most as many items as the `metadata_items` quota allows (403, Nova's
MetadataLimitExceeded). Each write holds the instance row (`locked_server`)
from its read to its commit, so two concurrent merges both land.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import quota_checks, states
from stowage.compute.api.common import API_PREFIX, authorize, read_body, validate_body
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    get_server,
    locked_server,
    target,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "METADATA", "WRITABLE", "check_count"]

_RULE = "os_compute_api:server-metadata:"
METADATA: dict[str, Any] = {
    "type": "object",
    "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
    "additionalProperties": False}
_ALL_SCHEMA = {"type": "object", "properties": {"metadata": METADATA},
               "required": ["metadata"], "additionalProperties": False}
_ONE_SCHEMA = {"type": "object",
               "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
               "required": ["meta"], "additionalProperties": False}
# Nova's check_instance_state for update/delete_instance_metadata.
# (Nova's paused and suspended states are named though stowage never enters them.)
WRITABLE = (states.ACTIVE, "paused", "suspended", states.STOPPED)
_NOT_FOUND = "Metadata item was not found"


def check_count(req: Request, conn: Connection, metadata: dict[str, str]) -> None:
    """403 when a server would hold more than the `metadata_items` quota (Nova's wording)."""
    try:
        quota_checks.check_metadata_items(conn, owner(req), len(metadata))
    except quota_checks.OverQuota as exc:
        raise over_quota(exc) from None


def _read(req: Request, rule: str) -> dict[str, str]:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
    authorize(req, _RULE + rule, target(instance))
    return dict(instance.metadata or {})


def _write(req: Request, rule: str, action: str, change: Any) -> dict[str, str]:
    """Apply `change(current) -> new` to the server's metadata under the row lock."""
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = locked_server(req, conn, req.params["server_id"])
        authorize(req, _RULE + rule, target(instance))
        check_unlocked(req, instance)
        check_state(instance, action, WRITABLE, task_states=None)
        new = change(dict(instance.metadata or {}))
        check_count(req, conn, new)
        inst.save(conn, instance.uuid, metadata=new)
    return dict(new)


def list_metadata(req: Request) -> Response:
    return json_response({"metadata": _read(req, "index")})


def merge_metadata(req: Request) -> Response:
    items = validate_body(read_body(req), _ALL_SCHEMA)["metadata"]
    merged = _write(req, "create", "update metadata", lambda old: {**old, **items})
    return json_response({"metadata": merged})


def replace_metadata(req: Request) -> Response:
    items = validate_body(read_body(req), _ALL_SCHEMA)["metadata"]
    new = _write(req, "update_all", "update metadata", lambda old: dict(items))
    return json_response({"metadata": new})


def show_item(req: Request) -> Response:
    key = req.params["key"]
    metadata = _read(req, "show")
    if key not in metadata:
        raise HTTPError(404, _NOT_FOUND)
    return json_response({"meta": {key: metadata[key]}})


def update_item(req: Request) -> Response:
    key = req.params["key"]
    item = validate_body(read_body(req), _ONE_SCHEMA)["meta"]
    if key not in item:
        raise HTTPError(400, "Request body and URI mismatch")
    _write(req, "update", "update metadata", lambda old: {**old, key: item[key]})
    return json_response({"meta": {key: item[key]}})


def _without(metadata: dict[str, str], key: str) -> dict[str, str]:
    if key not in metadata:
        raise HTTPError(404, _NOT_FOUND)
    return {k: v for k, v in metadata.items() if k != key}


def delete_item(req: Request) -> Response:
    key = req.params["key"]
    _write(req, "delete", "delete metadata", lambda old: _without(old, key))
    return empty_response(204)


_ALL = API_PREFIX + "/servers/{server_id}/metadata"
ROUTES = [
    Route("GET", _ALL, list_metadata),
    Route("POST", _ALL, merge_metadata, json_body=True),
    Route("PUT", _ALL, replace_metadata, json_body=True),
    Route("GET", _ALL + "/{key}", show_item),
    Route("PUT", _ALL + "/{key}", update_item, json_body=True),
    Route("DELETE", _ALL + "/{key}", delete_item),
]
