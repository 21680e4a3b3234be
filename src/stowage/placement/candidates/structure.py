"""The lookup tables of a snapshot that do not depend on usage, shared while they hold.

A claim changes nothing about a provider but its usage. The tables derived
from everything else (uuids, trees, which providers have which class, trait
or aggregate, the sharing providers) are therefore the same object in a
snapshot and its successor, and so is the structural index built lazily over
them (index.py): a request after a claim finds its anchors, pools and trees
already computed.

When a change does touch the structure (a new or deleted provider, an
inventory of a new class, an aggregate, the sharing trait, a move in the
tree), the successor's tables are
built copy-on-write: each mapping is copied at C speed, and only the entries
of the changed providers are recomputed. The predecessor's tables are never
modified, so requests still using the older snapshot are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stowage.placement.candidates.snapshot import Provider

__all__ = ["Structure", "SHARING_TRAIT", "same_shape"]

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
_NONE: frozenset[Any] = frozenset()


@dataclass(slots=True)
class Structure:
    """Read-only once built: successors copy what they change."""

    by_uuid: dict[str, int] = field(default_factory=dict)
    # Root -> the ids of its tree, ascending.
    trees: dict[int, list[int]] = field(default_factory=dict)
    # Class / aggregate -> providers with an inventory of it / in it.
    by_class: dict[str, frozenset[int]] = field(default_factory=dict)
    agg_members: dict[str, frozenset[int]] = field(default_factory=dict)
    sharing: frozenset[int] = frozenset()
    non_roots: int = 0
    # The structural index (index.py), built on first use by whichever
    # snapshot of this structure asks first.
    index_box: list[Any] = field(default_factory=lambda: [None])

    @classmethod
    def build(cls, providers: Mapping[int, Provider]) -> Structure:
        """From scratch: one pass over every provider."""
        by_class: dict[str, set[int]] = {}
        aggs: dict[str, set[int]] = {}
        trees: dict[int, list[int]] = {}
        for p in providers.values():
            for rc in p.inventories:
                by_class.setdefault(rc, set()).add(p.id)
            for agg in p.aggregates:
                aggs.setdefault(agg, set()).add(p.id)
            trees.setdefault(p.root_id, []).append(p.id)
        for ids in trees.values():
            ids.sort()
        # Equal member sets are one object: in a cloud of alike hosts every class
        # and the one aggregate hold every provider (4 MB a set at 100,000).
        alike: dict[frozenset[int], frozenset[int]] = {}

        def frozen(ids: set[int]) -> frozenset[int]:
            found = frozenset(ids)
            return alike.setdefault(found, found)

        return cls({p.uuid: p.id for p in providers.values()}, trees,
                   {rc: frozen(ids) for rc, ids in by_class.items()},
                   {agg: frozen(ids) for agg, ids in aggs.items()},
                   frozenset(p.id for p in providers.values() if SHARING_TRAIT in p.traits),
                   sum(p.parent_id is not None for p in providers.values()))

    def updated(self, changes: Mapping[int, tuple[Provider | None, Provider | None]]
                ) -> Structure:
        """The successor's tables; `changes` maps an id to its (old, new) provider.

        None stands for "absent": a new provider has no old one, a deleted
        one no new one.
        """
        olds = [old for old, _ in changes.values() if old is not None]
        news = [new for _, new in changes.values() if new is not None]
        by_uuid = self.by_uuid
        # An id can come back with another uuid (SQLite reuses the ids of a
        # table emptied without AUTOINCREMENT), so compare uuids, not presence.
        if any(old is None or new is None or old.uuid != new.uuid
               for old, new in changes.values()):
            by_uuid = dict(by_uuid)
            for old in olds:
                by_uuid.pop(old.uuid, None)
            for new in news:
                by_uuid[new.uuid] = new.id
        return Structure(
            by_uuid, self._trees(changes),
            _members(self.by_class, changes, lambda p: p.inventories.keys()),
            _members(self.agg_members, changes, lambda p: p.aggregates),
            _sharing(self.sharing, changes),
            self.non_roots + sum(p.parent_id is not None for p in news)
            - sum(p.parent_id is not None for p in olds))

    def _trees(self, changes: Mapping[int, tuple[Provider | None, Provider | None]]
               ) -> dict[int, list[int]]:
        moved = [(old, new) for old, new in changes.values()
                 if old is None or new is None or old.root_id != new.root_id]
        if not moved:
            return self.trees  # same members everywhere
        trees = dict(self.trees)
        members = {root: set(trees.get(root, ())) for root in
                   {p.root_id for pair in moved for p in pair if p is not None}}
        for old, new in moved:
            if old is not None:
                members[old.root_id].discard(old.id)
            if new is not None:
                members[new.root_id].add(new.id)
        for root, ids in members.items():
            if ids:
                trees[root] = sorted(ids)
            else:
                trees.pop(root, None)
        return trees


def same_shape(a: Provider, b: Provider) -> bool:
    """Would `a` and `b` give the same tables? (Usage, amounts and most traits do not count.)"""
    return (a.uuid == b.uuid and a.parent_id == b.parent_id and a.root_id == b.root_id
            and a.aggregates == b.aggregates and a.inventories.keys() == b.inventories.keys()
            and (SHARING_TRAIT in a.traits) == (SHARING_TRAIT in b.traits))


def _members(table: dict[str, frozenset[int]],
             changes: Mapping[int, tuple[Provider | None, Provider | None]],
             keys: Callable[[Provider], Iterable[str]]) -> dict[str, frozenset[int]]:
    """`table` (name -> member ids) with the changed providers' memberships redone."""
    gone: dict[str, set[int]] = {}
    added: dict[str, set[int]] = {}
    for pid, (old, new) in changes.items():
        before = set(keys(old)) if old is not None else set()
        after = set(keys(new)) if new is not None else set()
        for name in before - after:
            gone.setdefault(name, set()).add(pid)
        for name in after - before:
            added.setdefault(name, set()).add(pid)
    if not gone and not added:
        return table
    out = dict(table)
    for name in gone.keys() | added.keys():
        ids = (out.get(name, _NONE) - gone.get(name, _NONE)) | added.get(name, _NONE)
        if ids:
            out[name] = ids
        else:
            out.pop(name, None)
    return out


def _sharing(sharing: frozenset[int],
             changes: Mapping[int, tuple[Provider | None, Provider | None]]) -> frozenset[int]:
    now = {pid for pid, (_, new) in changes.items()
           if new is not None and SHARING_TRAIT in new.traits}
    if (now <= sharing) and not (changes.keys() - now) & sharing:
        return sharing
    return (sharing - changes.keys()) | now
