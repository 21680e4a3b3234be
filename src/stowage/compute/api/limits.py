"""GET /limits: the caller's project's absolute limits and usage (Nova's view; no rate limits).

    2.36  maxTotalFloatingIps, maxSecurityGroups, maxSecurityGroupRules and their
          totals leave the answer
    2.39  maxImageMeta leaves (the image API's own limit)
    2.57  maxPersonality and maxPersonalitySize leave
    2.75  unknown query parameters are a 400

`?tenant_id=` names another project (policy `limits:other_project`, admin).
Limits and usage are the project's (not a user's), as Nova's.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import quota_limits as limits
from stowage.compute import quota_usage as usage
from stowage.compute.api.common import (
    API_PREFIX,
    at_least,
    authorize,
    query_param,
    validate_query,
)
from stowage.compute.api.quota_common import NO_INJECTED_FILES, NO_NETWORK, owner
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

NO_IMAGE_META = 39
STRICT_QUERY = 75
_QUERY: dict[str, Any] = {"type": "object", "properties": {"tenant_id": {"type": "string"}},
                          "additionalProperties": True}
_QUERY_2_75 = {**_QUERY, "additionalProperties": False}

# Resource -> the names its limit takes in the answer.
_LIMIT_NAMES = {
    "ram": ("maxTotalRAMSize",), "instances": ("maxTotalInstances",),
    "cores": ("maxTotalCores",), "key_pairs": ("maxTotalKeypairs",),
    "floating_ips": ("maxTotalFloatingIps",),
    "metadata_items": ("maxServerMeta", "maxImageMeta"),
    "injected_files": ("maxPersonality",),
    "injected_file_content_bytes": ("maxPersonalitySize",),
    "security_groups": ("maxSecurityGroups",),
    "security_group_rules": ("maxSecurityGroupRules",),
    "server_groups": ("maxServerGroups",),
    "server_group_members": ("maxServerGroupMembers",),
}
# Usage name -> resource.
_USED_NAMES = {"totalRAMUsed": "ram", "totalCoresUsed": "cores",
               "totalInstancesUsed": "instances", "totalFloatingIpsUsed": "floating_ips",
               "totalSecurityGroupsUsed": "security_groups",
               "totalServerGroupsUsed": "server_groups"}
_NETWORK = ("floating_ips", "security_groups", "security_group_rules")
_INJECTED = ("injected_files", "injected_file_content_bytes")


def _hidden(minor: int) -> tuple[str, ...]:
    hidden: tuple[str, ...] = ()
    if minor >= NO_NETWORK:
        hidden += _NETWORK
    if minor >= NO_INJECTED_FILES:
        hidden += _INJECTED
    return hidden


def _absolute(minor: int, cap: dict[str, int], used: dict[str, int]) -> dict[str, int]:
    hidden = _hidden(minor)
    body: dict[str, int] = {}
    for resource, names in _LIMIT_NAMES.items():
        if resource in hidden:
            continue
        for name in names:
            if name != "maxImageMeta" or minor < NO_IMAGE_META:
                body[name] = cap[resource]
    for name, resource in _USED_NAMES.items():
        if resource not in hidden:
            body[name] = used.get(resource, 0)
    return body


def show_limits(req: Request) -> Response:
    authorize(req, "os_compute_api:limits", {})
    validate_query(req, _QUERY_2_75 if at_least(req, STRICT_QUERY) else _QUERY)
    project_id = req.context.project_id or ""
    tenant = query_param(req, "tenant_id")
    if tenant is not None:
        project_id = tenant
        authorize(req, "os_compute_api:limits:other_project", {"project_id": project_id})
    who = owner(req, project_id)
    with req.app.db.read() as conn:
        cap = limits.project_limits(conn, who.settings, project_id)
        used = who.used(conn, usage.COUNTED)
    return json_response({"limits": {"rate": [],
                                     "absolute": _absolute(req.version.minor, cap, used)}})


ROUTES = [Route("GET", API_PREFIX + "/limits", show_limits)]
