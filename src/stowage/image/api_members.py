"""Image member routes, as Glance v2 serves them (the records: members.py)::

    GET    /v2/images/{image_id}/members              {"members": [...], "schema"}
    POST   /v2/images/{image_id}/members              {"member": PROJECT} -> 200, pending
    GET    /v2/images/{image_id}/members/{member_id}
    PUT    /v2/images/{image_id}/members/{member_id}  {"status": "accepted"} (the member)
    DELETE /v2/images/{image_id}/members/{member_id}  204
    GET    /v2/schemas/member, /v2/schemas/members

Refusals are Glance's, word for word where a client can tell: an image that is
not `shared` is a 403 naming the action ("Not allowed to create members for
image ..."), except on show, which answers 404 so as to give nothing away; a
rule that refuses is "You are not authorized to complete <rule> action."; a
membership the caller may not see is a 404.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.errors import Forbidden, NotFound
from stowage.image import images as img
from stowage.image import members, policy
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "MEMBER_SCHEMA", "MEMBERS_SCHEMA"]

_UUID = "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$"
_PROPERTIES: dict[str, Any] = {
    "member_id": {"type": "string",
                  "description": "An identifier for the image member (tenantId)"},
    "image_id": {"type": "string", "description": "An identifier for the image",
                 "pattern": _UUID},
    "created_at": {"type": "string", "description": "Date and time of image member creation"},
    "updated_at": {"type": "string",
                   "description": "Date and time of last modification of image member"},
    "status": {"type": "string", "description": "The status of this image member",
               "enum": list(members.STATUSES)},
    "schema": {"readOnly": True, "type": "string"},
}
MEMBER_SCHEMA: dict[str, Any] = {"name": "member", "properties": _PROPERTIES,
                                 "additionalProperties": False}
MEMBERS_SCHEMA: dict[str, Any] = {
    "name": "members",
    "properties": {"members": {"type": "array", "items": MEMBER_SCHEMA},
                   "schema": {"type": "string"}},
    "links": [{"rel": "describedby", "href": "{schema}"}],
}
# The longest member id the table holds.
_MEMBER_ID_MAX = 255


def _stamp(value: Any) -> str:
    return str(value.strftime("%Y-%m-%dT%H:%M:%SZ"))


def view(member: members.Member) -> dict[str, Any]:
    return {"member_id": member.member_id, "image_id": member.image_id,
            "status": member.status, "created_at": _stamp(member.created_at),
            "updated_at": _stamp(member.updated_at), "schema": "/v2/schemas/member"}


def _body(req: Request, key: str, form: str, missing: str) -> Any:
    """Glance's member deserializer: a JSON object holding `key`."""
    if not req.body:
        raise HTTPError(400, "Body expected in request.")
    try:
        body = load_json(req.body)
    except InvalidJSON:
        raise HTTPError(400, "Malformed JSON in request body.") from None
    if not isinstance(body, dict):
        raise HTTPError(400, f"Expected a {key} in the form: {form}")
    if key not in body:
        raise HTTPError(400, missing)
    return body[key]


def _image(req: Request, conn: Connection) -> img.Image:
    image_id = req.params["image_id"]
    try:
        image = img.get(conn, image_id, req.context)
        policy.check(req.app.enforcer, req.context, "get_image", image)
    except NotFound:
        raise HTTPError(404, f"Image {image_id} not found.") from None
    return image


def _enforce(req: Request, conn: Connection, image: img.Image, action: str) -> None:
    """Glance's MemberAPIPolicy: the rule sees the image, with `member_id` the caller's
    project when it is a member of it."""
    mine = members.membership(conn, image.id, req.context.project_id)
    target = policy.target(image.id, image.owner, image.visibility,
                           mine.member_id if mine else None)
    if not req.app.enforcer.allowed(action, req.context, target):
        raise policy.denied(action)


def _shared(image: img.Image, refusal: str) -> None:
    try:
        members.require_shared(image)
    except Forbidden:
        raise HTTPError(403, f"{refusal} for image {image.id}.") from None


def list_members(req: Request) -> Response:
    with req.app.db.read() as conn:
        image = _image(req, conn)
        if image.visibility != "shared":
            raise HTTPError(403, f"Not allowed to list members for image {image.id}: "
                                 f"{members.NOT_SHARED}")
        _enforce(req, conn, image, "get_members")
        found = members.list_members(conn, image, req.context)
    return json_response({"members": [view(m) for m in found],
                          "schema": "/v2/schemas/members"})


def show_member(req: Request) -> Response:
    with req.app.db.read() as conn:
        image = _image(req, conn)
        if image.visibility != "shared":
            raise HTTPError(404, members.NOT_SHARED)
        try:
            _enforce(req, conn, image, "get_member")
        except Forbidden as exc:
            raise HTTPError(404, exc.detail) from None
        found = members.get(conn, image, req.params["member_id"], req.context)
    return json_response(view(found))


def create_member(req: Request) -> Response:
    member_id = _body(req, "member", '{"member": "image_id"}',
                      "Member to be added not specified")
    if not member_id:
        raise HTTPError(400, "Member can't be empty")
    if not isinstance(member_id, str):
        raise HTTPError(400, 'Expected a member in the form: {"member": "image_id"}')
    if len(member_id) > _MEMBER_ID_MAX:
        raise HTTPError(400, f"Member can be at most {_MEMBER_ID_MAX} characters long")
    with req.app.db.write() as conn:
        image = _image(req, conn)
        _shared(image, "Not allowed to create members")
        _enforce(req, conn, image, "add_member")
        try:
            made = members.add(conn, image, member_id)
        except members.MemberLimit as exc:
            raise HTTPError(413, exc.detail) from None
    return json_response(view(made))


def update_member(req: Request) -> Response:
    status = _body(req, "status", '{"status": "status"}', "Status not specified")
    with req.app.db.write() as conn:
        image = _image(req, conn)
        _shared(image, "Not allowed to update members")
        _enforce(req, conn, image, "get_member")
        members.get(conn, image, req.params["member_id"], req.context)
        _enforce(req, conn, image, "modify_member")
        try:
            changed = members.set_status(conn, image, req.params["member_id"], status,
                                         req.context)
        except ValueError as exc:
            raise HTTPError(400, f"Incorrect request: {exc}") from None
    return json_response(view(changed))


def delete_member(req: Request) -> Response:
    with req.app.db.write() as conn:
        image = _image(req, conn)
        _shared(image, "Not allowed to delete members")
        _enforce(req, conn, image, "get_member")
        members.get(conn, image, req.params["member_id"], req.context)
        _enforce(req, conn, image, "delete_member")
        members.remove(conn, image, req.params["member_id"], req.context)
    return empty_response(204)


def member_schema(req: Request) -> Response:
    return json_response(MEMBER_SCHEMA)


def members_schema(req: Request) -> Response:
    return json_response(MEMBERS_SCHEMA)


_MEMBERS = "/v2/images/{image_id}/members"
ROUTES = [
    Route("GET", _MEMBERS, list_members),
    Route("POST", _MEMBERS, create_member, json_body=True),
    Route("GET", _MEMBERS + "/{member_id}", show_member),
    Route("PUT", _MEMBERS + "/{member_id}", update_member, json_body=True),
    Route("DELETE", _MEMBERS + "/{member_id}", delete_member),
    Route("GET", "/v2/schemas/member", member_schema),
    Route("GET", "/v2/schemas/members", members_schema),
]
