"""POST /reshaper (1.30): replace several providers' inventories and consumers' allocations.

The body is ``{"inventories": {rp_uuid: PUT-inventories body},
"allocations": POST /allocations body (may be empty)}``; consumer types are
required from 1.38, `mappings` accepted from 1.34.
"""

from __future__ import annotations

from typing import Any

from stowage.errors import DomainError
from stowage.placement import allocations as allocs
from stowage.placement import consumers as cons
from stowage.placement import inventories as invs
from stowage.placement import reshaper
from stowage.placement.api.allocations import (
    UUID_PATTERN,
    consumer_rules,
    parse_consumers,
    post_schema,
)
from stowage.placement.api.common import authorize, extract_json
from stowage.placement.api.inventories import PUT_SCHEMA as PUT_INVENTORIES_SCHEMA
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "schema"]


def schema(minor: int) -> dict[str, Any]:
    """Upstream's reshaper schema: allocations as POST /allocations at 1.28, 1.34 or 1.38."""
    return {
        "type": "object",
        "properties": {
            "inventories": {"type": "object", "minProperties": 1,
                            "patternProperties": {UUID_PATTERN: PUT_INVENTORIES_SCHEMA},
                            "additionalProperties": False},
            "allocations": post_schema(minor if minor >= 34 else 28, min_consumers=0),
        },
        "required": ["inventories", "allocations"],
        "additionalProperties": False,
    }


def _http_error(exc: DomainError) -> HTTPError | DomainError:
    """Upstream's reshaper wording for each failure; others pass through unchanged."""
    if isinstance(exc, (allocs.UnknownClass, invs.NoSuchClass)):
        return HTTPError(400, f"malformed reshaper data: {exc.detail}")
    if isinstance(exc, invs.InventoryInUse):
        return HTTPError(409, f"update conflict: {exc.detail}", exc.code)
    if isinstance(exc, allocs.InventoryProblem):
        return HTTPError(409, f"Unable to allocate inventory: {exc.detail}")
    if isinstance(exc, cons.ConcurrentUpdate) or (
            exc.kind == "conflict" and exc.detail.startswith("Another thread")):
        return HTTPError(409, f"update conflict: {exc.detail}", exc.code)
    return exc


def reshape(req: Request) -> Response:
    authorize(req, "placement:reshaper:reshape")
    data = extract_json(req, schema(req.version.minor))
    inventories = [
        reshaper.ProviderInventories(rp_uuid, body["resource_provider_generation"],
                                     body["inventories"])
        for rp_uuid, body in data["inventories"].items()]
    try:
        for want in inventories:
            invs.check_class_names(want.inventories)
        with req.app.db.write() as conn:
            reshaper.reshape(conn, inventories, parse_consumers(data["allocations"]),
                             consumer_rules(req))
    except DomainError as exc:
        raise _http_error(exc) from None
    return empty_response(204)


ROUTES = [Route("POST", "/reshaper", reshape, min_version=30, json_body=True)]
