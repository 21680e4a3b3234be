"""Allocations: replacing what one or many consumers hold, atomically, within capacity.

`replace_allocations` is the one write path (PUT /allocations/{c}, POST
/allocations and the reshaper all use it). Inside the caller's transaction it

1. locks the consumers (uuid order) and ensures each one (generation check,
   auto-created project/user/type);
2. locks every touched provider row (``SELECT ... FOR UPDATE``, in id order,
   always after the consumer locks, so that writers never deadlock; SQLite's
   writer lock already serializes);
3. deletes the consumers' current allocations and checks the new ones against
   each inventory: used + requested <= (total - reserved) * allocation_ratio,
   and min_unit <= requested <= max_unit, requested % step_size == 0;
4. inserts the new rows, bumps provider and consumer generations with
   compare-and-swap, and forgets consumers left with nothing.

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

from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import bulk, changes, providers
from stowage.placement import consumers as cons
from stowage.placement import resource_classes as rcs
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["ConsumerAllocations", "UnknownProvider", "UnknownClass", "InventoryProblem",
           "replace_allocations", "prepare_allocations", "apply_allocations", "PreparedWrite",
           "lock_providers", "delete_allocations", "for_consumer", "for_provider",
           "AllocationRow", "ConsumerView", "ProviderAllocationRow"]

_A = t.allocations
_RP = t.resource_providers
_INV = t.inventories


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


def lock_providers(conn: Connection, uuids: Iterable[str]) -> dict[str, _Locked]:
    """Lock the providers named by `uuids` (unknown ones are left out), in id order.

    Ids first, without locks; then the rows chunk by chunk in ascending id
    order, so that every writer takes its provider locks in one global order.
    """
    # SELECT id FROM resource_providers WHERE uuid IN (:chunk)
    ids = [row.id for row in bulk.rows_in(
        conn, lambda part: sa.select(_RP.c.id).where(_RP.c.uuid.in_(part)), set(uuids))]
    # SELECT id, uuid, generation FROM resource_providers WHERE id IN (:chunk)
    # ORDER BY id FOR UPDATE
    rows = bulk.rows_in(conn, lambda part: sa.select(_RP.c.id, _RP.c.uuid, _RP.c.generation)
                        .where(_RP.c.id.in_(part)).order_by(_RP.c.id).with_for_update(),
                        set(ids))
    return {row.uuid: _Locked(row.id, row.uuid, row.generation) for row in rows}


def _current(conn: Connection, consumer_uuids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """(provider uuid, class name) of what each consumer holds now."""
    rc = t.resource_classes
    # SELECT a.consumer_id, rp.uuid, rc.name FROM allocations a JOIN resource_providers rp ...
    # JOIN resource_classes rc ... WHERE a.consumer_id IN (:chunk) ORDER BY a.id
    rows = bulk.rows_in(conn, lambda part: sa.select(_A.c.consumer_id, _RP.c.uuid, rc.c.name)
                        .select_from(_A.join(_RP, _A.c.resource_provider_id == _RP.c.id)
                                     .join(rc, _A.c.resource_class_id == rc.c.id))
                        .where(_A.c.consumer_id.in_(part)).order_by(_A.c.id), consumer_uuids)
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for consumer_uuid, rp_uuid, rc_name in rows:
        held[consumer_uuid].append((rp_uuid, rc_name))
    return held


def _plan(conn: Connection, wanted: Sequence[ConsumerAllocations],
          ensured: Mapping[str, cons.Consumer]) -> list[_Item]:
    """Every (consumer, provider, class, amount) the write touches, providers locked."""
    removed = _current(conn, [w.consumer.uuid for w in wanted if not w.allocations])
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


def _usage(conn: Connection, provider_ids: set[int],
           class_ids: set[int]) -> dict[tuple[int, int], int]:
    # SELECT resource_provider_id, resource_class_id, SUM(used) FROM allocations
    # WHERE resource_provider_id IN (...) AND resource_class_id IN (...)
    # GROUP BY resource_provider_id, resource_class_id
    rows = bulk.rows_in(conn, lambda part: sa.select(
        _A.c.resource_provider_id, _A.c.resource_class_id, sa.func.sum(_A.c.used))
        .where(_A.c.resource_provider_id.in_(part), _A.c.resource_class_id.in_(sorted(class_ids)))
        .group_by(_A.c.resource_provider_id, _A.c.resource_class_id), provider_ids)
    return {(rp, rc): int(used) for rp, rc, used in rows}


def _inventories(conn: Connection, provider_ids: set[int],
                 class_ids: set[int]) -> dict[tuple[int, int], sa.Row[tuple[object, ...]]]:
    rows = bulk.rows_in(conn, lambda part: sa.select(
        _INV.c.resource_provider_id, _INV.c.resource_class_id, _INV.c.total, _INV.c.reserved,
        _INV.c.min_unit, _INV.c.max_unit, _INV.c.step_size, _INV.c.allocation_ratio)
        .where(_INV.c.resource_provider_id.in_(part),
               _INV.c.resource_class_id.in_(sorted(class_ids))), provider_ids)
    return {(row.resource_provider_id, row.resource_class_id): row for row in rows}


def _check_capacity(conn: Connection, items: Sequence[_Item], class_ids: Mapping[str, int],
                    before: Mapping[tuple[int, int], int]) -> None:
    """Upstream's rules, run after the consumers' old allocations were deleted.

    Over capacity is tolerated when the write makes it no worse than `before`
    (e.g. an operator lowered the inventory, and a consumer now shrinks).
    """
    provider_ids = {i.provider.id for i in items}
    wanted_ids = {class_ids[i.resource_class] for i in items}
    inventory = _inventories(conn, provider_ids, wanted_ids)
    with_inventory = {rp for rp, _ in inventory}
    missing = sorted(i.provider.uuid for i in items if i.provider.id not in with_inventory)
    if missing:
        names = ", ".join(sorted({i.resource_class for i in items}))
        raise InventoryProblem(f"Inventory for '{names}' on resource provider "
                               f"'{', '.join(dict.fromkeys(missing))}' invalid.")
    used = _usage(conn, provider_ids, wanted_ids)
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
        now = used.get(key, 0)
        if capacity < now + item.used or capacity < now + asked[key]:
            previous = before.get(key)
            if previous is None or now + asked[key] > previous:
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
    cons.lock_consumers(conn, [w.consumer.uuid for w in wanted])
    ensured = cons.ensure_consumers(conn, [w.consumer for w in wanted], rules)
    return PreparedWrite(ensured, _plan(conn, wanted, ensured))


def apply_allocations(conn: Connection, prepared: PreparedWrite) -> None:
    """Steps 3 and 4; provider generations are re-read, as the reshaper changes them meanwhile."""
    items = prepared.items
    class_ids = _class_ids(conn, items)
    provider_ids = {i.provider.id for i in items}
    before = _usage(conn, provider_ids, set(class_ids.values()))
    _forget(conn, prepared.consumers)
    if items:
        _check_capacity(conn, items, class_ids, before)
    rows = [{"resource_provider_id": i.provider.id, "consumer_id": i.consumer.uuid,
             "resource_class_id": class_ids[i.resource_class], "used": i.used,
             "created_at": _now()} for i in items if i.used > 0]
    if rows:
        conn.execute(_A.insert(), rows)
    _bump_generations(conn, items)
    cons.delete_if_no_allocations(conn, prepared.consumers)


def replace_allocations(conn: Connection, wanted: Sequence[ConsumerAllocations],
                        rules: cons.ConsumerRules) -> None:
    """Make each consumer in `wanted` hold exactly its given allocations (see module doc)."""
    apply_allocations(conn, prepare_allocations(conn, wanted, rules))


def _bump_generations(conn: Connection, items: Sequence[_Item]) -> None:
    touched = lock_providers(conn, {i.provider.uuid for i in items})
    for provider in sorted(touched.values(), key=lambda p: p.id):
        try:
            providers.increment_generation(conn, provider.id, provider.generation)
        except Conflict as exc:
            raise cons.ConcurrentUpdate(exc.detail) from None
    cons.increment_generations(conn, {i.consumer.id: i.consumer for i in items}.values())


def _forget(conn: Connection, consumer_uuids: Iterable[str]) -> int:
    """Delete the consumers' allocations, logging the providers whose usage drops."""
    wanted = set(consumer_uuids)
    # SELECT DISTINCT resource_provider_id FROM allocations WHERE consumer_id IN (:chunk)
    held = {row[0] for row in bulk.rows_in(conn, lambda part: sa.select(
        _A.c.resource_provider_id).distinct().where(_A.c.consumer_id.in_(part)), wanted)}
    if not held:
        return 0
    changes.record(conn, sorted(held))
    # DELETE FROM allocations WHERE consumer_id IN (:chunk)
    return bulk.delete_in(conn, lambda part: _A.delete().where(_A.c.consumer_id.in_(part)),
                          wanted)


def delete_allocations(conn: Connection, consumer_uuid: str) -> None:
    """Remove everything the consumer holds, and the consumer itself.

    As upstream, provider generations are not bumped: removing allocations
    can never overcommit, so it need not invalidate anyone's view.
    """
    if not _forget(conn, [consumer_uuid]):
        raise NotFound(f"No allocations for consumer '{consumer_uuid}'")
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

