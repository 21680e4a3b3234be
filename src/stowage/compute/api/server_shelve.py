"""shelve, shelveOffload, unshelve: park a server, free its host, bring it back.

    action         allowed in (no task)        task_state           operation          answer
    shelve         active | stopped | paused   shelving             shelve             202
                   | suspended
    shelveOffload  shelved                     shelving_offloading  shelve_offload     202
    unshelve       shelved                     unshelving           unshelve_power_on  202
                   shelved_offloaded           unshelving           unshelve           202

Policies are Nova's: shelve and unshelve for the project's members (or
admins), shelveOffload and unshelving to a named host for admins.

shelve creates the snapshot's image record (`<name>-shelved`, the project's,
private) in the transaction that accepts the operation; a volume-backed
server has none and is always offloaded at once, as in Nova; an image-backed
one is when the conductor's `shelved_offload_time` is 0.

unshelve's body by microversion:

    2.1-2.76   {"unshelve": <anything>}
    2.77-2.90  {"unshelve": null} or {"unshelve": {"availability_zone": "az"}}
    2.91-      {"unshelve": null} or {"unshelve": {"availability_zone": "az" | null,
                                                   "host": "h"}} (host: admins)

A zone or host is only for an offloaded server (409 otherwise); an unknown
zone or host is a 400; a host outside the zone the server will be in is a
409. The zone is kept in the request spec (null unpins it, as Nova); the
host only steers this unshelve.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import aggregates as aggs
from stowage.compute import instances as inst
from stowage.compute import quota_checks, states
from stowage.compute.api import server_queries as queries
from stowage.compute.api.action_common import (
    Handler,
    accept,
    cast_after_commit,
    refuse_old_computes,
    start_action,
)
from stowage.compute.api.common import authorize, validate_body
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    get_server,
    move_state,
    target,
)
from stowage.compute.api.server_snapshot import snapshot_record
from stowage.compute.conductor.shelve import forget_image
from stowage.compute.states import TASK
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response

__all__ = ["ACTIONS", "forget_snapshot"]

UNSHELVE_AZ = 77
UNSHELVE_HOST = 91
_POLICY = "os_compute_api:os-shelve:"
_ANY_BODY = {"type": "object", "required": ["unshelve"], "additionalProperties": False,
             "properties": {"unshelve": {}}}
_UNSHELVE_2_77 = {
    "type": "object",
    "properties": {"unshelve": {
        "type": ["object", "null"],
        "properties": {"availability_zone": {"type": "string", "minLength": 1,
                                             "maxLength": 255}},
        "required": ["availability_zone"], "additionalProperties": False}},
    "required": ["unshelve"], "additionalProperties": False,
}
_UNSHELVE_2_91 = {
    "type": "object",
    "properties": {"unshelve": {"oneOf": [
        {"type": "object",
         "properties": {"availability_zone": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                        "host": {"type": "string"}},
         "additionalProperties": False},
        {"type": "null"}]}},
    "required": ["unshelve"], "additionalProperties": False,
}
_UNSET = object()


def _shelve(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _POLICY + "shelve", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "shelve", (states.ACTIVE, states.STOPPED, states.PAUSED,
                                         states.SUSPENDED))
        image_id = None if instance.volume_backed else _snapshot_record(req, conn, instance)
        start_action(conn, req, instance, "shelve")
        move_state(conn, instance, "shelve", task_state=TASK.SHELVING)
        op = accept(conn, req, instance, "shelve", image_id=image_id)
    cast_after_commit(
        req, instance,
        lambda c: c.shelve_server(instance.uuid, req.context.request_id, image_id, op),
        {"task_state": None}, ("shelve", op))
    return empty_response(202)


def _snapshot_record(req: Request, conn: Connection, instance: inst.Instance) -> str:
    """The image the shelve uploads into: createImage's record named `<name>-shelved`."""
    return snapshot_record(req, conn, instance, f"{instance.display_name}-shelved", {})


def _shelve_offload(req: Request, body: Any) -> Response:
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _POLICY + "shelve_offload", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "shelveOffload", (states.SHELVED,))
        start_action(conn, req, instance, "shelveOffload")
        move_state(conn, instance, "shelveOffload", task_state=TASK.SHELVING_OFFLOADING)
        op = accept(conn, req, instance, "shelve_offload")
    cast_after_commit(
        req, instance, lambda c: c.shelve_offload(instance.uuid, req.context.request_id, op),
        {"task_state": None}, ("shelve_offload", op))
    return empty_response(202)


