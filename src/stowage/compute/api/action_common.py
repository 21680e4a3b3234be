"""The plumbing every server action shares: record it, journal it, cast it after the commit.

An action handler checks policy and state, then in one transaction records
the instance action (`start_action`), moves the instance into its task state
and journals the operation as accepted (`accept`); only after that commit
does it cast to the conductor (`cast_after_commit`), which owns every later
state change. A cast that cannot be sent puts the task state back and ends
the journal entry, so nothing waits for work that was never sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import actions, upgrade
from stowage.compute import instances as inst
from stowage.compute.api import server_queries as queries
from stowage.compute.api.server_common import conductor
from stowage.compute.conductor import tasks
from stowage.compute.rpc import ConductorAPI
from stowage.compute.services import Service
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response

__all__ = ["Handler", "Cast", "start_action", "accept", "cast_after_commit", "moving_server",
           "check_host_up", "refuse_old_computes"]

LOG = logging.getLogger(__name__)

# POST /servers/{id}/action {name: body}: the handler of one action name.
Handler = Callable[[Request, Any], Response]
Cast = Callable[[ConductorAPI], None]


def start_action(conn: Connection, req: Request, instance: inst.Instance, action: str) -> None:
    ctx = req.context
    actions.start_action(conn, instance.uuid, action, ctx.request_id, ctx.user_id,
                         ctx.project_id)


def accept(conn: Connection, req: Request, instance: inst.Instance, operation: str,
           **args: Any) -> str:
    """Journal the operation as accepted, in the transaction that set its task state."""
    return tasks.accept(conn, operation, instance.uuid, req.context.request_id, **args)


def cast_after_commit(req: Request, instance: inst.Instance, cast: Cast, undo: dict[str, Any],
                      operation: tuple[str, str] | None = None) -> None:
    """Cast after the commit; if the conductor cannot be reached, leave the task state again.

    `operation` is (name, uuid) of the accepted journal entry, ended when the cast fails.
    """
    try:
        cast(conductor(req))
    except Exception:
        LOG.exception("could not cast for instance %s", instance.uuid)
        with req.app.server_db(instance.uuid).write() as conn:
            inst.update(conn, instance.uuid, **undo)
            actions.finish_action(conn, instance.uuid, req.context.request_id, "Error")
            if operation is not None:
                tasks.end_accepted(conn, operation[1], operation[0])
        raise


def moving_server(req: Request, conn: Connection) -> tuple[inst.Instance, Service | None]:
    """The server to move and its host's compute service, read in one statement."""
    project = None if req.context.is_admin else req.context.project_id
    return queries.server_with_host(conn, req.params["server_id"], project)


def check_host_up(req: Request, instance: inst.Instance, service: Service | None) -> None:
    """409 unless the server's own compute service is up (Nova's check_instance_host(True)).

    A disabled service still counts (MAINTENANCE): only new servers avoid it.
    A host that is down, or forced down, cannot hand its guest over; its
    servers are evacuated instead. Like Nova, the answer names no host.
    """
    if not instance.host:
        raise HTTPError(409, f"Instance {instance.uuid} is not ready")
    status = queries.host_status(service, instance.host, req.app.settings.compute)
    if status not in ("UP", "MAINTENANCE"):
        raise HTTPError(409, "Service is unavailable at this time.")


def refuse_old_computes(conn: Connection, instance: inst.Instance, action: str) -> None:
    """400 while some compute is too old to move a server with resource-requesting ports
    (Nova's `supports_port_resource_request_during_move`, `upgrade.refusal`)."""
    message = upgrade.refusal(conn, instance.uuid, action)
    if message is not None:
        raise HTTPError(400, message)
