"""POST /os-server-external-events: other services tell Compute what happened to a server.

The Networking service (and a block storage or bare-metal one) sends these;
the API answers for each event at once and hands the accepted ones to the
agents, as Nova's API does:

    event                      from   what the server's host does
    network-changed            2.1    the server's cached floating addresses are refreshed
                                      (by the API, compute/floating_addresses.py)
    network-vif-plugged        2.1    nothing waits for it: logged
    network-vif-unplugged      2.1    the same
    network-vif-deleted (tag:  2.1    a port the server still has is detached: its share of the
      the port id)                    allocation given back, its row gone (not during a move)
    volume-extended (tag: the  2.51   an `extend_volume` action, whose `compute_extend_volume`
      volume id)                      event fails on a server not booted from a volume
    power-update (tag:         2.76   a `start`/`stop` action; `compute_power_update` brings the
      POWER_ON | POWER_OFF)           guest and the record to that state (a bare-metal node
                                      powered outside Compute): journaled, run by the
                                      conductor on the server's host (power_update.py)
    accelerator-request-bound  2.82   nothing binds accelerators here: logged

Each event comes back with a `code`: 404 for a server that does not exist
(or is deleted), 400 for volume-extended without a tag, 422 for a server
with no host yet, else 200 with `status` completed. The answer is 200 when
every event was accepted, else 207. An accepted event goes to the server's
host and, while a move is unfinished, to its source and destination hosts
too (each agent acts only on what is its own). Admin only, as in Nova.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from stowage.compute import actions, instance_ports, instances, migrations
from stowage.compute.api.action_common import cast_after_commit
from stowage.compute.api.common import (
    API_PREFIX,
    at_least,
    authorize,
    read_body,
    validate_body,
)
from stowage.compute.api.server_guest import agent_cast
from stowage.compute.api.services import is_uuid
from stowage.compute.conductor import power_update, tasks
from stowage.compute.floating_addresses import refresh_quietly
from stowage.compute.migrations import FINAL_STATUSES
from stowage.compute.rpc import ConductorAPI
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "POWER_ON", "POWER_OFF"]

LOG = logging.getLogger(__name__)

POWER_ON, POWER_OFF = "POWER_ON", "POWER_OFF"
_BASE_NAMES = ["network-changed", "network-vif-plugged", "network-vif-unplugged",
               "network-vif-deleted"]
# The microversion that adds each later event name.
_LATER_NAMES = ((51, "volume-extended"), (76, "power-update"), (82, "accelerator-request-bound"))
# An accepted power-update or volume-extended starts an action the user can follow.
_ACTIONS = {("power-update", POWER_ON): "start", ("power-update", POWER_OFF): "stop"}
# A server event handed to the conductor as a journaled operation:
# (server, operation, its argument (port id, tag), the accepted operation's uuid).
Journaled = tuple[instances.Instance, str, str, str]


def _schema(names: list[str]) -> dict[str, Any]:
    event = {"type": "object",
             "properties": {"server_uuid": {"type": "string"},
                            "name": {"type": "string", "enum": names},
                            "status": {"type": "string",
                                       "enum": ["failed", "completed", "in-progress"]},
                            "tag": {"type": "string", "maxLength": 255}},
             "required": ["server_uuid", "name"], "additionalProperties": False}
    return {"type": "object",
            "properties": {"events": {"type": "array", "minItems": 1, "items": event}},
            "required": ["events"], "additionalProperties": False}


def _names(req: Request) -> list[str]:
    return _BASE_NAMES + [name for minor, name in _LATER_NAMES if at_least(req, minor)]


def _validated(req: Request) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = validate_body(read_body(req), _schema(_names(req)))["events"]
    for i, event in enumerate(events):
        value = event["server_uuid"]
        if not is_uuid(value):  # Nova's `format: uuid`
            raise HTTPError(400, f"Invalid input for field/attribute events/{i}/server_uuid. "
                                 f"Value: {value}. '{value}' is not a 'uuid'")
    return events


def _hosts(conn: Any, instance: instances.Instance) -> list[str]:
    """The server's host, then the other host of an unfinished move (Nova's relevant hosts)."""
    hosts = [instance.host] if instance.host else []
    for move in migrations.for_instance(conn, instance.uuid):
        if move.status in FINAL_STATUSES:
            continue
        for host in (move.source_compute, move.dest_compute):
            if host and host not in hosts:
                hosts.append(host)
    return hosts


def _answer(event: dict[str, Any], instance: instances.Instance | None) -> int:
    """The event's code (it is marked in place, as Nova echoes the request)."""
    if instance is None:
        code = 404
    elif event["name"] == "volume-extended" and "tag" not in event:
        code = 400
    elif instance.host:
        code = 200
    else:
        code = 422
    event.update(status="completed" if code == 200 else "failed", code=code)
    return code


def create_events(req: Request) -> Response:
    authorize(req, "os_compute_api:os-server-external-events:create", {})
    events = _validated(req)
    ctx = req.context
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    journaled: list[Journaled] = []
    result = 200
    by_db: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    for event in events:  # each server's events in its cell's transaction
        db = req.app.server_db(str(event["server_uuid"]))
        by_db.setdefault(str(db.engine.url), (db, []))[1].append(event)
    for db, some in by_db.values():
        with db.write() as conn:
            if not _take(req, conn, some, by_host, journaled):
                result = 207
    _dispatch(req, by_host, ctx.request_id)
    for one in journaled:
        _cast_journaled(req, *one)
    _refresh_floating(req, events)
    return json_response({"events": events}, result)


