"""A server's records carried from one cell's database to another's, and removed.

What a move between cells does with the records, as Nova's cross-cell resize
does: copy them into the target cell with the instance **hidden**
(TargetDBSetupTask), swap the hidden flags once the server runs there,
point its instance mapping at the target, and at the end hard-delete the
copy that is no longer wanted (the source's after a confirm, the target's
after a revert or a rollback).

Copied: the instance row, its faults, its instance actions with their
events (the events get the target's action ids), its tags, its ports rows
and its migrations. Not copied: the journal (an operation stays in the
cell it started in) and simulated guests (a hypervisor's, kept in its own
host's cell). Integer ids are the target's own: nothing refers to an
instance by id across tables.

`copy_server` first removes any copy an earlier, interrupted attempt left in
the target, so running it again is safe; `purge_server` is idempotent.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import states
from stowage.compute import tables as t
from stowage.db import Database
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["copy_server", "purge_server", "delete_records", "being_deleted", "set_hidden",
           "hide", "show", "exists",
           "hidden_uuids", "hidden_before", "CopiedRecords"]

_I, _F, _A, _E = t.instances, t.instance_faults, t.instance_actions, t.instance_action_events
_TAGS, _PORTS, _MIG = t.tags, t.instance_ports, t.migrations

# Rows keyed by the instance's uuid, copied as they are (their own ids renewed).
_BY_INSTANCE: tuple[tuple[sa.Table, sa.Column[Any]], ...] = (
    (_F, _F.c.instance_uuid), (_PORTS, _PORTS.c.instance_uuid),
    (_MIG, _MIG.c.instance_uuid))

CopiedRecords = dict[str, list[dict[str, Any]]]


def _without_id(row: sa.Row[Any]) -> dict[str, Any]:
    return {k: v for k, v in row._mapping.items() if k != "id"}


def read_server(conn: Connection, instance_uuid: str) -> CopiedRecords:
    """Everything `copy_server` carries, as rows (the actions with their old ids)."""
    instance = conn.execute(sa.select(_I).where(_I.c.uuid == instance_uuid)).first()
    if instance is None:
        raise NotFound(f"Instance {instance_uuid} could not be found.")
    found: CopiedRecords = {_I.name: [_without_id(instance)]}
    for table, column in _BY_INSTANCE:
        found[table.name] = [_without_id(row) for row in conn.execute(
            sa.select(table).where(column == instance_uuid).order_by(table.c.id))]
    found[_TAGS.name] = [dict(row._mapping) for row in conn.execute(
        sa.select(_TAGS).where(_TAGS.c.resource_id == instance_uuid))]
    actions = conn.execute(sa.select(_A).where(_A.c.instance_uuid == instance_uuid)
                           .order_by(_A.c.id)).all()
    found[_A.name] = [dict(row._mapping) for row in actions]
    found[_E.name] = [dict(row._mapping) for row in conn.execute(
        sa.select(_E).where(_E.c.action_id.in_([a.id for a in actions])).order_by(_E.c.id))
    ] if actions else []
    return found


def copy_server(source: Database, target: Database, instance_uuid: str,
                hidden: bool = True, then: Callable[[Connection], None] | None = None
                ) -> CopiedRecords:
    """Copy the server's records from `source` into `target` (the instance and its
    migrations `hidden` there), replacing any earlier copy; `then` writes more in the
    target's transaction. Returns what was copied. Two cells that share one database
    have nothing to copy: that is a ValueError."""
    if source.engine.url == target.engine.url:
        raise ValueError("the two cells keep their records in one database")
    with source.read() as conn:
        found = read_server(conn, instance_uuid)
    with target.write() as conn:
        delete_records(conn, instance_uuid)
        write_server(conn, found, hidden)
        if then is not None:
            then(conn)
    return found


def write_server(conn: Connection, found: CopiedRecords, hidden: bool) -> None:
    """Insert `read_server`'s rows; actions get new ids and their events follow them."""
    # A hidden copy's updated_at says when it was made (`hidden_before`).
    stamp = {"updated_at": utcnow()} if hidden else {}
    conn.execute(_I.insert(), [{**found[_I.name][0], "hidden": hidden, **stamp}])
    for table, _column in _BY_INSTANCE:
        rows = found[table.name]
        if table is _MIG:  # a move's record goes (and shows) with its server's
            rows = [{**row, "hidden": hidden} for row in rows]
        if rows:
            conn.execute(table.insert(), rows)
    if found[_TAGS.name]:
        conn.execute(_TAGS.insert(), found[_TAGS.name])
    new_ids: dict[int, int] = {}
    for action in found[_A.name]:
        inserted = conn.execute(_A.insert().values(
            {k: v for k, v in action.items() if k != "id"})).inserted_primary_key
        assert inserted is not None
        new_ids[int(action["id"])] = int(inserted[0])
    events = [{**{k: v for k, v in e.items() if k != "id"},
               "action_id": new_ids[int(e["action_id"])]} for e in found[_E.name]]
    if events:
        conn.execute(_E.insert(), events)


