"""Signing in to the dashboard: a password exchanged for a token of the identity in use.

The form posts username, password and project (names in the Default domain);
the dashboard asks for a project-scoped token exactly as a client would
(`POST /v3/auth/tokens`): of the built-in identity service in this process,
or of Keystone at `[keystone_authtoken] www_authenticate_uri` (else
`auth_url`). The token goes into an HttpOnly, SameSite=Strict cookie and is
checked on each request like any API token (`access.check`); the password is
never kept. Failed sign-ins count against the identity's own lockout.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from stowage.web.dashboard.world import World
from stowage.web.http import Request

__all__ = ["token_for", "LoginFailed"]

_TIMEOUT = 10.0


class LoginFailed(Exception):
    """The identity service refused (or could not be asked); the text says which."""


def _body(user: str, password: str, project: str) -> dict[str, Any]:
    domain = {"name": "Default"}
    return {"auth": {
        "identity": {"methods": ["password"], "password": {
            "user": {"name": user, "domain": domain, "password": password}}},
        "scope": {"project": {"name": project, "domain": domain}}}}


def token_for(world: World, req: Request, user: str, password: str, project: str) -> str:
    """A token for `user` scoped to `project`; LoginFailed when refused."""
    if not user or not password or not project:
        raise LoginFailed("Give a username, a password and a project.")
    body = json.dumps(_body(user, password, project)).encode()
    strategy = world.settings.api.auth_strategy
    if strategy == "builtin-identity" and world.identity_app is not None:
        return _builtin(world, req, body)
    if strategy == "keystone":
        return _keystone(world, body)
    raise LoginFailed(f"There is nothing to sign in to with auth_strategy {strategy}.")


def _builtin(world: World, req: Request, body: bytes) -> str:
    asked = Request(method="POST", path="/v3/auth/tokens", query_string="",
                    headers={"content-type": "application/json",
                             "content-length": str(len(body)), "accept": "application/json"},
                    body=body, base_url=req.base_url, remote_addr=req.remote_addr,
                    app=world.identity_app.state)
    resp = world.identity_app.respond(asked)
    token = resp.get_header("x-subject-token")
    if resp.status != 201 or not token:
        raise LoginFailed("The username, password or project was not accepted.")
    return str(token)


def _keystone(world: World, body: bytes) -> str:
    settings = world.settings.keystone_authtoken
    base = settings.challenge_uri.rstrip("/")
    if not base:
        raise LoginFailed("[keystone_authtoken] names no Keystone to sign in with.")
    url = base if base.endswith("/v3") else base + "/v3"
    try:
        resp = httpx.post(url + "/auth/tokens", content=body, timeout=_TIMEOUT,
                          verify=settings.verify, headers={"content-type": "application/json"})
    except httpx.HTTPError as exc:
        raise LoginFailed(f"Keystone could not be reached: {exc}") from None
    token = resp.headers.get("x-subject-token")
    if resp.status_code != 201 or not token:
        raise LoginFailed("The username, password or project was not accepted.")
    return str(token)
