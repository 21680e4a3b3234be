"""A server's security groups: they are its ports' groups in the Network service, as
with Nova's neutron driver.

    GET  /servers/{id}/os-security-groups   the groups of the server's ports, in
                                            Nova's group format (every microversion)
    POST /servers/{id}/action {"addSecurityGroup": {"name": N}}     202: every port of
    POST /servers/{id}/action {"removeSecurityGroup": {"name": N}}  the server joins /
                                                                    leaves the group

N is a group of the caller's project, by name or id (404 "Security group N is
not found for project P"; a name two groups share is 409). A server with no
port is 404 ("instance_id ... could not be found as device id on any
ports"); a port without a fixed IP cannot take a group (400). Removing a
group no port has is 404.

Server bodies show `security_groups: [{"name": ...}]` per port and group
(`bindings`), and leave the key out for a server in none. At boot,
`security_groups` names are resolved here (`resolve`, 400 for an unknown
one) and the ports the build creates are put in those groups.

The server's ports are looked up before the group, so that a refused
request never makes a project's default group as a side effect.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from stowage.compute.api.common import API_PREFIX, authorize
from stowage.compute.api.network_proxy import network_of, translated
from stowage.compute.api.security_groups import (
    RULE,
    nova_group,
    rule_group_data,
    sort_groups,
)
from stowage.compute.api.server_common import get_server, target
from stowage.compute.api.server_views import Extras
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "ACTIONS", "bindings", "fill", "resolve", "DEFAULT_GROUP"]

DEFAULT_GROUP = "default"


def _server(req: Request, rule: str) -> str:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
    authorize(req, RULE + rule, target(instance))
    return instance.uuid


def _ports_of(network: NetworkClient, uuids: Sequence[str]) -> list[dict[str, Any]]:
    return network.list_ports(device_id=list(uuids)) if uuids else []


def bindings(req: Request, uuids: Iterable[str]) -> dict[str, list[dict[str, str]]]:
    """server uuid -> [{"name": group}] for each of its ports' groups (Nova's
    `get_instances_security_groups_bindings`); servers in no group are left out."""
    plane = req.app.plane
    network: NetworkClient | None = None if plane is None else plane.network
    wanted = list(uuids)
    if network is None or not wanted:
        return {}
    ports = _ports_of(network, wanted)
    group_ids = sorted({g for p in ports for g in p.get("security_groups") or ()})
    if not group_ids:
        return {}
    names = {str(g["id"]): str(g.get("name") or g["id"])
             for g in network.list_security_groups(id=group_ids, fields=["id", "name"])}
    found: dict[str, list[dict[str, str]]] = {}
    for port in ports:
        for group_id in port.get("security_groups") or ():
            if group_id in names:
                found.setdefault(str(port["device_id"]), []).append({"name": names[group_id]})
    return found


def fill(req: Request, extras: Extras) -> None:
    """Set `extras.security_groups` for the servers that have ports (the others have
    no group, and cost no call to the Network service)."""
    extras.security_groups = bindings(req, [u for u, rows in extras.ports.items() if rows])


def list_server_groups(req: Request) -> Response:
    server = _server(req, "list")
    network = network_of(req)
    with translated():
        network.list_security_groups(project_id=req.context.project_id or "")  # the default
        ports = _ports_of(network, [server])
        ids = sorted({g for p in ports for g in p.get("security_groups") or ()})
        groups = network.list_security_groups(id=ids) if ids else []
        by_id = {str(g["id"]): g for g in groups}
        remotes = rule_group_data(network, groups)
    shown = [nova_group(by_id[g], remotes) for p in ports
             for g in p.get("security_groups") or () if g in by_id]
    return json_response({"security_groups": sort_groups(shown)})


def _find(req: Request, network: NetworkClient, name: str) -> str:
    """The id of the caller's project's group named (or with id) `name`."""
    project = req.context.project_id or ""
    try:
        uuid.UUID(name)
        found = network.list_security_groups(id=name, project_id=project)
    except ValueError:
        found = []
    if not found:
        found = network.list_security_groups(name=name, project_id=project)
    if len(found) > 1:
        raise HTTPError(409, f"Multiple security_group matches found for name '{name}', use "
                             "an ID to be more specific.")
    if not found:
        raise HTTPError(404, f"Security group {name} is not found for project {project}")
    return str(found[0]["id"])


def _group_name(body: Any, action: str) -> str:
    inner = body.get(action)
    if not isinstance(inner, dict):
        raise HTTPError(400, "Missing parameter dict")
    if "name" not in inner:
        raise HTTPError(400, "Security group not specified")
    name = inner["name"]
    if not isinstance(name, str) or not name.strip():
        raise HTTPError(400, "Security group name cannot be empty")
    return name


def _server_ports(network: NetworkClient, server: str) -> list[dict[str, Any]]:
    ports = _ports_of(network, [server])
    if not ports:
        raise HTTPError(404, f"instance_id {server} could not be found as device id on any "
                             "ports")
    return ports


def _add(req: Request, body: Any) -> Response:
    name = _group_name(body, "addSecurityGroup")
    server = _server(req, "add")
    network = network_of(req)
    with translated():
        ports = _server_ports(network, server)
        group_id = _find(req, network, name)
        for port in ports:
            if not port.get("fixed_ips"):
                raise HTTPError(400, "Network requires port_security_enabled and subnet "
                                     "associated in order to apply security groups.")
            groups = list(port.get("security_groups") or [])
            if group_id not in groups:
                network.update_port(str(port["id"]), {"security_groups": groups + [group_id]})
    return empty_response(202)


def _remove(req: Request, body: Any) -> Response:
    name = _group_name(body, "removeSecurityGroup")
    server = _server(req, "remove")
    network = network_of(req)
    with translated():
        ports = _server_ports(network, server)
        group_id = _find(req, network, name)
        removed = False
        for port in ports:
            groups = list(port.get("security_groups") or [])
            if group_id in groups:
                groups.remove(group_id)
                network.update_port(str(port["id"]), {"security_groups": groups})
                removed = True
    if not removed:
        raise HTTPError(404, f"Security group {name} not associated with the instance "
                             f"{server}")
    return empty_response(202)


def resolve(req: Request, names: Sequence[str]) -> list[str] | None:
    """The ids of the groups a boot names (Nova's `_check_requested_secgroups`): a group
    of the project by name or id (400 "Unable to find security_group with name or id 'N'"),
    and "default" kept
    as the name (the build's ports get the project's default group, made then if need
    be); None without a Network service."""
    plane = req.app.plane
    network: NetworkClient | None = None if plane is None else plane.network
    if network is None:
        return None
    ids: list[str] = []
    with translated():
        for name in names:
            if name == DEFAULT_GROUP:
                ids.append(name)
                continue
            try:
                ids.append(_find(req, network, name))
            except HTTPError as exc:
                if exc.status == 404:  # Nova passes on the Neutron client's words
                    raise HTTPError(400, f"Unable to find security_group with name or id "
                                         f"'{name}'") from None
                raise
    return list(dict.fromkeys(ids))


ACTIONS = {"addSecurityGroup": _add, "removeSecurityGroup": _remove}
ROUTES = [Route("GET", API_PREFIX + "/servers/{server_id}/os-security-groups",
                list_server_groups)]
