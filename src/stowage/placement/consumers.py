"""Consumers and the projects, users and consumer types they belong to.

A consumer is whatever owns allocations (an instance, a migration). Writers
name the consumer generation they read: ``None`` means "I expect a new
consumer" (from 1.28); a mismatch is a 409 so that two writers never silently
overwrite each other's view. Projects, users and consumer types are created on
first mention, as upstream's ``ensure_consumer`` does.

The statements of a claim (lock, owner lookup, create) are hand-written `Sql`:
PUT /allocations runs them on every scheduling decision.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from stowage.db.statements import Sql
from stowage.errors import Conflict
from stowage.placement import bulk, codes
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["ConsumerRequest", "ConsumerRules", "Consumer", "ConsumerConflict", "ConcurrentUpdate",
           "ensure_consumers", "lock_consumers", "increment_generations",
           "delete_if_no_allocations", "type_names", "UNKNOWN_TYPE"]

# What GET shows for a consumer written before 1.38, which has no type.
UNKNOWN_TYPE = "unknown"

_C = t.consumers


class ConsumerConflict(Conflict):
    """A stale or unexpected consumer generation (always placement.concurrent_update)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, codes.CONCURRENT_UPDATE)


class ConcurrentUpdate(Conflict):
    """A generation compare-and-swap lost to another writer inside our transaction."""

    def __init__(self, detail: str = "Another thread concurrently updated the data. "
                                     "Please retry your update") -> None:
        super().__init__(detail, codes.CONCURRENT_UPDATE)


@dataclass(frozen=True)
class ConsumerRequest:
    """What one request says about one consumer."""

    uuid: str
    project_id: str | None = None
    user_id: str | None = None
    generation: int | None = None
    consumer_type: str | None = None


@dataclass(frozen=True)
class ConsumerRules:
    """Microversion-dependent behaviour, decided by the handler."""

    check_generation: bool
    # Owner of consumers written before 1.8, when requests named no project/user.
    incomplete_project_id: str
    incomplete_user_id: str


@dataclass(frozen=True)
class Consumer:
    # None: created by this write, already at the generation the write leaves it.
    id: int | None
    uuid: str
    generation: int
    project_id: int
    user_id: int
    consumer_type_id: int | None


def _insert_missing(conn: Connection, table: sa.Table, column: str, values: list[str]) -> None:
    """Insert rows for `values` in one executemany; on losing a race, one by one.

    Each insert runs in a savepoint so that a unique violation (a concurrent
    creator won) leaves our transaction usable; the winner's row serves.
    """
    now = _now()
    stamp = {"created_at": now} if "created_at" in table.c else {}
    try:
        with conn.begin_nested():
            conn.execute(table.insert(), [{column: value, **stamp} for value in values])
        return
    except IntegrityError:
        pass
    for value in values:
        try:
            with conn.begin_nested():
                conn.execute(table.insert().values({column: value, **stamp}))
        except IntegrityError:
            pass


def _ids_for(conn: Connection, table: sa.Table, column: str,
             values: Iterable[str]) -> dict[str, int]:
    """Ids of the rows whose `column` is each of `values`, inserting the missing ones."""
    col = table.c[column]

    def lookup(wanted: Iterable[str]) -> dict[str, int]:
        # SELECT <column>, id FROM <table> WHERE <column> IN (:chunk), chunk by chunk
        rows = bulk.rows_in(conn, lambda part: sa.select(col, table.c.id).where(col.in_(part)),
                            wanted)
        return {row[0]: int(row[1]) for row in rows}

    wanted = set(values)
    ids = lookup(wanted)
    missing = sorted(wanted - set(ids))
    if missing:
        _insert_missing(conn, table, column, missing)
        ids.update(lookup(missing))
    return ids


def ensure_type(conn: Connection, name: str) -> int:
    return _ids_for(conn, t.consumer_types, "name", [name])[name]


def type_names(conn: Connection, ids: Iterable[int]) -> dict[int, str]:
    rows = bulk.rows_in(conn, lambda part: sa.select(t.consumer_types.c.id,
                                                     t.consumer_types.c.name)
                        .where(t.consumer_types.c.id.in_(part)), set(ids))
    return {row.id: row.name for row in rows}


# The row locks make concurrent writers to one consumer queue up, so the
# generations compared by the caller are the ones later bumped. SQLite has no
# row locks: its writer lock already serializes writers.
_EXISTING = ("SELECT id, uuid, generation, project_id, user_id, consumer_type_id "
             "FROM consumers WHERE uuid IN :uuids ORDER BY uuid")
_SELECT_EXISTING = Sql(_EXISTING)
_LOCK_EXISTING = Sql(_EXISTING + " FOR UPDATE")


