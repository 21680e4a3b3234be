"""What the Identity v3 handlers share: state, the caller's token, policy, views.

Policy follows Keystone's defaults as a project-scoped deployment sees them:
the admin role may read everything; otherwise a caller sees itself, its
project and its domain, and anything else is a 403 naming the rule
(`identity:list_users`), as Keystone's message does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema

from stowage.config import Settings
from stowage.db import Database
from stowage.identity import store, tokens
from stowage.identity.catalog import Catalog
from stowage.identity.directory import Directory, Domain, Project, Role, User
from stowage.identity.lockout import Lockout
from stowage.identity.middleware import identity_url
from stowage.web import schema_report
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response

__all__ = ["IdentityState", "caller", "require", "unauthorized", "refused_login",
           "lockout_of", "catalog_of", "listing",
           "state", "directory_of", "body_of", "is_admin", "domain_reader",
           "domain_view", "project_view", "user_view", "role_view", "filtered"]

LOG = logging.getLogger(__name__)
UNAUTHORIZED = "The request you have made requires authentication."


@dataclass
class IdentityState:
    settings: Settings
    db: Database
    directory: Directory  # the settings file's entries only; see `directory_of`


def state(req: Request) -> IdentityState:
    found: IdentityState = req.app
    return found


def directory_of(req: Request) -> Directory:
    """The whole directory now: the settings file's entries plus the API-made ones."""
    app = state(req)
    return store.load(app.db, app.directory)


def body_of(req: Request, schema: dict[str, Any]) -> dict[str, Any]:
    """The JSON body, checked against `schema`; a 400 in Keystone's words otherwise."""
    try:
        data = load_json(req.body)
    except InvalidJSON as exc:
        raise HTTPError(400, f"Expecting to find valid JSON in request body: "
                             f"{exc.reason}") from None
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as err:
        field = "/".join(str(p) for p in err.absolute_path) or next(
            iter(schema.get("required", ["body"])))
        raise HTTPError(400, f"Invalid input for field '{field}': "
                             f"{schema_report.message(err)}") from None
    found: dict[str, Any] = data
    return found


def unauthorized(detail: str = UNAUTHORIZED) -> HTTPError:
    return HTTPError(401, detail)


def refused_login(req: Request, detail: str) -> HTTPError:
    """The 401 of a refused password (or token) login, logged at WARNING with the peer's
    address in Keystone's words, so that fail2ban-style tools find the source."""
    LOG.warning("Authorization failed. %s from %s", detail, req.remote_addr)
    return unauthorized(detail)


def lockout_of(req: Request) -> Lockout:
    """The deployment's lockout (`[identity] lockout_failure_attempts`, `lockout_duration`)."""
    app = state(req)
    identity = app.settings.identity
    return Lockout(app.db, identity.lockout_failure_attempts, identity.lockout_duration)


def caller(req: Request) -> tokens.Token:
    """The live token in X-Auth-Token; 401 without one."""
    text = req.headers.get("x-auth-token")
    token = tokens.lookup(state(req).db, text) if text else None
    if token is None:
        raise unauthorized()
    return token


def is_admin(token: tokens.Token) -> bool:
    return "admin" in token.roles


def require(allowed: bool, rule: str) -> None:
    """403 in Keystone's words unless `allowed`."""
    if not allowed:
        raise HTTPError(403, "You are not authorized to perform the requested action: "
                             f"identity:{rule}.")


def domain_reader(token: tokens.Token, domain_id: str) -> bool:
    return token.domain_id == domain_id and "reader" in token.roles


def catalog_of(req: Request) -> Catalog:
    """The catalog seen from this request's host (or `[identity] public_url`)."""
    settings = state(req).settings
    base = identity_url(req, settings.identity.public_url)[: -len("/identity")]
    return Catalog(base, settings.services, settings.identity.region)


def _link(req: Request, path: str) -> dict[str, Any]:
    return {"self": req.url(path)}


def _options(immutable: bool) -> dict[str, Any]:
    """Keystone's resource options: settings-file entries show `immutable`, as
    `keystone-manage bootstrap`'s roles do."""
    return {"immutable": True} if immutable else {}


def domain_view(req: Request, domain: Domain) -> dict[str, Any]:
    return {"id": domain.id, "name": domain.name, "description": domain.description,
            "enabled": domain.enabled, "tags": [], "options": {},
            "links": _link(req, f"/v3/domains/{domain.id}")}


def project_view(req: Request, project: Project) -> dict[str, Any]:
    return {"id": project.id, "name": project.name, "description": project.description,
            "enabled": project.enabled, "domain_id": project.domain_id,
            "parent_id": project.domain_id, "is_domain": False, "tags": [],
            "options": _options(project.immutable),
            "links": _link(req, f"/v3/projects/{project.id}")}


def user_view(req: Request, user: User) -> dict[str, Any]:
    body: dict[str, Any] = {"id": user.id, "name": user.name, "domain_id": user.domain_id,
                            "enabled": user.enabled, "password_expires_at": None,
                            "options": _options(user.immutable),
                            "links": _link(req, f"/v3/users/{user.id}")}
    if user.email is not None:
        body["email"] = user.email
    if user.description:
        body["description"] = user.description
    if user.default_project_id is not None:
        body["default_project_id"] = user.default_project_id
    return body


def role_view(req: Request, role: Role) -> dict[str, Any]:
    return {"id": role.id, "name": role.name, "domain_id": None,
            "description": role.description, "options": _options(role.immutable),
            "links": _link(req, f"/v3/roles/{role.id}")}


def filtered(req: Request, items: Iterable[Any], names: Iterable[str]) -> list[Any]:
    """Keystone's exact-match list filters (`?name=...&enabled=...`) on the named attributes.

    `enabled` compares as Keystone reads booleans in a query: "0", "false",
    "no", "off" (any case) are false, anything else true.
    """
    kept = list(items)
    for name in names:
        for wanted in req.query_values(name):
            if name == "enabled":
                flag = wanted.lower() not in ("0", "false", "no", "off")
                kept = [i for i in kept if bool(getattr(i, name)) == flag]
            else:
                kept = [i for i in kept if getattr(i, name) == wanted]
    return kept


def listing(req: Request, key: str, items: Iterable[Any],
            view: Callable[[Request, Any], dict[str, Any]]) -> Response:
    """`{key: [...], "links": {...}}`, Keystone's list body."""
    path = req.path + (f"?{req.query_string}" if req.query_string else "")
    return json_response({key: [view(req, i) for i in items],
                          "links": {"self": req.url(path), "previous": None, "next": None}})
