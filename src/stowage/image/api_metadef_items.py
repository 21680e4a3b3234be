"""Objects, properties and tags of a metadata definition namespace, as Glance serves them::

    GET|POST|DELETE /v2/metadefs/namespaces/{ns}/objects           (DELETE: all of them)
    GET|PUT|DELETE  /v2/metadefs/namespaces/{ns}/objects/{name}
    GET|POST|DELETE /v2/metadefs/namespaces/{ns}/properties
    GET|PUT|DELETE  /v2/metadefs/namespaces/{ns}/properties/{name}
    GET|POST|DELETE /v2/metadefs/namespaces/{ns}/tags              (POST: replace all, or
                                                                    add with
                                                                    X-Openstack-Append: true)
    POST|GET|PUT|DELETE /v2/metadefs/namespaces/{ns}/tags/{name}

Creations answer 201, changes 200, deletions 204. Properties are listed as an
object keyed by name, objects and tags as arrays, as Glance lists them. The
namespace is looked up first (404 when the caller may not see it), then the
rule (admins write, by default), then the item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy.exc
from sqlalchemy.engine import Connection

from stowage.errors import NotFound
from stowage.image import metadef_items as items
from stowage.image import metadefs as md
from stowage.image.api_metadefs import duplicate_race, enforce, namespace_of
from stowage.image.metadef_schemas import body_of, validate
from stowage.image.metadef_views import item_view
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_PLURAL = {"object": "objects", "property": "properties", "tag": "tags"}
# The rules of each kind: read one, read all, add, change, delete one, delete all.
_RULES = {
    "object": ("get_metadef_object", "get_metadef_objects", "add_metadef_object",
               "modify_metadef_object", "delete_metadef_object", "delete_metadef_namespace"),
    "property": ("get_metadef_property", "get_metadef_properties", "add_metadef_property",
                 "modify_metadef_property", "remove_metadef_property",
                 "delete_metadef_namespace"),
    "tag": ("get_metadef_tag", "get_metadef_tags", "add_metadef_tag", "modify_metadef_tag",
            "delete_metadef_tag", "delete_metadef_tags"),
}
_NAME_MAX = 80


def _named(kind: str, req: Request) -> tuple[str, dict[str, Any]]:
    """The item's name and body from a create or change request."""
    body = body_of(req, kind)
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise HTTPError(400, f"Provided object does not match schema '{kind}': "
                             "'name' is a required property")
    return name, {k: v for k, v in body.items() if k != "name"}


def _unprefixed(conn: Connection, ns: md.Namespace, name: str, resource_type: str) -> str:
    """Glance's `GET .../properties/{name}?resource_type=X`: `name` as X knows it, the
    prefix of the namespace's association to X taken off."""
    linked = next((a for a in md.associations(conn, ns) if a.name == resource_type), None)
    if linked is None:
        raise NotFound(f"The metadata definition resource-type association of resource-type="
                       f"{resource_type} to namespace={ns.namespace}, was not found.")
    prefix = linked.prefix
    if not prefix or not name.startswith(prefix):
        raise NotFound(f"Property {name} does not start with the expected resource type "
                       f"association prefix of '{prefix}'.")
    return name[len(prefix):]


