"""The simulated hypervisor: guests are in-memory records, and any step can be told to fail.

It behaves like a careful real driver: each method is idempotent and a
failing method changes nothing. Tests arm faults per host::

    driver.fail("spawn")                       # the next spawn raises SimulatedFault
    driver.fail("finish_migration", times=None, message="disk lost")   # every time
    driver.clear_faults()

Steps are the driver method names plus "claim" (the agent's own resource
claim, see `checkpoint`); the fault table itself, and the steps the agent
checks (prep_resize, heartbeat), are in faults.py. A move sets the source guest aside as a
*leftover* keyed by (instance, migration), so a same-host resize holds the
old guest and the new one at once, as a real hypervisor keeps the old disks.

Given a `GuestStore`, every change is written through to the database in the
call that makes it, and `load()` reads the host's guests back: restarting
the service is not a reboot of its hypervisors.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stowage.compute.agent import sim_console
from stowage.compute.agent.driver import GuestNotFound
from stowage.compute.agent.faults import (
    ARMABLE_STEPS,
    FaultSpec,
    FaultSpecError,
    FaultTable,
    SimulatedFault,
)
from stowage.compute.agent.guest_store import GuestStore, StoredGuest
from stowage.compute.agent.sim_live_migration import CopyJob, SimulatedLiveMigration
from stowage.compute.states import NOSTATE, PAUSED_POWER, RUNNING, SHUTDOWN, SUSPENDED_POWER
from stowage.timeutil import utcnow

__all__ = ["SimulatedDriver", "SimulatedFault", "Guest", "STEPS", "RESCUE_KEY"]

# The steps a fault can be armed on (faults.py lists and explains them).
STEPS = ARMABLE_STEPS
# The leftover that holds a rescued guest's own disk (in place of a migration uuid).
RESCUE_KEY = "rescue"


@dataclass
class Guest:
    flavor: dict[str, Any]
    power_state: int = RUNNING
    # The move that brought this guest here, until confirmed or reverted.
    incoming: str | None = None
    # Its serial console's last lines (sim_console.py), and when it last booted.
    console: list[str] = field(default_factory=list)
    booted_at: datetime.datetime | None = None

    def write(self, lines: list[str]) -> None:
        self.console = (self.console + lines)[-sim_console.MAX_LINES:]


@dataclass
class SimulatedDriver(SimulatedLiveMigration):
    """In-memory guests of one host; thread-safe (steps of many operations interleave)."""

    host: str = "sim"
    guests: dict[str, Guest] = field(default_factory=dict)
    leftovers: dict[tuple[str, str], Guest] = field(default_factory=dict)
    store: GuestStore | None = None
    faults: FaultTable = field(default_factory=lambda: FaultTable(""))
    _lock: threading.RLock = field(default_factory=threading.RLock)
    # Live migrations (sim_live_migration.py): running copies, and requests that came early.
    _copies: dict[str, CopyJob] = field(default_factory=dict)
    _requested: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.faults.host:
            self.faults.host = self.host

    # --- fault injection ------------------------------------------------------
    def fail(self, step: str, times: int | None = 1, message: str | None = None) -> None:
        """Make the next `times` calls of `step` raise SimulatedFault (None = all of them)."""
        try:
            self.faults.arm(FaultSpec(step, times, message))
        except FaultSpecError as exc:
            raise ValueError(str(exc)) from None

    def clear_faults(self) -> None:
        self.faults.clear()

    def checkpoint(self, step: str) -> None:
        self.faults.fire(step)

    # --- persistence -------------------------------------------------------------
    def load(self) -> None:
        """Know the guests the store holds for this host (an agent starting again)."""
        if self.store is None:
            return
        with self._lock:
            for g in self.store.load():
                guest = Guest(g.flavor, g.power_state, g.incoming, list(g.console),
                              g.booted_at)
                if g.migration_uuid:
                    self.leftovers[(g.instance_uuid, g.migration_uuid)] = guest
                else:
                    self.guests[g.instance_uuid] = guest

    def _save(self, instance_uuid: str) -> None:
        """Write what this host now holds of `instance_uuid` (called under the lock)."""
        if self.store is None:
            return
        held = {key[1]: g for key, g in self.leftovers.items() if key[0] == instance_uuid}
        if instance_uuid in self.guests:
            held[""] = self.guests[instance_uuid]
        self.store.save(instance_uuid, {
            key: StoredGuest(instance_uuid, key, g.flavor, g.power_state, g.incoming,
                             g.console, g.booted_at)
            for key, g in held.items()})

    # --- guests -----------------------------------------------------------------
    def spawn(self, instance_uuid: str, flavor: Mapping[str, Any]) -> None:
        with self._lock:
            self.checkpoint("spawn")
            if instance_uuid not in self.guests:
                self.guests[instance_uuid] = self._booted(instance_uuid, Guest(dict(flavor)))
                self._save(instance_uuid)

    def destroy(self, instance_uuid: str) -> None:
        with self._lock:
            self.checkpoint("destroy")
            self.guests.pop(instance_uuid, None)
            for key in [k for k in self.leftovers if k[0] == instance_uuid]:
                del self.leftovers[key]
            self._save(instance_uuid)

    def power_off(self, instance_uuid: str) -> None:
        self._set_power("power_off", instance_uuid, SHUTDOWN)

    def power_on(self, instance_uuid: str) -> None:
        self._set_power("power_on", instance_uuid, RUNNING)

    def reboot(self, instance_uuid: str, hard: bool) -> None:
        """Restart the guest (a soft reboot of a guest that is not running is a hard one):
        it shuts down if it ran, and boots again, whatever state it was in."""
        with self._lock:
            self.checkpoint("reboot")
            guest = self._guest(instance_uuid)
            self._power_change(instance_uuid, guest, SHUTDOWN)
            self._power_change(instance_uuid, guest, RUNNING)
            self._save(instance_uuid)

    def rebuild(self, instance_uuid: str, flavor: Mapping[str, Any], power_on: bool,
                preserve_ephemeral: bool) -> None:
        """A fresh guest from the image, booted when `power_on`; no disk content is
        simulated, so `preserve_ephemeral` keeps nothing more. The console log goes on."""
        with self._lock:
            self.checkpoint("rebuild")
            old = self.guests.get(instance_uuid)
            guest = Guest(dict(flavor), SHUTDOWN, console=list(old.console) if old else [])
            self.guests[instance_uuid] = self._booted(instance_uuid, guest) if power_on else guest
            self._save(instance_uuid)

    def pause(self, instance_uuid: str) -> None:
        self._set_power("pause", instance_uuid, PAUSED_POWER, frozen=True)

    def unpause(self, instance_uuid: str) -> None:
        self._set_power("unpause", instance_uuid, RUNNING, frozen=True)

    def suspend(self, instance_uuid: str) -> None:
        self._set_power("suspend", instance_uuid, SUSPENDED_POWER, frozen=True)

    def resume(self, instance_uuid: str) -> None:
        self._set_power("resume", instance_uuid, RUNNING, frozen=True)

    def _set_power(self, step: str, instance_uuid: str, state: int,
                   frozen: bool = False) -> None:
        """Move the guest to `state`; `frozen` (pause, suspend and back) keeps it
        booted: it writes no console lines and its uptime goes on."""
        with self._lock:
            self.checkpoint(step)
            guest = self._guest(instance_uuid)
            if frozen:
                guest.power_state = state
            elif guest.power_state != state:
                self._power_change(instance_uuid, guest, state)
            self._save(instance_uuid)

    def _power_change(self, instance_uuid: str, guest: Guest, state: int) -> None:
        """Move `guest` to `state`, writing the boot or shutdown lines a real guest would."""
        if state == RUNNING:
            self._booted(instance_uuid, guest)
        else:
            if guest.power_state == RUNNING:
                guest.write(sim_console.shutdown_lines())
            guest.booted_at = None
        guest.power_state = state

    def _booted(self, instance_uuid: str, guest: Guest) -> Guest:
        """`guest` having just booted: its boot lines written, its uptime from now."""
        guest.write(sim_console.boot_lines(instance_uuid, self.host, guest.flavor))
        guest.power_state, guest.booted_at = RUNNING, utcnow()
        return guest

    def _guest(self, instance_uuid: str) -> Guest:
        guest = self.guests.get(instance_uuid)
        if guest is None:
            raise GuestNotFound(f"instance {instance_uuid} has no guest on {self.host}")
        return guest

    # --- moves ----------------------------------------------------------------
    def migrate_disk_and_power_off(self, instance_uuid: str, migration_uuid: str,
                                   dest_host: str, flavor: Mapping[str, Any]) -> None:
        with self._lock:
            self.checkpoint("migrate_disk_and_power_off")
            key = (instance_uuid, migration_uuid)
            if key in self.leftovers:
                return
            guest = self._guest(instance_uuid)
            # Powered off, its disks (and console file) set aside for a revert.
            leftover = Guest(guest.flavor, guest.power_state, guest.incoming, guest.console)
            self._power_change(instance_uuid, leftover, SHUTDOWN)
            self.leftovers[key] = leftover
            del self.guests[instance_uuid]
            self._save(instance_uuid)

    def finish_migration(self, instance_uuid: str, migration_uuid: str,
                         flavor: Mapping[str, Any], power_on: bool) -> None:
        with self._lock:
            self.checkpoint("finish_migration")
            current = self.guests.get(instance_uuid)
            if current is not None and current.incoming == migration_uuid:
                return
            guest = Guest(dict(flavor), SHUTDOWN, incoming=migration_uuid)
            self.guests[instance_uuid] = self._booted(instance_uuid, guest) if power_on else guest
            self._save(instance_uuid)

    def confirm_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        with self._lock:
            self.checkpoint("confirm_migration")
            self.leftovers.pop((instance_uuid, migration_uuid), None)
            guest = self.guests.get(instance_uuid)
            if guest is not None and guest.incoming == migration_uuid:
                guest.incoming = None
            self._save(instance_uuid)

    def finish_revert_migration(self, instance_uuid: str, migration_uuid: str,
                                power_on: bool) -> None:
        with self._lock:
            self.checkpoint("finish_revert_migration")
            power = RUNNING if power_on else SHUTDOWN
            old = self.leftovers.pop((instance_uuid, migration_uuid), None)
            if old is not None:
                guest = Guest(old.flavor, SHUTDOWN, old.incoming, old.console)
                self._power_change(instance_uuid, guest, power)
                self.guests[instance_uuid] = guest
                self._save(instance_uuid)
                return
            guest = self._guest(instance_uuid)
            if guest.incoming == migration_uuid:
                # The guest here is the move's destination guest, not the source one.
                raise GuestNotFound(f"nothing of migration {migration_uuid} to revert to "
                                    f"on {self.host}")
            if guest.power_state != power:
                self._power_change(instance_uuid, guest, power)
            self._save(instance_uuid)

    # --- rescue -----------------------------------------------------------------
    def rescue(self, instance_uuid: str, image_ref: str | None) -> None:
        """The guest's own disk set aside (a leftover keyed RESCUE_KEY, so it outlives a
        restart) and a rescue guest booted from `image_ref` in its place."""
        with self._lock:
            self.checkpoint("rescue")
            if (instance_uuid, RESCUE_KEY) in self.leftovers:
                return
            guest = self._guest(instance_uuid)
            own = Guest(guest.flavor, guest.power_state, guest.incoming, guest.console)
            self._power_change(instance_uuid, own, SHUTDOWN)
            self.leftovers[(instance_uuid, RESCUE_KEY)] = own
            rescue = Guest(dict(guest.flavor), SHUTDOWN, guest.incoming, list(own.console))
            rescue.write([f"Booting rescue disk {image_ref or 'of the instance image'}"])
            self.guests[instance_uuid] = self._booted(instance_uuid, rescue)
            self._save(instance_uuid)

    def unrescue(self, instance_uuid: str) -> None:
        """The rescue guest gone, the guest's own disk booted again."""
        with self._lock:
            self.checkpoint("unrescue")
            own = self.leftovers.pop((instance_uuid, RESCUE_KEY), None)
            if own is None:
                self._guest(instance_uuid)  # unrescued already (a retry): nothing to do
                return
            own.console = list(self._guest(instance_uuid).console)
            self.guests[instance_uuid] = self._booted(instance_uuid, own)
            self._save(instance_uuid)

    def rescued(self, instance_uuid: str) -> bool:
        with self._lock:
            return (instance_uuid, RESCUE_KEY) in self.leftovers

    # --- snapshots ----------------------------------------------------------------
    def snapshot(self, instance_uuid: str, image_id: str, seconds: float = 0.0) -> bytes:
        """The guest's root disk: a few KiB generated from the instance's uuid, the same
        each time (sim_console.disk_bytes), after `seconds` of copying (outside the
        host's lock, as a real copy does not stop the host's other work)."""
        with self._lock:
            self.checkpoint("snapshot")
            self._guest(instance_uuid)
        if seconds > 0:
            time.sleep(seconds)
        with self._lock:
            self._guest(instance_uuid)
            return sim_console.disk_bytes(instance_uuid)

    # --- inspection ---------------------------------------------------------------
    def list_instances(self) -> list[str]:
        with self._lock:
            return sorted(self.guests)

    def power_state(self, instance_uuid: str) -> int:
        with self._lock:
            guest = self.guests.get(instance_uuid)
            return NOSTATE if guest is None else guest.power_state

    def adopt(self, instance_uuid: str, flavor: Mapping[str, Any], power_state: int) -> None:
        """Know a guest that exists already (a host taken over with guests on it; tests)."""
        with self._lock:
            if instance_uuid not in self.guests:
                guest = Guest(dict(flavor), SHUTDOWN)
                self._power_change(instance_uuid, guest, power_state)
                self.guests[instance_uuid] = guest
                self._save(instance_uuid)

    def change_power(self, instance_uuid: str, state: int) -> None:
        """The guest's power changes behind the API's back (shut down from inside, crashed,
        paused by a tool on the host): what the agent's power-state sync puts right."""
        with self._lock:
            guest = self._guest(instance_uuid)
            if guest.power_state != state:
                self._power_change(instance_uuid, guest, state)
            self._save(instance_uuid)

    # --- what the guest shows -------------------------------------------------------
    def console_output(self, instance_uuid: str) -> list[str]:
        with self._lock:
            return list(self._guest(instance_uuid).console)

    def diagnostics(self, instance_uuid: str, nics: list[dict[str, Any]],
                    standard: bool) -> dict[str, Any]:
        with self._lock:
            guest = self._guest(instance_uuid)
            if not standard:
                return sim_console.legacy_diagnostics(guest.flavor, nics)
            return sim_console.diagnostics(guest.flavor, guest.power_state, guest.booted_at,
                                           utcnow(), nics)

    def inject_network_info(self, instance_uuid: str, vifs: list[dict[str, Any]]) -> None:
        """The guest's network configuration rewritten: its console says what it got."""
        with self._lock:
            self.checkpoint("inject_network_info")
            self._guest(instance_uuid).write(sim_console.network_lines(vifs))
            self._save(instance_uuid)
