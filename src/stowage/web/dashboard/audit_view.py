"""The accounting audit on the dashboard: green, or the violations as sentences.

It runs `compute.audit.audit` -- the very function `stowage manage placement
audit` runs -- over every cell's records, with the control plane's
Placement and Network clients. An audit reads every provider's allocations
(seconds with a thousand hosts), so a page view never waits for one: the
page shows the latest result and starts a new run in the background when
that result is stale. A result is stale after `MAX_AGE` seconds, or after
ten times as long as the run took, whichever is longer -- the audit takes
at most a tenth of a worker however large the cloud. The JSON route
(`/dashboard/api/audit?wait=1`) may wait for a run started after the request.
"""

from __future__ import annotations

import time
from typing import Any

from stowage.compute.audit import audit
from stowage.timeutil import utcnow
from stowage.web.dashboard.background import Background
from stowage.web.dashboard.world import World

__all__ = ["AuditView", "MAX_AGE"]

MAX_AGE = 3.0


class AuditView(Background):
    name = "audit"

    def __init__(self, world: World, max_age: float = MAX_AGE) -> None:
        super().__init__(max_age)
        self.world = world

    def pending(self) -> dict[str, Any]:
        return {"available": True, "running": True, "violations": [], "ok": None,
                "checked_at": None, "seconds": None}

    def failed(self) -> dict[str, Any]:
        return {**super().failed(), "violations": []}

    def run(self) -> dict[str, Any]:
        """One audit now, on the calling thread (the background runs call this)."""
        plane = self.world.plane
        if plane is None or self.world.cells is None:
            return {"available": False, "violations": [], "seconds": 0.0,
                    "why": "The audit needs Compute and Placement in this process."}
        started = time.monotonic()
        dbs = [db for _, db in self.world.cell_dbs()]
        problems = audit(dbs, plane.placement, plane.network)
        return {"available": True, "running": False, "violations": problems,
                "ok": not problems, "checked_at": utcnow().isoformat(timespec="seconds"),
                "seconds": round(time.monotonic() - started, 3)}