def _existing_for_update(conn: Connection, uuids: Iterable[str]) -> dict[str, Consumer]:
    """The existing consumers among `uuids`, locked chunk by chunk in uuid order."""
    query = _SELECT_EXISTING if conn.dialect.name == "sqlite" else _LOCK_EXISTING
    found: dict[str, Consumer] = {}
    for part in bulk.chunks(set(uuids)):
        for row_id, uuid, generation, project_id, user_id, type_id in query.rows(conn,
                                                                                 uuids=part):
            found[uuid] = Consumer(row_id, uuid, generation, project_id, user_id, type_id)
    return found


def lock_consumers(conn: Connection, uuids: Iterable[str]) -> dict[str, Consumer]:
    """Lock the existing consumers among `uuids`, chunk by chunk in uuid order; returns them.

    Writers that touch several consumers (POST /allocations, the reshaper)
    take these locks before any provider lock, always in uuid order, so two
    of them never wait on each other in a cycle.
    """
    return _existing_for_update(conn, uuids)


def _check_generation(request: ConsumerRequest, existing: Consumer | None,
                      rules: ConsumerRules) -> None:
    if not rules.check_generation:
        return
    if existing is None:
        if request.generation is not None:
            raise ConsumerConflict("consumer generation conflict - expected null but got "
                                   f"{request.generation}")
    elif existing.generation != request.generation:
        raise ConsumerConflict("consumer generation conflict - expected "
                               f"{existing.generation} but got {request.generation}")


# The ids of projects, users and consumer types named by a write, in one round
# trip (the column `kind` says which list a row answers).
_OWNER_IDS = Sql(
    "SELECT 0, external_id, id FROM projects WHERE external_id IN :projects "
    "UNION ALL SELECT 1, external_id, id FROM users WHERE external_id IN :users "
    "UNION ALL SELECT 2, name, id FROM consumer_types WHERE name IN :types")
_OWNER_TABLES = ((t.projects, "external_id"), (t.users, "external_id"),
                 (t.consumer_types, "name"))


def _owner_ids(conn: Connection, wanted: Sequence[set[str]]) -> list[dict[str, int]]:
    """Per owner table, the ids of the `wanted` names that exist (chunked lists)."""
    found: list[dict[str, int]] = [{} for _ in wanted]
    parts = [list(bulk.chunks(values)) for values in wanted]
    for i in range(max(len(p) for p in parts)):
        projects, users, types = (p[i] if i < len(p) else [] for p in parts)
        for kind, name, row_id in _OWNER_IDS.rows(conn, projects=projects, users=users,
                                                  types=types):
            found[int(kind)][name] = int(row_id)
    return found


def _owners(conn: Connection, requests: Sequence[ConsumerRequest],
            rules: ConsumerRules) -> list[tuple[int, int, int | None]]:
    """(project id, user id, type id) of each request, creating projects, users and types."""
    named = [(r.project_id, r.user_id) if r.project_id is not None and r.user_id is not None
             else (rules.incomplete_project_id, rules.incomplete_user_id) for r in requests]
    wanted = [{p for p, _ in named}, {u for _, u in named},
              {r.consumer_type for r in requests if r.consumer_type}]
    ids = _owner_ids(conn, wanted)
    missing = [values - set(found) for values, found in zip(wanted, ids, strict=True)]
    if any(missing):
        for (table, column), names in zip(_OWNER_TABLES, missing, strict=True):
            if names:
                _insert_missing(conn, table, column, sorted(names))
        for found, created in zip(ids, _owner_ids(conn, missing), strict=True):
            found.update(created)
    projects, users, types = ids
    return [(projects[p], users[u], types[r.consumer_type] if r.consumer_type else None)
            for (p, u), r in zip(named, requests, strict=True)]


def ensure_consumers(conn: Connection, requests: Sequence[ConsumerRequest],
                     rules: ConsumerRules,
                     claiming: Collection[str] = frozenset()) -> dict[str, Consumer]:
    """The consumer records for `requests` (distinct uuids), locked, created or updated.

    Locks the existing ones first (see `lock_consumers`), then checks
    generations when `rules` ask for it, in request order. A new consumer
    whose uuid is in `claiming` (it receives allocations) is created at
    generation 1, the value the write's bump would give it; its `id` is None.
    A changed project, user or type is written without bumping the generation:
    the allocation write that follows bumps it once. Statements per request
    stay constant however many consumers there are (chunked selects, one
    executemany for the new ones); only changed owners are updated one by one.
    """
    existing = lock_consumers(conn, [r.uuid for r in requests])
    owners = _owners(conn, requests, rules)
    ensured: dict[str, Consumer] = {}
    new: list[Consumer] = []
    for request, (project_id, user_id, type_id) in zip(requests, owners, strict=True):
        found = existing.get(request.uuid)
        _check_generation(request, found, rules)
        if found is None:
            new.append(Consumer(None, request.uuid, 1 if request.uuid in claiming else 0,
                                project_id, user_id, type_id))
        else:
            ensured[request.uuid] = _update_owner(conn, found, project_id, user_id, type_id)
    _create(conn, new)
    ensured.update((c.uuid, c) for c in new)
    return ensured


