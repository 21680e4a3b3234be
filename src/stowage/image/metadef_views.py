"""How metadata definitions are shown: Glance's bodies for namespaces, associations,
objects, properties and tags (attributes without a value are left out, as
Glance's wsme models leave them out).
"""

from __future__ import annotations

import datetime
from typing import Any

from sqlalchemy.engine import Connection

from stowage.image import metadef_items as items
from stowage.image import metadefs as md

__all__ = ["stamp", "namespace_view", "association_view", "item_view", "full_view"]

_NS = "/v2/metadefs/namespaces"


def stamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _present(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if v is not None}


def association_view(a: md.Association) -> dict[str, Any]:
    return _present({"name": a.name, "prefix": a.prefix,
                     "properties_target": a.properties_target,
                     "created_at": stamp(a.created_at), "updated_at": stamp(a.updated_at)})


def namespace_view(ns: md.Namespace) -> dict[str, Any]:
    return _present({"namespace": ns.namespace, "display_name": ns.display_name,
                     "description": ns.description, "visibility": ns.visibility,
                     "protected": ns.protected, "owner": ns.owner,
                     "created_at": stamp(ns.created_at), "updated_at": stamp(ns.updated_at),
                     "schema": "/v2/schemas/metadefs/namespace",
                     "self": f"{_NS}/{ns.namespace}"})


def item_view(kind: str, ns: md.Namespace, item: items.Item) -> dict[str, Any]:
    """A property is its definition and name; objects and tags carry their timestamps,
    an object its links too."""
    if kind == "property":
        return {"name": item.name, **item.body}
    view = {"name": item.name, **item.body, "created_at": stamp(item.created_at),
            "updated_at": stamp(item.updated_at)}
    if kind == "object":
        view["schema"] = "/v2/schemas/metadefs/object"
        view["self"] = f"{_NS}/{ns.namespace}/objects/{item.name}"
    return view


def _prefixed(view: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Glance's `?resource_type=`: property names as that resource type knows them."""
    if "properties" in view:
        view["properties"] = {prefix + k: v for k, v in view["properties"].items()}
    for obj in view.get("objects", []):
        obj["properties"] = {prefix + k: v for k, v in (obj.get("properties") or {}).items()}
        if obj.get("required"):
            obj["required"] = [prefix + name for name in obj["required"]]
    return view


def full_view(conn: Connection, ns: md.Namespace,
              resource_type: str | None = None) -> dict[str, Any]:
    """A namespace with what it holds (each kind shown only when it has some); with
    `resource_type`, property names get that association's prefix."""
    linked = md.associations(conn, ns)
    held: dict[str, Any] = {
        "resource_type_associations": [association_view(a) for a in linked],
        "properties": {p.name: item_view("property", ns, p)
                       for p in items.list_items(conn, "property", ns)},
        "objects": [item_view("object", ns, o) for o in items.list_items(conn, "object", ns)],
        "tags": [{"name": t.name} for t in items.list_items(conn, "tag", ns)],
    }
    view = {**namespace_view(ns), **{k: v for k, v in held.items() if v}}
    prefix = next((a.prefix for a in linked if a.name == resource_type), None)
    return _prefixed(view, prefix) if prefix else view
