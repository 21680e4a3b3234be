"""Version documents at `/`, `/v2[/]` and `/v2.1[/]`, served without a token.

Clients follow the `self` href, so it is absolute and built from the request's
host and mount prefix; without `version` they would stop sending microversions.
Nova lists its legacy v2.0 endpoint beside v2.1 (SUPPORTED, no microversions);
stowage lists it and answers its version document, but serves the API itself
only under v2.1 (docs/compatibility.md).
"""

from __future__ import annotations

from typing import Any

from stowage.compute.api.common import API_PREFIX
from stowage.compute.versions import MAX_VERSION, MIN_VERSION
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

UPDATED = "2013-07-23T11:33:21Z"
LEGACY_PREFIX = "/v2"
LEGACY_UPDATED = "2011-01-21T11:33:21Z"


def _document(req: Request, prefix: str, legacy: bool) -> dict[str, Any]:
    return {
        "id": "v2.0" if legacy else "v2.1",
        "status": "SUPPORTED" if legacy else "CURRENT",
        "version": "" if legacy else MAX_VERSION,
        "min_version": "" if legacy else MIN_VERSION,
        "updated": LEGACY_UPDATED if legacy else UPDATED,
        "links": [{"rel": "self", "href": req.url(prefix + "/")},
                  {"rel": "describedby", "type": "text/html",
                   "href": "https://docs.openstack.org/"}],
        "media-types": [{"base": "application/json",
                         "type": "application/vnd.openstack.compute+json;version="
                                 + ("2" if legacy else "2.1")}],
    }


def versions(req: Request) -> Response:
    return json_response({"versions": [_document(req, LEGACY_PREFIX, True),
                                       _document(req, API_PREFIX, False)]})


def version(req: Request) -> Response:
    return json_response({"version": _document(req, API_PREFIX, False)})


def legacy_version(req: Request) -> Response:
    return json_response({"version": _document(req, LEGACY_PREFIX, True)})


PUBLIC_PATHS = frozenset({"", "/", API_PREFIX, API_PREFIX + "/",
                          LEGACY_PREFIX, LEGACY_PREFIX + "/"})
ROUTES = [
    Route("GET", "/", versions),
    Route("GET", API_PREFIX, version),
    Route("GET", API_PREFIX + "/", version),
    Route("GET", LEGACY_PREFIX, legacy_version),
    Route("GET", LEGACY_PREFIX + "/", legacy_version),
]
