"""The body of `POST /v3/auth/tokens`, as Keystone's auth schema accepts it.

Only the `password` and `token` methods are served; scope is a project (by id,
or by name and domain), a domain (by id or name), the system, or the string
"unscoped". Anything else is a 400 in Keystone's wording.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AUTH_SCHEMA"]

_STRING = {"type": "string", "maxLength": 255}
_DOMAIN: dict[str, Any] = {"type": "object", "properties": {"id": _STRING, "name": _STRING}}
_USER: dict[str, Any] = {
    "type": "object",
    "properties": {"id": _STRING, "name": _STRING, "domain": _DOMAIN,
                   "password": {"type": "string", "maxLength": 4096}},
}
_PROJECT: dict[str, Any] = {
    "type": "object",
    "properties": {"id": _STRING, "name": _STRING, "domain": _DOMAIN},
}
_IDENTITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "methods": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "password": {"type": "object", "properties": {"user": _USER}, "required": ["user"]},
        "token": {"type": "object", "properties": {"id": {"type": "string",
                                                          "maxLength": 1024}},
                  "required": ["id"]},
    },
    "required": ["methods"],
}
_SCOPE: dict[str, Any] = {
    "type": ["object", "string"],
    "properties": {"project": _PROJECT, "domain": _DOMAIN,
                   "system": {"type": "object", "properties": {"all": {"type": "boolean"}}}},
    "maxProperties": 1,
}
AUTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"auth": {"type": "object",
                            "properties": {"identity": _IDENTITY, "scope": _SCOPE},
                            "required": ["identity"]}},
    "required": ["auth"],
}
