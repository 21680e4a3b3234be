"""Bodies of the directory writes, as Keystone's schemas accept them.

Names are 1-64 (projects) or 1-255 (users, roles) characters with at least
one that is not whitespace; ids are Keystone's `id_string` (letters, digits,
dashes, up to 64). Keystone lets a project or a user carry extra attributes;
they are accepted and not stored (docs/compatibility.md). Updates need at
least one attribute (`minProperties`), as Keystone's do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROJECT_CREATE", "PROJECT_UPDATE", "USER_CREATE", "USER_UPDATE", "ROLE_CREATE",
           "PASSWORD_CHANGE"]

_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 64,
                       "pattern": "^[a-zA-Z0-9-]+$"}
_NULLABLE_ID: dict[str, Any] = {**_ID, "type": ["string", "null"]}
_DESCRIPTION: dict[str, Any] = {"type": ["string", "null"], "maxLength": 16000}
_ENABLED: dict[str, Any] = {"type": "boolean"}
# Resource options Keystone knows are not served: only an empty object passes.
_OPTIONS: dict[str, Any] = {"type": "object", "maxProperties": 0}
_PASSWORD: dict[str, Any] = {"type": ["string", "null"], "maxLength": 4096}


def _name(longest: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": longest, "pattern": r"\S"}


def _wrapped(key: str, properties: dict[str, Any], required: list[str],
             least: int = 0) -> dict[str, Any]:
    inner: dict[str, Any] = {"type": "object", "properties": properties,
                             "additionalProperties": True}
    if required:
        inner["required"] = required
    if least:
        inner["minProperties"] = least
    return {"type": "object", "properties": {key: inner}, "required": [key]}


_PROJECT: dict[str, Any] = {
    "name": _name(64), "description": _DESCRIPTION, "enabled": _ENABLED,
    "domain_id": _NULLABLE_ID, "parent_id": _NULLABLE_ID, "is_domain": {"type": "boolean"},
    "options": _OPTIONS, "tags": {"type": "array", "maxItems": 0},
}
PROJECT_CREATE = _wrapped("project", _PROJECT, ["name"])
PROJECT_UPDATE = _wrapped("project", _PROJECT, [], least=1)

_USER: dict[str, Any] = {
    "name": _name(255), "password": _PASSWORD, "description": _DESCRIPTION,
    "enabled": _ENABLED, "domain_id": _ID, "default_project_id": _NULLABLE_ID,
    "email": {"type": ["string", "null"], "maxLength": 255}, "options": _OPTIONS,
    "federated": {"type": "array", "maxItems": 0},
}
USER_CREATE = _wrapped("user", _USER, ["name"])
USER_UPDATE = _wrapped("user", _USER, [], least=1)

ROLE_CREATE = _wrapped("role", {"name": _name(255), "description": _DESCRIPTION,
                                "domain_id": {"type": "null"}, "options": _OPTIONS},
                       ["name"])

PASSWORD_CHANGE = _wrapped("user", {"password": {"type": "string", "maxLength": 4096},
                                    "original_password": {"type": "string",
                                                          "maxLength": 4096}},
                           ["password", "original_password"])
