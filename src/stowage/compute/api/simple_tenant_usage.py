"""/os-simple-tenant-usage: hours, vCPU-, RAM- and disk-hours per project over a window.

    GET /os-simple-tenant-usage          admin: every project ("tenant_usages"),
                                         server_usages only with ?detailed=1
    GET /os-simple-tenant-usage/{p}      the project's readers: one "tenant_usage"
                                         (always detailed; {} when nothing ran)

`start` and `end` are `YYYY-MM-DDTHH:MM:SS[.ffffff]` or `YYYY-MM-DD
HH:MM:SS.ffffff`, UTC, each defaulting to the clock when it is read (the
start's first: see `_window`); an end in the future is cut to now. From
2.40 the instances are paged (`limit`, `marker` = an instance id) and a full
page carries a `next` link; 2.75 refuses unknown query parameters. The
window's arithmetic is in `compute/tenant_usage.py`. The cells are read one
after the other, as Nova pages them: the marker's cell from the marker on,
the later cells from their start, until the limit is reached.
"""

from __future__ import annotations

import datetime
from typing import Any

from stowage.compute import tenant_usage
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    at_least,
    authorize,
    next_link,
    query_param,
    validate_query,
)
from stowage.errors import NotFound
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

PAGING = 40
STRICT_QUERY = 75
_RULE = "os_compute_api:os-simple-tenant-usage:"
_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")
_COLLECTION = "os-simple-tenant-usage"


def _query_schema(req: Request, detailed: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"start": {"type": "string"}, "end": {"type": "string"}}
    if detailed:
        props["detailed"] = {"type": "string"}
    if at_least(req, PAGING):
        props["limit"] = {"type": "string", "pattern": "^[0-9]+$"}
        props["marker"] = {"type": "string"}
    return {"type": "object", "properties": props,
            "additionalProperties": not at_least(req, STRICT_QUERY)}


def _when(value: str | None, now: datetime.datetime) -> datetime.datetime:
    if not value:
        return now
    for fmt in _FORMATS:
        try:
            return datetime.datetime.strptime(value, fmt)
        except ValueError:
            continue
    raise HTTPError(400, "Invalid datetime string: Datetime is in invalid format")


def _window(req: Request) -> tuple[datetime.datetime, datetime.datetime]:
    """[start, stop): Nova reads the clock once per missing bound, the start's first, so
    no `start` and no `end` is a 200 over the instant between the two reads (the servers
    running now, with ~0 hours), while only an `end` in the past is a 400 (start = now).
    The end's read is kept a microsecond after the start's so that a clock which did not
    advance between them still gives that instant rather than a 400."""
    given_start = query_param(req, "start")
    start = _when(given_start, utcnow())
    stop = _when(query_param(req, "end"), utcnow())
    if given_start is None and query_param(req, "end") is None:
        stop = max(stop, start + datetime.timedelta(microseconds=1))
    if not start < stop:
        raise HTTPError(400, "Invalid start time. The start time cannot occur after the "
                             "end time.")
    return start, min(stop, utcnow())


def _page(req: Request) -> tuple[int, str | None]:
    if not at_least(req, PAGING):
        return MAX_LIMIT, None
    limit = query_param(req, "limit")
    return (MAX_LIMIT if limit is None else min(int(limit), MAX_LIMIT),
            query_param(req, "marker"))


def _time(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _server(used: tenant_usage.Used, now: datetime.datetime) -> dict[str, Any]:
    flavor = used.flavor
    ended = used.terminated_at
    return {"hours": used.hours, "flavor": flavor.get("name", ""), "instance_id": used.uuid,
            "name": used.name, "tenant_id": used.project_id,
            "memory_mb": int(flavor.get("memory_mb", 0)),
            "local_gb": int(flavor.get("root_gb", 0)) + int(flavor.get("ephemeral_gb", 0)),
            "vcpus": int(flavor.get("vcpus", 0)), "started_at": _time(used.launched_at),
            "ended_at": _time(ended), "state": "terminated" if ended else used.vm_state,
            "uptime": int(((ended or now) - used.launched_at).total_seconds())}


def _summaries(found: list[tenant_usage.Used], start: datetime.datetime,
               stop: datetime.datetime, detailed: bool) -> list[dict[str, Any]]:
    """One summary per project, in the order its first instance appears."""
    now = utcnow()
    per_project: dict[str, dict[str, Any]] = {}
    for used in found:
        info = _server(used, now)
        summary = per_project.setdefault(used.project_id, {
            "tenant_id": used.project_id, **({"server_usages": []} if detailed else {}),
            "total_local_gb_usage": 0, "total_vcpus_usage": 0, "total_memory_mb_usage": 0,
            "total_hours": 0, "start": _time(start), "stop": _time(stop)})
        summary["total_local_gb_usage"] += info["local_gb"] * used.hours
        summary["total_vcpus_usage"] += info["vcpus"] * used.hours
        summary["total_memory_mb_usage"] += info["memory_mb"] * used.hours
        summary["total_hours"] += used.hours
        if detailed:
            summary["server_usages"].append(info)
    return list(per_project.values())


def _usages(req: Request, project_id: str | None, detailed: bool
            ) -> tuple[list[dict[str, Any]], list[tenant_usage.Used], int]:
    validate_query(req, _query_schema(req, detailed=project_id is None))
    start, stop = _window(req)
    limit, marker = _page(req)
    found = _in_cells(req, start, stop, project_id, limit, marker)
    return _summaries(found, start, stop, detailed), found, limit


def _in_cells(req: Request, start: datetime.datetime, stop: datetime.datetime,
              project_id: str | None, limit: int, marker: str | None
              ) -> list[tenant_usage.Used]:
    """Nova's cell-by-cell page: the cells before the marker's are skipped (they do not
    have it), the marker's is read after it, each later one from its start, until
    `limit` instances are found; 400 when no cell has the marker."""
    found: list[tenant_usage.Used] = []
    for db in req.app.cell_dbs():
        try:
            with db.read() as conn:
                part = tenant_usage.in_window(conn, start, stop, project_id,
                                              limit - len(found), marker)
        except NotFound as exc:
            missing = exc
            continue
        found += part
        marker = None
        if len(found) >= limit:
            break
    if marker is not None:
        raise HTTPError(400, missing.detail)
    return found


def _links(req: Request, found: list[tenant_usage.Used], limit: int,
           collection: str) -> list[dict[str, str]]:
    if not at_least(req, PAGING) or not found or len(found) < limit:
        return []
    return next_link(req, collection, found[-1].uuid)


def index(req: Request) -> Response:
    authorize(req, _RULE + "list")
    detailed = query_param(req, "detailed") == "1"
    summaries, found, limit = _usages(req, None, detailed)
    body: dict[str, Any] = {"tenant_usages": summaries}
    links = _links(req, found, limit, _COLLECTION)
    if links:
        body["tenant_usages_links"] = links
    return json_response(body)


def show(req: Request) -> Response:
    project_id = req.params["project_id"]
    authorize(req, _RULE + "show", {"project_id": project_id})
    summaries, found, limit = _usages(req, project_id, True)
    body: dict[str, Any] = {"tenant_usage": summaries[0] if summaries else {}}
    links = _links(req, found, limit, f"{_COLLECTION}/{project_id}")
    if links:
        body["tenant_usage_links"] = links
    return json_response(body)


ROUTES = [
    Route("GET", API_PREFIX + "/" + _COLLECTION, index),
    Route("GET", API_PREFIX + "/" + _COLLECTION + "/{project_id}", show),
]
