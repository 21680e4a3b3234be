"""A live stowage with the built-in identity service on, and a small directory::

    domain Default
      project admin   <- admin  (admin)
      project alpha   <- alice  (member)  rita (reader)  gone (member, user disabled)
      project closed  (disabled) <- alice (member)
      the domain      <- dora   (reader)
      nobody: no role anywhere

Passwords are "<name>-pw". `login` asks for a token by name, as clients do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import httpx

from stowage import config
from stowage.identity.passwords import hash_password
from tests.functional.conftest import LiveServer, serving

__all__ = ["identity_settings", "identity_server", "login", "password_body", "token_client"]

USERS = ("admin", "alice", "rita", "dora", "nobody", "gone")


@cache
def identity_settings() -> config.IdentitySettings:
    users = tuple(config.IdentityUser(
        name, hash_password(f"{name}-pw"), enabled=name != "gone",
        default_project={"admin": "admin", "alice": "alpha"}.get(name)) for name in USERS)
    projects = (config.IdentityProject("admin"), config.IdentityProject("alpha"),
                config.IdentityProject("closed", enabled=False))
    assignments = (config.IdentityAssignment("admin", "admin", project="admin"),
                   config.IdentityAssignment("alice", "member", project="alpha"),
                   config.IdentityAssignment("alice", "member", project="closed"),
                   config.IdentityAssignment("rita", "reader", project="alpha"),
                   config.IdentityAssignment("gone", "member", project="alpha"),
                   config.IdentityAssignment("dora", "reader", domain="default"))
    return config.IdentitySettings(users=users, projects=projects, assignments=assignments)


@contextmanager
def identity_server(backend: str, **overrides: Any) -> Iterator[LiveServer]:
    """Every service mounted, tokens checked (`[api] auth_strategy = builtin-identity`)."""
    with serving(backend, api=config.ApiSettings(auth_strategy="builtin-identity"),
                 identity=identity_settings(), **overrides) as live:
        yield live


def password_body(user: str, project: str | None = None, password: str | None = None,
                  scope: Any = None) -> dict[str, Any]:
    """An auth body: user by name in Default, project (if any) by name in Default."""
    auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"name": "Default"},
        "password": password if password is not None else f"{user}-pw"}}}}
    if project is not None:
        auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    elif scope is not None:
        auth["scope"] = scope
    return {"auth": auth}


def login(live: LiveServer, user: str, project: str | None = None, **kw: Any) -> str:
    """A token for `user` (scoped to `project`); the test fails unless one is issued."""
    resp = httpx.post(f"{live.url}/identity/v3/auth/tokens",
                      json=password_body(user, project, **kw), timeout=30)
    assert resp.status_code == 201, resp.text
    return resp.headers["x-subject-token"]


def token_client(live: LiveServer, token: str, path: str = "",
                 headers: dict[str, str] | None = None) -> httpx.Client:
    return httpx.Client(base_url=f"{live.url}{path}", timeout=30,
                        headers={"x-auth-token": token, "accept": "application/json",
                                 **(headers or {})})
