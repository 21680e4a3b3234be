"""Version discovery: `GET /` (300 Multiple Choices) and `GET /v3`, both public.

keystoneauth and the openstack CLI read these to learn that v3 is served
and where; the answers are the same whether or not tokens are checked.
"""

from __future__ import annotations

from typing import Any

from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "PUBLIC_PATHS", "version_doc"]

PUBLIC_PATHS = frozenset({"", "/", "/v3", "/v3/"})


def version_doc(req: Request) -> dict[str, Any]:
    return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": req.url("/v3/")}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


def versions(req: Request) -> Response:
    return json_response({"versions": {"values": [version_doc(req)]}}, status=300)


def v3(req: Request) -> Response:
    return json_response({"version": version_doc(req)})


ROUTES = [
    Route("GET", "/", versions),
    Route("GET", "/v3", v3),
    Route("GET", "/v3/", v3),
]
