"""Inventories: how much of each resource class a provider offers, and on what terms.

Every write bumps the provider generation through `providers.increment_generation`
(compare-and-swap against the generation the caller read) before changing any
row, so two writers cannot both succeed from the same view: the second waits
on the provider row lock and then fails the swap. As upstream, an inventory may be
shrunk below what is already allocated (the provider is then over capacity and
takes no new allocations), but a resource class that has allocations cannot
be removed.

Errors carry upstream's exception texts; handlers add the per-operation
wording that upstream's handlers add.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import Conflict, Invalid, NotFound
from stowage.placement import codes
from stowage.placement import resource_classes as rcs
from stowage.placement import tables as t
from stowage.placement.providers import Provider, increment_generation
from stowage.timeutil import utcnow as _now

__all__ = ["Inventory", "MAX_INT", "NoSuchClass", "NoInventory", "InventoryInUse",
           "check_class_names", "from_request", "list_inventories", "get_inventory",
           "check_capacity", "replace_inventories", "add_inventory", "update_inventory",
           "delete_inventory"]

# The largest value an inventory integer column holds on every backend.
MAX_INT = 2147483647
DEFAULTS: dict[str, Any] = {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT,
                            "step_size": 1, "allocation_ratio": 1.0}
_CLASS_NAME = re.compile(r"^[A-Z0-9_]+\Z")
FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")

_INV = t.inventories
_RC = t.resource_classes
_ALLOC = t.allocations


class NoSuchClass(NotFound):
    """The named resource class does not exist."""


class NoInventory(NotFound):
    """The provider has no inventory of the named (existing) class."""


class InventoryInUse(Conflict):
    """Removing the inventory would orphan allocations against it."""


@dataclass(frozen=True)
class Inventory:
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None

    @property
    def capacity(self) -> int:
        """What allocations may consume: (total - reserved) * allocation_ratio."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}


def check_class_names(names: Iterable[str]) -> None:
    """Raise NoSuchClass for a key that cannot be a class name.

    The PUT schemas (as upstream's) check only the records of keys that look
    like class names, so `{"bad-class": []}` reaches here unchecked.
    """
    for name in names:
        if not _CLASS_NAME.match(name):
            raise NoSuchClass(f"No such resource class {name}.")


def from_request(resource_class: str, data: Mapping[str, Any]) -> Inventory:
    """An inventory from (schema-validated) request fields, upstream defaults filled in."""
    merged = {**DEFAULTS, **{k: v for k, v in data.items() if k in FIELDS}}
    return Inventory(resource_class=resource_class, **merged)


def _select() -> sa.Select[tuple[object, ...]]:
    # SELECT rc.name AS resource_class, i.total, ..., i.created_at, i.updated_at
    # FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
    columns = [_INV.c[f.name] for f in fields(Inventory) if f.name != "resource_class"]
    return (sa.select(_RC.c.name.label("resource_class"), *columns)
            .select_from(_INV.join(_RC, _RC.c.id == _INV.c.resource_class_id))
            .order_by(_INV.c.resource_class_id))


def list_inventories(conn: Connection, provider_id: int) -> list[Inventory]:
    rows = conn.execute(_select().where(_INV.c.resource_provider_id == provider_id))
    return [Inventory(**row._asdict()) for row in rows]


def get_inventory(conn: Connection, provider_id: int, resource_class: str) -> Inventory | None:
    row = conn.execute(_select().where(_INV.c.resource_provider_id == provider_id,
                                       _RC.c.name == resource_class)).first()
    return Inventory(**row._asdict()) if row is not None else None


def check_capacity(provider_uuid: str, inventories: Iterable[Inventory],
                   reserved_can_be_total: bool) -> None:
    """Reject reserved >= total (or > total from microversion 1.26)."""
    for inv in inventories:
        if inv.capacity < 0 or (inv.capacity == 0 and not reserved_can_be_total):
            relation = "greater than" if reserved_can_be_total else "greater than or equal to"
            raise Invalid(f"Invalid inventory for '{inv.resource_class}' on resource provider "
                          f"'{provider_uuid}'. The reserved value is {relation} total.")


def _class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    wanted = set(names)
    found = rcs.ids_by_name(conn, wanted)
    for name in sorted(wanted - set(found)):
        raise NoSuchClass(f"No such resource class {name}.")
    return found


