"""/flavors/{id}/os-flavor-access and the addTenantAccess/removeTenantAccess actions.

Only private flavors have access lists: listing a public flavor's is a 404,
and from 2.7 adding a project to a public flavor is a 409.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import flavors as flv
from stowage.compute.api.common import API_PREFIX, at_least, authorize, read_body, validate_body
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

REFUSE_PUBLIC = 7


def _action_schema(action: str) -> dict[str, Any]:
    tenant = {"type": "object",
              "properties": {"tenant": {"type": "string", "minLength": 1, "maxLength": 255}},
              "required": ["tenant"], "additionalProperties": False}
    return {"type": "object", "properties": {action: tenant}, "required": [action],
            "additionalProperties": False}


def _view(flavorid: str, projects: list[str]) -> dict[str, Any]:
    return {"flavor_access": [{"flavor_id": flavorid, "tenant_id": p} for p in projects]}


def list_access(req: Request) -> Response:
    authorize(req, "os_compute_api:os-flavor-access")
    flavorid = req.params["flavor_id"]
    with req.app.db.read() as conn:
        projects = flv.access_list(conn, flavorid, req.context)
    return json_response(_view(flavorid, projects))


def _add(req: Request, body: Any) -> Response:
    authorize(req, "os_compute_api:os-flavor-access:add_tenant_access", {})
    tenant = validate_body(body, _action_schema("addTenantAccess"))["addTenantAccess"]["tenant"]
    flavorid = req.params["flavor_id"]
    with req.app.db.write() as conn:
        projects = flv.add_access(conn, flavorid, tenant,
                                  refuse_public=at_least(req, REFUSE_PUBLIC))
    return json_response(_view(flavorid, projects))


def _remove(req: Request, body: Any) -> Response:
    authorize(req, "os_compute_api:os-flavor-access:remove_tenant_access", {})
    schema = _action_schema("removeTenantAccess")
    tenant = validate_body(body, schema)["removeTenantAccess"]["tenant"]
    flavorid = req.params["flavor_id"]
    with req.app.db.write() as conn:
        projects = flv.remove_access(conn, flavorid, tenant)
    return json_response(_view(flavorid, projects))


def flavor_action(req: Request) -> Response:
    body = read_body(req)
    if isinstance(body, dict) and "addTenantAccess" in body:
        return _add(req, body)
    if isinstance(body, dict) and "removeTenantAccess" in body:
        return _remove(req, body)
    names = ", ".join(body) if isinstance(body, dict) else ""
    raise HTTPError(400, f"There is no such action: {names}")


ROUTES = [
    Route("GET", API_PREFIX + "/flavors/{flavor_id}/os-flavor-access", list_access),
    Route("POST", API_PREFIX + "/flavors/{flavor_id}/action", flavor_action, json_body=True),
]
