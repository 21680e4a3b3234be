"""/allocations/{consumer_uuid}, POST /allocations (1.13) and a provider's allocations.

Request bodies change shape by microversion: a list of
``{resource_provider: {uuid}, resources}`` before 1.12, a dict keyed by
provider uuid from 1.12; project_id/user_id are required from 1.8,
consumer_generation from 1.28, consumer_type from 1.38; `mappings` is
accepted (and validated, never stored) from 1.34.
"""

from __future__ import annotations

import copy
import functools
import uuid as uuidlib
from collections.abc import Mapping
from typing import Any, NoReturn

from stowage.errors import DomainError, NotFound
from stowage.placement import allocations as allocs
from stowage.placement import bulk, claim, codes, providers
from stowage.placement import consumers as cons
from stowage.placement.api.common import (
    authorize,
    cache_headers,
    extract_json,
    last_modified_of,
    utcnow,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "put_schema", "post_schema", "consumer_rules", "parse_consumers",
           "raise_write_error"]

UUID_PATTERN = "^[0-9a-fA-F-]{36}$"
RC_PATTERN = "^[A-Z0-9_]+$"
CONSUMER_TYPE_PATTERN = RC_PATTERN
_OWNER_ID = {"type": "string", "minLength": 1, "maxLength": 255}
_RESOURCES = {"type": "object", "minProperties": 1,
              "patternProperties": {RC_PATTERN: {"type": "integer", "minimum": 1}},
              "additionalProperties": False}
_MAPPINGS = {"type": "object", "minProperties": 1,
             "patternProperties": {"[a-zA-Z0-9_-]{1,64}": {
                 "type": "array", "minItems": 1,
                 "items": {"type": "string", "format": "uuid"}}}}

LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"allocations": {"type": "array", "minItems": 1, "items": {
        "type": "object",
        "properties": {
            "resource_provider": {
                "type": "object", "properties": {"uuid": {"type": "string", "format": "uuid"}},
                "additionalProperties": False, "required": ["uuid"]},
            "resources": _RESOURCES},
        "required": ["resource_provider", "resources"], "additionalProperties": False}}},
    "required": ["allocations"],
    "additionalProperties": False,
}


def _dict_schema(version_minor: int, *, deletable: bool) -> dict[str, Any]:
    """The dict-shaped body of one consumer (1.12+), as upstream builds it per version."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "allocations": {
                "type": "object", "minProperties": 0 if deletable else 1,
                "patternProperties": {UUID_PATTERN: {
                    "type": "object",
                    "properties": {"generation": {"type": "integer"}, "resources": _RESOURCES},
                    "required": ["resources"], "additionalProperties": False}},
                "additionalProperties": False},
            "project_id": _OWNER_ID,
            "user_id": _OWNER_ID,
        },
        "additionalProperties": False,
        "required": ["allocations", "project_id", "user_id"],
    }
    if version_minor >= 28:
        schema["properties"]["consumer_generation"] = {"type": ["integer", "null"]}
        schema["required"].append("consumer_generation")
    if version_minor >= 34:
        schema["properties"]["mappings"] = _MAPPINGS
    if version_minor >= 38:
        schema["properties"]["consumer_type"] = {
            "type": "string", "pattern": CONSUMER_TYPE_PATTERN, "minLength": 1,
            "maxLength": 255}
        schema["required"].append("consumer_type")
    return schema


# Schemas are built once per microversion (never mutate them): the compiled
# validator is cached per schema object.
@functools.cache
def put_schema(minor: int) -> dict[str, Any]:
    if minor < 8:
        return LIST_SCHEMA
    if minor < 12:
        schema = copy.deepcopy(LIST_SCHEMA)
        schema["properties"].update(project_id=_OWNER_ID, user_id=_OWNER_ID)
        schema["required"] += ["project_id", "user_id"]
        return schema
    return _dict_schema(minor, deletable=minor >= 28)


@functools.cache
def post_schema(minor: int, *, min_consumers: int = 1) -> dict[str, Any]:
    """POST /allocations: consumer uuid -> that consumer's body (empty allocations allowed)."""
    return {"type": "object", "minProperties": min_consumers, "additionalProperties": False,
            "patternProperties": {UUID_PATTERN: _dict_schema(minor, deletable=True)}}


def consumer_rules(req: Request) -> cons.ConsumerRules:
    settings = req.app.settings.placement
    return cons.ConsumerRules(check_generation=req.version.at_least(28),
                              incomplete_project_id=settings.incomplete_consumer_project_id,
                              incomplete_user_id=settings.incomplete_consumer_user_id)


def _consumer(consumer_uuid: str, body: Mapping[str, Any]) -> allocs.ConsumerAllocations:
    allocations = body["allocations"]
    if isinstance(allocations, list):  # before 1.12
        allocations = {a["resource_provider"]["uuid"]: {"resources": a["resources"]}
                       for a in allocations}
    request = cons.ConsumerRequest(
        uuid=consumer_uuid, project_id=body.get("project_id"), user_id=body.get("user_id"),
        generation=body.get("consumer_generation"), consumer_type=body.get("consumer_type"))
    return allocs.ConsumerAllocations(
        request, {rp: dict(entry["resources"]) for rp, entry in allocations.items()})


