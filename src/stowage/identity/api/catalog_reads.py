"""The catalog as resources: `/v3/services`, `/v3/endpoints`, `/v3/regions`.

Services and endpoints are for the admin role (Keystone's
`identity:list_services` / `list_endpoints`); regions for any valid token.
Filters: `type` and `name` on services; `interface`, `service_id` and
`region_id` on endpoints.
"""

from __future__ import annotations

from typing import Any

from stowage.identity.api.common import (
    caller,
    catalog_of,
    filtered,
    is_admin,
    listing,
    require,
)
from stowage.identity.catalog import Endpoint, Service
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _service(req: Request, service: Service) -> dict[str, Any]:
    return {**service.view(), "links": {"self": req.url(f"/v3/services/{service.id}")}}


def _endpoint(req: Request, endpoint: Endpoint) -> dict[str, Any]:
    return {**endpoint.view(), "links": {"self": req.url(f"/v3/endpoints/{endpoint.id}")}}


def _region(req: Request, region: str) -> dict[str, Any]:
    return {"id": region, "description": "", "parent_region_id": None,
            "links": {"self": req.url(f"/v3/regions/{region}")}}


def list_services(req: Request) -> Response:
    require(is_admin(caller(req)), "list_services")
    found = filtered(req, catalog_of(req).services, ("type", "name"))
    return listing(req, "services", found, _service)


def get_service(req: Request) -> Response:
    require(is_admin(caller(req)), "get_service")
    found = [s for s in catalog_of(req).services if s.id == req.params["service_id"]]
    if not found:
        raise HTTPError(404, f"Could not find service: {req.params['service_id']}.")
    return json_response({"service": _service(req, found[0])})


def list_endpoints(req: Request) -> Response:
    require(is_admin(caller(req)), "list_endpoints")
    found = filtered(req, catalog_of(req).endpoints, ("interface", "service_id"))
    found = [e for e in found if all(e.region == r for r in req.query_values("region_id"))]
    return listing(req, "endpoints", found, _endpoint)


def get_endpoint(req: Request) -> Response:
    require(is_admin(caller(req)), "get_endpoint")
    found = [e for e in catalog_of(req).endpoints if e.id == req.params["endpoint_id"]]
    if not found:
        raise HTTPError(404, f"Could not find endpoint: {req.params['endpoint_id']}.")
    return json_response({"endpoint": _endpoint(req, found[0])})


def list_regions(req: Request) -> Response:
    caller(req)
    return listing(req, "regions", [catalog_of(req).region], _region)


def get_region(req: Request) -> Response:
    caller(req)
    region = catalog_of(req).region
    if req.params["region_id"] != region:
        raise HTTPError(404, f"Could not find region: {req.params['region_id']}.")
    return json_response({"region": _region(req, region)})


ROUTES = [
    Route("GET", "/v3/services", list_services),
    Route("GET", "/v3/services/{service_id}", get_service),
    Route("GET", "/v3/endpoints", list_endpoints),
    Route("GET", "/v3/endpoints/{endpoint_id}", get_endpoint),
    Route("GET", "/v3/regions", list_regions),
    Route("GET", "/v3/regions/{region_id}", get_region),
]
