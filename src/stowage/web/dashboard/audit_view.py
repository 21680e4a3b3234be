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

import logging
import threading
import time
from typing import Any

from stowage.compute.audit import audit
from stowage.timeutil import utcnow
from stowage.web.dashboard.world import World

__all__ = ["AuditView", "MAX_AGE"]

LOG = logging.getLogger(__name__)
MAX_AGE = 3.0
_DUTY = 10.0
_RUNNING = {"available": True, "running": True, "violations": [], "ok": None,
            "checked_at": None, "seconds": None}


class AuditView:
    def __init__(self, world: World, max_age: float = MAX_AGE) -> None:
        self.world = world
        self.max_age = max_age
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        self._result: dict[str, Any] | None = None
        self._taken = 0.0
        self._began = 0.0  # when the run behind `_result` started

    def _stale(self) -> bool:
        if self._result is None:
            return True
        age = max(self.max_age, _DUTY * float(self._result.get("seconds") or 0.0))
        return time.monotonic() - self._taken > age

    def latest(self) -> dict[str, Any]:
        """The latest result at once (`running` before the first); a run in the
        background is started when it is stale."""
        with self._lock:
            self._start_if_stale()
            return self._result or dict(_RUNNING)

    def fresh(self) -> dict[str, Any]:
        """The result of a run started after this call: waits for it (the JSON route's
        `?wait=1`, what a script checking the accounting after a change wants)."""
        asked = time.monotonic()
        while True:
            with self._lock:
                if self._running is None:
                    if self._result is not None and self._began >= asked:
                        return self._result
                    self._launch()
                running = self._running
            assert running is not None
            running.join()

    def _start_if_stale(self) -> None:
        """Under the lock: start a run if the result is stale and none runs."""
        if self._running is None and self._stale():
            self._launch()

    def _launch(self) -> None:
        started = time.monotonic()
        self._running = threading.Thread(target=self._background, args=(started,),
                                         daemon=True, name="dashboard-audit")
        self._running.start()

    def _background(self, started: float) -> None:
        try:
            result = self.run()
        except Exception:  # the next view starts another run; the page says it failed
            LOG.exception("dashboard audit failed")
            result = {"available": False, "violations": [], "seconds": 0.0,
                      "why": "The audit failed; see the service log."}
        with self._lock:
            self._store(result)
            self._began = started
            self._running = None

    def _store(self, result: dict[str, Any]) -> None:
        self._result = result
        self._taken = time.monotonic()

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
