"""stowage with `auth_strategy = "keystone"`, against the real Keystone fixture.

    Keystone (tests/keystone, gunicorn on loopback)
        ^  service user "stowage" (roles admin + service on project "service")
        |  GET /v3/auth/tokens for every token not in the cache
    stowage: /placement /compute /image /network (SQLite; auth does not touch SQL)
        ^  X-Auth-Token / X-Service-Token of users made in Keystone
    the tests
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import httpx

from stowage import config
from tests.functional.conftest import LiveServer, serving
from tests.keystone.admin import User
from tests.keystone.fixture import Keystone

__all__ = ["SERVICE_PASSWORD", "authtoken", "client", "keystone_stowage", "service_user"]

SERVICE_PASSWORD = "stowage-service-pw"


# Keystone's URL -> its stowage service user and that user's project name.
_SERVICE_USERS: dict[str, tuple[User, str]] = {}


def service_user(keystone: Keystone) -> tuple[User, str]:
    """The stowage service user and its project's name, made once per Keystone as a
    deployment's set-up makes Nova's: admin and service on a project of its own."""
    if keystone.auth_url not in _SERVICE_USERS:
        name = f"service-{uuid.uuid4().hex[:8]}"
        project = keystone.admin.project(name)
        user = keystone.admin.user("admin", "service", project_id=project,
                                   password=SERVICE_PASSWORD)
        _SERVICE_USERS[keystone.auth_url] = (user, name)
    return _SERVICE_USERS[keystone.auth_url]


def authtoken(keystone: Keystone, **changes: Any) -> config.KeystoneAuthtokenSettings:
    """`[keystone_authtoken]` for the stowage service user.

    The timeout is generous: a Keystone that is stopped refuses connections at
    once (the 503 tests), while a running one on a loaded CI machine, with one
    gunicorn worker, can take seconds to validate sixteen first tokens."""
    user, project_name = service_user(keystone)
    values: dict[str, Any] = {
        "auth_url": keystone.auth_url, "username": user.name, "password": user.password,
        "project_name": project_name, "region_name": keystone.region,
        "http_connect_timeout": 20.0, "http_request_max_retries": 0}
    values.update(changes)
    return config.KeystoneAuthtokenSettings(**values)


@contextlib.contextmanager
def keystone_stowage(keystone: Keystone, services: tuple[str, ...] | None = None,
                     **authtoken_changes: Any) -> Iterator[LiveServer]:
    """Every service mounted (or `services` at `/`), tokens checked by Keystone."""
    settings: dict[str, Any] = {
        "api": config.ApiSettings(auth_strategy="keystone"),
        "keystone_authtoken": authtoken(keystone, **authtoken_changes)}
    with serving("sqlite", services, **settings) as live:
        yield live


def client(live: LiveServer, token: str | None, prefix: str = "",
           headers: dict[str, str] | None = None) -> httpx.Client:
    sent = {"accept": "application/json", **(headers or {})}
    if token is not None:
        sent["x-auth-token"] = token
    return httpx.Client(base_url=live.url + prefix, headers=sent, timeout=30)
