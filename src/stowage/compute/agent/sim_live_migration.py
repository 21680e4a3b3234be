"""The simulated hypervisor's live migration: a memory copy that takes time and can be stopped.

A live migration touches two drivers, one per host; each method below runs
on one of them::

    destination                              source
    check_can_live_migrate_destination ──>   check_can_live_migrate_source
    pre_live_migration (paused guest, `incoming` = the migration)
                                             live_migration: starts the copy (a thread)
                                               progress / abort / force_complete
                                               copy done: the source guest is set aside
    post_live_migration_at_destination       post_live_migration (set-aside guest dropped)
    undo: rollback_live_migration_at_destination, rollback_live_migration (guest runs again)

The copy lasts `seconds` (0: done within the call) and advances in small
increments, so the conductor's polls see its progress in bytes; an abort
stops it with the guest still running on the source, a force-complete ends
it at once. Requests that arrive before the copy started are remembered and
applied when it starts. Every method is idempotent; like the rest of the
driver, a method that raises changed nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stowage.compute.agent.driver import GuestNotFound
from stowage.compute.states import RUNNING, SHUTDOWN
from stowage.timeutil import utcnow

if TYPE_CHECKING:
    from stowage.compute.agent.simulated import Guest

__all__ = ["SimulatedLiveMigration", "CopyJob", "LIVE_STEPS", "PAUSED"]

# Fault injection names (`driver.fail(step)`), one per driver method that can fail.
LIVE_STEPS = ("check_can_live_migrate_destination", "check_can_live_migrate_source",
              "pre_live_migration", "live_migration", "live_migration_copy",
              "post_live_migration", "post_live_migration_at_destination",
              "rollback_live_migration")
PAUSED = 3  # Nova's power_state of the destination guest while memory is copied into it
_TICK = 0.05  # seconds between two progress updates of a running copy


@dataclass
class CopyJob:
    """One running copy on the source; its thread is the only writer of `state`."""

    instance_uuid: str
    migration_uuid: str
    memory_total: int
    disk_total: int
    seconds: float
    state: str = "running"  # running | completed | failed | cancelled
    fraction: float = 0.0
    error: str = ""
    abort: threading.Event = field(default_factory=threading.Event)
    force: threading.Event = field(default_factory=threading.Event)

    def progress(self) -> dict[str, Any]:
        memory = int(self.memory_total * self.fraction)
        disk = int(self.disk_total * self.fraction)
        return {"state": self.state, "error": self.error,
                "memory_total": self.memory_total, "memory_processed": memory,
                "memory_remaining": self.memory_total - memory,
                "disk_total": self.disk_total, "disk_processed": disk,
                "disk_remaining": self.disk_total - disk}


class SimulatedLiveMigration:
    """Mixed into `SimulatedDriver`: its guests, lock, persistence and faults are used here."""

    host: str
    guests: dict[str, Guest]
    leftovers: dict[tuple[str, str], Guest]
    _lock: threading.RLock
    _copies: dict[str, CopyJob]
    _requested: dict[str, str]

    if TYPE_CHECKING:
        def checkpoint(self, step: str) -> None: ...

        def _save(self, instance_uuid: str) -> None: ...

        def _guest(self, instance_uuid: str) -> Guest: ...

    # --- checks ---------------------------------------------------------------------
    def check_can_live_migrate_destination(self, instance_uuid: str,
                                           block_migration: bool | None) -> dict[str, Any]:
        """Destination: simulated hosts share no storage, so `auto` means a block migration."""
        self.checkpoint("check_can_live_migrate_destination")
        return {"block_migration": True if block_migration is None else block_migration}

    def check_can_live_migrate_source(self, instance_uuid: str,
                                      dest_check: Mapping[str, Any]) -> None:
        with self._lock:
            self.checkpoint("check_can_live_migrate_source")
            self._guest(instance_uuid)

    # --- destination ---------------------------------------------------------------
    def pre_live_migration(self, instance_uuid: str, migration_uuid: str,
                           flavor: Mapping[str, Any]) -> None:
        """An empty guest, paused, ready to receive the memory (the move's `incoming`)."""
        from stowage.compute.agent.simulated import Guest  # simulated.py imports this module

        with self._lock:
            self.checkpoint("pre_live_migration")
            current = self.guests.get(instance_uuid)
            if current is not None and current.incoming == migration_uuid:
                return
            if current is not None:
                raise GuestNotFound(f"instance {instance_uuid} already has a guest on "
                                    f"{self.host}")
            self.guests[instance_uuid] = Guest(dict(flavor), PAUSED, incoming=migration_uuid)
            self._save(instance_uuid)

    def post_live_migration_at_destination(self, instance_uuid: str,
                                           migration_uuid: str) -> None:
        """The guest runs here now; done already is fine."""
        with self._lock:
            self.checkpoint("post_live_migration_at_destination")
            guest = self._guest(instance_uuid)
            if guest.incoming == migration_uuid:
                guest.incoming, guest.power_state = None, RUNNING
                # A new log here (as a new console file); uptime counts from the arrival.
                guest.booted_at = guest.booted_at or utcnow()
                self._save(instance_uuid)

    def rollback_live_migration_at_destination(self, instance_uuid: str,
                                               migration_uuid: str) -> None:
        """Destroy the guest the move prepared here; any other guest is not the move's."""
        with self._lock:
            guest = self.guests.get(instance_uuid)
            if guest is not None and guest.incoming == migration_uuid:
                del self.guests[instance_uuid]
                self._save(instance_uuid)

    # --- source: the copy ------------------------------------------------------------
    def live_migration(self, instance_uuid: str, migration_uuid: str, dest_host: str,
                       memory_bytes: int, disk_bytes: int, seconds: float) -> None:
        """Start copying the guest to `dest_host`; a copy already started or done is kept."""
        with self._lock:
            if migration_uuid in self._copies or (instance_uuid, migration_uuid) in \
                    self.leftovers:
                return
            self.checkpoint("live_migration")
            self._guest(instance_uuid)
            job = CopyJob(instance_uuid, migration_uuid, memory_bytes, disk_bytes, seconds)
            self._copies[migration_uuid] = job
            asked = self._requested.pop(migration_uuid, None)
            if asked == "abort":
                job.abort.set()
            elif asked == "force":
                job.force.set()
        if seconds <= 0 and not job.abort.is_set():
            self._advance(job, 1.0)
            return
        threading.Thread(target=self._copy, args=(job,), daemon=True,
                         name=f"live-migration-{migration_uuid[:8]}").start()

    def _copy(self, job: CopyJob) -> None:
        started = time.monotonic()
        while job.state == "running":
            if job.abort.wait(min(_TICK, job.seconds)):
                job.state = "cancelled"
                return
            fraction = 1.0 if job.force.is_set() else min(
                1.0, (time.monotonic() - started) / job.seconds)
            self._advance(job, fraction)

    def _advance(self, job: CopyJob, fraction: float) -> None:
        """Copy up to `fraction`; at 1.0 the source guest is set aside (the guest moved)."""
        from stowage.compute.agent.simulated import Guest, SimulatedFault

        with self._lock:
            if job.abort.is_set():  # a rollback or abort came first: the guest stays here
                job.state = "cancelled"
                return
            guest = self.guests.get(job.instance_uuid)
            if guest is None:
                job.state, job.error = "failed", f"the guest vanished from {self.host}"
                return
            try:
                self.checkpoint("live_migration_copy")
            except SimulatedFault as exc:
                job.state, job.error = "failed", str(exc)
                return
            job.fraction = fraction
            if fraction < 1.0:
                return
            self.leftovers[(job.instance_uuid, job.migration_uuid)] = Guest(
                guest.flavor, SHUTDOWN, guest.incoming, guest.console, guest.booted_at)
            del self.guests[job.instance_uuid]
            self._save(job.instance_uuid)
            job.state = "completed"

    def live_migration_progress(self, instance_uuid: str,
                                migration_uuid: str) -> dict[str, Any]:
        """The copy's state and bytes; a copy this driver no longer knows is judged by the
        guests: set aside here means it completed, otherwise it is not running."""
        with self._lock:
            job = self._copies.get(migration_uuid)
            if job is not None:
                return job.progress()
            done = (instance_uuid, migration_uuid) in self.leftovers
        return {"state": "completed" if done else "failed",
                "error": "" if done else f"no live migration {migration_uuid} on {self.host}"}

    def live_migration_abort(self, migration_uuid: str) -> bool:
        """Stop the copy (or the one about to start); False when it is past stopping."""
        with self._lock:
            job = self._copies.get(migration_uuid)
            if job is None:
                self._requested[migration_uuid] = "abort"
                return True
            if job.state != "running":
                return job.state == "cancelled"
            job.abort.set()
            return True

    def live_migration_force_complete(self, migration_uuid: str) -> bool:
        """Finish the copy now (Nova pauses the guest or switches to post-copy)."""
        with self._lock:
            job = self._copies.get(migration_uuid)
            if job is None:
                self._requested[migration_uuid] = "force"
                return True
            job.force.set()
            return job.state in ("running", "completed")

    # --- source: after -------------------------------------------------------------------
    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """The guest runs on the destination: forget what the copy left here."""
        with self._lock:
            self.checkpoint("post_live_migration")
            self.leftovers.pop((instance_uuid, migration_uuid), None)
            self._copies.pop(migration_uuid, None)
            self._save(instance_uuid)

    def rollback_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Stop a copy still running and run the guest here again, where it was."""
        from stowage.compute.agent.simulated import Guest

        with self._lock:
            self.checkpoint("rollback_live_migration")
            job = self._copies.pop(migration_uuid, None)
            if job is not None:
                job.abort.set()
            old = self.leftovers.pop((instance_uuid, migration_uuid), None)
            if old is not None and instance_uuid not in self.guests:
                self.guests[instance_uuid] = Guest(old.flavor, RUNNING, old.incoming,
                                                   old.console, old.booted_at or utcnow())
            self._guest(instance_uuid).power_state = RUNNING
            self._save(instance_uuid)
