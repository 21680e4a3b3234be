"""Response bodies of GET /allocation_candidates, shaped per microversion.

- 1.10: allocation requests are lists of {resource_provider: {uuid}, resources}
- 1.12: they are dicts keyed by provider uuid, as PUT /allocations takes them
- 1.17: provider summaries carry traits
- 1.27: summaries list every inventory class, not only the requested ones
- 1.29: summaries carry parent_provider_uuid and root_provider_uuid
- 1.34: allocation requests carry mappings (group suffix -> provider uuids)

The views themselves are built in views.py. When the search could assemble
the answer from fragments encoded earlier (assemble.py), rendering is just
handing those bytes on; otherwise `render_json` encodes the whole answer
with orjson, several times faster than the standard library for such bodies.
"""

from __future__ import annotations

from typing import Any

import orjson

from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.search import SearchResult
from stowage.placement.candidates.snapshot import Snapshot
from stowage.placement.candidates.views import Summaries, allocation_requests

__all__ = ["render", "render_json"]


def render(snap: Snapshot, req: CandidateRequest, result: SearchResult,
           memo: Memo | None = None) -> dict[str, Any]:
    if result.body is not None:  # assembled from encoded fragments (assemble.py)
        body: dict[str, Any] = orjson.loads(result.body)
        return body
    summaries = Summaries(snap, req, memo)
    providers = snap.providers
    return {
        "allocation_requests": allocation_requests(snap, result.candidates, req.minor),
        "provider_summaries": {providers[pid].uuid: summaries.get(providers[pid])
                               for pid in result.summary_ids},
    }


def render_json(snap: Snapshot, req: CandidateRequest, result: SearchResult,
                memo: Memo | None = None) -> bytes:
    """The response body, encoded (or as the search already assembled it)."""
    if result.body is not None:
        return result.body
    return orjson.dumps(render(snap, req, result, memo))