def hidden_uuids(conn: Connection) -> set[str]:
    return {str(u) for u in conn.execute(sa.select(_I.c.uuid).where(_I.c.hidden == sa.true()))
            .scalars()}


def hidden_before(db: Database, seconds: float) -> list[str]:
    """Hidden servers still being built whose copy is older than `seconds`: what a carry
    (conductor/carry.py) cut off before its flip leaves."""
    before = utcnow() - datetime.timedelta(seconds=seconds)
    with db.read() as conn:
        return [str(u) for u in conn.execute(sa.select(_I.c.uuid).where(
            _I.c.hidden == sa.true(), _I.c.vm_state == states.BUILDING,
            _I.c.updated_at < before)).scalars()]


def set_hidden(db: Database, instance_uuid: str, hidden: bool) -> None:
    """Hide or show the server in `db`, with its migrations."""
    with db.write() as conn:
        done = _set_hidden(conn, instance_uuid, hidden)
        if not done:
            raise NotFound(f"Instance {instance_uuid} could not be found.")


def hide(conn: Connection, instance_uuid: str) -> bool:
    return _set_hidden(conn, instance_uuid, True)


def show(conn: Connection, instance_uuid: str) -> bool:
    return _set_hidden(conn, instance_uuid, False)


def _set_hidden(conn: Connection, instance_uuid: str, hidden: bool) -> bool:
    done = conn.execute(_I.update().where(_I.c.uuid == instance_uuid).values(hidden=hidden))
    conn.execute(_MIG.update().where(_MIG.c.instance_uuid == instance_uuid)
                 .values(hidden=hidden))
    return bool(done.rowcount)


def exists(conn: Connection, instance_uuid: str, hidden: bool | None = None) -> bool:
    """The server has a row here (shown or hidden, when asked)."""
    query = sa.select(_I.c.id).where(_I.c.uuid == instance_uuid)
    if hidden is not None:
        query = query.where(_I.c.hidden == hidden)
    return conn.execute(query).first() is not None


def purge_server(db: Database, instance_uuid: str) -> None:
    """Hard-delete every record of the server in `db` (nothing left is fine)."""
    with db.write() as conn:
        delete_records(conn, instance_uuid)


def being_deleted(conn: Connection, instance_uuid: str) -> bool:
    """The server's row, locked until the transaction ends: deleted, or a delete began."""
    row = conn.execute(sa.select(_I.c.task_state, _I.c.deleted).where(
        _I.c.uuid == instance_uuid).with_for_update()).first()
    return row is not None and (bool(row.deleted) or row.task_state == states.TASK.DELETING)


def delete_records(conn: Connection, instance_uuid: str) -> None:
    actions: Sequence[int] = list(conn.execute(
        sa.select(_A.c.id).where(_A.c.instance_uuid == instance_uuid)).scalars())
    if actions:
        conn.execute(_E.delete().where(_E.c.action_id.in_(actions)))
        conn.execute(_A.delete().where(_A.c.id.in_(actions)))
    for table, column in _BY_INSTANCE:
        conn.execute(table.delete().where(column == instance_uuid))
    conn.execute(_TAGS.delete().where(_TAGS.c.resource_id == instance_uuid))
    conn.execute(_I.delete().where(_I.c.uuid == instance_uuid))