def _ensure_unused(conn: Connection, provider: Provider, class_ids: Iterable[int]) -> None:
    # SELECT DISTINCT rc.name FROM allocations a JOIN resource_classes rc ON ...
    # WHERE a.resource_provider_id = :rp AND a.resource_class_id IN (:ids) ORDER BY rc.id
    ids = sorted(set(class_ids))
    if not ids:
        return
    used = list(conn.execute(
        sa.select(_RC.c.name).select_from(_ALLOC.join(_RC, _RC.c.id == _ALLOC.c.resource_class_id))
        .where(_ALLOC.c.resource_provider_id == provider.id,
               _ALLOC.c.resource_class_id.in_(ids))
        .group_by(_RC.c.id, _RC.c.name).order_by(_RC.c.id)).scalars())
    if used:
        raise InventoryInUse(f"Inventory for '{', '.join(used)}' on resource provider "
                             f"'{provider.uuid}' in use.", codes.INVENTORY_INUSE)


def _insert(conn: Connection, provider_id: int, class_id: int, inv: Inventory) -> None:
    conn.execute(_INV.insert().values(resource_provider_id=provider_id,
                                      resource_class_id=class_id, created_at=_now(),
                                      **inv.values()))


def _update(conn: Connection, provider_id: int, class_id: int, inv: Inventory) -> int:
    result = conn.execute(_INV.update().where(_INV.c.resource_provider_id == provider_id,
                                              _INV.c.resource_class_id == class_id)
                          .values(updated_at=_now(), **inv.values()))
    return int(result.rowcount)


def replace_inventories(conn: Connection, provider: Provider,
                        inventories: Mapping[str, Mapping[str, Any]], *,
                        check_usage: bool = True) -> int:
    """Make the provider's inventory exactly `inventories` (class -> fields); new generation.

    Raises NoSuchClass for an unknown class, InventoryInUse when a removed class
    has allocations (unless `check_usage` is off: the reshaper moves allocations
    in the same transaction and checks capacity at the end), and Conflict when
    the provider generation moved since `provider` was read.
    """
    wanted = {rc: from_request(rc, data) for rc, data in inventories.items()}
    ids = _class_ids(conn, wanted)
    # Bump first: the row lock it takes makes concurrent writers of this provider
    # wait here and then fail the compare-and-swap, before they touch any row.
    generation = increment_generation(conn, provider.id, provider.generation)
    existing = set(conn.execute(sa.select(_INV.c.resource_class_id)
                                .where(_INV.c.resource_provider_id == provider.id)).scalars())
    to_delete = existing - set(ids.values())
    if check_usage:
        _ensure_unused(conn, provider, to_delete)
    if to_delete:
        conn.execute(_INV.delete().where(_INV.c.resource_provider_id == provider.id,
                                         _INV.c.resource_class_id.in_(sorted(to_delete))))
    for name, inv in wanted.items():
        if ids[name] in existing:
            _update(conn, provider.id, ids[name], inv)
        else:
            _insert(conn, provider.id, ids[name], inv)
    return generation


def add_inventory(conn: Connection, provider: Provider, inv: Inventory) -> int:
    """Add one class the provider does not have yet; returns the new generation."""
    class_id = _class_ids(conn, [inv.resource_class])[inv.resource_class]
    generation = increment_generation(conn, provider.id, provider.generation)
    present = conn.execute(sa.select(_INV.c.id).where(_INV.c.resource_provider_id == provider.id,
                                                      _INV.c.resource_class_id == class_id)).first()
    if present is not None:
        raise Conflict(f"Inventory for '{inv.resource_class}' on resource provider "
                       f"'{provider.uuid}' already exists.", codes.CONCURRENT_UPDATE)
    _insert(conn, provider.id, class_id, inv)
    return generation


def update_inventory(conn: Connection, provider: Provider, inv: Inventory) -> int:
    """Change one existing class (over-capacity is allowed); returns the new generation."""
    class_id = _class_ids(conn, [inv.resource_class])[inv.resource_class]
    generation = increment_generation(conn, provider.id, provider.generation)
    if not _update(conn, provider.id, class_id, inv):
        raise NoInventory(f"No inventory of class {inv.resource_class} found.")
    return generation


def delete_inventory(conn: Connection, provider: Provider, resource_class: str) -> int:
    """Remove one class that has no allocations; returns the new generation."""
    class_id = _class_ids(conn, [resource_class])[resource_class]
    generation = increment_generation(conn, provider.id, provider.generation)
    _ensure_unused(conn, provider, [class_id])
    result = conn.execute(_INV.delete().where(_INV.c.resource_provider_id == provider.id,
                                              _INV.c.resource_class_id == class_id))
    if not result.rowcount:
        raise NoInventory(f"No inventory of class {resource_class} found for delete")
    return generation
