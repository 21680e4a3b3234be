"""/os-services: list the workers, enable/disable/force down a compute service, delete one.

Before 2.53 a service is named by host and binary in the body of
`PUT /os-services/{enable|disable|disable-log-reason|force-down}` (the last
from 2.11) and by integer id on DELETE; from 2.53 by uuid, with one
`PUT /os-services/{uuid}` taking status, disabled_reason and forced_down.
Disabling a compute service also puts COMPUTE_STATUS_DISABLED on its
provider (the agent re-asserts it at every report, so a miss heals itself).
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import aggregates as aggs
from stowage.compute import cells as cell_records
from stowage.compute import instances, migrations
from stowage.compute import services as svc
from stowage.compute import tables as t
from stowage.compute.agent import evacuation
from stowage.compute.agent import resource_tracker as rt
from stowage.compute.api import down_cells
from stowage.compute.api.common import (
    API_PREFIX,
    BOOLEAN,
    as_bool,
    at_least,
    authorize,
    query_param,
    read_body,
    validate_body,
    validate_query,
)
from stowage.db import Database
from stowage.errors import NotFound
from stowage.placement.client import PlacementError
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "service_view", "is_uuid", "zone_of", "sync_status_trait"]

LOG = logging.getLogger(__name__)

FORCED_DOWN = 11  # forced_down in views, PUT /os-services/force-down
SERVICE_UUIDS = 53  # ids are uuids; one PUT /os-services/{uuid}
STRICT_QUERY = 75  # unknown query parameters are refused

_REASON = {"type": "string", "minLength": 1, "maxLength": 255}
UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255},
                   "binary": {"type": "string", "minLength": 1, "maxLength": 255},
                   "disabled_reason": _REASON},
    "required": ["host", "binary"],
    "additionalProperties": False,
}
UPDATE_SCHEMA_2_11 = {**UPDATE_SCHEMA, "properties": {**UPDATE_SCHEMA["properties"],
                                                      "forced_down": BOOLEAN}}
UPDATE_SCHEMA_2_53 = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["enabled", "disabled"]},
                   "disabled_reason": _REASON, "forced_down": BOOLEAN},
    "additionalProperties": False,
}
INDEX_QUERY: dict[str, Any] = {
    "type": "object",
    "properties": {"host": {"type": "string"}, "binary": {"type": "string"}},
    "additionalProperties": True,
}
INDEX_QUERY_2_75 = {**INDEX_QUERY, "additionalProperties": False}


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _timestamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def in_zones(req: Request, found: list[svc.Service]) -> list[svc.Service]:
    """The services (a cell's) with their hosts' zones (the API database's aggregates)."""
    with req.app.db.read() as conn:
        return aggs.with_zones(conn, found)


def zone_of(req: Request, service: svc.Service) -> str:
    """Compute services live in their host's AZ; the others in Nova's internal zone."""
    if service.binary != svc.COMPUTE:
        return svc.INTERNAL_ZONE
    return service.availability_zone or req.app.settings.compute.default_availability_zone


def service_view(req: Request, service: svc.Service,
                 now: datetime.datetime | None = None) -> dict[str, Any]:
    up = svc.is_up(service, req.app.settings.compute, now)
    view: dict[str, Any] = {
        "binary": service.binary, "host": service.host,
        "id": service.uuid if at_least(req, SERVICE_UUIDS) else service.id,
        "zone": zone_of(req, service),
        "status": "disabled" if service.disabled else "enabled",
        "state": "up" if up else "down",
        "updated_at": _timestamp(service.last_seen_up or service.updated_at),
        "disabled_reason": service.disabled_reason,
    }
    if at_least(req, FORCED_DOWN):
        view["forced_down"] = service.forced_down
    return view


def list_services(req: Request) -> Response:
    authorize(req, "os_compute_api:os-services:list", {})
    validate_query(req, INDEX_QUERY_2_75 if at_least(req, STRICT_QUERY) else INDEX_QUERY)
    host, binary = query_param(req, "host") or None, query_param(req, "binary") or None
    # Each cell's, in cell order (Nova's scatter-gather).
    parts, down = req.app.gather(lambda conn: svc.list_services(conn, host=host,
                                                                binary=binary))
    found: list[svc.Service] = [service for part in parts for service in part]
    now = utcnow()
    shown = [service_view(req, s, now) for s in in_zones(req, found)]
    if down and at_least(req, down_cells.DOWN_CELLS) and binary in (None, svc.COMPUTE):
        shown += [s for s in down_cells.minimal_services(req, down)
                  if host is None or s["host"] == host]
    return json_response({"services": shown})


# --- updates ------------------------------------------------------------------------
def update_service(req: Request) -> Response:
    authorize(req, "os_compute_api:os-services:update", {})
    if at_least(req, SERVICE_UUIDS):
        return _update_by_uuid(req, req.params["service_id"])
    return _update_by_action(req, req.params["service_id"])


def _only_compute(binary: str) -> None:
    if binary != svc.COMPUTE:
        raise HTTPError(400, f"Updating a {binary} service is not supported. Only "
                             "nova-compute services can be updated.")


def _update_by_action(req: Request, action: str) -> Response:
    actions = ("enable", "disable", "disable-log-reason") + (
        ("force-down",) if at_least(req, FORCED_DOWN) else ())
    if action not in actions:
        raise HTTPError(404, "Unknown action")
    schema = UPDATE_SCHEMA_2_11 if at_least(req, FORCED_DOWN) else UPDATE_SCHEMA
    body = validate_body(read_body(req), schema)
    host, binary = body["host"], body["binary"]
    shown: dict[str, Any] = {"host": host, "binary": binary}
    if action == "force-down":
        if "forced_down" not in body:
            raise HTTPError(400, "Missing forced_down field")
        changes: dict[str, Any] = {"forced_down": as_bool(body["forced_down"])}
        shown["forced_down"] = changes["forced_down"]
    elif action == "enable":
        changes = {"disabled": False, "disabled_reason": None}
        shown["status"] = "enabled"
    else:
        reason = body.get("disabled_reason")
        if action == "disable-log-reason" and reason is None:
            raise HTTPError(400, "Missing disabled reason field")
        reason = reason if action == "disable-log-reason" else None
        changes = {"disabled": True, "disabled_reason": reason}
        shown["status"] = "disabled"
        if reason:
            shown["disabled_reason"] = reason
    _only_compute(binary)
    with req.app.host_db(host).write() as conn:
        try:
            service = svc.service_by_host(conn, host, binary)
        except NotFound:
            raise HTTPError(404, f"Could not find binary {binary} on host {host}.") from None
        if changes.get("forced_down") is False:
            _check_for_evacuations(conn, host)
        service = svc.update_service(conn, service.id, **changes)
    sync_status_trait(req, service)
    return json_response({"service": shown})


def _update_by_uuid(req: Request, service_id: str) -> Response:
    if not is_uuid(service_id):
        raise HTTPError(400, f"Invalid uuid {service_id}")
    body = validate_body(read_body(req), UPDATE_SCHEMA_2_53)
    with _service_db(req, service_id).write() as conn:
        try:
            service = svc.get_service(conn, service_id)
        except NotFound:
            raise HTTPError(404, f"Service {service_id} could not be found.") from None
        _only_compute(service.binary)
        changes: dict[str, Any] = {}
        if body.get("status") == "enabled":
            if body.get("disabled_reason"):
                raise HTTPError(400, "Specifying 'disabled_reason' with status 'enabled' "
                                     "is invalid.")
            changes.update(disabled=False, disabled_reason=None)
        elif body.get("status") == "disabled":
            changes.update(disabled=True, disabled_reason=body.get("disabled_reason"))
        if "forced_down" in body:
            changes["forced_down"] = as_bool(body["forced_down"])
            if changes["forced_down"] is False:
                _check_for_evacuations(conn, service.host)
        if not changes:
            raise HTTPError(400, "No updates were requested. Fields 'status' or "
                                 "'forced_down' should be specified.")
        service = svc.update_service(conn, service.id, **changes)
    sync_status_trait(req, service)
    return json_response({"service": service_view(req, in_zones(req, [service])[0])})


def _check_for_evacuations(conn: Connection, host: str) -> None:
    """A host forced back up must not still have `done` evacuations (Nova's guard); a
    deleted server's (soft-deleted) does not count, as Nova reads with
    `read_deleted="no"`."""
    m = t.migrations
    done = migrations.list_migrations(conn, where=[m.c.source_compute == host,
                                                   m.c.status == "done",
                                                   m.c.migration_type == "evacuation",
                                                   m.c.deleted == 0])
    if done:
        raise HTTPError(400, f"Unable to force up host {host} as `done` evacuation migration "
                             "records remain associated with the host. Ensure the compute "
                             "service has been restarted, allowing these records to move to "
                             "`completed` before retrying this request.")


def sync_status_trait(req: Request, service: svc.Service) -> None:
    """COMPUTE_STATUS_DISABLED follows the service now rather than at the next report."""
    plane = req.app.plane
    if plane is None or service.binary != svc.COMPUTE:
        return
    with req.app.host_db(service.host).read() as conn:
        nodes = svc.compute_nodes_of_host(conn, service.host)
    for node in nodes:
        try:
            rt.set_status_trait(plane.placement, node.uuid, service.disabled)
        except PlacementError as exc:
            LOG.warning("could not sync COMPUTE_STATUS_DISABLED on %s: %s", node.uuid, exc)


# --- delete -----------------------------------------------------------------------
def delete_service(req: Request) -> Response:
    authorize(req, "os_compute_api:os-services:delete", {})
    ident = _parse_id(req, req.params["service_id"])
    cell_db = _service_db(req, ident)
    with cell_db.write() as conn:
        try:
            service = svc.get_service(conn, ident)
        except NotFound:
            raise HTTPError(404, f"Service {ident} not found.") from None
        if service.binary == svc.COMPUTE:
            _check_unused(conn, service.host)
        nodes = svc.delete_service(conn, service.id)
    if service.binary == svc.COMPUTE:  # as Nova: the host's mapping goes with it
        with req.app.db.write() as conn:
            cell_records.unmap_host(conn, service.host)
    plane = req.app.plane
    if plane is not None and service.binary == svc.COMPUTE:
        # Its agent will not come back to release what its evacuations still hold.
        evacuation.release_deleted_source(cell_db, plane.placement, service.host)
    for node in nodes if plane is not None else ():
        try:
            rt.delete_tree(plane.placement, node.uuid)  # with its network device providers
        except PlacementError as exc:
            LOG.error("Failed to delete compute node resource provider for compute node "
                      "%s: %s", node.uuid, exc)
    return empty_response(204)


def _service_db(req: Request, ident: int | str) -> Database:
    """The cell database holding the service (an integer id is only unique in its cell:
    the first cell that has it, as Nova finds it); the default cell's when none does."""
    try:
        found: Database = req.app.find_in_cells(lambda conn: svc.get_service(conn, ident))[0]
    except NotFound:
        found = req.app.cell_db
    return found


def _parse_id(req: Request, value: str) -> int | str:
    if at_least(req, SERVICE_UUIDS):
        if not is_uuid(value):
            raise HTTPError(400, f"Invalid uuid {value}")
        return value
    try:
        return int(value)
    except ValueError:
        raise HTTPError(400, "Invalid input received: id must be an integer") from None


def _check_unused(conn: Connection, host: str) -> None:
    if instances.list_instances(conn, host=host):
        raise HTTPError(409, "Unable to delete compute service that is hosting instances. "
                             "Migrate or delete the instances first.")
    if migrations.in_progress(conn, host=host):
        raise HTTPError(409, "Unable to delete compute service that has in-progress "
                             "migrations. Complete the migrations or delete the instances "
                             "first.")


_ONE = API_PREFIX + "/os-services/{service_id}"
ROUTES = [
    Route("GET", API_PREFIX + "/os-services", list_services),
    Route("PUT", _ONE, update_service, json_body=True),
    Route("DELETE", _ONE, delete_service),
]
