"""Resource providers and their trees, and the generation compare-and-swap every writer uses.

A provider's ``root_provider_id`` is denormalised (a root points at itself) so
that "everything in this tree" is one indexed equality; re-parenting rewrites
it for the whole moved subtree. The generation is the provider's optimistic
lock: inventory, trait, aggregate (1.19+) and allocation writes name the
generation they read and bump it with `increment_generation`, which fails with
a 409-kind error when someone else got there first.

Messages are upstream Placement's, because clients match on them.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.db.statements import Sql
from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import bulk, changes, codes
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["Provider", "get_provider", "get_providers_by_uuid", "list_providers",
           "create_provider", "update_provider", "delete_provider",
           "increment_generation", "increment_locked_generations", "CONCURRENT_UPDATE_MESSAGE",
           "UNSET"]

_RP = t.resource_providers

CONCURRENT_UPDATE_MESSAGE = ("Another thread concurrently updated the resource provider "
                             "data. Please retry your update")


class _Unset:
    """Marker for "field not given", distinct from an explicit null parent."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


@dataclass(frozen=True)
class Provider:
    id: int
    uuid: str
    name: str
    generation: int
    parent_provider_id: int | None
    root_provider_id: int
    parent_provider_uuid: str | None
    root_provider_uuid: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None



def _provider_select() -> sa.Select[tuple[object, ...]]:
    # SELECT rp.*, root.uuid AS root_provider_uuid, parent.uuid AS parent_provider_uuid
    # FROM resource_providers rp
    # JOIN resource_providers root ON rp.root_provider_id = root.id
    # LEFT JOIN resource_providers parent ON rp.parent_provider_id = parent.id
    rp = _RP.alias("rp")
    root = _RP.alias("root")
    parent = _RP.alias("parent")
    joined = rp.join(root, rp.c.root_provider_id == root.c.id).outerjoin(
        parent, rp.c.parent_provider_id == parent.c.id)
    return sa.select(
        rp.c.id, rp.c.uuid, rp.c.name, rp.c.generation, rp.c.parent_provider_id,
        rp.c.root_provider_id, parent.c.uuid.label("parent_provider_uuid"),
        root.c.uuid.label("root_provider_uuid"), rp.c.created_at, rp.c.updated_at,
    ).select_from(joined).order_by(rp.c.id)


def _rp_column(query: sa.Select[tuple[object, ...]], name: str) -> sa.ColumnElement[object]:
    """A column of the aliased `rp` table inside `_provider_select()`."""
    return query.selected_columns[name]


def _to_provider(row: sa.Row[tuple[object, ...]]) -> Provider:
    return Provider(**row._asdict())


def get_provider(conn: Connection, uuid: str) -> Provider:
    query = _provider_select()
    row = conn.execute(query.where(_rp_column(query, "uuid") == uuid)).first()
    if row is None:
        raise NotFound(f"No resource provider with uuid {uuid} found")
    return _to_provider(row)


def get_providers_by_uuid(conn: Connection, uuids: Iterable[str]) -> dict[str, Provider]:
    """The providers that exist among `uuids`, keyed by uuid; missing ones are absent."""
    query = _provider_select()
    rows = bulk.rows_in(conn, lambda part: query.where(_rp_column(query, "uuid").in_(part)),
                        set(uuids))
    return {row.uuid: _to_provider(row) for row in rows}


def list_providers(conn: Connection, *, name: str | None = None, uuid: str | None = None,
                   in_tree: str | None = None, ids: set[int] | None = None) -> list[Provider]:
    """Providers matching every given filter, in creation order.

    `in_tree` names any provider of the tree; an unknown one matches nothing.
    `ids` restricts to providers already chosen by another filter.
    """
    query = _provider_select()
    if name:
        query = query.where(_rp_column(query, "name") == name)
    if uuid:
        query = query.where(_rp_column(query, "uuid") == uuid)
    if in_tree:
        root_id = conn.execute(sa.select(_RP.c.root_provider_id)
                               .where(_RP.c.uuid == in_tree)).scalar()
        if root_id is None:
            return []
        query = query.where(_rp_column(query, "root_provider_id") == root_id)
    if ids is None:
        return [_to_provider(row) for row in conn.execute(query)]
    # Chunks of ascending ids, each ordered by id: the whole stays in creation order.
    rows = bulk.rows_in(conn, lambda part: query.where(_rp_column(query, "id").in_(part)),
                        set(ids))
    return [_to_provider(row) for row in rows]


