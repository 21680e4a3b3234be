"""os-migrateLive: the admin moves a running server to another host, keeping it up.

`POST /servers/{id}/action {"os-migrateLive": {...}}` answers 202 with no
body. What changes per microversion (Nova's schemas):

    2.1   host (null: the scheduler picks; a host is forced: not scheduled, still
          claimed), block_migration and disk_over_commit (booleans), all three required
    2.25  disk_over_commit removed; block_migration may be "auto"
    2.30  force (boolean): with a host, the scheduler is bypassed (the host is still
          claimed); without one, 400 "Can't force to a non-provided destination"
    2.68  force removed: a requested host is always checked by the scheduler

Then, in Nova's order: policy `os_compute_api:os-migrate-server:migrate_live`
(and `...:migrate_live:host` when a host is given), both admin-only; the
server must be ACTIVE or PAUSED with no task (409 otherwise; a paused
server stays paused on the destination, or on the source when the move is
undone); an unknown host is 400 "Compute host <h> could not be found.", the
server's own host 400 "Unable to migrate instance (<id>) to current host
(<h>).". As in Nova, the API does not look at the source's compute service:
the conductor does (`_check_host_is_up`), with the other pre-checks.

Accepting it writes, in one transaction, the `live-migration` instance
action, task_state `migrating` (status MIGRATING), the migration (`queued`,
naming a requested host as its destination, so it can be listed and aborted
at once) and the journal's `accepted` row; the conductor
(`conductor/live_migrate.py`) does the rest.

    2.34  asynchronous: 202 at once; a refusal of the conductor (source down,
          no valid host, a destination's pre-check) ends the migration `error`
          and leaves the server ACTIVE (or PAUSED) where it was
    <2.34 Nova's API *calls* the conductor, which answers once the source is
          checked, the destination chosen, claimed and checked: a refusal there
          is a 400 with the conductor's message (e.g. "Compute service of h1 is
          unavailable at this time.", "No valid host was found. ..."). stowage
          casts as always and then waits, reading the operation's journal,
          until `check_destination` is done (202) or the operation ended with
          `claim_destination` or `check_destination` failed (400 with the
          fault's message; 500 for a failure that was no refusal). The
          migration, the action and the fault stay recorded either way, as
          Nova's conductor leaves them. The wait is bounded by Nova's
          `rpc_response_timeout` (60 s); past it the answer is 202 and the
          operation goes on (Nova would answer 500 while it went on).
"""

from __future__ import annotations

import datetime
import time
import uuid as uuidlib
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import migrations as migs
from stowage.compute import states
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
from stowage.compute.api.server_common import check_state, check_unlocked, move_state
from stowage.compute.conductor import tasks
from stowage.compute.states import TASK
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response

__all__ = ["ACTIONS"]

AUTO_BLOCK = 25  # disk_over_commit gone, block_migration "auto"
FORCE = 30  # force appears
ASYNC = 34  # 202 before the conductor's pre-checks ran (Nova's async_)
NO_FORCE = 68  # force gone
# How long a request before 2.34 waits for the conductor's checks (Nova's
# rpc_response_timeout), and how often it looks.
CHECKS_WAIT_SECONDS = 60.0
_POLL_SECONDS = 0.02
# The steps of the conductor's checking part: a failure in one is the call's answer.
_CHECK_STEPS = ("claim_destination", "check_destination")

# The hostname of os-migrateLive (nullable).
_HOST = {"type": ["string", "null"], "minLength": 1, "maxLength": 255,
         "pattern": "^[a-zA-Z0-9-._]*$"}


def _schema(minor: int) -> dict[str, Any]:
    props: dict[str, Any] = {"host": _HOST, "block_migration": BOOLEAN}
    required = ["block_migration", "host"]
    if minor < AUTO_BLOCK:
        props["disk_over_commit"] = BOOLEAN
        required.append("disk_over_commit")
    else:
        props["block_migration"] = {**BOOLEAN, "enum": [*BOOLEAN["enum"], "auto"]}
    if FORCE <= minor < NO_FORCE:
        props["force"] = BOOLEAN
    body = {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}
    return {"type": "object", "properties": {"os-migrateLive": body},
            "required": ["os-migrateLive"], "additionalProperties": False}