def _unshelve_args(req: Request, body: Any) -> tuple[Any, str | None]:
    """(new zone or _UNSET, host) from the body, validated for the request's microversion."""
    minor = req.version.minor
    schema = (_UNSHELVE_2_91 if minor >= UNSHELVE_HOST else
              _UNSHELVE_2_77 if minor >= UNSHELVE_AZ else _ANY_BODY)
    args = validate_body(body, schema)["unshelve"]
    if minor < UNSHELVE_AZ or not isinstance(args, dict):
        return _UNSET, None
    zone = args.get("availability_zone", _UNSET)
    return zone, args.get("host") if minor >= UNSHELVE_HOST else None


def _unshelve(req: Request, body: Any) -> Response:
    zone, host = _unshelve_args(req, body)
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _POLICY + "unshelve", {"project_id": instance.project_id})
        check_unlocked(req, instance)
        check_state(instance, "unshelve", (states.SHELVED, states.SHELVED_OFFLOADED))
        with req.app.db.using(conn) as api:
            spec = inst.request_spec(api, instance.uuid)
        _check_destination(req, conn, instance, spec, zone, host)
        if zone is not _UNSET:
            spec["availability_zone"] = zone
            with req.app.db.using(conn, write=True) as api:
                inst.save_request_spec(api, instance.uuid, spec)
        offloaded = instance.vm_state == states.SHELVED_OFFLOADED
        if offloaded:  # a shelved server still on its host does not move
            refuse_old_computes(conn, instance, "unshelve")
            _check_unshelve_quota(req, conn, instance)
        operation = "unshelve" if offloaded else "unshelve_power_on"
        start_action(conn, req, instance, "unshelve")
        move_state(conn, instance, "unshelve", task_state=TASK.UNSHELVING)
        op = accept(conn, req, instance, operation, host=host)
    cast_after_commit(
        req, instance,
        lambda c: c.unshelve_server(instance.uuid, req.context.request_id, host, op),
        {"task_state": None}, (operation, op))
    return empty_response(202)


def _check_unshelve_quota(req: Request, conn: Connection, instance: inst.Instance) -> None:
    """An offloaded server takes its cores and ram back: they must fit (Nova, 403)."""
    try:
        quota_checks.check_unshelve(conn, owner(req, instance.project_id, instance.user_id),
                                    instance.flavor)
    except quota_checks.OverQuota as exc:
        raise over_quota(exc) from None


def _check_destination(req: Request, conn: Connection, instance: inst.Instance,
                       spec: dict[str, Any], zone: Any, host: str | None) -> None:
    """Nova's preconditions of a zone or host, in Nova's order."""
    if (zone is not _UNSET or host) and instance.vm_state != states.SHELVED_OFFLOADED:
        raise HTTPError(409, "Specifying an availability zone or a host when unshelving server "
                             f"\"{instance.uuid}\" with status \"{instance.vm_state}\" is not "
                             "supported. The server status must be SHELVED_OFFLOADED.")
    default_zone = req.app.settings.compute.default_availability_zone
    if isinstance(zone, str) and zone not in queries.known_zones(conn, req.app.db,
                                                                 default_zone):
        raise HTTPError(400, "The requested availability zone is not available")
    if not host:
        return
    authorize(req, _POLICY + "unshelve_to_host", target(instance))
    found = queries.host_services(conn, [host])
    if host not in found:
        raise HTTPError(400, f"Compute host {host} could not be found.")
    expected = spec.get("availability_zone") if zone is _UNSET else zone
    with req.app.db.using(conn) as api:
        host_zone = aggs.zone_of(api, found[host], default_zone)
    if expected is not None and host_zone != expected:
        raise HTTPError(409, f'Host "{host}" is not in the availability zone "{expected}".')


def forget_snapshot(req: Request, conn: Connection, instance: inst.Instance) -> None:
    """A shelved server being deleted takes its snapshot image along (as Nova's delete)."""
    if instance.vm_state in (states.SHELVED, states.SHELVED_OFFLOADED):
        forget_image(req.app.db, conn, (instance.system_metadata or {}).get("shelved_image_id"),
                     req.app.settings)


# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {
    "shelve": _shelve,
    "shelveOffload": _shelve_offload,
    "unshelve": _unshelve,
}