def increment_generation(conn: Connection, provider_id: int, expected: int) -> int:
    """Compare-and-swap the provider generation; returns the new one.

    Raises Conflict(placement.concurrent_update) when the generation is no
    longer `expected`, i.e. another writer changed the provider since it was read.
    """
    # UPDATE resource_providers SET generation = generation + 1, updated_at = :now
    # WHERE id = :id AND generation = :expected
    result = conn.execute(
        _RP.update().where(_RP.c.id == provider_id, _RP.c.generation == expected)
        .values(generation=_RP.c.generation + 1, updated_at=_now()))
    if result.rowcount != 1:
        raise Conflict(CONCURRENT_UPDATE_MESSAGE, codes.CONCURRENT_UPDATE)
    changes.record(conn, [provider_id])
    return expected + 1


_BUMP_LOCKED = Sql("UPDATE resource_providers SET generation = generation + 1, "
                   "updated_at = :now WHERE id IN :ids")


def increment_locked_generations(conn: Connection, provider_ids: Iterable[int]) -> None:
    """Bump the generations of providers whose rows this transaction holds locked.

    No compare-and-swap: the row locks (SQLite: the writer lock) keep every
    other writer out from the lock to this update, and a change this
    transaction made meanwhile (the reshaper's inventories) is simply counted
    on. A row not matched (the provider vanished) still raises
    Conflict(placement.concurrent_update). The caller logs the change: an
    allocation write logs it as usage only.
    """
    now = _now()
    for part in bulk.chunks(set(provider_ids)):
        if _BUMP_LOCKED.run(conn, now=now, ids=part) != len(part):
            raise Conflict(CONCURRENT_UPDATE_MESSAGE, codes.CONCURRENT_UPDATE)


def _duplicates(conn: Connection, uuid: str | None, name: str,
                exclude_id: int | None = None) -> list[str]:
    """Which of uuid/name already belong to another provider, in upstream's wording."""
    found = []
    checks = ((("uuid", uuid),) if uuid is not None else ()) + (("name", name),)
    for column, value in checks:
        query = sa.select(_RP.c.id).where(_RP.c[column] == value)
        if exclude_id is not None:
            query = query.where(_RP.c.id != exclude_id)
        if conn.execute(query.limit(1)).first() is not None:
            found.append(f"{column}: {value}")
    return found


def create_provider(conn: Connection, name: str, uuid: str,
                    parent_uuid: str | None = None) -> Provider:
    """Insert a provider; without a parent it is the root of its own tree."""
    def failed(reason: str) -> Invalid:
        return Invalid(f'Unable to create resource provider "{name}", {uuid}: '
                       f"Object action create failed because: {reason}")

    parent: Provider | None = None
    if parent_uuid is not None:
        if parent_uuid == uuid:
            raise failed("parent provider UUID cannot be same as UUID. Please set parent "
                         "provider UUID to None if there is no parent.")
        parent = get_providers_by_uuid(conn, [parent_uuid]).get(parent_uuid)
        if parent is None:
            raise failed("parent provider UUID does not exist.")
    duplicates = _duplicates(conn, uuid, name)
    if duplicates:
        raise Conflict(f"Conflicting resource provider {', '.join(duplicates)} already exists.",
                       codes.DUPLICATE_NAME)
    try:
        inserted = conn.execute(_RP.insert().values(
            uuid=uuid, name=name, generation=0, created_at=_now(),
            parent_provider_id=parent.id if parent else None,
            root_provider_id=parent.root_provider_id if parent else None,
        ))
        new_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
    except sa.exc.IntegrityError:  # a concurrent create won the race for uuid or name
        raise Conflict(f"Conflicting resource provider name: {name} already exists.",
                       codes.DUPLICATE_NAME) from None
    if parent is None:
        conn.execute(_RP.update().where(_RP.c.id == new_id).values(root_provider_id=new_id))
    changes.record(conn, [new_id])
    return get_provider(conn, uuid)


