"""How one request group can be satisfied at one anchor root.

The search visits anchor roots one at a time and asks each group for its
matches there, so that a request with a `limit` stops after visiting a few
trees instead of evaluating every provider. A `GroupPlan` is the group with
its names checked and its aggregate filters resolved to provider ids once per
request; `matches_at` then only looks at the anchor's pool (its tree plus the
sharing providers sharing into it).

Semantics follow upstream Placement, including its quirks: member_of on the
unsuffixed group is satisfied by the provider or its anchor root; a
resourceless group needs a positive trait or aggregate filter.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import NamedTuple

from stowage.errors import Invalid
from stowage.placement.candidates.index import TreeIndex
from stowage.placement.candidates.query import RequestGroup
from stowage.placement.candidates.snapshot import Inventory, Provider, Snapshot

__all__ = ["Empty", "Match", "GroupPlan", "plan", "possible_anchors", "matches_at",
           "check_traits"]


class Empty(Exception):
    """No candidate can exist; upstream returns an empty 200 in this case."""


class Match(NamedTuple):
    """How one provider set satisfies one request group, anchored at a tree root.

    A named tuple rather than a frozen dataclass: thousands are made per request.
    """

    anchor: int
    resources: tuple[tuple[int, str, int], ...]  # (provider id, class, amount)
    providers: tuple[int, ...]  # what `mappings` reports for the group


@dataclass(slots=True)
class GroupPlan:
    """A request group with its names checked and its filters resolved to ids."""

    suffix: str
    granular: bool
    resources: tuple[tuple[str, int], ...]
    required: list[frozenset[str]]
    forbidden: frozenset[str]
    in_aggs: frozenset[int] | None  # None: no member_of
    bad_aggs: frozenset[int]
    tree_root: int | None


def check_traits(snap: Snapshot, names: Iterable[str]) -> None:
    for name in sorted(names):
        if name not in snap.known_traits:
            raise Invalid(f"No such trait(s): {name}.")


def _members(snap: Snapshot, member_of: list[set[str]]) -> frozenset[int]:
    """Providers in at least one aggregate of every any-of set."""
    ordered = sorted((snap.in_aggregates(aggs) for aggs in member_of), key=len)
    if len(ordered) == 1:
        return ordered[0]  # shared with the snapshot, not copied: read only
    return ordered[0].intersection(*ordered[1:])


def plan(snap: Snapshot, group: RequestGroup) -> GroupPlan:
    """Check names and resolve aggregates in upstream's order; raise Empty early."""
    for rc in group.resources:
        if rc not in snap.known_classes:
            raise Invalid("Invalid resource class in resources parameter: "
                          f"No such resource class {rc}.")
    in_aggs: frozenset[int] | None = None
    if group.member_of:
        in_aggs = _members(snap, group.member_of)
        if not in_aggs:
            raise Empty
    for traits in group.required:
        check_traits(snap, traits)
    check_traits(snap, group.forbidden)
    tree_root = None
    if group.in_tree is not None:
        if group.in_tree not in snap.by_uuid:
            raise Empty
        tree_root = snap.providers[snap.by_uuid[group.in_tree]].root_id
    return GroupPlan(group.suffix, group.use_same_provider, tuple(group.resources.items()),
                     list(group.required), frozenset(group.forbidden), in_aggs,
                     snap.in_aggregates(group.forbidden_aggs), tree_root)


def _anchors_of(snap: Snapshot, index: TreeIndex, ids: Iterable[int]) -> set[int]:
    """Roots that providers `ids` may anchor: their own, and any they share into."""
    out: set[int] = set()
    sharing = index.sharing_anchors()
    for pid in ids:
        shared = sharing.get(pid)
        if shared is not None:
            out |= shared
        else:
            out.add(snap.providers[pid].root_id)
    return out


