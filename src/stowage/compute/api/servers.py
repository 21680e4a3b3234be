"""/servers/{id}: show, update (PUT), and delete.

PUT changes the name, accessIPv4/v6 (checked as Nova's ipv4/ipv6 formats),
OS-DCF:diskConfig, from 2.19 the description and from 2.90 the hostname.

Deleting follows the division of labour: the API records the `delete` action,
swaps the task_state to `deleting` and casts to the conductor, which frees
the host and the allocations. As in Nova, a server is deleted in any task
state: an operation still running on it (a build, a move, a power change)
finds `deleting` at its next state change, stops, and leaves nothing behind.
A server that never reached a host (an ERROR from scheduling) holds nothing
anywhere, so the API deletes it right away.

With `reclaim_instance_interval` > 0 (Nova's deferred delete) a launched
server at rest on its host is soft deleted instead: task `soft-deleting`,
its guest powered off by the conductor, then SOFT_DELETED, still holding its
host and allocation; `restore` and `forceDelete` (server_deferred_delete.py)
and the conductor's periodic reclaim take it from there.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from stowage.compute import actions, instance_ports, states
from stowage.compute import cells as cell_records
from stowage.compute import instances as inst
from stowage.compute import tags as tag_records
from stowage.compute.api import down_cells, server_security_groups, server_shelve
from stowage.compute.api import server_queries as queries
from stowage.compute.api import server_views as views
from stowage.compute.api.action_common import accept, cast_after_commit, start_action
from stowage.compute.api.common import API_PREFIX, at_least, authorize, read_body, validate_body
from stowage.compute.api.server_common import (
    check_unlocked,
    conductor,
    get_server,
    move_state,
    target,
)
from stowage.compute.api.server_create import DESCRIPTION, NAME, check_description, check_name
from stowage.compute.api.server_create_schema import HOSTNAME, SETTABLE_HOSTNAME, access_ips
from stowage.compute.conductor import tasks
from stowage.compute.states import TASK
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

LOG = logging.getLogger(__name__)

__all__ = ["ROUTES", "delete_now"]

_UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"server": {
        "type": "object",
        "properties": {"name": NAME,
                       "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]},
                       "accessIPv4": {"type": "string"}, "accessIPv6": {"type": "string"}},
        "additionalProperties": False}},
    "required": ["server"],
    "additionalProperties": False,
}
_UPDATE_SCHEMA_2_19: dict[str, Any] = {
    **_UPDATE_SCHEMA,
    "properties": {"server": {
        **_UPDATE_SCHEMA["properties"]["server"],
        "properties": {**_UPDATE_SCHEMA["properties"]["server"]["properties"],
                       "description": DESCRIPTION}}},
}
_UPDATE_SCHEMA_2_90: dict[str, Any] = {
    **_UPDATE_SCHEMA,
    "properties": {"server": {
        **_UPDATE_SCHEMA["properties"]["server"],
        "properties": {**_UPDATE_SCHEMA_2_19["properties"]["server"]["properties"],
                       "hostname": HOSTNAME}}},
}


def _update_schema(req: Request) -> dict[str, Any]:
    if at_least(req, SETTABLE_HOSTNAME):
        return _UPDATE_SCHEMA_2_90
    return _UPDATE_SCHEMA_2_19 if at_least(req, views.DESCRIPTION) else _UPDATE_SCHEMA


def show_server(req: Request) -> Response:
    """What clients poll: the server and its host's service in one statement of its cell,
    then its host's zone and its groups from the API database."""
    project = None if req.context.is_admin else req.context.project_id
    try:
        instance, extras = _read_shown(req, project)
    except DBAPIError:
        if not at_least(req, down_cells.DOWN_CELLS) or len(req.app.cell_dbs()) == 1:
            raise  # Nova: a 500 before 2.69
        return json_response({"server": _from_down_cell(req, project)})
    views.finish_extras(req, extras, [instance], with_groups=True)
    server_security_groups.fill(req, extras)
    view = views.show(req, instance, views.Shown.for_request(req), extras, with_groups=True)
    return json_response({"server": view})


def _from_down_cell(req: Request, project: str | None) -> dict[str, Any]:
    LOG.warning("the cell of server %s did not answer", req.params["server_id"])
    view = down_cells.minimal_server(req, req.params["server_id"])
    if project is not None and view["tenant_id"] != project:
        raise HTTPError(404, f"Instance {req.params['server_id']} could not be found.")
    return view


def _read_shown(req: Request, project: str | None) -> tuple[inst.Instance, views.Extras]:
    """The server and what its view needs from its cell (one read transaction)."""
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance, service = queries.server_with_host(conn, req.params["server_id"], project)
        authorize(req, "os_compute_api:servers:show", target(instance))
        extras = views.Extras(
            services={instance.host: service} if service is not None and instance.host
            else {},
            ports=instance_ports.of_instances(conn, [instance.uuid]),
            tags=tag_records.of_instances(conn, [instance.uuid]))
        if views.status(instance) in views.FAULT_STATUSES:
            extras.faults = inst.latest_faults(conn, [instance.uuid])
    return instance, extras


