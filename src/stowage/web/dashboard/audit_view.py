"""The accounting audit on the dashboard: green, or the violations as sentences.

It runs `compute.audit.audit` -- the very function `stowage manage placement
audit` runs -- over every cell's records, with the control plane's
Placement and Network clients. An audit reads every provider's allocations,
so it is not run per page view: a result younger than `MAX_AGE` seconds is
shown as it is, and concurrent viewers share one run.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from stowage.compute.audit import audit
from stowage.timeutil import utcnow
from stowage.web.dashboard.world import World

__all__ = ["AuditView", "MAX_AGE"]

MAX_AGE = 3.0


class AuditView:
    def __init__(self, world: World, max_age: float = MAX_AGE) -> None:
        self.world = world
        self.max_age = max_age
        self._lock = threading.Lock()
        self._result: dict[str, Any] | None = None
        self._taken = 0.0

    def result(self) -> dict[str, Any]:
        """The latest audit, run again first when older than `max_age`."""
        with self._lock:
            if self._result is None or time.monotonic() - self._taken > self.max_age:
                self._result = self._run()
                self._taken = time.monotonic()
            return self._result

    def _run(self) -> dict[str, Any]:
        plane = self.world.plane
        if plane is None or self.world.cells is None:
            return {"available": False, "violations": [],
                    "why": "the audit needs Compute and Placement in this process"}
        started = time.monotonic()
        dbs = [db for _, db in self.world.cell_dbs()]
        problems = audit(dbs, plane.placement, plane.network)
        return {"available": True, "violations": problems, "ok": not problems,
                "checked_at": utcnow().isoformat(),
                "seconds": round(time.monotonic() - started, 3)}
