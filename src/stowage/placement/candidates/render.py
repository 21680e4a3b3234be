"""Response bodies of GET /allocation_candidates, shaped per microversion.

- 1.10: allocation requests are lists of {resource_provider: {uuid}, resources}
- 1.12: they are dicts keyed by provider uuid, as PUT /allocations takes them
- 1.17: provider summaries carry traits
- 1.27: summaries list every inventory class, not only the requested ones
- 1.29: summaries carry parent_provider_uuid and root_provider_uuid
- 1.34: allocation requests carry mappings (group suffix -> provider uuids)
"""

from __future__ import annotations

from typing import Any

from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.search import Candidate, SearchResult
from stowage.placement.candidates.snapshot import Snapshot

__all__ = ["render"]


def _allocation_request(snap: Snapshot, cand: Candidate, minor: int) -> dict[str, Any]:
    uuid = {pid: snap.providers[pid].uuid for pid in cand.allocations}
    if minor < 12:
        return {"allocations": [{"resource_provider": {"uuid": uuid[pid]}, "resources": res}
                                for pid, res in cand.allocations.items()]}
    body: dict[str, Any] = {"allocations": {uuid[pid]: {"resources": res}
                                            for pid, res in cand.allocations.items()}}
    if minor >= 34:
        body["mappings"] = {suffix: [snap.providers[p].uuid for p in ids]
                            for suffix, ids in cand.mappings.items()}
    return body


def _summary(snap: Snapshot, pid: int, requested: set[str], minor: int) -> dict[str, Any]:
    provider = snap.providers[pid]
    resources = {rc: {"capacity": inv.capacity, "used": inv.used}
                 for rc, inv in sorted(provider.inventories.items())
                 if minor >= 27 or rc in requested}
    body: dict[str, Any] = {"resources": resources}
    if minor >= 17:
        order = snap.trait_ids
        body["traits"] = sorted(provider.traits, key=lambda t: (order.get(t, 0), t))
    if minor >= 29:
        parent = provider.parent_id
        body["parent_provider_uuid"] = snap.providers[parent].uuid if parent is not None else None
        body["root_provider_uuid"] = snap.providers[provider.root_id].uuid
    return body


def render(snap: Snapshot, req: CandidateRequest, result: SearchResult) -> dict[str, Any]:
    requested = {rc for group in req.groups for rc in group.resources}
    return {
        "allocation_requests": [_allocation_request(snap, c, req.minor)
                                for c in result.candidates],
        "provider_summaries": {snap.providers[pid].uuid: _summary(snap, pid, requested,
                                                                   req.minor)
                               for pid in result.summary_ids},
    }
