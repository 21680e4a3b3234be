"""The token compute sends to a Placement or Network service in another process (way 3).

Within one `stowage serve`, services call each other in-process and need no
token (`Request.trusted`). Across processes (`[compute] placement_url` /
`network_url`) with `builtin-identity` on, the other process checks tokens
against the database both share, so this process issues its own service
token straight into that table (it holds the database already: a password
would add nothing) and renews it before it expires, or when refused::

    request -> X-Auth-Token: <service token> -> 401? -> new token, sent once more

The service user `stowage-service` carries admin and Keystone's `service`
role, as Nova's `[placement]` and `[neutron]` users do. This is the third
way of the client factory (`web.service_clients`); a table naming a
Keystone service user (`[placement] auth_type = "password"`, ...) takes
precedence and needs no shared database. `service_clients` builds the
factory with this mint.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Generator

import httpx

from stowage.config import Settings
from stowage.db import Database
from stowage.identity import tokens
from stowage.web.service_clients import ServiceClients

__all__ = ["ServiceToken", "service_auth", "service_clients", "SERVICE_USER", "SERVICE_ROLES"]

SERVICE_USER = "stowage-service"
SERVICE_ROLES = ("admin", "manager", "member", "reader", "service")
# Renew this long before expiry, so that a request never leaves with a dying token.
_MARGIN = datetime.timedelta(minutes=5)


class ServiceToken(httpx.Auth):
    """httpx auth: a service token of this process, issued on first use and renewed."""

    def __init__(self, db: Database, lifetime: int) -> None:
        self._db = db
        self._lifetime = lifetime
        self._lock = threading.Lock()
        self._text: str | None = None
        self._expires = datetime.datetime.min

    def _current(self, renew: bool = False) -> str:
        with self._lock:
            if renew or self._text is None or tokens.utcnow() + _MARGIN >= self._expires:
                grant = tokens.Grant(SERVICE_USER, roles=SERVICE_ROLES, methods=("service",))
                self._text, token = tokens.issue(self._db, grant, self._lifetime)
                self._expires = token.expires_at
            return self._text

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response,
                                                               None]:
        request.headers["x-auth-token"] = self._current()
        response = yield request
        if response.status_code == 401:
            request.headers["x-auth-token"] = self._current(renew=True)
            yield request


def service_auth(settings: Settings, db: Database) -> httpx.Auth | None:
    """The auth for calls to services of other processes (None: noauth2's admin token)."""
    if settings.api.auth_strategy != "builtin-identity":
        return None
    return ServiceToken(db, max(settings.identity.token_lifetime, 600))


def service_clients(settings: Settings, db: Database) -> ServiceClients:
    """The process's client factory, minting builtin-identity's token for explicit URLs."""
    return ServiceClients(settings, mint=lambda: service_auth(settings, db))
