"""/resource_providers/{uuid}/inventories[/{resource_class}]: list, show, create, replace, delete.

Error wording wraps the domain's message the way each upstream handler does,
because clients and the upstream suite match on it.
"""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.engine import Connection

from stowage.errors import Conflict, DomainError, NotFound
from stowage.placement import codes, providers
from stowage.placement import inventories as inv
from stowage.placement.api.common import (
    authorize,
    cache_headers,
    extract_json,
    last_modified_of,
)
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

_RC_PATTERN = "^[A-Z0-9_]+$"
_INT = {"type": "integer", "maximum": inv.MAX_INT}
# The largest single-precision float, the allocation_ratio column's range on MySQL.
_FLOAT_MAX = 3.40282e38
BASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": {**_INT, "minimum": 1},
        "reserved": {**_INT, "minimum": 0},
        "min_unit": {**_INT, "minimum": 1},
        "max_unit": {**_INT, "minimum": 1},
        "step_size": {**_INT, "minimum": 1},
        "allocation_ratio": {"type": "number", "maximum": _FLOAT_MAX},
    },
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}
POST_SCHEMA = copy.deepcopy(BASE_SCHEMA)
POST_SCHEMA["properties"]["resource_class"] = {"type": "string", "pattern": _RC_PATTERN}
POST_SCHEMA["required"] = ["total", "resource_class"]
_RECORD_SCHEMA = copy.deepcopy(BASE_SCHEMA)
_RECORD_SCHEMA["required"] = ["total"]
PUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {"type": "object", "patternProperties": {_RC_PATTERN: _RECORD_SCHEMA}},
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}


def _one(req: Request, item: inv.Inventory, generation: int, status: int = 200,
         headers: list[tuple[str, str]] | None = None) -> Response:
    body = item.values()
    if generation:  # upstream leaves it out for generation 0
        body["resource_provider_generation"] = generation
    return cache_headers(req, json_response(body, status, headers or []),
                         last_modified_of([item]))


def _all(req: Request, items: list[inv.Inventory], generation: int) -> Response:
    body = {"resource_provider_generation": generation,
            "inventories": {item.resource_class: item.values() for item in items}}
    return cache_headers(req, json_response(body), last_modified_of(items))


def _provider_or_404(req: Request, conn: Connection) -> providers.Provider:
    uuid = req.params["uuid"]
    try:
        return providers.get_provider(conn, uuid)
    except NotFound as exc:
        raise HTTPError(404, f"No resource provider with uuid {uuid} found : {exc}") from None


def _check_generation(provider: providers.Provider, given: int) -> None:
    if given != provider.generation:
        raise HTTPError(409, "resource provider generation conflict", codes.CONCURRENT_UPDATE)


def _reserved_can_be_total(req: Request) -> bool:
    return req.version.at_least(26)


