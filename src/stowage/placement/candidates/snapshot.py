"""The plain Python values the candidate engine works over: providers and a snapshot.

The engine never touches the database: it works over a `Snapshot` of every
provider (loading.py fills one, cache.py keeps one per worker current).
A snapshot is never modified once published; a change makes a successor
that shares what did not change (see `Snapshot.with_changes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from stowage.placement.candidates.structure import SHARING_TRAIT, Structure, same_shape
from stowage.placement.candidates.versions import Lineage, fresh_version, fresh_versions

__all__ = ["Inventory", "Provider", "Snapshot", "SHARING_TRAIT"]

_NO_IDS: frozenset[int] = frozenset()


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
    # The usage-independent lookup tables (structure.py); built when not given.
    structure: Structure | None = None

    def __post_init__(self) -> None:
        if self.structure is None:
            self.structure = Structure.build(self.providers)
        self._adopt(self.structure)
        if self.lineage is None:
            self.lineage = Lineage()
            self.versions = fresh_versions(self.trees)

    def _adopt(self, s: Structure) -> None:
        """Plain attributes for the tables: the engine reads them in its inner loops."""
        self.by_uuid = s.by_uuid
        self.trees = s.trees
        self.by_class = s.by_class
        self.agg_members = s.agg_members
        self.sharing = s.sharing
        self.has_trees = s.non_roots > 0
        # Shared by every snapshot of this structure and by the shallow copies
        # requests get: a box, so a fill by one is seen by all (index.py).
        self.index_box = s.index_box

    def with_changes(self, updated: Mapping[int, Provider], removed: Iterable[int] = (),
                     trait_ids: Mapping[str, int] | None = None, *,
                     in_place: bool = False) -> Snapshot:
        """The successor snapshot, with new versions for exactly the trees that changed.

        A provider equal in value to the one it replaces keeps the old object
        and its tree's version (a replayed change-log entry is common), so
        memoized work on that tree stays valid. The structural tables are
        shared unless a provider changed shape (structure.py).

        The provider mapping and the versions are copied, so that `self` is
        left untouched for requests still using it: at 70,000 providers that
        copy is milliseconds. `in_place` skips it and updates them in place,
        for a caller who knows nobody uses `self` any more (cache.py); `self`
        must then be dropped.
        """
        providers = self.providers
        shape: dict[int, tuple[Provider | None, Provider | None]] = {}
        touched: set[int] = set()
        for pid in removed:
            old = providers.get(pid)
            if old is not None:
                shape[pid] = (old, None)
                touched.add(old.root_id)
        swapped: dict[int, Provider] = {}
        for pid, new in updated.items():
            old = providers.get(pid)
            if old is not None and old == new:
                continue
            swapped[pid] = new
            touched.add(new.root_id)
            if old is None or not same_shape(old, new):
                shape[pid] = (old, new)
            if old is not None:
                touched.add(old.root_id)
        names = self.trait_ids
        if trait_ids and any(names.get(k) != v for k, v in trait_ids.items()):
            names = {**names, **trait_ids}
        if not touched:
            return Snapshot(providers, set(), set(), names, self.versions, self.lineage,
                            self.seq, self.structure)
        if not in_place:
            providers = dict(providers)
        for pid, (_, now) in shape.items():
            if now is None:
                del providers[pid]
        providers.update(swapped)
        versions = self.versions if in_place else dict(self.versions)
        for root in touched:
            versions[root] = fresh_version()
        assert self.lineage is not None and self.structure is not None
        structure = self.structure.updated(shape) if shape else self.structure
        return Snapshot(providers, set(), set(), names, versions, self.lineage,
                        self.lineage.record(touched), structure)

    def reindex(self) -> None:
        """Rebuild the lookup tables from scratch; call after changing `providers` in place."""
        self.structure = Structure.build(self.providers)
        self._adopt(self.structure)

    def in_aggregates(self, any_of: Iterable[str]) -> frozenset[int]:
        """Providers in any of the aggregates `any_of` (shared, do not modify)."""
        found = [self.agg_members.get(agg, _NO_IDS) for agg in any_of]
        if len(found) == 1:
            return found[0]
        return _NO_IDS.union(*found)

    def anchors(self, sharing_id: int) -> set[int]:
        """Roots of every tree with a provider in an aggregate of the sharing provider."""
        roots = {self.providers[sharing_id].root_id}
        for agg in self.providers[sharing_id].aggregates:
            roots |= {self.providers[m].root_id for m in self.agg_members[agg]}
        return roots
