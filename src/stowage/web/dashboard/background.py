"""A result the dashboard keeps fresh in the background, never computed by a page view.

The audit and the capacity report both read the whole cloud (seconds with a
thousand hosts), so a view shows the latest result at once and, when that is
stale, starts one run in a background thread. A result is stale after
`max_age` seconds, or after ten times as long as its run took, whichever is
longer: the work takes at most a tenth of a worker however large the cloud,
and the page's 3-second poll costs a dictionary read. `fresh()` waits for a
run started after the call (the JSON routes' `?wait=1`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["Background", "DUTY"]

LOG = logging.getLogger(__name__)
DUTY = 10.0


class Background:
    """Subclasses say what to run (`run`), its name, and what to show before the first
    result (`pending`) or after a failed run (`failed`)."""

    name = "work"

    def __init__(self, max_age: float) -> None:
        self.max_age = max_age
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None
        self._result: dict[str, Any] | None = None
        self._taken = 0.0
        self._began = 0.0  # when the run behind `_result` started

    def run(self) -> dict[str, Any]:
        raise NotImplementedError

    def pending(self) -> dict[str, Any]:
        return {"available": True, "running": True}

    def failed(self) -> dict[str, Any]:
        return {"available": False, "seconds": 0.0,
                "why": f"The {self.name} failed; see the service log."}

    def _stale(self) -> bool:
        if self._result is None:
            return True
        age = max(self.max_age, DUTY * float(self._result.get("seconds") or 0.0))
        return time.monotonic() - self._taken > age

    def latest(self) -> dict[str, Any]:
        """The latest result at once (`pending()` before the first); a run in the
        background is started when it is stale."""
        with self._lock:
            if self._running is None and self._stale():
                self._launch()
            return self._result or self.pending()

    def fresh(self) -> dict[str, Any]:
        """The result of a run started after this call: waits for it."""
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

    def _launch(self) -> None:
        started = time.monotonic()
        self._running = threading.Thread(target=self._background, args=(started,),
                                         daemon=True, name=f"dashboard-{self.name}")
        self._running.start()

    def _background(self, started: float) -> None:
        try:
            result = self.run()
        except Exception:  # the next view starts another run; the page says it failed
            LOG.exception("dashboard %s failed", self.name)
            result = self.failed()
        with self._lock:
            self._result = result
            self._taken = time.monotonic()
            self._began = started
            self._running = None
