"""/flavors/{id}/os-extra_specs: read, add or overwrite, and delete a flavor's extra specs.

Values may be sent as strings, numbers or booleans and are stored as strings,
as Nova does; placement-related keys are checked by `compute.extra_specs` at
every microversion, and from 2.86 every key is first checked against Nova's
registry of known extra specs (`compute.extra_spec_registry`).
"""

from __future__ import annotations

from typing import Any

from stowage.compute import extra_spec_registry as registry
from stowage.compute import flavors as flv
from stowage.compute.api.common import (
    API_PREFIX,
    at_least,
    authorize,
    read_body,
    validate_body,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

_KEY = "^[a-zA-Z0-9-_:. ]{1,255}$"
_VALUE = {"type": ["string", "number", "boolean"], "minLength": 0, "maxLength": 255}
_SPECS = {"type": "object", "patternProperties": {_KEY: _VALUE}, "additionalProperties": False}
CREATE_SCHEMA = {"type": "object", "properties": {"extra_specs": _SPECS},
                 "required": ["extra_specs"], "additionalProperties": False}
UPDATE_SCHEMA = {**_SPECS, "minProperties": 1, "maxProperties": 1}
REGISTRY_CHECKS = 86


def _as_strings(req: Request, specs: dict[str, Any]) -> dict[str, str]:
    """Values as the strings they are stored as. As in Nova, a number's length is checked
    here: the schema's maxLength bounds strings only, and the column holds 255. From 2.86
    each spec, in the order sent, is checked against Nova's registry."""
    texts = {key: value if isinstance(value, str) else str(value) for key, value in specs.items()}
    for key, text in texts.items():
        if len(text) > 255:
            raise HTTPError(400, "Invalid input received: extra_specs value has more than "
                                 "255 characters.")
        if at_least(req, REGISTRY_CHECKS):
            registry.validate(key, text)
    return texts


def list_specs(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-extra-specs:index")
    with req.app.db.read() as conn:
        specs = flv.extra_specs(conn, req.params["flavor_id"], req.context)
    return json_response({"extra_specs": specs})


def create_specs(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-extra-specs:create", {})
    body = validate_body(read_body(req), CREATE_SCHEMA)
    specs = _as_strings(req, body["extra_specs"])
    with req.app.db.write() as conn:
        flv.set_extra_specs(conn, req.params["flavor_id"], specs)
    return json_response({"extra_specs": specs})


def show_spec(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-extra-specs:show")
    key = req.params["key"]
    with req.app.db.read() as conn:
        value = flv.extra_spec(conn, req.params["flavor_id"], key, req.context)
    return json_response({key: value})


def update_spec(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-extra-specs:update", {})
    key = req.params["key"]
    body = validate_body(read_body(req), UPDATE_SCHEMA)
    if key not in body:
        raise HTTPError(400, "Request body and URI mismatch")
    specs = _as_strings(req, body)
    with req.app.db.write() as conn:
        flv.set_extra_specs(conn, req.params["flavor_id"], specs)
    return json_response(specs)


def delete_spec(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-extra-specs:delete", {})
    with req.app.db.write() as conn:
        flv.delete_extra_spec(conn, req.params["flavor_id"], req.params["key"])
    # Nova answers 200 with an empty body here (not 204), and clients expect it.
    return Response(200)


_ALL = API_PREFIX + "/flavors/{flavor_id}/os-extra_specs"
_ONE = _ALL + "/{key}"
ROUTES = [
    Route("GET", _ALL, list_specs),
    Route("POST", _ALL, create_specs, json_body=True),
    Route("GET", _ONE, show_spec),
    Route("PUT", _ONE, update_spec, json_body=True),
    Route("DELETE", _ONE, delete_spec),
]
