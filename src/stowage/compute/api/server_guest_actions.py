"""Server actions on the guest in place, and the server lock (Nova's semantics).

    action    allowed in (vm_state / task_state)            task_state      result
    reboot    SOFT: active / none                           rebooting       ACTIVE
              HARD: active|stopped|paused|suspended|error   rebooting_hard  ACTIVE
                    / none or a reboot, pause, unpause, suspend or resume in progress
    pause     active / none                                 pausing         PAUSED
    unpause   paused / none                                 unpausing       ACTIVE
    suspend   active / none                                 suspending      SUSPENDED
    resume    suspended / none                              resuming        ACTIVE
    lock      any (no task state needed)                    -               locked
    unlock    any                                           -               unlocked

The guest actions go through the conductor like os-stop (journaled as
accepted with their task state, cast after the commit,
`conductor/guest_actions.py`); the lock is a record only, written here with a
compare-and-swap on `locked`.

A locked server refuses every action that changes it to a non-admin caller
with 409 "Instance <uuid> is locked" (Nova's `check_instance_lock`,
`check_unlocked`). Nova records who locked it: `locked_by` is 'owner' when
the caller's project owns the server, else 'admin'; the owner re-locking a
locked server changes nothing; unlocking a server someone of the other kind
locked needs `os_compute_api:os-lock-server:unlock:unlock_override` (admin by
default). From 2.73 the lock takes an optional `locked_reason`, shown in the
server view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import actions, states
from stowage.compute import instances as inst
from stowage.compute.api.action_common import Handler, accept, cast_after_commit, start_action
from stowage.compute.api.common import at_least, authorize, validate_body
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    get_server,
    move_state,
    target,
)
from stowage.compute.states import TASK
from stowage.errors import Conflict
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response

__all__ = ["ACTIONS", "Prepare", "guest_action"]

# (transaction, instance) -> the action's arguments for the conductor and the journal
Prepare = Callable[[Connection, inst.Instance], dict[str, Any] | None]

LOCKED_REASON = 73
_REBOOT_SCHEMA = {
    "type": "object",
    "properties": {"reboot": {
        "type": "object",
        "properties": {"type": {"type": "string",
                                "enum": ["HARD", "Hard", "hard", "SOFT", "Soft", "soft"]}},
        "required": ["type"], "additionalProperties": False}},
    "required": ["reboot"], "additionalProperties": False,
}
_LOCK_SCHEMA_2_73 = {
    "type": "object",
    "properties": {"lock": {
        "type": ["object", "null"],
        "properties": {"locked_reason": {"type": "string", "minLength": 1, "maxLength": 255}},
        "additionalProperties": False}},
    "required": ["lock"], "additionalProperties": False,
}
# Nova's vm_states.ALLOW_HARD_REBOOT and task_states.ALLOW_REBOOT.
_HARD_REBOOT_VM_STATES = (states.ACTIVE, states.STOPPED, states.PAUSED, states.SUSPENDED,
                          states.ERROR)
_HARD_REBOOT_TASKS = (None, TASK.REBOOTING, TASK.REBOOT_STARTED, TASK.REBOOTING_HARD,
                      TASK.REBOOT_STARTED_HARD, TASK.RESUMING, TASK.UNPAUSING, TASK.PAUSING,
                      TASK.SUSPENDING)


def guest_action(req: Request, action: str, operation: str, rule: str,
                 vm_states: tuple[str, ...], task: str,
                 task_states: tuple[str | None, ...] = (None,),
                 prepare: Prepare | None = None) -> None:
    """Policy, lock, state; then task state + instance action + journal, and the cast.

    `prepare` checks what is particular to the action (else an HTTPError) and
    returns the arguments the conductor and the journal get (rescue.py's image).
    """
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, rule, target(instance))
        check_unlocked(req, instance)
        check_state(instance, action, vm_states, task_states)
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        args = None if prepare is None else prepare(conn, instance)
        start_action(conn, req, instance, action)
        move_state(conn, instance, action, task_state=task)
        op = accept(conn, req, instance, operation, **(args or {}))
    cast_after_commit(
        req, instance,
        lambda c: c.guest_action(instance.uuid, req.context.request_id, operation, op, args),
        {"task_state": instance.task_state}, (operation, op))


def _reboot(req: Request, body: Any) -> Response:
    kind = validate_body(body, _REBOOT_SCHEMA)["reboot"]["type"].upper()
    rule = "os_compute_api:servers:reboot"
    if kind == "SOFT":
        guest_action(req, "reboot", "reboot", rule, (states.ACTIVE,), TASK.REBOOTING)
    else:
        guest_action(req, "reboot", "reboot_hard", rule, _HARD_REBOOT_VM_STATES,
                     TASK.REBOOTING_HARD, _HARD_REBOOT_TASKS)
    return empty_response(202)


def _simple(action: str, policy: str, vm_state: str, task: str) -> Handler:
    def handler(req: Request, body: Any) -> Response:
        guest_action(req, action, action, policy, (vm_state,), task)
        return empty_response(202)
    return handler


def _lock(req: Request, body: Any) -> Response:
    reason = None
    if at_least(req, LOCKED_REASON):
        reason = (validate_body(body, _LOCK_SCHEMA_2_73)["lock"] or {}).get("locked_reason")
    ctx = req.context
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:os-lock-server:lock", target(instance))
        owner = instance.project_id == ctx.project_id
        if instance.locked and owner:
            return empty_response(202)  # Nova: the owner locking again changes nothing
        start_action(conn, req, instance, "lock")
        _set_lock(conn, instance, True, "owner" if owner else "admin", reason)
        actions.finish_action(conn, instance.uuid, ctx.request_id)
    return empty_response(202)


def _unlock(req: Request, body: Any) -> Response:
    ctx = req.context
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:os-lock-server:unlock", target(instance))
        expected = "owner" if instance.project_id == ctx.project_id else "admin"
        if instance.locked_by and instance.locked_by != expected:
            authorize(req, "os_compute_api:os-lock-server:unlock:unlock_override",
                      target(instance))
        start_action(conn, req, instance, "unlock")
        _set_lock(conn, instance, False, None, None)
        actions.finish_action(conn, instance.uuid, ctx.request_id)
    return empty_response(202)


def _set_lock(conn: Any, instance: inst.Instance, locked: bool, by: str | None,
              reason: str | None) -> None:
    """Write the lock only if nobody changed it since it was read (else 409, try again)."""
    try:
        inst.save_lock(conn, instance.uuid, expected=(instance.locked, instance.locked_by),
                       locked=locked, locked_by=by, locked_reason=reason)
    except Conflict:
        raise HTTPError(409, f"Instance {instance.uuid} was locked or unlocked meanwhile; "
                             "try again") from None


ACTIONS: dict[str, Handler] = {
    "reboot": _reboot,
    "pause": _simple("pause", "os_compute_api:os-pause-server:pause", states.ACTIVE,
                     TASK.PAUSING),
    "unpause": _simple("unpause", "os_compute_api:os-pause-server:unpause", states.PAUSED,
                       TASK.UNPAUSING),
    "suspend": _simple("suspend", "os_compute_api:os-suspend-server:suspend", states.ACTIVE,
                       TASK.SUSPENDING),
    "resume": _simple("resume", "os_compute_api:os-suspend-server:resume", states.SUSPENDED,
                      TASK.RESUMING),
    "lock": _lock,
    "unlock": _unlock,
}
