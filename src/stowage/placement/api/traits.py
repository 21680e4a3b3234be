"""/traits and /resource_providers/{uuid}/traits (microversion 1.6+)."""

from __future__ import annotations

import re
from typing import Any

from stowage.errors import NotFound
from stowage.placement import codes, providers
from stowage.placement import traits as tr
from stowage.placement.api.common import (
    authorize,
    cache_headers,
    extract_json,
    last_modified_of,
    validate_query,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_CUSTOM_PATTERN = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "associated": {"type": "string"}},
    "additionalProperties": False,
}
SET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "traits": {"type": "array",
                   "items": {"type": "string", "minLength": 1, "maxLength": 255}},
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}
_GENERATION_CHANGED = ("Resource provider's generation already changed. Please update the "
                       "generation and try again.")


def _filters(query: dict[str, str]) -> dict[str, Any]:
    """`name=in:A,B` / `name=startswith:P` and `associated=true|false`, as upstream parses them."""
    filters: dict[str, Any] = {}
    if "name" in query:
        op, sep, value = query["name"].partition(":")
        if not sep:
            raise HTTPError(400, "Badly formatted name parameter. Expected name query string "
                                 "parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. "
                                 f'Got: "{query["name"]}"')
        if op == "in":
            filters["name_in"] = value.split(",")
        elif op == "startswith":
            filters["prefix"] = value
    if "associated" in query:
        flag = query["associated"].lower()
        if flag not in ("true", "false"):
            raise HTTPError(400, 'The query parameter "associated" only accepts "true" or '
                                 '"false"')
        filters["associated"] = flag == "true"
    return filters


def list_traits(req: Request) -> Response:
    authorize(req, "placement:traits:list")
    filters = _filters(validate_query(req, LIST_SCHEMA))
    with req.app.db.read() as conn:
        rows = tr.list_traits(conn, **filters)
    return cache_headers(req, json_response({"traits": [r.name for r in rows]}),
                         last_modified_of(rows))


def show_trait(req: Request) -> Response:
    authorize(req, "placement:traits:show")
    with req.app.db.read() as conn:
        row = tr.get_trait(conn, req.params["name"])
    return cache_headers(req, empty_response(204), row.created_at)


def put_trait(req: Request) -> Response:
    authorize(req, "placement:traits:update")
    name = req.params["name"]
    if len(name) > 255 or not _CUSTOM_PATTERN.match(name):
        raise HTTPError(400, "The trait is invalid. A valid trait must be no longer than 255 "
                             'characters, start with the prefix "CUSTOM_" and use following '
                             'characters: "A"-"Z", "0"-"9" and "_"')
    with req.app.db.write() as conn:
        row, created = tr.ensure_trait(conn, name)
    resp = empty_response(201 if created else 204, [("location", req.url(f"/traits/{name}"))])
    return cache_headers(req, resp, row.created_at)


def delete_trait(req: Request) -> Response:
    authorize(req, "placement:traits:delete")
    with req.app.db.write() as conn:
        tr.delete_trait(conn, req.params["name"])
    return empty_response(204)


def _provider_traits_body(rows: list[tr.TraitRow], generation: int) -> dict[str, Any]:
    return {"traits": [r.name for r in rows], "resource_provider_generation": generation}


def list_provider_traits(req: Request) -> Response:
    authorize(req, "placement:resource_providers:traits:list")
    uuid = req.params["uuid"]
    with req.app.db.read() as conn:
        try:
            provider = providers.get_provider(conn, uuid)
        except NotFound as exc:
            raise HTTPError(404, f"No resource provider with uuid {uuid} found: {exc}") from None
        rows = tr.provider_traits(conn, provider.id)
    return cache_headers(req, json_response(_provider_traits_body(rows, provider.generation)),
                         last_modified_of(rows))


def set_provider_traits(req: Request) -> Response:
    authorize(req, "placement:resource_providers:traits:update")
    data = extract_json(req, SET_SCHEMA)
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        if provider.generation != data["resource_provider_generation"]:
            raise HTTPError(409, _GENERATION_CHANGED, codes.CONCURRENT_UPDATE)
        rows, generation = tr.set_provider_traits(conn, provider, data["traits"])
    return cache_headers(req, json_response(_provider_traits_body(rows, generation)),
                         last_modified_of(rows))


def delete_provider_traits(req: Request) -> Response:
    authorize(req, "placement:resource_providers:traits:delete")
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        tr.set_provider_traits(conn, provider, [])
    return empty_response(204)


_RP_TRAITS = "/resource_providers/{uuid}/traits"
ROUTES = [
    Route("GET", "/traits", list_traits, min_version=6),
    Route("GET", "/traits/{name}", show_trait, min_version=6),
    Route("PUT", "/traits/{name}", put_trait, min_version=6),
    Route("DELETE", "/traits/{name}", delete_trait, min_version=6),
    Route("GET", _RP_TRAITS, list_provider_traits, min_version=6),
    Route("PUT", _RP_TRAITS, set_provider_traits, min_version=6, json_body=True),
    Route("DELETE", _RP_TRAITS, delete_provider_traits, min_version=6),
]
