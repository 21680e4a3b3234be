"""What the API says of servers and hosts whose cell database does not answer.

Nova's down-cell support (microversion 2.69): the records a cell holds
cannot be read, so the API answers from what the API database knows --
the instance mappings, request specs and host mappings -- with `status`
"UNKNOWN":

    GET /servers[/detail]   a minimal record per live server of the down cell,
                            before the others, only for a listing with no
                            filter but all_tenants, no sort, limit or marker;
                            otherwise (and below 2.69) the cell is left out
    GET /servers/{id}       id, status, tenant_id, created, links, image,
                            flavor, zone, power_state 0, user_id (+ groups)
                            from 2.69; below it a 500, as Nova
    GET /os-services        binary, host, status for each host mapped to the
                            cell from 2.69; below it the cell is left out

A cell is down when reading its database raises a DBAPIError (it cannot be
reached, or its schema is gone).
"""

from __future__ import annotations

from typing import Any

from stowage.compute import cells as cell_records
from stowage.compute import instances as inst
from stowage.compute.api import server_queries as queries
from stowage.compute.api import server_views as views
from stowage.compute.api.common import at_least, links
from stowage.compute.cells import CellMapping
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["DOWN_CELLS", "listing_allows", "minimal_servers", "minimal_server",
           "minimal_services", "UNKNOWN"]

DOWN_CELLS = 69
UNKNOWN = "UNKNOWN"


def listing_allows(req: Request) -> bool:
    """Minimal records join a listing only without filters (but all_tenants), sort keys,
    limit or marker: they cannot be filtered, sorted or paged (Nova's rule)."""
    return at_least(req, DOWN_CELLS) and set(req.query_dict()) <= {"all_tenants"}


def minimal_servers(req: Request, down: list[CellMapping], project_id: str | None,
                    detailed: bool) -> list[dict[str, Any]]:
    """A record per live server mapped to the `down` cells (of `project_id`, if given)."""
    with req.app.db.read() as conn:
        rows = [row for cell in down for row in cell_records.mapped_in(conn, cell, project_id)]
    shown = []
    for row in rows:
        view: dict[str, Any] = {"id": row.instance_uuid, "status": UNKNOWN}
        if detailed:
            view.update({"tenant_id": row.project_id, "created": views.isotime(row.created_at)})
        view["links"] = links(req, "servers", str(row.instance_uuid))
        shown.append(view)
    return shown


def minimal_server(req: Request, uuid: str) -> dict[str, Any]:
    """A server of a down cell, from its mapping and request spec; 404 when it was deleted
    or never had a spec; below 2.69 the cell's error stands (a 500)."""
    with req.app.db.read() as conn:
        mapping = cell_records.mapping_of(conn, uuid)
        if mapping is None or mapping.queued_for_delete:
            raise HTTPError(404, f"Instance {uuid} could not be found.")
        try:
            spec = inst.request_spec(conn, uuid)
        except NotFound:
            raise HTTPError(404, f"Instance {uuid} could not be found.") from None
        groups = queries.groups_of(conn, uuid)
    image = (spec.get("image") or {}).get("id")
    view: dict[str, Any] = {
        "id": uuid, "status": UNKNOWN, "tenant_id": mapping.project_id,
        "created": views.isotime(mapping.created_at),
        "links": links(req, "servers", uuid),
        "image": "" if not image or spec.get("is_volume_backed") else {
            "id": image, "links": [{"rel": "bookmark", "href": req.url(f"/images/{image}")}]},
        "flavor": views.flavor_view(req, dict(spec.get("flavor") or {}),
                                    views.Shown.for_request(req)),
        "OS-EXT-AZ:availability_zone": spec.get("availability_zone") or UNKNOWN,
        "OS-EXT-STS:power_state": 0,
        "user_id": spec.get("user_id") or UNKNOWN,
    }
    if at_least(req, views.SERVER_GROUPS):
        view["server_groups"] = groups
    return view


def minimal_services(req: Request, down: list[CellMapping]) -> list[dict[str, Any]]:
    """The compute hosts mapped to the `down` cells, each as much as the API knows."""
    with req.app.db.read() as conn:
        hosts = [host for cell in down for host in cell_records.hosts_of(conn, cell)]
    return [{"binary": "nova-compute", "host": host, "status": UNKNOWN} for host in hosts]
