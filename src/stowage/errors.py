"""Domain errors: what went wrong, in words and a stable code, without HTTP.

Each service maps `kind` to a status code: not_found -> 404, conflict -> 409,
invalid -> 400, forbidden -> 403.
"""

from __future__ import annotations

__all__ = ["DomainError", "NotFound", "Conflict", "Invalid", "Forbidden"]


class DomainError(Exception):
    kind = "invalid"

    def __init__(self, detail: str, code: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code


class NotFound(DomainError):
    kind = "not_found"


class Conflict(DomainError):
    kind = "conflict"


class Invalid(DomainError):
    kind = "invalid"


class Forbidden(DomainError):
    kind = "forbidden"
