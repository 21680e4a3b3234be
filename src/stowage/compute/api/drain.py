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

from typing import Any

from stowage.compute import flavors
from stowage.compute.api.common import API_PREFIX, as_bool, authorize, query_param
from stowage.compute.drain.capacity import CapacityReport, capacity
from stowage.compute.drain.plan import DrainPlan, plan_drain
from stowage.compute.scheduler.manager import Scheduler
from stowage.context import RequestContext
from stowage.db import Database
from stowage.errors import NotFound
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "DRAIN_POLICY", "CAPACITY_POLICY", "drain_plan", "capacity_report"]

DRAIN_POLICY = "os_compute_api:os-stowage-drain"
CAPACITY_POLICY = "os_compute_api:os-stowage-capacity"


def show_drain(req: Request) -> Response:
    authorize(req, DRAIN_POLICY, {})
    host = req.params["host_name"]
    try:
        plan = drain_plan(req.app.plane, req.app.cells, host,
                          verbose=as_bool(query_param(req, "verbose") or False))
    except NotFound as exc:
        raise HTTPError(404, str(exc)) from None
    return json_response({"drain": plan.view()})


def show_capacity(req: Request) -> Response:
    authorize(req, CAPACITY_POLICY, {})
    report = capacity_report(req.app.plane, req.app.cells, req.app.db, req.context,
                             query_param(req, "flavor"))
    return json_response({"capacity": report.view()})


def drain_plan(plane: Any, cells: Any, host: str, verbose: bool = False) -> DrainPlan:
    """The plan this route answers, for any caller in the process (the dashboard shows
    the same one): NotFound for an unknown host, HTTPError 409 without a control plane."""
    return plan_drain(_scheduler(plane), cells, host, verbose=verbose)


def capacity_report(plane: Any, cells: Any, api_db: Database, context: RequestContext,
                    wanted: str | None = None) -> CapacityReport:
    """The capacity report this route answers (every flavor `context` may list, or the
    one `wanted` names), for any caller in the process (the dashboard shows it too)."""
    scheduler = _scheduler(plane)
    with api_db.read() as conn:
        found = flavors.list_flavors(conn, context,
                                     flavors.ListQuery(is_public=None, sort_key="flavorid"))
    snapshots = [flavors.snapshot(f) for f in found
                 if wanted is None or wanted in (f.flavorid, f.name)]
    return capacity(scheduler, cells, snapshots, plane.placement)


def _scheduler(plane: Any) -> Scheduler:
    """This process's scheduler, or one made for the request (its constructor does no
    I/O) when the scheduler runs elsewhere: both read the same Placement and records."""
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
