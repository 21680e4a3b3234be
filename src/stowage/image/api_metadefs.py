"""Metadata definition namespaces and resource types, as Glance v2 serves them::

    GET    /v2/metadefs/namespaces                    ?visibility, resource_types, limit,
                                                       marker, sort_key, sort_dir
    POST   /v2/metadefs/namespaces                    201 (with nested associations,
                                                       properties, objects, tags)
    GET    /v2/metadefs/namespaces/{ns}               with what it holds (?resource_type:
                                                       property names with its prefix)
    PUT    /v2/metadefs/namespaces/{ns}               every attribute replaced
    DELETE /v2/metadefs/namespaces/{ns}               204; 403 when protected
    GET    /v2/metadefs/resource_types
    GET    /v2/metadefs/namespaces/{ns}/resource_types
    POST   /v2/metadefs/namespaces/{ns}/resource_types          201
    DELETE /v2/metadefs/namespaces/{ns}/resource_types/{name}   204

A namespace the caller may not see is a 404 before any rule is asked, so a
refusal (403, "You are not authorized to complete <rule> action.") gives
nothing away. The records: metadefs.py; objects, properties and tags:
api_metadef_items.py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import sqlalchemy.exc
from sqlalchemy.engine import Connection

from stowage.errors import Conflict, NotFound
from stowage.image import metadef_items as items
from stowage.image import metadefs as md
from stowage.image import policy
from stowage.image.api_list import int_param, last
from stowage.image.metadef_schemas import body_of
from stowage.image.metadef_views import association_view, full_view, namespace_view, stamp
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "enforce", "namespace_of", "duplicate_race"]

_SORT_KEYS = ("created_at", "updated_at", "namespace")
# Glance's limit_param_default and api_limit_max.
_LIMIT_DEFAULT, _LIMIT_MAX = 25, 1000


def enforce(req: Request, action: str) -> None:
    if not req.app.enforcer.allowed(action, req.context, req.context.policy_target()):
        raise policy.denied(action)


def namespace_of(req: Request, conn: Connection, *, lock: bool = False,
                 short: bool = False) -> md.Namespace:
    """The path's namespace (its row locked with `lock`). Glance's property and
    resource-type routes say "Namespace <name> not found" when it is not visible."""
    name = req.params["namespace"]
    try:
        return (md.get_for_update if lock else md.get)(conn, name, req.context)
    except NotFound:
        if short:
            raise NotFound(f"Namespace {name} not found") from None
        raise


def duplicate_race(exc: sqlalchemy.exc.IntegrityError) -> Conflict:
    """Two writers inserting the same name: the loser's unique violation, as a 409."""
    return Conflict(f"Conflict: a metadata definition of that name already exists "
                    f"({type(exc.orig).__name__}).")


def list_namespaces(req: Request) -> Response:
    enforce(req, "get_metadef_namespaces")
    limit = min(int_param(req, "limit", _LIMIT_DEFAULT), _LIMIT_MAX)
    sort_key, sort_dir = last(req, "sort_key") or "created_at", last(req, "sort_dir") or "desc"
    if sort_key not in _SORT_KEYS:
        raise HTTPError(400, f"Invalid sort key: {sort_key}. It must be one of the "
                             f"following: {', '.join(_SORT_KEYS)}.")
    if sort_dir not in ("asc", "desc"):
        raise HTTPError(400, f"Invalid sort direction: {sort_dir}")
    visibility = last(req, "visibility")
    if visibility not in (None, "public", "private"):
        raise HTTPError(400, f"Invalid visibility value: {visibility}")
    types = [t for t in (last(req, "resource_types") or "").split(",") if t.strip()]
    with req.app.db.read() as conn:
        found = md.list_namespaces(conn, req.context, visibility=visibility,
                                   resource_types=[t.strip() for t in types], limit=limit,
                                   marker=last(req, "marker"), sort_key=sort_key,
                                   sort_dir=sort_dir)
        shown = []
        for ns in found:
            view = namespace_view(ns)
            linked = [association_view(a) for a in md.associations(conn, ns)]
            shown.append({**view, "resource_type_associations": linked} if linked else view)
    # Glance's links: `first` keeps the query but the marker, `next` adds the last one.
    params = [(k, v) for k, v in req.query if k != "marker"]
    body: dict[str, Any] = {"namespaces": shown, "schema": "/v2/schemas/metadefs/namespaces",
                            "first": _NS + (f"?{urlencode(params)}" if params else "")}
    if found and len(found) == limit:
        body["next"] = f"{_NS}?" + urlencode([*params, ("marker", found[-1].namespace)])
    return json_response(body)


