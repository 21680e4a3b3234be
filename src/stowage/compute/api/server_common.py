"""What every server handler shares: finding the caller's server, state checks, the conductor.

A server of another project does not exist for a non-admin (404, as Nova's
project-scoped instance lookup answers). State checks and their 409 wording
are Nova's `check_instance_state` + `raise_http_conflict_for_instance_invalid_state`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute.rpc import ConductorAPI
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["get_server", "target", "invalid_state", "check_state", "check_unlocked",
           "conductor", "move_state"]


def get_server(req: Request, conn: Connection, uuid: str,
               read_deleted: bool = False) -> inst.Instance:
    project = None if req.context.is_admin else req.context.project_id
    return inst.get(conn, uuid, read_deleted=read_deleted, project_id=project)


def target(instance: inst.Instance) -> dict[str, object]:
    return {"project_id": instance.project_id, "user_id": instance.user_id}


def invalid_state(action: str, uuid: str, attr: str, state: object) -> HTTPError:
    return HTTPError(409, f"Cannot '{action}' instance {uuid} while it is in {attr} {state}")


def check_unlocked(req: Request, instance: inst.Instance) -> None:
    """Nova's `check_instance_lock`: 409 on a locked server, unless the caller is admin."""
    if instance.locked and not req.context.is_admin:
        raise HTTPError(409, f"Instance {instance.uuid} is locked")


def check_state(instance: inst.Instance, action: str, vm_states: Collection[str] | None,
                task_states: Collection[str | None] | None = (None,),
                must_have_launched: bool = True) -> None:
    """409 unless vm_state, task_state (and launched_at) allow `action`."""
    if vm_states is not None and instance.vm_state not in vm_states:
        raise invalid_state(action, instance.uuid, "vm_state", instance.vm_state)
    if task_states is not None and instance.task_state not in task_states:
        raise invalid_state(action, instance.uuid, "task_state", instance.task_state)
    if must_have_launched and instance.launched_at is None:
        raise invalid_state(action, instance.uuid, "launched_at", None)


def move_state(conn: Connection, instance: inst.Instance, action: str,
               **values: Any) -> None:
    """Compare-and-swap the instance from the state just checked into `values`.

    A concurrent request that changed the state first wins; the loser gets
    the same 409 it would have got had it come second.
    """
    try:
        inst.save(conn, instance.uuid, expected_task_state=instance.task_state,
                  expected_vm_state=instance.vm_state, **values)
    except inst.UnexpectedTaskState:
        now = inst.get(conn, instance.uuid)
        if now.vm_state != instance.vm_state:
            raise invalid_state(action, now.uuid, "vm_state", now.vm_state) from None
        raise invalid_state(action, now.uuid, "task_state", now.task_state) from None


def conductor(req: Request) -> ConductorAPI:
    plane = req.app.plane
    if plane is None:
        raise HTTPError(503, "The compute control plane is not running in this process.")
    api: ConductorAPI = plane.conductor_api
    return api

