"""/os-stowage-drain/{host} and /os-stowage-capacity: the operator's plans, read only.

    GET /os-stowage-drain/{host}[?verbose=true]   the drain plan of the host
    GET /os-stowage-capacity[?flavor=ID]          how many more of each flavor fit

A stowage extension (Nova has neither; docs/drain.md, docs/compatibility.md).
The drain plan says, for each server on the host, where a live or cold
migration would take it (`compute/drain/plan.py`: the real scheduler, with
each planned claim counted for the next), or why it cannot move; `verbose`
adds every host's rejection. The capacity report counts instances of each
flavor the cloud still takes, per zone, aggregate and cell, and the free
room no flavor can use (`compute/drain/capacity.py`). Nothing is claimed or
written by either. Answers 200; 404 "Compute host X could not be found." for
a host without a compute service; 409 when no control plane runs in this
process (an API without Placement). Policies `os_compute_api:os-stowage-drain`
and `os_compute_api:os-stowage-capacity`, admin only.
"""

from __future__ import annotations

from stowage.compute import flavors
from stowage.compute.api.common import API_PREFIX, as_bool, authorize, query_param
from stowage.compute.drain.capacity import capacity
from stowage.compute.drain.plan import plan_drain
from stowage.compute.scheduler.manager import Scheduler
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "DRAIN_POLICY", "CAPACITY_POLICY"]

DRAIN_POLICY = "os_compute_api:os-stowage-drain"
CAPACITY_POLICY = "os_compute_api:os-stowage-capacity"


def show_drain(req: Request) -> Response:
    authorize(req, DRAIN_POLICY, {})
    host = req.params["host_name"]
    try:
        plan = plan_drain(_scheduler(req), req.app.cells, host,
                          verbose=as_bool(query_param(req, "verbose") or False))
    except NotFound as exc:
        raise HTTPError(404, str(exc)) from None
    return json_response({"drain": plan.view()})


def show_capacity(req: Request) -> Response:
    authorize(req, CAPACITY_POLICY, {})
    wanted = query_param(req, "flavor")
    with req.app.db.read() as conn:
        found = flavors.list_flavors(conn, req.context,
                                     flavors.ListQuery(is_public=None, sort_key="flavorid"))
    snapshots = [flavors.snapshot(f) for f in found
                 if wanted is None or wanted in (f.flavorid, f.name)]
    plane = req.app.plane
    assert plane is not None  # _scheduler said so
    report = capacity(_scheduler(req), req.app.cells, snapshots, plane.placement)
    return json_response({"capacity": report.view()})


def _scheduler(req: Request) -> Scheduler:
    """This process's scheduler, or one made for the request (its constructor does no
    I/O) when the scheduler runs elsewhere: both read the same Placement and records."""
    plane = req.app.plane
    if plane is None:
        raise HTTPError(409, "The compute control plane is not running in this process.")
    here: Scheduler | None = plane.scheduler
    if here is not None:
        return here
    return Scheduler(plane.settings, plane.api_db, plane.placement, cell_db=plane.db,
                     cells=plane.cells)


ROUTES = [
    Route("GET", API_PREFIX + "/os-stowage-drain/{host_name}", show_drain),
    Route("GET", API_PREFIX + "/os-stowage-capacity", show_capacity),
]
