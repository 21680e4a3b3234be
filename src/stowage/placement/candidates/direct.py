"""Allocation candidates as the engine's objects, for a caller in Placement's process.

Why: the scheduler and Placement share a process by default (`stowage
serve`). Over the API, the engine's candidates for one boot at 1,000 hosts
are rendered to 2.6 MB of JSON that the scheduler decodes again, which was
most of what a decision cost beyond the scheduler's own work. `find` runs
the same steps as GET /allocation_candidates (api/allocation_candidates.py):
the same query parsing and validation (a bad query raises what the API
turns into its error: `HTTPError`, or `Invalid` for unknown names), the
same snapshot, the same search and memo, the same
`max_allocation_candidates` and randomisation; only the rendering is left
out, and the caller reads the result instead. Policy is not checked: this
is for a trusted caller of this process (the in-process API hands it an
admin token anyway).

Nothing here writes: a claim still goes through the API's write path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from stowage.placement.api.allocation_candidates import searched
from stowage.placement.candidates import query
from stowage.placement.candidates.query import CandidateRequest
from stowage.placement.candidates.search import SearchResult
from stowage.placement.candidates.snapshot import Snapshot
from stowage.web.http import Request
from stowage.web.microversion import Version

__all__ = ["Found", "find"]


@dataclass(frozen=True)
class Found:
    """One answer as objects: read `result` through `snapshot` (provider ids to providers).

    Hold `snapshot` for as long as the providers are read (cache.py lends it).
    """

    snapshot: Snapshot
    request: CandidateRequest
    result: SearchResult


def find(state: Any, params: Sequence[tuple[str, str]], minor: int) -> Found:
    """The candidates GET /allocation_candidates?`params` at microversion 1.`minor` answers.

    `state` is the Placement app's state (`app.state`, what a request's `app` is).
    """
    req = Request(method="GET", path="/allocation_candidates",
                  query_string=urlencode(list(params), quote_via=quote), headers={},
                  body=b"", base_url="http://placement.local", version=Version(1, minor),
                  app=state, trusted=True)
    request = query.parse_request(req)
    snap, result = searched(state, request, encoded=False)
    return Found(snap, request, result)