def possible_anchors(snap: Snapshot, index: TreeIndex,
                     gp: GroupPlan) -> AbstractSet[int] | None:
    """A superset of the roots where `gp` can match; None when unrestricted.

    Aggregate members only narrow it when they are fewer than the roots the
    classes allow: mapping thousands of members to roots costs more than
    visiting the roots that the per-anchor check then rejects.
    """
    found: list[AbstractSet[int]] = []
    if gp.resources:
        found.append(index.anchors_by_classes(tuple(rc for rc, _ in gp.resources)))
    if gp.tree_root is not None:
        roots = {gp.tree_root}
        if gp.granular:  # a sharing provider of that tree anchors elsewhere too
            roots |= _anchors_of(snap, index, (p for p in index.tree(gp.tree_root)
                                               if p in snap.sharing))
        found.append(roots)
    if gp.in_aggs is not None and (not found or len(gp.in_aggs) < min(map(len, found))):
        found.append(_anchors_of(snap, index, gp.in_aggs))
    if not found:
        return None
    found.sort(key=len)
    out = found[0]
    for more in found[1:]:
        out = out & more
    return out


def matches_at(snap: Snapshot, index: TreeIndex, gp: GroupPlan, root: int) -> list[Match]:
    """Every way `gp` can be satisfied by providers anchored at `root`, in id order."""
    pool = index.pool(root)
    if gp.granular:
        if gp.resources:  # cheaply drop most of the tree first
            has_class = index.with_class(gp.resources[0][0])
            pool = [pid for pid in pool if pid in has_class]
        return _single_matches(snap, gp, root, pool)
    return _tree_matches(snap, gp, root, pool)


def _has_traits(traits: frozenset[str], gp: GroupPlan) -> bool:
    return (all(not any_of.isdisjoint(traits) for any_of in gp.required)
            and gp.forbidden.isdisjoint(traits))


def _fits_all(invs: dict[str, Inventory], resources: tuple[tuple[str, int], ...]) -> bool:
    for rc, amount in resources:
        inv = invs.get(rc)
        if inv is None or not inv.fits(amount):
            return False
    return True


def _single_matches(snap: Snapshot, gp: GroupPlan, root: int, pool: list[int]) -> list[Match]:
    """A suffixed group: each provider of the pool that alone satisfies the whole group."""
    if not gp.resources and not (gp.required or gp.in_aggs is not None):
        return []  # upstream finds nothing without a positive filter
    providers = snap.providers
    resources = gp.resources
    out: list[Match] = []
    for pid in pool:
        p = providers[pid]
        invs = p.inventories
        # Inventory first: it rules out most of a tree for most groups.
        if not _fits_all(invs, resources):
            continue
        if ((gp.tree_root is not None and p.root_id != gp.tree_root)
                or (gp.in_aggs is not None and pid not in gp.in_aggs)
                or pid in gp.bad_aggs or not _has_traits(p.traits, gp)):
            continue
        out.append(Match(root, tuple((pid, rc, n) for rc, n in resources), (pid,)))
    return out


def _eligible(snap: Snapshot, gp: GroupPlan, root: int, pool: list[int]) -> list[Provider]:
    """Providers of the pool the unsuffixed group may take resources from at `root`."""
    in_aggs, bad = gp.in_aggs, gp.bad_aggs
    if root in bad or (gp.tree_root is not None and root != gp.tree_root):
        return []
    root_in = in_aggs is None or root in in_aggs
    out: list[Provider] = []
    for pid in pool:
        p = snap.providers[pid]
        if p.root_id == root:
            if not (root_in or pid in (in_aggs or ())):
                continue
        elif gp.tree_root is not None or (in_aggs is not None and pid not in in_aggs):
            continue  # shared in from another tree
        if pid in bad or (gp.forbidden and gp.forbidden & p.traits):
            continue
        out.append(p)
    return out


def _tree_matches(snap: Snapshot, gp: GroupPlan, root: int, pool: list[int]) -> list[Match]:
    """The unsuffixed group: one provider per class, within a tree or shared into it."""
    eligible = _eligible(snap, gp, root, pool)
    choices: list[list[int]] = []
    for rc, amount in gp.resources:
        capable = [p.id for p in eligible
                   if rc in p.inventories and p.inventories[rc].fits(amount)]
        if not capable:
            return []
        choices.append(capable)
    if not choices:
        return []
    out: list[Match] = []
    for combo in itertools.product(*choices):
        if gp.required:
            traits = (snap.providers[combo[0]].traits if len(set(combo)) == 1 else
                      frozenset().union(*(snap.providers[p].traits for p in combo)))
            if not all(any_of & traits for any_of in gp.required):
                continue
        resources = tuple((pid, rc, n) for pid, (rc, n) in zip(combo, gp.resources,
                                                              strict=True))
        out.append(Match(root, resources, tuple(dict.fromkeys(combo))))
    return out
