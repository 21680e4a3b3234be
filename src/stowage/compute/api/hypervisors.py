"""/os-hypervisors: the compute nodes, their usage and their service's state (admin only).

Shaped per microversion as Nova shapes it: 2.28 turns `cpu_info` into an
object, 2.33 pages with limit/marker, 2.53 shows uuids and replaces the
`/{pattern}/search` and `/{pattern}/servers` routes with the
`hypervisor_hostname_pattern` and `with_servers` query parameters, 2.75
always shows `servers` when asked for, 2.88 drops the usage fields, the
statistics and uptime routes, and adds `uptime` to the detailed view (list
detail and show), null when the host's compute service is down, as Nova
leaves it when the host cannot answer.

Every cell's nodes are listed (ids repeat across cells' databases): the
cells' nodes merged by (id, uuid), then paged; a hypervisor named by id or
uuid is looked for in each cell.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances
from stowage.compute import services as svc
from stowage.compute.api.common import (
    API_PREFIX,
    MAX_LIMIT,
    as_bool,
    at_least,
    authorize,
    next_link,
    query_param,
    validate_query,
)
from stowage.compute.api.services import is_uuid
from stowage.errors import NotFound
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

CPU_INFO_OBJECT = 28
PAGING = 33
UUIDS = 53  # uuids for ids; search/servers routes become query parameters
SERVERS_ALWAYS = 75
NO_USAGE = 88  # usage fields, statistics and uptime routes gone; `uptime` in detail

_BOOLEAN = {"type": "string", "enum": ["True", "TRUE", "true", "1", "ON", "On", "on", "YES",
                                       "Yes", "yes", "False", "FALSE", "false", "0", "OFF",
                                       "Off", "off", "NO", "No", "no"]}
_LIMIT = {"type": "string", "pattern": "^[0-9]+$"}
INDEX_QUERY_2_33: dict[str, Any] = {
    "type": "object", "properties": {"limit": _LIMIT, "marker": {"type": "string"}},
    "additionalProperties": True}
INDEX_QUERY_2_53: dict[str, Any] = {
    "type": "object",
    "properties": {"limit": _LIMIT, "marker": {"type": "string"},
                   "hypervisor_hostname_pattern": {"type": "string", "minLength": 1,
                                                   "maxLength": 255},
                   "with_servers": _BOOLEAN},
    "additionalProperties": False}
SHOW_QUERY_2_53: dict[str, Any] = {
    "type": "object", "properties": {"with_servers": _BOOLEAN}, "additionalProperties": False}
_USAGE = ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used", "local_gb_used",
          "free_ram_mb", "free_disk_gb", "current_workload", "running_vms",
          "disk_available_least")


@dataclass
class _Node:
    """A compute node with what its view needs from elsewhere."""

    node: svc.ComputeNode
    service: svc.Service
    workload: int = 0
    servers: list[dict[str, str]] | None = None

    def usage(self) -> dict[str, int]:
        n = self.node
        free_disk = n.local_gb - n.local_gb_used
        return {"vcpus": n.vcpus, "memory_mb": n.memory_mb, "local_gb": n.local_gb,
                "vcpus_used": n.vcpus_used, "memory_mb_used": n.memory_mb_used,
                "local_gb_used": n.local_gb_used, "free_ram_mb": n.memory_mb - n.memory_mb_used,
                "free_disk_gb": free_disk, "current_workload": self.workload,
                "running_vms": n.running_vms, "disk_available_least": free_disk}


def _cpu_info(node: svc.ComputeNode) -> dict[str, Any]:
    return {"arch": "x86_64", "model": "stowage-simulated", "vendor": "stowage",
            "topology": {"cells": 1, "sockets": 1, "cores": node.vcpus, "threads": 1},
            "features": []}


def _uptime(service: svc.Service) -> str:
    """A simulated `uptime` line: the host has been up since its service registered."""
    now = utcnow()
    up = now - service.created_at
    hours, rest = divmod(up.seconds, 3600)
    return (f" {now:%H:%M:%S} up {up.days} days, {hours:2d}:{rest // 60:02d},  1 user,  "
            "load average: 0.00, 0.00, 0.00")


def _view(req: Request, item: _Node, detail: bool, with_servers: bool = False,
          now: datetime.datetime | None = None) -> dict[str, Any]:
    node, service = item.node, item.service
    uuids = at_least(req, UUIDS)
    up = svc.is_up(service, req.app.settings.compute, now)
    view: dict[str, Any] = {
        "id": node.uuid if uuids else node.id,
        "hypervisor_hostname": node.hypervisor_hostname,
        "state": "up" if up else "down",
        "status": "disabled" if service.disabled else "enabled"}
    if detail:
        view.update(hypervisor_type=node.hypervisor_type,
                    hypervisor_version=node.hypervisor_version, host_ip=node.host_ip,
                    service={"id": service.uuid if uuids else service.id, "host": node.host,
                             "disabled_reason": service.disabled_reason})
        if not at_least(req, NO_USAGE):
            view.update(item.usage())
            info = _cpu_info(node)
            view["cpu_info"] = info if at_least(req, CPU_INFO_OBJECT) else json.dumps(info)
        else:
            view["uptime"] = _uptime(service) if up else None
    if item.servers:
        view["servers"] = item.servers
    elif with_servers and at_least(req, SERVERS_ALWAYS):
        view["servers"] = []
    return view


def _key(node: svc.ComputeNode) -> tuple[int, str]:
    """The listing's order: by id as in one database, uuid apart the cells' equal ids."""
    return node.id, node.uuid


def _gather(conn: Connection, nodes: Sequence[svc.ComputeNode],
            with_servers: bool = False) -> list[_Node]:
    """Nodes with their service; a node whose service was deleted is left out, as in Nova."""
    by_host = {s.host: s for s in svc.list_services(conn, binary=svc.COMPUTE)}
    loads = svc.workloads(conn)
    items = []
    for node in nodes:
        service = by_host.get(node.host)
        if service is None:
            continue
        servers = None
        if with_servers:
            servers = [{"name": i.display_name, "uuid": i.uuid}
                       for i in instances.list_instances(conn, host=node.host)]
        items.append(_Node(node, service, loads.get(node.host, 0), servers))
    return items


# --- list -------------------------------------------------------------------------
def _list(req: Request, detail: bool) -> Response:
    authorize(req, "os_compute_api:os-hypervisors:" + ("list-detail" if detail else "list"),
              {})
    if at_least(req, UUIDS):
        validate_query(req, INDEX_QUERY_2_53)
    elif at_least(req, PAGING):
        validate_query(req, INDEX_QUERY_2_33)
    paging = at_least(req, PAGING)
    pattern = query_param(req, "hypervisor_hostname_pattern") if at_least(req, UUIDS) else None
    with_servers = at_least(req, UUIDS) and as_bool(query_param(req, "with_servers"))
    limit = min(int(query_param(req, "limit") or MAX_LIMIT), MAX_LIMIT) if paging else None
    marker = query_param(req, "marker") if paging else None
    if pattern is not None:
        if query_param(req, "limit") is not None or marker:
            raise HTTPError(400, "Paging over hypervisors with the "
                                 "hypervisor_hostname_pattern query parameter is not "
                                 "supported.")
        items = _matching(req, pattern, with_servers)
        nodes = [item.node for item in items]
    else:
        nodes, items = _paged(req, limit, _marker_key(req, marker) if marker else None,
                              with_servers)
    now = utcnow()
    views = [_view(req, item, detail, with_servers, now) for item in items]
    body: dict[str, Any] = {"hypervisors": views}
    if paging and pattern is None and limit and len(nodes) == limit and views:
        collection = "os-hypervisors/detail" if detail else "os-hypervisors"
        body["hypervisors_links"] = next_link(req, collection, str(views[-1]["id"]))
    return json_response(body)


_Read = tuple[list[svc.ComputeNode], list[_Node]]


def _merged(parts: list[_Read], limit: int | None = None,
            after: tuple[int, str] | None = None) -> _Read:
    """The cells' nodes (and their views' items) as one listing: sorted by `_key`, those
    after the marker's key, cut at `limit`; a node without a service has no item."""
    nodes = sorted((node for found, _ in parts for node in found), key=_key)
    nodes = [node for node in nodes if after is None or _key(node) > after][:limit]
    kept = {node.uuid for node in nodes}
    items = sorted((item for _, found in parts for item in found if item.node.uuid in kept),
                   key=lambda item: _key(item.node))
    return nodes, items


