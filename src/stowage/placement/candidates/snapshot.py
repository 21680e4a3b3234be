"""What the candidate engine needs from the database, loaded in a few set-based queries.

The engine never touches the database: it works over a `Snapshot` of plain
Python values. Loading is restricted to the provider trees that can take part
in an answer: trees holding inventory of a requested resource class, and the
trees reachable from a sharing provider through an aggregate (those may anchor
a candidate whose resources all come from the sharing provider).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import tables as t
from stowage.placement.candidates.versions import Lineage, fresh_version, fresh_versions

__all__ = ["Inventory", "Provider", "Snapshot", "load", "load_providers", "SHARING_TRAIT"]

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# Above this many relevant trees, loading everything beats a huge IN list.
_MAX_ROOTS_IN_CLAUSE = 2000


@dataclass(slots=True)
class Inventory:
    capacity: int
    used: int
    min_unit: int
    max_unit: int
    step_size: int
    # Capacity before rounding, as upstream compares it in SQL.
    exact_capacity: float = 0.0

    def fits(self, amount: int) -> bool:
        """Could a single allocation of `amount` be claimed on top of current usage?"""
        return (self.used + amount <= self.exact_capacity and self.min_unit <= amount
                <= self.max_unit and amount % self.step_size == 0)


@dataclass(slots=True)
class Provider:
    id: int
    uuid: str
    parent_id: int | None
    root_id: int
    inventories: dict[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


@dataclass
class Snapshot:
    providers: dict[int, Provider] = field(default_factory=dict)
    # Resource class and trait names of the request that exist in the database.
    known_classes: set[str] = field(default_factory=set)
    known_traits: set[str] = field(default_factory=set)
    # Trait name -> id: upstream lists a provider's traits in id order.
    trait_ids: dict[str, int] = field(default_factory=dict)
    # Root -> version of its tree, and the publish this snapshot is (versions.py).
    # A snapshot built from scratch starts a lineage of its own with fresh versions.
    versions: dict[int, int] = field(default_factory=dict)
    lineage: Lineage | None = None
    seq: int = 0

    def __post_init__(self) -> None:
        self.reindex()
        if self.lineage is None:
            self.lineage = Lineage()
            self.versions = fresh_versions(self.trees)

    def with_changes(self, updated: Mapping[int, Provider], removed: Iterable[int] = (),
                     trait_ids: Mapping[str, int] | None = None) -> Snapshot:
        """The successor snapshot, with new versions for exactly the trees that changed.

        A provider equal in value to the one it replaces keeps the old object
        and its tree's version (a replayed change-log entry is common), so
        memoized work on that tree stays valid. `self` is left untouched:
        requests still using it are unaffected.
        """
        providers = dict(self.providers)
        touched: set[int] = set()
        for pid in removed:
            old = providers.pop(pid, None)
            if old is not None:
                touched.add(old.root_id)
        for pid, new in updated.items():
            old = providers.get(pid)
            if old is not None and old == new:
                continue
            providers[pid] = new
            touched.add(new.root_id)
            if old is not None:
                touched.add(old.root_id)
        versions = dict(self.versions)
        for root in touched:
            versions[root] = fresh_version()
        assert self.lineage is not None
        seq = self.lineage.record(touched) if touched else self.seq
        return Snapshot(providers, set(), set(), {**self.trait_ids, **(trait_ids or {})},
                        versions, self.lineage, seq)

    def reindex(self) -> None:
        """Derive the lookup tables; call after changing `providers`."""
        self.by_uuid = {p.uuid: p.id for p in self.providers.values()}
        self.has_trees = any(p.parent_id is not None for p in self.providers.values())
        self.sharing = {p.id for p in self.providers.values() if SHARING_TRAIT in p.traits}
        self.agg_members: dict[str, set[int]] = {}
        for p in self.providers.values():
            for agg in p.aggregates:
                self.agg_members.setdefault(agg, set()).add(p.id)
        self.by_class: dict[str, list[Provider]] = {}
        for p in self.providers.values():
            for rc in p.inventories:
                self.by_class.setdefault(rc, []).append(p)
        self.trees: dict[int, list[int]] = {}
        for p in self.providers.values():
            self.trees.setdefault(p.root_id, []).append(p.id)
        # The structural index (index.py), built on first use and shared by the
        # shallow copies that requests get: a box, so a copy's fill is seen by all.
        self.index_box: list[Any] = [None]

    def in_aggregates(self, any_of: Iterable[str]) -> set[int]:
        out: set[int] = set()
        for agg in any_of:
            out |= self.agg_members.get(agg, set())
        return out

    def anchors(self, sharing_id: int) -> set[int]:
        """Roots of every tree with a provider in an aggregate of the sharing provider."""
        roots = {self.providers[sharing_id].root_id}
        for agg in self.providers[sharing_id].aggregates:
            roots |= {self.providers[m].root_id for m in self.agg_members[agg]}
        return roots


_RP, _INV, _ALLOC = t.resource_providers, t.inventories, t.allocations
_RC, _TR, _RPT = t.resource_classes, t.traits, t.provider_traits
_AGG, _RPA = t.aggregates, t.provider_aggregates


def _relevant_roots(conn: Connection, classes: set[str]) -> set[int] | None:
    """Roots of trees that can contribute; None means 'all' (too many to list)."""
    # SELECT DISTINCT rp.root_provider_id FROM inventories inv
    #   JOIN resource_providers rp ON rp.id = inv.resource_provider_id
    #   JOIN resource_classes rc ON rc.id = inv.resource_class_id
    # WHERE rc.name IN (:classes)
    with_inventory = (sa.select(_RP.c.root_provider_id).distinct()
                      .select_from(_INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id)
                                   .join(_RC, _RC.c.id == _INV.c.resource_class_id))
                      .where(_RC.c.name.in_(sorted(classes))))
    roots = {r for (r,) in conn.execute(with_inventory)}
    # Sharing providers and every tree they share with:
    # SELECT DISTINCT peer.root_provider_id FROM resource_provider_traits rpt
    #   JOIN traits ON traits.id = rpt.trait_id AND traits.name = 'MISC_SHARES_VIA_AGGREGATE'
    #   JOIN resource_provider_aggregates a1 ON a1.resource_provider_id = rpt.resource_provider_id
    #   JOIN resource_provider_aggregates a2 ON a2.aggregate_id = a1.aggregate_id
    #   JOIN resource_providers peer ON peer.id = a2.resource_provider_id
    a1, a2, peer, me = _RPA.alias("a1"), _RPA.alias("a2"), _RP.alias("peer"), _RP.alias("me")
    sharing = (_RPT.join(_TR, sa.and_(_TR.c.id == _RPT.c.trait_id,
                                      _TR.c.name == SHARING_TRAIT)))
    peers = (sa.select(peer.c.root_provider_id).distinct().select_from(
        sharing.join(a1, a1.c.resource_provider_id == _RPT.c.resource_provider_id)
        .join(a2, a2.c.aggregate_id == a1.c.aggregate_id)
        .join(peer, peer.c.id == a2.c.resource_provider_id)))
    selves = sa.select(me.c.root_provider_id).distinct().select_from(
        sharing.join(me, me.c.id == _RPT.c.resource_provider_id))
    roots |= {r for (r,) in conn.execute(peers)}
    roots |= {r for (r,) in conn.execute(selves)}
    return None if len(roots) > _MAX_ROOTS_IN_CLAUSE else roots


def _in_trees(query: sa.Select[tuple[object, ...]], roots: set[int] | None,
              rp: sa.Table = _RP, ids: set[int] | None = None) -> sa.Select[tuple[object, ...]]:
    """Restrict to the trees of `roots`, or to the providers `ids`; None means all."""
    if ids is not None:
        return query.where(rp.c.id.in_(sorted(ids)))
    if roots is None:
        return query
    return query.where(rp.c.root_provider_id.in_(sorted(roots)))


def _load_inventories(conn: Connection, providers: dict[int, Provider],
                      roots: set[int] | None, ids: set[int] | None = None) -> None:
    # SELECT a.resource_provider_id, a.resource_class_id, SUM(a.used)
    # FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
    # WHERE rp.root_provider_id IN (:roots) GROUP BY 1, 2
    usage_q = _in_trees(
        sa.select(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id,
                  sa.func.sum(_ALLOC.c.used))
        .select_from(_ALLOC.join(_RP, _RP.c.id == _ALLOC.c.resource_provider_id)), roots,
        ids=ids)
    usage_q = usage_q.group_by(_ALLOC.c.resource_provider_id, _ALLOC.c.resource_class_id)
    usage = {(rp, rc): int(used or 0) for rp, rc, used in conn.execute(usage_q)}
    inv_q = _in_trees(
        sa.select(_INV.c.resource_provider_id, _INV.c.resource_class_id, _RC.c.name,
                  _INV.c.total, _INV.c.reserved, _INV.c.allocation_ratio, _INV.c.min_unit,
                  _INV.c.max_unit, _INV.c.step_size)
        .select_from(_INV.join(_RP, _RP.c.id == _INV.c.resource_provider_id)
                     .join(_RC, _RC.c.id == _INV.c.resource_class_id)), roots, ids=ids)
    for row in conn.execute(inv_q):
        exact = (row.total - row.reserved) * row.allocation_ratio
        providers[row.resource_provider_id].inventories[row.name] = Inventory(
            capacity=int(exact), used=usage.get((row.resource_provider_id,
                                                 row.resource_class_id), 0),
            min_unit=row.min_unit, max_unit=row.max_unit, step_size=row.step_size or 1,
            exact_capacity=exact)


def _load_labels(conn: Connection, providers: dict[int, Provider],
                 roots: set[int] | None, ids: set[int] | None = None) -> dict[str, int]:
    """Traits (names) and aggregates (uuids) of each provider; returns trait ids."""
    traits: dict[int, set[str]] = {}
    trait_ids: dict[str, int] = {}
    trait_q = _in_trees(sa.select(_RPT.c.resource_provider_id, _TR.c.name, _TR.c.id)
                        .select_from(_RPT.join(_TR, _TR.c.id == _RPT.c.trait_id)
                                     .join(_RP, _RP.c.id == _RPT.c.resource_provider_id)),
                        roots, ids=ids)
    for rp_id, name, trait_id in conn.execute(trait_q):
        traits.setdefault(rp_id, set()).add(name)
        trait_ids[name] = trait_id
    aggs: dict[int, set[str]] = {}
    agg_q = _in_trees(sa.select(_RPA.c.resource_provider_id, _AGG.c.uuid).select_from(
        _RPA.join(_AGG, _AGG.c.id == _RPA.c.aggregate_id)
        .join(_RP, _RP.c.id == _RPA.c.resource_provider_id)), roots, ids=ids)
    for rp_id, agg in conn.execute(agg_q):
        aggs.setdefault(rp_id, set()).add(agg)
    for rp_id, names in traits.items():
        providers[rp_id].traits = frozenset(names)
    for rp_id, uuids in aggs.items():
        providers[rp_id].aggregates = frozenset(uuids)
    return trait_ids


def _known(conn: Connection, table: sa.Table, names: set[str]) -> set[str]:
    if not names:
        return set()
    return set(conn.execute(sa.select(table.c.name).where(table.c.name.in_(sorted(names))))
               .scalars())


def load(conn: Connection, classes: set[str], traits: set[str],
         everything: bool = False) -> Snapshot:
    """Snapshot of the trees relevant to a request for `classes` (all trees if `everything`).

    `traits` are the trait names the request mentions; the snapshot records
    which of them (and of `classes`) exist, for upstream's "no such" errors.
    """
    roots = None if everything else _relevant_roots(conn, classes)
    providers: dict[int, Provider] = {}
    trait_ids: dict[str, int] = {}
    if roots is None or roots:
        prov_q = _in_trees(sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
                                     _RP.c.root_provider_id), roots)
        for rp_id, uuid, parent_id, root_id in conn.execute(prov_q):
            providers[rp_id] = Provider(rp_id, uuid, parent_id, root_id or rp_id)
        _load_inventories(conn, providers, roots)
        trait_ids = _load_labels(conn, providers, roots)
    return Snapshot(providers, _known(conn, _RC, classes), _known(conn, _TR, traits),
                    trait_ids)


def load_providers(conn: Connection, ids: set[int] | None) -> tuple[dict[int, Provider],
                                                                   dict[str, int]]:
    """Current state of the providers `ids` (all when None), and their traits' ids.

    Providers that no longer exist are simply absent from the result.
    """
    prov_q = _in_trees(sa.select(_RP.c.id, _RP.c.uuid, _RP.c.parent_provider_id,
                                 _RP.c.root_provider_id), None, ids=ids)
    providers = {rp_id: Provider(rp_id, uuid, parent_id, root_id or rp_id)
                 for rp_id, uuid, parent_id, root_id in conn.execute(prov_q)}
    if not providers:
        return providers, {}
    _load_inventories(conn, providers, None, ids=ids)
    return providers, _load_labels(conn, providers, None, ids=ids)
