"""Image import routes (`glance-direct`; the workflow is imports.py's)::

    GET  /v2/info/import             {"import-methods": {..., "value": ["glance-direct"]}}
    PUT  /v2/images/{id}/stage       octet-stream body -> 204, the image `uploading`
    POST /v2/images/{id}/import      {"method": {"name": "glance-direct"}} -> 202

Who may: staging and importing are changes of the image (`modify_image`, as
Glance asks). `GET /v2/info/stores` is not served (404), as Glance answers
without multiple stores. Refusals are Glance's: 415 for a stage that is not
application/octet-stream, 409 for an image in the wrong status, 400 for an
unknown method; `web-download`, `glance-download` and `copy-image` get a 400
that says why (no outside network, one store).
"""

from __future__ import annotations

from typing import Any

from stowage.image import images as img
from stowage.image import imports, policy
from stowage.image.api_data import octet_stream_only, take_data
from stowage.web.body import InvalidJSON, load_json
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_UNSERVED = {
    "web-download": "the Image service has no outside network to download from",
    "glance-download": "the Image service has no outside network to download from",
    "copy-image": "the Image service has a single store",
}


def info_import(req: Request) -> Response:
    return json_response({"import-methods": {"description": "Import methods available.",
                                             "type": "array", "value": list(imports.METHODS)}})


def stage_image(req: Request) -> Response:
    octet_stream_only(req)
    state = req.app
    with state.db.read() as conn:
        image = img.get(conn, req.params["image_id"], req.context)
    policy.check(state.enforcer, req.context, "modify_image", image)
    take_data(req, lambda chunks: imports.stage(state.db, state.settings, image, chunks))
    return empty_response(204)


def _method(req: Request) -> dict[str, Any]:
    """Glance's import body checks, in its order."""
    try:
        body = load_json(req.body)
    except InvalidJSON:
        raise HTTPError(400, "Malformed JSON in request body.") from None
    if not isinstance(body, dict) or not isinstance(body.get("method"), dict):
        raise HTTPError(400, "Import request requires a 'method' field.")
    name = body["method"].get("name")
    if name is None:
        raise HTTPError(400, "Import request requires a 'name' field.")
    if not isinstance(name, str):
        raise HTTPError(400, f"Unknown import method name '{name}'.")
    if name in _UNSERVED:
        raise HTTPError(400, f"Import method '{name}' is not available: "
                             f"{_UNSERVED[name]}. Stage the data and use 'glance-direct'.")
    if name not in imports.METHODS:
        raise HTTPError(400, f"Unknown import method name '{name}'.")
    if body.get("all_stores_must_succeed") is False:
        raise HTTPError(400, "All_stores_must_succeed can only be set with enabled_backends")
    return body


def import_image(req: Request) -> Response:
    body = _method(req)
    state = req.app
    with state.db.read() as conn:
        image = img.get(conn, req.params["image_id"], req.context)
    policy.check(state.enforcer, req.context, "modify_image", image)
    task = imports.start(state.db, image.id, req.context, body)
    imports.run(state.db, state.settings, task)
    return empty_response(202)


ROUTES = [
    Route("GET", "/v2/info/import", info_import),
    Route("PUT", "/v2/images/{image_id}/stage", stage_image, upload=True),
    Route("POST", "/v2/images/{image_id}/import", import_image, json_body=True),
]
