"""Image API v2 routes: version documents, /v2/images (list, create), one image
(show, JSON-patch, delete); its data and status actions are api_data.py's.

Request checks follow Glance's image schema: read-only attributes are a 403,
extra properties must be strings, and PATCH needs Glance's json-patch media type.
Who may do what is Glance's rules (policy.py), asked once the image is known.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema

from stowage.image import api_data, api_list, data, imports, policy, schemas
from stowage.image import images as img
from stowage.web import schema_report
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

READ_ONLY = ("status", "created_at", "updated_at", "size", "virtual_size", "checksum",
             "os_hash_algo", "os_hash_value", "self", "file", "schema", "direct_url",
             "locations")
# Glance names the import methods it offers in every image-create answer.
IMPORT_METHODS = ("openstack-image-import-methods", ",".join(imports.METHODS))
# Glance's two patch media types: 2.1 is RFC 6902's form ({"op": "replace", "path":
# "/name", "value": ...}); 2.0 names the operation as the key ({"replace": "/name",
# "value": ...}), and its `add` of an attribute already there is a 409.
PATCH_TYPES = ("application/openstack-images-v2.1-json-patch",
               "application/openstack-images-v2.0-json-patch")
PATCH_OPS = ("add", "remove", "replace")
# Glance keeps properties of this prefix for itself: a user may not set them (403).
RESERVED_PREFIX = "os_glance"
_UUID = "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$"
PROPERTIES: dict[str, Any] = {
    "id": {"type": "string", "pattern": _UUID},
    "name": {"type": ["null", "string"], "maxLength": 255},
    "visibility": {"type": "string", "enum": ["public", "private", "shared", "community"]},
    "protected": {"type": "boolean"},
    "os_hidden": {"type": "boolean"},
    "owner": {"type": ["null", "string"], "maxLength": 255},
    "min_ram": {"type": "integer", "minimum": 0},
    "min_disk": {"type": "integer", "minimum": 0},
    "disk_format": {"type": ["null", "string"],
                    "enum": [None, "ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2",
                             "vdi", "iso", "ploop"]},
    "container_format": {"type": ["null", "string"],
                         "enum": [None, "ami", "ari", "aki", "bare", "ovf", "ova", "docker",
                                  "compressed"]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 255}},
}
IMAGE_SCHEMA = {"type": "object", "properties": PROPERTIES,
                "additionalProperties": {"type": "string", "maxLength": 255}}


def _stamp(value: Any) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def view(image: img.Image) -> dict[str, Any]:
    body: dict[str, Any] = dict(image.properties)
    body.update({
        "id": image.id, "name": image.name, "status": image.status,
        "visibility": image.visibility, "protected": image.protected, "os_hidden": image.os_hidden,
        "checksum": image.checksum, "os_hash_algo": image.os_hash_algo,
        "os_hash_value": image.os_hash_value, "owner": image.owner,
        "size": image.size, "virtual_size": None, "min_ram": image.min_ram,
        "min_disk": image.min_disk, "disk_format": image.disk_format,
        "container_format": image.container_format, "tags": image.tags,
        "created_at": _stamp(image.created_at),
        "updated_at": _stamp(image.updated_at or image.created_at),
        "self": f"/v2/images/{image.id}", "file": f"/v2/images/{image.id}/file",
        "schema": "/v2/schemas/image",
    })
    return body


# The newest Image API version served: 2.12 brings an image's tasks (api_tasks.py).
# Glance lists every minor version, the newest CURRENT and the rest SUPPORTED.
LATEST_MINOR = 12


def _versions(req: Request) -> dict[str, Any]:
    link = [{"rel": "self", "href": req.url("/v2/")}]
    return {"versions": [{"id": f"v2.{minor}",
                          "status": "CURRENT" if minor == LATEST_MINOR else "SUPPORTED",
                          "links": link} for minor in range(LATEST_MINOR, -1, -1)]}


def versions(req: Request) -> Response:
    return json_response(_versions(req), status=300 if req.path == "/" else 200)


def _json(req: Request) -> Any:
    """The body through the shared loader (web.body), refusals worded as Glance's."""
    try:
        return load_json(req.body)
    except InvalidJSON as exc:
        if not exc.path:
            raise HTTPError(400, "Body is not valid JSON") from None
        raise HTTPError(400, f"Provided object is not valid at {exc.path}: "
                             f"{exc.reason}") from None


