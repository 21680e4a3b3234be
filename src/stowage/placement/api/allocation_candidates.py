"""GET /allocation_candidates (1.10+): parse, load a snapshot, search, render."""

from __future__ import annotations

import random
import time

from stowage.metrics import process as metrics
from stowage.placement.api.common import authorize, cache_headers
from stowage.placement.candidates import query, render, search
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


def list_candidates(req: Request) -> Response:
    authorize(req, "placement:allocation_candidates:list")
    started = time.monotonic()
    request = query.parse_request(req)
    settings = req.app.settings.placement
    # Poll and reloads are statements that need no common snapshot (cache.py).
    with req.app.db.read_statements() as conn:
        snap = req.app.candidates.view(conn, *_names(request))
    rng = random.Random() if settings.randomize_allocation_candidates else None
    memo = req.app.candidates.memo
    result = search.search(snap, request, settings.max_allocation_candidates, rng, memo)
    body = render.render_json(snap, request, result, memo)
    metrics.candidates_answered(started, result)
    return cache_headers(req, Response(200, body, [("content-type", "application/json")]))


ROUTES = [
    Route("GET", "/allocation_candidates", list_candidates, min_version=10),
]
