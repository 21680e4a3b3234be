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
from stowage.image import (
    api_import,
    api_members,
    api_metadef_items,
    api_metadefs,
    api_tasks,
    data,
    metadef_schemas,
    metadefs,
    policy,
)
from stowage.image.api import PUBLIC_PATHS, ROUTES
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import HTTPError, webob_error
from stowage.web.http import Request, Response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Router

__all__ = ["ImageState", "ALL_ROUTES", "build_app", "render_error"]

LOG = logging.getLogger(__name__)


@dataclass
class ImageState:
    settings: Settings
    db: Database
    # Glance's rules with the operator's overrides (policy.py).
    enforcer: Enforcer


# Every route of the Image service: images and their data, members, import, tasks,
# metadata definitions.
ALL_ROUTES = [*ROUTES, *api_members.ROUTES, *api_import.ROUTES, *api_tasks.ROUTES,
              *api_metadefs.ROUTES, *api_metadef_items.ROUTES, *metadef_schemas.ROUTES]


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    """Glance answers JSON clients with webob's body: code, title and message."""
    return webob_error(req, err, versioned)


def build_app(settings: Settings, db: Database) -> ServiceApp:
    spec = ServiceSpec(
        service_type="image",
        versions=("2.0",),
        router=Router(ALL_ROUTES),
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
    # What `glance-manage db_load_metadefs` gives a new Glance: the standard resource types.
    try:
        metadefs.seed_resource_types(db)
    except sqlalchemy.exc.DBAPIError as exc:
        LOG.warning("metadata definition resource types not seeded: %s", exc.orig)
    return ServiceApp(spec, ImageState(settings, db, policy.enforcer(settings.policy)))
