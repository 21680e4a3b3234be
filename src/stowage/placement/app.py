"""Assemble the Placement service: routes, auth (noauth2 or tokens), policy, CORS, error bodies."""

from __future__ import annotations

import html
from dataclasses import dataclass

from stowage.config import Settings
from stowage.db import Database
from stowage.identity.middleware import authenticator_for, challenge_for
from stowage.placement import codes
from stowage.placement.api import all_routes
from stowage.placement.candidates.cache import SnapshotCache
from stowage.placement.versions import VERSIONS
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.auth import ANONYMOUS_CLIENT_TOKEN, noauth2
from stowage.web.cors import Cors
from stowage.web.errors import EXPLANATIONS, HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Router

__all__ = ["ANONYMOUS_CLIENT_TOKEN", "PlacementState", "build_app", "noauth2"]


@dataclass
class PlacementState:
    settings: Settings
    db: Database
    enforcer: Enforcer
    # Per-worker provider snapshot for the candidate engine and provider filters.
    candidates: SnapshotCache


def _accept_quality(accept: str, media_type: str) -> float:
    for item in accept.split(","):
        kind, _, params = item.strip().partition(";")
        if kind.strip().lower() == media_type:
            for param in params.split(";"):
                name, _, value = param.strip().partition("=")
                if name == "q":
                    try:
                        return float(value)
                    except ValueError:
                        return 0.0
            return 1.0
    return 0.0


def prefers_html(accept: str | None) -> bool:
    """A browser that names text/html (at least as keenly as JSON) gets an HTML error page.

    Everything else, wildcards included, gets the JSON error body that API
    clients parse; upstream's webob would answer `*/*` with HTML too.
    """
    if not accept:
        return False
    html = _accept_quality(accept, "text/html")
    return html > 0 and html >= _accept_quality(accept, "application/json")


def _html_error(err: HTTPError, explanation: str) -> Response:
    status = f"{err.status} {err.title}"
    page = (f"<html>\n <head>\n  <title>{status}</title>\n </head>\n <body>\n"
            f"  <h1>{status}</h1>\n  {html.escape(explanation)}<br /><br />\n"
            f"{html.escape(err.detail)}\n\n\n </body>\n</html>")
    return Response(err.status, page.encode(), [("content-type", "text/html; charset=UTF-8")])


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    explanation = EXPLANATIONS.get(err.status, err.title)
    if prefers_html(req.headers.get("accept")):
        return _html_error(err, explanation)
    body: dict[str, object] = {
        "status": err.status,
        "title": err.title,
        "detail": f"{explanation}\n\n {err.detail}  ",
        "request_id": req.context.request_id,
    }
    if versioned and req.version.at_least(23):
        body["code"] = err.code or codes.DEFAULT
    body.update(err.extra)
    return json_response({"errors": [body]}, status=err.status)


def build_app(settings: Settings, db: Database) -> ServiceApp:
    spec = ServiceSpec(
        service_type="placement",
        versions=VERSIONS,
        router=Router(all_routes()),
        render_error=render_error,
        authenticate=authenticator_for(settings, db),
        challenge=challenge_for(settings),
        limits=BodyLimits.of(settings.api, "placement"),
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    state = PlacementState(settings, db, Enforcer(settings.policy), SnapshotCache())
    return ServiceApp(spec, state)
