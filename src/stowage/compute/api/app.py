"""Assemble the Compute service: routes, auth, Nova's policy defaults and error bodies.

Auth is noauth2 or the built-in identity service's tokens (`identity.middleware`).

Errors use Nova's body, `{"itemNotFound": {"code": 404, "message": "..."}}`,
whose key names the kind of fault; the openstack CLI prints `message`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from stowage.compute.api import all_routes
from stowage.compute.api.root import PUBLIC_PATHS
from stowage.compute.cells import CellMapping, Cells
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
from stowage.web.errors import HTTPError, webob_error
from stowage.web.http import Request, Response, json_response
from stowage.web.limits import BodyLimits
from stowage.web.routing import Router

if TYPE_CHECKING:
    from stowage.compute.runtime import ControlPlane

__all__ = ["ComputeState", "build_app", "render_error", "FAULT_NAMES"]

LOG = logging.getLogger(__name__)
T = TypeVar("T")
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

    def cell_dbs(self) -> list[Database]:
        """Every cell's database once (cells may share one): what a listing reads."""
        return [db for _, db in self.cells.distinct()]

    def other_cell_dbs(self, db: Database) -> list[Database]:
        """Every cell database but `db` (the one a request already reads)."""
        return [other for other in self.cell_dbs() if other.engine is not db.engine]

    def host_db(self, host: str) -> Database:
        """The database of the host's cell (the default cell's for a host no mapping
        names: reading it answers 404 as for any unknown host)."""
        if self.cells.one_database() is not None:
            return self.cell_db
        cell = self.cells.of_host(host)
        return self.cell_db if cell is None else self.cells.database(cell)

    def find_in_cells(self, find: Callable[[Connection], T]) -> tuple[Database, T]:
        """The first cell database where `find` (a read) does not raise NotFound, with
        what it found; NotFound from the last when none has it. For records named by an
        id that says nothing of its cell (a service's, a hypervisor's)."""
        error: NotFound | None = None
        for db in self.cell_dbs():
            try:
                with db.read() as conn:
                    return db, find(conn)
            except NotFound as exc:
                error = exc
        assert error is not None
        raise error

    def read_cells(self, read: Callable[[Connection], T], skip_down: bool = False) -> list[T]:
        """`read` in each cell database's read transaction, the results in cell order: what
        an admin listing gathers. With `skip_down` (Nova's os-hosts and migrations) a cell
        database that does not answer is left out with a warning, unless it is the only one;
        else its error propagates (a 500, as Nova answers for hypervisors with a down cell)."""
        if skip_down:
            return self.gather(read)[0]
        results: list[T] = []
        for _, db in self.cells.distinct():
            with db.read() as conn:
                results.append(read(conn))
        return results

    def gather(self, read: Callable[[Connection], T]) -> tuple[list[T], list[CellMapping]]:
        """`read` in each cell database that answers, the results in cell order, and the
        cells whose database did not (down_cells.py); the only database's error stands."""
        databases = self.cells.distinct()
        results: list[T] = []
        down: list[CellMapping] = []
        for members, db in databases:
            try:
                with db.read() as conn:
                    results.append(read(conn))
            except DBAPIError as exc:
                if len(databases) == 1:
                    raise
                LOG.warning("cells %s did not answer; their records are left out: %s",
                            [c.name for c in members], exc)
                down += members
        return results, down

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
        limits=BodyLimits.of(settings.api, "compute"),
        render_too_large=webob_error,
        cors=Cors(settings.cors) if settings.cors.allowed_origin else None,
    )
    return ServiceApp(spec, ComputeState(settings, db, Enforcer(settings.policy, COMPUTE_RULES)))
