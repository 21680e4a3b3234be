"""Assemble the Placement service: routes, noauth2 auth, policy, CORS, error bodies."""

from __future__ import annotations

from dataclasses import dataclass

from stowage.config import Settings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.placement import codes
from stowage.placement.api import all_routes
from stowage.placement.versions import VERSIONS
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import EXPLANATIONS, HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Router

__all__ = ["PlacementState", "build_app", "noauth2"]

# keystoneauth's `none` plugin sends this token; treat it like `admin` so that
# stock clients configured without credentials work against a standalone service.
ANONYMOUS_CLIENT_TOKEN = "notused"


@dataclass
class PlacementState:
    settings: Settings
    db: Database
    enforcer: Enforcer


def noauth2(req: Request) -> RequestContext | None:
    """Upstream's test auth: the token is `user[:project]`; `admin` is an admin."""
    token = req.headers.get("x-auth-token")
    if token is None:
        return None
    if token == ANONYMOUS_CLIENT_TOKEN:
        token = "admin"
    user_id, _, project_id = token.partition(":")
    project_id = project_id or user_id
    if "x-roles" in req.headers:
        roles = tuple(r.strip() for r in req.headers["x-roles"].split(",") if r.strip())
    else:
        roles = ("admin",) if user_id == "admin" else ()
    system_scope = req.headers.get("openstack-system-scope")
    return RequestContext(user_id=user_id, project_id=None if system_scope else project_id,
                          roles=roles, system_scope=system_scope)


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    explanation = EXPLANATIONS.get(err.status, err.title)
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
        authenticate=noauth2,
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    return ServiceApp(spec, PlacementState(settings, db, Enforcer(settings.policy)))
