"""/os-availability-zone: the zones users may ask for, and (admins) who serves them.

A compute service is in its host's zone (a host aggregate's
`availability_zone` metadata, else its configured zone, else
`[compute] default_availability_zone`); the other services are in the
internal zone. A zone is available while one of its services is enabled; a
zone all of whose services are disabled is listed as not available. The
plain listing hides the internal zone and shows no hosts (`hosts: null`);
`/detail` (admin) names, per available zone, each host's enabled services
with whether they are up (`available`) and enabled (`active`), as Nova does.
The services are every cell's.
"""

from __future__ import annotations

import datetime
from typing import Any

from stowage.compute import services as svc
from stowage.compute.api.common import API_PREFIX, authorize
from stowage.compute.api.services import in_zones, zone_of
from stowage.timeutil import utcnow
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _services(req: Request) -> list[svc.Service]:
    """Every cell's services, each in its host's zone."""
    parts: list[list[svc.Service]] = req.app.read_cells(svc.list_services)
    return in_zones(req, [s for part in parts for s in part])


def _zones(req: Request, found: list[svc.Service]) -> tuple[list[str], list[str]]:
    """(available, not available) zone names, sorted."""
    available = {zone_of(req, s) for s in found if not s.disabled}
    others = {zone_of(req, s) for s in found if s.disabled} - available
    return sorted(available), sorted(others)


def _entry(zone: str, available: bool, hosts: dict[str, Any] | None) -> dict[str, Any]:
    return {"zoneName": zone, "zoneState": {"available": available}, "hosts": hosts}


def list_zones(req: Request) -> Response:
    authorize(req, "os_compute_api:os-availability-zone:list", {})
    found = _services(req)
    available, others = _zones(req, found)
    result = [_entry(z, True, None) for z in available if z != svc.INTERNAL_ZONE]
    result += [_entry(z, False, None) for z in others if z != svc.INTERNAL_ZONE]
    return json_response({"availabilityZoneInfo": result})


def _timestamp(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def list_zones_detail(req: Request) -> Response:
    authorize(req, "os_compute_api:os-availability-zone:detail", {})
    found = _services(req)
    available, others = _zones(req, found)
    now = utcnow()
    hosts: dict[str, dict[str, dict[str, Any]]] = {}
    for service in found:
        if service.disabled:
            continue
        per_binary = hosts.setdefault(zone_of(req, service), {}).setdefault(service.host, {})
        per_binary[service.binary] = {
            "available": svc.is_up(service, req.app.settings.compute, now),
            "active": True,
            "updated_at": _timestamp(service.last_seen_up or service.updated_at)}
    result = [_entry(z, True, hosts.get(z, {})) for z in available]
    result += [_entry(z, False, None) for z in others]
    return json_response({"availabilityZoneInfo": result})


ROUTES = [
    Route("GET", API_PREFIX + "/os-availability-zone/detail", list_zones_detail),
    Route("GET", API_PREFIX + "/os-availability-zone", list_zones),
]
