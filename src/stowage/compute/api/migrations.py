"""GET /os-migrations: every move the cloud made, newest first (admin).

    2.23  migration_type in each item; links for in-progress live migrations
    2.59  uuid; limit/marker paging (marker = migration uuid) with next links;
          changes-since; unknown query parameters are a 400
    2.66  changes-before
    2.80  user_id/project_id filters and fields

Hidden migrations (the internal halves of a cross-cell move) are never shown,
nor soft-deleted ones (those of a deleted server, `deleted` = id, which Nova's
queries leave out with the context's `read_deleted="no"`; a marker naming one
is not found, 400).
Every cell's migrations are merged (newest first, then by id, then by uuid:
ids repeat across cells' databases) before paging; a cell whose database does
not answer is left out with a warning, as Nova does.
"""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa

from stowage.compute import migrations as migs
from stowage.compute import tables as t
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    at_least,
    authorize,
    links,
    next_link,
    query_param,
    validate_query,
)
from stowage.compute.api.server_list import parse_time
from stowage.compute.api.server_views import primitive_time
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "LIVE_IN_PROGRESS"]

MIGRATION_TYPE = 23
PAGING = 59
CHANGES_BEFORE = 66
USER_PROJECT = 80
LIVE_IN_PROGRESS = ("queued", "preparing", "running", "post-migrating")
_M = t.migrations
_STRING = {"type": "string"}
_FILTERS = ("hidden", "host", "instance_uuid", "source_compute", "status", "migration_type")


def _query_schema(req: Request) -> dict[str, Any]:
    props: dict[str, Any] = {name: _STRING for name in _FILTERS}
    if at_least(req, PAGING):
        props.update({"limit": {"type": "string", "pattern": "^[0-9]*$"},
                      "marker": _STRING, "changes-since": _STRING})
    if at_least(req, CHANGES_BEFORE):
        props["changes-before"] = _STRING
    if at_least(req, USER_PROJECT):
        props.update({"user_id": _STRING, "project_id": _STRING})
    return {"type": "object", "properties": props,
            "additionalProperties": not at_least(req, PAGING)}


def _where(req: Request) -> list[Any]:
    """SQL clauses for Nova's filters; hidden migrations are always left out, and so are
    soft-deleted ones (a deleted server's: Nova reads with `read_deleted="no"`)."""
    where: list[Any] = [_M.c.hidden == sa.false(), _M.c.deleted == 0]
    statuses = req.query_values("status")
    if statuses:
        where.append(_M.c.status.in_(statuses))
    host = query_param(req, "host")
    if host is not None:
        where.append(sa.or_(_M.c.source_compute == host, _M.c.dest_compute == host))
    elif query_param(req, "source_compute") is not None:
        where.append(_M.c.source_compute == query_param(req, "source_compute"))
    for name in ("migration_type", "instance_uuid"):
        if query_param(req, name) is not None:
            where.append(_M.c[name] == query_param(req, name))
    if at_least(req, USER_PROJECT):
        for name in ("user_id", "project_id"):
            if query_param(req, name) is not None:
                where.append(_M.c[name] == query_param(req, name))
    where.extend(_changes(req))
    return where


def _changes(req: Request) -> list[Any]:
    since = query_param(req, "changes-since") if at_least(req, PAGING) else None
    before = query_param(req, "changes-before") if at_least(req, CHANGES_BEFORE) else None
    # Nova compares with updated_at; a migration never updated has only created_at.
    changed = sa.func.coalesce(_M.c.updated_at, _M.c.created_at)
    where = []
    since_at = parse_time(since, "changes-since") if since is not None else None
    if since_at is not None:
        where.append(changed >= since_at)
    if before is not None:
        before_at = parse_time(before, "changes-before")
        if since_at is not None and before_at < since_at:
            raise HTTPError(400, "The value of changes-since must be less than or equal to "
                                 "changes-before.")
        where.append(changed <= before_at)
    return where


def _newest_first(mig: migs.Migration) -> tuple[datetime.datetime, int, str]:
    """The sort key, descending, of one cell's listing (created_at, id) and uuid; no
    created_at sorts last, as NULL does in SQLite's and MySQL's descending order."""
    return mig.created_at or datetime.datetime.min, mig.id or 0, mig.uuid


def _every_cell(req: Request) -> list[migs.Migration]:
    """Every answering cell's matching migrations as one newest-first listing: the marker
    is then looked for, and the page cut, across the cells."""
    where = _where(req)
    parts: list[list[migs.Migration]] = req.app.read_cells(
        lambda conn: migs.list_migrations(conn, where), skip_down=True)
    return sorted((m for part in parts for m in part), key=_newest_first, reverse=True)


def _page(found: list[migs.Migration], marker: str | None,
          limit: int) -> list[migs.Migration]:
    if marker is not None:
        uuids = [m.uuid for m in found]
        if marker not in uuids:
            raise HTTPError(400, f"Marker {marker} could not be found.")
        found = found[uuids.index(marker) + 1:]
    return found[:limit]


def view(req: Request, mig: migs.Migration) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": mig.id, "status": mig.status, "instance_uuid": mig.instance_uuid,
        "source_compute": mig.source_compute, "source_node": mig.source_node,
        "dest_compute": mig.dest_compute, "dest_node": mig.dest_node,
        "dest_host": mig.dest_host, "old_instance_type_id": mig.old_flavor_id,
        "new_instance_type_id": mig.new_flavor_id,
        "created_at": primitive_time(mig.created_at),
        "updated_at": primitive_time(mig.updated_at),
    }
    if at_least(req, MIGRATION_TYPE):
        item["migration_type"] = mig.migration_type
        if mig.migration_type == "live-migration" and mig.status in LIVE_IN_PROGRESS:
            item["links"] = links(req, f"servers/{mig.instance_uuid}/migrations", str(mig.id))
    if at_least(req, PAGING):
        item["uuid"] = mig.uuid
    if at_least(req, USER_PROJECT):
        item["user_id"] = mig.user_id
        item["project_id"] = mig.project_id
    return item


def list_migrations(req: Request) -> Response:
    authorize(req, "os_compute_api:os-migrations:index")
    validate_query(req, _query_schema(req))
    found = _every_cell(req)
    body: dict[str, Any] = {}
    if at_least(req, PAGING):
        raw = query_param(req, "limit")
        limit = MAX_LIMIT if raw in (None, "") else min(int(raw or 0), MAX_LIMIT)
        found = _page(found, query_param(req, "marker"), limit)
        if found and len(found) == limit:
            body["migrations_links"] = next_link(req, "os-migrations", found[-1].uuid)
    return json_response({"migrations": [view(req, m) for m in found], **body})


ROUTES = [Route("GET", API_PREFIX + "/os-migrations", list_migrations)]
