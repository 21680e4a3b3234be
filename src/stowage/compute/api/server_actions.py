"""POST /servers/{id}/action: resize, migrate, confirmResize, revertResize, os-stop, os-start.

Each action checks policy and the instance's state as Nova does, records the
instance action under the request id, moves the instance into its task state
with a compare-and-swap, commits, and only then casts to the conductor,
which owns every later state change:

    action         allowed in                         task_state      cast             answer
    resize         active|stopped, no task, host up,  resize_prep     migrate_server   202
                   an upsize within the quota (403)
    migrate        active|stopped, no task, host up   resize_prep     migrate_server   202
    confirmResize  resized + a "finished" migration   resize_confirming confirm_resize 204
    revertResize   resized + a "finished" migration   resize_reverting revert_resize   202
    os-stop        active|error, no task              powering-off    power(on=False)  202
    os-start       stopped, no task                   powering-on     power(on=True)   202
    os-resetState  any (admin)                        none            -                202

"host up": the server's compute service is up or only disabled; a host down
or forced down answers 409 "Service is unavailable at this time." (Nova's
`check_instance_host(check_is_up=True)`), as its servers need evacuating.
Migrate is admin-only by policy. Both store OS-DCF:diskConfig as Nova's
resize does: AUTO only when the resize body asks for it. Resize and migrate of a server whose ports
have resource requests answer 400 while any compute is older than Nova
Ussuri's service version (`compute/upgrade.py`, `refuse_old_computes`; so do
os-migrateLive, evacuate and the unshelve of an offloaded server).

Every cast operation is journaled as accepted (`tasks.accept`) in the same
transaction as its task state, so a cast a crash lost is found on restart.
os-resetState is Nova's way back for an operator: it sets vm_state to
active or error and clears task_state, nothing else (no guest or allocation
is touched), and records a `resetState` action.

Every action that changes the server but os-resetState refuses a locked
server to non-admins (`check_unlocked`, 409 "Instance <uuid> is locked").
The other actions live with their kin: os-migrateLive
(server_live_migrate.py), evacuate (server_evacuate.py), shelve,
shelveOffload, unshelve (server_shelve.py), reboot, pause, unpause, suspend,
resume, lock, unlock (server_guest_actions.py), rebuild (server_rebuild.py),
restore, forceDelete (server_deferred_delete.py), rescue, unrescue
(server_rescue.py), createImage (server_snapshot.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import actions, quota_checks, states
from stowage.compute import flavors as flv
from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute.api import server_boot_extras as extras
from stowage.compute.api import (
    server_deferred_delete,
    server_evacuate,
    server_floating_ips,
    server_guest,
    server_guest_actions,
    server_live_migrate,
    server_rebuild,
    server_rescue,
    server_security_groups,
    server_shelve,
    server_snapshot,
)
from stowage.compute.api import server_queries as queries
from stowage.compute.api.action_common import (
    Handler,
    accept,
    cast_after_commit,
    check_host_up,
    moving_server,
    refuse_old_computes,
    start_action,
)
from stowage.compute.api.common import API_PREFIX, authorize, read_body, validate_body
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    get_server,
    move_state,
    target,
)
from stowage.compute.rpc import ConductorAPI
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

LOG = logging.getLogger(__name__)

MIGRATE_WITH_HOST = 56
_FLAVOR_REF = {"type": ["string", "integer"], "minLength": 1}
_RESIZE_SCHEMA = {
    "type": "object",
    "properties": {"resize": {
        "type": "object",
        "properties": {"flavorRef": _FLAVOR_REF,
                       "OS-DCF:diskConfig": {"type": "string", "enum": ["AUTO", "MANUAL"]}},
        "required": ["flavorRef"], "additionalProperties": False}},
    "required": ["resize"], "additionalProperties": False,
}
_MIGRATE_SCHEMA_2_56 = {
    "type": "object",
    "properties": {"migrate": {
        "type": ["object", "null"],
        "properties": {"host": {"type": ["string", "null"], "minLength": 1, "maxLength": 255,
                                "pattern": "^[a-zA-Z0-9-._]*$"}},
        "additionalProperties": False}},
    "required": ["migrate"], "additionalProperties": False,
}
_RESET_STATE_SCHEMA = {
    "type": "object",
    "properties": {"os-resetState": {
        "type": "object",
        "properties": {"state": {"type": "string", "enum": ["active", "error"]}},
        "required": ["state"], "additionalProperties": False}},
    "required": ["os-resetState"], "additionalProperties": False,
}
_RESET_TO = {"active": states.ACTIVE, "error": states.ERROR}
Cast = Callable[[ConductorAPI], None]


def _resize(req: Request, body: Any) -> Response:
    resize = validate_body(body, _RESIZE_SCHEMA)["resize"]
    flavorid = str(resize["flavorRef"]).rstrip("/").split("/")[-1]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance, service = moving_server(req, conn)
        authorize(req, "os_compute_api:servers:resize", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "resize", (states.ACTIVE, states.STOPPED))
        check_host_up(req, instance, service)
        refuse_old_computes(conn, instance, "resize")
        try:
            with req.app.db.using(conn) as api:
                flavor = flv.get(api, flavorid, req.context)
        except NotFound:
            raise HTTPError(400, f"Flavor {flavorid} could not be found.") from None
        current = instance.flavor
        if flavor.id == current.get("id"):
            raise HTTPError(400, "When resizing, instances must change flavor!")
        if flavor.disabled:
            raise HTTPError(400, f"Flavor {flavorid} could not be found.")
        # Nova's API refuses only a zero root disk; shrinking a disk is the driver's call.
        if not instance.volume_backed and flavor.root_gb == 0 and current.get("root_gb"):
            raise HTTPError(400, "Resize to zero disk flavor is not allowed.")
        _check_upsize_quota(req, conn, instance, flavor)
        disk = extras.moved_disk_config(req, conn, instance, resize.get("OS-DCF:diskConfig"))
        start_action(conn, req, instance, "resize")
        move_state(conn, instance, "resize", task_state=TASK.RESIZE_PREP, progress=0,
                   auto_disk_config=disk)
        snapshot = flv.snapshot(flavor)
        cross_cell = _cross_cell(req, instance)
        op = accept(conn, req, instance, "resize", new_flavor=snapshot, host=None,
                    **({"cross_cell": True} if cross_cell else {}))
    cast_after_commit(
        req, instance,
        lambda c: c.migrate_server(instance.uuid, req.context.request_id, new_flavor=snapshot,
                                   host=None, operation_uuid=op, cross_cell=cross_cell),
        {"task_state": None}, ("resize", op))
    return empty_response(202)


def _cross_cell(req: Request, instance: inst.Instance) -> bool:
    """Whether the move may go to a host of another cell (Nova's policy, "!" by default)."""
    return bool(req.app.enforcer.allowed("compute:servers:resize:cross_cell", req.context,
                                         target(instance)))


def _check_upsize_quota(req: Request, conn: Connection, instance: inst.Instance,
                        flavor: flv.Flavor) -> None:
    """More cores or ram must fit the owner's quota (403, Nova's TooManyInstances)."""
    try:
        quota_checks.check_resize(conn, owner(req, instance.project_id, instance.user_id),
                                  instance.flavor,
                                  {"vcpus": flavor.vcpus, "memory_mb": flavor.memory_mb})
    except quota_checks.OverQuota as exc:
        raise over_quota(exc) from None


def _migrate(req: Request, body: Any) -> Response:
    host: str | None = None
    if req.version.minor >= MIGRATE_WITH_HOST:
        migrate = validate_body(body, _MIGRATE_SCHEMA_2_56)["migrate"]
        host = (migrate or {}).get("host")
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance, service = moving_server(req, conn)
        rule = "os_compute_api:os-migrate-server:migrate" + (":host" if host else "")
        authorize(req, rule, {"project_id": instance.project_id})
        check_unlocked(req, instance)
        check_state(instance, "migrate", (states.ACTIVE, states.STOPPED))
        check_host_up(req, instance, service)
        refuse_old_computes(conn, instance, "migrate")
        if host is not None:
            if host == instance.host:
                raise HTTPError(400, "Cannot migrate to the host where the server exists.")
            if not queries.compute_host_exists(conn, host):
                raise HTTPError(400, f"Compute host {host} could not be found.")
        start_action(conn, req, instance, "migrate")
        move_state(conn, instance, "migrate", task_state=TASK.RESIZE_PREP, progress=0,
                   auto_disk_config=False)  # as Nova's resize() without a diskConfig
        cross_cell = _cross_cell(req, instance)
        op = accept(conn, req, instance, "migrate", new_flavor=None, host=host,
                    **({"cross_cell": True} if cross_cell else {}))
    cast_after_commit(
        req, instance,
        lambda c: c.migrate_server(instance.uuid, req.context.request_id, new_flavor=None,
                                   host=host, operation_uuid=op, cross_cell=cross_cell),
        {"task_state": None}, ("migrate", op))
    return empty_response(202)


def _finished_migration(conn: Connection, instance: inst.Instance) -> migs.Migration:
    found = migs.for_instance(conn, instance.uuid, statuses=("finished",))
    if not found:
        raise HTTPError(400, "Instance has not been resized.")
    return found[0]


def _confirm_resize(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:confirm_resize",
                  {"project_id": instance.project_id})
        check_unlocked(req, instance)
        check_state(instance, "confirmResize", (states.RESIZED,))
        migration = _finished_migration(conn, instance)
        start_action(conn, req, instance, "confirmResize")
        # As the conductor's automatic confirm does: one confirm at a time.
        move_state(conn, instance, "confirmResize",
                   task_state=TASK.RESIZE_CONFIRMING)
        op = accept(conn, req, instance, "confirm_resize", migration_uuid=migration.uuid)
    cast_after_commit(
        req, instance,
        lambda c: c.confirm_resize(instance.uuid, migration.uuid, req.context.request_id, op),
        {"task_state": None}, ("confirm_resize", op))
    return empty_response(204)


def _revert_resize(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:revert_resize",
                  {"project_id": instance.project_id})
        check_unlocked(req, instance)
        check_state(instance, "revertResize", (states.RESIZED,))
        migration = _finished_migration(conn, instance)
        start_action(conn, req, instance, "revertResize")
        move_state(conn, instance, "revertResize", task_state=TASK.RESIZE_REVERTING)
        op = accept(conn, req, instance, "revert_resize", migration_uuid=migration.uuid)
    cast_after_commit(
        req, instance,
        lambda c: c.revert_resize(instance.uuid, migration.uuid, req.context.request_id, op),
        {"task_state": None}, ("revert_resize", op))
    return empty_response(202)


def _power(req: Request, on: bool) -> Response:
    action, rule = ("start", "start") if on else ("stop", "stop")
    allowed_states = (states.STOPPED,) if on else (states.ACTIVE, states.ERROR)
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, f"os_compute_api:servers:{rule}", target(instance))
        check_unlocked(req, instance)
        check_state(instance, action, allowed_states)
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        start_action(conn, req, instance, action)
        task = TASK.POWERING_ON if on else TASK.POWERING_OFF
        values: dict[str, Any] = {"task_state": task}
        if not on:
            values["progress"] = 0
        move_state(conn, instance, action, **values)
        op = accept(conn, req, instance, action)
    cast_after_commit(
        req, instance,
        lambda c: c.power(instance.uuid, req.context.request_id, on=on, operation_uuid=op),
        {"task_state": None}, (action, op))
    return empty_response(202)


