"""The allocation-candidates engine: a request and a snapshot in, candidates out.

Pipeline (each stage narrows what the next one sees)::

    root_required    -> the roots a candidate may be anchored at
    per group        -> a plan: names checked, aggregates resolved to ids, and
                        a superset of the roots where the group can match
    per anchor root, ascending, until enough candidates are found:
      per group      -> its matches at this root (matching.py)
                        a suffixed group: one provider satisfies all of it
                        the unsuffixed group: one provider per resource class,
                          from the tree plus sharing providers sharing into it
      combine        -> one match per group, pruned as soon as a partial
                        combination exceeds capacity or breaks group_policy
      same_subtree   -> the providers of named groups sit under one of them
      dedupe         -> see `_generate`
    nested-awareness (< 1.29), limit -> candidates + summary providers

Visiting anchors lazily is what makes a `limit` cheap: when the order is
deterministic, the search stops after the first `limit` candidates.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from stowage.errors import Invalid
from stowage.placement.candidates.assemble import assemble
from stowage.placement.candidates.index import TreeIndex, index_of
from stowage.placement.candidates.matching import (
    Empty,
    GroupPlan,
    Match,
    check_traits,
    matches_at,
    plan,
    possible_anchors,
)
from stowage.placement.candidates.memo import Memo, TreeTable
from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.snapshot import Snapshot
from stowage.placement.candidates.views import tree_encoder

__all__ = ["Candidate", "Match", "SearchResult", "search", "Empty"]


@dataclass(slots=True)
class Candidate:
    allocations: dict[int, dict[str, int]]
    mappings: dict[str, list[int]]
    # The rendered allocation request, filled in once by render.py (candidates
    # are memoized per request shape, so the rendering is reused with them).
    view: Any = None


@dataclass
class SearchResult:
    candidates: list[Candidate] = field(default_factory=list)
    summary_ids: list[int] = field(default_factory=list)
    # The encoded response body, when assembled from memoized fragments
    # (`candidates` and `summary_ids` are then left empty).
    body: bytes | None = None


def _anchor_roots(snap: Snapshot, index: TreeIndex, req: CandidateRequest) -> set[int] | None:
    """Roots allowed by root_required/root_forbidden; None when unrestricted."""
    if not (req.root_required or req.root_forbidden):
        return None
    check_traits(snap, req.root_required | req.root_forbidden)
    roots = {root for root in index.roots
             if req.root_required <= (traits := snap.providers[root].traits)
             and not (req.root_forbidden & traits)}
    if not roots:
        raise Empty
    return roots


def _has_match(snap: Snapshot, index: TreeIndex, gp: GroupPlan,
               anchors: set[int] | None) -> bool:
    roots = possible_anchors(snap, index, gp)
    if roots is None:
        roots = set(index.roots)
    if anchors is not None:
        roots = roots & anchors
    return any(matches_at(snap, index, gp, root) for root in sorted(roots))


def _plans(snap: Snapshot, index: TreeIndex, req: CandidateRequest,
           anchors: set[int] | None) -> list[GroupPlan]:
    """Plan each group in query order, as upstream validates them.

    Upstream stops at the first group without any match and answers with an
    empty list, so a later group's unknown trait or class only is a 400 when
    every earlier group matched somewhere.
    """
    plans: list[GroupPlan] = []
    for group in req.groups:
        try:
            plans.append(plan(snap, group))
        except Invalid:
            if all(_has_match(snap, index, gp, anchors) for gp in plans):
                raise
            raise Empty from None
    return plans


def _ordered_anchors(snap: Snapshot, index: TreeIndex, plans: list[GroupPlan],
                     anchors: set[int] | None) -> list[int]:
    """Roots where every group may match, ascending: the order candidates come in.

    Every set here holds roots of the snapshot, so one as large as the list
    of roots is all of them and narrows nothing: skipping it spares the
    common case (every tree has every class) two passes over every root.
    """
    common: AbstractSet[int] | None = anchors
    everything = len(index.roots)
    for gp in plans:
        roots = possible_anchors(snap, index, gp)
        if roots is not None and len(roots) < everything:
            common = roots if common is None else common & roots
    if common is None:
        return index.roots
    if len(common) == len(index.roots):  # everything: skip the sort
        return index.roots
    return sorted(common)


class _Combiner:
    """Walks the product of per-group matches for one anchor, pruning early.

    A partial combination is abandoned as soon as the amounts it sums on a
    provider exceed that provider's free capacity or max_unit, or when
    group_policy=isolate and two suffixed groups landed on one provider; both
    only get worse as more groups are added, so pruning never loses a result.
    """

    def __init__(self, snap: Snapshot, req: CandidateRequest, plans: list[GroupPlan]) -> None:
        self.snap = snap
        self.isolate = req.group_policy == "isolate"
        self.granular = [gp.granular for gp in plans]
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

    def walk(self, lists: list[list[Match]]) -> Iterable[tuple[Match, ...]]:
        """The combinations worth checking, one match per group.

        Each match fits on its own, so when no two groups draw on the same
        (provider, class) and isolation is off, every combination fits and
        the plain product (in C) replaces the pruning walk.
        """
        if len(lists) == 1:
            return [(match,) for match in lists[0]]
        if not self.isolate and not _overlap(lists):
            return itertools.product(*lists)
        return self.combos(lists)

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


def _overlap(lists: list[list[Match]]) -> bool:
    """Could two groups' matches draw on the same class of the same provider?"""
    seen: set[tuple[int, str]] = set()
    for matches in lists:
        keys = {(pid, rc) for match in matches for pid, rc, _ in match.resources}
        if not seen.isdisjoint(keys):
            return True
        seen |= keys
    return False