def _subtree_ids(conn: Connection, provider: Provider) -> list[int]:
    """The provider and all its descendants (one query for the tree, walked in Python)."""
    children: dict[int, list[int]] = {}
    rows = conn.execute(sa.select(_RP.c.id, _RP.c.parent_provider_id)
                        .where(_RP.c.root_provider_id == provider.root_provider_id))
    for child_id, parent_id in rows:
        if parent_id is not None:
            children.setdefault(parent_id, []).append(child_id)
    found, pending = [], [provider.id]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def _new_parent(conn: Connection, provider: Provider, parent_uuid: str | None,
                allow_reparenting: bool) -> tuple[Provider | None, list[int]]:
    """Validate a parent change; returns the new parent and the subtree to re-root."""
    def failed(action: str, reason: str) -> Invalid:
        return Invalid(f"Unable to save resource provider {provider.uuid}: "
                       f"Object action {action} failed because: {reason}")

    if parent_uuid is None:
        if provider.parent_provider_id is None:
            return None, []
        if not allow_reparenting:
            raise failed("update", "un-parenting a provider is not currently allowed.")
        return None, _subtree_ids(conn, provider)
    parent = get_providers_by_uuid(conn, [parent_uuid]).get(parent_uuid)
    if parent is None:
        raise failed("create", "parent provider UUID does not exist.")
    if (provider.parent_provider_id is not None and provider.parent_provider_id != parent.id
            and not allow_reparenting):
        raise failed("update", "re-parenting a provider is not currently allowed.")
    subtree = _subtree_ids(conn, provider)
    if parent.id in subtree:
        raise failed("update", "creating loop in the provider tree is not allowed.")
    return parent, subtree


def update_provider(conn: Connection, uuid: str, name: str,
                    parent_uuid: str | None | _Unset = UNSET,
                    allow_reparenting: bool = False) -> Provider:
    """Rename and/or (re/un)parent a provider; the generation is not bumped (as upstream)."""
    provider = get_provider(conn, uuid)
    values: dict[str, object] = {"name": name, "updated_at": _now()}
    subtree: list[int] = []
    new_root = provider.root_provider_id
    if not isinstance(parent_uuid, _Unset):
        parent, subtree = _new_parent(conn, provider, parent_uuid, allow_reparenting)
        if subtree:
            new_root = parent.root_provider_id if parent else provider.id
            values["parent_provider_id"] = parent.id if parent else None
    if _duplicates(conn, None, name, exclude_id=provider.id):
        raise Conflict(f"Conflicting resource provider {name} already exists.",
                       codes.DUPLICATE_NAME)
    conn.execute(_RP.update().where(_RP.c.id == provider.id).values(**values))
    if subtree:
        # UPDATE resource_providers SET root_provider_id = :new_root WHERE id IN (:subtree)
        conn.execute(_RP.update().where(_RP.c.id.in_(subtree))
                     .values(root_provider_id=new_root))
    changes.record(conn, [provider.id, *subtree])
    return get_provider(conn, uuid)


def delete_provider(conn: Connection, uuid: str) -> None:
    """Delete a leaf provider without allocations, and its inventory, traits, aggregate links."""
    rows = get_providers_by_uuid(conn, [uuid])
    if uuid not in rows:
        raise NotFound(f"No resource provider with uuid {uuid} found for delete")
    provider = rows[uuid]
    child = conn.execute(sa.select(_RP.c.id).where(_RP.c.parent_provider_id == provider.id)
                         .limit(1)).first()
    if child is not None:
        raise Conflict(f"Unable to delete parent resource provider {uuid}: "
                       "It has child resource providers.", codes.PROVIDER_CANNOT_DELETE_PARENT)
    allocated = conn.execute(sa.select(t.allocations.c.id)
                             .where(t.allocations.c.resource_provider_id == provider.id)
                             .limit(1)).first()
    if allocated is not None:
        raise Conflict(f"Unable to delete resource provider {uuid}: "
                       "Resource provider has allocations.", codes.PROVIDER_IN_USE)
    for table in (t.inventories, t.provider_traits, t.provider_aggregates):
        conn.execute(table.delete().where(table.c.resource_provider_id == provider.id))
    conn.execute(_RP.update().where(_RP.c.id == provider.id).values(root_provider_id=None))
    conn.execute(_RP.delete().where(_RP.c.id == provider.id))
    changes.record(conn, [provider.id])
