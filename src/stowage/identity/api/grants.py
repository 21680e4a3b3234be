"""Roles (create, delete) and role grants on projects and domains.

    POST   /v3/roles                                         201 {"role": ...}, 409 taken
    DELETE /v3/roles/{role_id}                               204; its grants go too
    PUT    /v3/{projects|domains}/{id}/users/{u}/roles/{r}   204 (again: 204, no change)
    HEAD   /v3/{projects|domains}/{id}/users/{u}/roles/{r}   204, or 404 when not held
    DELETE /v3/{projects|domains}/{id}/users/{u}/roles/{r}   204; the user's tokens there go
    GET    /v3/{projects|domains}/{id}/users/{u}/roles       200 {"roles": [...]} held directly

Policy as Keystone's defaults: creating and deleting roles, granting and
revoking are for the admin role; checking and listing grants also for a
reader scoped to the domain. The settings file's roles and grants are
immutable (403); an API grant may name settings-file users, projects and
roles. Unknown role, user, project or domain: 404 in Keystone's words.
"""

from __future__ import annotations

from dataclasses import dataclass

from stowage.identity import store
from stowage.identity.api.common import (
    body_of,
    caller,
    directory_of,
    domain_reader,
    is_admin,
    listing,
    require,
    role_view,
    state,
)
from stowage.identity.api.directory_writes import conflict, immutable, missing
from stowage.identity.api.write_schemas import ROLE_CREATE
from stowage.identity.directory import DEFAULT_DOMAIN, Assignment, Directory, Role
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def create_role(req: Request) -> Response:
    require(is_admin(caller(req)), "create_role")
    body = body_of(req, ROLE_CREATE)["role"]
    app = state(req)
    try:
        role_id = store.create_role(app.db, app.directory, body["name"],
                                    body.get("description"))
    except store.Conflict as err:
        raise conflict(err) from None
    role = directory_of(req).role(role_id)
    if role is None:  # deleted by another request meanwhile
        raise missing("role", role_id)
    return json_response({"role": role_view(req, role)}, status=201)


def delete_role(req: Request) -> Response:
    require(is_admin(caller(req)), "delete_role")
    role = directory_of(req).role(req.params["role_id"])
    if role is None:
        raise missing("role", req.params["role_id"])
    if role.immutable:
        raise immutable("role", role.id, "delete")
    if not store.delete_role(state(req).db, role):
        raise missing("role", role.id)
    return empty_response(204)


@dataclass(frozen=True)
class _Target:
    """The project or domain a grant route names, and the directory it was found in."""

    kind: str  # "project" | "domain"
    id: str
    directory: Directory

    def held(self, user_id: str) -> list[Assignment]:
        return [a for a in self.directory.assignments if a.user_id == user_id and (
            a.project_id if self.kind == "project" else a.domain_id) == self.id]


def _target(req: Request, rule: str, readers: bool) -> _Target:
    token = caller(req)
    require(is_admin(token) or (readers and domain_reader(token, DEFAULT_DOMAIN.id)), rule)
    directory = directory_of(req)
    kind = "project" if "project_id" in req.params else "domain"
    ident = req.params[f"{kind}_id"]
    found = (directory.project(ident) if kind == "project" else directory.domain(ident))
    if found is None:
        raise missing(kind, ident)
    if directory.user(req.params["user_id"]) is None:
        raise missing("user", req.params["user_id"])
    return _Target(kind, ident, directory)


def _role(target: _Target, role_id: str) -> Role:
    role = target.directory.role(role_id)
    if role is None:
        raise missing("role", role_id)
    return role


def _not_held(target: _Target, user_id: str, role_id: str) -> HTTPError:
    return HTTPError(404, f"Could not find role assignment with role: {role_id}, user or "
                          f"group: {user_id}, {target.kind}, domain, or system: {target.id}.")


def grant(req: Request) -> Response:
    target = _target(req, "create_grant", readers=False)
    user_id, role = req.params["user_id"], _role(target, req.params["role_id"])
    if not any(a.role_id == role.id for a in target.held(user_id)):
        store.grant(state(req).db, user_id, role.id, target.kind, target.id)
    return empty_response(204)


def check_grant(req: Request) -> Response:
    target = _target(req, "check_grant", readers=True)
    user_id, role = req.params["user_id"], _role(target, req.params["role_id"])
    if not any(a.role_id == role.id for a in target.held(user_id)):
        raise _not_held(target, user_id, role.id)
    return empty_response(204)


def revoke_grant(req: Request) -> Response:
    target = _target(req, "revoke_grant", readers=False)
    user_id, role = req.params["user_id"], _role(target, req.params["role_id"])
    if store.revoke_grant(state(req).db, user_id, role.id, target.kind, target.id):
        return empty_response(204)
    if any(a.role_id == role.id for a in target.held(user_id)):
        raise immutable("role assignment", f"{user_id} {role.id} {target.id}", "delete")
    raise _not_held(target, user_id, role.id)


def list_grants(req: Request) -> Response:
    target = _target(req, "list_grants", readers=True)
    ids = {a.role_id for a in target.held(req.params["user_id"])}
    return listing(req, "roles", [r for r in target.directory.roles if r.id in ids],
                   role_view)


_GRANT = "/v3/{kind}s/{{{kind}_id}}/users/{{user_id}}/roles/{{role_id}}"
_GRANTS = "/v3/{kind}s/{{{kind}_id}}/users/{{user_id}}/roles"

ROUTES = [
    Route("POST", "/v3/roles", create_role, json_body=True),
    Route("DELETE", "/v3/roles/{role_id}", delete_role),
]
for _kind in ("project", "domain"):
    ROUTES += [
        Route("PUT", _GRANT.format(kind=_kind), grant),
        Route("HEAD", _GRANT.format(kind=_kind), check_grant),
        Route("DELETE", _GRANT.format(kind=_kind), revoke_grant),
        Route("GET", _GRANTS.format(kind=_kind), list_grants),
    ]
