"""Helpers every Placement handler uses: JSON bodies, query validation, caching headers.

Message texts match upstream Placement's, because clients and the upstream
test suite match on them.
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from email.utils import format_datetime
from typing import Any

import jsonschema

from stowage.placement import codes
from stowage.timeutil import utcnow
from stowage.web import compiled_schema, schema_report
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response

__all__ = ["extract_json", "validate_json", "validate_query", "cache_headers", "utcnow",
           "authorize", "last_modified_of", "path_uuid"]

_FORMATS = jsonschema.FormatChecker()


@_FORMATS.checks("uuid")  # type: ignore[untyped-decorator]
def _is_uuid(value: object) -> bool:
    """Upstream accepts any 32 hex digits with or without dashes, as python's UUID does."""
    if not isinstance(value, str):
        return True
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


def authorize(req: Request, action: str, target: Mapping[str, object] | None = None) -> None:
    req.app.enforcer.authorize(action, req.context, target)


def _validate(data: Any, schema: Mapping[str, Any]) -> None:
    """jsonschema's verdict and first error, answered by generated code when it accepts."""
    compiled_schema.compiled(schema, _FORMATS).validate(data)


def validate_json(data: Any, schema: Mapping[str, Any]) -> Any:
    """Schema-check a decoded body; the 400 carries jsonschema's full report, as upstream."""
    try:
        _validate(data, schema)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, f"JSON does not validate: {schema_report.verbose(exc)}") from None
    return data


def extract_json(req: Request, schema: Mapping[str, Any]) -> Any:
    """The body decoded by the shared loader (its limits, see web.body), then schema-checked."""
    try:
        data = load_json(req.body)
    except InvalidJSON as exc:
        raise HTTPError(400, f"Malformed JSON: {exc}") from None
    return validate_json(data, schema)


def validate_query(req: Request, schema: Mapping[str, Any]) -> dict[str, str]:
    """Validate single-valued query parameters; returns them as a dict."""
    values: dict[str, str] = {}
    for key, value in req.query:
        values[key] = value
    try:
        _validate(values, schema)
    except jsonschema.ValidationError as exc:
        raise HTTPError(400, "Invalid query string parameters: "
                             f"{schema_report.verbose(exc)}") from None
    return values


def path_uuid(req: Request, name: str = "uuid") -> str:
    return req.params[name]


def last_modified_of(rows: Iterable[Any]) -> datetime.datetime | None:
    """The newest updated_at/created_at of the rows, or None when there are none."""
    newest: datetime.datetime | None = None
    for row in rows:
        stamp = getattr(row, "updated_at", None) or getattr(row, "created_at", None)
        if stamp is not None and (newest is None or stamp > newest):
            newest = stamp
    return newest


def cache_headers(req: Request, resp: Response,
                  last_modified: datetime.datetime | None = None) -> Response:
    """From 1.15 every GET carries last-modified and cache-control: no-cache."""
    if req.version.at_least(15):
        stamp = (last_modified or utcnow()).replace(tzinfo=datetime.UTC)
        resp.header("last-modified", format_datetime(stamp, usegmt=True))
        resp.header("cache-control", "no-cache")
    return resp


def conflict_generation(what: str = "resource provider") -> HTTPError:
    return HTTPError(409, f"{what} generation conflict", codes.CONCURRENT_UPDATE)
