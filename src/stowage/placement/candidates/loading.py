"""What the candidate engine needs from the database, in a few set-based statements.

These run on every request that follows a write (the worker's snapshot
replays the change log, cache.py), so they are hand-written SQL run straight
on the driver (`stowage.db.statements.Sql`): building the equivalent Core
statements cost more than the database spent answering them. Each comes in
two forms, for some providers (`IN :ids`) and for all of them (a full reload).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import os_resource_classes as orc
import os_traits
from sqlalchemy.engine import Connection

from stowage.db.statements import Sql
from stowage.placement.candidates.interning import Pool
from stowage.placement.candidates.snapshot import Inventory, Provider

__all__ = ["load_providers", "load_usage", "with_usage", "with_totals", "known_names"]


def _pair(select: str, column: str, group_by: str = "") -> tuple[Sql, Sql]:
    """The statement for the providers `:ids` (by `column`), and for every provider."""
    return (Sql(f"{select} WHERE {column} IN :ids {group_by}"), Sql(f"{select} {group_by}"))


_PROVIDERS = _pair("SELECT id, uuid, parent_provider_id, root_provider_id "
                   "FROM resource_providers", "id")
# Usage per provider and class. (SUM is a DECIMAL on MySQL, hence int().)
_USAGE = _pair("SELECT a.resource_provider_id, rc.name, SUM(a.used) FROM allocations a "
               "JOIN resource_classes rc ON rc.id = a.resource_class_id",
               "a.resource_provider_id", "GROUP BY a.resource_provider_id, rc.name")
_INVENTORIES = _pair("SELECT i.resource_provider_id, rc.name, i.total, i.reserved, "
                     "i.allocation_ratio, i.min_unit, i.max_unit, i.step_size "
                     "FROM inventories i JOIN resource_classes rc "
                     "ON rc.id = i.resource_class_id", "i.resource_provider_id")
_TRAITS = _pair("SELECT rpt.resource_provider_id, t.name, t.id "
                "FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id",
                "rpt.resource_provider_id")
_AGGREGATES = _pair("SELECT rpa.resource_provider_id, a.uuid "
                    "FROM resource_provider_aggregates rpa "
                    "JOIN placement_aggregates a ON a.id = rpa.aggregate_id",
                    "rpa.resource_provider_id")
# Which of a request's names that are not standard exist (0: class, 1: trait).
# Standard classes and traits are synced into the database by every schema
# upgrade (db/schema.py) and cannot be deleted or renamed, so they need no look-up.
_KNOWN = Sql("SELECT 0, name FROM resource_classes WHERE name IN :classes "
             "UNION ALL SELECT 1, name FROM traits WHERE name IN :traits")
_STANDARD_CLASSES = frozenset(orc.STANDARDS)
_STANDARD_TRAITS = frozenset(os_traits.get_traits())


def _rows(pair: tuple[Sql, Sql], conn: Connection, ids: set[int] | None) -> Iterator[Any]:
    """The rows for `ids` (every provider when None), streamed from the driver."""
    if ids is None:
        return pair[1].stream(conn)
    return pair[0].stream(conn, ids=sorted(ids))


def known_names(conn: Connection, classes: set[str],
                traits: set[str]) -> tuple[set[str], set[str]]:
    """Which of `classes` and `traits` exist, with at most one statement."""
    known_classes, known_traits = classes & _STANDARD_CLASSES, traits & _STANDARD_TRAITS
    odd_classes, odd_traits = classes - known_classes, traits - known_traits
    if odd_classes or odd_traits:
        for kind, name in _KNOWN.rows(conn, classes=sorted(odd_classes),
                                      traits=sorted(odd_traits)):
            (known_traits if kind else known_classes).add(name)
    return known_classes, known_traits


def load_usage(conn: Connection, ids: set[int] | None) -> dict[int, dict[str, int]]:
    """Provider id -> class -> what its allocations add up to (absent: nothing)."""
    usage: dict[int, dict[str, int]] = {}
    for rp_id, name, used in _rows(_USAGE, conn, ids):
        usage.setdefault(int(rp_id), {})[str(name)] = int(used or 0)
    return usage


def load_providers(conn: Connection, ids: set[int] | None) -> tuple[dict[int, Provider],
                                                                   dict[str, int]]:
    """Current state of the providers `ids` (all when None), and their traits' ids.

    Providers that no longer exist are simply absent from the result. Equal
    names, name sets and inventories are one object each (interning.py).
    """
    pool = Pool()
    providers: dict[int, Provider] = {}
    for rp_id, uuid, parent_id, root_id in _rows(_PROVIDERS, conn, ids):
        # The root's own id object when it is its own root: one int, not two.
        providers[rp_id] = Provider(rp_id, uuid, parent_id,
                                    rp_id if root_id is None or root_id == rp_id else root_id)
    if not providers:
        return providers, {}
    _load_inventories(conn, ids, providers, pool)
    trait_ids: dict[str, int] = {}
    traits: dict[int, list[str]] = {}
    for rp_id, name, trait_id in _rows(_TRAITS, conn, ids):
        name = pool.name(name)
        traits.setdefault(rp_id, []).append(name)
        trait_ids[name] = trait_id
    aggs: dict[int, list[str]] = {}
    for rp_id, agg in _rows(_AGGREGATES, conn, ids):
        aggs.setdefault(rp_id, []).append(pool.name(agg))
    for rp_id, names in traits.items():
        providers[rp_id].traits = pool.names(names)
    for rp_id, uuids in aggs.items():
        providers[rp_id].aggregates = pool.names(uuids)
    return providers, trait_ids


def _load_inventories(conn: Connection, ids: set[int] | None,
                      providers: dict[int, Provider], pool: Pool) -> None:
    """Fill the providers' inventories, with their current usage, from pooled objects."""
    usage = load_usage(conn, ids)
    no_usage: dict[str, int] = {}
    invs: dict[int, dict[str, Inventory]] = {}
    for rp_id, name, total, reserved, ratio, min_unit, max_unit, step in _rows(
            _INVENTORIES, conn, ids):
        name = pool.name(name)
        inv = pool.inventory((total - reserved) * ratio,
                             usage.get(rp_id, no_usage).get(name, 0),
                             min_unit, max_unit, step or 1)
        mine = invs.get(rp_id)
        if mine is None:
            invs[rp_id] = {name: inv}
        else:
            mine[name] = inv
    for rp_id, mine in invs.items():
        provider = providers.get(rp_id)
        if provider is not None:
            provider.inventories = pool.inventories(mine)


