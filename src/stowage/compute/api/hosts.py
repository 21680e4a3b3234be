"""/os-hosts (2.1 to 2.42; 404 from 2.43): Nova's deprecated per-host admin API.

    GET /os-hosts[?zone=]            the enabled services' hosts: host_name, service, zone
    GET /os-hosts/{host}             resource rows for the host's compute node:
                                     (total), (used_now), (used_max), then one per project
    PUT /os-hosts/{host}             {"status": "enable"|"disable"} sets the compute
                                     service's disabled flag (as os-services does);
                                     {"maintenance_mode": ...} is 501
    GET /os-hosts/{host}/reboot|shutdown|startup    501

(total) is the compute node's inventory; (used_now) is what its resource
tracker last reported as used; (used_max) and the per-project rows add up
the flavors of the instances on the host, as Nova's do (disk is root plus
ephemeral). Host power actions and maintenance mode are driver features the
simulated driver does not have, and Nova answers 501 "The requested
functionality is not supported." for drivers without them (libvirt among
them), after checking the host exists (404). A body asking for a maintenance
mode is refused before any status change, so a 501 leaves nothing changed.
From 2.43 os-hypervisors, os-services and os-availability-zone replace all of
this. Admin only.

The listing reads every cell's services (a cell whose database does not
answer is left out with a warning, as Nova does); one host is read in its
cell's database (host_mappings).
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances
from stowage.compute import services as svc
from stowage.compute.api.common import (
    API_PREFIX,
    at_least,
    authorize,
    query_param,
    read_body,
    validate_body,
)
from stowage.compute.api.services import in_zones, sync_status_trait, zone_of
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

LOG = logging.getLogger(__name__)

REMOVED = 43  # the API is gone: 404
_POLICY = "os_compute_api:os-hosts:"
_NOT_SUPPORTED = "The requested functionality is not supported."
_MODE = {"type": "string", "enum": ["enable", "disable", "Enable", "Disable",
                                    "ENABLE", "DISABLE"]}
UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"status": _MODE, "maintenance_mode": _MODE},
    "anyOf": [{"required": ["status"]}, {"required": ["maintenance_mode"]}],
    "additionalProperties": False,
}
# Services that are an API, not a host's worker: Nova leaves them out.
_API_BINARIES = ("nova-osapi_compute", "nova-ec2", "nova-metadata")


def _start(req: Request, policy: str) -> None:
    if at_least(req, REMOVED):
        raise HTTPError(404, "The resource could not be found.")
    authorize(req, _POLICY + policy, {})


def list_hosts(req: Request) -> Response:
    _start(req, "list")
    zone = query_param(req, "zone")
    parts: list[list[svc.Service]] = req.app.read_cells(svc.list_services, skip_down=True)
    # The hosts' aggregates' zones (API database).
    found = in_zones(req, [s for part in parts for s in part])
    hosts = [{"host_name": s.host, "service": s.topic, "zone": zone_of(req, s)}
             for s in found if not s.disabled and s.binary not in _API_BINARIES]
    if zone:
        hosts = [h for h in hosts if h["zone"] == zone]
    return json_response({"hosts": hosts})


def _compute_service(conn: Connection, host: str) -> svc.Service:
    service = svc.compute_service(conn, host)
    if service is None:
        raise HTTPError(404, f"Compute host {host} could not be found.")
    return service


def _row(host: str, project: str, cpu: int, memory_mb: int, disk_gb: int) -> dict[str, Any]:
    return {"resource": {"host": host, "project": project, "cpu": cpu,
                         "memory_mb": memory_mb, "disk_gb": disk_gb}}


def show_host(req: Request) -> Response:
    _start(req, "show")
    host = req.params["host_name"]
    with req.app.host_db(host).read() as conn:
        node = svc.compute_node_of_host(conn, host)
        if node is None:
            raise HTTPError(404, f"Compute host {host} could not be found.")
        found = instances.list_instances(conn, host=host)
    rows = [_row(host, "(total)", node.vcpus, node.memory_mb, node.local_gb),
            _row(host, "(used_now)", node.vcpus_used, node.memory_mb_used, node.local_gb_used)]
    used = [0, 0, 0]
    projects: dict[str, list[int]] = {}
    for instance in found:
        flavor = instance.flavor
        cost = (int(flavor.get("vcpus") or 0), int(flavor.get("memory_mb") or 0),
                int(flavor.get("root_gb") or 0) + int(flavor.get("ephemeral_gb") or 0))
        mine = projects.setdefault(str(instance.project_id), [0, 0, 0])
        for n in range(3):
            used[n] += cost[n]
            mine[n] += cost[n]
    rows.append(_row(host, "(used_max)", *used))
    rows += [_row(host, project, *sums) for project, sums in projects.items()]
    return json_response({"host": rows})


def update_host(req: Request) -> Response:
    _start(req, "update")
    host = req.params["host_name"]
    body = validate_body(read_body(req), UPDATE_SCHEMA)
    db = req.app.host_db(host)
    with db.read() as conn:
        _compute_service(conn, host)
    if "maintenance_mode" in body:
        raise HTTPError(501, _NOT_SUPPORTED)
    enabled = body["status"].strip().lower() == "enable"
    LOG.info("%s host %s", "Enabling" if enabled else "Disabling", host)
    with db.write() as conn:
        service = _compute_service(conn, host)
        changes: dict[str, Any] = {"disabled": not enabled}
        if enabled:
            changes["disabled_reason"] = None
        service = svc.update_service(conn, service.id, **changes)
    sync_status_trait(req, service)
    return json_response({"host": host, "status": "enabled" if enabled else "disabled"})


def _power_action(req: Request, policy: str) -> Response:
    _start(req, policy)
    host = req.params["host_name"]
    with req.app.host_db(host).read() as conn:
        _compute_service(conn, host)
    raise HTTPError(501, _NOT_SUPPORTED)


def reboot_host(req: Request) -> Response:
    return _power_action(req, "reboot")


def shutdown_host(req: Request) -> Response:
    return _power_action(req, "shutdown")


def start_host(req: Request) -> Response:
    return _power_action(req, "start")


_HOSTS = API_PREFIX + "/os-hosts"
_HOST = _HOSTS + "/{host_name}"
ROUTES = [
    Route("GET", _HOSTS, list_hosts),
    Route("GET", _HOST + "/reboot", reboot_host),
    Route("GET", _HOST + "/shutdown", shutdown_host),
    Route("GET", _HOST + "/startup", start_host),
    Route("GET", _HOST, show_host),
    Route("PUT", _HOST, update_host),
]