def list_inventories(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:list")
    with req.app.db.read() as conn:
        provider = _provider_or_404(req, conn)
        items = inv.list_inventories(conn, provider.id)
    return _all(req, items, provider.generation)


def show_inventory(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:show")
    rc = req.params["resource_class"]
    with req.app.db.read() as conn:
        provider = _provider_or_404(req, conn)
        item = inv.get_inventory(conn, provider.id, rc)
    if item is None:
        raise HTTPError(404, f"No inventory of class {rc} for {provider.uuid}")
    return _one(req, item, provider.generation)


def create_inventory(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:create")
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        data = extract_json(req, POST_SCHEMA)
        item = inv.from_request(data["resource_class"], data)
        try:
            inv.check_capacity(provider.uuid, [item], _reserved_can_be_total(req))
            generation = inv.add_inventory(conn, provider, item)
        except Conflict as exc:
            raise HTTPError(409, f"Update conflict: {exc}", codes.CONCURRENT_UPDATE) from None
        except DomainError as exc:
            raise HTTPError(400, "Unable to create inventory for resource provider "
                                 f"{provider.uuid}: {exc}") from None
        item = inv.get_inventory(conn, provider.id, item.resource_class) or item
    path = f"/resource_providers/{provider.uuid}/inventories/{item.resource_class}"
    return _one(req, item, generation, 201, [("location", req.url(path))])


def replace_inventories(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:update")
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        data = extract_json(req, PUT_SCHEMA)
        _check_generation(provider, data["resource_provider_generation"])
        wanted = data["inventories"]
        try:
            inv.check_class_names(wanted)
            inv.check_capacity(provider.uuid, [inv.from_request(rc, fields)
                                               for rc, fields in wanted.items()],
                               _reserved_can_be_total(req))
            generation = inv.replace_inventories(conn, provider, wanted)
        except inv.NoSuchClass as exc:
            raise HTTPError(400, "Unknown resource class in inventory for resource provider "
                                 f"{provider.uuid}: {exc}") from None
        except Conflict as exc:
            raise HTTPError(409, f"update conflict: {exc}", exc.code) from None
        except DomainError as exc:
            raise HTTPError(400, "Unable to update inventory for resource provider "
                                 f"{provider.uuid}: {exc}") from None
        items = inv.list_inventories(conn, provider.id)
    return _all(req, items, generation)


def update_inventory(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:update")
    rc = req.params["resource_class"]
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        data = extract_json(req, BASE_SCHEMA)
        _check_generation(provider, data["resource_provider_generation"])
        item = inv.from_request(rc, data)
        try:
            inv.check_capacity(provider.uuid, [item], _reserved_can_be_total(req))
            generation = inv.update_inventory(conn, provider, item)
        except inv.NoInventory as exc:
            raise HTTPError(400, "No inventory record with resource class for resource "
                                 f"provider {provider.uuid}: {exc}") from None
        except Conflict as exc:
            raise HTTPError(409, f"update conflict: {exc}", codes.CONCURRENT_UPDATE) from None
        except inv.NoSuchClass:
            raise  # an unknown class in the URL is a plain 404, as upstream
        except DomainError as exc:
            raise HTTPError(400, "Unable to update inventory for resource provider "
                                 f"{provider.uuid}: {exc}") from None
        item = inv.get_inventory(conn, provider.id, rc) or item
    return _one(req, item, generation)


def delete_inventory(req: Request) -> Response:
    authorize(req, "placement:resource_providers:inventories:delete")
    rc = req.params["resource_class"]
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        try:
            inv.delete_inventory(conn, provider, rc)
        except Conflict as exc:
            # Upstream reports an in-use class with the concurrent-update code here.
            raise HTTPError(409, f"Unable to delete inventory of class {rc}: {exc}",
                            codes.CONCURRENT_UPDATE) from None
        except NotFound as exc:
            raise HTTPError(404, f"No inventory of class {rc} found for delete: {exc}") from None
    return empty_response(204)


def delete_inventories(req: Request) -> Response:
    if not req.version.at_least(5):
        raise HTTPError(405, "The method specified is not allowed for this resource.")
    authorize(req, "placement:resource_providers:inventories:delete")
    with req.app.db.write() as conn:
        provider = providers.get_provider(conn, req.params["uuid"])
        try:
            inv.replace_inventories(conn, provider, {})
        except inv.InventoryInUse:
            raise  # upstream's exception text as is, with the inventory.inuse code
        except Conflict:
            raise HTTPError(409, f"Unable to delete inventory for resource provider "
                                 f"{provider.uuid} because the inventory was updated by "
                                 "another process. Please retry your request.",
                            codes.CONCURRENT_UPDATE) from None
    return empty_response(204)


_ONE = "/resource_providers/{uuid}/inventories/{resource_class}"
ROUTES = [
    Route("GET", "/resource_providers/{uuid}/inventories", list_inventories),
    Route("POST", "/resource_providers/{uuid}/inventories", create_inventory, json_body=True),
    Route("PUT", "/resource_providers/{uuid}/inventories", replace_inventories, json_body=True),
    Route("DELETE", "/resource_providers/{uuid}/inventories", delete_inventories),
    Route("GET", _ONE, show_inventory),
    Route("PUT", _ONE, update_inventory, json_body=True),
    Route("DELETE", _ONE, delete_inventory),
]
