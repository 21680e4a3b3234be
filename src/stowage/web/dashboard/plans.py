"""The drain plan and the capacity report on the dashboard: the route's own code, read only.

Both call the functions `GET /compute/v2.1/os-stowage-drain/{host}` and
`GET /compute/v2.1/os-stowage-capacity` answer with
(`compute.api.drain.drain_plan`, `capacity_report`), so the dashboard shows
exactly what `stowage manage host drain HOST --dry-run` and `stowage manage
capacity` print: there is no second planner. Nothing is claimed or written.

A drain plan costs one scheduler decision per server of the host, so it is
made when its page is opened, for that host only. The capacity report asks
the scheduler once per flavor over every host and reads every usable host's
room (seconds with a thousand hosts): like the audit it runs in the
background (`background.py`), at least `CAPACITY_MAX_AGE` seconds apart and
at most a tenth of a worker, and the page's refresh reads the latest result.
"""

from __future__ import annotations

import time
from typing import Any

from stowage.compute.api.drain import capacity_report, drain_plan
from stowage.context import RequestContext
from stowage.errors import NotFound
from stowage.timeutil import utcnow
from stowage.web.dashboard.background import Background
from stowage.web.dashboard.world import World
from stowage.web.errors import HTTPError

__all__ = ["plan_for", "CapacityView", "CAPACITY_MAX_AGE", "NoPlan"]

CAPACITY_MAX_AGE = 60.0
_NO_PLANE = "Drain plans and capacity need the compute control plane in this process."


class NoPlan(Exception):
    """No plan to show: the host is unknown (404) or nothing can plan here (409)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def plan_for(world: World, host: str, verbose: bool = False) -> dict[str, Any]:
    """The dry-run drain plan of `host`, as the route's JSON has it (`servers`, `totals`)."""
    if world.plane is None or world.cells is None:
        raise NoPlan(409, _NO_PLANE)
    try:
        return drain_plan(world.plane, world.cells, host, verbose=verbose).view()
    except NotFound as exc:
        raise NoPlan(404, str(exc)) from None
    except HTTPError as exc:
        raise NoPlan(exc.status, exc.detail) from None


class CapacityView(Background):
    """The latest capacity report of every flavor, kept fresh in the background."""

    name = "capacity"

    def __init__(self, world: World, max_age: float = CAPACITY_MAX_AGE) -> None:
        super().__init__(max_age)
        self.world = world
        # Flavors are listed as an admin sees them (disabled and private ones too),
        # as the route does for its admin caller.
        self.context = RequestContext(user_id="dashboard", project_id="dashboard",
                                      roles=("admin",))

    def run(self) -> dict[str, Any]:
        world = self.world
        if world.plane is None or world.cells is None or world.api_db is None:
            return {"available": False, "seconds": 0.0, "why": _NO_PLANE}
        started = time.monotonic()
        report = capacity_report(world.plane, world.cells, world.api_db, self.context)
        return {"available": True, "running": False, **report.view(),
                "checked_at": utcnow().isoformat(timespec="seconds"),
                "seconds": round(time.monotonic() - started, 3)}
