"""/os-aggregates: host aggregates for admins (list, create, show, update, delete, actions).

Nova's answers, codes and words (a body is validated before the policy is
checked, as Nova's schema decorators do): create, update, delete and the actions
answer 200 (delete with no body); create's view has no hosts nor metadata;
the aggregate's `uuid` shows from 2.41. The actions are `add_host`,
`remove_host` and `set_metadata` (a null value deletes its key). The rules
(unique names, one zone per host, zones not renamed under instances, only
empty aggregates deleted) live in `compute/aggregates.py`.

A host joining or leaving an aggregate also gains or loses the Placement
aggregate of the same uuid on its compute node providers, after the database
commit, as Nova's API does; a Placement failure is logged, not answered
(Nova leaves the repair to `nova-manage placement sync_aggregates`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stowage.compute import aggregates as aggs
from stowage.compute import services as svc
from stowage.compute.api.common import API_PREFIX, at_least, authorize, read_body, validate_body
from stowage.errors import DomainError, NotFound
from stowage.placement.client import PlacementError
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "aggregate_view"]

LOG = logging.getLogger(__name__)

SHOW_UUID = 41  # `uuid` in every aggregate view
_POLICY = "os_compute_api:os-aggregates:"
_NAME = {"type": "string", "minLength": 1, "maxLength": 255}
_ZONE = {"oneOf": [{"type": "string", "minLength": 1, "maxLength": 255}, {"type": "null"}]}
_HOST = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[a-zA-Z0-9-._]*$"}
_META_KEY = "^[a-zA-Z0-9-_:. ]{1,255}$"


def _wrapped(key: str, inner: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {key: inner}, "required": [key],
            "additionalProperties": False}


CREATE_SCHEMA = _wrapped("aggregate", {
    "type": "object", "properties": {"name": _NAME, "availability_zone": _ZONE},
    "required": ["name"], "additionalProperties": False})
UPDATE_SCHEMA = _wrapped("aggregate", {
    "type": "object", "properties": {"name": _NAME, "availability_zone": _ZONE},
    "additionalProperties": False,
    "anyOf": [{"required": ["name"]}, {"required": ["availability_zone"]}]})
ADD_HOST_SCHEMA = _wrapped("add_host", {
    "type": "object", "properties": {"host": _HOST}, "required": ["host"],
    "additionalProperties": False})
REMOVE_HOST_SCHEMA = _wrapped("remove_host", {
    "type": "object", "properties": {"host": _HOST}, "required": ["host"],
    "additionalProperties": False})
SET_METADATA_SCHEMA = _wrapped("set_metadata", {
    "type": "object",
    "properties": {"metadata": {
        "type": "object", "additionalProperties": False,
        "patternProperties": {_META_KEY: {"type": ["string", "null"], "maxLength": 255}}}},
    "required": ["metadata"], "additionalProperties": False})


def _timestamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def aggregate_view(req: Request, agg: aggs.Aggregate, full: bool = True) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": agg.id, "name": agg.name, "availability_zone": agg.availability_zone,
        "created_at": _timestamp(agg.created_at), "updated_at": _timestamp(agg.updated_at),
        "deleted_at": None, "deleted": False}
    if full:
        view["hosts"] = list(agg.hosts)
        view["metadata"] = dict(agg.metadata)
    if at_least(req, SHOW_UUID):
        view["uuid"] = agg.uuid
    return view


def _check_name(name: str, zone: bool = False) -> None:
    """Nova's `name` and `az_name` formats: printable, no outer whitespace (no ':' in a zone)."""
    if name != name.strip() or not name.isprintable() or (zone and ":" in name):
        what = "printable characters except :." if zone else "printable characters."
        raise HTTPError(400, f"An invalid 'name' value was provided. The name must be: {what} "
                             "Can not start or end with whitespace.")


def _aggregate_id(req: Request) -> int:
    try:
        return int(req.params["aggregate_id"])
    except ValueError:
        raise HTTPError(400, "Invalid input received: id must be an integer") from None


