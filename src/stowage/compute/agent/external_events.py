"""What an agent does with the external events the API hands it (api/server_external_events.py).

While a move is unfinished the API sends a server's events to its source and
destination hosts both; an agent acts only on a server it holds now (the
instance's `host`), so the other host's copy is dropped here.

    volume-extended   a server booted from a volume sees its disk grow (nothing to
                      resize in a simulated guest); any other has no such volume
    others            nothing here acts on them (no waiter for vif-plugged; the API
                      refreshes the network cache on network-changed; no accelerator
                      to bind; a deleted port's detach and a power-update are the
                      conductor's, journaled by the API): logged

`volume-extended` is recorded on the action the API started, with the same
request id (`compute_extend_volume`), Success or Error.

A power-update reaches the agent as one step of the conductor's journaled
operation (conductor/power_update.py), `power_update_instance`: the guest
is powered to the tag's state and the record follows (Nova's
`power_update`); refused while another task runs on the server or it is
neither ACTIVE nor STOPPED (a resize waiting for confirm keeps its state:
stowage's addition, Nova's bare-metal driver has no resize).
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.compute import actions, instances, states
from stowage.compute.agent.driver import Driver
from stowage.compute.hosts import HostConfig
from stowage.db import Database
from stowage.errors import NotFound

__all__ = ["ExternalEvents"]

LOG = logging.getLogger(__name__)

# tag -> (power state, vm_state, the task state of a user's own start/stop to the same end)
_POWER = {"POWER_ON": (states.RUNNING, states.ACTIVE, states.TASK.POWERING_ON),
          "POWER_OFF": (states.SHUTDOWN, states.STOPPED, states.TASK.POWERING_OFF)}


class ExternalEvents:
    """Mixed into `ComputeAgent` (manager.py): the `external_instance_events` RPC."""

    host: HostConfig
    db: Database
    driver: Driver

    def external_instance_events(self, events: list[dict[str, Any]], request_id: str) -> None:
        handlers = {"volume-extended": self._extend_volume}
        for event in events:
            uuid, name = event["server_uuid"], event["name"]
            handler = handlers.get(name)
            if handler is None:
                LOG.info("event %s (%s) for %s: nothing to do here", name,
                         event.get("status", "completed"), uuid)
                continue
            try:
                with self.db.read() as conn:
                    instance = instances.get(conn, uuid)
            except NotFound:
                LOG.info("event %s for %s: the server is gone", name, uuid)
                continue
            if instance.host == self.host.name:  # else the other host of a move: not ours
                handler(instance, event["tag"], request_id)

    def power_update_instance(self, instance_uuid: str, tag: str) -> None:
        """Record, then guest, to `tag`'s power state; idempotent (a step run again after a
        crash finds the record there and powers the guest if it is not yet).

        Raises UnexpectedTaskState while another task runs on the server or it is
        neither ACTIVE nor STOPPED: the conductor records the event's Error.
        """
        power, vm_state, own_task = _POWER[tag]
        with self.db.write() as conn:
            instance = instances.get(conn, instance_uuid)
            if (instance.power_state, instance.vm_state) != (power, vm_state):
                instances.save(conn, instance_uuid, expected_task_state=(own_task, None),
                               expected_vm_state=(states.ACTIVE, states.STOPPED),
                               power_state=power, vm_state=vm_state, task_state=None)
        if self.driver.power_state(instance_uuid) != power:
            (self.driver.power_on if power == states.RUNNING else self.driver.power_off)(
                instance_uuid)

    def _extend_volume(self, instance: instances.Instance, volume_id: str,
                       request_id: str) -> None:
        event = "compute_extend_volume"
        self._start(instance.uuid, request_id, event)
        error = None if instance.volume_backed else (
            f"Volume {volume_id} is not attached to instance {instance.uuid}.")
        self._finish(instance.uuid, request_id, event, error)

    def _start(self, uuid: str, request_id: str, event: str) -> None:
        with self.db.write() as conn:
            actions.start_event(conn, uuid, request_id, event, self.host.name)

    def _finish(self, uuid: str, request_id: str, event: str, error: str | None) -> None:
        with self.db.write() as conn:
            actions.finish_event(conn, uuid, request_id, event, error)
            actions.finish_action(conn, uuid, request_id, "Error" if error else None)
