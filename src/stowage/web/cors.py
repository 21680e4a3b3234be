"""CORS as oslo.middleware does it: answer preflights, tag responses for allowed origins.

A preflight from an origin that is not allowed still gets 200, just without
any access-control headers, so the browser refuses it.
"""

from __future__ import annotations

from stowage.config import CorsSettings
from stowage.web.http import Request, Response

__all__ = ["Cors"]


class Cors:
    def __init__(self, settings: CorsSettings) -> None:
        self.settings = settings

    def is_preflight(self, req: Request) -> bool:
        return (req.method == "OPTIONS" and "origin" in req.headers
                and "access-control-request-method" in req.headers)

    def _allowed(self, req: Request) -> str | None:
        origin = req.headers.get("origin")
        allowed = self.settings.allowed_origin
        if origin and (origin in allowed or "*" in allowed):
            return origin
        return None

    def preflight(self, req: Request) -> Response:
        resp = Response(200)
        origin = self._allowed(req)
        method = req.headers.get("access-control-request-method", "").upper()
        if origin is None or method not in self.settings.allow_methods:
            return resp
        wanted = [h.strip().lower() for h in
                  req.headers.get("access-control-request-headers", "").split(",") if h.strip()]
        permitted = {h.lower() for h in self.settings.allow_headers}
        if any(h not in permitted for h in wanted):
            return resp
        resp.header("access-control-allow-origin", origin)
        resp.header("access-control-allow-methods", method)
        if wanted:
            resp.header("access-control-allow-headers", ",".join(wanted))
        if self.settings.allow_credentials:
            resp.header("access-control-allow-credentials", "true")
        resp.header("access-control-max-age", str(self.settings.max_age))
        resp.header("vary", "Origin")
        return resp

    def decorate(self, req: Request, resp: Response) -> None:
        origin = self._allowed(req)
        if origin is None:
            return
        resp.header("access-control-allow-origin", origin)
        if self.settings.allow_credentials:
            resp.header("access-control-allow-credentials", "true")
        if self.settings.expose_headers:
            resp.header("access-control-expose-headers", ",".join(self.settings.expose_headers))
        resp.header("vary", "Origin")
