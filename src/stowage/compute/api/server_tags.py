"""/servers/{id}/tags[/{tag}] (2.26): a server's tags, as Nova's server-tags API.

    GET    /tags        {"tags": [...]}
    PUT    /tags        {"tags": [...]} replaces them all (at most 50), answers them
    DELETE /tags        204, every tag gone
    GET    /tags/{tag}  204 if the server has it, else 404
    PUT    /tags/{tag}  201 with a Location when new, 204 when already there;
                        400 when the server already holds 50 tags
    DELETE /tags/{tag}  204, 404 when the server has no such tag

A tag is 1..60 characters without ',' or '/'. Changes need the server
active, paused, suspended or stopped (409 "Cannot 'update tag' ..."); they
hold the instance row from read to commit, so concurrent additions cannot
together pass the limit. Below 2.26 these paths do not exist (404).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import jsonschema

from stowage.compute import tags as tag_records
from stowage.compute.api.common import (
    API_PREFIX,
    authorize,
    read_body,
    require_version,
    validate_body,
)
from stowage.compute.api.server_common import check_state, get_server, locked_server, target
from stowage.compute.api.server_metadata import WRITABLE
from stowage.compute.instances import Instance
from stowage.web import schema_report
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "TAG", "TAGS_VERSION", "TAGS_ON_CREATE"]

TAGS_VERSION = 26
TAGS_ON_CREATE = 52
_RULE = "os_compute_api:os-server-tags:"
TAG: dict[str, Any] = {"type": "string", "pattern": "^[^,/]*$", "minLength": 1,
                       "maxLength": tag_records.MAX_TAG_LENGTH}
_ALL_SCHEMA = {"type": "object",
               "properties": {"tags": {"type": "array", "items": TAG,
                                       "maxItems": tag_records.MAX_TAGS}},
               "required": ["tags"], "additionalProperties": False}


def _server_for_change(req: Request, conn: Any, rule: str, action: str) -> Instance:
    instance = locked_server(req, conn, req.params["server_id"])
    authorize(req, _RULE + rule, target(instance))
    check_state(instance, action, WRITABLE, task_states=None, must_have_launched=False)
    return instance


def list_tags(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _RULE + "index", target(instance))
        found = tag_records.tags_of(conn, instance.uuid)
    return json_response({"tags": found})


def show_tag(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    tag = req.params["tag"]
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, _RULE + "show", target(instance))
        found = tag in tag_records.tags_of(conn, instance.uuid)
    if not found:
        raise HTTPError(404, f"Server {instance.uuid} has no tag '{tag}'")
    return empty_response(204)


def replace_tags(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    wanted = validate_body(read_body(req), _ALL_SCHEMA)["tags"]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _server_for_change(req, conn, "update_all", "update tags")
        now = tag_records.replace(conn, instance.uuid, wanted)
    return json_response({"tags": now})


def _check_tag(tag: str) -> None:
    try:
        jsonschema.Draft4Validator(TAG).validate(tag)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, f"Tag '{tag}' is invalid. It must be a non empty string without "
                             "characters '/' and ','. Validation error message: "
                             f"{schema_report.message(exc)}") from None


def add_tag(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    if req.body.strip():  # Nova's schema for this PUT: no body, or JSON null
        validate_body(read_body(req), {"type": "null"})
    tag = req.params["tag"]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _server_for_change(req, conn, "update", "update tag")
        _check_tag(tag)
        held = tag_records.tags_of(conn, instance.uuid)
        if len(held) >= tag_records.MAX_TAGS:
            raise HTTPError(400, "The number of tags exceeded the per-server limit "
                                 f"{tag_records.MAX_TAGS}")
        if tag in held:
            return empty_response(204)
        tag_records.add(conn, instance.uuid, tag)
    # The tag percent-encoded: a Location header is ASCII, a tag any Unicode text.
    location = req.url(f"{API_PREFIX}/servers/{instance.uuid}/tags/{quote(tag, safe='')}")
    return empty_response(201, headers=[("location", location)])


def delete_tag(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    tag = req.params["tag"]
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _server_for_change(req, conn, "delete", "delete tag")
        if not tag_records.remove(conn, instance.uuid, tag):
            raise HTTPError(404, f"Instance {instance.uuid} has no tag '{tag}'")
    return empty_response(204)


def delete_tags(req: Request) -> Response:
    require_version(req, TAGS_VERSION)
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _server_for_change(req, conn, "delete_all", "delete tags")
        tag_records.remove_all(conn, instance.uuid)
    return empty_response(204)


_ALL = API_PREFIX + "/servers/{server_id}/tags"
ROUTES = [
    Route("GET", _ALL, list_tags),
    Route("PUT", _ALL, replace_tags, json_body=True),
    Route("DELETE", _ALL, delete_tags),
    Route("GET", _ALL + "/{tag}", show_tag),
    Route("PUT", _ALL + "/{tag}", add_tag),
    Route("DELETE", _ALL + "/{tag}", delete_tag),
]
