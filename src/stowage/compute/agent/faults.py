"""Injected faults of a simulated host: which step fails, how many more times, and why.

A fault is armed on one *step* of one host and fires when that step runs: the
step raises `SimulatedFault` and changes nothing. It fires once, N times, or
always (until cleared); a host holds at most one fault per step, and arming a
step again replaces its fault. Three kinds of step::

    driver steps    the simulated driver's methods (spawn, migrate_disk_and_power_off,
                    pre_live_migration, live_migration_copy, power_off, ...) and the
                    agent's resource claim ("claim"): `SimulatedDriver.checkpoint`
    agent steps     "prep_resize" (a resize's or cold migration's destination, before
                    its claim), checked by the agent itself
    host events     "heartbeat": each heartbeat round the fault covers is skipped, so
                    the service is seen down after service_down_time;
                    "agent": not armed but done at once -- the host's agent stops
                    (compute/runtime.py `kill_host`)

Faults reach a host from outside through the Compute API's
`/os-simulator/hosts/{host}/faults` (an RPC call to `compute.<host>`, so they
reach an agent in `stowage serve` and in a `stowage agent` process alike) and
from the hosts file (`faults`, armed when the agent starts). docs/faults.md
lists every step and what it fails.
"""

from __future__ import annotations

import threading
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stowage.compute.agent.sim_live_migration import LIVE_STEPS

__all__ = ["SimulatedFault", "Fault", "FaultSpec", "FaultTable", "FaultSpecError",
           "DRIVER_STEPS", "STEPS", "ARMABLE_STEPS", "HEARTBEAT", "AGENT", "PREP_RESIZE",
           "MODES", "MAX_TIMES", "MAX_ERROR"]

DRIVER_STEPS: tuple[str, ...] = (
    "claim", "spawn", "destroy", "power_off", "power_on",
    "migrate_disk_and_power_off", "finish_migration", "confirm_migration",
    "finish_revert_migration", "snapshot",
    *LIVE_STEPS,  # live migration's steps (sim_live_migration.py)
    "attach_interface", "detach_interface",  # os-interface: plugging a port
    "reboot", "pause", "unpause", "suspend", "resume", "rebuild",  # guest actions
    "rescue", "unrescue",
    "inject_network_info")
PREP_RESIZE = "prep_resize"
HEARTBEAT = "heartbeat"
AGENT = "agent"
# Every step a fault may name; all but "agent" can be armed (kept for later).
STEPS: tuple[str, ...] = (*DRIVER_STEPS, PREP_RESIZE, HEARTBEAT, AGENT)
ARMABLE_STEPS: tuple[str, ...] = STEPS[:-1]
MODES = ("once", "times", "always")
# Bounds of a fault's spec (the API's schema and the hosts file share them).
MAX_TIMES = 1_000_000
MAX_ERROR = 255


class SimulatedFault(Exception):
    """An injected failure; the step that raised it changed nothing."""


class FaultSpecError(ValueError):
    """A fault spec that cannot be armed; the message says which field and why."""


@dataclass(frozen=True)
class FaultSpec:
    """What to arm: `times` None means always."""

    step: str
    times: int | None = 1
    error: str | None = None

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> FaultSpec:
        """A spec from the API's body or a hosts file entry: step, mode, times, error."""
        unknown = set(raw) - {"step", "mode", "times", "error"}
        if unknown:
            raise FaultSpecError(f"unknown key(s) {sorted(unknown)}; known keys are "
                                 "['error', 'mode', 'step', 'times']")
        step = raw.get("step")
        if step not in STEPS:
            raise FaultSpecError(f"'step' must be one of {list(STEPS)}, got {step!r}")
        return cls(step, _times(raw), _error(raw.get("error")))


def _times(raw: Mapping[str, Any]) -> int | None:
    mode = raw.get("mode", "times" if "times" in raw else "once")
    if mode not in MODES:
        raise FaultSpecError(f"'mode' must be one of {list(MODES)}, got {mode!r}")
    if mode != "times":
        if "times" in raw:
            raise FaultSpecError(f"'times' goes with mode 'times' only, not {mode!r}")
        return 1 if mode == "once" else None
    times = raw.get("times")
    if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
        raise FaultSpecError(f"'times' must be an integer from 1 to {MAX_TIMES}, "
                             f"got {times!r}")
    return times


def _error(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ERROR:
        raise FaultSpecError(f"'error' must be a non-empty string of at most {MAX_ERROR} "
                             f"characters, got {value!r}")
    return value


@dataclass
class Fault:
    """One armed fault; `remaining` None = it fires until cleared."""

    id: str
    step: str
    mode: str  # once | times | always, as armed
    remaining: int | None
    message: str

    def view(self) -> dict[str, Any]:
        """What the API and `stowage manage host fault list` show."""
        return {"id": self.id, "step": self.step, "mode": self.mode,
                "remaining": self.remaining, "error": self.message}


class FaultTable:
    """A host's armed faults, one per step; thread-safe (steps of many operations and
    the heartbeat thread consult it at once)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._faults: dict[str, Fault] = {}
        self._lock = threading.Lock()

    def arm(self, spec: FaultSpec) -> Fault:
        """Arm `spec` (replacing the step's fault, if any); "agent" is not armable."""
        if spec.step == AGENT:
            raise FaultSpecError("step 'agent' kills the agent at once; it is not armed")
        if spec.step not in ARMABLE_STEPS:
            raise FaultSpecError(f"unknown step {spec.step!r}; steps are "
                                 f"{', '.join(ARMABLE_STEPS)}")
        message = spec.error or f"injected fault in {spec.step} on {self.host}"
        mode = "always" if spec.times is None else "once" if spec.times == 1 else "times"
        fault = Fault(str(uuidlib.uuid4()), spec.step, mode, spec.times, message)
        with self._lock:
            self._faults[spec.step] = fault
        return fault

    def take(self, step: str) -> Fault | None:
        """The step's fault if it fires now (one firing counted), else None."""
        with self._lock:
            fault = self._faults.get(step)
            if fault is None:
                return None
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    del self._faults[step]
            return Fault(fault.id, fault.step, fault.mode, fault.remaining, fault.message)

    def fire(self, step: str) -> None:
        """Raise SimulatedFault if the step's fault fires now."""
        fault = self.take(step)
        if fault is not None:
            raise SimulatedFault(fault.message)

    def list(self) -> list[Fault]:
        """The armed faults, by step name, with the firings each has left."""
        with self._lock:
            return [Fault(f.id, f.step, f.mode, f.remaining, f.message)
                    for _, f in sorted(self._faults.items())]

    def remove(self, fault_id: str) -> bool:
        """Disarm one fault by id; False when no armed fault has it (fired out, cleared)."""
        with self._lock:
            for step, fault in list(self._faults.items()):
                if fault.id == fault_id:
                    del self._faults[step]
                    return True
        return False

    def clear(self) -> int:
        """Disarm every fault; how many there were."""
        with self._lock:
            count = len(self._faults)
            self._faults.clear()
        return count
