"""/os-keypairs: create (generate or import), list, show and delete a user's key pairs.

What changes per microversion:

    2.1   create answers 200, delete 202; no `type` anywhere
    2.2   `type` (ssh | x509) on create and in every view; create 201, delete 204
    2.10  `user_id` on create (body) and list/show/delete (query): an admin acts
          for another user (the policy compares the target user)
    2.35  list pages by name: `limit`, `marker`, and a `keypairs_links` next link
    2.75  unknown query parameters are a 400
    2.92  `public_key` is required (no more generated keys, no `private_key`);
          names may also hold '@' and '.'

A name is 1..255 of [a-zA-Z0-9 _-] (2.92: also @ and .) and neither starts
nor ends with whitespace. An imported key must parse (InvalidKeypair, 400);
a duplicate name is 409 KeyPairExists. Policies are Nova's
`os_compute_api:os-keypairs:*`: admins, or the key pair's own user.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import keypair_keys as keys
from stowage.compute import keypairs as kp
from stowage.compute import quota_checks
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    at_least,
    authorize,
    next_link,
    query_param,
    read_body,
    validate_body,
    validate_query,
)
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_create import check_name
from stowage.compute.api.server_views import primitive_time
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

TYPED = 2
FOR_USER = 10
PAGED = 35
STRICT_QUERY = 75
IMPORT_ONLY = 92
_RULE = "os_compute_api:os-keypairs:"


def _name(special: str) -> dict[str, Any]:
    return {"allOf": [{"type": "string", "minLength": 1, "maxLength": 255},
                      {"type": "string", "pattern": f"^[{special} a-zA-Z0-9]+$"}]}


def _create_schema(req: Request) -> dict[str, Any]:
    special = r"_\-@." if at_least(req, IMPORT_ONLY) else r"_\-"
    props: dict[str, Any] = {"name": _name(special), "public_key": {"type": "string"}}
    if at_least(req, TYPED):
        props["type"] = {"type": "string", "enum": list(keys.TYPES)}
    if at_least(req, FOR_USER):
        props["user_id"] = {"type": "string"}
    required = ["name", "public_key"] if at_least(req, IMPORT_ONLY) else ["name"]
    return {"type": "object",
            "properties": {"keypair": {"type": "object", "properties": props,
                                       "required": required, "additionalProperties": False}},
            "required": ["keypair"], "additionalProperties": False}


def _query_schema(req: Request, paged: bool) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if at_least(req, FOR_USER):
        props["user_id"] = {"type": "string"}
    if paged and at_least(req, PAGED):
        props["limit"] = {"type": "string", "pattern": "^[0-9]*$", "minLength": 1}
        props["marker"] = {"type": "string"}
    return {"type": "object", "properties": props,
            "additionalProperties": not at_least(req, STRICT_QUERY)}


def _user(req: Request, paged: bool = False) -> str:
    """The user acted for: the caller's own, or from 2.10 the first `user_id` given."""
    validate_query(req, _query_schema(req, paged))
    given = req.query_values("user_id") if at_least(req, FOR_USER) else []
    return given[0] if given else req.context.user_id or ""


def _authorize(req: Request, action: str, user_id: str) -> None:
    authorize(req, _RULE + action, {"user_id": user_id, "project_id": req.context.project_id})


def _view(req: Request, keypair: kp.KeyPair, **more: Any) -> dict[str, Any]:
    view: dict[str, Any] = {"name": keypair.name, "public_key": keypair.public_key,
                            "fingerprint": keypair.fingerprint, **more}
    if at_least(req, TYPED):
        view["type"] = keypair.type
    return view


def create_keypair(req: Request) -> Response:
    body = validate_body(read_body(req), _create_schema(req))["keypair"]
    check_name(body["name"])
    user_id = body.get("user_id") or req.context.user_id or ""
    _authorize(req, "create", user_id)
    key_type = body.get("type", keys.SSH)
    private_key: str | None = None
    try:
        if "public_key" in body:
            public_key = body["public_key"]
            fingerprint = keys.fingerprint(public_key, key_type)
        else:
            generated = keys.generate(user_id, key_type)
            public_key, fingerprint = generated.public_key, generated.fingerprint
            private_key = generated.private_key
    except keys.InvalidKeypair as exc:
        raise HTTPError(400, str(exc)) from None
    with req.app.db.write() as conn:
        try:
            quota_checks.check_keypairs_quota(conn, owner(req, user_id=user_id))
        except quota_checks.OverQuota as exc:
            raise over_quota(exc) from None
        made = kp.create(conn, kp.KeyPair(name=body["name"], user_id=user_id,
                                          fingerprint=fingerprint, public_key=public_key,
                                          type=key_type))
    view = _view(req, made, user_id=made.user_id)
    if private_key is not None:
        view["private_key"] = private_key
    return json_response({"keypair": view}, status=201 if at_least(req, TYPED) else 200)


def _limit(req: Request) -> int | None:
    if not at_least(req, PAGED):
        return None
    value = query_param(req, "limit")
    return None if value is None else min(int(value), MAX_LIMIT)


def list_keypairs(req: Request) -> Response:
    user_id = _user(req, paged=True)
    _authorize(req, "index", user_id)
    limit = _limit(req)
    marker = query_param(req, "marker") if at_least(req, PAGED) else None
    with req.app.db.read() as conn:
        found = kp.list_keypairs(conn, user_id, limit=MAX_LIMIT if limit is None else limit,
                                 marker=marker)
    body: dict[str, Any] = {"keypairs": [{"keypair": _view(req, k)} for k in found]}
    if at_least(req, PAGED) and found and len(found) == (MAX_LIMIT if limit is None
                                                         else limit):
        body["keypairs_links"] = next_link(req, "os-keypairs", found[-1].name)
    return json_response(body)


def show_keypair(req: Request) -> Response:
    user_id = _user(req)
    _authorize(req, "show", user_id)
    with req.app.db.read() as conn:
        found = kp.get(conn, user_id, req.params["name"])
    return json_response({"keypair": _view(
        req, found, user_id=found.user_id, id=found.id, deleted=False, deleted_at=None,
        created_at=primitive_time(found.created_at),
        updated_at=primitive_time(found.updated_at))})


def delete_keypair(req: Request) -> Response:
    user_id = _user(req)
    _authorize(req, "delete", user_id)
    with req.app.db.write() as conn:
        kp.delete(conn, user_id, req.params["name"])
    return empty_response(204 if at_least(req, TYPED) else 202)


_ALL = API_PREFIX + "/os-keypairs"
ROUTES = [
    Route("GET", _ALL, list_keypairs),
    Route("POST", _ALL, create_keypair, json_body=True),
    Route("GET", _ALL + "/{name}", show_keypair),
    Route("DELETE", _ALL + "/{name}", delete_keypair),
]
