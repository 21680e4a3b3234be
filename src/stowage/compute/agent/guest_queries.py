"""The agent's answers about one guest: its console log, its diagnostics; network injection.

The API calls these synchronously on the server's host, as Nova's API calls
the compute service (`get_console_output`, `get_instance_diagnostics`) or
casts to it (`inject_network_info`). They change no record: the console and
the diagnostics are read from the driver's guest, and injecting network
info hands the guest the addresses its ports have now (`instance_ports`).

Refusals travel back by exception type (`messaging.RemoteError.exc_type`):
GuestNotFound when the host has no guest for the instance, and
InstanceInvalidState when diagnostics are asked of a guest that is not
running, worded as Nova words it.
"""

from __future__ import annotations

from typing import Any

from stowage.compute import instance_ports
from stowage.compute.agent import sim_console
from stowage.compute.agent.driver import Driver
from stowage.compute.states import RUNNING
from stowage.db import Database

__all__ = ["GuestQueries", "InstanceInvalidState"]


class InstanceInvalidState(Exception):
    """The guest is not in a power state the query needs (Nova's InstanceInvalidState)."""


class GuestQueries:
    """Mixed into `ComputeAgent` (manager.py): RPC entry points about its host's guests."""

    driver: Driver
    db: Database

    def get_console_output(self, instance_uuid: str, length: int | None) -> str:
        """The last `length` lines of the guest's console (all of it when None)."""
        return sim_console.tail(self.driver.console_output(instance_uuid), length)

    def get_instance_diagnostics(self, instance_uuid: str,
                                 standard: bool = True) -> dict[str, Any]:
        """The guest's diagnostics, 2.48's standard form or the driver's own (`standard`)."""
        state = self.driver.power_state(instance_uuid)
        if state != RUNNING:
            raise InstanceInvalidState(
                f"Cannot 'get_diagnostics' instance {instance_uuid} while it is in power "
                f"state {sim_console.STATE_NAMES.get(state, 'pending')}")
        with self.db.read() as conn:
            ports = instance_ports.of_instance(conn, instance_uuid)
        nics = [{"port_id": p.port_id, "mac": (p.vif or {}).get("mac")} for p in ports
                if p.port_id]
        return self.driver.diagnostics(instance_uuid, nics, standard)

    def inject_network_info(self, instance_uuid: str) -> None:
        """Hand the guest its ports' current addresses (the simulated guest logs them)."""
        with self.db.read() as conn:
            ports = instance_ports.of_instance(conn, instance_uuid)
        self.driver.inject_network_info(instance_uuid, [dict(p.vif) for p in ports if p.vif])
