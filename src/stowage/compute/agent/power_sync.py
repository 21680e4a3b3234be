"""The power-state sync: the hypervisor is the authority on whether a guest runs.

A guest can change behind the API's back (shut down from inside, crashed, a
hypervisor restarted). Every `sync_power_state_interval` seconds the agent
compares, for each instance its host holds and no task is running on, the
driver's power state with the record's, and puts the record right as Nova's
`_sync_power_states` / `_sync_instance_power_state` do:

    record power_state differs       -> power_state := the driver's
    ACTIVE, guest SHUTDOWN/CRASHED   -> stopped (Nova calls the stop API): a `stop`
                                        operation; not while locked (Nova's stop
                                        refuses a locked server and logs it)
    ACTIVE, guest SUSPENDED          -> stopped likewise
    ACTIVE, guest PAUSED or gone     -> only logged (paused from outside may come
                                        back; a missing guest may be a restarting
                                        hypervisor)
    STOPPED, guest running/paused/.. -> powered off again (Nova's force_stop), a
                                        `stop` operation
    PAUSED, guest SHUTDOWN/CRASHED   -> stopped (force_stop)
    any other vm_state                -> only the power_state

A stop is what Nova's sync does, a call of the stop API: in one transaction
the instance enters `powering-off` if it is still without a task and in the
vm_state read (a user's action that started meanwhile wins), a `stop` action
is recorded (no user or project, as Nova's admin context) and the operation
journaled `accepted`; then the conductor is cast `power(on=False)`, which
powers the guest off and settles the server as for os-stop. A lost cast or a
crash is the journal's to recover (conductor/lifecycle.py). Without a
conductor to cast to, the sync only records power states.
"""

from __future__ import annotations

import logging

from stowage.compute import actions, instances, states
from stowage.compute.agent.driver import Driver
from stowage.compute.conductor import tasks
from stowage.compute.hosts import HostConfig
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.rpc import ConductorAPI
from stowage.context import new_request_id
from stowage.db import Database
from stowage.errors import NotFound

__all__ = ["PowerSync", "CRASHED"]

LOG = logging.getLogger(__name__)

CRASHED = 6  # Nova's power_state.CRASHED
_OFF = (states.SHUTDOWN, CRASHED)


class PowerSync:
    """Mixed into `ComputeAgent` (manager.py): the `sync_power_states` periodic."""

    host: HostConfig
    db: Database
    driver: Driver
    conductor: ConductorAPI | None

    def sync_power_states(self) -> list[str]:
        """Put right the records whose guest's power changed behind the API's back;
        returns the uuids of the instances whose record changed."""
        with self.db.read() as conn:
            here = [i for i in instances.list_instances(conn, host=self.host.name)
                    if i.task_state is None]
        changed = []
        for inst in here:
            try:
                if self._sync_one(inst, self.driver.power_state(inst.uuid)):
                    changed.append(inst.uuid)
            except Exception:  # noqa: BLE001 - one guest must not stop the others' sync
                LOG.exception("host %s: power-state sync of %s failed", self.host.name,
                              inst.uuid)
        return changed

    def _sync_one(self, inst: Instance, power: int) -> bool:
        """Nova's `_sync_instance_power_state` for one instance read without a task."""
        vm_state = inst.vm_state
        stop = ((vm_state == states.ACTIVE
                 and power in (*_OFF, states.SUSPENDED_POWER) and not inst.locked)
                or (vm_state == states.STOPPED and power not in (states.NOSTATE, *_OFF))
                or (vm_state == states.PAUSED and power in _OFF))
        if stop:
            LOG.warning("host %s: instance %s is %s but its guest's power state is %d: "
                        "stopping it", self.host.name, inst.uuid, vm_state, power)
            return self._stop(inst)
        if vm_state == states.ACTIVE and power != states.RUNNING:
            LOG.warning("host %s: active instance %s has power state %d (%s); left alone",
                        self.host.name, inst.uuid, power,
                        "locked" if inst.locked else "paused or not found")
        if power == inst.power_state:
            return False
        try:
            with self.db.write() as conn:
                instances.save(conn, inst.uuid, expected_task_state=None,
                               expected_vm_state=vm_state, power_state=power)
        except (UnexpectedTaskState, NotFound):
            return False  # a user's action (or a delete) started meanwhile: it owns it
        return True

    def _stop(self, inst: Instance) -> bool:
        """Nova's call of the stop API (see the module docstring); False when a user's
        action or a delete got there first."""
        if self.conductor is None:
            return False
        request_id = new_request_id()
        try:
            with self.db.write() as conn:
                instances.save(conn, inst.uuid, expected_task_state=None,
                               expected_vm_state=inst.vm_state,
                               task_state=states.TASK.POWERING_OFF, progress=0)
                actions.start_action(conn, inst.uuid, "stop", request_id, None, None)
                operation = tasks.accept(conn, "stop", inst.uuid, request_id)
        except (UnexpectedTaskState, NotFound):
            return False
        try:
            self.conductor.power(inst.uuid, request_id, on=False, operation_uuid=operation)
        except Exception:  # noqa: BLE001 - journaled: a conductor takes it over
            LOG.exception("host %s: the stop of %s was not sent; a conductor takes it over "
                          "once its lease passes", self.host.name, inst.uuid)
        return True