def _check(data: Any, schema: dict[str, Any], what: str = "image") -> None:
    try:
        jsonschema.Draft4Validator(schema).validate(data)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, f"Provided object does not match schema '{what}': "
                             f"{schema_report.message(exc)}") from None


def create_image(req: Request) -> Response:
    body = _json(req)
    if isinstance(body, dict):
        for name in READ_ONLY:
            if name in body:
                raise HTTPError(403, f"Attribute '{name}' is read-only.")
        for name in body:
            _not_reserved(name)
    _check(body, IMAGE_SCHEMA)
    ctx = req.context
    visibility = body.get("visibility") or "shared"
    wanted = policy.target(body.get("id"), body.get("owner") or ctx.project_id, visibility)
    for action in ("add_image", *_VISIBILITY_RULES.get(visibility, ())):
        if not req.app.enforcer.allowed(action, ctx, wanted):
            raise policy.denied(action)
    if body.get("owner") not in (None, ctx.project_id) and not ctx.is_admin:
        raise HTTPError(403, "You are not permitted to create images owned by "
                             f"'{body['owner']}'.")
    with req.app.db.write() as conn:
        image = img.create(conn, ctx, body)
    return json_response(view(image), status=201,
                         headers=[("location", req.url(f"/v2/images/{image.id}")),
                                  IMPORT_METHODS])


# Visibilities whose setting is a rule of its own.
_VISIBILITY_RULES = {"public": ("publicize_image",), "community": ("communitize_image",)}


def _held(req: Request, conn: Any, action: str,
          changed: dict[str, object] | None = None) -> img.Image:
    """The image of the path once the rules allow `action` on it (404 if the caller
    cannot see it, 403 if they can but may not)."""
    image = img.get(conn, req.params["image_id"], req.context)
    policy.check(req.app.enforcer, req.context, action, image, changed)
    return image


def show_image(req: Request) -> Response:
    with req.app.db.read() as conn:
        image = _held(req, conn, "get_image")
    return json_response(view(image))


def _not_reserved(name: str) -> None:
    if name.startswith(RESERVED_PREFIX):
        raise HTTPError(403, f"Attribute '{name}' is reserved.")


def _operation(raw: Any, form: str) -> tuple[str, str]:
    """(op, path) of one patch operation in the media type's form, Glance's 400s."""
    if not isinstance(raw, dict):
        raise HTTPError(400, "Operations must be JSON objects.")
    if form == "2.1":
        op = raw.get("op")
        if op not in PATCH_OPS:
            raise HTTPError(400, "Unable to find `op` in JSON Schema change. It must be one "
                                 f"of the following: {', '.join(PATCH_OPS)}.")
        if "path" not in raw:
            raise HTTPError(400, "Unable to find 'path' in JSON Schema change")
        path = raw["path"]
    else:
        named = [key for key in PATCH_OPS if key in raw]
        if len(named) != 1:
            raise HTTPError(400, 'Operation objects must contain exactly one member named '
                                 '"add", "remove", or "replace".')
        op = named[0]
        path = raw[op]
    if not isinstance(path, str) or not re.fullmatch(r"/[^/]+", path):
        raise HTTPError(400, f"Invalid JSON pointer for this resource: '{path}'")
    return op, path


def _changes(ops: Any, form: str) -> list[tuple[str, str, Any]]:
    if not isinstance(ops, list):
        raise HTTPError(400, "Request body must be a JSON array of operation objects.")
    changes = []
    for raw in ops:
        op, path = _operation(raw, form)
        name = path[1:].replace("~1", "/").replace("~0", "~")
        if name in READ_ONLY or name == "id":
            raise HTTPError(403, f"Attribute '{name}' is read-only.")
        _not_reserved(name)
        if op != "remove":
            if "value" not in raw:
                raise HTTPError(400, f'Operation "{op}" requires a member named "value".')
            _check({name: raw["value"]}, IMAGE_SCHEMA)
        changes.append((op, name, raw.get("value")))
    return changes


