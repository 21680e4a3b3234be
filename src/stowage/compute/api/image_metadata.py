"""/images/{id}/metadata[/{key}]: Nova's deprecated image-metadata proxy (2.1-2.38; 404
from 2.39), over the image's extra properties in the Image service's records.

    GET    /metadata        {"metadata": {...}}
    POST   /metadata        merge the given items in, answer the whole new set
    PUT    /metadata        replace every property, answer the given set
    GET    /metadata/{key}  {"meta": {key: value}}, 404 when there is no such key
    PUT    /metadata/{key}  {"meta": {key: value}}: one item, whose key must be the
                            URL's (400 "Request body and URI mismatch")
    DELETE /metadata/{key}  204, 404 "Invalid metadata key" when there is none

Keys and values are checked as Nova's server metadata (keys 1..255 of
[a-zA-Z0-9-_:. ], string values of at most 255). The resulting set may hold
at most `metadata_items` items (403 "Image metadata limit exceeded"). An
image the caller cannot see is 404 "Image not found."; one they see but do
not own is 403 "Not authorized for image <id>." (Glance refuses the update).
Nova's Glance attributes (name, min_ram, visibility, ...) are not metadata:
a key naming one is a 400 here, since writing it would change the attribute.
Each write holds the image row (`images.lock`) from its read to its commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stowage.compute import quota_checks
from stowage.compute.api.common import API_PREFIX, read_body, validate_body
from stowage.compute.api.images import NOT_FOUND, held, require_proxy
from stowage.compute.api.quota_common import owner
from stowage.compute.api.server_metadata import METADATA
from stowage.errors import Forbidden, NotFound
from stowage.image import images as img
from stowage.image.api import READ_ONLY
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "RESERVED"]

# Nova's MIN_WITHOUT_IMAGE_META_PROXY_API_VERSION.
GONE_FROM = 39
# Image attributes with a meaning of their own in the Image API: never metadata keys.
RESERVED = frozenset({*img.CORE_FIELDS, *READ_ONLY, "id", "owner"})
_ALL_SCHEMA = {"type": "object", "properties": {"metadata": METADATA},
               "required": ["metadata"], "additionalProperties": False}
_ONE_SCHEMA = {"type": "object",
               "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
               "required": ["meta"], "additionalProperties": False}


def _check_keys(items: Mapping[str, str]) -> None:
    reserved = sorted(k for k in items if k in RESERVED)
    if reserved:
        raise HTTPError(400, f"Image metadata key '{reserved[0]}' names an image attribute "
                             f"and cannot be set through image metadata")


def _read(req: Request) -> dict[str, str]:
    require_proxy(req, GONE_FROM)
    with req.app.db.read() as conn:
        try:
            image = held(req, conn, req.params["image_id"], "get_image")
        except NotFound:
            raise HTTPError(404, NOT_FOUND) from None
    return dict(image.properties)


def _write(req: Request, change: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
    """Apply `change(current) -> new` to the image's properties under its row lock;
    the quota counts the new set (Nova's check_img_metadata_properties_quota)."""
    image_id = req.params["image_id"]
    with req.app.db.write() as conn:
        img.lock(conn, image_id)
        try:
            image = held(req, conn, image_id, "modify_image")
            new = change(dict(image.properties))
            if new:
                quota_checks.check_metadata_items(conn, owner(req), len(new))
            img.replace_properties(conn, image_id, req.context, new)
        except NotFound:
            raise HTTPError(404, NOT_FOUND) from None
        except Forbidden:
            raise HTTPError(403, f"Not authorized for image {image_id}.") from None
        except quota_checks.OverQuota:
            raise HTTPError(403, "Image metadata limit exceeded") from None
    return new


def _items(req: Request) -> dict[str, str]:
    require_proxy(req, GONE_FROM)
    items: dict[str, str] = validate_body(read_body(req), _ALL_SCHEMA)["metadata"]
    _check_keys(items)
    return items


def list_metadata(req: Request) -> Response:
    return json_response({"metadata": _read(req)})


def merge_metadata(req: Request) -> Response:
    items = _items(req)
    return json_response({"metadata": _write(req, lambda old: {**old, **items})})


def replace_metadata(req: Request) -> Response:
    items = _items(req)
    _write(req, lambda old: dict(items))
    return json_response({"metadata": items})


def show_item(req: Request) -> Response:
    key = req.params["key"]
    metadata = _read(req)
    if key not in metadata:
        raise HTTPError(404, "The resource could not be found.")
    return json_response({"meta": {key: metadata[key]}})


def update_item(req: Request) -> Response:
    require_proxy(req, GONE_FROM)
    key = req.params["key"]
    item: dict[str, Any] = validate_body(read_body(req), _ONE_SCHEMA)["meta"]
    if key not in item:
        raise HTTPError(400, "Request body and URI mismatch")
    _check_keys(item)
    _write(req, lambda old: {**old, key: item[key]})
    return json_response({"meta": item})


def _without(metadata: dict[str, str], key: str) -> dict[str, str]:
    if key not in metadata:
        raise HTTPError(404, "Invalid metadata key")
    return {k: v for k, v in metadata.items() if k != key}


def delete_item(req: Request) -> Response:
    require_proxy(req, GONE_FROM)
    key = req.params["key"]
    _write(req, lambda old: _without(old, key))
    return empty_response(204)


_ALL = API_PREFIX + "/images/{image_id}/metadata"
ROUTES = [
    Route("GET", _ALL, list_metadata),
    Route("POST", _ALL, merge_metadata, json_body=True),
    Route("PUT", _ALL, replace_metadata, json_body=True),
    Route("GET", _ALL + "/{key}", show_item),
    Route("PUT", _ALL + "/{key}", update_item, json_body=True),
    Route("DELETE", _ALL + "/{key}", delete_item),
]
