"""/flavors: list (brief and detailed), show, create, describe (2.55) and delete.

Listing follows Nova: admins may ask for `is_public=True|False|None` (the
literal "None" meaning every flavor); everybody else sees enabled public
flavors plus the private ones their project may use.
"""

from __future__ import annotations

import copy
from typing import Any

from stowage.compute import flavors as flv
from stowage.compute.api import flavor_views as views
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    at_least,
    authorize,
    query_param,
    read_body,
    require_version,
    validate_body,
    validate_query,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

MAX_INT = 0x7FFFFFFF
# Nova's db constant: the largest single-precision float a rxtx_factor column holds.
SQL_SP_FLOAT_MAX = 3.40282e+38
TRUE_STRINGS = ("1", "t", "true", "on", "y", "yes")
FALSE_STRINGS = ("0", "f", "false", "off", "n", "no")
_BOOLEAN = {"type": ["boolean", "string"],
            "enum": [True, False, *TRUE_STRINGS, *FALSE_STRINGS,
                     "True", "TRUE", "False", "FALSE", "ON", "On", "OFF", "Off",
                     "YES", "Yes", "NO", "No"]}
_POSITIVE = {"type": ["integer", "string"], "pattern": "^[0-9]+$", "minimum": 1,
             "maximum": MAX_INT}
_NON_NEGATIVE = {**_POSITIVE, "minimum": 0}
_DESCRIPTION = {"type": ["string", "null"], "minLength": 0, "maxLength": 65535}
CREATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"flavor": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 255},
            "id": {"type": ["string", "number", "null"], "minLength": 1, "maxLength": 255,
                   "pattern": "^(?! )[a-zA-Z0-9. _-]+(?<! )$"},
            "ram": _POSITIVE, "vcpus": _POSITIVE, "disk": _NON_NEGATIVE,
            "OS-FLV-EXT-DATA:ephemeral": _NON_NEGATIVE, "swap": _NON_NEGATIVE,
            "rxtx_factor": {"type": ["number", "string"], "pattern": r"^[0-9]+(\.[0-9]+)?$",
                            "minimum": 0, "exclusiveMinimum": True, "maximum": 3.40282e+38},
            "os-flavor-access:is_public": _BOOLEAN,
        },
        "required": ["name", "ram", "vcpus", "disk"],
        "additionalProperties": False}},
    "required": ["flavor"],
    "additionalProperties": False,
}
CREATE_SCHEMA_2_55 = copy.deepcopy(CREATE_SCHEMA)
CREATE_SCHEMA_2_55["properties"]["flavor"]["properties"]["description"] = _DESCRIPTION
UPDATE_SCHEMA_2_55 = {
    "type": "object",
    "properties": {"flavor": {"type": "object", "properties": {"description": _DESCRIPTION},
                              "required": ["description"], "additionalProperties": False}},
    "required": ["flavor"],
    "additionalProperties": False,
}
_MULTI_STRING = {"type": "string"}
INDEX_QUERY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limit": {"type": "string", "pattern": "^[0-9]*$"},
        "marker": _MULTI_STRING, "is_public": _MULTI_STRING, "minRam": _MULTI_STRING,
        "minDisk": _MULTI_STRING,
        "sort_key": {"type": "string", "enum": list(flv.SORT_KEYS)},
        "sort_dir": {"type": "string", "enum": ["asc", "desc"]},
    },
    "additionalProperties": True,
}
# 2.75: unknown query parameters are refused instead of ignored.
INDEX_QUERY_2_75 = {**INDEX_QUERY, "additionalProperties": False}


def as_bool(value: object) -> bool:
    return value is True or str(value).lower() in TRUE_STRINGS


def _check_name(name: str) -> None:
    if name != name.strip() or not name.isprintable():
        raise HTTPError(400, "An invalid 'name' value was provided. The name must be: "
                             "printable characters. Can not start or end with whitespace.")


def _check_description(description: str | None) -> None:
    if description and not all(ch.isprintable() or ch in "\t\n\r" for ch in description):
        raise HTTPError(400, "Invalid input for field/attribute description. "
                             "The description must be printable characters.")


def _integer(vals: dict[str, Any], key: str, name: str, minimum: int, default: int = 0) -> int:
    value = int(vals.get(key, default))
    if not minimum <= value <= MAX_INT:
        raise HTTPError(400, f"{name} must be >= {minimum} and <= {MAX_INT}")
    return value


def _rxtx_factor(vals: dict[str, Any]) -> float:
    """Nova's range check: the schema bounds a number, but not a string of digits,
    and 400 of them make an infinite float that no database stores."""
    value = float(vals.get("rxtx_factor", 1.0))
    if not 0 < value <= SQL_SP_FLOAT_MAX:
        raise HTTPError(400, "Invalid input received: 'rxtx_factor' argument must be a float "
                             f"between 0 and {SQL_SP_FLOAT_MAX:g}")
    return value


