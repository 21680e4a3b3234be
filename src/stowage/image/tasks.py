"""Glance tasks: the record of an image import, read back by admins and image owners.

A task is made `processing` when an import starts (imports.start) and ends
`success` (result: the image id) or `failure` (message: why), with
`expires_at` set Glance's `task_time_to_live` (48 hours) after it ended.
Tasks are never run from the tasks API here: `POST /v2/tasks` (type
`import`, from a URL) is refused (api_tasks.py), so every task is an
`api_image_import`. Expired tasks are kept, not purged.

Who sees which task: an admin every one, anyone else its project's (`owner`).
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import NotFound
from stowage.image import tables as t
from stowage.timeutil import utcnow

__all__ = ["Task", "TIME_TO_LIVE", "create", "finish", "get", "list_tasks", "of_image"]

_T = t.image_tasks
# Glance's `task_time_to_live`: how long a finished task is shown as unexpired.
TIME_TO_LIVE = datetime.timedelta(hours=48)


@dataclass
class Task:
    id: str
    type: str
    status: str
    owner: str | None
    image_id: str | None
    request_id: str | None
    user_id: str | None
    input: dict[str, Any]
    result: dict[str, Any] | None
    message: str
    expires_at: datetime.datetime | None
    created_at: datetime.datetime
    updated_at: datetime.datetime


def _to_task(row: Any) -> Task:
    return Task(id=row.id, type=row.type, status=row.status, owner=row.owner,
                image_id=row.image_id, request_id=row.request_id, user_id=row.user_id,
                input=dict(row.input or {}), result=row.result, message=row.message or "",
                expires_at=row.expires_at, created_at=row.created_at,
                updated_at=row.updated_at)


def create(conn: Connection, ctx: RequestContext, task_type: str, *, image_id: str | None,
           task_input: dict[str, Any]) -> Task:
    """A new `processing` task of the caller's project, for the caller's request."""
    now = utcnow()
    task_id = str(uuid.uuid4())
    conn.execute(_T.insert().values(
        id=task_id, type=task_type, status="processing", owner=ctx.project_id,
        image_id=image_id, request_id=ctx.request_id, user_id=ctx.user_id,
        input=task_input, result=None, message="", expires_at=None,
        created_at=now, updated_at=now))
    return _to_task(conn.execute(sa.select(_T).where(_T.c.id == task_id)).one())


def finish(conn: Connection, task_id: str, status: str, *,
           result: dict[str, Any] | None = None, message: str = "") -> None:
    now = utcnow()
    conn.execute(_T.update().where(_T.c.id == task_id)
                 .values(status=status, result=result, message=message, updated_at=now,
                         expires_at=now + TIME_TO_LIVE))


def _seen(query: sa.Select[Any], ctx: RequestContext) -> sa.Select[Any]:
    return query if ctx.is_admin else query.where(_T.c.owner == (ctx.project_id or ""))


def get(conn: Connection, task_id: str, ctx: RequestContext) -> Task:
    row = conn.execute(_seen(sa.select(_T).where(_T.c.id == task_id), ctx)).first()
    if row is None:
        raise NotFound(f"Task with the given ID {task_id} not found")
    return _to_task(row)


def list_tasks(conn: Connection, ctx: RequestContext, *, status: str | None = None,
               task_type: str | None = None) -> list[Task]:
    """Newest first, as Glance sorts tasks by default."""
    query = _seen(sa.select(_T), ctx)
    if status is not None:
        query = query.where(_T.c.status == status)
    if task_type is not None:
        query = query.where(_T.c.type == task_type)
    rows = conn.execute(query.order_by(_T.c.created_at.desc(), _T.c.id.desc()))
    return [_to_task(r) for r in rows]


def of_image(conn: Connection, image_id: str, ctx: RequestContext) -> list[Task]:
    """The image's import tasks the caller may see, oldest first."""
    query = _seen(sa.select(_T).where(_T.c.image_id == image_id), ctx)
    return [_to_task(r) for r in conn.execute(query.order_by(_T.c.created_at, _T.c.id))]
