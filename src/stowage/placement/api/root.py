"""The version document at the service root, served without a token."""

from __future__ import annotations

from stowage.placement.api.common import cache_headers
from stowage.placement.versions import VERSIONS
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route


def home(req: Request) -> Response:
    doc = {
        "id": f"v{VERSIONS[0]}",
        "max_version": VERSIONS[-1],
        "min_version": VERSIONS[0],
        "status": "CURRENT",
        # Relative "this same URL", as upstream: no proxy address to track.
        "links": [{"rel": "self", "href": ""}],
    }
    return cache_headers(req, json_response({"versions": [doc]}))


ROUTES = [Route("GET", "/", home)]
