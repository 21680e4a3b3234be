"""Stopping, starting and deleting servers.

Delete confirms a pending resize first (so the migration's source allocation
is dropped with the source guest), then destroys the guest, lets the
server's ports go (the ports Nova created are deleted, the user's unbound, as
Nova's `deallocate_for_instance`) and drops the instance's allocation. A
host whose compute service is down (no heartbeat within
`service_down_time`, forced down, or deleted) is not asked: Nova's
*local delete* drops the allocations and the records without it, and the
host's agent destroys the guests of deleted instances when it starts again
(or at its next periodic run, if it kept running while forced down). The
conductor reads the service state at the step itself, so a host that went
down after the API accepted the delete counts as down; one that stops
answering during the call is deleted locally too.

All three only go forward, and every step is idempotent (powering a guest
that is already in that state, destroying one that is gone, dropping
allocations already dropped), so a crash is recovered by running the
operation again (`recover_power`, `recover_delete`).
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.compute import instances, migrations, services, states
from stowage.compute.conductor import ports
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.resize_end import STEPS as RESIZE_END_STEPS
from stowage.compute.conductor.resize_end import confirm_migration
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError, MessagingTimeout

__all__ = ["power", "delete_instance", "recover_power", "recover_delete", "STEPS"]

LOG = logging.getLogger(__name__)

# The journal steps of each operation, in order (crash tests enumerate them); a
# delete of a server in VERIFY_RESIZE confirms it first, under the delete's journal.
STEPS = {
    "stop": ("power",),
    "start": ("power",),
    "delete": RESIZE_END_STEPS["confirm_resize"] + ("terminate", "drop_allocation",
                                                    "soft_delete"),
}


def power(ops: Ops, instance_uuid: str, on: bool, journal: Journal) -> None:
    inst = ops.instance(instance_uuid)
    task = TASK.POWERING_ON if on else TASK.POWERING_OFF
    method, event = (("power_on_instance", "compute_start_instance") if on
                     else ("power_off_instance", "compute_stop_instance"))
    assert inst.host is not None
    journal.record("power", "executing")
    try:
        with ops.event(inst.uuid, event, inst.host):
            ops.call_agent(inst.host, method, instance_uuid=inst.uuid)
    except MessagingError as exc:
        if _settle_power(ops, inst.uuid, task, task_state=None):
            ops.fault(inst.uuid, exc, inst.host)
        ops.finish_action(inst.uuid, "Error")
        return
    settled = _settle_power(ops, inst.uuid, task, task_state=None,
                            vm_state=states.ACTIVE if on else states.STOPPED,
                            power_state=states.RUNNING if on else states.SHUTDOWN)
    journal.record("power", "done")
    ops.finish_action(inst.uuid, None if settled else "Error")


def _settle_power(ops: Ops, uuid: str, task: str, **values: Any) -> bool:
    """Leave the powering task state; False when the server was deleted meanwhile.

    The delete (allowed in any task state) owns the server then, and
    destroys the guest whatever its power.
    """
    try:
        ops.update(uuid, expected_task_state=task, **values)
    except (NotFound, UnexpectedTaskState):
        LOG.info("instance %s was deleted while powering; leaving it to the delete", uuid)
        return False
    return True


def delete_instance(ops: Ops, instance_uuid: str, journal: Journal) -> None:
    inst = ops.instance_any(instance_uuid)
    if inst.deleted:  # a crash came after the records went: only the allocation may be left
        ports.release(ops, ports.load(ops, inst.uuid))
        _drop_allocations(ops, inst.uuid)
        ops.finish_action(inst.uuid)
        return
    with ops.db.read() as conn:
        pending = migrations.for_instance(conn, instance_uuid, statuses=("finished",
                                                                         "confirming"))
    for migration in pending:
        # A source that is down cannot confirm: the migration is dropped below with the
        # other unfinished ones, and the source destroys what it set aside when it is back.
        if _service_up(ops, migration.source_compute):
            confirm_migration(ops, migration, journal, settle_instance=False)
    with ops.db.read() as conn:
        unfinished = [m for m in migrations.for_instance(conn, instance_uuid) if not m.finished]
    for migration in unfinished:
        # A move cut short (its conductor died) or still running (a delete is allowed in
        # any task state): the migration must not outlive the server, nor its guests on
        # either host. A running move or revert stops on seeing the server deleting.
        ops.placement.delete_allocations(migration.uuid)
        with ops.db.write() as conn:
            migrations.update(conn, migration.uuid, status="error")
        hosts = {migration.source_compute, migration.dest_compute} - {inst.host, None}
        for host in sorted(h for h in hosts if h and _service_up(ops, h)):
            ops.terminate_quietly(host, inst.uuid)
    if inst.host and not _terminate(ops, inst, journal):
        return
    if not _release_ports(ops, inst):
        return
    journal.record("drop_allocation", "executing")
    _drop_allocations(ops, inst.uuid)
    journal.record("drop_allocation", "done")
    journal.record("soft_delete", "executing")
    with ops.db.write() as conn:
        instances.soft_delete(conn, inst.uuid)
    journal.record("soft_delete", "done")
    ops.finish_action(inst.uuid)


def _drop_allocations(ops: Ops, instance_uuid: str) -> None:
    """Every allocation the server's delete frees: the instance's, and the dead source that
    each of its `done` evacuations still holds (Nova's delete removes all the instance's
    allocations, the source's included). The soft delete that follows takes the
    evacuations with it, so the source agent, back later, has nothing left to release
    (agent/evacuation.py). Idempotent: a delete run again finds nothing to drop."""
    with ops.db.read() as conn:
        evacuated = [m for m in migrations.for_instance(conn, instance_uuid, ("done",))
                     if m.migration_type == "evacuation"]
    for migration in evacuated:
        ops.placement.delete_allocations(migration.uuid)
    ops.placement.delete_allocations(instance_uuid)


def _terminate(ops: Ops, inst: instances.Instance, journal: Journal) -> bool:
    """Destroy the guest; False (server in ERROR) when its host refused.

    A host whose service is down is not asked (Nova's local delete): the step
    is journaled done with the reason, and the guest is left to the host's
    agent, which destroys the guests of deleted instances when it is back.
    """
    assert inst.host is not None
    journal.record("terminate", "executing")
    if not _service_up(ops, inst.host):
        LOG.info("the compute service of %s is down; deleting %s locally", inst.host,
                 inst.uuid)
        journal.record("terminate", "done", f"local delete: the compute service of "
                                            f"{inst.host} is down")
        return True
    try:
        with ops.event(inst.uuid, "compute_terminate_instance", inst.host):
            ops.call_agent(inst.host, "terminate_instance", instance_uuid=inst.uuid)
    except MessagingTimeout:
        LOG.warning("host %s is not answering; deleting %s locally", inst.host, inst.uuid)
    except MessagingError as exc:
        journal.record("terminate", "failed", str(exc)[:1000])
        ops.update(inst.uuid, vm_state=states.ERROR, task_state=None)
        ops.fault(inst.uuid, exc, inst.host)
        ops.finish_action(inst.uuid, "Error")
        return False
    journal.record("terminate", "done")
    return True


def _release_ports(ops: Ops, inst: instances.Instance) -> bool:
    """The server's ports go before its records (Nova's `_try_deallocate_network`); when
    the Network service refuses, the server is ERROR and the delete can be asked again."""
    try:
        ports.release(ops, ports.load(ops, inst.uuid))
    except MessagingError as exc:
        LOG.warning("could not release the ports of %s: %s", inst.uuid, exc)
        ops.update(inst.uuid, vm_state=states.ERROR, task_state=None)
        ops.fault(inst.uuid, exc, inst.host)
        ops.finish_action(inst.uuid, "Error")
        return False
    return True


def _service_up(ops: Ops, host: str | None) -> bool:
    """Nova's `servicegroup_api.service_is_up` for the host's compute service (none: down)."""
    if not host:
        return False
    with ops.host_db(host).read() as conn:  # a cross-cell move's source: another cell's
        service = services.compute_service(conn, host)
    return service is not None and services.is_up(service, ops.settings)


# --- crash recovery: all go forward -------------------------------------------
def recover_power(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Power again if the instance is still in its powering task state, else finish."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    on = op.operation == "start"
    if not inst.deleted and inst.task_state == (TASK.POWERING_ON if on else TASK.POWERING_OFF):
        power(ops, inst.uuid, on, journal)
    elif not inst.deleted:
        ops.finish_action(inst.uuid, None if op.state("power") == "done" else "Error")


def recover_delete(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Delete again: every step is idempotent, and a server already gone is only finished.

    The host's service is read again: a host that came back meanwhile is asked
    to destroy the guest, one still down is deleted locally.
    """
    assert op.instance_uuid is not None
    delete_instance(ops, op.instance_uuid, journal)
