"""/resource_classes: list, show, create (POST, or bodiless PUT from 1.7), rename, delete."""

from __future__ import annotations

from typing import Any

from stowage.placement import resource_classes as rcs
from stowage.placement.api.common import (
    authorize,
    cache_headers,
    extract_json,
    last_modified_of,
    validate_json,
)
from stowage.web.app import require_json_content
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

CUSTOM_PATTERN = "^CUSTOM_[A-Z0-9_]+$"
_CUSTOM = {"type": "string", "pattern": CUSTOM_PATTERN, "maxLength": 255}
POST_SCHEMA = {"type": "object", "properties": {"name": _CUSTOM}, "required": ["name"],
               "additionalProperties": False}


def _view(req: Request, name: str) -> dict[str, Any]:
    return {"name": name, "links": [{"rel": "self", "href": req.link(f"/resource_classes/{name}")}]}


def list_classes(req: Request) -> Response:
    authorize(req, "placement:resource_classes:list")
    with req.app.db.read() as conn:
        rows = rcs.list_classes(conn)
    resp = json_response({"resource_classes": [_view(req, r.name) for r in rows]})
    return cache_headers(req, resp, last_modified_of(r for r in rows if rcs.is_custom(r.name)))


def show_class(req: Request) -> Response:
    authorize(req, "placement:resource_classes:show")
    with req.app.db.read() as conn:
        row = rcs.get_class(conn, req.params["name"])
    custom = rcs.is_custom(row.name)
    return cache_headers(req, json_response(_view(req, row.name)),
                         last_modified_of([row]) if custom else None)


def create_class(req: Request) -> Response:
    authorize(req, "placement:resource_classes:create")
    name = extract_json(req, POST_SCHEMA)["name"]
    with req.app.db.write() as conn:
        rcs.create_class(conn, name)
    return empty_response(201, [("location", req.url(f"/resource_classes/{name}"))])


def update_class(req: Request) -> Response:
    authorize(req, "placement:resource_classes:update")
    name = req.params["name"]
    if req.version.at_least(7):
        return _ensure_class(req, name)
    require_json_content(req)  # a body is required only before 1.7
    new_name = extract_json(req, POST_SCHEMA)["name"]
    with req.app.db.write() as conn:
        rcs.rename_class(conn, name, new_name)
    return json_response(_view(req, new_name))


def _ensure_class(req: Request, name: str) -> Response:
    validate_json({"name": name}, POST_SCHEMA)
    status = 204
    with req.app.db.write() as conn:
        if name not in rcs.ids_by_name(conn, {name}):
            rcs.create_class(conn, name)
            status = 201
    return empty_response(status, [("location", req.url(f"/resource_classes/{name}"))])


def delete_class(req: Request) -> Response:
    authorize(req, "placement:resource_classes:delete")
    with req.app.db.write() as conn:
        rcs.delete_class(conn, req.params["name"])
    return empty_response(204)


ROUTES = [
    Route("GET", "/resource_classes", list_classes, min_version=2),
    Route("POST", "/resource_classes", create_class, min_version=2, json_body=True),
    Route("GET", "/resource_classes/{name}", show_class, min_version=2),
    Route("PUT", "/resource_classes/{name}", update_class, min_version=2),
    Route("DELETE", "/resource_classes/{name}", delete_class, min_version=2),
]
