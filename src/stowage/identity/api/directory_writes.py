"""Create, update and delete projects and users (Keystone's admin API).

Policy: the admin role (Keystone's defaults `identity:create_project`,
`update_project`, `delete_project`, `create_user`, `update_user`,
`delete_user`); a user may change its own password with
`POST /v3/users/{id}/password` (`identity:change_password`).

    POST   /v3/projects            201 {"project": ...}   409 name taken in the domain
    PATCH  /v3/projects/{id}       200 {"project": ...}   disabling revokes its tokens
    DELETE /v3/projects/{id}       204                    its grants and tokens go too
    POST   /v3/users               201 {"user": ...}      409 name taken in the domain
    PATCH  /v3/users/{id}          200 {"user": ...}      new password / disabling revoke
    DELETE /v3/users/{id}          204                    its grants and tokens go too
    POST   /v3/users/{id}/password 204                    401 wrong original password

The settings file's entries are immutable here: changing or deleting one is
a 403 naming it. There is one domain, `default`; naming another is a 404.
"""

from __future__ import annotations

from typing import Any

from stowage.identity import store
from stowage.identity.api.common import (
    body_of,
    caller,
    directory_of,
    is_admin,
    lockout_of,
    project_view,
    refused_login,
    require,
    state,
    user_view,
)
from stowage.identity.api.write_schemas import (
    PASSWORD_CHANGE,
    PROJECT_CREATE,
    PROJECT_UPDATE,
    USER_CREATE,
    USER_UPDATE,
)
from stowage.identity.directory import DEFAULT_DOMAIN, Directory, Project, User
from stowage.identity.login import LoginRefused, check_password
from stowage.identity.passwords import hash_password
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "immutable", "missing"]


def missing(kind: str, ident: str) -> HTTPError:
    return HTTPError(404, f"Could not find {kind}: {ident}.")


def immutable(kind: str, ident: str, verb: str) -> HTTPError:
    """Keystone's 403 for an immutable resource; here: an entry of the settings file."""
    return HTTPError(403, f"Unable to {verb} immutable {kind} resource: `{ident}`. It is "
                          "defined in the settings file.")


def conflict(err: store.Conflict) -> HTTPError:
    return HTTPError(409, err.message)


def _domain(value: Any) -> str:
    """The domain a body names (default: Default); 404 for any other."""
    if value is None or value == DEFAULT_DOMAIN.id:
        return DEFAULT_DOMAIN.id
    raise missing("domain", str(value))


def _admin(req: Request, rule: str) -> Directory:
    require(is_admin(caller(req)), rule)
    return directory_of(req)


def _project_changes(body: dict[str, Any], project: Project | None) -> dict[str, Any]:
    """Columns from a project body; 400 for what this directory cannot hold."""
    domain_id = project.domain_id if project else _domain(body.get("domain_id"))
    if project and body.get("domain_id", domain_id) != domain_id:
        raise HTTPError(400, "Update of `domain_id` is not allowed.")
    if body.get("is_domain"):
        raise HTTPError(400, "Projects acting as domains are not supported.")
    if body.get("parent_id") not in (None, domain_id):
        raise HTTPError(400, "Project hierarchies are not supported: the parent of a "
                             "project is its domain.")
    changes: dict[str, Any] = {k: body[k] for k in ("name", "enabled") if k in body}
    if "description" in body:
        changes["description"] = body["description"] or ""
    if project is None:
        changes.update(domain_id=domain_id, description=changes.get("description", ""),
                       enabled=changes.get("enabled", True))
    return changes


def create_project(req: Request) -> Response:
    _admin(req, "create_project")
    body = body_of(req, PROJECT_CREATE)["project"]
    values = _project_changes(body, None)
    app = state(req)
    try:
        project_id = store.create_project(app.db, app.directory, **values)
    except store.Conflict as err:
        raise conflict(err) from None
    return _project_answer(req, project_id, 201)


def _project_answer(req: Request, project_id: str, status: int) -> Response:
    project = directory_of(req).project(project_id)
    if project is None:  # deleted by another request meanwhile
        raise missing("project", project_id)
    return json_response({"project": project_view(req, project)}, status=status)


def _mutable_project(req: Request, rule: str, verb: str) -> Project:
    project = _admin(req, rule).project(req.params["project_id"])
    if project is None:
        raise missing("project", req.params["project_id"])
    if project.immutable:
        raise immutable("project", project.id, verb)
    return project


