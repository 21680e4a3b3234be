"""Tenant usage over a time window (os-simple-tenant-usage): who ran what, for how long.

An instance is in the window [start, stop) when it launched before `stop` and
was not terminated before `start` (deleted instances included: Nova's
`instance_get_active_by_window_joined`). Its hours are the part of its life
inside the window; never-launched instances are not in any window. Pages
follow (created_at, id), with a marker naming the last instance of a page.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.errors import NotFound

__all__ = ["Used", "in_window", "hours_in"]

_I = t.instances


@dataclass
class Used:
    """One instance's part of a window."""

    uuid: str
    name: str
    project_id: str
    vm_state: str
    flavor: Mapping[str, Any]
    launched_at: datetime.datetime
    terminated_at: datetime.datetime | None
    hours: float


def hours_in(launched: datetime.datetime | None, terminated: datetime.datetime | None,
             start: datetime.datetime, stop: datetime.datetime) -> float:
    """Hours of [launched, terminated) inside [start, stop) (running = until stop)."""
    if launched is None or launched > stop or (terminated and terminated < start):
        return 0.0
    end = min(stop, terminated) if terminated else stop
    return (end - max(launched, start)).total_seconds() / 3600.0


def _after_marker(conn: Connection, query: sa.Select[Any], marker: str) -> sa.Select[Any]:
    # SELECT created_at, id FROM instances WHERE uuid = :marker
    row = conn.execute(sa.select(_I.c.created_at, _I.c.id).where(_I.c.uuid == marker)).first()
    if row is None:
        raise NotFound(f"Marker {marker} could not be found.")
    created, ident = row
    return query.where(sa.or_(_I.c.created_at > created,
                              sa.and_(_I.c.created_at == created, _I.c.id > ident)))


def in_window(conn: Connection, start: datetime.datetime, stop: datetime.datetime,
              project_id: str | None = None, limit: int | None = None,
              marker: str | None = None) -> list[Used]:
    """The instances in the window (of one project), oldest first; NotFound for a bad marker."""
    # SELECT ... FROM instances WHERE (terminated_at IS NULL OR terminated_at > :start)
    #    AND launched_at < :stop [AND project_id = :p] [AND (created_at, id) > marker's]
    #  ORDER BY created_at, id [LIMIT :limit]
    query = (sa.select(_I.c.uuid, _I.c.display_name, _I.c.project_id, _I.c.vm_state,
                       _I.c.flavor, _I.c.launched_at, _I.c.terminated_at)
             .where(sa.or_(_I.c.terminated_at.is_(None), _I.c.terminated_at > start),
                    _I.c.launched_at < stop, _I.c.hidden == sa.false())
             .order_by(_I.c.created_at, _I.c.id))
    if project_id is not None:
        query = query.where(_I.c.project_id == project_id)
    if marker is not None:
        query = _after_marker(conn, query, marker)
    if limit is not None:
        query = query.limit(limit)
    return [Used(row.uuid, row.display_name, row.project_id, row.vm_state, row.flavor,
                 row.launched_at, row.terminated_at,
                 hours_in(row.launched_at, row.terminated_at, start, stop))
            for row in conn.execute(query)]
