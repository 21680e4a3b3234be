"""Stopping, starting and deleting servers.

Delete confirms a pending resize first (so the migration's source allocation
is dropped with the source guest), then destroys the guest and drops the
instance's allocation. A host whose agent does not answer does not keep a
deleted server alive: the records and allocations go, and the host's
reconcile removes whatever it still holds when it comes back.
"""

from __future__ import annotations

import logging

from stowage.compute import instances, migrations, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.resize_end import confirm_resize
from stowage.compute.states import TASK
from stowage.messaging import MessagingError, MessagingTimeout

__all__ = ["power", "delete_instance"]

LOG = logging.getLogger(__name__)


def power(ops: Ops, instance_uuid: str, on: bool) -> None:
    inst = ops.instance(instance_uuid)
    task = TASK.POWERING_ON if on else TASK.POWERING_OFF
    method, event = (("power_on_instance", "compute_start_instance") if on
                     else ("power_off_instance", "compute_stop_instance"))
    assert inst.host is not None
    try:
        with ops.event(inst.uuid, event, inst.host):
            ops.call_agent(inst.host, method, instance_uuid=inst.uuid)
    except MessagingError as exc:
        ops.update(inst.uuid, expected_task_state=task, task_state=None)
        ops.fault(inst.uuid, exc, inst.host)
        ops.finish_action(inst.uuid, "Error")
        return
    ops.update(inst.uuid, expected_task_state=task, task_state=None,
               vm_state=states.ACTIVE if on else states.STOPPED,
               power_state=states.RUNNING if on else states.SHUTDOWN)
    ops.finish_action(inst.uuid)


def delete_instance(ops: Ops, instance_uuid: str) -> None:
    with ops.db.read() as conn:
        inst = instances.get(conn, instance_uuid)
        pending = migrations.for_instance(conn, instance_uuid, statuses=("finished",))
    for migration in pending:
        confirm_resize(ops, migration.uuid)
    with ops.db.read() as conn:
        unfinished = [m for m in migrations.for_instance(conn, instance_uuid) if not m.finished]
    for migration in unfinished:
        # A move cut short (its conductor died): the migration must not outlive the server.
        ops.placement.delete_allocations(migration.uuid)
        with ops.db.write() as conn:
            migrations.update(conn, migration.uuid, status="error")
    if inst.host:
        try:
            with ops.event(inst.uuid, "compute_terminate_instance", inst.host):
                ops.call_agent(inst.host, "terminate_instance", instance_uuid=inst.uuid)
        except MessagingTimeout:
            LOG.warning("host %s is not answering; deleting %s locally", inst.host, inst.uuid)
        except MessagingError as exc:
            ops.update(inst.uuid, vm_state=states.ERROR, task_state=None)
            ops.fault(inst.uuid, exc, inst.host)
            ops.finish_action(inst.uuid, "Error")
            return
    ops.placement.delete_allocations(inst.uuid)
    with ops.db.write() as conn:
        instances.soft_delete(conn, inst.uuid)
    ops.finish_action(inst.uuid)