class _Subtrees:
    """same_subtree: the providers of the named groups sit under one of them."""

    def __init__(self, index: TreeIndex, req: CandidateRequest, plans: list[GroupPlan]) -> None:
        self.line = index.line
        self.groups = [[i for i, gp in enumerate(plans) if gp.suffix in names]
                       for names in req.same_subtrees]

    def satisfied(self, combo: tuple[Match, ...]) -> bool:
        """True when, per same_subtree, one provider is an ancestor-or-self of the others."""
        line = self.line
        for indexes in self.groups:
            ids = [pid for i in indexes for pid in combo[i].providers]
            if len(ids) == 2:  # the usual case, spelled out
                a, b = ids
                if a in line(b) or b in line(a):
                    continue
                return False
            if len(ids) > 2 and not any(all(top in line(pid) for pid in ids) for top in ids):
                return False
        return True


def _consolidate(suffixes: list[str], combo: tuple[Match, ...]) -> Candidate:
    allocations: dict[int, dict[str, int]] = {}
    for match in combo:
        for pid, rc, amount in match.resources:
            per_rc = allocations.get(pid)
            if per_rc is None:
                allocations[pid] = {rc: amount}
            else:
                per_rc[rc] = per_rc.get(rc, 0) + amount
    mappings = {suffix: list(match.providers)
                for suffix, match in zip(suffixes, combo, strict=True)}
    return Candidate(allocations, mappings)


def _matches(snap: Snapshot, index: TreeIndex, plans: list[GroupPlan],
             root: int) -> list[list[Match]] | None:
    """Every group's matches at `root`; None as soon as one group has none."""
    lists = []
    for gp in plans:
        found = matches_at(snap, index, gp, root)
        if not found:
            return None
        lists.append(found)
    return lists


def _generate(snap: Snapshot, index: TreeIndex, req: CandidateRequest,
              plans: list[GroupPlan], roots: list[int],
              table: TreeTable | None = None) -> Iterator[Candidate]:
    """Candidates anchor by anchor, each one once.

    Within one anchor distinct combinations give distinct candidates: a
    suffixed group's match is fixed by its one provider, and the unsuffixed
    group's by what remains of the allocations. Across anchors a candidate can
    only repeat when all its providers are sharing providers (any other
    provider anchors only its own tree), so only those are remembered.

    With a memo `table`, a tree that no sharing provider reaches (its pool is
    then the tree itself) reuses its candidates from an earlier identical
    request while the tree's version is unchanged (see memo.py).
    """
    tree = _TreeCandidates(snap, index, req, plans)
    sharing = snap.sharing
    versions = snap.versions
    seen: set[object] = set()
    for root in roots:
        if table is not None and sharing.isdisjoint(index.pool(root)):
            hit = table.get(root)
            if hit is None or hit[0] != versions[root]:
                hit = table[root] = (versions[root], [cand for cand, _ in tree.at(root)])
            yield from hit[1]
            continue
        for cand, used in tree.at(root):
            if sharing and all(p in sharing for p in used):
                key = (frozenset((p, rc, n) for p, per in cand.allocations.items()
                                 for rc, n in per.items()),
                       frozenset((s, frozenset(ids)) for s, ids in cand.mappings.items()))
                if key in seen:
                    continue
                seen.add(key)
            yield cand


