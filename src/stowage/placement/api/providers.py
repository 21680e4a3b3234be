"""/resource_providers: list (with filters), create, show, update (rename, re-parent), delete."""

from __future__ import annotations

import copy
import importlib
import uuid as uuidlib
from typing import Any, cast

from sqlalchemy.engine import Connection

from stowage.placement import providers
from stowage.placement.api.common import (
    authorize,
    cache_headers,
    extract_json,
    last_modified_of,
    validate_query,
)
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "provider_view"]

_UUID = {"type": "string", "format": "uuid"}
POST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 200}, "uuid": _UUID},
    "required": ["name"],
    "additionalProperties": False,
}
PUT_SCHEMA = copy.deepcopy(POST_SCHEMA)
del PUT_SCHEMA["properties"]["uuid"]
# 1.14: a provider may name its parent (null: none).
POST_SCHEMA_1_14 = copy.deepcopy(POST_SCHEMA)
POST_SCHEMA_1_14["properties"]["parent_provider_uuid"] = {"anyOf": [_UUID, {"type": "null"}]}
PUT_SCHEMA_1_14 = copy.deepcopy(POST_SCHEMA_1_14)
del PUT_SCHEMA_1_14["properties"]["uuid"]

# Query parameters of GET /resource_providers, one schema per microversion that added any.
GET_SCHEMA_1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "uuid": _UUID},
    "additionalProperties": False,
}
GET_SCHEMA_1_3 = copy.deepcopy(GET_SCHEMA_1_0)
GET_SCHEMA_1_3["properties"]["member_of"] = {"type": "string"}
GET_SCHEMA_1_4 = copy.deepcopy(GET_SCHEMA_1_3)
GET_SCHEMA_1_4["properties"]["resources"] = {"type": "string"}
GET_SCHEMA_1_14 = copy.deepcopy(GET_SCHEMA_1_4)
GET_SCHEMA_1_14["properties"]["in_tree"] = _UUID
GET_SCHEMA_1_18 = copy.deepcopy(GET_SCHEMA_1_14)
GET_SCHEMA_1_18["properties"]["required"] = {"type": "string"}
_GET_SCHEMAS = ((18, GET_SCHEMA_1_18), (14, GET_SCHEMA_1_14), (4, GET_SCHEMA_1_4),
                (3, GET_SCHEMA_1_3), (0, GET_SCHEMA_1_0))


def provider_view(req: Request, provider: providers.Provider) -> dict[str, Any]:
    """A provider as the requested microversion renders it."""
    url = req.link(f"/resource_providers/{provider.uuid}")
    rels = ["inventories", "usages"]
    for minor, rel in ((1, "aggregates"), (6, "traits"), (11, "allocations")):
        if req.version.at_least(minor):
            rels.append(rel)
    data: dict[str, Any] = {
        "uuid": provider.uuid,
        "name": provider.name,
        "generation": provider.generation,
        "links": [{"rel": "self", "href": url}]
                 + [{"rel": rel, "href": f"{url}/{rel}"} for rel in rels],
    }
    if req.version.at_least(14):
        data["parent_provider_uuid"] = provider.parent_provider_uuid
        data["root_provider_uuid"] = provider.root_provider_uuid
    return data


def _candidate_filter(req: Request, conn: Connection) -> set[int] | None:
    """Providers matching resources/required/member_of, from the candidates engine.

    Looked up lazily so that this module imports while that engine is written;
    None means none of those parameters were given.
    """
    module = importlib.import_module("stowage.placement.candidates")
    provider_filter = getattr(module, "provider_filter", None)
    if provider_filter is None:
        return None
    return cast("set[int] | None", provider_filter(req, conn))


def list_providers(req: Request) -> Response:
    authorize(req, "placement:resource_providers:list")
    schema = next(s for minor, s in _GET_SCHEMAS if req.version.at_least(minor))
    query = validate_query(req, schema)
    with req.app.db.read() as conn:
        ids = _candidate_filter(req, conn)
        found = providers.list_providers(conn, name=query.get("name"), uuid=query.get("uuid"),
                                         in_tree=query.get("in_tree"), ids=ids)
    resp = json_response({"resource_providers": [provider_view(req, p) for p in found]})
    return cache_headers(req, resp, last_modified_of(found))


def create_provider(req: Request) -> Response:
    authorize(req, "placement:resource_providers:create")
    data = extract_json(req, POST_SCHEMA_1_14 if req.version.at_least(14) else POST_SCHEMA)
    # Dashless or upper-case uuids are stored in the canonical dashed form.
    uuid = str(uuidlib.UUID(data["uuid"])) if data.get("uuid") else str(uuidlib.uuid4())
    with req.app.db.write() as conn:
        provider = providers.create_provider(conn, data["name"], uuid,
                                             data.get("parent_provider_uuid"))
    location = [("location", req.url(f"/resource_providers/{provider.uuid}"))]
    if not req.version.at_least(20):
        return empty_response(201, location)
    resp = json_response(provider_view(req, provider), headers=location)
    return cache_headers(req, resp, last_modified_of([provider]))


def show_provider(req: Request) -> Response:
    authorize(req, "placement:resource_providers:show")
    with req.app.db.read() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
    return cache_headers(req, json_response(provider_view(req, provider)),
                         last_modified_of([provider]))


def update_provider(req: Request) -> Response:
    authorize(req, "placement:resource_providers:update")
    with req.app.db.write() as conn:
        providers.get_provider(conn, req.params["uuid"])  # 404 before body errors, as upstream
        data = extract_json(req, PUT_SCHEMA_1_14 if req.version.at_least(14) else PUT_SCHEMA)
        provider = providers.update_provider(
            conn, req.params["uuid"], data["name"],
            data.get("parent_provider_uuid", providers.UNSET),
            allow_reparenting=req.version.at_least(37))
    return cache_headers(req, json_response(provider_view(req, provider)),
                         last_modified_of([provider]))


def delete_provider(req: Request) -> Response:
    authorize(req, "placement:resource_providers:delete")
    with req.app.db.write() as conn:
        providers.delete_provider(conn, req.params["uuid"])
    return empty_response(204)


ROUTES = [
    Route("GET", "/resource_providers", list_providers),
    Route("POST", "/resource_providers", create_provider, json_body=True),
    Route("GET", "/resource_providers/{uuid}", show_provider),
    Route("PUT", "/resource_providers/{uuid}", update_provider, json_body=True),
    Route("DELETE", "/resource_providers/{uuid}", delete_provider),
]
