"""The allocation-candidates engine: a request and a snapshot in, candidates out.

Pipeline (each stage narrows what the next one sees)::

    root_required    -> the roots a candidate may be anchored at
    per group        -> matches: (anchor root, resources per provider, providers)
                        a suffixed group: one provider satisfies all of it
                        the unsuffixed group: one provider per resource class,
                          from one tree plus sharing providers of that tree
    merge per anchor -> one match per group, pruned as soon as a partial
                        combination exceeds capacity or breaks group_policy
    same_subtree     -> the providers of named groups sit under one of them
    dedupe, nested-awareness (< 1.29), limit -> candidates + summary providers

Semantics follow upstream Placement, including its quirks (member_of on the
unsuffixed group is satisfied by the provider or its anchor root; a resourceless
group needs a positive trait or aggregate filter).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from stowage.errors import Invalid
from stowage.placement.candidates.query import CandidateRequest, RequestGroup
from stowage.placement.candidates.snapshot import Snapshot

__all__ = ["Candidate", "Match", "SearchResult", "search", "Empty"]


class Empty(Exception):
    """No candidate can exist; upstream returns an empty 200 in this case."""


@dataclass(frozen=True, slots=True)
class Match:
    """How one provider set satisfies one request group, anchored at a tree root."""

    anchor: int
    resources: tuple[tuple[int, str, int], ...]  # (provider id, class, amount)
    providers: tuple[int, ...]  # what `mappings` reports for the group


@dataclass(slots=True)
class Candidate:
    allocations: dict[int, dict[str, int]]
    mappings: dict[str, list[int]]


@dataclass
class SearchResult:
    candidates: list[Candidate] = field(default_factory=list)
    summary_ids: list[int] = field(default_factory=list)


@dataclass
class _Filters:
    """A group's aggregate filters, resolved to provider ids."""

    in_aggs: set[int] | None  # None: no member_of
    bad_aggs: set[int]
    tree_root: int | None


def _check_traits(snap: Snapshot, names: Iterable[str]) -> None:
    for name in sorted(names):
        if name not in snap.known_traits:
            raise Invalid(f"No such trait(s): {name}.")


def _anchor_roots(snap: Snapshot, req: CandidateRequest) -> set[int] | None:
    """Roots allowed by root_required/root_forbidden; None when unrestricted."""
    if not (req.root_required or req.root_forbidden):
        return None
    _check_traits(snap, req.root_required | req.root_forbidden)
    roots = {p.id for p in snap.providers.values() if p.parent_id is None
             and req.root_required <= p.traits and not (req.root_forbidden & p.traits)}
    if not roots:
        raise Empty
    return roots


def _resolve(snap: Snapshot, group: RequestGroup) -> _Filters:
    """Check names and resolve aggregates in upstream's order; raise Empty early."""
    for rc in group.resources:
        if rc not in snap.known_classes:
            raise Invalid("Invalid resource class in resources parameter: "
                          f"No such resource class {rc}.")
    in_aggs: set[int] | None = None
    if group.member_of:
        in_aggs = set(snap.providers)
        for aggs in group.member_of:
            in_aggs &= snap.in_aggregates(aggs)
        if not in_aggs:
            raise Empty
    for traits in group.required:
        _check_traits(snap, traits)
    _check_traits(snap, group.forbidden)
    tree_root = None
    if group.in_tree is not None:
        if group.in_tree not in snap.by_uuid:
            raise Empty
        tree_root = snap.providers[snap.by_uuid[group.in_tree]].root_id
    return _Filters(in_aggs, snap.in_aggregates(group.forbidden_aggs), tree_root)


def _with_capacity(snap: Snapshot, rc: str, amount: int, tree_root: int | None) -> set[int]:
    return {p.id for p in snap.by_class.get(rc, ())
            if p.inventories[rc].fits(amount)
            and (tree_root is None or p.root_id == tree_root)}


def _has_traits(traits: frozenset[str], group: RequestGroup) -> bool:
    return (all(any_of & traits for any_of in group.required)
            and not (group.forbidden & traits))