def _update_owner(conn: Connection, existing: Consumer, project_id: int, user_id: int,
                  type_id: int | None) -> Consumer:
    changes: dict[str, int] = {}
    if (existing.project_id, existing.user_id) != (project_id, user_id):
        changes.update(project_id=project_id, user_id=user_id)
    if type_id is not None and type_id != existing.consumer_type_id:
        changes["consumer_type_id"] = type_id
    if not changes:
        return existing
    conn.execute(_C.update().where(_C.c.id == existing.id)
                 .values(**changes, updated_at=_now()))
    return Consumer(existing.id, existing.uuid, existing.generation,
                    changes.get("project_id", existing.project_id),
                    changes.get("user_id", existing.user_id),
                    changes.get("consumer_type_id", existing.consumer_type_id))


_NEW_COLUMNS = ("INTO consumers (uuid, project_id, user_id, generation, consumer_type_id, "
                "created_at, updated_at) VALUES (:uuid, :project_id, :user_id, :generation, "
                ":consumer_type_id, :created_at, :updated_at)")
_INSERT = Sql("INSERT " + _NEW_COLUMNS)
# One new consumer, without a savepoint: a row another writer created (or is
# creating: the insert waits for it) is skipped, and the count says so.
_INSERT_UNLESS_EXISTS = Sql("INSERT " + _NEW_COLUMNS + " ON CONFLICT (uuid) DO NOTHING")
_INSERT_IGNORE = Sql("INSERT IGNORE " + _NEW_COLUMNS)  # MySQL's spelling of the same


def _create(conn: Connection, new: Sequence[Consumer]) -> None:
    """Insert the new consumers (one statement, or one executemany for several).

    Finding one of them already there means another request created it
    between our read and our insert: whatever that request wrote, it is not
    the "new consumer" this one expected, so report it as a concurrent update.
    """
    if not new:
        return
    now = _now()
    rows = [{"uuid": c.uuid, "project_id": c.project_id, "user_id": c.user_id,
             "generation": c.generation, "consumer_type_id": c.consumer_type_id,
             "created_at": now, "updated_at": now if c.generation else None} for c in new]
    if len(rows) == 1:
        mysql = conn.dialect.name in ("mysql", "mariadb")
        if (_INSERT_IGNORE if mysql else _INSERT_UNLESS_EXISTS).run(conn, **rows[0]) == 1:
            return
        raced = new[0].uuid
    else:
        try:
            with conn.begin_nested():
                _INSERT.run_many(conn, rows)
            return
        except IntegrityError:
            found = _existing_for_update(conn, [c.uuid for c in new])
            raced = next((c.uuid for c in new if c.uuid in found), new[0].uuid)
    raise ConsumerConflict("consumer generation conflict - another request created "
                           f"consumer {raced} concurrently")


_BUMP = Sql("UPDATE consumers SET generation = :new, updated_at = :now "
            "WHERE id IN :ids AND generation = :old")


def increment_generations(conn: Connection, consumers: Iterable[Consumer]) -> None:
    """Compare-and-swap each consumer's generation to the next, grouped by old value.

    UPDATE consumers SET generation = :old + 1 WHERE generation = :old AND id IN (:chunk)
    Every row of the chunk must match; one that does not lost a race. Consumers
    created by this write (id None) are already at their final generation.
    """
    by_generation: dict[int, set[int]] = defaultdict(set)
    for consumer in consumers:
        if consumer.id is not None:
            by_generation[consumer.generation].add(consumer.id)
    now = _now()
    for old, ids in sorted(by_generation.items()):
        for part in bulk.chunks(ids):
            if _BUMP.run(conn, new=old + 1, now=now, ids=part, old=old) != len(part):
                raise ConcurrentUpdate()


# Consumers in :uuids that own nothing (any more).
_DELETE_IF_EMPTY = Sql("DELETE FROM consumers WHERE uuid IN :uuids AND NOT EXISTS "
                       "(SELECT 1 FROM allocations a WHERE a.consumer_id = consumers.uuid)")


def delete_if_no_allocations(conn: Connection, uuids: Iterable[str]) -> None:
    """Forget consumers that own nothing any more; their next write starts afresh."""
    for part in bulk.chunks(set(uuids)):
        _DELETE_IF_EMPTY.run(conn, uuids=part)
