"""Identity v3 route handlers, one module per URL noun (see `HANDLER_MODULES`).

`versions` (discovery), `auth_tokens` (issue, validate, revoke), `auth_reads`
(what the caller's token reaches: catalog, projects, domains), `directory`
(projects, users, roles, domains), `assignments` (role assignments) and
`catalog_reads` (services, endpoints, regions); the writes: `directory_writes`
(projects, users, password changes) and `grants` (roles, role grants).
"""

from __future__ import annotations

from stowage.web.routing import Route, routes_of

__all__ = ["HANDLER_MODULES", "all_routes"]

HANDLER_MODULES = ("versions", "auth_tokens", "auth_reads", "directory", "assignments",
                   "catalog_reads", "directory_writes", "grants")


def all_routes() -> list[Route]:
    return routes_of("stowage.identity.api", HANDLER_MODULES)
