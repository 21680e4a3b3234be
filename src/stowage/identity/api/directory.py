"""Read-only directory routes: projects, users (and their projects), roles, domains.

Policy as Keystone's defaults read for project- and domain-scoped tokens:

    list projects / users / roles    admin, or a reader scoped to the domain
    get project                      admin, domain reader, or a token scoped to it
    get user, list user's projects   admin, domain reader, or the user itself
    get role                         admin, or a domain reader
    list domains                     admin
    get domain                       admin, or a token scoped to it or to one of its projects

Unknown ids are 404 "Could not find <kind>: <id>." (Keystone's words).
"""

from __future__ import annotations

from stowage.identity.api.common import (
    caller,
    directory_of,
    domain_reader,
    domain_view,
    filtered,
    is_admin,
    listing,
    project_view,
    require,
    role_view,
    user_view,
)
from stowage.identity.directory import DEFAULT_DOMAIN
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _missing(kind: str, ident: str) -> HTTPError:
    return HTTPError(404, f"Could not find {kind}: {ident}.")


def list_projects(req: Request) -> Response:
    token = caller(req)
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id), "list_projects")
    found = filtered(req, directory_of(req).projects, ("name", "enabled", "domain_id"))
    return listing(req, "projects", found, project_view)


def get_project(req: Request) -> Response:
    token = caller(req)
    project = directory_of(req).project(req.params["project_id"])
    allowed = is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id) or (
        project is not None and token.project_id == project.id)
    require(allowed, "get_project")
    if project is None:
        raise _missing("project", req.params["project_id"])
    return json_response({"project": project_view(req, project)})


def list_users(req: Request) -> Response:
    token = caller(req)
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id), "list_users")
    found = filtered(req, directory_of(req).users, ("name", "enabled", "domain_id"))
    return listing(req, "users", found, user_view)


def _user_param(req: Request, rule: str) -> str:
    token = caller(req)
    user_id = req.params["user_id"]
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id)
            or token.user_id == user_id, rule)
    return user_id


def get_user(req: Request) -> Response:
    user_id = _user_param(req, "get_user")
    user = directory_of(req).user(user_id)
    if user is None:
        raise _missing("user", user_id)
    return json_response({"user": user_view(req, user)})


def list_user_projects(req: Request) -> Response:
    user_id = _user_param(req, "list_user_projects")
    directory = directory_of(req)
    if directory.user(user_id) is None:
        raise _missing("user", user_id)
    found = filtered(req, directory.projects_of(user_id), ("name", "enabled", "domain_id"))
    return listing(req, "projects", found, project_view)


def list_roles(req: Request) -> Response:
    token = caller(req)
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id), "list_roles")
    found = filtered(req, directory_of(req).roles, ("name",))
    return listing(req, "roles", found, role_view)


def get_role(req: Request) -> Response:
    token = caller(req)
    require(is_admin(token) or domain_reader(token, DEFAULT_DOMAIN.id), "get_role")
    role = directory_of(req).role(req.params["role_id"])
    if role is None:
        raise _missing("role", req.params["role_id"])
    return json_response({"role": role_view(req, role)})


def list_domains(req: Request) -> Response:
    require(is_admin(caller(req)), "list_domains")
    found = filtered(req, directory_of(req).domains, ("name", "enabled"))
    return listing(req, "domains", found, domain_view)


def get_domain(req: Request) -> Response:
    token = caller(req)
    directory = directory_of(req)
    domain = directory.domain(req.params["domain_id"])
    project = directory.project(token.project_id) if token.project_id else None
    mine = domain is not None and (token.domain_id == domain.id or (
        project is not None and project.domain_id == domain.id))
    require(is_admin(token) or mine, "get_domain")
    if domain is None:
        raise _missing("domain", req.params["domain_id"])
    return json_response({"domain": domain_view(req, domain)})


ROUTES = [
    Route("GET", "/v3/projects", list_projects),
    Route("GET", "/v3/projects/{project_id}", get_project),
    Route("GET", "/v3/users", list_users),
    Route("GET", "/v3/users/{user_id}", get_user),
    Route("GET", "/v3/users/{user_id}/projects", list_user_projects),
    Route("GET", "/v3/roles", list_roles),
    Route("GET", "/v3/roles/{role_id}", get_role),
    Route("GET", "/v3/domains", list_domains),
    Route("GET", "/v3/domains/{domain_id}", get_domain),
]
