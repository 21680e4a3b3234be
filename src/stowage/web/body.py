"""The one JSON body loader of every service (Placement, Compute, Image) and its limits.

A body that a database or a validator cannot take must be refused here, as a
400 in the service's own wording, rather than fail later as a 500:

- bytes that are not JSON (or not UTF-8), and the non-standard constants
  NaN / Infinity that Python's parser would otherwise accept;
- nesting deeper than `MAX_DEPTH`: the parser and jsonschema both recurse,
  and Python's recursion limit (about 1000 frames) turns a deep body into a
  RecursionError;
- a lone UTF-16 surrogate (`"\\ud800"`) in any string or key: it decodes to a
  Python string that no UTF-8 database driver can encode;
- a NUL character in any string or key: PostgreSQL text cannot hold one.

Callers catch `InvalidJSON` and word the 400 the way their service does.

Speed: a POST /allocations of 10,000 consumers is a 2.5 MB body, and the
walk over every string and key cost four times the parse. The walk only
finds something when the raw bytes say it can: a NUL only comes from a
``\\u0000`` escape (raw control characters are not JSON), a lone surrogate
from a ``\\uD800``-``\\uDFFF`` escape or from the bytes ``ED A0``-``ED BF``
(the parser decodes UTF-8 with ``surrogatepass``). A UTF-8 body with none of
these -- nearly every body -- has its depth checked over the containers
alone; any other body gets the full walk, whose messages name the place.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stowage.web.errors import shorten

__all__ = ["InvalidJSON", "load_json", "MAX_DEPTH", "unstorable"]

# Far deeper than any real request (Placement's reshaper and Compute's
# block_device_mapping_v2 nest 4-5 levels) and far below the recursion limit.
MAX_DEPTH = 32

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class InvalidJSON(ValueError):
    """The body cannot be accepted; `reason` says why, `path` where (may be empty)."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{reason} at {path}" if path else reason)
        self.reason = reason
        self.path = path


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored (NUL or lone surrogate), or None when it can."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "NUL character not allowed"
    return "lone surrogate not allowed (invalid Unicode)"


def _path(parts: tuple[object, ...]) -> str:
    return "/".join(shorten(str(p), 40) for p in parts)


def _check_tree(data: Any) -> None:
    """Walk the decoded body without recursion: depth, and every string and key."""
    stack: list[tuple[Any, tuple[object, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict | list) and len(where) >= MAX_DEPTH:
            raise InvalidJSON(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            why = unstorable(value)
            if why:
                raise InvalidJSON(why, _path(where))
        elif isinstance(value, dict):
            for key, item in value.items():
                why = unstorable(key)
                if why:
                    raise InvalidJSON(f"{why} in a key", _path(where))
                stack.append((item, (*where, key)))
        elif isinstance(value, list):
            stack.extend((item, (*where, index)) for index, item in enumerate(value))


def _check_depth(data: Any) -> None:
    """`_check_tree`'s depth rule alone, level by level over the containers."""
    level = [data] if isinstance(data, dict | list) else []
    depth = 0
    while level:
        if depth >= MAX_DEPTH:
            raise InvalidJSON(f"nested deeper than {MAX_DEPTH} levels")
        level = [item for value in level
                 for item in (value.values() if isinstance(value, dict) else value)
                 if isinstance(item, dict | list)]
        depth += 1


# Escapes that can decode to a NUL or a surrogate (a valid pair too: then the
# full walk decides).
_RISKY_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _walk_needed(raw: bytes | str) -> bool:
    """Whether the decoded body may hold a string `unstorable` refuses."""
    if not isinstance(raw, bytes) or json.detect_encoding(raw) != "utf-8":
        return True
    return b"\xed" in raw or _RISKY_ESCAPE.search(raw) is not None


def load_json(raw: bytes | str) -> Any:
    """Decode a request body, or raise InvalidJSON (see the module docstring)."""
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise InvalidJSON(shorten(str(exc))) from None
    if _walk_needed(raw):
        _check_tree(data)
    else:
        _check_depth(data)
    return data