def _paged(req: Request, limit: int | None, after: tuple[int, str] | None,
           with_servers: bool) -> _Read:
    """A page over every cell. Each cell reads from the marker's id on (another cell's
    node may share it) and one more than the limit (its node with the marker's id may
    come before the marker): enough for the merged page."""
    def read(conn: Connection) -> _Read:
        nodes = svc.list_compute_nodes(conn, limit=None if limit is None else limit + 1,
                                       after_id=None if after is None else after[0] - 1)
        return nodes, _gather(conn, nodes, with_servers)
    parts: list[_Read] = req.app.read_cells(read)
    return _merged(parts, limit, after)


def _matching(req: Request, pattern: str, with_servers: bool = False) -> list[_Node]:
    """Every cell's nodes whose hostname has `pattern`; 404 when no cell has one."""
    def read(conn: Connection) -> _Read:
        nodes = svc.list_compute_nodes(conn, hostname_pattern=pattern)
        return nodes, _gather(conn, nodes, with_servers)
    parts: list[_Read] = req.app.read_cells(read)
    nodes, items = _merged(parts)
    if not nodes:
        raise HTTPError(404, f"No hypervisor matching '{pattern}' could be found.")
    return items


def _marker_key(req: Request, marker: str) -> tuple[int, str]:
    """The marker node's place in the listing, from whichever cell holds it."""
    try:
        ident: int | str = marker if is_uuid(marker) else int(marker)
        node: svc.ComputeNode = req.app.find_in_cells(
            lambda conn: svc.get_compute_node(conn, ident))[1]
    except (ValueError, NotFound):
        raise HTTPError(400, f"marker [{marker}] not found") from None
    return _key(node)


