"""The dashboard's routes, as an ASGI app mounted by the root (`web/root.py`).

    GET  /                          the page (the root hands browsers here)
    GET  /dashboard/                the page
    GET  /dashboard/part/<section>  one section's HTML, for the live refresh
    GET  /dashboard/api/<section>   one section's data as JSON (hosts, servers:
                                    page, per_page and filters; moves; audit;
                                    capacity)
    GET  /dashboard/drain/<host>    the host's dry-run drain plan (?verbose=1)
    GET  /dashboard/drain?host=X    the same (the page's form), redirected there
    GET  /dashboard/api/drain-plan/<host>   the plan as JSON
    GET  /dashboard/static/<file>   the script and the style sheet (package data)
    GET  /dashboard/login           the sign-in form (builtin-identity, keystone)
    POST /dashboard/login           password -> token -> cookie, CSRF-checked
    POST /dashboard/logout          forget the cookie, CSRF-checked

Every route but the static files and the sign-in form passes `access.check`
first. Handlers run in a worker thread (they read databases).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool

from stowage.context import new_request_id
from stowage.web import requestlog
from stowage.web.app import Receive, Scope, Send, send_response
from stowage.web.dashboard import access, render
from stowage.web.dashboard.audit_view import AuditView
from stowage.web.dashboard.hosts import host_page
from stowage.web.dashboard.login import LoginFailed, token_for
from stowage.web.dashboard.moves import moves_in_progress
from stowage.web.dashboard.paging import BadQuery
from stowage.web.dashboard.plans import CapacityView, NoPlan, plan_for
from stowage.web.dashboard.render_plans import drain_href
from stowage.web.dashboard.servers import server_page
from stowage.web.dashboard.world import World
from stowage.web.http import Request, Response, json_response
from stowage.web.limits import BodyLimits, BodyRefused, ClientGone, read_body

__all__ = ["DashboardApp", "PREFIX", "REFRESH_MS"]

LOG = logging.getLogger(__name__)

PREFIX = "/dashboard"
# How often the page asks for its sections again.
REFRESH_MS = 3000
_MAX_FORM = 16_384
_STATIC = {"dashboard.js": "text/javascript; charset=utf-8",
           "dashboard.css": "text/css; charset=utf-8"}
# A page made of our own files only: no inline script, nothing from elsewhere, no framing.
_HTML_HEADERS = [
    ("content-type", "text/html; charset=utf-8"), ("cache-control", "no-store"),
    ("content-security-policy", "default-src 'self'; img-src 'self' data:; "
     "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
    ("x-frame-options", "DENY"), ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin")]


def _html(text: str, status: int = 200, headers: list[tuple[str, str]] | None = None
          ) -> Response:
    return Response(status, text.encode(), [*_HTML_HEADERS, *(headers or [])])


def _redirect(to: str, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(303, b"", [("location", to), ("cache-control", "no-store"),
                               *(headers or [])])


def _cookie(name: str, value: str, secure: bool, max_age: int | None = None) -> tuple[str, str]:
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return ("set-cookie", "; ".join(parts))


def _sub(query: Mapping[str, str], name: str) -> dict[str, str]:
    """The part of the page's query meant for section `name` (`hosts_page=2` -> page=2)."""
    prefix = name + "_"
    return {k[len(prefix):]: v for k, v in query.items() if k.startswith(prefix) and v}