def update_server(req: Request) -> Response:
    body = validate_body(read_body(req), _update_schema(req))["server"]
    values: dict[str, Any] = {}
    if "name" in body:
        check_name(body["name"])
        values["display_name"] = body["name"]
    if "description" in body:
        check_description(body["description"])
        values["display_description"] = body["description"]
    if "hostname" in body:  # stored as given, as Nova stores it
        values["hostname"] = body["hostname"]
    values.update(access_ips(body))
    if "OS-DCF:diskConfig" in body:
        values["auto_disk_config"] = body["OS-DCF:diskConfig"] == "AUTO"
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:update", target(instance))
        if values:
            instance = inst.update(conn, instance.uuid, **values)
        extras = views.load_extras(conn, [instance])
    views.finish_extras(req, extras, [instance], with_groups=True)
    server_security_groups.fill(req, extras)
    return json_response({"server": views.updated(req, instance, views.Shown.for_request(req),
                                                  extras)})


def delete_server(req: Request) -> Response:
    """Delete at once, or (`reclaim_instance_interval` > 0) soft delete: Nova's choice."""
    ctx = req.context
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:delete", target(instance))
        check_unlocked(req, instance)
        if instance.task_state == TASK.DELETING:
            return empty_response(204)  # already on its way out
        soft = _soft_deletable(req, instance)
        operation = _soft_delete(req, conn, instance) if soft else delete_now(req, conn,
                                                                               instance)
        queue_for_delete(req, conn, instance.uuid)
    if operation is None:
        return empty_response(204)
    if soft:
        cast_after_commit(
            req, instance,
            lambda c: c.guest_action(instance.uuid, ctx.request_id, "soft_delete", operation),
            {"task_state": None, "deleted_at": None}, ("soft_delete", operation))
    else:
        conductor(req).delete_instance(instance.uuid, ctx.request_id, operation)
    return empty_response(204)


def queue_for_delete(req: Request, conn: Connection, uuid: str, queued: bool = True) -> None:
    """Mark the server's mapping (in the cell's transaction, `conn`): a down cell's listing
    leaves it out (down_cells.py); os-restore takes the mark back."""
    with req.app.db.using(conn, write=True) as api:
        cell_records.queue_for_delete(api, uuid, queued)


def delete_now(req: Request, conn: Connection, instance: inst.Instance) -> str | None:
    """Start the delete (records only for a server with no host, then None)."""
    ctx = req.context
    actions.start_action(conn, instance.uuid, "delete", ctx.request_id, ctx.user_id,
                         ctx.project_id)
    server_shelve.forget_snapshot(req, conn, instance)
    if instance.host is None and instance.vm_state == states.ERROR:
        _delete_here(req, conn, instance, ctx.request_id)
        return None
    # Whatever runs now (a build, a move, a power change) notices and stops.
    inst.update(conn, instance.uuid, task_state=TASK.DELETING, progress=0)
    # Durable with the task state: a cast lost in a crash is found on restart.
    return tasks.accept(conn, "delete", instance.uuid, ctx.request_id)


# Deferred delete: a server resting in one of these with its guest on a host is soft
# deleted; any other (building, moving, resized, shelved, in ERROR) is deleted at once,
# as Nova deletes one that never launched.
_SOFT_DELETABLE = (states.ACTIVE, states.STOPPED, states.PAUSED, states.SUSPENDED,
                   states.SOFT_DELETED)


def _reclaim_interval(req: Request) -> int:
    """The setting the conductor reclaims with: the control plane's, when it runs here."""
    plane = req.app.plane
    settings = req.app.settings.compute if plane is None else plane.settings
    return int(settings.reclaim_instance_interval)


def _soft_deletable(req: Request, instance: inst.Instance) -> bool:
    return (_reclaim_interval(req) > 0
            and instance.vm_state in _SOFT_DELETABLE and instance.task_state is None
            and instance.host is not None and instance.launched_at is not None)


def _soft_delete(req: Request, conn: Connection, instance: inst.Instance) -> str:
    """Nova's soft_delete: task soft-deleting and deleted_at now, then the guest powered off
    (conductor/guest_actions.py); the allocation stays until the server is reclaimed."""
    start_action(conn, req, instance, "delete")
    move_state(conn, instance, "delete", task_state=TASK.SOFT_DELETING, deleted_at=utcnow())
    return accept(conn, req, instance, "soft_delete")


def _delete_here(req: Request, conn: Any, instance: inst.Instance, request_id: str) -> None:
    """A server without a host: nothing to free but its records."""
    inst.soft_delete(conn, instance.uuid)
    queries.forget_instance(conn, req.app.db, instance.uuid)
    actions.finish_action(conn, instance.uuid, request_id)


_ONE = API_PREFIX + "/servers/{server_id}"
ROUTES = [
    Route("GET", _ONE, show_server),
    Route("PUT", _ONE, update_server, json_body=True),
    Route("DELETE", _ONE, delete_server),
]
