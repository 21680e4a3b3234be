"""The noauth2 convention every stowage service shares: the token names the caller.

Upstream services' test auth (`auth_strategy = noauth2`): the token
`user:project` names the caller and its project and carries no role; an
`X-Roles` header lists the roles, as Keystone's token would (a member's token
carries `member,reader`, since Keystone's default roles imply one another).
The token `admin` carries the roles Keystone's bootstrap admin has: admin,
member and reader. Kept here so that Placement, Compute and Image read a token
the same way.
"""

from __future__ import annotations

from stowage.context import RequestContext
from stowage.web.http import Request

__all__ = ["ADMIN_ROLES", "ANONYMOUS_CLIENT_TOKEN", "noauth2"]

# keystoneauth's `none` plugin sends this token; treat it like `admin` so that
# stock clients configured without credentials work against a standalone service.
ANONYMOUS_CLIENT_TOKEN = "notused"
# admin implies member implies reader (Keystone's bootstrap roles), so the admin
# token may also do what Nova grants to project members only (server groups).
ADMIN_ROLES = ("admin", "member", "reader")


def noauth2(req: Request) -> RequestContext | None:
    """Upstream's test auth: the token is `user[:project]`; `admin` is an admin."""
    token = req.headers.get("x-auth-token")
    if token is None:
        return None
    if token == ANONYMOUS_CLIENT_TOKEN:
        token = "admin"
    user_id, _, project_id = token.partition(":")
    project_id = project_id or user_id
    if "x-roles" in req.headers:
        roles = tuple(r.strip() for r in req.headers["x-roles"].split(",") if r.strip())
    else:
        roles = ADMIN_ROLES if user_id == "admin" else ()
    system_scope = req.headers.get("openstack-system-scope")
    # As oslo.context reads it: an explicit X-Project-Id wins over the token's project.
    project = req.headers.get("x-project-id") or (None if system_scope else project_id)
    return RequestContext(user_id=user_id, project_id=project, roles=roles,
                          system_scope=system_scope)
