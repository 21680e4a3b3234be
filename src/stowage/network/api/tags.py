"""`/v2.0/{collection}/{id}/tags[/{tag}]` (extension `standard-attr-tag`): list, check,
add one, add several, replace all, remove one, remove all.

The statuses are Neutron's: list and replace 200 with `{"tags": [...]}`, check 204
(404 TagNotFound), add one 201, add several 201, removes 204. A tag is a string
of at most 255 characters (400 InvalidInput otherwise); a record the caller may
not see is 404, a change the rules refuse 403 (`update_<collection>_tags`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Connection

from stowage.network import errors as e
from stowage.network import tags
from stowage.network.api import common
from stowage.network.api.attributes import bad
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "tag_list"]


def _tag(value: Any) -> str:
    """Neutron's validate_string(tag, MAX_TAG_LEN), as InvalidInput."""
    if not isinstance(value, str):
        raise e.invalid_input(f"'{value}' is not a valid string")
    if len(value) > tags.MAX_TAG_LEN:
        raise e.invalid_input(f"'{value}' exceeds maximum length of {tags.MAX_TAG_LEN}")
    return value


def _unique_tags(found: Any) -> list[str]:
    """Neutron's list_of_unique_strings(MAX_TAG_LEN); ValueError otherwise."""
    if not isinstance(found, list):
        raise ValueError(f"'{found}' is not a list")
    for item in found:
        if not isinstance(item, str):
            raise ValueError(f"'{item}' is not a valid string")
        if len(item) > tags.MAX_TAG_LEN:
            raise ValueError(f"'{item}' exceeds maximum length of {tags.MAX_TAG_LEN}")
    duplicates = sorted({t for t in found if found.count(t) > 1})
    if duplicates:
        raise ValueError(f"Duplicate items in the list: '{', '.join(duplicates)}'")
    return list(found)


def tag_list(value: Any) -> list[str]:
    """The `tags` attribute of a port create (tag-ports-during-bulk-creation)."""
    return _unique_tags(value)


def _tag_list(req: Request) -> list[str]:
    """The body `{"tags": [unique strings]}`; 400 InvalidInput otherwise."""
    try:
        body = load_json(req.body) if req.body else None
    except InvalidJSON:
        raise bad("Malformed request body") from None
    if not isinstance(body, dict) or "tags" not in body:
        raise e.invalid_input("Invalid tags body")
    try:
        return _unique_tags(body["tags"])
    except ValueError as exc:
        raise e.invalid_input(str(exc)) from None


def _held(req: Request, conn: Connection, verb: str) -> tuple[str, str]:
    """The collection and record id, after the caller was held to `<verb>_<coll>_tags`:
    404 if the record is not there or hidden from the caller, 403 if the rule refuses."""
    collection, record_id = req.params["collection"].replace("-", "_"), req.params["id"]
    kind = tags.taggable(collection)
    if kind is None:
        raise HTTPError(404, "The resource could not be found.")
    target = kind.load(conn, req.context, record_id)
    common.guard(req).check(f"{verb}_{collection}_tags", target,
                            missing=tags.missing(collection, record_id))
    return collection, record_id


def _read(req: Request, work: Callable[[Connection, str, str], Any]) -> Any:
    def run(conn: Connection) -> Any:
        collection, record_id = _held(req, conn, "get")
        return work(conn, collection, record_id)
    return common.read(req, run)


def _write(req: Request, verb: str, work: Callable[[Connection, str, str], None]
           ) -> list[str]:
    """Run `work` in one transaction; the record's tags afterwards."""
    def run(conn: Connection) -> list[str]:
        collection, record_id = _held(req, conn, verb)
        work(conn, collection, record_id)
        return tags.of(conn, collection, [record_id])[record_id]
    return common.write(req, run)


def list_tags(req: Request) -> Response:
    found = _read(req, lambda conn, coll, rid: tags.of(conn, coll, [rid])[rid])
    return json_response({"tags": found})


def check_tag(req: Request) -> Response:
    tag = _tag(req.params["tag"])
    found = _read(req, lambda conn, coll, rid: tags.of(conn, coll, [rid])[rid])
    if tag not in found:
        raise tags.tag_missing(tag)
    return empty_response(204)


def add_tag(req: Request) -> Response:
    tag = _tag(req.params["tag"])
    _write(req, "update", lambda conn, coll, rid: tags.add(conn, coll, rid, [tag]))
    return empty_response(201)


def add_tags(req: Request) -> Response:
    wanted = _tag_list(req)
    found = _write(req, "create", lambda conn, coll, rid: tags.add(conn, coll, rid, wanted))
    return json_response({"tags": found}, status=201)


def replace_tags(req: Request) -> Response:
    wanted = _tag_list(req)
    found = _write(req, "update", lambda conn, coll, rid: tags.replace(conn, coll, rid,
                                                                       wanted))
    return json_response({"tags": found})


def remove_tag(req: Request) -> Response:
    tag = _tag(req.params["tag"])
    _write(req, "delete", lambda conn, coll, rid: tags.remove(conn, coll, rid, tag))
    return empty_response(204)


def remove_tags(req: Request) -> Response:
    _write(req, "delete", tags.clear)
    return empty_response(204)


def _routes() -> list[Route]:
    found: list[Route] = []
    handlers: Mapping[tuple[str, str], tuple[Callable[[Request], Response], bool]] = {
        ("GET", ""): (list_tags, False), ("POST", ""): (add_tags, True),
        ("PUT", ""): (replace_tags, True), ("DELETE", ""): (remove_tags, False),
        ("GET", "/{tag}"): (check_tag, False), ("PUT", "/{tag}"): (add_tag, False),
        ("DELETE", "/{tag}"): (remove_tag, False)}
    for collection in tags.COLLECTIONS:
        base = f"/v2.0/{collection.replace('_', '-')}/{{id}}/tags"
        for (method, tail), (handler, body) in handlers.items():
            found.append(Route(method, base + tail, _bound(collection, handler), json_body=body))
    return found


def _bound(collection: str, handler: Callable[[Request], Response]
           ) -> Callable[[Request], Response]:
    """The handler with the route's collection in `req.params["collection"]`."""
    def handle(req: Request) -> Response:
        req.params["collection"] = collection
        return handler(req)
    return handle


ROUTES = _routes()
