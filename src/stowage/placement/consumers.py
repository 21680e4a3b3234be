"""Consumers and the projects, users and consumer types they belong to.

A consumer is whatever owns allocations (an instance, a migration). Writers
name the consumer generation they read: ``None`` means "I expect a new
consumer" (from 1.28); a mismatch is a 409 so that two writers never silently
overwrite each other's view. Projects, users and consumer types are created on
first mention, as upstream's ``ensure_consumer`` does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

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
    id: int
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


def _existing_for_update(conn: Connection, uuids: Iterable[str]) -> dict[str, Consumer]:
    # SELECT id, uuid, generation, ... FROM consumers WHERE uuid IN (:chunk)
    # ORDER BY uuid FOR UPDATE, chunk by chunk in uuid order.
    # The row locks make concurrent writers to one consumer queue up, so the
    # generations compared by the caller are the ones later bumped.
    rows = bulk.rows_in(conn, lambda part: sa.select(
        _C.c.id, _C.c.uuid, _C.c.generation, _C.c.project_id, _C.c.user_id,
        _C.c.consumer_type_id).where(_C.c.uuid.in_(part)).order_by(_C.c.uuid)
        .with_for_update(), set(uuids))
    return {row.uuid: Consumer(row.id, row.uuid, row.generation, row.project_id, row.user_id,
                               row.consumer_type_id) for row in rows}


def lock_consumers(conn: Connection, uuids: Iterable[str]) -> None:
    """Lock the existing consumers among `uuids`, chunk by chunk in uuid order.

    Writers that touch several consumers (POST /allocations, the reshaper)
    take these locks before any provider lock, always in uuid order, so two
    of them never wait on each other in a cycle.
    """
    _existing_for_update(conn, uuids)


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


def _owners(conn: Connection, requests: Sequence[ConsumerRequest],
            rules: ConsumerRules) -> list[tuple[int, int, int | None]]:
    """(project id, user id, type id) of each request, creating projects, users and types."""
    named = [(r.project_id, r.user_id) if r.project_id is not None and r.user_id is not None
             else (rules.incomplete_project_id, rules.incomplete_user_id) for r in requests]
    projects = _ids_for(conn, t.projects, "external_id", {p for p, _ in named})
    users = _ids_for(conn, t.users, "external_id", {u for _, u in named})
    types = _ids_for(conn, t.consumer_types, "name",
                     {r.consumer_type for r in requests if r.consumer_type})
    return [(projects[p], users[u], types[r.consumer_type] if r.consumer_type else None)
            for (p, u), r in zip(named, requests, strict=True)]


def ensure_consumers(conn: Connection, requests: Sequence[ConsumerRequest],
                     rules: ConsumerRules) -> dict[str, Consumer]:
    """The consumer records for `requests` (distinct uuids), created or updated to match.

    Checks generations when `rules` ask for it, in request order. A changed
    project, user or type is written without bumping the generation: the
    allocation write that follows bumps it once. Statements per request stay
    constant however many consumers there are (chunked selects, one
    executemany for the new ones); only changed owners are updated one by one.
    """
    owners = _owners(conn, requests, rules)
    existing = _existing_for_update(conn, [r.uuid for r in requests])
    ensured: dict[str, Consumer] = {}
    new: list[tuple[str, int, int, int | None]] = []
    for request, (project_id, user_id, type_id) in zip(requests, owners, strict=True):
        found = existing.get(request.uuid)
        _check_generation(request, found, rules)
        if found is None:
            new.append((request.uuid, project_id, user_id, type_id))
        else:
            ensured[request.uuid] = _update_owner(conn, found, project_id, user_id, type_id)
    ensured.update(_create(conn, new))
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


def _create(conn: Connection,
            new: Sequence[tuple[str, int, int, int | None]]) -> dict[str, Consumer]:
    """Insert new consumers at generation 0, in one executemany.

    A unique violation means another request created one of them between our
    read and our insert: whatever that request wrote, it is not the "new
    consumer" this one expected, so report it as a concurrent update.
    """
    if not new:
        return {}
    now = _now()
    try:
        with conn.begin_nested():
            conn.execute(_C.insert(), [
                {"uuid": uuid, "project_id": project_id, "user_id": user_id, "generation": 0,
                 "consumer_type_id": type_id, "created_at": now}
                for uuid, project_id, user_id, type_id in new])
    except IntegrityError:
        raced = _existing_for_update(conn, [uuid for uuid, *_ in new])
        uuid = next((u for u, *_ in new if u in raced), new[0][0])
        raise ConsumerConflict("consumer generation conflict - another request created "
                               f"consumer {uuid} concurrently") from None
    created = _existing_for_update(conn, [uuid for uuid, *_ in new])
    return {uuid: created[uuid] for uuid, *_ in new}


def increment_generations(conn: Connection, consumers: Iterable[Consumer]) -> None:
    """Compare-and-swap each consumer's generation to the next, grouped by old value.

    UPDATE consumers SET generation = :old + 1 WHERE generation = :old AND id IN (:chunk)
    Every row of the chunk must match; one that does not lost a race.
    """
    by_generation: dict[int, set[int]] = defaultdict(set)
    for consumer in consumers:
        by_generation[consumer.generation].add(consumer.id)
    now = _now()
    for old, ids in sorted(by_generation.items()):
        for part in bulk.chunks(ids):
            result = conn.execute(_C.update().where(_C.c.id.in_(part), _C.c.generation == old)
                                  .values(generation=old + 1, updated_at=now))
            if result.rowcount != len(part):
                raise ConcurrentUpdate()


def delete_if_no_allocations(conn: Connection, uuids: Iterable[str]) -> None:
    """Forget consumers that own nothing any more; their next write starts afresh."""
    # DELETE FROM consumers WHERE uuid IN (:chunk)
    #   AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = consumers.uuid)
    owns = sa.exists().where(t.allocations.c.consumer_id == _C.c.uuid)
    bulk.delete_in(conn, lambda part: _C.delete().where(_C.c.uuid.in_(part), ~owns), set(uuids))
