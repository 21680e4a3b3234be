"""HTTP errors raised by handlers, and the titles and explanations of each status.

Handlers raise `HTTPError`; each service renders it in its own body format
(Placement's `{"errors": [...]}`, Compute's `{"badRequest": {...}}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stowage.web.http import Request, Response

__all__ = ["HTTPError", "TITLES", "EXPLANATIONS", "bad_request", "not_found", "conflict",
           "forbidden", "shorten", "VALUE_LIMIT", "DETAIL_LIMIT", "webob_error"]

# How much of a client's value an error detail may quote, and how long a whole
# detail may be: a 10 MB bad value must not come back as a 10 MB error body.
VALUE_LIMIT = 200
DETAIL_LIMIT = 4000

TITLES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict",
    413: "Request Entity Too Large", 415: "Unsupported Media Type",
    500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
}

# The first paragraph of every error detail, as clients of upstream services see it.
EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed "
         "or otherwise incorrect.",
    401: "This server could not verify that you are authorized to access the document "
         "you requested. Either you supplied the wrong credentials (e.g., bad password), "
         "or your browser does not understand how to supply the credentials required.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    405: "The method specified is not allowed for this resource.",
    406: "The resource could not be generated that was acceptable to your browser.",
    409: "There was a conflict when trying to complete your request.",
    415: "The request media type is not supported by this server.",
    500: "The server has either erred or is incapable of performing the requested "
         "operation.",
}


class HTTPError(Exception):
    """An error response: status, human detail, and an optional machine-readable code."""

    def __init__(self, status: int, detail: str, code: str | None = None,
                 headers: Mapping[str, str] | None = None,
                 extra: Mapping[str, object] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    @property
    def title(self) -> str:
        return TITLES.get(self.status, "Error")


def shorten(text: str, limit: int = VALUE_LIMIT) -> str:
    """`text` cut to `limit` characters, the cut marked with an ellipsis."""
    if len(text) <= limit:
        return text
    return text[:limit] + "..."


def bad_request(detail: str, code: str | None = None) -> HTTPError:
    return HTTPError(400, detail, code)


def not_found(detail: str, code: str | None = None) -> HTTPError:
    return HTTPError(404, detail, code)


def conflict(detail: str, code: str | None = None) -> HTTPError:
    return HTTPError(409, detail, code)


def forbidden(detail: str) -> HTTPError:
    return HTTPError(403, detail)


def webob_error(req: Request, err: HTTPError, versioned: bool) -> Response:
    """webob's JSON error body (code, title, message): what Glance answers JSON clients
    with, and what oslo.middleware's filters (e.g. `sizelimit`) answer in front of Nova
    and Keystone, outside the service's own error format."""
    from stowage.web.http import json_response

    return json_response({"code": f"{err.status} {err.title}", "title": err.title,
                          "message": err.detail}, status=err.status)