def _handlers(kind: str) -> list[Route]:
    one, every, add, modify, remove, clear = _RULES[kind]
    base = f"/v2/metadefs/namespaces/{{namespace}}/{_PLURAL[kind]}"

    def listed(req: Request) -> Response:
        with req.app.db.read() as conn:
            ns = namespace_of(req, conn, short=kind == "property")
            enforce(req, every)
            found = items.list_items(conn, kind, ns)
        if kind == "property":
            return json_response({"properties": {i.name: item_view(kind, ns, i) for i in found},
                                  "schema": "/v2/schemas/metadefs/properties"})
        return json_response({_PLURAL[kind]: [item_view(kind, ns, i) for i in found],
                              "schema": f"/v2/schemas/metadefs/{_PLURAL[kind]}"})

    def shown(req: Request) -> Response:
        with req.app.db.read() as conn:
            ns = namespace_of(req, conn, short=kind == "property")
            enforce(req, one)
            name = req.params["name"]
            if kind == "property" and req.query_values("resource_type"):
                name = _unprefixed(conn, ns, name, req.query_values("resource_type")[-1])
            return json_response(item_view(kind, ns, items.get(conn, kind, ns, name)))

    def created(req: Request) -> Response:
        name, body = _named(kind, req)
        return _write(req, add, lambda conn, ns: items.create(conn, kind, ns, name, body),
                      kind, 201)

    def changed(req: Request) -> Response:
        name, body = _named(kind, req)
        return _write(req, modify, lambda conn, ns: items.update(
            conn, kind, ns, req.params["name"], name, body), kind, 200)

    def deleted(req: Request) -> Response:
        with req.app.db.write() as conn:
            ns = namespace_of(req, conn, lock=True, short=kind == "property")
            enforce(req, remove)
            items.delete(conn, kind, ns, req.params["name"])
        return empty_response(204)

    def cleared(req: Request) -> Response:
        with req.app.db.write() as conn:
            ns = namespace_of(req, conn, lock=True)
            enforce(req, clear)
            items.delete_all(conn, kind, ns)
        return empty_response(204)

    routes = [Route("GET", base, listed), Route("DELETE", base, cleared),
              Route("GET", base + "/{name}", shown), Route("DELETE", base + "/{name}", deleted),
              Route("PUT", base + "/{name}", changed, json_body=True)]
    if kind != "tag":
        routes.append(Route("POST", base, created, json_body=True))
    return routes


def _write(req: Request, action: str,
           change: Callable[[Any, md.Namespace], items.Item], kind: str,
           status: int) -> Response:
    """Run `change` on the locked namespace after `action`'s rule; duplicates are 409."""
    try:
        with req.app.db.write() as conn:
            ns = namespace_of(req, conn, lock=True, short=kind == "property")
            enforce(req, action)
            item = change(conn, ns)
    except sqlalchemy.exc.IntegrityError as exc:
        raise duplicate_race(exc) from None
    return json_response(item_view(kind, ns, item), status=status)


def create_tag(req: Request) -> Response:
    """POST .../tags/{name}: one tag, no body."""
    name = req.params["name"]
    if len(name) > _NAME_MAX:
        raise HTTPError(400, f"Tag name can be at most {_NAME_MAX} characters long")
    return _write(req, "add_metadef_tag",
                  lambda conn, ns: items.create(conn, "tag", ns, name, {}), "tag", 201)


def create_tags(req: Request) -> Response:
    """POST .../tags {"tags": [{"name": ...}, ...]}: these instead of the namespace's own,
    or besides them when the X-Openstack-Append header is true."""
    body = _tags_body(req)
    append = req.headers.get("x-openstack-append", "").strip().lower() == "true"
    names = [tag["name"] for tag in body]
    try:
        with req.app.db.write() as conn:
            ns = md.get_for_update(conn, req.params["namespace"], req.context)
            enforce(req, "add_metadef_tags")
            made = items.replace_tags(conn, ns, names, append)
    except sqlalchemy.exc.IntegrityError as exc:
        raise duplicate_race(exc) from None
    return json_response({"tags": [{"name": t.name} for t in made]}, status=201)


def _tags_body(req: Request) -> list[dict[str, Any]]:
    try:
        body = load_json(req.body or b"")
    except InvalidJSON:
        raise HTTPError(400, "Malformed JSON in request body.") from None
    if not isinstance(body, dict) or not isinstance(body.get("tags"), list):
        raise HTTPError(400, "Provided object does not match schema 'tags': "
                             "'tags' is a required property")
    return [validate("tag", tag) for tag in body["tags"]]


_TAGS = "/v2/metadefs/namespaces/{namespace}/tags"
ROUTES = [
    *_handlers("object"), *_handlers("property"), *_handlers("tag"),
    Route("POST", _TAGS, create_tags, json_body=True),
    Route("POST", _TAGS + "/{name}", create_tag),
]