def _fail(status: int, exc: DomainError, prefix: str = "") -> HTTPError:
    return HTTPError(status, f"{prefix}{exc.detail}" + ("." if prefix else ""))


# --- collection and one aggregate ------------------------------------------------------
def list_aggregates(req: Request) -> Response:
    authorize(req, _POLICY + "index", {})
    with req.app.db.read() as conn:
        found = aggs.list_aggregates(conn)
    return json_response({"aggregates": [aggregate_view(req, a) for a in found]})


def create_aggregate(req: Request) -> Response:
    body = validate_body(read_body(req), CREATE_SCHEMA)["aggregate"]
    authorize(req, _POLICY + "create", {})
    _check_name(body["name"])
    zone = body.get("availability_zone")
    if zone is not None:
        _check_name(zone, zone=True)
    try:
        with req.app.db.write() as conn:
            agg = aggs.create(conn, body["name"], zone)
    except DomainError as exc:
        raise _fail(409, exc) from None
    return json_response({"aggregate": aggregate_view(req, agg, full=False)})


def show_aggregate(req: Request) -> Response:
    authorize(req, _POLICY + "show", {})
    ident = _aggregate_id(req)
    try:
        with req.app.db.read() as conn:
            agg = aggs.get(conn, ident)
    except NotFound as exc:
        raise _fail(404, exc) from None
    return json_response({"aggregate": aggregate_view(req, agg)})


def update_aggregate(req: Request) -> Response:
    body = validate_body(read_body(req), UPDATE_SCHEMA)["aggregate"]
    authorize(req, _POLICY + "update", {})
    if "name" in body:
        _check_name(body["name"])
    if isinstance(body.get("availability_zone"), str):
        _check_name(body["availability_zone"], zone=True)
    ident = _aggregate_id(req)
    try:
        with req.app.db.write() as conn:
            agg = aggs.locked(conn, ident, zones=True)
            if "name" in body:
                aggs.rename(conn, agg, body["name"])
            zone = {k: v for k, v in body.items() if k == aggs.AZ_KEY}
            why = aggs.check_zone_change(conn, agg, zone, occupied=_occupied(req))
            if why is not None:
                raise HTTPError(400, f"Cannot update aggregate {ident}. Reason: {why}.")
            if zone:
                aggs.set_metadata(conn, agg, zone)
            agg = aggs.get(conn, ident)
    except NotFound as exc:
        raise _fail(404, exc) from None
    except DomainError as exc:
        raise _fail(409, exc) from None
    return json_response({"aggregate": aggregate_view(req, agg)})


def delete_aggregate(req: Request) -> Response:
    authorize(req, _POLICY + "delete", {})
    ident = _aggregate_id(req)
    try:
        with req.app.db.write() as conn:
            aggs.delete(conn, aggs.locked(conn, ident))
    except NotFound as exc:
        raise _fail(404, exc) from None
    except DomainError as exc:
        raise _fail(400, exc, f"Cannot delete aggregate {ident}. Reason: ") from None
    return empty_response(200)


def _occupied(req: Request) -> Callable[[Sequence[str]], bool]:
    """Whether servers live on some of the hosts (any cell's instances: an aggregate's
    hosts may be in several cells)."""
    def occupied(hosts: Sequence[str]) -> bool:
        found: list[bool] = req.app.read_cells(lambda conn: aggs.hosts_occupied(conn, hosts))
        return any(found)
    return occupied


def _compute_host(req: Request, host: str) -> None:
    """404 unless `host` runs a compute service (in its cell's database)."""
    with req.app.host_db(host).read() as conn:
        aggs.compute_host(conn, host)


