"""/os-security-groups and /os-security-group-rules: Nova's deprecated proxies to the
Network service's security groups (2.1-2.35; 404 from 2.36, as Nova).

Each call is translated to the Networking API through the compute service's
network client, as Nova's neutron security group driver does:

    GET    /os-security-groups          the caller's project's groups (the default
                                        one made first); admins add all_tenants
                                        to see every project's; limit/offset
    POST   /os-security-groups          name and description: strings up to 255
    GET|PUT|DELETE /os-security-groups/{id}   400 for an id that is no uuid,
                                        404 for a group the caller cannot see
    POST   /os-security-group-rules     an ingress rule: parent_group_id, ip_protocol
                                        (tcp/udp/icmp), from_port, to_port, and a
                                        cidr or a group_id
    DELETE /os-security-group-rules/{id}

Bodies are Nova's: a group is id, name, description, tenant_id and its
ingress rules; a rule is id, parent_group_id, ip_protocol, from_port,
to_port, and `ip_range: {cidr}` or `group: {name, tenant_id}`. The network
client acts as the service, so the project checks the user's own token
would get from Neutron are made here: a non-admin sees and changes only
their project's groups, and cannot delete its default group (400).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from stowage.compute.api import security_group_rules as nova_rules
from stowage.compute.api.common import API_PREFIX, authorize, query_param, read_body
from stowage.compute.api.network_proxy import network_of, require_proxy, translated
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "group_of", "nova_group", "sort_groups", "rule_group_data", "RULE"]

RULE = "os_compute_api:os-security-groups:"
MAX_LIMIT = 1000
T = TypeVar("T")


def _proxy(req: Request, rule: str) -> None:
    require_proxy(req)
    authorize(req, RULE + rule, {"project_id": req.context.project_id})


def _uuid(value: Any) -> str:
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise HTTPError(400, "Security group id should be uuid") from None
    return str(value)


def group_of(req: Request, network: NetworkClient, group_id: Any) -> dict[str, Any]:
    """The group, if the caller may see it (404 otherwise, as Neutron answers them)."""
    group_id = _uuid(group_id)
    group = network.show_security_group(group_id)
    ctx = req.context
    if group is None or not (ctx.is_admin or group["project_id"] == ctx.project_id):
        raise HTTPError(404, f"Security group {group_id} does not exist")
    return group


def rule_group_data(network: NetworkClient,
                    groups: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """name and tenant_id of every group the rules of `groups` name as their remote."""
    known = {str(g["id"]): g for g in groups}
    wanted = {str(r["remote_group_id"]) for g in groups for r in g["security_group_rules"]
              if r.get("remote_group_id")} - set(known)
    if wanted:
        known.update({str(g["id"]): g for g in network.list_security_groups(id=sorted(wanted))})
    return {gid: {"name": str(g["name"]), "tenant_id": str(g["project_id"])}
            for gid, g in known.items()}


def nova_group(group: Mapping[str, Any], remotes: Mapping[str, dict[str, str]]) -> dict[str, Any]:
    rules = [nova_rules.nova_rule(r, remotes) for r in group["security_group_rules"]
             if r["direction"] == "ingress"]
    return {"id": group["id"], "name": group["name"], "description": group["description"],
            "tenant_id": group["project_id"], "rules": [r for r in rules if r is not None]}


def sort_groups(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(groups, key=lambda g: (g["tenant_id"], g["name"]))


def _limited(req: Request, items: list[T]) -> list[T]:
    """Nova's common.limited: offset, then at most limit (and max_limit) items."""
    try:
        offset = int(query_param(req, "offset") or 0)
        limit = int(query_param(req, "limit") or MAX_LIMIT)
    except ValueError:
        raise HTTPError(400, "limit and offset must be integers") from None
    if offset < 0 or limit < 0:
        raise HTTPError(400, "limit and offset must be positive integers")
    return items[offset:offset + min(limit, MAX_LIMIT)]


def _listed(req: Request, network: NetworkClient) -> list[dict[str, Any]]:
    ctx = req.context
    if ctx.is_admin and query_param(req, "all_tenants") is not None:
        return network.list_security_groups()
    return network.list_security_groups(project_id=ctx.project_id or "")