def _single_matches(snap: Snapshot, group: RequestGroup, filters: _Filters,
                    anchors: set[int] | None) -> list[Match]:
    """A suffixed group: each provider that alone satisfies the whole group."""
    if group.resources:
        ids: set[int] | None = None
        for rc, amount in group.resources.items():
            found = _with_capacity(snap, rc, amount, filters.tree_root)
            ids = found if ids is None else ids & found
            if not ids:
                return []
        chosen = ids or set()
    elif group.required or filters.in_aggs is not None:
        chosen = set(snap.providers)
    else:
        return []  # upstream finds nothing without a positive filter
    if filters.in_aggs is not None:
        chosen &= filters.in_aggs
    chosen -= filters.bad_aggs
    out: list[Match] = []
    for pid in sorted(chosen):
        provider = snap.providers[pid]
        if not _has_traits(provider.traits, group):
            continue
        resources = tuple((pid, rc, n) for rc, n in group.resources.items())
        roots = [provider.root_id]
        if pid in snap.sharing:
            roots += sorted(snap.anchors(pid) - {provider.root_id})
        out += [Match(root, resources, (pid,)) for root in roots
                if anchors is None or root in anchors]
    return out


def _entries_for_class(snap: Snapshot, group: RequestGroup, filters: _Filters, rc: str,
                       anchors: set[int] | None) -> dict[int, list[int]]:
    """Providers able to serve `rc` for the group, keyed by the anchor root."""
    amount = group.resources[rc]
    capable = _with_capacity(snap, rc, amount, filters.tree_root)
    pairs = {(pid, snap.providers[pid].root_id) for pid in capable}
    if filters.tree_root is None:
        sharing = snap.sharing & capable
        if filters.in_aggs is not None:
            sharing &= filters.in_aggs
        pairs |= {(pid, root) for pid in sharing for root in snap.anchors(pid)}
    by_anchor: dict[int, list[int]] = {}
    for pid, root in sorted(pairs):
        if anchors is not None and root not in anchors:
            continue
        if filters.in_aggs is not None and not {pid, root} & filters.in_aggs:
            continue
        if {pid, root} & filters.bad_aggs:
            continue
        by_anchor.setdefault(root, []).append(pid)
    return by_anchor


def _tree_matches(snap: Snapshot, group: RequestGroup, filters: _Filters,
                  anchors: set[int] | None) -> list[Match]:
    """The unsuffixed group: one provider per class, within a tree or shared with it."""
    per_class: list[tuple[str, dict[int, list[int]]]] = []
    for rc in group.resources:
        by_anchor = _entries_for_class(snap, group, filters, rc, anchors)
        if not by_anchor:
            return []
        per_class.append((rc, by_anchor))
    common = set.intersection(*(set(b) for _, b in per_class))
    out: list[Match] = []
    for root in sorted(common):
        choices = [by_anchor[root] for _, by_anchor in per_class]
        for combo in itertools.product(*choices):
            traits = frozenset().union(*(snap.providers[p].traits for p in combo))
            if any(group.forbidden & snap.providers[p].traits for p in combo):
                continue
            if not all(any_of & traits for any_of in group.required):
                continue
            resources = tuple((pid, rc, group.resources[rc])
                              for pid, (rc, _) in zip(combo, per_class, strict=True))
            out.append(Match(root, resources, tuple(dict.fromkeys(combo))))
    return out


def group_matches(snap: Snapshot, group: RequestGroup,
                  anchors: set[int] | None) -> list[Match]:
    filters = _resolve(snap, group)
    if group.use_same_provider:
        return _single_matches(snap, group, filters, anchors)
    return _tree_matches(snap, group, filters, anchors)


class _Combiner:
    """Walks the product of per-group matches for one anchor, pruning early.

    A partial combination is abandoned as soon as the amounts it sums on a
    provider exceed that provider's free capacity or max_unit, or when
    group_policy=isolate and two suffixed groups landed on one provider; both
    only get worse as more groups are added, so pruning never loses a result.
    """

    def __init__(self, snap: Snapshot, req: CandidateRequest) -> None:
        self.snap = snap
        self.isolate = req.group_policy == "isolate"
        self.granular = [g.use_same_provider for g in req.groups]
        self.amounts: dict[tuple[int, str], int] = {}
        self.isolated: set[int] = set()

    def _push(self, match: Match, granular: bool) -> bool:
        fits = True
        for pid, rc, amount in match.resources:
            total = self.amounts.get((pid, rc), 0) + amount
            self.amounts[(pid, rc)] = total
            inv = self.snap.providers[pid].inventories[rc]
            if inv.used + total > inv.capacity or total > inv.max_unit:
                fits = False
        if granular and self.isolate:
            self.isolated.add(match.providers[0])
        return fits

    def _pop(self, match: Match, granular: bool) -> None:
        for pid, rc, amount in match.resources:
            self.amounts[(pid, rc)] -= amount
        if granular and self.isolate:
            self.isolated.discard(match.providers[0])

    def combos(self, lists: list[list[Match]], depth: int = 0,
               chosen: tuple[Match, ...] = ()) -> Iterator[tuple[Match, ...]]:
        if depth == len(lists):
            yield chosen
            return
        granular = self.granular[depth]
        for match in lists[depth]:
            if granular and self.isolate and match.providers[0] in self.isolated:
                continue
            if self._push(match, granular):
                yield from self.combos(lists, depth + 1, chosen + (match,))
            self._pop(match, granular)


