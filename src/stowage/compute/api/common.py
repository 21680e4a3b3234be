"""Helpers every Compute handler uses: bodies, Nova-worded validation errors, links.

Messages follow Nova's wording ("Invalid input for field/attribute ..."),
because clients print them and operators search for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import jsonschema

from stowage.web import schema_report
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError, shorten
from stowage.web.http import Request
from stowage.web.microversion import Version

__all__ = ["API_PREFIX", "authorize", "allowed", "at_least", "require_version", "read_body",
           "validate_body", "query_param", "validate_query", "links", "next_link",
           "MAX_LIMIT", "BOOLEAN", "as_bool"]

API_PREFIX = "/v2.1"
# Nova's [api] max_limit: the most items one page holds.
MAX_LIMIT = 1000
# Nova's parameter_types.boolean: JSON booleans and these strings, in bodies.
_TRUE = ("True", "TRUE", "true", "1", "ON", "On", "on", "YES", "Yes", "yes")
_FALSE = ("False", "FALSE", "false", "0", "OFF", "Off", "off", "NO", "No", "no")
BOOLEAN: dict[str, Any] = {"type": ["boolean", "string"], "enum": [True, False, *_TRUE, *_FALSE]}


def as_bool(value: object) -> bool:
    """What a value `BOOLEAN` admitted means (a query string's too: its strings are the same)."""
    return value is True or value in _TRUE


def authorize(req: Request, action: str, target: Mapping[str, object] | None = None) -> None:
    req.app.enforcer.authorize(action, req.context, target)


def allowed(req: Request, action: str) -> bool:
    return bool(req.app.enforcer.allowed(action, req.context))


def at_least(req: Request, minor: int) -> bool:
    return req.version >= Version(2, minor)


def require_version(req: Request, minor: int) -> None:
    """A method that appears at 2.`minor` does not exist below it: 404, as in Nova."""
    if not at_least(req, minor):
        raise HTTPError(404, "The resource could not be found.")


def read_body(req: Request) -> Any:
    """The body through the shared loader (web.body): unparsable is Nova's "Malformed
    request body"; a string no database can store (NUL, lone surrogate) is named
    like a field that failed validation."""
    try:
        return load_json(req.body)
    except InvalidJSON as exc:
        if not exc.path:
            raise HTTPError(400, "Malformed request body") from None
        raise HTTPError(400, f"Invalid input for field/attribute {exc.path}. "
                             f"{exc.reason}") from None


def _reason(err: jsonschema.ValidationError, what: str) -> str:
    """Nova's wording; the value and jsonschema's message (which quotes it) are bounded."""
    path = "/".join(str(p) for p in err.absolute_path)
    value = err.instance if isinstance(err.instance, str) else schema_report.quoted(err.instance)
    return (f"Invalid input for {what} {path}. Value: {shorten(value)}. "
            f"{schema_report.message(err)}")


def validate_body(data: Any, schema: Mapping[str, Any]) -> Any:
    try:
        jsonschema.Draft4Validator(schema).validate(data)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, _reason(exc, "field/attribute")) from None
    return data


def query_param(req: Request, name: str) -> str | None:
    """The last value given for `name`, as webob's MultiDict answers."""
    values = req.query_values(name)
    return values[-1] if values else None


def validate_query(req: Request, schema: Mapping[str, Any]) -> None:
    values = {key: query_param(req, key) for key, _ in req.query}
    try:
        jsonschema.Draft4Validator(schema).validate(values)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, _reason(exc, "query parameters")) from None


def links(req: Request, collection: str, ident: str) -> list[dict[str, str]]:
    """Nova's self (versioned) and bookmark (unversioned) links, absolute."""
    return [{"rel": "self", "href": req.url(f"{API_PREFIX}/{collection}/{ident}")},
            {"rel": "bookmark", "href": req.url(f"/{collection}/{ident}")}]


def next_link(req: Request, collection: str, marker: str) -> list[dict[str, str]]:
    params = [(k, v) for k, v in req.query if k != "marker"] + [("marker", marker)]
    href = req.url(f"{API_PREFIX}/{collection}") + "?" + urlencode(params)
    return [{"rel": "next", "href": href}]