def _refresh_floating(req: Request, events: list[dict[str, Any]]) -> None:
    """A port of the server changed (a floating IP came or went): its cached addresses
    follow, as Nova's handling of network-changed refreshes its info cache."""
    plane = req.app.plane
    network = None if plane is None else plane.network
    changed = {str(e["server_uuid"]) for e in events
               if e["name"] == "network-changed" and e.get("code") == 200}
    if network is None:
        return
    for uuid in sorted(changed):
        refresh_quietly(req.app.server_db(uuid), network, uuid)


def _take(req: Request, conn: Any, events: list[dict[str, Any]],
          by_host: dict[str, list[dict[str, Any]]],
          journaled: list[Journaled]) -> bool:
    """Answer each event of one cell's servers, record what it starts, and sort what is
    sent on by host (or journaled for the conductor); False when one was refused."""
    found: dict[str, instances.Instance | None] = {}
    hosts: dict[str, list[str]] = {}
    accepted = True
    for event in events:
        uuid = event["server_uuid"]
        if uuid not in found:
            try:
                found[uuid] = instances.get(conn, uuid)
            except NotFound:
                found[uuid] = None
        instance = found[uuid]
        sent = dict(event)
        if _answer(event, instance) != 200:
            accepted = False
            continue
        assert instance is not None
        if not _recorded(conn, req, sent, instance.uuid):
            continue
        if sent["name"] == "power-update":  # the conductor's, journaled (power_update.py)
            op = tasks.accept(conn, power_update.OPERATION, instance.uuid,
                              req.context.request_id, tag=sent["tag"])
            journaled.append((instance, power_update.OPERATION, str(sent["tag"]), op))
            continue
        detach = _detach(conn, req, instance, sent)
        if detach is not None:
            journaled.append(detach)
        if instance.uuid not in hosts:
            hosts[instance.uuid] = _hosts(conn, instance)
        for host in hosts[instance.uuid]:
            by_host[host].append(sent)
    return accepted


def _recorded(conn: Any, req: Request, event: dict[str, Any], uuid: str) -> bool:
    """Start the action a user follows (power-update, volume-extended); False: not sent on
    (a power-update whose tag names no power state, as Nova skips it)."""
    name, tag = str(event["name"]), str(event.get("tag"))
    if name == "power-update":
        action = _ACTIONS.get((name, tag))
        if action is None:
            LOG.warning("power-update for %s with tag %r names no power state: skipped",
                        uuid, tag)
            return False
    elif name == "volume-extended":
        action = "extend_volume"
    else:
        return True
    ctx = req.context
    actions.start_action(conn, uuid, action, ctx.request_id, ctx.user_id, ctx.project_id)
    return True


def _detach(conn: Any, req: Request, instance: instances.Instance,
            event: dict[str, Any]) -> Journaled | None:
    """network-vif-deleted for a port the server still has: journal a detach of it, so the
    port's share of the server's allocation is given back (Nova's compute does the same).

    Not while another task runs on the server (a move rebinds its ports, a delete
    releases them all): the port then stays until detached by os-interface.
    """
    port_id = event.get("tag")
    if event["name"] != "network-vif-deleted" or not port_id:
        return None
    if not any(r.port_id == port_id for r in instance_ports.of_instance(conn, instance.uuid)):
        return None  # never attached, or detached already (Nova's own detach deletes ports)
    if instance.task_state == TASK.DELETING:
        return None  # the server's delete releases its ports (and deleted this one)
    if instance.task_state is not None:
        LOG.warning("port %s of %s was deleted during %s: detach it with os-interface",
                    port_id, instance.uuid, instance.task_state)
        return None
    op = tasks.accept(conn, "detach_interface", instance.uuid, req.context.request_id,
                      port_id=port_id)
    return instance, "detach_interface", str(port_id), op


def _cast_journaled(req: Request, instance: instances.Instance, operation: str, arg: str,
                    op: str) -> None:
    """Cast a journaled operation after the commit (a detach: `arg` is the port; a
    power-update: the tag); one that cannot be sent is ended there and logged."""
    rid = req.context.request_id

    def cast(c: ConductorAPI) -> None:
        if operation == power_update.OPERATION:
            c.power_update(instance.uuid, rid, arg, op)
        else:
            c.detach_interface(instance.uuid, arg, rid, op)

    try:
        cast_after_commit(req, instance, cast, {}, (operation, op))
    except Exception:  # noqa: BLE001 - logged and undone there; the event was answered
        LOG.warning("%s %s of %s was not sent", operation, arg, instance.uuid)


def _dispatch(req: Request, by_host: dict[str, list[dict[str, Any]]], request_id: str) -> None:
    """Cast each host its events after the commit."""
    for host, events in by_host.items():
        agent_cast(req, host, "external_instance_events", events=events, request_id=request_id)


ROUTES = [Route("POST", API_PREFIX + "/os-server-external-events", create_events,
                json_body=True)]
