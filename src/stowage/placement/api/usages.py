"""GET /resource_providers/{uuid}/usages and GET /usages (1.9; by consumer type from 1.38).

Usages are "what is allocated now", so last-modified is always the time of
the request, as upstream.
"""

from __future__ import annotations

from typing import Any

from stowage.errors import NotFound
from stowage.placement import providers
from stowage.placement import usages as usage
from stowage.placement.api.common import authorize, cache_headers, validate_query
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_ID = {"type": "string", "minLength": 1, "maxLength": 255}
QUERY_SCHEMA_1_9: dict[str, Any] = {
    "type": "object",
    "properties": {"project_id": _ID, "user_id": _ID},
    "required": ["project_id"],
    "additionalProperties": False,
}
QUERY_SCHEMA_1_38: dict[str, Any] = {
    **QUERY_SCHEMA_1_9,
    "properties": {**QUERY_SCHEMA_1_9["properties"], "consumer_type": {
        "type": "string", "pattern": "^[A-Z0-9_]+$|^all|^unknown$",
        "minLength": 1, "maxLength": 255}},
}


def provider_usages(req: Request) -> Response:
    authorize(req, "placement:resource_providers:usages")
    uuid = req.params["uuid"]
    with req.app.db.read() as conn:
        try:
            provider = providers.get_provider(conn, uuid)
        except NotFound as exc:
            raise HTTPError(404, f"No resource provider with uuid {uuid} found: "
                                 f"{exc.detail}") from None
        used = usage.for_provider(conn, provider.id)
    body = {"resource_provider_generation": provider.generation, "usages": used}
    return cache_headers(req, json_response(body))


def total_usages(req: Request) -> Response:
    project_id = next(iter(req.query_values("project_id")), None)
    authorize(req, "placement:usages", {"project_id": project_id})
    typed = req.version.at_least(38)
    query = validate_query(req, QUERY_SCHEMA_1_38 if typed else QUERY_SCHEMA_1_9)
    project, user = query["project_id"], query.get("user_id")
    with req.app.db.read() as conn:
        if typed:
            groups = usage.by_consumer_type(conn, project, user, query.get("consumer_type"))
            body: dict[str, Any] = {"usages": {
                name: {**group.usages, "consumer_count": group.consumer_count}
                for name, group in groups.items()}}
        else:
            body = {"usages": usage.for_project(conn, project, user)}
    return cache_headers(req, json_response(body))


ROUTES = [
    Route("GET", "/resource_providers/{uuid}/usages", provider_usages),
    Route("GET", "/usages", total_usages, min_version=9),
]
