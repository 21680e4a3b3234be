"""Assemble the built-in identity service: Identity v3 routes, tokens, Keystone's errors.

Errors use Keystone's body, `{"error": {"code": 401, "title": "Unauthorized",
"message": "..."}}`, and a 401 carries `WWW-Authenticate: Keystone uri=...`
as Keystone's does. Discovery and `POST /v3/auth/tokens` are public.
"""

from __future__ import annotations

from stowage.config import Settings
from stowage.db import Database
from stowage.identity.api import all_routes
from stowage.identity.api.common import IdentityState
from stowage.identity.api.versions import PUBLIC_PATHS
from stowage.identity.directory import Directory
from stowage.identity.middleware import authenticator_for, identity_url
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import HTTPError, webob_error
from stowage.web.http import Request, Response, json_response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Router

__all__ = ["build_app", "render_error"]


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    resp = json_response({"error": {"code": err.status, "title": err.title,
                                    "message": err.detail}}, status=err.status)
    if err.status == 401:
        public_url = req.app.settings.identity.public_url if req.app else None
        resp.headers.append(("www-authenticate",
                             f'Keystone uri="{identity_url(req, public_url)}"'))
    return resp


def build_app(settings: Settings, db: Database) -> ServiceApp:
    """The identity service; ValueError when the `[identity]` directory is inconsistent."""
    spec = ServiceSpec(
        service_type="identity",
        versions=("3.14",),
        router=Router(all_routes()),
        render_error=render_error,
        authenticate=authenticator_for(settings, db),
        microversioned=False,
        public_paths=PUBLIC_PATHS | {"/v3/auth/tokens"},
        limits=BodyLimits.of(settings.api, "identity"),
        render_too_large=webob_error,
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    directory = Directory.from_settings(settings.identity)
    return ServiceApp(spec, IdentityState(settings, db, directory))
