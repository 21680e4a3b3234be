"""The claim: PUT /allocations/{consumer} for a new consumer, in three statements.

Why a path of its own: a scheduler's every decision is such a claim, so its
round trips are what a busy Placement spends (issue 31, target 3). The
general writer (`allocations.replace_allocations`) reads before it writes:
lock the consumer, look up its owner, lock the providers, read inventories
and usage, then write. For a consumer that does not exist yet every read can
be folded into a write that fails soft:

1. ``INSERT INTO consumers ... SELECT`` the owner's ids ``... ON CONFLICT DO
   NOTHING``: one row inserted means the consumer is new (what generation
   null asserts) and its project, user and type exist. No row means the
   consumer exists, or an owner is new: nothing was written, and the general
   writer takes over from the start.
2. One statement locks the providers in id order (the global lock order,
   after the consumer's, as every writer), bumps their generations and, on
   PostgreSQL, logs them as a usage-only change (SQLite logs them with a
   second, in-process statement).
3. ``INSERT INTO allocations ... SELECT`` from the inventories, only the rows
   whose min/max/step and capacity (usage summed by the covering index, read
   after the locks were taken, so no other claim on these providers is in
   between) allow. Fewer rows than asked means a rule was broken: the rows
   are deleted again and the general check names the problem, with
   upstream's message; the caller's transaction then rolls everything back.

MySQL has neither ``RETURNING`` nor a way to lock and update in one
statement; there, and for every other write, the general writer runs.

The short path also returns what the claim left behind (`Claimed`): the ids
of its change-log entries and the claimed classes' usage as it committed.
The worker that made the claim updates its candidate snapshot from them
(candidates/cache.py) instead of reading the usage back on its next request;
on PostgreSQL both come out of statements 2 and 3 (``RETURNING``, a
data-modifying ``WITH``), on SQLite a sixth statement sums the usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stowage.db.statements import Sql
from stowage.placement import allocations as allocs
from stowage.placement import changes
from stowage.placement import consumers as cons
from stowage.placement import resource_classes as rcs
from stowage.timeutil import utcnow as _now

__all__ = ["Claimed", "replace_one"]

_NEW_CONSUMER = (
    "INSERT INTO consumers (uuid, project_id, user_id, generation, consumer_type_id, "
    "created_at, updated_at) SELECT :uuid, p.id, u.id, 1, {type_id}, :now, :now "
    "FROM projects p, users u{types} WHERE p.external_id = :project "
    "AND u.external_id = :user{type_match} ON CONFLICT (uuid) DO NOTHING")
_NEW_TYPED = Sql(_NEW_CONSUMER.format(type_id="ct.id", types=", consumer_types ct",
                                      type_match=" AND ct.name = :type"))
_NEW_UNTYPED = Sql(_NEW_CONSUMER.format(type_id="NULL", types="", type_match=""))

# Lock in id order, bump, log: one round trip on PostgreSQL.
_BUMP_AND_LOG_PG = Sql(
    "WITH locked AS (SELECT id FROM resource_providers WHERE uuid IN :uuids "
    "ORDER BY id FOR UPDATE), "
    "bumped AS (UPDATE resource_providers rp SET generation = rp.generation + 1, "
    "updated_at = :now FROM locked WHERE rp.id = locked.id RETURNING rp.id, rp.uuid), "
    "logged AS (INSERT INTO resource_provider_changes (provider_id, created_at, usage_only) "
    "SELECT id, :now, TRUE FROM bumped RETURNING id, provider_id) "
    "SELECT b.id, b.uuid, l.id FROM bumped b JOIN logged l ON l.provider_id = b.id")
# SQLite's writer lock already serializes; RETURNING from 3.35.
_BUMP_SQLITE = Sql("UPDATE resource_providers SET generation = generation + 1, "
                   "updated_at = :now WHERE uuid IN :uuids RETURNING id, uuid")
_LOG_SQLITE = Sql("INSERT INTO resource_provider_changes (provider_id, created_at, usage_only) "
                  "SELECT id, :now, 1 FROM resource_providers WHERE id IN :ids RETURNING id")
# The claimed providers' usage, read under the claim's write lock (SQLite).
_USAGE_SQLITE = Sql("SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations "
                    "WHERE resource_provider_id IN :ids "
                    "GROUP BY resource_provider_id, resource_class_id")

_CHECK = (
    "SELECT i.resource_provider_id AS rp, i.resource_class_id AS rc, w.used AS used, "
    "w.used + (SELECT COALESCE(SUM(a.used), 0) FROM allocations a "
    "WHERE a.resource_provider_id = i.resource_provider_id "
    "AND a.resource_class_id = i.resource_class_id) AS total, "
    "(i.total - i.reserved) * i.allocation_ratio AS cap "
    "FROM ({wanted}) w JOIN inventories i ON i.resource_provider_id = w.rp "
    "AND i.resource_class_id = w.rc "
    "WHERE w.used >= i.min_unit AND w.used <= i.max_unit AND w.used % i.step_size = 0")
# SQLite: insert the rows that fit; the count tells whether all did.
_INSERT_CHECKED = (
    "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, "
    "created_at) SELECT c.rp, :consumer, c.rc, c.used, :now FROM (" + _CHECK + ") c "
    "WHERE c.total <= c.cap")
# PostgreSQL: the same, returning each inserted row's class usage after the claim.
_INSERT_CHECKED_PG = (
    "WITH fit AS (SELECT rp, rc, used, total FROM (" + _CHECK + ") c WHERE c.total <= c.cap), "
    "ins AS (INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, "
    "used, created_at) SELECT rp, :consumer, rc, used, :now FROM fit) "
    "SELECT rp, rc, total FROM fit")
_CHECKED: dict[tuple[bool, int], Sql] = {}


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a committed short-path claim changed: its log entries, and usage after it.

    `usage` maps provider id -> class name -> that class's usage on the
    provider as the claim committed it, for the classes claimed.
    """

    log_ids: list[int]
    usage: dict[int, dict[str, int]]