# --- actions ---------------------------------------------------------------------------
def _add_host(req: Request, ident: int, body: Any) -> aggs.Aggregate:
    host = validate_body(body, ADD_HOST_SCHEMA)["add_host"]["host"]
    authorize(req, _POLICY + "add_host", {})
    try:
        _compute_host(req, host)
        with req.app.db.write() as conn:
            agg = aggs.locked(conn, ident, zones=True)
            why = aggs.check_zone_change(conn, agg, agg.metadata, hosts=[host])
            if why is not None:
                raise HTTPError(409, f"Cannot add host to aggregate {ident}. Reason: {why}.")
            aggs.add_host(conn, agg, host)
            agg = aggs.get(conn, ident)
    except NotFound as exc:
        raise _fail(404, exc) from None
    except DomainError as exc:
        raise _fail(409, exc) from None
    _mirror(req, host, agg.uuid, add=True)
    return agg


def _remove_host(req: Request, ident: int, body: Any) -> aggs.Aggregate:
    host = validate_body(body, REMOVE_HOST_SCHEMA)["remove_host"]["host"]
    authorize(req, _POLICY + "remove_host", {})
    try:
        _compute_host(req, host)
        with req.app.db.write() as conn:
            agg = aggs.locked(conn, ident)
            aggs.remove_host(conn, agg, host)
            agg = aggs.get(conn, ident)
    except NotFound:
        raise HTTPError(404, f"Cannot remove host {host} in aggregate {ident}") from None
    _mirror(req, host, agg.uuid, add=False)
    return agg


def _set_metadata(req: Request, ident: int, body: Any) -> aggs.Aggregate:
    metadata = validate_body(body, SET_METADATA_SCHEMA)["set_metadata"]["metadata"]
    authorize(req, _POLICY + "set_metadata", {})
    try:
        with req.app.db.write() as conn:
            agg = aggs.locked(conn, ident, zones=True)
            why = aggs.check_zone_change(conn, agg, metadata, occupied=_occupied(req))
            if why is not None:
                raise HTTPError(400, f"Cannot update metadata of aggregate {ident}. "
                                     f"Reason: {why}.")
            aggs.set_metadata(conn, agg, metadata)
            agg = aggs.get(conn, ident)
    except NotFound as exc:
        raise _fail(404, exc) from None
    return agg


_ACTIONS: dict[str, Callable[[Request, int, Any], aggs.Aggregate]] = {
    "add_host": _add_host, "remove_host": _remove_host, "set_metadata": _set_metadata}


def aggregate_action(req: Request) -> Response:
    body = read_body(req)
    if not isinstance(body, dict) or len(body) != 1:
        raise HTTPError(400, "Malformed request body")
    name = next(iter(body))
    handler = _ACTIONS.get(name)
    if handler is None:
        raise HTTPError(400, f"There is no such action: {name}")
    ident = _aggregate_id(req)
    return json_response({"aggregate": aggregate_view(req, handler(req, ident, body))})


def _mirror(req: Request, host: str, aggregate_uuid: str, add: bool) -> None:
    """The host's node providers gain or lose the Placement aggregate `aggregate_uuid`."""
    plane = req.app.plane
    if plane is None:
        return
    with req.app.host_db(host).read() as conn:
        nodes = svc.compute_nodes_of_host(conn, host)
    for node in nodes:
        try:
            plane.placement.change_aggregates(node.uuid, add=[aggregate_uuid] if add else [],
                                              drop=[] if add else [aggregate_uuid])
        except PlacementError as exc:
            LOG.warning("Failed to %s aggregate %s %s resource provider %s: %s. Undo and "
                        "redo the change to repair it.",
                        "add" if add else "remove", aggregate_uuid,
                        "to" if add else "from", node.uuid, exc)


_ONE = API_PREFIX + "/os-aggregates/{aggregate_id}"
ROUTES = [
    Route("GET", API_PREFIX + "/os-aggregates", list_aggregates),
    Route("POST", API_PREFIX + "/os-aggregates", create_aggregate, json_body=True),
    Route("GET", _ONE, show_aggregate),
    Route("PUT", _ONE, update_aggregate, json_body=True),
    Route("DELETE", _ONE, delete_aggregate),
    Route("POST", _ONE + "/action", aggregate_action, json_body=True),
]
