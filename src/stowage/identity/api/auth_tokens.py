"""`/v3/auth/tokens`: issue (POST), validate (GET, HEAD) and revoke (DELETE) tokens.

POST is public: its body proves who the caller is (`identity.login`); the
answer is 201 with the token in `X-Subject-Token` and Keystone's token body
(catalog included unless `?nocatalog`). A refusal is logged at WARNING with
the peer's address, in Keystone's words, and a wrong password counts
towards the user's lockout (`identity.lockout`). The other methods need a caller's
token in `X-Auth-Token` and name the token they are about in
`X-Subject-Token`; an unknown, revoked or expired subject is a 404. A caller
may validate or revoke its own tokens; the admin role may do so for anyone's
(Keystone's `identity:validate_token` / `revoke_token`).
"""

from __future__ import annotations

import datetime
from typing import Any

from stowage.identity import tokens
from stowage.identity.api.auth_schema import AUTH_SCHEMA
from stowage.identity.api.common import (
    body_of,
    caller,
    catalog_of,
    directory_of,
    is_admin,
    lockout_of,
    refused_login,
    require,
    state,
)
from stowage.identity.directory import DEFAULT_DOMAIN
from stowage.identity.login import LoginRefused, grant_for
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "token_view"]


def _stamp(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def _domain_ref() -> dict[str, str]:
    return {"id": DEFAULT_DOMAIN.id, "name": DEFAULT_DOMAIN.name}


def token_view(req: Request, token: tokens.Token, catalog: bool) -> dict[str, Any]:
    """Keystone's token body: who, scope, roles (implied ones included), catalog."""
    directory = directory_of(req)
    user = directory.user(token.user_id)
    body: dict[str, Any] = {
        "methods": list(token.methods),
        "user": {"id": token.user_id, "name": user.name if user else token.user_id,
                 "domain": _domain_ref(), "password_expires_at": None},
        "audit_ids": list(token.audit_ids),
        "expires_at": _stamp(token.expires_at), "issued_at": _stamp(token.issued_at),
    }
    if token.project_id is not None:
        project = directory.project(token.project_id)
        body["project"] = {"id": token.project_id,
                           "name": project.name if project else token.project_id,
                           "domain": _domain_ref()}
        body["is_domain"] = False
    elif token.domain_id is not None:
        body["domain"] = _domain_ref()
    if token.scoped:
        found = [directory.role(name=name) for name in token.roles]
        body["roles"] = [{"id": r.id, "name": r.name} for r in found if r is not None]
        if catalog:
            body["catalog"] = catalog_of(req).token_view()
    return {"token": body}


def _wants_catalog(req: Request) -> bool:
    return not req.query_values("nocatalog")


def issue(req: Request) -> Response:
    auth: dict[str, Any] = body_of(req, AUTH_SCHEMA)["auth"]
    app = state(req)
    try:
        grant = grant_for(app.db, directory_of(req), auth, lockout_of(req))
    except LoginRefused as refused:
        raise refused_login(req, refused.detail) from None
    text, token = tokens.issue(app.db, grant, app.settings.identity.token_lifetime)
    return json_response(token_view(req, token, _wants_catalog(req)), status=201,
                         headers=[("x-subject-token", text)])


def _subject(req: Request, rule: str) -> tuple[str, tokens.Token]:
    """The token X-Subject-Token names, if the caller may see it; 404 when it is dead."""
    me = caller(req)
    text = req.headers.get("x-subject-token")
    if not text:
        raise HTTPError(400, "Expecting to find X-Subject-Token in request header.")
    subject = tokens.lookup(state(req).db, text)
    if subject is None:
        raise HTTPError(404, "Failed to validate token")
    require(is_admin(me) or subject.user_id == me.user_id, rule)
    return text, subject


def validate(req: Request) -> Response:
    text, subject = _subject(req, "validate_token")
    return json_response(token_view(req, subject, _wants_catalog(req)),
                         headers=[("x-subject-token", text)])


def check(req: Request) -> Response:
    text, _ = _subject(req, "check_token")
    return empty_response(200, [("x-subject-token", text)])


def revoke(req: Request) -> Response:
    text, _ = _subject(req, "revoke_token")
    if not tokens.revoke(state(req).db, text):
        raise HTTPError(404, "Failed to validate token")
    return empty_response(204)


ROUTES = [
    Route("POST", "/v3/auth/tokens", issue, json_body=True),
    Route("GET", "/v3/auth/tokens", validate),
    Route("HEAD", "/v3/auth/tokens", check),
    Route("DELETE", "/v3/auth/tokens", revoke),
]