def parse_consumers(data: Mapping[str, Any]) -> list[allocs.ConsumerAllocations]:
    return [_consumer(consumer_uuid, body) for consumer_uuid, body in data.items()]


def raise_write_error(exc: DomainError, not_found_prefix: str) -> NoReturn:
    """Re-raise a domain error from an allocation write with upstream's handler wording."""
    if isinstance(exc, allocs.UnknownClass):
        raise HTTPError(400, f"{not_found_prefix}{exc.detail}") from None
    if isinstance(exc, allocs.InventoryProblem):
        raise HTTPError(409, f"Unable to allocate inventory: {exc.detail}") from None
    if isinstance(exc, cons.ConcurrentUpdate):
        raise HTTPError(409, "Inventory and/or allocations changed while attempting to "
                             f"allocate: {exc.detail}", codes.CONCURRENT_UPDATE) from None
    raise exc


def _write(req: Request, wanted: list[allocs.ConsumerAllocations], not_found_prefix: str) -> None:
    claimed = None
    try:
        with req.app.db.write() as conn:
            if len(wanted) == 1:  # PUT, or a POST of one consumer: maybe a claim
                claimed = claim.replace_one(conn, wanted[0], consumer_rules(req))
            else:
                allocs.replace_allocations(conn, wanted, consumer_rules(req))
    except DomainError as exc:
        raise_write_error(exc, not_found_prefix)
    if claimed is not None:  # committed: this worker's snapshot takes it as it is
        req.app.candidates.claimed(claimed.log_ids, claimed.usage)


def _normalized_consumer(req: Request) -> str:
    raw = req.params["consumer_uuid"]
    try:
        parsed = uuidlib.UUID(raw)
    except ValueError:
        parsed = None
    if parsed is None or parsed.hex != raw.lower().replace("-", ""):
        raise HTTPError(400, f"Malformed consumer_uuid: {raw}")
    return str(parsed)


def set_for_consumer(req: Request) -> Response:
    authorize(req, "placement:allocations:update")
    consumer_uuid = _normalized_consumer(req)
    data = extract_json(req, put_schema(req.version.minor))
    _write(req, [_consumer(consumer_uuid, data)],
           f"Unable to allocate inventory for consumer {consumer_uuid}: ")
    return empty_response(204)


def set_many(req: Request) -> Response:
    authorize(req, "placement:allocations:manage")
    with bulk.gc_paused(len(req.body)):
        data = extract_json(req, post_schema(req.version.minor))
        _write(req, parse_consumers(data), "Unable to allocate inventory ")
    return empty_response(204)


def delete_for_consumer(req: Request) -> Response:
    authorize(req, "placement:allocations:delete")
    with req.app.db.write() as conn:
        allocs.delete_allocations(conn, req.params["consumer_uuid"])
    return empty_response(204)


def list_for_consumer(req: Request) -> Response:
    authorize(req, "placement:allocations:list")
    with req.app.db.read() as conn:
        view = allocs.for_consumer(conn, req.params["consumer_uuid"])
    body: dict[str, Any] = {"allocations": {}}
    if view is None:
        return cache_headers(req, json_response(body), utcnow())
    for row in view.rows:
        entry = body["allocations"].setdefault(row.provider_uuid, {"resources": {}})
        entry["resources"][row.resource_class] = row.used
        entry["generation"] = row.provider_generation
    if req.version.at_least(12):
        body.update(project_id=view.project_id, user_id=view.user_id)
        if req.version.at_least(28):
            body["consumer_generation"] = view.generation
        if req.version.at_least(38):
            body["consumer_type"] = view.consumer_type
    return cache_headers(req, json_response(body), last_modified_of(view.rows))


def list_for_provider(req: Request) -> Response:
    authorize(req, "placement:resource_providers:allocations:list")
    uuid = req.params["uuid"]
    with req.app.db.read() as conn:
        try:
            provider = providers.get_provider(conn, uuid)
        except NotFound as exc:
            raise HTTPError(404, f"Resource provider '{uuid}' not found: {exc.detail}") from None
        rows = allocs.for_provider(conn, provider.id)
    by_consumer: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = by_consumer.setdefault(row.consumer_uuid, {"resources": {}})
        entry["resources"][row.resource_class] = row.used
        if req.version.at_least(28):
            entry["consumer_generation"] = row.consumer_generation
    body = {"allocations": by_consumer, "resource_provider_generation": provider.generation}
    return cache_headers(req, json_response(body), last_modified_of(rows))


ROUTES = [
    Route("GET", "/allocations/{consumer_uuid}", list_for_consumer),
    Route("PUT", "/allocations/{consumer_uuid}", set_for_consumer, json_body=True),
    Route("DELETE", "/allocations/{consumer_uuid}", delete_for_consumer),
    Route("POST", "/allocations", set_many, min_version=13, json_body=True),
    Route("GET", "/resource_providers/{uuid}/allocations", list_for_provider),
]
