"""Version documents at `/` and `/v2.1[/]`, served without a token.

Clients follow the `self` href, so it is absolute and built from the request's
host and mount prefix; without `version` they would stop sending microversions.
"""

from __future__ import annotations

from typing import Any

from stowage.compute.api.common import API_PREFIX
from stowage.compute.versions import MAX_VERSION, MIN_VERSION
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

UPDATED = "2013-07-23T11:33:21Z"


def _version(req: Request) -> dict[str, Any]:
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": MAX_VERSION,
        "min_version": MIN_VERSION,
        "updated": UPDATED,
        "links": [{"rel": "self", "href": req.url(API_PREFIX + "/")},
                  {"rel": "describedby", "type": "text/html",
                   "href": "https://docs.openstack.org/"}],
        "media-types": [{"base": "application/json",
                         "type": "application/vnd.openstack.compute+json;version=2.1"}],
    }


def versions(req: Request) -> Response:
    return json_response({"versions": [_version(req)]})


def version(req: Request) -> Response:
    return json_response({"version": _version(req)})


PUBLIC_PATHS = frozenset({"", "/", API_PREFIX, API_PREFIX + "/"})
ROUTES = [
    Route("GET", "/", versions),
    Route("GET", API_PREFIX, version),
    Route("GET", API_PREFIX + "/", version),
]
