"""Assemble the Compute service: routes, auth, Nova's policy defaults and error bodies.

Auth is noauth2 or the built-in identity service's tokens (`identity.middleware`).

Errors use Nova's body, `{"itemNotFound": {"code": 404, "message": "..."}}`,
whose key names the kind of fault; the openstack CLI prints `message`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stowage.compute.api import all_routes
from stowage.compute.api.root import PUBLIC_PATHS
from stowage.compute.cells import Cells
from stowage.compute.policy import COMPUTE_RULES
from stowage.compute.versions import VERSIONS
from stowage.config import Settings
from stowage.db import Database
from stowage.db.engine import API
from stowage.errors import NotFound
from stowage.identity.middleware import authenticator_for, challenge_for
from stowage.policy import Enforcer
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.cors import Cors
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Router

if TYPE_CHECKING:
    from stowage.compute.runtime import ControlPlane

__all__ = ["ComputeState", "build_app", "render_error", "FAULT_NAMES"]

LEGACY_HEADER = "x-openstack-nova-api-version"

# Nova's wsgi.Fault names; any other status is a "computeFault".
FAULT_NAMES = {
    400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
    405: "badMethod", 409: "conflictingRequest", 413: "overLimit", 415: "badMediaType",
    429: "overLimit", 501: "notImplemented", 503: "serviceUnavailable",
}


@dataclass
class ComputeState:
    settings: Settings
    db: Database
    enforcer: Enforcer
    # Conductor, scheduler and agents; None only for an API that serves no servers.
    plane: ControlPlane | None = None
    # `db` is the API database; the cells' come from `cells` (docs/cells.md).
    cells: Cells = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.db = self.db.view(API)
        self.cells = Cells(self.db)

    @property
    def cell_db(self) -> Database:
        """The database of the deployment's (default) cell: what a request that names no
        server reads hosts, services and servers from."""
        return self.cells.database(self.cells.default())

    def server_db(self, server_uuid: str) -> Database:
        """The database of the cell that holds the server; the default cell's when none
        does (where reading it answers 404 as for any unknown server)."""
        try:
            return self.cells.db_of_instance(server_uuid)
        except NotFound:
            return self.cell_db


def render_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    name = FAULT_NAMES.get(err.status, "computeFault")
    resp = json_response({name: {"code": err.status, "message": err.detail}}, status=err.status)
    resp.headers[0] = ("content-type", "application/json; charset=UTF-8")
    return resp


def build_app(settings: Settings, db: Database) -> ServiceApp:
    spec = ServiceSpec(
        service_type="compute",
        versions=VERSIONS,
        router=Router(all_routes()),
        render_error=render_error,
        authenticate=authenticator_for(settings, db),
        challenge=challenge_for(settings),
        legacy_version_headers=(LEGACY_HEADER,),
        echo_legacy_version_headers=True,
        public_paths=PUBLIC_PATHS,
        request_id_headers=("x-openstack-request-id", "x-compute-request-id"),
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    return ServiceApp(spec, ComputeState(settings, db, Enforcer(settings.policy, COMPUTE_RULES)))
