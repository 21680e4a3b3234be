"""The views of one candidate and one provider summary, and their JSON fragments.

Shapes per microversion are listed in render.py. Both the whole-answer
renderer (render.py) and the per-tree fragments (assemble.py) build views
here, so the two paths cannot drift apart: the fragments of a tree are the
same views, encoded by the same orjson call.

A large answer holds thousands of candidates, so the builders are written as
flat comprehensions over local names.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from stowage.placement.candidates.assemble import Fragment
from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.snapshot import Provider, Snapshot

if TYPE_CHECKING:
    from stowage.placement.candidates.memo import Memo
    from stowage.placement.candidates.search import Candidate

__all__ = ["Summaries", "allocation_request", "allocation_requests", "tree_encoder"]


def allocation_request(providers: dict[int, Provider], c: Candidate,
                       minor: int) -> dict[str, Any]:
    if minor < 12:
        return {"allocations": [{"resource_provider": {"uuid": providers[pid].uuid},
                                 "resources": res} for pid, res in c.allocations.items()]}
    view: dict[str, Any] = {"allocations": {providers[pid].uuid: {"resources": res}
                                            for pid, res in c.allocations.items()}}
    if minor >= 34:
        view["mappings"] = {suffix: [providers[p].uuid for p in ids]
                            for suffix, ids in c.mappings.items()}
    return view


def allocation_requests(snap: Snapshot, cands: list[Candidate],
                        minor: int) -> list[dict[str, Any]]:
    """One view per candidate, built once: memoized candidates keep theirs.

    A candidate belongs to one request shape (microversion included), and
    provider uuids never change, so its view never goes stale.
    """
    providers = snap.providers
    out = []
    for c in cands:
        view = c.view
        if view is None:
            view = c.view = allocation_request(providers, c, minor)
        out.append(view)
    return out


class Summaries:
    """Provider summaries; the sorted trait list is shared by providers with equal traits."""

    def __init__(self, snap: Snapshot, req: CandidateRequest, memo: Memo | None) -> None:
        self.snap = snap
        self.requested = {rc for group in req.groups for rc in group.resources}
        self.minor = minor = req.minor
        self.trait_lists: dict[frozenset[str], list[str]] = {}
        self.memo = memo
        # What a summary's shape depends on besides the provider itself.
        self.variant: Hashable = (min(minor, 29) if minor >= 27 else
                                  (minor >= 17, frozenset(self.requested)))

    def get(self, provider: Provider) -> dict[str, Any]:
        if self.memo is None:
            return self.one(provider)
        return self.memo.summary(provider, self.variant, self.one)

    def _traits(self, traits: frozenset[str]) -> list[str]:
        """Upstream lists traits in id order."""
        found = self.trait_lists.get(traits)
        if found is None:
            order = self.snap.trait_ids
            found = sorted(traits, key=lambda t: (order.get(t, 0), t))
            self.trait_lists[traits] = found
        return found

    def one(self, provider: Provider) -> dict[str, Any]:
        minor = self.minor
        invs = provider.inventories
        names = sorted(invs) if minor >= 27 else sorted(invs.keys() & self.requested)
        body: dict[str, Any] = {"resources": {
            rc: {"capacity": invs[rc].capacity, "used": invs[rc].used} for rc in names}}
        if minor >= 17:
            body["traits"] = self._traits(provider.traits)
        if minor >= 29:
            providers = self.snap.providers
            parent = provider.parent_id
            body["parent_provider_uuid"] = (providers[parent].uuid if parent is not None
                                            else None)
            body["root_provider_uuid"] = providers[provider.root_id].uuid
        return body


def tree_encoder(snap: Snapshot, req: CandidateRequest,
                 candidates: Callable[[int], Iterator[Candidate]],
                 tree_ids: Callable[[int], list[int]]) -> Callable[[int, int | None], Fragment]:
    """Encodes a tree's first candidates (all, or at most `most`) and its summaries.

    A tree without candidates encodes to an empty fragment: its providers
    are not summarised.
    """
    providers, minor = snap.providers, req.minor
    summaries = Summaries(snap, req, None)

    def encode(root: int, most: int | None) -> Fragment:
        cands = candidates(root)
        views = [allocation_request(providers, c, minor)
                 for c in (cands if most is None else itertools.islice(cands, most))]
        if not views:
            return Fragment(0, b"", b"")
        body = {providers[pid].uuid: summaries.one(providers[pid]) for pid in tree_ids(root)}
        return Fragment(len(views), orjson.dumps(views)[1:-1], orjson.dumps(body)[1:-1])

    return encode