def _flavorid(vals: dict[str, Any]) -> str | None:
    """The id as text: the schema bounds a string's length, not a number's digits."""
    flavorid = vals.get("id")
    if flavorid is None:
        return None
    text = str(flavorid)
    if len(text) > 255:
        raise HTTPError(400, "Invalid input received: id has more than 255 characters.")
    return text


def _new_flavor(req: Request, vals: dict[str, Any]) -> flv.NewFlavor:
    _check_name(vals["name"])
    description = vals.get("description") if at_least(req, views.DESCRIPTION) else None
    _check_description(description)
    return flv.NewFlavor(
        name=vals["name"], flavorid=_flavorid(vals),
        memory_mb=_integer(vals, "ram", "memory_mb", 1),
        vcpus=_integer(vals, "vcpus", "vcpus", 1),
        root_gb=_integer(vals, "disk", "root_gb", 0),
        ephemeral_gb=_integer(vals, "OS-FLV-EXT-DATA:ephemeral", "ephemeral_gb", 0),
        swap=_integer(vals, "swap", "swap", 0),
        rxtx_factor=_rxtx_factor(vals),
        is_public=as_bool(vals.get("os-flavor-access:is_public", True)),
        description=description)


def create_flavor(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-manage:create", {})
    schema = CREATE_SCHEMA_2_55 if at_least(req, views.DESCRIPTION) else CREATE_SCHEMA
    body = validate_body(read_body(req), schema)
    new = _new_flavor(req, body["flavor"])
    with req.app.db.write() as conn:
        flavor = flv.create(conn, new)
    return json_response({"flavor": views.show(req, flavor)})


def update_flavor(req: Request) -> Response:
    require_version(req, views.DESCRIPTION)
    authorize(req, "os_compute_api:os-flavor-manage:update", {})
    description = validate_body(read_body(req), UPDATE_SCHEMA_2_55)["flavor"]["description"]
    _check_description(description)
    with req.app.db.write() as conn:
        flavor = flv.set_description(conn, req.params["flavor_id"], description)
    return json_response({"flavor": views.show(req, flavor)})


def delete_flavor(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-manage:delete", {})
    with req.app.db.write() as conn:
        flv.delete(conn, req.params["flavor_id"])
    return empty_response(202)


def show_flavor(req: Request) -> Response:
    with req.app.db.read() as conn:
        flavor = flv.get(conn, req.params["flavor_id"], req.context)
    return json_response({"flavor": views.show(req, flavor)})


def _parse_is_public(req: Request) -> bool | None:
    value = query_param(req, "is_public")
    if value is None or not req.context.is_admin:
        return True
    if value.lower() == "none":
        return None
    if value.lower() in TRUE_STRINGS + FALSE_STRINGS:
        return value.lower() in TRUE_STRINGS
    raise HTTPError(400, f"Invalid is_public filter [{value}]")


def _minimum(req: Request, name: str) -> int | None:
    value = query_param(req, name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise HTTPError(400, f"Invalid {name} filter [{value}]") from None


def _limit(req: Request) -> int:
    value = query_param(req, "limit")
    if value is None:
        return MAX_LIMIT
    try:
        return min(int(value), MAX_LIMIT)
    except ValueError:
        raise HTTPError(400, "limit param must be an integer") from None


def _list(req: Request, detailed: bool) -> Response:
    validate_query(req, INDEX_QUERY_2_75 if at_least(req, views.SWAP_AS_INT)
                   else INDEX_QUERY)
    limit = _limit(req)
    query = flv.ListQuery(is_public=_parse_is_public(req),
                          min_memory_mb=_minimum(req, "minRam"),
                          min_root_gb=_minimum(req, "minDisk"),
                          sort_key=query_param(req, "sort_key") or "flavorid",
                          sort_dir=query_param(req, "sort_dir") or "asc",
                          limit=limit, marker=query_param(req, "marker"))
    with req.app.db.read() as conn:
        found = flv.list_flavors(conn, req.context, query)
    return json_response(views.collection(req, found, detailed, limit))


def list_flavors(req: Request) -> Response:
    return _list(req, detailed=False)


def list_flavors_detail(req: Request) -> Response:
    return _list(req, detailed=True)


_ONE = API_PREFIX + "/flavors/{flavor_id}"
ROUTES = [
    Route("GET", API_PREFIX + "/flavors", list_flavors),
    Route("POST", API_PREFIX + "/flavors", create_flavor, json_body=True),
    Route("GET", API_PREFIX + "/flavors/detail", list_flavors_detail),
    Route("GET", _ONE, show_flavor),
    Route("PUT", _ONE, update_flavor, json_body=True),
    Route("DELETE", _ONE, delete_flavor),
]