def update_project(req: Request) -> Response:
    project = _mutable_project(req, "update_project", "update")
    changes = _project_changes(body_of(req, PROJECT_UPDATE)["project"], project)
    app = state(req)
    try:
        if changes and not store.update_project(app.db, app.directory, project, changes):
            raise missing("project", project.id)
    except store.Conflict as err:
        raise conflict(err) from None
    return _project_answer(req, project.id, 200)


def delete_project(req: Request) -> Response:
    project = _mutable_project(req, "delete_project", "delete")
    if not store.delete_project(state(req).db, project.id):
        raise missing("project", project.id)
    return empty_response(204)


def _user_changes(directory: Directory, body: dict[str, Any],
                  user: User | None) -> dict[str, Any]:
    """Columns from a user body; the password is hashed here and never kept."""
    domain_id = user.domain_id if user else _domain(body.get("domain_id"))
    if user and body.get("domain_id", domain_id) != domain_id:
        raise HTTPError(400, "Update of `domain_id` is not allowed.")
    changes: dict[str, Any] = {k: body[k] for k in ("name", "enabled", "email",
                                                     "default_project_id") if k in body}
    if "description" in body:
        changes["description"] = body["description"] or ""
    if "password" in body:
        changes["password_hash"] = (hash_password(body["password"])
                                    if body["password"] is not None else None)
    default = changes.get("default_project_id")
    if default is not None and directory.domain(default) is not None:
        raise HTTPError(400, f"User's default project ID cannot be a domain ID: {default}")
    if user is None:
        changes = {"domain_id": domain_id, "description": "", "enabled": True, "email": None,
                   "default_project_id": None, "password_hash": None, **changes}
    return changes


def create_user(req: Request) -> Response:
    directory = _admin(req, "create_user")
    body = body_of(req, USER_CREATE)["user"]
    values = _user_changes(directory, body, None)
    app = state(req)
    try:
        user_id = store.create_user(app.db, app.directory, values)
    except store.Conflict as err:
        raise conflict(err) from None
    return _user_answer(req, user_id, 201)


def _user_answer(req: Request, user_id: str, status: int) -> Response:
    user = directory_of(req).user(user_id)
    if user is None:  # deleted by another request meanwhile
        raise missing("user", user_id)
    return json_response({"user": user_view(req, user)}, status=status)


def _mutable_user(directory: Directory, user_id: str, verb: str) -> User:
    user = directory.user(user_id)
    if user is None:
        raise missing("user", user_id)
    if user.immutable:
        raise immutable("user", user.id, verb)
    return user


def update_user(req: Request) -> Response:
    directory = _admin(req, "update_user")
    user = _mutable_user(directory, req.params["user_id"], "update")
    changes = _user_changes(directory, body_of(req, USER_UPDATE)["user"], user)
    app = state(req)
    try:
        if changes and not store.update_user(app.db, app.directory, user, changes):
            raise missing("user", user.id)
    except store.Conflict as err:
        raise conflict(err) from None
    return _user_answer(req, user.id, 200)


def delete_user(req: Request) -> Response:
    user = _mutable_user(_admin(req, "delete_user"), req.params["user_id"], "delete")
    if not store.delete_user(state(req).db, user.id):
        raise missing("user", user.id)
    return empty_response(204)


def change_password(req: Request) -> Response:
    """A user's own password change: the original proves it (Keystone's self-service)."""
    token = caller(req)
    user_id = req.params["user_id"]
    require(token.user_id == user_id, "change_password")
    body = body_of(req, PASSWORD_CHANGE)["user"]
    app = state(req)
    user = _mutable_user(directory_of(req), user_id, "update")
    try:  # Keystone authenticates the original password: it counts towards the lockout
        check_password(lockout_of(req), user, body["original_password"])
    except LoginRefused as refused:
        raise refused_login(req, refused.detail) from None
    store.update_user(app.db, app.directory, user,
                      {"password_hash": hash_password(body["password"])})
    return empty_response(204)


ROUTES = [
    Route("POST", "/v3/projects", create_project, json_body=True),
    Route("PATCH", "/v3/projects/{project_id}", update_project, json_body=True),
    Route("DELETE", "/v3/projects/{project_id}", delete_project),
    Route("POST", "/v3/users", create_user, json_body=True),
    Route("PATCH", "/v3/users/{user_id}", update_user, json_body=True),
    Route("DELETE", "/v3/users/{user_id}", delete_user),
    Route("POST", "/v3/users/{user_id}/password", change_password, json_body=True),
]
