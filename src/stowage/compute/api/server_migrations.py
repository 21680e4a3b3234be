"""GET /servers/{id}/migrations[/{migration_id}] (2.23): the server's in-progress live migrations.

As in Nova, only live migrations that are still running are listed or shown;
a cold migration or resize is visible through /os-migrations instead. 2.59
adds `uuid`, 2.80 `user_id` and `project_id`.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import migrations as migs
from stowage.compute.api.common import API_PREFIX, at_least, authorize, require_version
from stowage.compute.api.migrations import LIVE_IN_PROGRESS, PAGING, USER_PROJECT
from stowage.compute.api.server_common import get_server
from stowage.compute.api.server_views import primitive_time
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

SERVER_MIGRATIONS = 23


def view(req: Request, mig: migs.Migration) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": mig.id, "server_uuid": mig.instance_uuid, "status": mig.status,
        "source_compute": mig.source_compute, "source_node": mig.source_node,
        "dest_compute": mig.dest_compute, "dest_node": mig.dest_node,
        "dest_host": mig.dest_host,
        "memory_total_bytes": None, "memory_processed_bytes": None,
        "memory_remaining_bytes": None, "disk_total_bytes": None,
        "disk_processed_bytes": None, "disk_remaining_bytes": None,
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


def list_server_migrations(req: Request) -> Response:
    require_version(req, SERVER_MIGRATIONS)
    with req.app.db.read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:migrations:index",
                  {"project_id": instance.project_id})
        found = [m for m in migs.for_instance(conn, instance.uuid) if _live_in_progress(m)]
    found.sort(key=lambda m: m.id or 0)
    return json_response({"migrations": [view(req, m) for m in found]})


def show_server_migration(req: Request) -> Response:
    require_version(req, SERVER_MIGRATIONS)
    server_id, ident = req.params["server_id"], req.params["migration_id"]
    with req.app.db.read() as conn:
        instance = get_server(req, conn, server_id)
        authorize(req, "os_compute_api:servers:migrations:show",
                  {"project_id": instance.project_id})
        mig = next((m for m in migs.for_instance(conn, instance.uuid)
                    if str(m.id) == ident), None)
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


_BASE = API_PREFIX + "/servers/{server_id}/migrations"
ROUTES = [
    Route("GET", _BASE, list_server_migrations),
    Route("GET", _BASE + "/{migration_id}", show_server_migration),
]