def with_usage(providers: Mapping[int, Provider], ids: Iterable[int],
               usage: Mapping[int, dict[str, int]]) -> dict[int, Provider]:
    """Copies of the providers `ids` with their usage replaced (ids not in `providers`: skipped).

    Everything else about a provider is shared with the original: a claim
    changes usage only, and the inventories' other figures come along as they
    were.
    """
    out: dict[int, Provider] = {}
    for pid in ids:
        old = providers.get(pid)
        if old is None:
            continue
        used = usage.get(pid, {})
        out[pid] = Provider(pid, old.uuid, old.parent_id, old.root_id,
                            {rc: Inventory(i.capacity, used.get(rc, 0), i.min_unit, i.max_unit,
                                           i.step_size, i.exact_capacity)
                             for rc, i in old.inventories.items()},
                            old.traits, old.aggregates)
    return out


def with_totals(providers: Mapping[int, Provider],
                usage: Mapping[int, Mapping[str, int]]) -> dict[int, Provider]:
    """Copies of the providers in `usage` with those classes' usage set (others as they were).

    For a claim's own figures (claim.py): only the classes it claimed are
    known, so every other inventory object is shared with the original.
    """
    out: dict[int, Provider] = {}
    for pid, totals in usage.items():
        old = providers.get(pid)
        if old is None:
            continue
        inventories = dict(old.inventories)
        for rc, used in totals.items():
            i = inventories.get(rc)
            if i is not None:
                inventories[rc] = Inventory(i.capacity, used, i.min_unit, i.max_unit,
                                            i.step_size, i.exact_capacity)
        out[pid] = Provider(pid, old.uuid, old.parent_id, old.root_id, inventories,
                            old.traits, old.aggregates)
    return out