def _arguments(minor: int, live: dict[str, Any]) -> tuple[str | None, bool, bool | None]:
    """(host, force, block_migration: None = "auto", the destination decides)."""
    host: str | None = live["host"]
    # Before 2.30 a host is taken as given (the scheduler is bypassed, as Nova's force).
    force = bool(host) if minor < FORCE else minor < NO_FORCE and as_bool(live.get("force", False))
    if force and not host:
        raise HTTPError(400, "Can't force to a non-provided destination")
    block = live["block_migration"]
    return host, force, None if block == "auto" else as_bool(block)


def _migrate_live(req: Request, body: Any) -> Response:
    minor = req.version.minor
    since = utcnow().replace(microsecond=0)  # before any fault of ours; MySQL keeps seconds
    host, force, block = _arguments(
        minor, validate_body(body, _schema(minor))["os-migrateLive"])
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance, _service = moving_server(req, conn)
        target = {"project_id": instance.project_id}
        authorize(req, "os_compute_api:os-migrate-server:migrate_live", target)
        if host:
            authorize(req, "os_compute_api:os-migrate-server:migrate_live:host", target)
        check_unlocked(req, instance)
        check_state(instance, "os-migrateLive", (states.ACTIVE, states.PAUSED))
        if host is not None:
            if not queries.compute_host_exists(conn, host):
                raise HTTPError(400, f"Compute host {host} could not be found.")
            if host == instance.host:
                raise HTTPError(400, f"Unable to migrate instance ({instance.uuid}) to "
                                     f"current host ({host}).")
        refuse_old_computes(conn, instance, "os-migrateLive")
        migration = _accept(req, conn, instance, host)
        op = accept(conn, req, instance, "live_migrate", migration_uuid=migration.uuid,
                    host=host, force=force, block_migration=block)
    try:
        cast_after_commit(
            req, instance,
            lambda c: c.live_migrate_instance(instance.uuid, migration.uuid,
                                              req.context.request_id, host, force, block,
                                              operation_uuid=op),
            {"task_state": None}, ("live_migrate", op))
    except Exception:
        with req.app.server_db(req.params["server_id"]).write() as conn:
            migs.save(conn, migration.uuid, status="error")
        raise
    if minor < ASYNC:
        _await_checks(req, instance.uuid, op, since)
    return empty_response(202)


def _await_checks(req: Request, instance_uuid: str, operation_uuid: str,
                  since: datetime.datetime) -> None:
    """Before 2.34: return once the conductor checked and claimed the destination; raise
    its refusal (a fault written `since` the request began) as Nova's synchronous
    conductor call does (module docstring)."""
    db = req.app.server_db(instance_uuid)
    deadline = time.monotonic() + CHECKS_WAIT_SECONDS
    while time.monotonic() < deadline:
        with db.read() as conn:
            steps = tasks.step_states(conn, operation_uuid)
            if steps.get("check_destination") == "done":
                return
            if tasks.END in steps:
                if any(steps.get(step) == "failed" for step in _CHECK_STEPS):
                    _refusal(inst.latest_faults(conn, [instance_uuid]).get(instance_uuid),
                             since)
                return
        time.sleep(_POLL_SECONDS)


def _refusal(fault: dict[str, Any] | None, since: datetime.datetime) -> None:
    """The conductor's refusal as Nova's API maps it: its pre-check and no-valid-host
    errors are 400, anything else crosses the call as a 500. No fault of this request
    (a server deleted meanwhile ends its move without one): the 202 stands."""
    if fault is None or fault["created"] < since:
        return
    raise HTTPError(400 if fault["code"] == 400 else 500, str(fault["message"]))


def _accept(req: Request, conn: Connection, instance: inst.Instance,
            host: str | None) -> migs.Migration:
    """The action, the task state and the live migration, `queued`."""
    start_action(conn, req, instance, "live-migration")
    move_state(conn, instance, "os-migrateLive", task_state=TASK.MIGRATING, progress=0)
    flavor_id = instance.flavor.get("id")
    return migs.create(conn, migs.Migration(
        uuid=str(uuidlib.uuid4()), instance_uuid=instance.uuid,
        migration_type="live-migration", status="queued", source_compute=instance.host,
        source_node=instance.node, dest_compute=host, old_flavor_id=flavor_id,
        new_flavor_id=flavor_id, project_id=instance.project_id,
        user_id=instance.user_id))


# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {"os-migrateLive": _migrate_live}