class _TreeCandidates:
    """The candidates anchored at one root, in a deterministic order."""

    def __init__(self, snap: Snapshot, index: TreeIndex, req: CandidateRequest,
                 plans: list[GroupPlan]) -> None:
        self.snap, self.index, self.plans = snap, index, plans
        self.suffixes = [gp.suffix for gp in plans]
        self.combiner = _Combiner(snap, req, plans)
        self.subtrees = _Subtrees(index, req, plans) if req.same_subtrees else None

    def at(self, root: int) -> Iterator[tuple[Candidate, list[int]]]:
        """Each candidate with every provider its matches name (resourceless ones too)."""
        lists = _matches(self.snap, self.index, self.plans, root)
        if lists is None:
            return
        for combo in self.combiner.walk(lists):
            if self.subtrees is not None and not self.subtrees.satisfied(combo):
                continue
            yield _consolidate(self.suffixes, combo), [p for m in combo for p in m.providers]


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


def _prepare(snap: Snapshot, req: CandidateRequest) -> tuple[TreeIndex, list[GroupPlan],
                                                            list[int]]:
    """The index, the group plans and the anchor roots in visiting order."""
    index = index_of(snap)
    anchors = _anchor_roots(snap, index, req)
    plans = _plans(snap, index, req, anchors)
    return index, plans, _ordered_anchors(snap, index, plans, anchors)


def _cap(req: CandidateRequest, max_candidates: int, nested_aware: bool,
         rng: random.Random | None) -> int | None:
    """How many candidates to generate; None for all.

    A non-negative cap of 0 still returns the first candidate, as before.
    """
    cap = max_candidates
    if nested_aware and rng is None and req.limit:
        cap = req.limit if cap < 0 else min(cap, req.limit)
    return max(cap, 1) if cap >= 0 else None


def _memo_key(req: CandidateRequest) -> str:
    """The request shape: `limit` only decides where the answer is cut."""
    if not req.shape:
        req.shape = repr(dataclasses.replace(req, limit=None))
    return req.shape


def _collect(snap: Snapshot, req: CandidateRequest, max_candidates: int,
             rng: random.Random | None, memo: Memo | None) -> tuple[list[Candidate], bool]:
    """All candidates (or the first few, when the limit allows); and nested-awareness."""
    index, plans, roots = _prepare(snap, req)
    nested_aware = req.minor >= 29 or not snap.has_trees
    cap = _cap(req, max_candidates, nested_aware, rng)
    table = memo.trees(_memo_key(req)) if memo is not None else None
    gen = _generate(snap, index, req, plans, roots, table)
    cands = list(itertools.islice(gen, cap)) if cap is not None else list(gen)
    return cands, nested_aware


def _assembled(snap: Snapshot, req: CandidateRequest, max_candidates: int,
               memo: Memo) -> bytes:
    """The encoded answer, from per-tree fragments (see assemble.py).

    Only for the common case where the answer is a plain concatenation of
    per-tree fragments: no sharing provider, nested-aware, no random order.
    """
    index, plans, roots = _prepare(snap, req)
    tree = _TreeCandidates(snap, index, req, plans)
    encode = tree_encoder(snap, req, lambda root: (c for c, _ in tree.at(root)), index.tree)
    assert snap.lineage is not None
    return assemble(memo.encoded(_memo_key(req)), snap.lineage, snap.seq, snap.versions,
                    roots, _cap(req, max_candidates, True, None), encode)


def search(snap: Snapshot, req: CandidateRequest, max_candidates: int = -1,
           rng: random.Random | None = None, memo: Memo | None = None, *,
           encoded: bool = True) -> SearchResult:
    """All candidates for `req` (randomly sampled/shuffled when `rng` is given).

    With a `memo`, and when the answer allows it, the result is the encoded
    body only (`SearchResult.body`); `encoded=False` asks for the objects
    always (a caller in this process that reads them, candidates/direct.py).
    """
    try:
        if (encoded and memo is not None and rng is None and not snap.sharing
                and (req.minor >= 29 or not snap.has_trees)):
            return SearchResult(body=_assembled(snap, req, max_candidates, memo))
        cands, nested_aware = _collect(snap, req, max_candidates, rng, memo)
    except Empty:
        return SearchResult()
    if not nested_aware:
        cands = _one_per_tree(snap, cands)
    all_cands = cands
    cands = _limit(list(cands), req.limit, rng)
    roots = {snap.providers[p].root_id for c in cands for p in c.allocations}
    if nested_aware:
        index = index_of(snap)
        ids = [p for root in sorted(roots) for p in index.tree(root)]
    else:
        used = {p for c in all_cands for p in c.allocations}
        ids = sorted(p for p in used if snap.providers[p].root_id in roots)
    return SearchResult(cands, ids)
