"""GET /servers/{id}/os-instance-actions[/{request_id}]: who did what to a server, and how it went.

    2.21  deleted servers keep their actions visible
    2.51  owners see the events of an action (without tracebacks)
    2.58  updated_at; limit/marker (marker = request id) and changes-since
    2.62  each event carries hostId (everyone) and host (admins)
    2.66  changes-before
    2.84  event details (admins)

Actions are newest first, as Nova lists them.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import actions
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    allowed,
    at_least,
    authorize,
    next_link,
    query_param,
    validate_query,
)
from stowage.compute.api.server_common import get_server
from stowage.compute.api.server_list import parse_time
from stowage.compute.api.server_views import host_id, primitive_time
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

DELETED_VISIBLE = 21
EVENTS_FOR_OWNERS = 51
PAGING = 58
EVENT_HOST = 62
CHANGES_BEFORE = 66
EVENT_DETAILS = 84
_STRING = {"type": "string"}


def _query_schema(req: Request) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if at_least(req, PAGING):
        props = {"limit": {"type": "string", "pattern": "^[0-9]*$"}, "marker": _STRING,
                 "changes-since": _STRING}
    if at_least(req, CHANGES_BEFORE):
        props["changes-before"] = _STRING
    return {"type": "object", "properties": props,
            "additionalProperties": not at_least(req, PAGING)}


def _action_view(req: Request, row: Any) -> dict[str, Any]:
    view = {"action": row.action, "instance_uuid": row.instance_uuid,
            "request_id": row.request_id, "user_id": row.user_id,
            "project_id": row.project_id, "start_time": primitive_time(row.start_time),
            "message": row.message}
    if at_least(req, PAGING):
        view["updated_at"] = primitive_time(row.updated_at)
    return view


def _changed(row: Any) -> Any:
    return row.updated_at or row.created_at


def _filtered(req: Request, rows: list[Any]) -> list[Any]:
    since = query_param(req, "changes-since")
    before = query_param(req, "changes-before") if at_least(req, CHANGES_BEFORE) else None
    since_at = parse_time(since, "changes-since") if since is not None else None
    before_at = parse_time(before, "changes-before") if before is not None else None
    if since_at and before_at and before_at < since_at:
        raise HTTPError(400, "The value of changes-since must be less than or equal to "
                             "changes-before.")
    if since_at is not None:
        rows = [r for r in rows if _changed(r) >= since_at]
    if before_at is not None:
        rows = [r for r in rows if _changed(r) <= before_at]
    marker = query_param(req, "marker")
    if marker is not None:
        ids = [r.request_id for r in rows]
        if marker not in ids:
            raise HTTPError(400, f"Marker {marker} could not be found.")
        rows = rows[ids.index(marker) + 1:]
    return rows


def list_actions(req: Request) -> Response:
    validate_query(req, _query_schema(req))
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"],
                              read_deleted=at_least(req, DELETED_VISIBLE))
        authorize(req, "os_compute_api:os-instance-actions:list",
                  {"project_id": instance.project_id})
        rows = actions.actions_of(conn, instance.uuid)
    body: dict[str, Any] = {}
    if at_least(req, PAGING):
        raw = query_param(req, "limit")
        limit = MAX_LIMIT if raw in (None, "") else min(int(raw or 0), MAX_LIMIT)
        rows = _filtered(req, rows)[:limit]
        if rows and len(rows) == limit:
            body["links"] = next_link(req, f"servers/{instance.uuid}/os-instance-actions",
                                      rows[-1].request_id)
    return json_response({"instanceActions": [_action_view(req, r) for r in rows], **body})


def _event_view(req: Request, row: Any, project_id: str | None, full: bool,
                details: bool) -> dict[str, Any]:
    view = {"event": row.event, "start_time": primitive_time(row.start_time),
            "finish_time": primitive_time(row.finish_time), "result": row.result}
    if full:
        view["traceback"] = row.traceback
        if at_least(req, EVENT_HOST):
            view["host"] = row.host
    if at_least(req, EVENT_HOST):
        view["hostId"] = host_id(project_id, row.host)
    if details:
        view["details"] = row.details
    return view


def show_action(req: Request) -> Response:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"],
                              read_deleted=at_least(req, DELETED_VISIBLE))
        target = {"project_id": instance.project_id}
        authorize(req, "os_compute_api:os-instance-actions:show", target)
        request_id = req.params["request_id"]
        rows = [r for r in actions.actions_of(conn, instance.uuid)
                if r.request_id == request_id]
        if not rows:
            raise HTTPError(404, f"Action {request_id} not found")
        action = rows[0]
        events = actions.events_of(conn, action.id)
    view = _action_view(req, action)
    full = req.app.enforcer.allowed("os_compute_api:os-instance-actions:events", req.context,
                                    target)
    if full or at_least(req, EVENTS_FOR_OWNERS):
        details = at_least(req, EVENT_DETAILS) and allowed(
            req, "os_compute_api:os-instance-actions:events:details")
        project = action.project_id or instance.project_id
        view["events"] = [_event_view(req, e, project, full, details) for e in events]
    return json_response({"instanceAction": view})


_BASE = API_PREFIX + "/servers/{server_id}/os-instance-actions"
ROUTES = [
    Route("GET", _BASE, list_actions),
    Route("GET", _BASE + "/{request_id}", show_action),
]
