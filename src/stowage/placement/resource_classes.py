"""Resource classes: the standard ones from os-resource-classes plus operators' CUSTOM_ ones."""

from __future__ import annotations

import datetime
import weakref

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from stowage.db.statements import Sql
from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import bulk, changes
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["list_classes", "get_class", "create_class", "rename_class", "delete_class",
           "ids_by_name", "is_custom"]

_RC = t.resource_classes



def is_custom(name: str) -> bool:
    return name.startswith("CUSTOM_")


def list_classes(conn: Connection) -> list[Row[tuple[int, str, datetime.datetime, datetime.datetime | None]]]:  # noqa: E501
    return list(conn.execute(sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at,
                                       _RC.c.updated_at).order_by(_RC.c.id)))


def get_class(conn: Connection, name: str) -> Row[tuple[int, str, datetime.datetime, datetime.datetime | None]]:  # noqa: E501
    row = conn.execute(sa.select(_RC.c.id, _RC.c.name, _RC.c.created_at, _RC.c.updated_at)
                       .where(_RC.c.name == name)).first()
    if row is None:
        raise NotFound(f"No such resource class {name}.")
    return row


_IDS = Sql("SELECT name, id FROM resource_classes WHERE name IN :names")
# Ids of the standard classes seen in each engine's database. A standard class
# is never renamed nor deleted, and is (re)synced under its os-resource-classes
# index, so a remembered id cannot go stale. Custom classes are always read.
_STANDARD_IDS: weakref.WeakKeyDictionary[Engine, dict[str, int]] = weakref.WeakKeyDictionary()


def ids_by_name(conn: Connection, names: set[str] | None = None) -> dict[str, int]:
    """Ids of the named classes (all when `names` is None); a client's long list is chunked."""
    if names is None:
        query = sa.select(_RC.c.name, _RC.c.id)
        return {name: rc_id for name, rc_id in conn.execute(query)}
    standard = _STANDARD_IDS.setdefault(conn.engine, {})
    found = {name: standard[name] for name in names if name in standard}
    for part in bulk.chunks(names - set(found)):
        for name, rc_id in _IDS.rows(conn, names=part):
            found[name] = int(rc_id)
            if not is_custom(name):
                standard[name] = int(rc_id)
    return found


def _next_custom_id(conn: Connection) -> int:
    # SELECT MAX(id) FROM resource_classes WHERE id >= 10000
    top = conn.execute(sa.select(sa.func.max(_RC.c.id))
                       .where(_RC.c.id >= t.CUSTOM_RC_MIN_ID)).scalar()
    return max(t.CUSTOM_RC_MIN_ID, (top or 0) + 1)


def create_class(conn: Connection, name: str) -> None:
    if conn.execute(sa.select(_RC.c.id).where(_RC.c.name == name)).first() is not None:
        raise Conflict(f"Conflicting resource class already exists: {name}")
    conn.execute(_RC.insert().values(id=_next_custom_id(conn), name=name, created_at=_now()))


def rename_class(conn: Connection, name: str, new_name: str) -> None:
    row = get_class(conn, name)
    if not is_custom(name):
        raise Invalid(f"Cannot update standard resource class {name}")
    if conn.execute(sa.select(_RC.c.id).where(_RC.c.name == new_name)).first() is not None:
        raise Conflict(f"Resource class already exists: {new_name}")
    conn.execute(_RC.update().where(_RC.c.id == row.id)
                 .values(name=new_name, updated_at=_now()))
    changes.record_all(conn)  # inventories of every provider may carry the old name


def delete_class(conn: Connection, name: str) -> None:
    row = get_class(conn, name)
    if not is_custom(name):
        raise Invalid("Error in delete resource class: "
                      f"Cannot delete standard resource class {name}.")
    in_use = conn.execute(sa.select(t.inventories.c.id)
                          .where(t.inventories.c.resource_class_id == row.id).limit(1)).first()
    if in_use is not None:
        raise Conflict(f"Error in delete resource class: Cannot delete resource class {name}. "
                       "Class is in use in inventory.")
    conn.execute(_RC.delete().where(_RC.c.id == row.id))
