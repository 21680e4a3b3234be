"""Instance actions and their events: the operator's record of who did what, and how it went.

The API starts an action when it accepts a request (`resize`, `migrate`, ...);
the conductor and agents add events (`conductor_migrate_server`,
`compute_prep_resize`, ...) that end in `Success` or `Error`.
"""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.db.statements import Sql
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["start_action", "finish_action", "start_event", "finish_event", "actions_of",
           "action_by_request", "events_of", "action_id", "open_event", "close_event",
           "touch_action", "finish_action_by_id"]

_A = t.instance_actions
_E = t.instance_action_events

# Every operation starts an action; the conductor's statements run per step of every
# operation (ids known, no lookups).
_START_ACTION = Sql("INSERT INTO instance_actions (action, instance_uuid, request_id, user_id, "
                    "project_id, start_time, created_at) VALUES (:action, :uuid, :request_id, "
                    ":user_id, :project_id, :now, :now) RETURNING id")
_ACTION_ID = Sql("SELECT id FROM instance_actions WHERE instance_uuid = :uuid "
                 "AND request_id = :request_id ORDER BY id DESC LIMIT 1")
_OPEN_EVENT = ("INSERT INTO instance_action_events (action_id, event, start_time, host, "
               "created_at) VALUES (:action_id, :event, :now, :host, :now)")
_OPEN_EVENT_RETURNING = Sql(_OPEN_EVENT + " RETURNING id")
_CLOSE_EVENT = Sql("UPDATE instance_action_events SET finish_time = :now, result = :result, "
                   "traceback = :error, details = :error WHERE id = :id")
_TOUCH = Sql("UPDATE instance_actions SET updated_at = :now WHERE id = :id")
_TOUCH_ERROR = Sql("UPDATE instance_actions SET updated_at = :now, message = 'Error' "
                   "WHERE id = :id")
_FINISH = Sql("UPDATE instance_actions SET finish_time = :now, updated_at = :now, "
              "message = :message WHERE id = :id")


def start_action(conn: Connection, instance_uuid: str, action: str, request_id: str,
                 user_id: str | None, project_id: str | None) -> int:
    now = utcnow()
    values = {"action": action, "uuid": instance_uuid, "request_id": request_id,
              "user_id": user_id, "project_id": project_id, "now": now}
    if conn.dialect.insert_returning:
        return int(_START_ACTION.scalar(conn, **values))
    return int(conn.execute(_A.insert().values(  # MySQL: no RETURNING
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


def action_id(conn: Connection, instance_uuid: str, request_id: str) -> int | None:
    """The id of the action `request_id` started on the instance; None if it started none."""
    found = _ACTION_ID.scalar(conn, uuid=instance_uuid, request_id=request_id)
    return None if found is None else int(found)


def open_event(conn: Connection, action: int, event: str, host: str | None,
               now: datetime.datetime) -> int:
    """Insert a started event of the action; returns its id (so it ends without a search)."""
    if conn.dialect.insert_returning:
        return int(_OPEN_EVENT_RETURNING.scalar(conn, action_id=action, event=event,
                                                host=host, now=now))
    key = conn.execute(_E.insert().values(action_id=action, event=event, start_time=now,
                                          host=host, created_at=now)).inserted_primary_key
    assert key is not None
    return int(key[0])


def close_event(conn: Connection, event_id: int, error: str | None,
                now: datetime.datetime) -> None:
    _CLOSE_EVENT.run(conn, id=event_id, now=now, result="Error" if error else "Success",
                     error=error)


def touch_action(conn: Connection, action: int, now: datetime.datetime,
                 error: bool = False) -> None:
    """The action changed now (an event started or ended); an error marks it `Error`."""
    (_TOUCH_ERROR if error else _TOUCH).run(conn, id=action, now=now)


def finish_action_by_id(conn: Connection, action: int, message: str | None = None) -> None:
    _FINISH.run(conn, id=action, now=utcnow(), message=message)
