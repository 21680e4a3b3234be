"""The agent's side of fault injection: the RPC methods that arm, list and clear faults.

The Compute API's `/os-simulator/hosts/{host}/faults` calls these on the
host's `compute.<host>` target, as it calls `live_migration_abort`: the
faults are the driver's in-memory table (faults.py), so one call reaches the
agent wherever it runs (in `stowage serve`, or a `stowage agent` process over
RabbitMQ) and no database table is polled. What that costs: armed faults live
as long as the agent; the hosts file's `faults` are armed again at each start.

Only a simulated host has a fault table; any other driver answers
`FaultsUnsupported` (the API's 409).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stowage.compute.agent.driver import Driver
from stowage.compute.agent.faults import AGENT, HEARTBEAT, FaultSpec, FaultSpecError, FaultTable
from stowage.compute.agent.simulated import SimulatedDriver
from stowage.compute.hosts import HostConfig

__all__ = ["FaultInjection", "FaultsUnsupported"]

LOG = logging.getLogger(__name__)


class FaultsUnsupported(Exception):
    """The host's driver is not the simulated hypervisor: it has no faults to arm."""


class FaultInjection:
    """Mixed into `ComputeAgent`: its host, driver and running flag are used here."""

    host: HostConfig
    driver: Driver
    # What "kill the agent" does (the control plane stops this host's agent; None: stop()).
    on_kill: Callable[[], None] | None = None

    if TYPE_CHECKING:  # the agent's own
        def stop(self) -> None: ...

        @property
        def running(self) -> bool: ...

    # --- RPC methods (the API calls them) ------------------------------------------
    def add_fault(self, fault: dict[str, Any]) -> dict[str, Any]:
        """Arm a fault (step, mode, times, error); "agent" kills this agent at once."""
        table = self._faults()
        try:
            spec = FaultSpec.from_mapping(fault)
        except FaultSpecError as exc:
            raise ValueError(str(exc)) from None
        if spec.step == AGENT:
            if spec.times != 1:
                raise ValueError("step 'agent' is done at once: its mode is 'once'")
            self._kill()
            return {"id": None, "step": AGENT, "mode": "once", "remaining": 0,
                    "error": spec.error or f"agent of {self.host.name} killed"}
        armed = table.arm(spec)
        LOG.warning("host %s: fault armed on %s (%s, %s left): %s", self.host.name,
                    armed.step, armed.mode, armed.remaining, armed.message)
        return armed.view()

    def list_faults(self) -> list[dict[str, Any]]:
        return [fault.view() for fault in self._faults().list()]

    def remove_fault(self, fault_id: str) -> bool:
        return self._faults().remove(fault_id)

    def clear_faults(self) -> int:
        return self._faults().clear()

    # --- what the agent consults -------------------------------------------------------
    def beats(self) -> bool:
        """Whether this round's heartbeat goes out: running, and no heartbeat fault fires."""
        if not self.running:
            return False
        table = self._table()
        return table is None or table.take(HEARTBEAT) is None

    def arm_configured_faults(self) -> None:
        """The hosts file's `faults` for this host (an agent starting)."""
        table = self._table()
        for spec in self.host.faults:
            if table is None:
                LOG.error("host %s: faults configured, but its driver is not simulated",
                          self.host.name)
                return
            table.arm(spec)

    def _faults(self) -> FaultTable:
        table = self._table()
        if table is None:
            raise FaultsUnsupported(f"host {self.host.name} does not run the simulated "
                                    "hypervisor; only simulated hosts take faults")
        return table

    def _table(self) -> FaultTable | None:
        return self.driver.faults if isinstance(self.driver, SimulatedDriver) else None

    def _kill(self) -> None:
        """Stop this agent from another thread: the call that asked it gets its answer
        first (a handler must not cancel the consumer it runs on)."""
        LOG.warning("host %s: agent killed by fault injection", self.host.name)
        action = self.on_kill if self.on_kill is not None else self.stop
        threading.Thread(target=action, name=f"kill-{self.host.name}", daemon=True).start()