def _create_held(conn: Connection, ns: md.Namespace, body: dict[str, Any]) -> None:
    """The associations, properties, objects and tags a new namespace comes with."""
    for assoc in body.get("resource_type_associations") or []:
        md.associate(conn, ns, assoc["name"], assoc.get("prefix"),
                     assoc.get("properties_target"))
    for name, prop in (body.get("properties") or {}).items():
        items.create(conn, "property", ns, name, {k: v for k, v in prop.items()
                                                  if k != "name"})
    for obj in body.get("objects") or []:
        items.create(conn, "object", ns, obj["name"], {k: v for k, v in obj.items()
                                                       if k != "name"})
    items.replace_tags(conn, ns, [tag["name"] for tag in body.get("tags") or []], True)


def create_namespace(req: Request) -> Response:
    enforce(req, "add_metadef_namespace")
    body = body_of(req, "namespace")
    try:
        with req.app.db.write() as conn:
            ns = md.create(conn, body, req.context)
            _create_held(conn, ns, body)
            shown = full_view(conn, ns)
    except sqlalchemy.exc.IntegrityError as exc:
        raise duplicate_race(exc) from None
    where = req.url(f"{_NS}/{quote(ns.namespace, safe=':')}")
    return json_response(shown, status=201).header("Location", where)


def show_namespace(req: Request) -> Response:
    with req.app.db.read() as conn:
        ns = md.get(conn, req.params["namespace"], req.context)
        enforce(req, "get_metadef_namespace")
        return json_response(full_view(conn, ns, last(req, "resource_type")))


def update_namespace(req: Request) -> Response:
    body = body_of(req, "namespace")
    try:
        with req.app.db.write() as conn:
            ns = md.get_for_update(conn, req.params["namespace"], req.context)
            enforce(req, "modify_metadef_namespace")
            changed = md.update(conn, ns, body, req.context)
    except sqlalchemy.exc.IntegrityError as exc:
        raise duplicate_race(exc) from None
    return json_response(namespace_view(changed))


def delete_namespace(req: Request) -> Response:
    with req.app.db.write() as conn:
        ns = md.get_for_update(conn, req.params["namespace"], req.context)
        enforce(req, "delete_metadef_namespace")
        md.delete(conn, ns)
    return empty_response(204)


def list_resource_types(req: Request) -> Response:
    enforce(req, "list_metadef_resource_types")
    with req.app.db.read() as conn:
        found = md.resource_types(conn)
    return json_response({"resource_types": [
        {"name": r["name"], "created_at": stamp(r["created_at"]),
         "updated_at": stamp(r["updated_at"])} for r in found]})


def list_associations(req: Request) -> Response:
    with req.app.db.read() as conn:
        ns = namespace_of(req, conn, short=True)
        enforce(req, "get_metadef_resource_type")
        found = md.associations(conn, ns)
    return json_response({"resource_type_associations": [association_view(a)
                                                         for a in found]})


def create_association(req: Request) -> Response:
    body = body_of(req, "resource_type")
    try:
        with req.app.db.write() as conn:
            ns = namespace_of(req, conn, lock=True, short=True)
            enforce(req, "add_metadef_resource_type_association")
            made = md.associate(conn, ns, body["name"], body.get("prefix"),
                                body.get("properties_target"))
    except sqlalchemy.exc.IntegrityError as exc:
        raise duplicate_race(exc) from None
    return json_response(association_view(made), status=201)


def delete_association(req: Request) -> Response:
    with req.app.db.write() as conn:
        ns = namespace_of(req, conn, lock=True, short=True)
        enforce(req, "remove_metadef_resource_type_association")
        md.dissociate(conn, ns, req.params["name"])
    return empty_response(204)


_NS = "/v2/metadefs/namespaces"
ROUTES = [
    Route("GET", _NS, list_namespaces),
    Route("POST", _NS, create_namespace, json_body=True),
    Route("GET", _NS + "/{namespace}", show_namespace),
    Route("PUT", _NS + "/{namespace}", update_namespace, json_body=True),
    Route("DELETE", _NS + "/{namespace}", delete_namespace),
    Route("GET", "/v2/metadefs/resource_types", list_resource_types),
    Route("GET", _NS + "/{namespace}/resource_types", list_associations),
    Route("POST", _NS + "/{namespace}/resource_types", create_association, json_body=True),
    Route("DELETE", _NS + "/{namespace}/resource_types/{name}", delete_association),
]
