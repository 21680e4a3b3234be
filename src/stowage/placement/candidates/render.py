"""Response bodies of GET /allocation_candidates, shaped per microversion.

- 1.10: allocation requests are lists of {resource_provider: {uuid}, resources}
- 1.12: they are dicts keyed by provider uuid, as PUT /allocations takes them
- 1.17: provider summaries carry traits
- 1.27: summaries list every inventory class, not only the requested ones
- 1.29: summaries carry parent_provider_uuid and root_provider_uuid
- 1.34: allocation requests carry mappings (group suffix -> provider uuids)

A large answer holds thousands of candidates, so the builders below are
written as flat comprehensions over local names, and `render_json` encodes
with orjson, several times faster than the standard library for such bodies.
"""

from __future__ import annotations

from typing import Any

import orjson

from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.search import Candidate, SearchResult
from stowage.placement.candidates.snapshot import Provider, Snapshot

__all__ = ["render", "render_json"]


def _allocation_request(providers: dict[int, Provider], c: Candidate,
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


def _allocation_requests(snap: Snapshot, cands: list[Candidate],
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
            view = c.view = _allocation_request(providers, c, minor)
        out.append(view)
    return out


class _Summaries:
    """Provider summaries; the sorted trait list is shared by providers with equal traits."""

    def __init__(self, snap: Snapshot, requested: set[str], minor: int,
                 memo: Memo | None) -> None:
        self.snap = snap
        self.requested = requested
        self.minor = minor
        self.trait_lists: dict[frozenset[str], list[str]] = {}
        self.memo = memo
        # What a summary's shape depends on besides the provider itself.
        self.variant = (min(minor, 29) if minor >= 27 else
                        (minor >= 17, frozenset(requested)))

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


def render(snap: Snapshot, req: CandidateRequest, result: SearchResult,
           memo: Memo | None = None) -> dict[str, Any]:
    requested = {rc for group in req.groups for rc in group.resources}
    summaries = _Summaries(snap, requested, req.minor, memo)
    providers = snap.providers
    return {
        "allocation_requests": _allocation_requests(snap, result.candidates, req.minor),
        "provider_summaries": {providers[pid].uuid: summaries.get(providers[pid])
                               for pid in result.summary_ids},
    }


def render_json(snap: Snapshot, req: CandidateRequest, result: SearchResult,
                memo: Memo | None = None) -> bytes:
    """The response body, encoded."""
    return orjson.dumps(render(snap, req, result, memo))
