"""restore and forceDelete: the two ways out of SOFT_DELETED (Nova's os-deferred-delete).

    action       allowed in                       then
    restore      soft-delete, no task             task restoring; the conductor powers the
                                                  guest on: ACTIVE (deleted_at cleared)
    forceDelete  any vm_state, no task            the delete, at once (as DELETE without
                                                  reclaim_instance_interval)

Both refuse a locked server to non-admins (409) and answer 202. Policies
`os_compute_api:os-deferred-delete:restore` and `...:force`: project
members or admins, as Nova's defaults. Soft deleting itself is DELETE
(servers.py) when `reclaim_instance_interval` > 0; the conductor reclaims
what stays soft deleted longer than that (`Conductor.reclaim_soft_deleted`).
"""

from __future__ import annotations

from typing import Any

from stowage.compute import states
from stowage.compute.api.action_common import Handler, accept, cast_after_commit, start_action
from stowage.compute.api.common import authorize
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    conductor,
    get_server,
    move_state,
    target,
)
from stowage.compute.api.servers import delete_now, queue_for_delete
from stowage.compute.states import TASK
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response

__all__ = ["ACTIONS"]

_POLICY = "os_compute_api:os-deferred-delete:"


def _restore(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _POLICY + "restore", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "restore", (states.SOFT_DELETED,))
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        start_action(conn, req, instance, "restore")
        move_state(conn, instance, "restore", task_state=TASK.RESTORING, deleted_at=None)
        op = accept(conn, req, instance, "restore")
        queue_for_delete(req, conn, instance.uuid, queued=False)
    cast_after_commit(
        req, instance,
        lambda c: c.guest_action(instance.uuid, req.context.request_id, "restore", op),
        {"task_state": None, "deleted_at": instance.deleted_at}, ("restore", op))
    return empty_response(202)


def _force_delete(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _POLICY + "force", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "forceDelete", None, must_have_launched=False)
        operation = delete_now(req, conn, instance)
        queue_for_delete(req, conn, instance.uuid)
    if operation is not None:
        conductor(req).delete_instance(instance.uuid, req.context.request_id, operation)
    return empty_response(202)


ACTIONS: dict[str, Handler] = {"restore": _restore, "forceDelete": _force_delete}