def _checked_insert(pg: bool, count: int) -> Sql:
    """The checked INSERT for `count` (provider, class, amount) rows, built once per count."""
    sql = _CHECKED.get((pg, count))
    if sql is None:
        rows = " UNION ALL ".join(
            f"SELECT CAST(:p{n} AS INTEGER) AS rp, CAST(:c{n} AS INTEGER) AS rc, "
            f"CAST(:u{n} AS INTEGER) AS used" for n in range(count))
        text = (_INSERT_CHECKED_PG if pg else _INSERT_CHECKED).replace("{wanted}", rows)
        sql = _CHECKED.setdefault((pg, count), Sql(text))
    return sql


def _fits(conn: Connection, want: allocs.ConsumerAllocations,
          rules: cons.ConsumerRules) -> bool:
    """Whether this write is a new consumer's claim the short path knows how to make."""
    request = want.consumer
    return (conn.dialect.name in ("postgresql", "sqlite") and conn.dialect.update_returning
            and bool(want.allocations) and request.generation is None
            and request.project_id is not None and request.user_id is not None
            and all(used > 0 for res in want.allocations.values() for used in res.values()))


def _create_consumer(conn: Connection, request: cons.ConsumerRequest) -> bool:
    """Step 1; False when the consumer exists or one of its owners does not."""
    params = {"uuid": request.uuid, "now": _now(), "project": request.project_id,
              "user": request.user_id}
    if request.consumer_type:
        return _NEW_TYPED.run(conn, type=request.consumer_type, **params) == 1
    return _NEW_UNTYPED.run(conn, **params) == 1


def _lock_and_bump(conn: Connection, allocations: Mapping[str, Mapping[str, int]]
                   ) -> tuple[dict[str, int], list[int]]:
    """Step 2: provider uuid -> id, and the change-log ids; an unknown provider is a 400."""
    now = _now()
    uuids = sorted(allocations)
    if conn.dialect.name == "postgresql":
        rows = _BUMP_AND_LOG_PG.rows(conn, uuids=uuids, now=now)
        found = {u: i for i, u, _ in rows}
        log_ids = [log_id for _, _, log_id in rows]
    else:
        found = {u: i for i, u in _BUMP_SQLITE.rows(conn, uuids=uuids, now=now)}
        log_ids = [log_id for log_id, in _LOG_SQLITE.rows(conn, ids=sorted(found.values()),
                                                            now=now)]
    for rp_uuid in allocations:
        if rp_uuid not in found:
            raise allocs.UnknownProvider(
                f"Allocation for resource provider '{rp_uuid}' that does not exist.")
    changes.prune_sometimes(conn, now)
    return found, log_ids


def _insert_checked(conn: Connection, want: allocs.ConsumerAllocations,
                    provider_ids: Mapping[str, int]) -> dict[int, dict[str, int]]:
    """Step 3, and the usage it leaves; on a broken rule, the general check raises."""
    names = [rc for res in want.allocations.values() for rc in res]
    class_ids = rcs.ids_by_name(conn, set(names))
    for name in names:
        if name not in class_ids:
            raise allocs.UnknownClass(f"No such resource class {name}.")
    params: dict[str, object] = {"consumer": want.consumer.uuid, "now": _now()}
    count = 0
    for rp_uuid, resources in want.allocations.items():
        for rc, used in resources.items():
            params.update({f"p{count}": provider_ids[rp_uuid], f"c{count}": class_ids[rc],
                           f"u{count}": used})
            count += 1
    rows: list[tuple[Any, ...]] = []
    if conn.dialect.name == "postgresql":
        rows = _checked_insert(True, count).rows(conn, **params)
        inserted = len(rows)
    else:
        inserted = _checked_insert(False, count).run(conn, **params)
        if inserted == count:
            rows = _USAGE_SQLITE.rows(conn, ids=sorted(set(provider_ids.values())))
    if inserted != count:
        allocs.explain_refusal(conn, want, provider_ids, class_ids)
    by_id = {rc_id: name for name, rc_id in class_ids.items()}
    usage: dict[int, dict[str, int]] = {}
    for rp, rc, total in rows:
        claimed = by_id.get(int(rc))
        if claimed is not None:
            usage.setdefault(int(rp), {})[claimed] = int(total)
    return usage


def replace_one(conn: Connection, want: allocs.ConsumerAllocations,
                rules: cons.ConsumerRules) -> Claimed | None:
    """PUT /allocations/{consumer}: the short path for a new consumer, else the general one.

    Returns what the short path changed (see `Claimed`); None after the general one.
    """
    if _fits(conn, want, rules) and _create_consumer(conn, want.consumer):
        provider_ids, log_ids = _lock_and_bump(conn, want.allocations)
        return Claimed(log_ids, _insert_checked(conn, want, provider_ids))
    allocs.replace_allocations(conn, [want], rules)
    return None
