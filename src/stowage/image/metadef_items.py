"""What a metadata definition namespace holds: objects, properties and tags.

Each is a name unique within its namespace (tags: whatever the case, as
Glance's) with a body: an object's description, `required` and
`properties`; a property's JSON schema (`title`, `type`, `enum`, ...); a tag
has none. Nothing is deleted from a protected namespace, one item or all
of a kind (Glance's 403). The callers
(api_metadef_items.py) hold the namespace's row lock while they write.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import Conflict, Forbidden, Invalid, NotFound
from stowage.image import tables as t
from stowage.image.metadefs import Namespace, protected
from stowage.timeutil import utcnow

__all__ = ["Item", "KINDS", "list_items", "get", "create", "update", "delete",
           "delete_all", "replace_tags"]

KINDS = {"object": t.metadef_objects, "property": t.metadef_properties, "tag": t.metadef_tags}


@dataclass(frozen=True)
class Item:
    name: str
    body: Mapping[str, Any]
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def _item(row: Any) -> Item:
    return Item(row.name, dict(getattr(row, "body", None) or {}), row.created_at,
                row.updated_at)


def not_found(kind: str, ns: Namespace, name: str) -> NotFound:
    return NotFound(f"The metadata definition {kind} with name={name} was not found in "
                    f"namespace={ns.namespace}.")


def duplicate(kind: str, ns: Namespace, name: str) -> Conflict:
    if kind == "tag":
        return Conflict(f"A metadata tag with name={name} already exists in namespace="
                        f"{ns.namespace}. (Please note that metadata tag names are case "
                        "insensitive).")
    return Conflict(f"A metadata definition {kind} with name={name} already exists in "
                    f"namespace={ns.namespace}.")


def _same_name(table: sa.Table, kind: str, name: str) -> sa.ColumnElement[bool]:
    if kind == "tag":
        return sa.func.lower(table.c.name) == name.lower()
    return table.c.name == name


def list_items(conn: Connection, kind: str, ns: Namespace) -> list[Item]:
    table = KINDS[kind]
    rows = conn.execute(sa.select(table).where(table.c.namespace_id == ns.id)
                        .order_by(table.c.name))
    return [_item(r) for r in rows]


def get(conn: Connection, kind: str, ns: Namespace, name: str) -> Item:
    table = KINDS[kind]
    row = conn.execute(sa.select(table).where(table.c.namespace_id == ns.id,
                                              table.c.name == name)).first()
    if row is None:
        raise not_found(kind, ns, name)
    return _item(row)


def _taken(conn: Connection, kind: str, ns: Namespace, name: str,
           other_than: str | None = None) -> bool:
    table = KINDS[kind]
    query = sa.select(table.c.id).where(table.c.namespace_id == ns.id,
                                        _same_name(table, kind, name))
    if other_than is not None:
        query = query.where(table.c.name != other_than)
    return conn.execute(query).first() is not None


def _row(kind: str, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name} if kind == "tag" else {"name": name, "body": dict(body)}


# The longest name the tables hold (Glance's columns: 80).
NAME_MAX = 80


def _check_name(kind: str, name: str) -> None:
    if not name or len(name) > NAME_MAX:
        raise Invalid(f"The {kind} name must be 1 to {NAME_MAX} characters long.")


def create(conn: Connection, kind: str, ns: Namespace, name: str,
           body: Mapping[str, Any]) -> Item:
    _check_name(kind, name)
    if _taken(conn, kind, ns, name):
        raise duplicate(kind, ns, name)
    now = utcnow()
    conn.execute(KINDS[kind].insert().values(namespace_id=ns.id, created_at=now,
                                             updated_at=now, **_row(kind, name, body)))
    return Item(name, body if kind != "tag" else {}, now, now)


def update(conn: Connection, kind: str, ns: Namespace, name: str, new_name: str,
           body: Mapping[str, Any]) -> Item:
    """Replace `name`'s body (and name): Glance's PUT."""
    old = get(conn, kind, ns, name)
    _check_name(kind, new_name)
    if new_name != name and _taken(conn, kind, ns, new_name, other_than=name):
        raise duplicate(kind, ns, new_name)
    table, now = KINDS[kind], utcnow()
    conn.execute(table.update().where(table.c.namespace_id == ns.id, table.c.name == name)
                 .values(updated_at=now, **_row(kind, new_name, body)))
    return Item(new_name, body if kind != "tag" else {}, old.created_at, now)


def delete(conn: Connection, kind: str, ns: Namespace, name: str) -> None:
    """Delete one; in a protected namespace, nothing is deleted (Glance: 403)."""
    get(conn, kind, ns, name)
    if ns.protected:
        raise Forbidden(f"Metadata definition {kind} {name} is protected and cannot be "
                        "deleted.")
    table = KINDS[kind]
    conn.execute(table.delete().where(table.c.namespace_id == ns.id, table.c.name == name))


def delete_all(conn: Connection, kind: str, ns: Namespace) -> None:
    if ns.protected:
        raise protected(ns)
    table = KINDS[kind]
    conn.execute(table.delete().where(table.c.namespace_id == ns.id))


def replace_tags(conn: Connection, ns: Namespace, names: Sequence[str],
                 append: bool) -> list[Item]:
    """POST .../tags: these tags instead of the namespace's (or besides them, with
    `append`); a name given twice, or already held when appending, is a conflict. An
    empty list replaces nothing, as Glance's database layer does."""
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise duplicate("tag", ns, name)
        seen.add(name.lower())
    table = KINDS["tag"]
    if names and not append:
        conn.execute(table.delete().where(table.c.namespace_id == ns.id))
    return [create(conn, "tag", ns, name, {}) for name in names]