class DashboardApp:
    def __init__(self, world: World) -> None:
        self.world = world
        self.audit = AuditView(world)
        self.capacity = CapacityView(world)
        # A sign-in form is small: the services' reader, held to the form's size.
        self._form_limits = BodyLimits(_MAX_FORM, _MAX_FORM, world.settings.api.body_timeout)
        self._data: dict[str, Callable[[Mapping[str, str]], dict[str, Any]]] = {
            "hosts": lambda q: host_page(world, q),
            "servers": lambda q: server_page(world, q),
            "moves": lambda q: moves_in_progress(world),
            "audit": lambda q: self.audit.fresh() if q.get("wait") else self.audit.latest(),
            "capacity": lambda q: (self.capacity.fresh() if q.get("wait")
                                   else self.capacity.latest()),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.monotonic()
        req = _request(scope)
        try:
            if req.method == "POST":
                req.body, _ = await read_body(receive, req.headers, self._form_limits)
            resp = await run_in_threadpool(self._answer, req)
        except ClientGone:
            return
        except BodyRefused as exc:
            # The rest of the body stays unread: answer, then close the connection.
            resp = json_response({"error": exc.detail}, exc.status,
                                 headers=[("connection", "close")])
        request_id = new_request_id()
        resp.headers.append(("x-openstack-request-id", request_id))
        query = f"?{req.query_string}" if req.query_string else ""
        requestlog.write(request_id, req.remote_addr, req.method, f"{req.path}{query}",
                         resp.status, len(resp.body), "-", time.monotonic() - started)
        await send_response(send, resp)

    def _answer(self, req: Request) -> Response:
        """`respond`, with an unexpected error a logged 500 rather than a dropped request."""
        try:
            return self.respond(req)
        except Exception:
            LOG.exception("dashboard: unexpected error in %s %s", req.method, req.path)
            return json_response({"error": "An unexpected error occurred; see the service "
                                  "log."}, 500)

    def respond(self, req: Request) -> Response:
        path = req.path
        if path.startswith(PREFIX + "/static/") and req.method in ("GET", "HEAD"):
            return _static(path.removeprefix(PREFIX + "/static/"))
        if path == PREFIX + "/login":
            return self._login(req)
        if path == PREFIX + "/logout":
            if req.method == "POST":
                return self._logout(req)
            return json_response({"error": "sign out with POST"}, 405, headers=[("allow", "POST")])
        if req.method not in ("GET", "HEAD"):
            return json_response({"error": f"{req.method} is not allowed here"}, 405,
                                 headers=[("allow", "GET, HEAD")])
        wants_json = path.startswith(PREFIX + "/api/")
        verdict = access.check(self.world, req)
        if verdict.context is None:
            return self._refused(verdict, wants_json)
        try:
            return self._route(req, verdict)
        except BadQuery as exc:
            return json_response({"error": str(exc)}, 400)

    def _route(self, req: Request, verdict: access.Verdict) -> Response:
        path, query = req.path, dict(req.query)
        if path in ("/", PREFIX, PREFIX + "/"):
            return self._page(req, verdict, query)
        kind, _, name = path.removeprefix(PREFIX + "/").partition("/")
        if kind == "drain" or (kind == "api" and name.startswith("drain-plan/")):
            return self._drain(req, verdict, kind, name.removeprefix("drain-plan/"), query)
        if name in self._data and kind == "api":
            return json_response(self._data[name](query))
        if name in self._data and kind == "part":
            return _html(self._part(name, query))
        return json_response({"error": f"Nothing is served at {path}."}, 404)

    def _drain(self, req: Request, verdict: access.Verdict, kind: str, host: str,
               query: Mapping[str, str]) -> Response:
        """A host's dry-run plan: the page, or its JSON twin (the Compute route's JSON)."""
        if kind == "drain" and not host:
            if not query.get("host", "").strip():
                raise BadQuery("name the host to plan: /dashboard/drain/<host>")
            return _redirect(drain_href(query["host"].strip()))
        unknown = set(query) - {"verbose"}
        if unknown:
            raise BadQuery(f"unknown filter(s): {', '.join(sorted(unknown))}")
        verbose = query.get("verbose", "") in ("1", "true", "yes")
        try:
            plan = plan_for(self.world, host, verbose)
        except NoPlan as exc:
            if kind == "api":
                return json_response({"error": str(exc)}, exc.status)
            return _html(render.message_page("No drain plan", str(exc)), exc.status)
        if kind == "api":
            return json_response({"drain": plan})
        ctx = verdict.context
        who = f"{ctx.user_id} (project {ctx.project_id})" if ctx else ""
        return _html(render.drain_page(plan, who, self._csrf(req), verbose))

    def _csrf(self, req: Request) -> str | None:
        """The sign-out form's value (the cookie the page set), None under noauth2."""
        if self.world.settings.api.auth_strategy == "noauth2":
            return None
        return access.cookies(req.headers).get(access.CSRF_COOKIE)

    def _part(self, name: str, query: Mapping[str, str]) -> str:
        data = self._data[name](query)
        if name in ("hosts", "servers"):
            return getattr(render, name)(data, query)  # type: ignore[no-any-return]
        return getattr(render, name)(data)  # type: ignore[no-any-return]

    def _page(self, req: Request, verdict: access.Verdict, query: Mapping[str, str]
              ) -> Response:
        parts = {}
        for name in render.SECTIONS:
            sub = _sub(query, name)
            parts[name] = render.section(name, self._part(name, sub), sub)
        ctx = verdict.context
        who = f"{ctx.user_id} (project {ctx.project_id})" if ctx else ""
        headers: list[tuple[str, str]] = [("vary", "Accept, Cookie")]
        csrf = None
        if self.world.settings.api.auth_strategy != "noauth2":
            csrf = access.cookies(req.headers).get(access.CSRF_COOKIE)
            if not csrf:
                csrf = access.new_csrf()
                headers.append(_cookie(access.CSRF_COOKIE, csrf, _secure(req)))
        return _html(render.page(parts, who, csrf, REFRESH_MS), headers=headers)

    def _refused(self, verdict: access.Verdict, wants_json: bool) -> Response:
        if wants_json:
            return json_response({"error": verdict.reason}, verdict.status)
        if verdict.status == 401:
            return _redirect(PREFIX + "/login")
        return _html(render.message_page("Not allowed", verdict.reason), verdict.status)

    def _login(self, req: Request) -> Response:
        if self.world.settings.api.auth_strategy == "noauth2":
            return _redirect("/")
        if req.method == "GET":
            csrf = access.new_csrf()
            return _html(render.login_page(csrf),
                         headers=[_cookie(access.CSRF_COOKIE, csrf, _secure(req))])
        if req.method != "POST":
            return json_response({"error": "use GET or POST"}, 405,
                                 headers=[("allow", "GET, POST")])
        form = dict(parse_qsl(req.body.decode("utf-8", "replace"), keep_blank_values=True))
        if not access.csrf_ok(req, form):
            return _html(render.message_page("Refused", "The form is stale: load the sign-in "
                                             "page again."), 403)
        try:
            token = token_for(self.world, req, form.get("username", ""),
                              form.get("password", ""), form.get("project", ""))
        except LoginFailed as exc:
            page = render.login_page(form["csrf"], str(exc), form.get("username", ""),
                                     form.get("project", ""))
            return _html(page, 401)
        return _redirect("/", [_cookie(access.TOKEN_COOKIE, token, _secure(req))])

    def _logout(self, req: Request) -> Response:
        form = dict(parse_qsl(req.body.decode("utf-8", "replace"), keep_blank_values=True))
        if not access.csrf_ok(req, form):
            return _html(render.message_page("Refused", "The form is stale."), 403)
        return _redirect(PREFIX + "/login",
                         [_cookie(access.TOKEN_COOKIE, "", _secure(req), max_age=0)])


def _secure(req: Request) -> bool:
    return req.base_url.startswith("https://")


def _static(name: str) -> Response:
    if name not in _STATIC:
        return json_response({"error": "not found"}, 404)
    body = resources.files("stowage.web.dashboard").joinpath("static", name).read_bytes()
    return Response(200, body, [("content-type", _STATIC[name]),
                                ("cache-control", "no-cache"),
                                ("x-content-type-options", "nosniff")])


def _request(scope: Scope) -> Request:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    host = headers.get("host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
    scheme = headers.get("x-forwarded-proto") or scope.get("scheme", "http")
    client = scope.get("client")
    return Request(method=scope["method"], path=scope.get("path") or "/",
                   query_string=scope.get("query_string", b"").decode("latin-1"),
                   headers=headers, body=b"", base_url=f"{scheme}://{host}",
                   remote_addr=str(client[0]) if client else "-")
