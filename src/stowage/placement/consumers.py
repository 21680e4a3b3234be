"""Consumers and the projects, users and consumer types they belong to.

A consumer is whatever owns allocations (an instance, a migration). Writers
name the consumer generation they read: ``None`` means "I expect a new
consumer" (from 1.28); a mismatch is a 409 so that two writers never silently
overwrite each other's view. Projects, users and consumer types are created on
first mention, as upstream's ``ensure_consumer`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from stowage.errors import Conflict
from stowage.placement import codes
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["ConsumerRequest", "ConsumerRules", "Consumer", "ConsumerConflict", "ConcurrentUpdate",
           "ensure_consumer", "lock_consumers", "increment_generation", "delete_if_no_allocations",
           "type_names", "UNKNOWN_TYPE"]

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



def _insert_or_get(conn: Connection, table: sa.Table, column: str, value: str) -> int:
    """Id of the row whose `column` is `value`, inserting it if missing.

    The insert runs in a savepoint so that losing a race with a concurrent
    creator (unique violation) leaves our transaction usable; we then read the
    winner's row.
    """
    col = table.c[column]
    found = conn.execute(sa.select(table.c.id).where(col == value)).scalar()
    if found is not None:
        return int(found)
    try:
        with conn.begin_nested():
            values = {column: value}
            if "created_at" in table.c:
                values["created_at"] = _now()  # type: ignore[assignment]
            conn.execute(table.insert().values(**values))
    except IntegrityError:
        pass
    return int(conn.execute(sa.select(table.c.id).where(col == value)).scalar_one())


def ensure_type(conn: Connection, name: str) -> int:
    return _insert_or_get(conn, t.consumer_types, "name", name)


def type_names(conn: Connection, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = conn.execute(sa.select(t.consumer_types.c.id, t.consumer_types.c.name)
                        .where(t.consumer_types.c.id.in_(wanted)))
    return {row.id: row.name for row in rows}


def _get_for_update(conn: Connection, uuid: str) -> Consumer | None:
    # SELECT id, uuid, generation, ... FROM consumers WHERE uuid = :uuid FOR UPDATE
    # The row lock makes concurrent writers to one consumer queue up, so the
    # generation compared below is the one we later bump.
    row = conn.execute(sa.select(_C.c.id, _C.c.uuid, _C.c.generation, _C.c.project_id,
                                 _C.c.user_id, _C.c.consumer_type_id)
                       .where(_C.c.uuid == uuid).with_for_update()).first()
    if row is None:
        return None
    return Consumer(row.id, row.uuid, row.generation, row.project_id, row.user_id,
                    row.consumer_type_id)


def lock_consumers(conn: Connection, uuids: Iterable[str]) -> None:
    """Lock the existing consumers among `uuids` in one sorted pass.

    Writers that touch several consumers (POST /allocations, the reshaper)
    take these locks before any provider lock, always in uuid order, so two
    of them never wait on each other in a cycle.
    """
    wanted = sorted(set(uuids))
    if wanted:
        # SELECT id FROM consumers WHERE uuid IN (:uuids) ORDER BY uuid FOR UPDATE
        conn.execute(sa.select(_C.c.id).where(_C.c.uuid.in_(wanted))
                     .order_by(_C.c.uuid).with_for_update()).all()


def ensure_consumer(conn: Connection, request: ConsumerRequest,
                    rules: ConsumerRules) -> Consumer:
    """The consumer record for `request`, created or updated to match it.

    Checks the generation when `rules` ask for it. A changed project, user or
    type is written without bumping the generation: the allocation write that
    follows bumps it once.
    """
    project, user = request.project_id, request.user_id
    if project is None or user is None:
        project, user = rules.incomplete_project_id, rules.incomplete_user_id
    project_id = _insert_or_get(conn, t.projects, "external_id", project)
    user_id = _insert_or_get(conn, t.users, "external_id", user)
    type_id = ensure_type(conn, request.consumer_type) if request.consumer_type else None
    existing = _get_for_update(conn, request.uuid)
    if existing is None:
        if rules.check_generation and request.generation is not None:
            raise ConsumerConflict("consumer generation conflict - expected null but got "
                                   f"{request.generation}")
        return _create(conn, request.uuid, project_id, user_id, type_id)
    if rules.check_generation and existing.generation != request.generation:
        raise ConsumerConflict("consumer generation conflict - expected "
                               f"{existing.generation} but got {request.generation}")
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


def _create(conn: Connection, uuid: str, project_id: int, user_id: int,
            type_id: int | None) -> Consumer:
    """Insert a new consumer at generation 0.

    A unique violation means another request created it between our read and
    our insert: whatever that request wrote, it is not the "new consumer" this
    one expected, so report it as a concurrent update.
    """
    try:
        with conn.begin_nested():
            new_id = conn.execute(_C.insert().values(
                uuid=uuid, project_id=project_id, user_id=user_id, generation=0,
                consumer_type_id=type_id, created_at=_now())).inserted_primary_key
    except IntegrityError:
        raise ConsumerConflict("consumer generation conflict - another request created "
                               f"consumer {uuid} concurrently") from None
    assert new_id is not None
    return Consumer(int(new_id[0]), uuid, 0, project_id, user_id, type_id)


def increment_generation(conn: Connection, consumer: Consumer) -> int:
    # UPDATE consumers SET generation = :old + 1 WHERE id = :id AND generation = :old
    new = consumer.generation + 1
    result = conn.execute(_C.update()
                          .where(_C.c.id == consumer.id, _C.c.generation == consumer.generation)
                          .values(generation=new, updated_at=_now()))
    if result.rowcount != 1:
        raise ConcurrentUpdate()
    return new


def delete_if_no_allocations(conn: Connection, uuids: Iterable[str]) -> None:
    """Forget consumers that own nothing any more; their next write starts afresh."""
    wanted = sorted(set(uuids))
    if not wanted:
        return
    # DELETE FROM consumers WHERE uuid IN (:uuids)
    #   AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = consumers.uuid)
    owns = sa.exists().where(t.allocations.c.consumer_id == _C.c.uuid)
    conn.execute(_C.delete().where(_C.c.uuid.in_(wanted), ~owns))