def _in_same_subtree(snap: Snapshot, ids: set[int]) -> bool:
    """True when one of `ids` is an ancestor-or-self of all the others."""
    if len(ids) <= 1:
        return True
    common: set[int] | None = None
    for pid in ids:
        line = set()
        cur: int | None = pid
        while cur is not None:
            line.add(cur)
            cur = snap.providers[cur].parent_id
        common = line if common is None else common & line
    return bool((common or set()) & ids)


def _satisfies_subtrees(snap: Snapshot, req: CandidateRequest,
                        combo: tuple[Match, ...]) -> bool:
    for names in req.same_subtrees:
        ids = {pid for group, match in zip(req.groups, combo, strict=True)
               if group.suffix in names for pid in match.providers}
        if not _in_same_subtree(snap, ids):
            return False
    return True


def _consolidate(req: CandidateRequest, combo: tuple[Match, ...]) -> Candidate:
    allocations: dict[int, dict[str, int]] = {}
    mappings: dict[str, list[int]] = {}
    for group, match in zip(req.groups, combo, strict=True):
        for pid, rc, amount in match.resources:
            per_rc = allocations.setdefault(pid, {})
            per_rc[rc] = per_rc.get(rc, 0) + amount
        mapped = mappings.setdefault(group.suffix, [])
        mapped += [p for p in match.providers if p not in mapped]
    return Candidate(allocations, mappings)


def _key(cand: Candidate) -> tuple[frozenset[tuple[int, str, int]], frozenset[object]]:
    return (frozenset((p, rc, n) for p, per in cand.allocations.items()
                      for rc, n in per.items()),
            frozenset((s, frozenset(ids)) for s, ids in cand.mappings.items()))


def _merge(snap: Snapshot, req: CandidateRequest, per_group: list[list[Match]],
           max_candidates: int) -> list[Candidate]:
    by_anchor: dict[int, list[list[Match]]] = {}
    for index, matches in enumerate(per_group):
        for match in matches:
            by_anchor.setdefault(match.anchor, [[] for _ in per_group])[index].append(match)
    seen: set[object] = set()
    out: list[Candidate] = []
    combiner = _Combiner(snap, req)
    for lists in by_anchor.values():
        if not all(lists):
            continue
        for combo in combiner.combos(lists):
            if req.same_subtrees and not _satisfies_subtrees(snap, req, combo):
                continue
            cand = _consolidate(req, combo)
            key = _key(cand)
            if key in seen:
                continue
            seen.add(key)
            out.append(cand)
            if 0 <= max_candidates <= len(out):
                return out
    return out


def _one_per_tree(snap: Snapshot, cands: list[Candidate]) -> list[Candidate]:
    """Before 1.29 a client cannot handle two providers of one tree in a candidate."""
    out = []
    for cand in cands:
        roots = [snap.providers[p].root_id for p in cand.allocations]
        if len(roots) == len(set(roots)):
            out.append(cand)
    return out


def _limit(cands: list[Candidate], limit: int | None,
           rng: random.Random | None) -> list[Candidate]:
    if limit and limit < len(cands):
        return rng.sample(cands, limit) if rng else cands[:limit]
    if rng:
        rng.shuffle(cands)
    return cands


def search(snap: Snapshot, req: CandidateRequest, max_candidates: int = -1,
           rng: random.Random | None = None) -> SearchResult:
    """All candidates for `req` (randomly sampled/shuffled when `rng` is given)."""
    try:
        anchors = _anchor_roots(snap, req)
        per_group = []
        for group in req.groups:
            matches = group_matches(snap, group, anchors)
            if not matches:
                return SearchResult()
            per_group.append(matches)
    except Empty:
        return SearchResult()
    cands = _merge(snap, req, per_group, max_candidates)
    nested_aware = req.minor >= 29 or not snap.has_trees
    if not nested_aware:
        cands = _one_per_tree(snap, cands)
    all_cands = cands
    cands = _limit(list(cands), req.limit, rng)
    roots = {snap.providers[p].root_id for c in cands for p in c.allocations}
    if nested_aware:
        ids = [p for root in sorted(roots) for p in sorted(snap.trees[root])]
    else:
        used = {p for c in all_cands for p in c.allocations}
        ids = sorted(p for p in used if snap.providers[p].root_id in roots)
    return SearchResult(cands, ids)
