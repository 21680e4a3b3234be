"""Allocations: replacing what one or many consumers hold, atomically, within capacity.

`replace_allocations` is the one write path (PUT /allocations/{c}, POST
/allocations and the reshaper all use it). Inside the caller's transaction it

1. locks the consumers (uuid order) and ensures each one (generation check,
   auto-created project/user/type; a new one is created at its final
   generation);
2. locks every touched provider row (``SELECT ... FOR UPDATE``, in id order,
   always after the consumer locks, so that writers never deadlock; SQLite's
   writer lock already serializes);
3. deletes the consumers' current allocations and checks the new ones against
   each inventory: used + requested <= (total - reserved) * allocation_ratio,
   and min_unit <= requested <= max_unit, requested % step_size == 0;
4. inserts the new rows, bumps the (locked) provider generations and the
   consumer generations (compare-and-swap), logs the providers as a usage-only
   change, and forgets consumers left with nothing.

A claim is a scheduler's every decision, so its statements are hand-written
`Sql` and few: about ten for a new consumer here. A new consumer's PUT first
tries `placement/claim.py`, which folds the reads into three checked writes
and hands over to this path whenever its case is not the simple one.

Any failure raises and the caller's transaction rolls everything back, so a
failing request changes nothing. Errors carry upstream's bare messages; the
handlers add the per-endpoint prefix.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.db.statements import Sql
from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import bulk, changes, providers
from stowage.placement import consumers as cons
from stowage.placement import resource_classes as rcs
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["ConsumerAllocations", "UnknownProvider", "UnknownClass", "InventoryProblem",
           "replace_allocations", "explain_refusal", "prepare_allocations", "apply_allocations",
           "PreparedWrite",
           "lock_providers", "delete_allocations", "for_consumer", "for_provider",
           "AllocationRow", "ConsumerView", "ProviderAllocationRow"]

_A = t.allocations
_RP = t.resource_providers


class UnknownProvider(Invalid):
    """An allocation names a provider that does not exist (400)."""


class UnknownClass(NotFound):
    """An allocation names a resource class that does not exist (400 at the API)."""


class InventoryProblem(Conflict):
    """No inventory for the class, over capacity, or min/max/step violated (409)."""


@dataclass(frozen=True)
class ConsumerAllocations:
    """The complete new allocations of one consumer: provider uuid -> class -> amount.

    Empty `allocations` means "this consumer should hold nothing".
    """

    consumer: cons.ConsumerRequest
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Locked:
    id: int
    uuid: str
    generation: int


@dataclass(frozen=True)
class _Item:
    consumer: cons.Consumer
    provider: _Locked
    resource_class: str
    used: int  # 0 marks an allocation being removed (its provider is still touched)


_PROVIDERS = "SELECT id, uuid, generation FROM resource_providers WHERE {} IN :values ORDER BY id"
_BY_UUID = Sql(_PROVIDERS.format("uuid"))
_LOCK_BY_UUID = Sql(_PROVIDERS.format("uuid") + " FOR UPDATE")
_IDS_BY_UUID = Sql("SELECT id FROM resource_providers WHERE uuid IN :values")
_LOCK_BY_ID = Sql(_PROVIDERS.format("id") + " FOR UPDATE")


def lock_providers(conn: Connection, uuids: Iterable[str]) -> dict[str, _Locked]:
    """Lock the providers named by `uuids` (unknown ones are left out), in id order.

    Every writer takes its provider locks in one global order, ascending id.
    PostgreSQL locks the rows of ``... ORDER BY id FOR UPDATE`` after sorting
    them, so one statement does when the list fits one chunk. MySQL locks
    rows as it reads them (by the uuid index), and a long list comes in
    several chunks: there the ids come first, without locks, then the rows
    are locked by id, chunk by chunk. SQLite's writer lock already serializes.
    """
    wanted = set(uuids)
    backend = conn.dialect.name
    if backend == "sqlite" or (backend == "postgresql" and len(wanted) <= bulk.CHUNK):
        query = _BY_UUID if backend == "sqlite" else _LOCK_BY_UUID
        rows = [row for part in bulk.chunks(wanted) for row in query.rows(conn, values=part)]
    else:
        ids = {row[0] for part in bulk.chunks(wanted)
               for row in _IDS_BY_UUID.rows(conn, values=part)}
        rows = [row for part in bulk.chunks(ids) for row in _LOCK_BY_ID.rows(conn, values=part)]
    return {uuid: _Locked(row_id, uuid, generation) for row_id, uuid, generation in rows}


_CURRENT = Sql(
    "SELECT a.consumer_id, rp.uuid, rc.name FROM allocations a "
    "JOIN resource_providers rp ON a.resource_provider_id = rp.id "
    "JOIN resource_classes rc ON a.resource_class_id = rc.id "
    "WHERE a.consumer_id IN :uuids ORDER BY a.id")


def _current(conn: Connection, consumer_uuids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """(provider uuid, class name) of what each consumer holds now."""
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for part in bulk.chunks(consumer_uuids):
        for consumer_uuid, rp_uuid, rc_name in _CURRENT.rows(conn, uuids=part):
            held[consumer_uuid].append((rp_uuid, rc_name))
    return held


def _plan(conn: Connection, wanted: Sequence[ConsumerAllocations],
          ensured: Mapping[str, cons.Consumer]) -> list[_Item]:
    """Every (consumer, provider, class, amount) the write touches, providers locked."""
    # A consumer created by this write holds nothing yet.
    removed = _current(conn, [w.consumer.uuid for w in wanted
                              if not w.allocations and ensured[w.consumer.uuid].id is not None])
    uuids = {rp for w in wanted for rp in w.allocations}
    uuids |= {rp for pairs in removed.values() for rp, _ in pairs}
    locked = lock_providers(conn, uuids)
    items: list[_Item] = []
    for want in wanted:
        consumer = ensured[want.consumer.uuid]
        for rp_uuid, resources in want.allocations.items():
            if rp_uuid not in locked:
                raise UnknownProvider(
                    f"Allocation for resource provider '{rp_uuid}' that does not exist.")
            items.extend(_Item(consumer, locked[rp_uuid], rc, used)
                         for rc, used in resources.items())
        items.extend(_Item(consumer, locked[rp_uuid], rc, 0)
                     for rp_uuid, rc in removed.get(want.consumer.uuid, []))
    return items


def _class_ids(conn: Connection, items: Sequence[_Item]) -> dict[str, int]:
    ids = rcs.ids_by_name(conn, {i.resource_class for i in items})
    for item in items:
        if item.resource_class not in ids:
            raise UnknownClass(f"No such resource class {item.resource_class}.")
    return ids


@dataclass(frozen=True)
class _Inventory:
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int | None  # None: nothing allocated against it


# Each inventory the write touches, with what is allocated against it (the
# covering index on allocations (provider, class, used) answers the sum).
_INVENTORY_AND_USAGE = Sql(
    "SELECT i.resource_provider_id, i.resource_class_id, i.total, i.reserved, i.min_unit, "
    "i.max_unit, i.step_size, i.allocation_ratio, "
    "(SELECT SUM(a.used) FROM allocations a WHERE a.resource_provider_id = "
    "i.resource_provider_id AND a.resource_class_id = i.resource_class_id) "
    "FROM inventories i "
    "WHERE i.resource_provider_id IN :providers AND i.resource_class_id IN :classes")


def _inventories(conn: Connection, provider_ids: set[int],
                 class_ids: set[int]) -> dict[tuple[int, int], _Inventory]:
    found: dict[tuple[int, int], _Inventory] = {}
    for providers_part in bulk.chunks(provider_ids):
        for classes_part in bulk.chunks(class_ids):
            for rp, rc, total, reserved, low, high, step, ratio, used in _INVENTORY_AND_USAGE.rows(
                    conn, providers=providers_part, classes=classes_part):
                found[(rp, rc)] = _Inventory(total, reserved, low, high, step, ratio,
                                             None if used is None else int(used))
    return found


def _check_capacity(conn: Connection, items: Sequence[_Item], class_ids: Mapping[str, int],
                    freed: Mapping[tuple[int, int], int]) -> None:
    """Upstream's rules, run after the consumers' old allocations (`freed`) were deleted.

    Over capacity is tolerated when the write makes it no worse than before
    (e.g. an operator lowered the inventory, and a consumer now shrinks).
    """
    inventory = _inventories(conn, {i.provider.id for i in items},
                             {class_ids[i.resource_class] for i in items})
    with_inventory = {rp for rp, _ in inventory}
    missing = sorted(i.provider.uuid for i in items if i.provider.id not in with_inventory)
    if missing:
        names = ", ".join(sorted({i.resource_class for i in items}))
        raise InventoryProblem(f"Inventory for '{names}' on resource provider "
                               f"'{', '.join(dict.fromkeys(missing))}' invalid.")
    asked: dict[tuple[int, int], int] = defaultdict(int)
    for item in items:
        key = (item.provider.id, class_ids[item.resource_class])
        asked[key] += item.used
        if item.used == 0:
            continue
        inv = inventory.get(key)
        where = f"'{item.resource_class}' on resource provider '{item.provider.uuid}'"
        if inv is None:
            raise InventoryProblem(f"Inventory for {where} invalid.")
        if (item.used < inv.min_unit or item.used > inv.max_unit
                or item.used % inv.step_size != 0):
            raise InventoryProblem(f"Unable to create allocation for {where}. The requested "
                                   "amount would violate inventory constraints.")
        capacity = (inv.total - inv.reserved) * inv.allocation_ratio
        now = inv.used or 0
        if capacity < now + item.used or capacity < now + asked[key]:
            # Tolerated when it was in use before and the write asks no more than it freed.
            held_before = inv.used is not None or key in freed
            if not held_before or asked[key] > freed.get(key, 0):
                raise InventoryProblem(f"Unable to create allocation for {where}. The "
                                       "requested amount would exceed the capacity.")


@dataclass(frozen=True)
class PreparedWrite:
    """Consumers ensured and providers locked; what `apply_allocations` will write."""

    consumers: Mapping[str, cons.Consumer]
    items: Sequence[_Item]


def prepare_allocations(conn: Connection, wanted: Sequence[ConsumerAllocations],
                        rules: cons.ConsumerRules) -> PreparedWrite:
    """Steps 1 and 2: consumer generation checks first, then unknown providers (as upstream)."""
    claiming = {w.consumer.uuid for w in wanted
                if any(used > 0 for resources in w.allocations.values()
                       for used in resources.values())}
    ensured = cons.ensure_consumers(conn, [w.consumer for w in wanted], rules, claiming)
    return PreparedWrite(ensured, _plan(conn, wanted, ensured))


_INSERT = Sql("INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, "
              "used, created_at) VALUES (:provider_id, :consumer_id, :class_id, :used, :now)")


def apply_allocations(conn: Connection, prepared: PreparedWrite) -> None:
    """Steps 3 and 4.

    Provider generations are bumped relative to their current value, as the
    reshaper changes them between the two steps (the rows stay locked).
    """
    items = prepared.items
    class_ids = _class_ids(conn, items)
    freed = _forget(conn, [c.uuid for c in prepared.consumers.values() if c.id is not None])
    if items:
        _check_capacity(conn, items, class_ids, freed)
    now = _now()
    rows = [{"provider_id": i.provider.id, "consumer_id": i.consumer.uuid,
             "class_id": class_ids[i.resource_class], "used": i.used, "now": now}
            for i in items if i.used > 0]
    _INSERT.run_many(conn, rows)
    touched = {i.provider.id for i in items}
    try:
        providers.increment_locked_generations(conn, touched)
    except Conflict as exc:
        raise cons.ConcurrentUpdate(exc.detail) from None
    changes.record(conn, touched | {rp for rp, _ in freed}, usage_only=True)
    # A consumer left with nothing is deleted just below: no generation to bump.
    holding = {row["consumer_id"] for row in rows}
    cons.increment_generations(conn, {i.consumer.uuid: i.consumer for i in items
                                      if i.consumer.uuid in holding}.values())
    cons.delete_if_no_allocations(conn, [u for u in prepared.consumers if u not in holding])


def explain_refusal(conn: Connection, want: ConsumerAllocations,
                    provider_ids: Mapping[str, int], class_ids: Mapping[str, int]) -> None:
    """A checked claim (placement/claim.py) inserted fewer rows than asked: say why.

    Its rows are deleted first, so that the check sees the usage the claim
    was checked against; then the general check raises upstream's error.
    Raises in every case (ConcurrentUpdate should the check find nothing).
    """
    _forget(conn, [want.consumer.uuid])
    consumer = cons.Consumer(None, want.consumer.uuid, 1, 0, 0, None)
    items = [_Item(consumer, _Locked(provider_ids[rp], rp, 0), rc, used)
             for rp, resources in want.allocations.items() for rc, used in resources.items()]
    _check_capacity(conn, items, class_ids, {})
    raise cons.ConcurrentUpdate()


def replace_allocations(conn: Connection, wanted: Sequence[ConsumerAllocations],
                        rules: cons.ConsumerRules) -> None:
    """Make each consumer in `wanted` hold exactly its given allocations (see module doc)."""
    apply_allocations(conn, prepare_allocations(conn, wanted, rules))


_HELD = Sql("SELECT resource_provider_id, resource_class_id, used FROM allocations "
            "WHERE consumer_id IN :uuids")
_DELETE_HELD = Sql("DELETE FROM allocations WHERE consumer_id IN :uuids")
# One round trip where the database can return what it deleted.
_DELETE_HELD_RETURNING = Sql("DELETE FROM allocations WHERE consumer_id IN :uuids "
                             "RETURNING resource_provider_id, resource_class_id, used")


def _forget(conn: Connection, consumer_uuids: Iterable[str]) -> dict[tuple[int, int], int]:
    """Delete the consumers' allocations; returns what they held per (provider id, class id).

    The caller logs the providers whose usage drops.
    """
    freed: dict[tuple[int, int], int] = defaultdict(int)
    for part in bulk.chunks(set(consumer_uuids)):
        if conn.dialect.delete_returning:
            rows = _DELETE_HELD_RETURNING.rows(conn, uuids=part)
        else:
            rows = _HELD.rows(conn, uuids=part)
            if rows:
                _DELETE_HELD.run(conn, uuids=part)
        for rp, rc, used in rows:
            freed[(rp, rc)] += int(used)
    return dict(freed)


def delete_allocations(conn: Connection, consumer_uuid: str) -> None:
    """Remove everything the consumer holds, and the consumer itself.

    As upstream, provider generations are not bumped: removing allocations
    can never overcommit, so it need not invalidate anyone's view.
    """
    # The consumer's row first, as every allocation writer locks it: a DELETE
    # racing a POST /allocations that replaces the same consumer's rows would
    # otherwise lock allocations then consumer, the POST consumer then allocations.
    cons.lock_consumers(conn, [consumer_uuid])
    freed = _forget(conn, [consumer_uuid])
    if not freed:
        raise NotFound(f"No allocations for consumer '{consumer_uuid}'")
    changes.record(conn, {rp for rp, _ in freed}, usage_only=True)
    cons.delete_if_no_allocations(conn, [consumer_uuid])


@dataclass(frozen=True)
class AllocationRow:
    """One allocation as GET /allocations/{consumer} shows it."""

    provider_uuid: str
    provider_generation: int
    resource_class: str
    used: int
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


@dataclass
class ConsumerView:
    project_id: str
    user_id: str
    generation: int
    consumer_type: str
    rows: list[AllocationRow]


def for_consumer(conn: Connection, consumer_uuid: str) -> ConsumerView | None:
    """The consumer's allocations and owner, or None when it holds nothing."""
    c, p, u, rc = t.consumers, t.projects, t.users, t.resource_classes
    # SELECT rp.uuid, rp.generation, rc.name, a.used, ..., p.external_id, u.external_id
    # FROM allocations a JOIN resource_providers rp ... JOIN resource_classes rc ...
    # JOIN consumers c ON a.consumer_id = c.uuid JOIN projects p ... JOIN users u ...
    # WHERE a.consumer_id = :uuid
    joined = (_A.join(_RP, _A.c.resource_provider_id == _RP.c.id)
              .join(rc, _A.c.resource_class_id == rc.c.id)
              .join(c, _A.c.consumer_id == c.c.uuid)
              .join(p, c.c.project_id == p.c.id).join(u, c.c.user_id == u.c.id))
    rows = conn.execute(sa.select(
        _RP.c.uuid, _RP.c.generation, rc.c.name, _A.c.used, _A.c.created_at, _A.c.updated_at,
        p.c.external_id.label("project"), u.c.external_id.label("user"),
        c.c.generation.label("consumer_generation"), c.c.consumer_type_id,
    ).select_from(joined).where(_A.c.consumer_id == consumer_uuid).order_by(_A.c.id)).all()
    if not rows:
        return None
    first = rows[0]
    type_id = first.consumer_type_id
    type_name = cons.type_names(conn, [type_id]).get(type_id) if type_id is not None else None
    return ConsumerView(
        first.project, first.user, first.consumer_generation, type_name or cons.UNKNOWN_TYPE,
        [AllocationRow(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows])


@dataclass(frozen=True)
class ProviderAllocationRow:
    """One allocation as GET /resource_providers/{uuid}/allocations shows it."""

    consumer_uuid: str
    consumer_generation: int | None
    resource_class: str
    used: int
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def for_provider(conn: Connection, provider_id: int) -> list[ProviderAllocationRow]:
    c, rc = t.consumers, t.resource_classes
    # SELECT a.consumer_id, c.generation, rc.name, a.used, a.created_at, a.updated_at
    # FROM allocations a JOIN resource_classes rc ON ...
    # LEFT JOIN consumers c ON a.consumer_id = c.uuid WHERE a.resource_provider_id = :id
    joined = (_A.join(rc, _A.c.resource_class_id == rc.c.id)
              .outerjoin(c, _A.c.consumer_id == c.c.uuid))
    rows = conn.execute(sa.select(_A.c.consumer_id, c.c.generation, rc.c.name, _A.c.used,
                                  _A.c.created_at, _A.c.updated_at)
                        .select_from(joined).where(_A.c.resource_provider_id == provider_id)
                        .order_by(_A.c.id))
    return [ProviderAllocationRow(*row) for row in rows]