def list_groups(req: Request) -> Response:
    _proxy(req, "get")
    network = network_of(req)
    with translated():
        groups = _limited(req, _listed(req, network))
        remotes = rule_group_data(network, groups)
    return json_response({"security_groups": sort_groups([nova_group(g, remotes)
                                                          for g in groups])})


def show_group(req: Request) -> Response:
    _proxy(req, "show")
    network = network_of(req)
    with translated():
        group = group_of(req, network, req.params["group_id"])
        remotes = rule_group_data(network, [group])
    return json_response({"security_group": nova_group(group, remotes)})


def _body(req: Request, key: str) -> dict[str, Any]:
    body = read_body(req)
    if not body:
        raise HTTPError(400, "The request body can't be empty")
    value = body.get(key) if isinstance(body, dict) else None
    if value is None:
        raise HTTPError(400, f"Missing parameter {key}")
    if not isinstance(value, dict):
        raise HTTPError(400, f"Missing parameter {key}")
    return value


def _group_values(req: Request) -> dict[str, str]:
    """name and description, each a string of at most 255 characters (Nova's checks)."""
    body = _body(req, "security_group")
    values = {}
    for name in ("name", "description"):
        value = body.get(name)
        if not isinstance(value, str):
            raise HTTPError(400, f"{name} is not a string or unicode")
        if len(value) > 255:
            raise HTTPError(400, f"{name} has more than 255 characters.")
        values[name] = value
    return values


def create_group(req: Request) -> Response:
    _proxy(req, "create")
    values = _group_values(req)
    network = network_of(req)
    with translated(conflict=403):
        made = network.create_security_group({**values,
                                              "project_id": req.context.project_id or ""})
    return json_response({"security_group": nova_group(made, rule_group_data(network,
                                                                              [made]))})


def update_group(req: Request) -> Response:
    _proxy(req, "update")
    network = network_of(req)
    with translated():
        group = group_of(req, network, req.params["group_id"])
        values = _group_values(req)
        changed = network.update_security_group(group["id"], values)
        remotes = rule_group_data(network, [changed])
    return json_response({"security_group": nova_group(changed, remotes)})


def delete_group(req: Request) -> Response:
    _proxy(req, "delete")
    network = network_of(req)
    with translated():
        group = group_of(req, network, req.params["group_id"])
        if group["name"] == "default" and not req.context.is_admin:
            raise HTTPError(400, "Insufficient rights for removing default security group.")
        network.delete_security_group(group["id"])
    return empty_response(202)


def create_rule(req: Request) -> Response:
    _proxy(req, "rule:create")
    body = _body(req, "security_group_rule")
    network = network_of(req)
    with translated():
        parent = group_of(req, network, body.get("parent_group_id"))
        source = None
        if body.get("group_id") is not None:
            source = group_of(req, network, body["group_id"])
        made = nova_rules.create(network, parent, source, body)
    return json_response({"security_group_rule": made})


def delete_rule(req: Request) -> Response:
    _proxy(req, "rule:delete")
    network = network_of(req)
    with translated(conflict=409):
        rule_id = _uuid(req.params["rule_id"])
        rule = network.show_security_group_rule(rule_id)
        if rule is None:
            raise HTTPError(404, f"Security group rule {rule_id} does not exist")
        group_of(req, network, rule["security_group_id"])
        network.delete_security_group_rule(rule_id)
    return empty_response(202)


def _route(method: str, path: str, handler: Callable[[Request], Response]) -> Route:
    return Route(method, API_PREFIX + path, handler, json_body=method in ("POST", "PUT"))


ROUTES = [
    _route("GET", "/os-security-groups", list_groups),
    _route("POST", "/os-security-groups", create_group),
    _route("GET", "/os-security-groups/{group_id}", show_group),
    _route("PUT", "/os-security-groups/{group_id}", update_group),
    _route("DELETE", "/os-security-groups/{group_id}", delete_group),
    _route("POST", "/os-security-group-rules", create_rule),
    _route("DELETE", "/os-security-group-rules/{rule_id}", delete_rule),
]
