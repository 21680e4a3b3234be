"""/images: Nova's deprecated image proxy (2.1-2.35; 404 from 2.36), read from the Image
service's records (`stowage.image.images`) in the shared database, as Nova reads Glance.

    GET    /images          id, name, links; filters name, status, changes-since, server,
                            type, minRam, minDisk, property-<key>; paging limit/marker
    GET    /images/detail   the same images with Nova's detailed view
    GET    /images/{id}     {"image": {...}}, 404 "Image not found."
    DELETE /images/{id}     204; 403 "You are not allowed to delete the image." when the
                            caller does not own it (or it is protected), as Glance refuses

Nova has no policy rules for the proxy: Glance's visibility, ownership and policy rules
(`get_images`, `get_image`, `delete_image`; image/policy.py) decide, and they are the
Image service's here. The view maps Glance's lower-case statuses to
Nova's (active ACTIVE, queued/saving SAVING, deleted/pending_delete DELETED, killed ERROR,
anything else UNKNOWN) with a progress of 25/50/100 for queued/saving/active.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    at_least,
    links,
    next_link,
    query_param,
)
from stowage.compute.api.server_list import parse_time
from stowage.errors import Forbidden, NotFound
from stowage.identity.middleware import identity_url
from stowage.image import data as image_data
from stowage.image import images as img
from stowage.image import policy as image_policy
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "require_proxy", "image_view", "held", "NOT_FOUND"]

# Nova's MIN_WITHOUT_PROXY_API_SUPPORT_VERSION: the proxy is gone from 2.36.
GONE_FROM = 36
NOT_FOUND = "Image not found."
_STATUS = {"active": "ACTIVE", "queued": "SAVING", "saving": "SAVING", "deleted": "DELETED",
           "pending_delete": "DELETED", "killed": "ERROR"}
_PROGRESS = {"queued": 25, "saving": 50, "active": 100}


def require_proxy(req: Request, gone_from: int = GONE_FROM) -> None:
    """A proxy API removed at 2.`gone_from` does not exist from there on: 404, as in Nova."""
    if at_least(req, gone_from):
        raise HTTPError(404, "The resource could not be found.")


def _stamp(value: Any) -> str:
    return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _image_links(req: Request, image_id: str) -> list[dict[str, str]]:
    """self and bookmark on Compute, and the alternate on the Image service's endpoint
    (the catalog's base URL: `[identity] public_url` or this host)."""
    glance = identity_url(req, req.app.settings.identity.public_url)[: -len("/identity")]
    return [*links(req, "images", image_id),
            {"rel": "alternate", "type": "application/vnd.openstack.image",
             "href": f"{glance}/image/images/{image_id}"}]


def _server(req: Request, server_id: str) -> dict[str, Any]:
    return {"id": server_id, "links": links(req, "servers", server_id)}


def image_view(req: Request, image: img.Image) -> dict[str, Any]:
    """Nova's detailed view; `server` only for a snapshot (property instance_uuid)."""
    view: dict[str, Any] = {
        "id": image.id, "name": image.name,
        "minRam": image.min_ram, "minDisk": image.min_disk,
        "metadata": dict(image.properties),
        "created": _stamp(image.created_at),
        "updated": _stamp(image.updated_at or image.created_at),
        "status": _STATUS.get(image.status, "UNKNOWN"),
        "progress": _PROGRESS.get(image.status, 0),
        "OS-EXT-IMG-SIZE:size": image.size,
        "links": _image_links(req, image.id),
    }
    server_id = image.properties.get("instance_uuid")
    if server_id is not None:
        view["server"] = _server(req, server_id)
    return view


def _basic_view(req: Request, image: img.Image) -> dict[str, Any]:
    return {"id": image.id, "name": image.name, "links": _image_links(req, image.id)}


def _count(req: Request, name: str) -> int | None:
    """Nova's pagination parameter check (oslo's validate_integer, min 0)."""
    value = query_param(req, name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise HTTPError(400, f"Invalid input received: {name} must be an integer") from None
    if number < 0:
        raise HTTPError(400, f"Invalid input received: {name} must be >= 0")
    return number


def _minimum(req: Request, name: str) -> int | None:
    value = query_param(req, name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise HTTPError(400, f"Invalid {name} filter [{value}]") from None
    if number < 0:
        raise HTTPError(400, f"Invalid {name} filter [{value}]")
    return number


def _properties(req: Request) -> dict[str, str]:
    """server, type and property-<key>, which Nova passes to Glance as property filters;
    a server given as a link means the server id at its end."""
    props = {key[len("property-"):]: value for key, value in req.query
             if key.startswith("property-") and len(key) > len("property-")}
    server = query_param(req, "server")
    if server is not None:
        props["instance_uuid"] = server.rsplit("/", 1)[-1]
    kind = query_param(req, "type")
    if kind is not None:
        props["image_type"] = kind
    return props


def _query(req: Request, limit: int | None) -> img.ListQuery:
    status = query_param(req, "status")
    since = query_param(req, "changes-since")
    return img.ListQuery(
        name=query_param(req, "name"), status=status.lower() if status is not None else None,
        min_ram=_minimum(req, "minRam"), min_disk=_minimum(req, "minDisk"),
        changes_since=parse_time(since, "changes-since") if since is not None else None,
        properties=_properties(req), limit=limit, marker=query_param(req, "marker"))


def _collection(req: Request, found: Sequence[img.Image], limit: int | None,
                detailed: bool) -> dict[str, Any]:
    view = image_view if detailed else _basic_view
    body: dict[str, Any] = {"images": [view(req, image) for image in found]}
    if found and len(found) == min(limit if limit is not None else MAX_LIMIT, MAX_LIMIT):
        body["images_links"] = next_link(req, "images", found[-1].id)
    return body


def held(req: Request, conn: Any, image_id: str, action: str) -> img.Image:
    """The image once Glance's rules allow `action` on it for the caller, as Glance
    answers Nova's request made with the caller's token: NotFound if the caller cannot
    see it, Forbidden if they can but may not."""
    image = img.get(conn, image_id, req.context)
    image_policy.check(image_policy.enforcer(req.app.settings.policy), req.context, action,
                       image)
    return image


def _list(req: Request, detailed: bool) -> Response:
    require_proxy(req)
    if not image_policy.enforcer(req.app.settings.policy).allowed(
            "get_images", req.context, req.context.policy_target()):
        raise HTTPError(403, "You are not authorized to complete get_images action.")
    limit = _count(req, "limit")
    query = _query(req, None if limit is None else min(limit, MAX_LIMIT))
    with req.app.db.read() as conn:
        try:
            found = img.list_images(conn, req.context, query)
        except NotFound as exc:  # the marker: Glance's 400, which Nova passes on
            raise HTTPError(400, exc.detail) from None
    return json_response(_collection(req, found, limit, detailed))


def list_images(req: Request) -> Response:
    return _list(req, detailed=False)


def list_images_detail(req: Request) -> Response:
    return _list(req, detailed=True)


def show_image(req: Request) -> Response:
    require_proxy(req)
    with req.app.db.read() as conn:
        try:
            image = held(req, conn, req.params["image_id"], "get_image")
        except NotFound:
            raise HTTPError(404, NOT_FOUND) from None
    return json_response({"image": image_view(req, image)})


def delete_image(req: Request) -> Response:
    require_proxy(req)
    with req.app.db.write() as conn:
        try:
            held(req, conn, req.params["image_id"], "delete_image")
            img.delete(conn, req.params["image_id"], req.context)
        except NotFound:
            raise HTTPError(404, NOT_FOUND) from None
        except Forbidden:
            raise HTTPError(403, "You are not allowed to delete the image.") from None
    image_data.remove(req.app.settings, req.params["image_id"])
    return empty_response(204)


_ONE = API_PREFIX + "/images/{image_id}"
ROUTES = [
    Route("GET", API_PREFIX + "/images", list_images),
    Route("GET", API_PREFIX + "/images/detail", list_images_detail),
    Route("GET", _ONE, show_image),
    Route("DELETE", _ONE, delete_image),
]
