"""The JSON schemas of Glance's metadata definitions, published and enforced.

GET /v2/schemas/metadefs/{namespace,namespaces,object,objects,property,
properties,tag,tags,resource_type,resource_types} answer them, with Glance's
names (`resource_type` is the `resource_type_association` schema); the API
(api_metadefs.py, api_metadef_items.py) checks request bodies against the
same ones, so that what is published is what is enforced. A body that does
not match is 400 "Provided object does not match schema '<name>': <why>";
one naming a read-only attribute is 403 "Attribute '<name>' is read-only.", as
Glance's deserializers answer.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["SCHEMAS", "READ_ONLY", "validate", "body_of", "ROUTES"]

_STAMP = {"type": "string", "readOnly": True, "format": "date-time"}
_STAMPS = {"created_at": _STAMP, "updated_at": _STAMP}
READ_ONLY = ("created_at", "updated_at", "schema", "self")
_NAME = {"type": "string", "maxLength": 80, "minLength": 1}
_STRINGS = {"type": "array", "items": {"type": "string"}}

# What a property definition may say: a JSON schema of one value.
_PROPERTY_BODY: dict[str, Any] = {
    "name": _NAME,
    "title": {"type": "string"},
    "description": {"type": "string"},
    "operators": _STRINGS,
    "type": {"type": "string",
             "enum": ["array", "boolean", "integer", "number", "object", "string", None]},
    "required": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                 "uniqueItems": True},
    "minimum": {"type": "number"},
    "maximum": {"type": "number"},
    "maxLength": {"type": "integer", "minimum": 0},
    "minLength": {"type": "integer", "minimum": 0},
    "pattern": {"type": "string", "format": "regex"},
    "enum": {"type": "array"},
    "readonly": {"type": "boolean"},
    "default": {},
    "items": {"type": "object",
              "properties": {"type": {"type": "string", "enum": [
                  "array", "boolean", "integer", "number", "object", "string", None]},
                  "enum": {"type": "array"}}},
    "maxItems": {"type": "integer", "minimum": 0},
    "minItems": {"type": "integer", "minimum": 0},
    "uniqueItems": {"type": "boolean", "default": False},
    "additionalItems": {"type": "boolean"},
}
_PROPERTY = {"name": "property", "type": "object", "properties": _PROPERTY_BODY,
             "required": ["title", "type"], "additionalProperties": False}
_OBJECT = {"name": "object", "type": "object", "additionalProperties": False,
           "required": ["name"],
           "properties": {"name": {"type": "string", "maxLength": 80},
                          "description": {"type": "string"},
                          "required": _STRINGS,
                          "properties": {"type": "object",
                                         "additionalProperties": _PROPERTY},
                          "schema": {"type": "string", "readOnly": True},
                          "self": {"type": "string", "readOnly": True}, **_STAMPS}}
_TAG = {"name": "tag", "type": "object", "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": _NAME, **_STAMPS}}
_ASSOCIATION = {"name": "resource_type_association", "type": "object",
                "additionalProperties": False, "required": ["name"],
                "properties": {"name": _NAME,
                               "prefix": {"type": "string", "maxLength": 80},
                               "properties_target": {"type": "string", "maxLength": 80},
                               **_STAMPS}}
_NAMESPACE = {
    "name": "namespace", "type": "object", "additionalProperties": False,
    "required": ["namespace"],
    "properties": {
        "namespace": {"type": "string", "maxLength": 80},
        "display_name": {"type": "string", "maxLength": 80},
        "description": {"type": "string", "maxLength": 500},
        "visibility": {"type": "string", "enum": ["public", "private"]},
        "protected": {"type": "boolean"},
        "owner": {"type": "string", "maxLength": 255},
        "resource_type_associations": {"type": "array", "items": _ASSOCIATION},
        "properties": {"type": "object", "additionalProperties": _PROPERTY},
        "objects": {"type": "array", "items": _OBJECT},
        "tags": {"type": "array", "items": _TAG},
        "schema": {"type": "string", "readOnly": True},
        "self": {"type": "string", "readOnly": True}, **_STAMPS,
    },
}


def _collection(name: str, key: str, item: dict[str, Any]) -> dict[str, Any]:
    links = [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
             {"rel": "describedby", "href": "{schema}"}]
    return {"name": name, "properties": {key: {"type": "array", "items": item},
                                         "first": {"type": "string"},
                                         "next": {"type": "string"},
                                         "schema": {"type": "string"}},
            "links": links}


SCHEMAS: dict[str, dict[str, Any]] = {
    "namespace": _NAMESPACE,
    "namespaces": _collection("namespaces", "namespaces", _NAMESPACE),
    "object": _OBJECT,
    "objects": _collection("objects", "objects", _OBJECT),
    "property": _PROPERTY,
    "properties": {"name": "properties",
                   "properties": {"properties": {"type": "object",
                                                 "additionalProperties": _PROPERTY},
                                  "schema": {"type": "string"}}},
    "tag": _TAG,
    "tags": _collection("tags", "tags", _TAG),
    "resource_type": _ASSOCIATION,
    "resource_types": _collection("resource_type_associations",
                                  "resource_type_associations", _ASSOCIATION),
}


def validate(schema: str, body: Any) -> dict[str, Any]:
    """The body if it is an object matching `schema`, with no read-only attribute."""
    if not isinstance(body, dict):
        raise HTTPError(400, f"Provided object does not match schema '{schema}': "
                             "the body is not an object")
    for attr in READ_ONLY:
        if attr in body:
            raise HTTPError(403, f"Attribute '{attr}' is read-only.")
    found = jsonschema.Draft4Validator(SCHEMAS[schema]).iter_errors(body)
    error = next(iter(sorted(found, key=lambda e: list(e.path))), None)
    if error is not None:
        raise HTTPError(400, f"Provided object does not match schema '{schema}': "
                             f"{error.message}")
    return body


def body_of(req: Request, schema: str) -> dict[str, Any]:
    """The request's JSON body, checked against `schema`."""
    if not req.body:
        raise HTTPError(400, "Body expected in request.")
    try:
        body = load_json(req.body)
    except InvalidJSON:
        raise HTTPError(400, "Malformed JSON in request body.") from None
    return validate(schema, body)


def _show(name: str) -> Any:
    def show(req: Request) -> Response:
        return json_response(SCHEMAS[name])
    show.__doc__ = f"GET /v2/schemas/metadefs/{name}"
    return show


ROUTES = [Route("GET", f"/v2/schemas/metadefs/{name}", _show(name)) for name in SCHEMAS]
