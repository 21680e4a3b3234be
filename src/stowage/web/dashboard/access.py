"""Who may see the dashboard: the APIs' authentication and an admin role, nothing looser.

    noauth2            only from a loopback address (and with no proxy header),
                       unless `[api] dashboard_beyond_loopback = true`; a browser
                       sends no token and is the `admin` of noauth2, a client that
                       sends `X-Auth-Token` is whoever that token names
    builtin-identity   a token: `X-Auth-Token`, or the HttpOnly cookie the login
    keystone           form set; no token -> the login form (401 for JSON routes)

Then the caller must hold the admin role (403 otherwise), as the APIs' admin
routes ask. The login cookie is SameSite=Strict and HttpOnly; every POST
(login, logout) must carry the CSRF value the form was given, which is also
in a SameSite=Strict cookie (double submit), so another site can neither read
the dashboard nor act through a signed-in browser. No GET changes anything.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie

from stowage.context import RequestContext
from stowage.web.auth import noauth2
from stowage.web.dashboard.world import World
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["Verdict", "check", "cookies", "TOKEN_COOKIE", "CSRF_COOKIE", "new_csrf",
           "csrf_ok", "is_loopback"]

TOKEN_COOKIE = "stowage_dashboard_token"
CSRF_COOKIE = "stowage_dashboard_csrf"
_PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


@dataclass(frozen=True)
class Verdict:
    """Either the caller (`context`) or why not: 401 (sign in) or 403 (refused)."""

    context: RequestContext | None
    status: int = 200
    reason: str = ""


def cookies(headers: Mapping[str, str]) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no cookie at all
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _local(req: Request) -> bool:
    """From this machine, not relayed: a proxy on loopback would make every client local."""
    return is_loopback(req.remote_addr) and not any(h in req.headers for h in _PROXY_HEADERS)


def check(world: World, req: Request) -> Verdict:
    strategy = world.settings.api.auth_strategy
    if strategy == "noauth2":
        if not (_local(req) or world.settings.api.dashboard_beyond_loopback):
            return Verdict(None, 403, "With auth_strategy noauth2 the dashboard answers only "
                           "from this machine (loopback); set [api] "
                           "dashboard_beyond_loopback = true to open it.")
        ctx = noauth2(_with_token(req, req.headers.get("x-auth-token") or "admin"))
    else:
        token = req.headers.get("x-auth-token") or cookies(req.headers).get(TOKEN_COOKIE)
        try:
            ctx = world.authenticate(_with_token(req, token)) if token else None
        except HTTPError as exc:  # Keystone unreachable: 503, as the APIs answer
            return Verdict(None, exc.status, exc.detail)
        if ctx is None:
            return Verdict(None, 401, "Sign in, or send an X-Auth-Token.")
    if ctx is None or not ctx.is_admin:
        return Verdict(None, 403, "The dashboard is for administrators (the admin role).")
    return Verdict(ctx)


def _with_token(req: Request, token: str | None) -> Request:
    headers = {k: v for k, v in req.headers.items() if k != "x-auth-token"}
    if token:
        headers["x-auth-token"] = token
    return Request(method=req.method, path=req.path, query_string=req.query_string,
                   headers=headers, body=b"", base_url=req.base_url, root_path=req.root_path,
                   remote_addr=req.remote_addr)


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


def csrf_ok(req: Request, form: Mapping[str, str]) -> bool:
    """The form's CSRF value equals the cookie's (both set by the dashboard's GET)."""
    cookie = cookies(req.headers).get(CSRF_COOKIE, "")
    given = form.get("csrf", "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), given.encode())
