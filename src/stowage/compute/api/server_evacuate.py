"""evacuate: the admin rebuilds the server of a dead host elsewhere.

`POST /servers/{id}/action {"evacuate": {...}}` answers 200, as Nova does
(an asynchronous action that kept its old code). What changes per
microversion, checked in Nova's order:

    2.1   onSharedStorage required; adminPass refused with onSharedStorage true
          ("admin password can't be changed on existing disk"); the answer is
          {"adminPass": <given, or generated unless on shared storage>}
    2.14  onSharedStorage removed; no body in the answer
    2.29  force (boolean): true needs a host ("Can't force to a non-provided
          destination")
    2.68  force removed (stowage has the scheduler check a requested host at
          every version, forced or not: docs/compatibility.md)

Then, for every version: an unknown host is 404 "Compute host <h> not
found."; the server's own host is 400 "The target host can't be the same
one."; vm_state must be active, stopped or error with no task (409
otherwise); and the server's compute service must be down or forced down,
else 400 "Compute service of <host> is still in use." (Nova's
ComputeServiceInUse). Policy `os_compute_api:os-evacuate`, admin only.

Accepting it writes, in one transaction, the `evacuate` instance action,
task_state `rebuilding`, the evacuation migration (`accepted`, as Nova's API
creates it, naming a requested host as its destination) and the journal's
`accepted` row; the conductor (`conductor/evacuate.py`) does the rest.
"""

from __future__ import annotations

import uuid as uuidlib
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute import services, states
from stowage.compute.api import server_queries as queries
from stowage.compute.api.action_common import (
    Handler,
    accept,
    cast_after_commit,
    moving_server,
    refuse_old_computes,
    start_action,
)
from stowage.compute.api.common import BOOLEAN, as_bool, authorize, validate_body
from stowage.compute.api.server_common import check_state, move_state
from stowage.compute.api.server_create import generate_password
from stowage.compute.states import TASK
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response

__all__ = ["ACTIONS"]

NO_SHARED_STORAGE = 14  # onSharedStorage gone, no adminPass in the answer
FORCE = 29  # force appears
NO_FORCE = 68  # force gone

# Nova's parameter_types.hostname.
_HOST = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[a-zA-Z0-9-._]*$"}


def _schema(minor: int) -> dict[str, Any]:
    props: dict[str, Any] = {"host": _HOST, "adminPass": {"type": "string"}}
    body: dict[str, Any] = {"type": "object", "properties": props,
                            "additionalProperties": False}
    if minor < NO_SHARED_STORAGE:
        props["onSharedStorage"] = BOOLEAN
        body["required"] = ["onSharedStorage"]
    if FORCE <= minor < NO_FORCE:
        props["force"] = BOOLEAN
    return {"type": "object", "properties": {"evacuate": body}, "required": ["evacuate"],
            "additionalProperties": False}


def _password(minor: int, evacuate: dict[str, Any]) -> str | None:
    """The new guest's password: given, or generated (not on shared storage before 2.14)."""
    if minor < NO_SHARED_STORAGE and as_bool(evacuate["onSharedStorage"]):
        if "adminPass" in evacuate:
            raise HTTPError(400, "admin password can't be changed on existing disk")
        return None
    given = evacuate.get("adminPass")
    if given is not None:
        return str(given)
    return generate_password()


def _evacuate(req: Request, body: Any) -> Response:
    minor = req.version.minor
    evacuate = validate_body(body, _schema(minor))["evacuate"]
    host: str | None = evacuate.get("host")
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance, service = moving_server(req, conn)
        authorize(req, "os_compute_api:os-evacuate",
                  {"project_id": instance.project_id, "user_id": instance.user_id})
        if FORCE <= minor < NO_FORCE and as_bool(evacuate.get("force", False)) and not host:
            raise HTTPError(400, "Can't force to a non-provided destination")
        password = _password(minor, evacuate)
        if host is not None and not queries.compute_host_exists(conn, host):
            raise HTTPError(404, f"Compute host {host} not found.")
        if instance.host == host:
            raise HTTPError(400, "The target host can't be the same one.")
        check_state(instance, "evacuate", (states.ACTIVE, states.STOPPED, states.ERROR))
        if service is not None and services.is_up(service, req.app.settings.compute):
            raise HTTPError(400, f"Compute service of {instance.host} is still in use.")
        refuse_old_computes(conn, instance, "evacuate")
        migration = _accept(req, conn, instance, host)
        op = accept(conn, req, instance, "evacuate", migration_uuid=migration.uuid, host=host)
    try:
        cast_after_commit(
            req, instance,
            lambda c: c.evacuate_server(instance.uuid, migration.uuid, req.context.request_id,
                                        host, operation_uuid=op),
            {"task_state": None}, ("evacuate", op))
    except Exception:
        with req.app.server_db(req.params["server_id"]).write() as conn:
            migs.save(conn, migration.uuid, status="error")
        raise
    if minor < NO_SHARED_STORAGE:
        return json_response({"adminPass": password})
    return empty_response(200)


def _accept(req: Request, conn: Connection, instance: inst.Instance,
            host: str | None) -> migs.Migration:
    """The action, the task state and the evacuation migration Nova's API writes."""
    start_action(conn, req, instance, "evacuate")
    move_state(conn, instance, "evacuate", task_state=TASK.REBUILDING)
    flavor_id = instance.flavor.get("id")
    return migs.create(conn, migs.Migration(
        uuid=str(uuidlib.uuid4()), instance_uuid=instance.uuid, migration_type="evacuation",
        status="accepted", source_compute=instance.host, source_node=instance.node,
        dest_compute=host, old_flavor_id=flavor_id, new_flavor_id=flavor_id,
        project_id=instance.project_id, user_id=instance.user_id))


# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {"evacuate": _evacuate}