def _reset_state(req: Request, body: Any) -> Response:
    """Nova's admin action: vm_state := active|error, task_state := None."""
    state = _RESET_TO[validate_body(body, _RESET_STATE_SCHEMA)["os-resetState"]["state"]]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:os-admin-actions:reset_state",
                  {"project_id": instance.project_id})
        start_action(conn, req, instance, "resetState")
        inst.update(conn, instance.uuid, vm_state=state, task_state=None)
        actions.finish_action(conn, instance.uuid, req.context.request_id)
    return empty_response(202)


_ACTIONS: dict[str, Handler] = {
    "resize": _resize,
    "migrate": _migrate,
    "confirmResize": _confirm_resize,
    "revertResize": _revert_resize,
    "os-stop": lambda req, body: _power(req, on=False),
    "os-start": lambda req, body: _power(req, on=True),
    "os-resetState": _reset_state,
    **server_live_migrate.ACTIONS,
    **server_evacuate.ACTIONS,
    **server_shelve.ACTIONS,
    **server_guest_actions.ACTIONS,
    **server_rebuild.ACTIONS,
    **server_rescue.ACTIONS,
    **server_snapshot.ACTIONS,
    **server_deferred_delete.ACTIONS,
    **server_guest.ACTIONS,
    **server_security_groups.ACTIONS,
    **server_floating_ips.ACTIONS,
}


def server_action(req: Request) -> Response:
    body = read_body(req)
    if not isinstance(body, dict) or len(body) != 1:
        raise HTTPError(400, "Malformed request body")
    (name,) = body
    handler = _ACTIONS.get(name)
    if handler is None:
        raise HTTPError(400, f"There is no such action: {name}")
    return handler(req, body)


ROUTES = [Route("POST", API_PREFIX + "/servers/{server_id}/action", server_action,
                json_body=True)]
