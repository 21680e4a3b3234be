"""Assemble the Image service: routes, auth (noauth2 or tokens), and Glance-shaped error bodies.

The Image API has no microversions, so responses carry no version headers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy.exc

from stowage.config import Settings
from stowage.db import Database
from stowage.identity.middleware import authenticator_for, challenge_for
from stowage.image import data, policy
from stowage.image.api import PUBLIC_PATHS, ROUTES
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import HTTPError, webob_error
from stowage.web.http import Request, Response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Router

__all__ = ["ImageState", "build_app", "render_error"]

LOG = logging.getLogger(__name__)


@dataclass
class ImageState:
    settings: Settings
    db: Database
    # Glance's rules with the operator's overrides (policy.py).
    enforcer: Enforcer


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    """Glance answers JSON clients with webob's body: code, title and message."""
    return webob_error(req, err, versioned)


def build_app(settings: Settings, db: Database) -> ServiceApp:
    spec = ServiceSpec(
        service_type="image",
        versions=("2.0",),
        router=Router(ROUTES),
        render_error=render_error,
        authenticate=authenticator_for(settings, db),
        challenge=challenge_for(settings),
        microversioned=False,
        public_paths=PUBLIC_PATHS,
        limits=BodyLimits.of(settings.api, "image"),
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    # Uploads cut short by a crash of this service: their images back to queued.
    try:
        data.recover(db, settings)
    except sqlalchemy.exc.DBAPIError as exc:  # e.g. a database not migrated yet
        LOG.warning("image uploads not recovered: %s", exc.orig)
    return ServiceApp(spec, ImageState(settings, db, policy.enforcer(settings.policy)))
