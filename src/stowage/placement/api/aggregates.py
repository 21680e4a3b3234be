"""/resource_providers/{uuid}/aggregates (1.1+); generation in body and CAS from 1.19."""

from __future__ import annotations

from typing import Any

from stowage.errors import Conflict
from stowage.placement import aggregates as aggs
from stowage.placement import codes, providers
from stowage.placement.api.common import authorize, cache_headers, extract_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "format": "uuid"},
                         "uniqueItems": True}
PUT_SCHEMA_1_1 = _LIST
PUT_SCHEMA_1_19: dict[str, Any] = {
    "type": "object",
    "properties": {"aggregates": _LIST, "resource_provider_generation": {"type": "integer"}},
    "required": ["aggregates", "resource_provider_generation"],
    "additionalProperties": False,
}
_WITH_GENERATION = 19


def _send(req: Request, agg_uuids: list[str], generation: int) -> Response:
    body: dict[str, Any] = {"aggregates": agg_uuids}
    if req.version.at_least(_WITH_GENERATION):
        body["resource_provider_generation"] = generation
    # Links carry no timestamp, so last-modified is "now", as upstream.
    return cache_headers(req, json_response(body))


def get_aggregates(req: Request) -> Response:
    authorize(req, "placement:resource_providers:aggregates:list")
    with req.app.db.read() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        found = aggs.provider_aggregates(conn, provider.id)
    return _send(req, found, provider.generation)


def set_aggregates(req: Request) -> Response:
    authorize(req, "placement:resource_providers:aggregates:update")
    with_generation = req.version.at_least(_WITH_GENERATION)
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        data = extract_json(req, PUT_SCHEMA_1_19 if with_generation else PUT_SCHEMA_1_1)
        agg_uuids = data["aggregates"] if with_generation else data
        if with_generation and data["resource_provider_generation"] != provider.generation:
            raise HTTPError(409, "Resource provider's generation already changed. Please "
                                 "update the generation and try again.", codes.CONCURRENT_UPDATE)
        try:
            generation = aggs.set_aggregates(conn, provider, agg_uuids,
                                             bump_generation=with_generation)
        except Conflict as exc:
            raise HTTPError(409, f"Update conflict: {exc}", codes.CONCURRENT_UPDATE) from None
    return _send(req, agg_uuids, generation)


_PATH = "/resource_providers/{uuid}/aggregates"
ROUTES = [
    Route("GET", _PATH, get_aggregates, min_version=1),
    Route("PUT", _PATH, set_aggregates, min_version=1, json_body=True),
]
