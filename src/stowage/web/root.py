"""The root of a `stowage serve` that mounts several services: what is served, and where.

    GET /       ->  200 {"services": [one entry per mounted service], "links": [...]}
                    (a browser, Accept: text/html: the dashboard)
    /dashboard/ ->  the dashboard's page, parts, JSON routes and files
    GET /other  ->  404 naming the mounted prefixes and pointing at GET /

Each entry names the service as the catalog does (`type`, `name`), its
`endpoint` (the URL a client is configured with, `/compute/v2.1` for
compute), and `links` in OpenStack version discovery's form: `self` is the
service's own version discovery document (`GET /<service>/`), `describedby`
the upstream API reference the service follows. Every href is built from
the request's base URL, as the services' own version documents are.

The answer is chosen by the request's Accept header from `_RENDERERS`: JSON
for API clients (`application/json`, `*/*` or no Accept at all: exactly the
document above), the operators' dashboard for browsers (`text/html` named
explicitly, as every browser does). A type the client names outright wins
over a wildcard, whatever its place in the table. The dashboard's own
routes live under `/dashboard/` (`web/dashboard/`). Each answer carries an
`X-OpenStack-Request-Id` and is written to the request log, as the
services' are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stowage.context import new_request_id
from stowage.web import requestlog
from stowage.web.app import Receive, Scope, Send, send_response
from stowage.web.http import Response, json_response
from stowage.web.limits import expects_body

__all__ = ["MountedService", "RootApp", "DASHBOARD"]

# Where the dashboard's own routes are (its page is also at `/` for browsers).
DASHBOARD = "/dashboard"

# Upstream's API references, one per service type stowage speaks.
API_REFERENCES = {
    "placement": "https://docs.openstack.org/api-ref/placement/",
    "compute": "https://docs.openstack.org/api-ref/compute/",
    "image": "https://docs.openstack.org/api-ref/image/v2/",
    "network": "https://docs.openstack.org/api-ref/network/v2/",
    "identity": "https://docs.openstack.org/api-ref/identity/v3/",
}


@dataclass(frozen=True)
class MountedService:
    """One service of this process: its catalog type and name, where it is mounted, and
    its endpoint path (the mount plus a version, for compute)."""

    type: str
    name: str
    path: str
    endpoint: str

    def view(self, base: str) -> dict[str, Any]:
        links = [{"rel": "self", "href": f"{base}{self.path}/"}]
        if self.type in API_REFERENCES:
            links.append({"rel": "describedby", "type": "text/html",
                          "href": API_REFERENCES[self.type]})
        return {"type": self.type, "name": self.name, "endpoint": f"{base}{self.endpoint}",
                "links": links}


def _json(services: Sequence[MountedService], base: str) -> Response:
    return json_response({
        "services": [s.view(base) for s in services],
        "links": [{"rel": "self", "href": f"{base}/"}],
    })


# Media type -> renderer of GET /, in order of preference for `*/*`. The
# dashboard's entry renders nothing itself: `RootApp` hands the request over.
_RENDERERS: dict[str, Callable[[Sequence[MountedService], str], Response] | None] = {
    "application/json": _json,
    "text/html": None,
}


def _chosen(accept: str, renderers: Sequence[str]) -> str | None:
    """The media type of `renderers` the Accept header asks for (q=0 excludes): one
    it names outright first, then one its `type/*` covers, then the first for `*/*`."""
    if not accept.strip():
        return renderers[0]
    wanted: list[str] = []
    for item in accept.split(","):
        kind, _, params = item.strip().partition(";")
        q = params.replace(" ", "")
        if "q=0" in q and "q=0." not in q:
            continue
        wanted.append(kind.strip().lower())
    tiers: list[Callable[[str], bool]] = [
        lambda m: m in wanted, lambda m: m.split("/")[0] + "/*" in wanted,
        lambda m: "*/*" in wanted]
    for match in tiers:
        found = next((media for media in renderers if match(media)), None)
        if found is not None:
            return found
    return None


def _error(status: int, title: str, message: str,
           headers: Sequence[tuple[str, str]] = ()) -> Response:
    return json_response({"error": {"code": status, "title": title, "message": message}},
                         status=status, headers=headers)


class RootApp:
    """The ASGI app behind every path no mounted service claims (`PrefixDispatcher`);
    `dashboard` (an ASGI app, `web.dashboard.DashboardApp`) answers browsers at `/`
    and everything under `/dashboard`. Without one, `/` speaks JSON only."""

    def __init__(self, services: Sequence[MountedService], dashboard: Any = None) -> None:
        self.services = tuple(services)
        self.dashboard = dashboard

    def _media(self) -> list[str]:
        return [m for m, render in _RENDERERS.items() if render or self.dashboard is not None]

    def _for_dashboard(self, scope: Scope) -> bool:
        if self.dashboard is None:
            return False
        path = scope.get("path") or "/"
        if path == DASHBOARD or path.startswith(DASHBOARD + "/"):
            return True
        accept = next((v.decode("latin-1") for k, v in scope.get("headers", ())
                       if k.lower() == b"accept"), "")
        return path == "/" and _chosen(accept, self._media()) == "text/html"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self._for_dashboard(scope):
            await self.dashboard(scope, receive, send)
            return
        started = time.monotonic()
        resp = self.respond(scope)
        request_id = new_request_id()
        resp.headers.append(("x-openstack-request-id", request_id))
        if expects_body({k.decode("latin-1").lower(): v.decode("latin-1")
                         for k, v in scope.get("headers", ())}):
            resp.headers.append(("connection", "close"))  # its body is not read
        client = scope.get("client")
        query = scope.get("query_string", b"").decode("latin-1")
        requestlog.write(request_id, str(client[0]) if client else "-", scope["method"],
                         f"{scope.get('root_path', '')}{scope.get('path', '/')}"
                         f"{'?' + query if query else ''}", resp.status, len(resp.body), "-",
                         time.monotonic() - started)
        await send_response(send, resp)

    def respond(self, scope: Scope) -> Response:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
        base = f"{headers.get('x-forwarded-proto') or scope.get('scheme', 'http')}://{host}" \
               f"{scope.get('root_path', '')}"
        path = scope.get("path") or "/"
        if path != "/":
            mounted = ", ".join(s.path for s in self.services)
            return _error(404, "Not Found", f"Nothing is served at {path}. This stowage "
                          f"serves {mounted}; GET {base}/ lists them with their endpoints.")
        if scope["method"] not in ("GET", "HEAD"):
            return _error(405, "Method Not Allowed", f"{scope['method']} is not allowed on /; "
                          "use GET.", headers=[("allow", "GET, HEAD")])
        media = _chosen(headers.get("accept", ""), self._media())
        render = _RENDERERS.get(media or "")
        if render is None:
            return _error(406, "Not Acceptable",
                          f"Only {' or '.join(self._media())} is provided at /.")
        resp = render(self.services, base)
        if self.dashboard is not None:
            resp.headers.append(("vary", "Accept"))
        return resp