def _no_double_add(image: img.Image, changes: list[tuple[str, str, Any]]) -> None:
    """The 2.0 form's `add` of an attribute the image has is Glance's 409."""
    for op, name, _ in changes:
        if op == "add" and (name in img.CORE_FIELDS or name in image.properties):
            raise HTTPError(409, f"Property {name} already present.")


def patch_image(req: Request) -> Response:
    ctype = (req.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype not in PATCH_TYPES:
        raise HTTPError(415, f"Unsupported Content-Type {ctype or None}; use "
                             f"{PATCH_TYPES[0]}",
                        headers={"accept-patch": ", ".join(sorted(PATCH_TYPES))})
    form = "2.1" if ctype == PATCH_TYPES[0] else "2.0"
    changes = _changes(_json(req), form)
    with req.app.db.write() as conn:
        image = _held(req, conn, "modify_image")
        if form == "2.0":
            _no_double_add(image, changes)
        for _, name, value in changes:
            if name == "visibility" and isinstance(value, str):
                for action in _VISIBILITY_RULES.get(value, ()):
                    _held(req, conn, action, {"visibility": value})
        image = img.update(conn, req.params["image_id"], req.context, changes)
    return json_response(view(image))


def delete_image(req: Request) -> Response:
    with req.app.db.write() as conn:
        image = _held(req, conn, "delete_image")
        img.delete(conn, image.id, req.context)
    data.remove(req.app.settings, image.id)
    return empty_response(204)


def add_tag(req: Request) -> Response:
    """Glance's PUT .../tags/{tag}: add one tag (already there: nothing); 204."""
    tag = req.params["tag"]
    _check({"tags": [tag]}, IMAGE_SCHEMA)
    with req.app.db.write() as conn:
        img.lock(conn, req.params["image_id"])
        image = _held(req, conn, "modify_image")
        if tag not in image.tags:
            img.update(conn, image.id, req.context, [("replace", "tags", [*image.tags, tag])])
    return empty_response(204)


def delete_tag(req: Request) -> Response:
    """Glance's DELETE .../tags/{tag}: 404 when the image has no such tag; 204."""
    tag = req.params["tag"]
    with req.app.db.write() as conn:
        img.lock(conn, req.params["image_id"])
        image = _held(req, conn, "modify_image")
        if tag not in image.tags:
            raise HTTPError(404, f"Tag {tag} not found")
        img.update(conn, image.id, req.context,
                   [("replace", "tags", [t for t in image.tags if t != tag])])
    return empty_response(204)


PUBLIC_PATHS = frozenset({"", "/", "/v2", "/v2/"})
_ONE = "/v2/images/{image_id}"
ROUTES = [
    Route("GET", "/", versions),
    Route("GET", "/v2", versions),
    Route("GET", "/v2/", versions),
    Route("GET", "/v2/images", api_list.list_images),
    Route("GET", "/v2/schemas/image", schemas.show_image_schema),
    Route("GET", "/v2/schemas/images", schemas.show_images_schema),
    Route("POST", "/v2/images", create_image, json_body=True),
    Route("GET", _ONE, show_image),
    Route("PATCH", _ONE, patch_image),
    Route("DELETE", _ONE, delete_image),
    Route("PUT", _ONE + "/file", api_data.upload_image, upload=True),
    Route("GET", _ONE + "/file", api_data.download_image),
    Route("POST", _ONE + "/actions/deactivate", api_data.deactivate),
    Route("POST", _ONE + "/actions/reactivate", api_data.reactivate),
    Route("PUT", _ONE + "/tags/{tag}", add_tag),
    Route("DELETE", _ONE + "/tags/{tag}", delete_tag),
]
