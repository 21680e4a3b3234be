"""Servers as the dashboard lists them: state, task, host, flavor, project, last fault.

Paged in SQL: each cell database answers the uuids of its page (newest
first, after the filters), the pages are merged, and only the shown servers'
records and faults are read. With 10,000 servers a page reads a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from stowage.compute import instances, states
from stowage.compute import tables as t
from stowage.web.dashboard.paging import BadQuery, Page
from stowage.web.dashboard.world import World

__all__ = ["server_page", "server_view"]

_I = t.instances
# The `status` filter takes the API's statuses (ACTIVE, VERIFY_RESIZE, ...): the
# vm_state/task_state pairs behind each are known in `states`.
_FILTERS = ("q", "status", "host", "project", "page", "per_page")


def _where(query: Mapping[str, str]) -> list[Any]:
    clauses: list[Any] = [_I.c.deleted == 0]
    text = query.get("q", "").strip()
    if text:
        # A name part, or a whole uuid.
        clauses.append(sa.or_(_I.c.display_name.contains(text, autoescape=True),
                              _I.c.uuid == text))
    if query.get("host"):
        clauses.append(_I.c.host == query["host"])
    if query.get("project"):
        clauses.append(_I.c.project_id == query["project"])
    return clauses


def _status_ok(query: Mapping[str, str], inst: instances.Instance) -> bool:
    wanted = query.get("status", "").upper()
    return not wanted or states.status_of(inst.vm_state, inst.task_state) == wanted


def server_page(world: World, query: Mapping[str, str]) -> dict[str, Any]:
    """One page of the servers matching the filters, newest first."""
    unknown = sorted(set(query) - set(_FILTERS))
    if unknown:
        raise BadQuery(f"unknown filter(s) {', '.join(unknown)}; use {', '.join(_FILTERS)}")
    page = Page.of(query)
    if query.get("status"):
        return _by_status(world, query, page)
    dbs = [db for _, db in world.cell_dbs()]
    # One database pages in SQL; several each give their first offset + size rows,
    # merged here (Nova's scatter-gather does the same).
    skip = page.offset if len(dbs) == 1 else 0
    total, found = 0, []
    for db in dbs:
        with db.read() as conn:
            # SELECT count(*) FROM instances WHERE deleted = 0 AND <filters>
            total += int(conn.execute(sa.select(sa.func.count()).select_from(_I)
                                      .where(*_where(query))).scalar() or 0)
            # SELECT uuid, created_at, id FROM instances WHERE ... ORDER BY created_at DESC,
            #   id DESC LIMIT :limit OFFSET :skip
            found += [(row.created_at, row.id, row.uuid, db) for row in conn.execute(
                sa.select(_I.c.uuid, _I.c.created_at, _I.c.id).where(*_where(query))
                .order_by(_I.c.created_at.desc(), _I.c.id.desc())
                .offset(skip).limit(page.offset + page.size - skip))]
    found.sort(key=lambda r: (r[0], r[1]), reverse=True)
    shown = found[page.offset - skip:page.offset - skip + page.size]
    return {"servers": _views(shown), **page.meta(total)}


def _by_status(world: World, query: Mapping[str, str], page: Page) -> dict[str, Any]:
    """A status is a pair of columns under a name: read the narrow columns of the
    matches, keep those whose status is the one asked, then page."""
    found = []
    for _, db in world.cell_dbs():
        with db.read() as conn:
            rows = conn.execute(sa.select(_I.c.uuid, _I.c.created_at, _I.c.id, _I.c.vm_state,
                                          _I.c.task_state).where(*_where(query)))
            wanted = query["status"].upper()
            found += [(r.created_at, r.id, r.uuid, db) for r in rows
                      if states.status_of(r.vm_state, r.task_state) == wanted]
    found.sort(key=lambda r: (r[0], r[1]), reverse=True)
    shown = found[page.offset:page.offset + page.size]
    return {"servers": _views(shown), **page.meta(len(found))}


def _views(rows: list[tuple[Any, Any, str, Any]]) -> list[dict[str, Any]]:
    by_db: dict[int, tuple[Any, list[str]]] = {}
    for _, _, uuid, db in rows:
        by_db.setdefault(id(db), (db, []))[1].append(uuid)
    records: dict[str, instances.Instance] = {}
    faults: dict[str, dict[str, Any]] = {}
    for db, uuids in by_db.values():
        with db.read() as conn:
            records.update((i.uuid, i) for i in instances.list_instances(conn, uuids=uuids))
            faults.update(instances.latest_faults(conn, uuids))
    return [server_view(records[uuid], faults.get(uuid))
            for _, _, uuid, _ in rows if uuid in records]


def server_view(inst: instances.Instance, fault: Mapping[str, Any] | None) -> dict[str, Any]:
    flavor = inst.flavor or {}
    return {
        "uuid": inst.uuid, "name": inst.display_name,
        "status": states.status_of(inst.vm_state, inst.task_state),
        "vm_state": inst.vm_state, "task_state": inst.task_state, "host": inst.host,
        "flavor": flavor.get("name") or flavor.get("flavorid"),
        "project": inst.project_id,
        "fault": None if fault is None else {
            "code": fault["code"], "message": fault["message"],
            "created": fault["created"].isoformat() if fault["created"] else None},
    }
