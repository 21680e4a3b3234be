"""What the caller's own token reaches: `/v3/auth/catalog`, `/projects`, `/domains`.

Any valid token may ask (Keystone's `identity:get_auth_*` rules are empty);
the catalog needs a project-scoped token, as Keystone's does.
"""

from __future__ import annotations

from stowage.identity.api.common import (
    caller,
    catalog_of,
    directory_of,
    domain_view,
    listing,
    project_view,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def auth_catalog(req: Request) -> Response:
    token = caller(req)
    if token.project_id is None:
        raise HTTPError(403, "A project-scoped token is required to produce a service "
                             "catalog.")
    return json_response({"catalog": catalog_of(req).token_view(),
                          "links": {"self": req.url(req.path)}})


def auth_projects(req: Request) -> Response:
    token = caller(req)
    return listing(req, "projects", directory_of(req).projects_of(token.user_id),
                   project_view)


def auth_domains(req: Request) -> Response:
    token = caller(req)
    return listing(req, "domains", directory_of(req).domains_of(token.user_id),
                   domain_view)


ROUTES = [
    Route("GET", "/v3/auth/catalog", auth_catalog),
    Route("GET", "/v3/auth/projects", auth_projects),
    Route("GET", "/v3/auth/domains", auth_domains),
]