def list_hypervisors(req: Request) -> Response:
    return _list(req, detail=False)


def list_hypervisors_detail(req: Request) -> Response:
    return _list(req, detail=True)


# --- one hypervisor --------------------------------------------------------------
def _one(req: Request, ident: str, with_servers: bool = False) -> _Node:
    """The hypervisor `ident` names, from the first cell that has it with its service."""
    missing = HTTPError(404, f"Hypervisor with ID '{ident}' could not be found.")
    if at_least(req, UUIDS):
        if not is_uuid(ident):
            raise HTTPError(400, f"Invalid uuid {ident}")
        key: int | str = ident
    else:
        try:
            key = int(ident)
        except ValueError:
            raise missing from None

    def find(conn: Connection) -> _Node:
        items = _gather(conn, [svc.get_compute_node(conn, key)], with_servers)
        if not items:
            raise NotFound(missing.detail)
        return items[0]
    try:
        item: _Node = req.app.find_in_cells(find)[1]
    except NotFound:
        raise missing from None
    return item


def show_hypervisor(req: Request) -> Response:
    authorize(req, "os_compute_api:os-hypervisors:show", {})
    with_servers = False
    if at_least(req, UUIDS):
        validate_query(req, SHOW_QUERY_2_53)
        with_servers = as_bool(query_param(req, "with_servers"))
    item = _one(req, req.params["hypervisor_id"], with_servers)
    return json_response({"hypervisor": _view(req, item, True, with_servers)})


def _before(req: Request, minor: int) -> None:
    """A route removed at 2.`minor` does not exist from then on: 404, as in Nova."""
    if at_least(req, minor):
        raise HTTPError(404, "The resource could not be found.")


def hypervisor_uptime(req: Request) -> Response:
    _before(req, NO_USAGE)
    authorize(req, "os_compute_api:os-hypervisors:uptime", {})
    item = _one(req, req.params["hypervisor_id"])
    if not svc.is_up(item.service, req.app.settings.compute):
        raise HTTPError(400, f"Compute service of {item.node.host} is unavailable at this "
                             "time.")
    view = _view(req, item, False)
    view["uptime"] = _uptime(item.service)
    return json_response({"hypervisor": view})


def statistics(req: Request) -> Response:
    """Sums over every cell's nodes whose compute service is enabled, as Nova's statistics."""
    _before(req, NO_USAGE)
    authorize(req, "os_compute_api:os-hypervisors:statistics", {})
    parts: list[list[_Node]] = req.app.read_cells(
        lambda conn: _gather(conn, svc.list_compute_nodes(conn)))
    items = [i for part in parts for i in part if not i.service.disabled]
    stats = dict.fromkeys(_USAGE, 0)
    for item in items:
        for key, value in item.usage().items():
            stats[key] += value
    return json_response({"hypervisor_statistics": {"count": len(items), **stats}})


def search(req: Request) -> Response:
    _before(req, UUIDS)
    authorize(req, "os_compute_api:os-hypervisors:search", {})
    items = _matching(req, req.params["pattern"])
    return json_response({"hypervisors": [_view(req, item, False) for item in items]})


def servers(req: Request) -> Response:
    _before(req, UUIDS)
    authorize(req, "os_compute_api:os-hypervisors:servers", {})
    items = _matching(req, req.params["pattern"], with_servers=True)
    return json_response({"hypervisors": [_view(req, item, False) for item in items]})


_BASE = API_PREFIX + "/os-hypervisors"
# Fixed paths first: the table is matched in order and {hypervisor_id} matches anything.
ROUTES = [
    Route("GET", _BASE, list_hypervisors),
    Route("GET", _BASE + "/detail", list_hypervisors_detail),
    Route("GET", _BASE + "/statistics", statistics),
    Route("GET", _BASE + "/{hypervisor_id}", show_hypervisor),
    Route("GET", _BASE + "/{hypervisor_id}/uptime", hypervisor_uptime),
    Route("GET", _BASE + "/{pattern}/search", search),
    Route("GET", _BASE + "/{pattern}/servers", servers),
]
