"""GET /allocation_candidates (1.10+): parse, load a snapshot, search, render."""

from __future__ import annotations

import random
import time
from typing import Any

from stowage.metrics import process as metrics
from stowage.placement.api.common import authorize, cache_headers
from stowage.placement.candidates import query, render, search
from stowage.placement.candidates.search import SearchResult
from stowage.placement.candidates.snapshot import Snapshot
from stowage.web.http import Request, Response
from stowage.web.routing import Route


def _names(req: query.CandidateRequest) -> tuple[set[str], set[str]]:
    classes = {rc for g in req.groups for rc in g.resources}
    traits = req.root_required | req.root_forbidden
    for group in req.groups:
        traits |= group.forbidden
        for any_of in group.required:
            traits |= any_of
    return classes, traits


def searched(state: Any, request: query.CandidateRequest, *, encoded: bool = True
             ) -> tuple[Snapshot, SearchResult]:
    """The snapshot and the candidates for a parsed request: the one path of the API's
    answer and of the scheduler's in-process read (candidates/direct.py), so both
    see the same snapshot, limit, randomisation and memo, and both are counted."""
    started = time.monotonic()
    settings = state.settings.placement
    # Poll and reloads are statements that need no common snapshot (cache.py).
    with state.db.read_statements() as conn:
        snap = state.candidates.view(conn, *_names(request))
    rng = random.Random() if settings.randomize_allocation_candidates else None
    result = search.search(snap, request, settings.max_allocation_candidates, rng,
                           state.candidates.memo, encoded=encoded)
    metrics.candidates_answered(started, result)
    return snap, result


def list_candidates(req: Request) -> Response:
    authorize(req, "placement:allocation_candidates:list")
    request = query.parse_request(req)
    snap, result = searched(req.app, request)
    body = render.render_json(snap, request, result, req.app.candidates.memo)
    return cache_headers(req, Response(200, body, [("content-type", "application/json")]))


ROUTES = [
    Route("GET", "/allocation_candidates", list_candidates, min_version=10),
]
