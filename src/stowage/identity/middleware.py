"""How every service reads `X-Auth-Token` when the built-in identity service is on.

The token is looked up among issued tokens (`tokens.lookup`); a live one
becomes the same `RequestContext` noauth2 builds (user, project, roles;
is_admin follows the admin role), so policy checks cannot tell the two apart.
An unknown, revoked or expired token is no context at all: the service
answers 401 with its own error body and, as keystonemiddleware does, a
`WWW-Authenticate: Keystone uri="<identity URL>"` header.

With `auth_strategy = "keystone"` the token is Keystone's instead, validated
as keystonemiddleware does (`stowage.web.keystone`); the 401 names
`[keystone_authtoken] www_authenticate_uri`.

Requests one stowage service hands another in-process (`Request.trusted`,
never set for a request read off a socket) keep noauth2's reading: they are
the service user talking to itself, as Nova's `[placement]` user would.
"""

from __future__ import annotations

from collections.abc import Callable

from stowage.config import Settings
from stowage.context import RequestContext
from stowage.db import Database
from stowage.identity import tokens
from stowage.web.auth import noauth2
from stowage.web.http import Request

__all__ = ["authenticator_for", "challenge_for", "identity_url"]

Authenticator = Callable[[Request], RequestContext | None]


def authenticator_for(settings: Settings, db: Database) -> Authenticator:
    """The authenticator `[api] auth_strategy` names."""
    if settings.api.auth_strategy == "keystone":
        from stowage.web.keystone import authenticator

        return authenticator(settings.keystone_authtoken)
    if settings.api.auth_strategy != "builtin-identity":
        return noauth2

    def authenticate(req: Request) -> RequestContext | None:
        if req.trusted:
            return noauth2(req)
        text = req.headers.get("x-auth-token")
        token = tokens.lookup(db, text) if text else None
        if token is None:
            return None
        return RequestContext(user_id=token.user_id,
                              project_id=token.project_id, roles=token.roles)
    return authenticate


def identity_url(req: Request, public_url: str | None) -> str:
    """Where the identity service answers: the configured public URL, else this host's."""
    if public_url:
        return public_url.rstrip("/") + "/identity"
    base = req.base_url
    if req.root_path and base.endswith(req.root_path):
        base = base[: -len(req.root_path)]
    return base + "/identity"


def challenge_for(settings: Settings) -> Callable[[Request], str] | None:
    """The `WWW-Authenticate` value a 401 carries (None with noauth2, as upstream)."""
    if settings.api.auth_strategy == "keystone":
        value = f'Keystone uri="{settings.keystone_authtoken.challenge_uri}"'
        return lambda req: value
    if settings.api.auth_strategy != "builtin-identity":
        return None
    public_url = settings.identity.public_url
    return lambda req: f'Keystone uri="{identity_url(req, public_url)}"'
