"""/servers/{id}/migrations: a server's in-progress live migrations, and stopping or ending one.

    GET    .../migrations[/{migration_id}]                   2.23  list / show
    POST   .../migrations/{migration_id}/action              2.22  {"force_complete": null}
    DELETE .../migrations/{migration_id}                     2.24  abort

As in Nova, only live migrations that are still in progress (and not
soft-deleted) are listed or shown, with the bytes the copy has moved so far
(the conductor writes them as it polls the source); a cold migration or
resize is visible through /os-migrations instead. 2.59 adds `uuid`, 2.80 `user_id` and `project_id`.

Force-complete needs the server MIGRATING and the migration `running`
(400 "Migration <id> state of instance <uuid> is <status>. Cannot force
complete while the migration is in this state." otherwise; an unknown
migration is 400 too, as Nova answers). Abort needs the server MIGRATING
(409 otherwise) and the migration `running`, or from 2.65 also `queued` or
`preparing` (400 otherwise); an unknown migration is 404. Both answer 202.
A running copy is told to finish or stop by its source agent, as Nova's API
casts to the source compute; a migration still `queued` or `preparing` is
marked `cancelled` in the database, and the conductor stops at its next step
and rolls back. Either way the conductor ends the move: completed, or
`cancelled` with the server ACTIVE on its source and its allocation back.
Policies `os_compute_api:servers:migrations:{index,show,force_complete,delete}`,
admin only.
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import actions
from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute import tables as t
from stowage.compute.api.common import (
    API_PREFIX,
    at_least,
    authorize,
    read_body,
    require_version,
    validate_body,
)
from stowage.compute.api.migrations import LIVE_IN_PROGRESS, PAGING, USER_PROJECT
from stowage.compute.api.server_common import check_state, get_server
from stowage.compute.api.server_views import primitive_time
from stowage.compute.rpc import AgentAPI
from stowage.compute.states import ACTIVE, TASK
from stowage.messaging import MessagingError
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

LOG = logging.getLogger(__name__)

FORCE_COMPLETE = 22
SERVER_MIGRATIONS = 23
ABORT = 24
ABORT_QUEUED = 65
_QUEUED = ("queued", "preparing")
_FORCE_COMPLETE_SCHEMA = {
    "type": "object", "properties": {"force_complete": {"type": "null"}},
    "required": ["force_complete"], "additionalProperties": False,
}


def view(req: Request, mig: migs.Migration) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": mig.id, "server_uuid": mig.instance_uuid, "status": mig.status,
        "source_compute": mig.source_compute, "source_node": mig.source_node,
        "dest_compute": mig.dest_compute, "dest_node": mig.dest_node,
        "dest_host": mig.dest_host,
        "memory_total_bytes": mig.memory_total, "memory_processed_bytes": mig.memory_processed,
        "memory_remaining_bytes": mig.memory_remaining, "disk_total_bytes": mig.disk_total,
        "disk_processed_bytes": mig.disk_processed,
        "disk_remaining_bytes": mig.disk_remaining,
        "created_at": primitive_time(mig.created_at),
        "updated_at": primitive_time(mig.updated_at),
    }
    if at_least(req, PAGING):
        item["uuid"] = mig.uuid
    if at_least(req, USER_PROJECT):
        item["user_id"] = mig.user_id
        item["project_id"] = mig.project_id
    return item


def _live_in_progress(mig: migs.Migration) -> bool:
    return mig.migration_type == "live-migration" and mig.status in LIVE_IN_PROGRESS


def _shown(conn: Connection, instance: inst.Instance) -> list[migs.Migration]:
    """The server's migrations a client may see: not soft-deleted (Nova's
    `read_deleted="no"`), so a deleted one is not found by show, force-complete or abort."""
    return [m for m in migs.for_instance(conn, instance.uuid) if not m.deleted]


def _of_instance(conn: Connection, instance: inst.Instance, ident: str) -> migs.Migration | None:
    return next((m for m in _shown(conn, instance) if str(m.id) == ident), None)


def list_server_migrations(req: Request) -> Response:
    require_version(req, SERVER_MIGRATIONS)
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:migrations:index",
                  {"project_id": instance.project_id})
        found = [m for m in _shown(conn, instance) if _live_in_progress(m)]
    found.sort(key=lambda m: m.id or 0)
    return json_response({"migrations": [view(req, m) for m in found]})


def show_server_migration(req: Request) -> Response:
    require_version(req, SERVER_MIGRATIONS)
    server_id, ident = req.params["server_id"], req.params["migration_id"]
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, server_id)
        authorize(req, "os_compute_api:servers:migrations:show",
                  {"project_id": instance.project_id})
        mig = _of_instance(conn, instance, ident)
    if mig is None:
        raise HTTPError(404, f"In-progress live migration {ident} is not found for server "
                             f"{server_id}.")
    if mig.migration_type != "live-migration":
        raise HTTPError(404, f"Migration {ident} for server {server_id} is not "
                             "live-migration.")
    if mig.status not in LIVE_IN_PROGRESS:
        raise HTTPError(404, f"Live migration {ident} for server {server_id} is not in "
                             "progress.")
    return json_response({"migration": view(req, mig)})


def _not_found(ident: str, instance: inst.Instance, status: int) -> HTTPError:
    return HTTPError(status, f"Migration {ident} not found for instance {instance.uuid}")


def _invalid_state(mig: migs.Migration, instance: inst.Instance, method: str) -> HTTPError:
    return HTTPError(400, f"Migration {mig.id} state of instance {instance.uuid} is "
                          f"{mig.status}. Cannot {method} while the migration is in this "
                          "state.")


def force_complete(req: Request) -> Response:
    require_version(req, FORCE_COMPLETE)
    validate_body(read_body(req), _FORCE_COMPLETE_SCHEMA)
    ident = req.params["migration_id"]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:migrations:force_complete",
                  {"project_id": instance.project_id})
        check_state(instance, "force_complete", (ACTIVE,), (TASK.MIGRATING,))
        mig = _of_instance(conn, instance, ident)
        if mig is None:
            raise _not_found(ident, instance, 400)
        if mig.status != "running":
            raise _invalid_state(mig, instance, "force complete")
        _start_action(req, conn, instance, "live_migration_force_complete")
    _tell_source(req, instance, mig, "live_migration_force_complete")
    return empty_response(202)


def abort(req: Request) -> Response:
    require_version(req, ABORT)
    ident = req.params["migration_id"]
    allowed = ("running", *_QUEUED) if at_least(req, ABORT_QUEUED) else ("running",)
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:migrations:delete",
                  {"project_id": instance.project_id})
        check_state(instance, "abort live migration", None, (TASK.MIGRATING,))
        mig = _of_instance(conn, instance, ident)
        if mig is None:
            raise _not_found(ident, instance, 404)
        if mig.status not in allowed:
            raise _invalid_state(mig, instance, "abort live migration")
        _start_action(req, conn, instance, "live_migration_cancel")
        cancelled = mig.status in _QUEUED and _cancel_queued(conn, mig)
    if cancelled:  # the conductor stops at its next step and rolls back
        with req.app.server_db(req.params["server_id"]).write() as conn:
            actions.finish_action(conn, instance.uuid, req.context.request_id)
    else:
        _tell_source(req, instance, mig, "live_migration_abort")
    return empty_response(202)


def _cancel_queued(conn: Connection, mig: migs.Migration) -> bool:
    """Mark a migration the copy has not reached `cancelled`; False when it is running now."""
    m = t.migrations
    # UPDATE migrations SET status = 'cancelled', updated_at = :now
    #  WHERE uuid = :uuid AND status IN ('queued', 'preparing')
    done = conn.execute(sa.update(m).where(m.c.uuid == mig.uuid, m.c.status.in_(_QUEUED))
                        .values(status="cancelled", updated_at=utcnow())).rowcount
    return bool(done)


def _start_action(req: Request, conn: Connection, instance: inst.Instance,
                  action: str) -> None:
    ctx = req.context
    actions.start_action(conn, instance.uuid, action, ctx.request_id, ctx.user_id,
                         ctx.project_id)


def _tell_source(req: Request, instance: inst.Instance, mig: migs.Migration,
                 method: str) -> None:
    """Ask the source agent to act on the running copy, under an event of the action.

    Nova casts this to the source compute: the answer is 202 whatever the
    agent says, and a source that cannot be reached only fails the event.
    """
    request_id, event = req.context.request_id, f"compute_{method}"
    host = mig.source_compute or instance.host or ""
    with req.app.server_db(req.params["server_id"]).write() as conn:
        actions.start_event(conn, instance.uuid, request_id, event, host)
    error = None
    plane = req.app.plane
    try:
        if plane is None:
            raise MessagingError("the compute control plane is not running in this process")
        AgentAPI(plane.transport).call(host, method, migration_uuid=mig.uuid)
    except MessagingError as exc:
        LOG.warning("%s of migration %s on %s failed: %s", method, mig.uuid, host, exc)
        error = str(exc)[:255]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        actions.finish_event(conn, instance.uuid, request_id, event, error)
        actions.finish_action(conn, instance.uuid, request_id, "Error" if error else None)


_BASE = API_PREFIX + "/servers/{server_id}/migrations"
ROUTES = [
    Route("GET", _BASE, list_server_migrations),
    Route("GET", _BASE + "/{migration_id}", show_server_migration),
    Route("DELETE", _BASE + "/{migration_id}", abort),
    Route("POST", _BASE + "/{migration_id}/action", force_complete, json_body=True),
]
