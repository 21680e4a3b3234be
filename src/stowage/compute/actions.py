"""Instance actions and their events: the operator's record of who did what, and how it went.

The API starts an action when it accepts a request (`resize`, `migrate`, ...);
the conductor and agents add events (`conductor_migrate_server`,
`compute_prep_resize`, ...) that end in `Success` or `Error`.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["start_action", "finish_action", "start_event", "finish_event", "actions_of",
           "action_by_request", "events_of"]

_A = t.instance_actions
_E = t.instance_action_events


def start_action(conn: Connection, instance_uuid: str, action: str, request_id: str,
                 user_id: str | None, project_id: str | None) -> int:
    now = utcnow()
    return int(conn.execute(_A.insert().values(
        action=action, instance_uuid=instance_uuid, request_id=request_id, user_id=user_id,
        project_id=project_id, start_time=now,
        created_at=now)).inserted_primary_key[0])  # type: ignore[index]


def finish_action(conn: Connection, instance_uuid: str, request_id: str,
                  message: str | None = None) -> None:
    now = utcnow()
    conn.execute(_A.update().where(_A.c.instance_uuid == instance_uuid,
                                   _A.c.request_id == request_id)
                 .values(finish_time=now, updated_at=now, message=message))


def _action_id(conn: Connection, instance_uuid: str, request_id: str) -> int | None:
    return conn.execute(sa.select(_A.c.id).where(_A.c.instance_uuid == instance_uuid,
                                                 _A.c.request_id == request_id)
                        .order_by(_A.c.id.desc())).scalar()


def start_event(conn: Connection, instance_uuid: str, request_id: str, event: str,
                host: str | None = None) -> None:
    """Record the start of `event`; a request without an action (internal work) records none."""
    action_id = _action_id(conn, instance_uuid, request_id)
    if action_id is None:
        return
    now = utcnow()
    conn.execute(_E.insert().values(action_id=action_id, event=event, start_time=now,
                                    host=host, created_at=now))
    conn.execute(_A.update().where(_A.c.id == action_id).values(updated_at=now))


def finish_event(conn: Connection, instance_uuid: str, request_id: str, event: str,
                 error: str | None = None) -> None:
    action_id = _action_id(conn, instance_uuid, request_id)
    if action_id is None:
        return
    now = utcnow()
    conn.execute(_E.update().where(_E.c.action_id == action_id, _E.c.event == event,
                                   _E.c.finish_time.is_(None))
                 .values(finish_time=now, result="Error" if error else "Success",
                         traceback=error, details=error))
    values: dict[str, Any] = {"updated_at": now}
    if error:
        values["message"] = "Error"
    conn.execute(_A.update().where(_A.c.id == action_id).values(**values))


def actions_of(conn: Connection, instance_uuid: str) -> list[Any]:
    """The instance's actions, newest first (rows of `instance_actions`)."""
    return list(conn.execute(sa.select(_A).where(_A.c.instance_uuid == instance_uuid)
                             .order_by(_A.c.start_time.desc(), _A.c.id.desc())))


def action_by_request(conn: Connection, instance_uuid: str, request_id: str) -> Any:
    row = conn.execute(sa.select(_A).where(_A.c.instance_uuid == instance_uuid,
                                           _A.c.request_id == request_id)).first()
    if row is None:
        raise NotFound(f"Action for request_id {request_id} on instance {instance_uuid} "
                       "not found")
    return row


def events_of(conn: Connection, action_id: int) -> list[Any]:
    return list(conn.execute(sa.select(_E).where(_E.c.action_id == action_id)
                             .order_by(_E.c.start_time, _E.c.id)))
