"""Carrying a drain out through the Compute API, as an operator would by hand.

    disable HOST's compute service (reason "draining"): the scheduler stops
        │   choosing it (ComputeFilter, and its node's COMPUTE_STATUS_DISABLED)
    finish what a crashed run left: each cold migration from HOST waiting in
        │   VERIFY_RESIZE is confirmed, each move in flight waited for
    loop:  GET /os-stowage-drain/HOST  (the plan, against Placement now)
        │   live: os-migrateLive {host: planned}   cold: migrate {host: planned},
        │   then confirmResize -- at most `max_parallel` at once, each waited for
        │   a move that failed (its planned host taken meanwhile...) is planned
        │   again, up to `replans` times; busy servers are waited for
        ▼
    report: moved (where), failed (why: the plan's or the move's own
            error), skipped (why)

Why through the API: the moves are the real ones (the conductor's journaled
steps, the scheduler checking the requested host, the policies), and the
state of a drain is the cloud's own -- a server off HOST was moved, a
migration from HOST in VERIFY_RESIZE awaits its confirm. So a run killed
at any point is resumed by running it again: nothing is moved twice, since
only servers still on HOST are planned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from stowage.compute.drain.plan import BUSY, COLD, LIVE, SKIP, UNPLACEABLE
from stowage.compute.drain.progress import Progress

__all__ = ["ComputeCalls", "DrainRun", "Outcome", "DrainFailed", "REASON"]

LOG = logging.getLogger(__name__)
REASON = "draining"
_SETTLING = {"MIGRATING", "RESIZE", "REVERT_RESIZE", "BUILD"}
_OPEN = {"queued", "preparing", "running", "pre-migrating", "migrating", "post-migrating",
         "confirming", "accepted"}


class ComputeCalls(Protocol):
    """One Compute API request (JSON in, status and JSON out; admin, latest microversion)."""

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]: ...


class DrainFailed(Exception):
    """The drain cannot go on (no such host, the API refuses the service update...)."""


@dataclass
class Outcome:
    id: str
    name: str
    result: str  # moved, failed, skipped
    action: str
    planned: str | None = None
    destination: str | None = None
    reason: str | None = None
    attempts: int = 0


class DrainRun:
    """One `stowage manage host drain HOST`; `run()` returns the outcomes, by server."""

    def __init__(self, api: ComputeCalls, host: str, progress: Progress, max_parallel: int = 2,
                 replans: int = 2, timeout: float = 900.0, poll: float = 0.2,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.api = api
        self.host = host
        self.progress = progress
        self.max_parallel = max(1, max_parallel)
        self.replans = replans
        self.timeout = timeout
        self.poll = poll
        self.sleep = sleep
        self.outcomes: dict[str, Outcome] = {}
        self._attempts: dict[str, int] = {}

    def run(self) -> dict[str, Outcome]:
        self.disable()
        self.finish_in_flight()
        with ThreadPoolExecutor(self.max_parallel, thread_name_prefix="drain") as pool:
            while True:
                plan = self._get(f"/os-stowage-drain/{self.host}")["drain"]
                self.progress.start(len(self.outcomes) + len(
                    [s for s in plan["servers"] if s["id"] not in self.outcomes]))
                todo, busy = self._sort(plan["servers"])
                if not todo and not busy:
                    break
                if todo:
                    list(pool.map(self._move, todo))
                else:
                    for server in busy:
                        self._settle(server["id"])
                    self.finish_in_flight()
        self.progress.finish()
        return self.outcomes

    # --- the service and what a previous run left ---------------------------------
    def disable(self) -> None:
        services = self._get(f"/os-services?host={self.host}&binary=nova-compute")["services"]
        if not services:
            raise DrainFailed(f"Compute host {self.host} could not be found.")
        service = services[0]
        if service["status"] == "disabled" and service.get("disabled_reason") == REASON:
            self.progress.note(f"compute service of {self.host} already disabled ({REASON})")
            return
        self._call("PUT", f"/os-services/{service['id']}",
                   {"status": "disabled", "disabled_reason": REASON})
        self.progress.note(f"disabled the compute service of {self.host} ({REASON})")

    def finish_in_flight(self) -> None:
        """Moves from HOST a previous run started: wait for them; confirm the cold ones.

        A user's resize waiting in VERIFY_RESIZE is left for its owner to confirm or
        revert (its server is on the new host already, so no plan names it)."""
        found = self._get(f"/os-migrations?source_compute={self.host}")["migrations"]
        for mig in found:
            cold_waiting = mig["status"] == "finished" and mig["migration_type"] == "migration"
            if mig["status"] in _OPEN or cold_waiting:
                server = mig["instance_uuid"]
                view = self._settle(server)
                if (view is not None and view["status"] == "VERIFY_RESIZE"
                        and mig["migration_type"] == "migration"):
                    self._call("POST", f"/servers/{server}/action", {"confirmResize": None})
                    self.progress.note(f"confirmed the migration of {server} to "
                                       f"{view['OS-EXT-SRV-ATTR:host']}")
                    self._settle(server)

    # --- the plan's servers ----------------------------------------------------------
    def _sort(self, servers: list[dict[str, Any]]
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        todo, busy = [], []
        for server in servers:
            uuid = server["id"]
            if uuid in self.outcomes:
                continue
            action = server["action"]
            if action in (LIVE, COLD):
                todo.append(server)
            elif action == BUSY:
                busy.append(server)
            elif action == SKIP:
                self._settled(Outcome(uuid, server["name"], "skipped", action,
                                      reason=server["reason"]))
            elif action == UNPLACEABLE:
                self._settled(Outcome(uuid, server["name"], "failed", action,
                                      reason=server["reason"],
                                      attempts=self._attempts.get(uuid, 0)))
        return todo, busy

    def _move(self, server: dict[str, Any]) -> None:
        uuid, dest, action = server["id"], server["destination"], server["action"]
        attempt = self._attempts[uuid] = self._attempts.get(uuid, 0) + 1
        if action == LIVE:
            body: dict[str, Any] = {"os-migrateLive": {"host": dest, "block_migration": "auto"}}
        else:
            body = {"migrate": {"host": dest}}
        self.progress.note(f"{action} migration of {server['name']} ({uuid}) to {dest}")
        status, answer = self.api("POST", f"/servers/{uuid}/action", body)
        if status != 202:
            self._failed(server, attempt, _message(answer))
            return
        view = self._settle(uuid)
        if view is not None and view["status"] == "VERIFY_RESIZE":
            self._call("POST", f"/servers/{uuid}/action", {"confirmResize": None})
            view = self._settle(uuid)
        if view is None:
            self._settled(Outcome(uuid, server["name"], "skipped", action, dest,
                                  reason="deleted during the drain", attempts=attempt))
            return
        where = view["OS-EXT-SRV-ATTR:host"]
        if where != self.host:
            self._settled(Outcome(uuid, server["name"], "moved", action, dest, where,
                                  attempts=attempt))
            return
        self._failed(server, attempt, self._why_failed(uuid))

    def _failed(self, server: dict[str, Any], attempt: int, reason: str) -> None:
        """Planned again next round, unless it had its tries: then failed for good."""
        if attempt <= self.replans:
            self.progress.note(f"{server['name']} did not move ({reason}); planning it again")
            return
        self._settled(Outcome(server["id"], server["name"], "failed", server["action"],
                              server["destination"], reason=reason, attempts=attempt))

    def _settled(self, outcome: Outcome) -> None:
        self.outcomes[outcome.id] = outcome
        where = f" -> {outcome.destination}" if outcome.destination else ""
        why = f": {outcome.reason}" if outcome.reason else ""
        self.progress.settled(outcome.result,
                              f"{outcome.result} {outcome.name} ({outcome.id}){where}{why}")

    # --- waiting and reading -----------------------------------------------------------
    def _settle(self, uuid: str) -> dict[str, Any] | None:
        """The server once no task runs on it (None: it is gone)."""
        deadline = time.monotonic() + self.timeout
        while True:
            status, answer = self.api("GET", f"/servers/{uuid}")
            if status == 404:
                return None
            if status != 200:
                raise DrainFailed(f"GET /servers/{uuid}: {status} {_message(answer)}")
            view: dict[str, Any] = answer["server"]
            if view["OS-EXT-STS:task_state"] is None and view["status"] not in _SETTLING:
                return view
            if time.monotonic() > deadline:
                raise DrainFailed(f"server {uuid} still {view['status']}/"
                                  f"{view['OS-EXT-STS:task_state']} after {self.timeout} s")
            self.sleep(self.poll)

    def _why_failed(self, uuid: str) -> str:
        """The newest action's failed event's details (2.84), else its fault, else its
        migration's status."""
        _, listing = self.api("GET", f"/servers/{uuid}/os-instance-actions")
        actions = (listing or {}).get("instanceActions") or []
        if actions:
            newest = actions[0]
            _, shown = self.api("GET", f"/servers/{uuid}/os-instance-actions/"
                                       f"{newest['request_id']}")
            for event in (shown or {}).get("instanceAction", {}).get("events") or []:
                if event.get("result") == "Error":
                    return str(event.get("details") or f"{event['event']} failed")
            if newest.get("message"):
                return str(newest["message"])
        return "the move ended with the server still on the host"

    def _get(self, path: str) -> Any:
        return self._call("GET", path)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        status, answer = self.api(method, path, body)
        if status >= 400:
            raise DrainFailed(f"{method} {path}: {status} {_message(answer)}")
        return answer


def _message(answer: Any) -> str:
    """The message of a Nova-style error body ({"badRequest": {"message": ...}})."""
    try:
        return str(next(iter(answer.values()))["message"])
    except (AttributeError, StopIteration, KeyError, TypeError):
        return str(answer)[:500]
