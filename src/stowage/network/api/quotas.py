"""`/v2.0/quotas` (extensions `quotas` and `quota_details`): every project's own limits,
one project's limits, its defaults and its usage; set and reset them.

| route                               | answers                                   |
|-------------------------------------|-------------------------------------------|
| GET /v2.0/quotas                    | projects with limits of their own         |
| GET /v2.0/quotas/project (tenant)   | the caller's project id                   |
| GET /v2.0/quotas/{project}          | its limits                                |
| GET /v2.0/quotas/{project}/default  | Neutron's defaults                        |
| GET /v2.0/quotas/{project}/details  | limit, used and reserved per resource     |
| PUT /v2.0/quotas/{project}          | sets limits (-1 is unlimited)             |
| DELETE /v2.0/quotas/{project}       | back to the defaults                      |

A PUT body names resources only (`{"quota": {"network": 5}}`), each an
integer from -1 to 2**31-1; `force` and `check_limit` are accepted as
Neutron accepts them, and with `check_limit` a limit below the project's
usage is 400. The project is not looked up (nor is it in Neutron).
"""

from __future__ import annotations

from typing import Any

from stowage.network import errors as e
from stowage.network import quotas
from stowage.network.api import common
from stowage.network.api.attributes import bad, body_of, integer
from stowage.web.errors import shorten
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

# Neutron's DB_INTEGER_MAX_VALUE: the largest limit its column holds.
_MAX_LIMIT = 2**31 - 1
_IN_RANGE = integer(-1, _MAX_LIMIT)
_PROJECT_LENGTH = 255


def list_quotas(req: Request) -> Response:
    quotas.authorize(common.guard(req), "get_quota")
    return json_response({"quotas": common.read(req, quotas.all_limits)})


def _caller(req: Request, key: str) -> Response:
    if not req.context.project_id:
        raise e.StatusError(400, "Tenant-id was missing from quota request.",
                            "QuotaMissingTenant")
    return json_response({key: {f"{key}_id": req.context.project_id}})


def show_caller_project(req: Request) -> Response:
    return _caller(req, "project")


def show_caller_tenant(req: Request) -> Response:
    return _caller(req, "tenant")


def show_quota(req: Request) -> Response:
    project_id = req.params["project_id"]
    quotas.authorize(common.guard(req), "get_quota", project_id)
    return json_response({"quota": common.read(req, lambda c: quotas.limits(c, project_id))})


def show_defaults(req: Request) -> Response:
    quotas.authorize(common.guard(req), "get_quota", req.params["project_id"])
    return json_response({"quota": dict(quotas.DEFAULTS)})


def show_details(req: Request) -> Response:
    project_id = req.params["project_id"]
    quotas.authorize(common.guard(req), "get_quota", project_id)
    return json_response({"quota": common.read(req, lambda c: quotas.usage(c, project_id))})


def _limit(name: str, value: Any) -> int:
    """Neutron's convert_to_int, then its range check."""
    try:
        if isinstance(value, bool | float) or value is None:
            raise ValueError
        number = int(value)
    except (TypeError, ValueError):
        raise e.invalid_input(f"'{shorten(str(value))}' is not an integer") from None
    try:
        _IN_RANGE(number)
    except ValueError as exc:
        raise bad(f"Invalid input for {name}. Reason: {exc}.") from None
    return number


def _wanted(req: Request) -> tuple[dict[str, int], bool]:
    """The limits a PUT sets, and whether it asked to check them against usage."""
    raw = dict(body_of(req, "quota"))
    raw.pop("force", None)
    check = bool(raw.pop("check_limit", None))
    unknown = sorted(set(raw) - set(quotas.DEFAULTS))
    if unknown:
        raise bad(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    return {name: _limit(name, value) for name, value in raw.items()}, check


def _project(req: Request) -> str:
    """The path's project id, which must fit the column a limit is kept in."""
    project_id = str(req.params["project_id"])
    if len(project_id) > _PROJECT_LENGTH:
        raise bad(f"Invalid input for project_id. Reason: '{shorten(project_id)}' exceeds "
                  f"maximum length of {_PROJECT_LENGTH}.")
    return project_id


def update_quota(req: Request) -> Response:
    quotas.authorize(common.guard(req), "update_quota")
    project_id = _project(req)
    wanted, check = _wanted(req)

    def work(conn: Any) -> dict[str, int]:
        if check:
            quotas.check_limits(conn, project_id, wanted)
        return quotas.update(conn, project_id, wanted)

    return json_response({"quota": common.write(req, work)})


def delete_quota(req: Request) -> Response:
    quotas.authorize(common.guard(req), "delete_quota")
    project_id = _project(req)
    common.write(req, lambda conn: quotas.delete(conn, project_id))
    return empty_response(204)


_ONE = "/v2.0/quotas/{project_id}"
# The literal paths first: they would otherwise match as a project id.
ROUTES = [
    Route("GET", "/v2.0/quotas", list_quotas),
    Route("GET", "/v2.0/quotas/project", show_caller_project),
    Route("GET", "/v2.0/quotas/tenant", show_caller_tenant),
    Route("GET", _ONE, show_quota),
    Route("PUT", _ONE, update_quota, json_body=True),
    Route("DELETE", _ONE, delete_quota),
    Route("GET", f"{_ONE}/default", show_defaults),
    Route("GET", f"{_ONE}/details", show_details),
]
