"""`GET /v3/role_assignments`: who holds which role where, as Keystone lists it.

Filters: `user.id`, `role.id`, `scope.project.id`, `scope.domain.id`,
`scope.system` (no system assignments exist: nothing matches) and
`group.id` (no groups exist: nothing matches). `effective` spells out the
implied roles (admin => manager => member => reader); `include_names` adds
names to every reference. Policy: admin, or a reader scoped to the domain.
"""

from __future__ import annotations

from typing import Any

from stowage.identity.api.common import (
    caller,
    directory_of,
    domain_reader,
    is_admin,
    require,
)
from stowage.identity.directory import DEFAULT_DOMAIN, Assignment, Directory
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_FILTERS = {"user.id": "user_id", "role.id": "role_id", "scope.project.id": "project_id",
            "scope.domain.id": "domain_id"}
_FLAGS = ("effective", "include_names", "include_subtree")
_NEVER = ("group.id", "scope.system", "scope.OS-INHERIT:inherited_to")


def _flag(req: Request, name: str) -> bool:
    values = req.query_values(name)
    return bool(values) and values[-1].lower() not in ("0", "false", "no", "off")


def _domain_ref(named: bool) -> dict[str, str]:
    return ({"id": DEFAULT_DOMAIN.id, "name": DEFAULT_DOMAIN.name} if named
            else {"id": DEFAULT_DOMAIN.id})


def _view(req: Request, directory: Directory, a: Assignment, named: bool) -> dict[str, Any]:
    role = directory.role(a.role_id)
    user = directory.user(a.user_id)
    body: dict[str, Any] = {"role": {"id": a.role_id}, "user": {"id": a.user_id}}
    if a.project_id is not None:
        scope: dict[str, Any] = {"project": {"id": a.project_id}}
        where = f"/v3/projects/{a.project_id}"
    else:
        scope = {"domain": {"id": a.domain_id}}
        where = f"/v3/domains/{a.domain_id}"
    if named:
        project = directory.project(a.project_id) if a.project_id else None
        body["role"]["name"] = role.name if role else None
        body["user"].update(name=user.name if user else None, domain=_domain_ref(True))
        if project is not None:
            scope["project"].update(name=project.name, domain=_domain_ref(True))
        else:
            scope["domain"]["name"] = DEFAULT_DOMAIN.name
    body["scope"] = scope
    body["links"] = {"assignment": req.url(f"{where}/users/{a.user_id}/roles/{a.role_id}")}
    return body


def list_role_assignments(req: Request) -> Response:
    token = caller(req)
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id),
            "list_role_assignments")
    if req.query_values("scope.project.id") and req.query_values("scope.domain.id"):
        raise HTTPError(400, "Specify a domain or project, not both")
    directory = directory_of(req)
    found = list(directory.effective_assignments() if _flag(req, "effective")
                 else directory.assignments)
    if any(req.query_values(name) for name in _NEVER):
        found = []
    for name, attribute in _FILTERS.items():
        for wanted in req.query_values(name):
            found = [a for a in found if getattr(a, attribute) == wanted]
    named = _flag(req, "include_names")
    path = req.path + (f"?{req.query_string}" if req.query_string else "")
    return json_response({
        "role_assignments": [_view(req, directory, a, named) for a in found],
        "links": {"self": req.url(path), "previous": None, "next": None}})


ROUTES = [Route("GET", "/v3/role_assignments", list_role_assignments)]
