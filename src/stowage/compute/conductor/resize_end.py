"""Ending a resize: confirm drops the migration's source allocation, revert gives it back.

Confirm (API, automatic after `resize_confirm_window`, or deleting a server
in VERIFY_RESIZE): the source cleans up, then the migration's allocation is
deleted, then the records settle. A failed source cleanup changes nothing:
the server stays in VERIFY_RESIZE with its migration `finished`, so confirm
or revert can be retried, and the accounting stays exact.

Revert: the destination destroys its guest, then one atomic write hands the
source allocation back to the instance (replacing its destination one), then
the source starts the old guest, then the records settle. If the destination
fails, nothing changed; once the destination guest is gone the revert goes
forward, and a source failure leaves the instance in ERROR on its source
with its source allocation.

Both only go forward once begun, so a crash is recovered by running them
again (`recover_confirm`, `recover_revert`): every step is idempotent, the
hand-over only moves what the migration still holds, and a revert whose
destination step was journaled done does not ask the destination again.
"""

from __future__ import annotations

import logging

from stowage.compute import instances, migrations, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal, Step, StepFailed, run_steps
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK
from stowage.errors import NotFound

__all__ = ["confirm_resize", "revert_resize", "confirm_migration", "recover_confirm",
           "recover_revert", "STEPS"]

LOG = logging.getLogger(__name__)

# The journal steps of each operation, in order (crash tests enumerate them).
STEPS = {
    "confirm_resize": ("confirm_on_source", "drop_migration_allocation", "settle"),
    "revert_resize": ("revert_on_destination", "source_allocation_to_instance",
                      "finish_revert_resize", "settle"),
}


def _vm_state_after(power_state: int) -> str:
    return states.STOPPED if power_state == states.SHUTDOWN else states.ACTIVE


class CleanSource(Step):
    name = "confirm_on_source"

    def __init__(self, ops: Ops, migration: Migration) -> None:
        self.ops, self.migration = ops, migration

    def execute(self) -> None:
        m = self.migration
        assert m.source_compute is not None
        with self.ops.event(m.instance_uuid, "compute_confirm_resize", m.source_compute):
            self.ops.call_agent(m.source_compute, "confirm_resize",
                                instance_uuid=m.instance_uuid, migration_uuid=m.uuid)


class DropMigrationAllocation(Step):
    name = "drop_migration_allocation"

    def __init__(self, ops: Ops, migration: Migration) -> None:
        self.ops, self.migration = ops, migration

    def execute(self) -> None:
        self.ops.placement.delete_allocations(self.migration.uuid)


def confirm_resize(ops: Ops, migration_uuid: str, journal: Journal) -> None:
    with ops.db.write() as conn:
        migration = migrations.update(conn, migration_uuid, status="confirming")
    if confirm_migration(ops, migration, journal, settle_instance=True):
        ops.finish_action(migration.instance_uuid)


def confirm_migration(ops: Ops, migration: Migration, journal: Journal,
                      settle_instance: bool) -> bool:
    """The steps of a confirm under `journal` (a delete runs them under its own); False if
    the source failed and the resize was kept open."""
    try:
        run_steps([CleanSource(ops, migration), DropMigrationAllocation(ops, migration)],
                  journal)
    except StepFailed as failure:
        LOG.warning("confirm of %s failed: %s", migration.instance_uuid, failure.cause)
        _keep_open(ops, migration, failure.cause, migration.source_compute)
        return False
    journal.record("settle", "executing")
    with ops.db.write() as conn:
        migrations.update(conn, migration.uuid, status="confirmed")
        if settle_instance:
            inst = instances.get(conn, migration.instance_uuid)
            instances.update(conn, inst.uuid, vm_state=_vm_state_after(inst.power_state),
                             task_state=None, old_flavor=None, new_flavor=None)
    journal.record("settle", "done")
    return True


def _keep_open(ops: Ops, migration: Migration, cause: BaseException, host: str | None) -> None:
    """Nothing changed: VERIFY_RESIZE again with the migration `finished`, and a fault."""
    with ops.db.write() as conn:
        migrations.update(conn, migration.uuid, status="finished")
        instances.update(conn, migration.instance_uuid, task_state=None)
    ops.fault(migration.instance_uuid, cause, host)
    ops.finish_action(migration.instance_uuid, "Error")


class DestroyOnDestination(Step):
    name = "revert_on_destination"

    def __init__(self, ops: Ops, migration: Migration) -> None:
        self.ops, self.migration = ops, migration

    def execute(self) -> None:
        m = self.migration
        assert m.dest_compute is not None
        with self.ops.event(m.instance_uuid, "compute_revert_resize", m.dest_compute):
            self.ops.call_agent(m.dest_compute, "revert_resize", instance_uuid=m.instance_uuid,
                                migration_uuid=m.uuid)


def revert_resize(ops: Ops, migration_uuid: str, journal: Journal,
                  destination_done: bool = False) -> None:
    with ops.db.write() as conn:
        migration = migrations.update(conn, migration_uuid, status="reverting")
    inst = ops.instance(migration.instance_uuid)
    if not destination_done:
        try:
            run_steps([DestroyOnDestination(ops, migration)], journal)
        except StepFailed as failure:
            LOG.warning("revert of %s failed on the destination: %s", inst.uuid, failure.cause)
            _keep_open(ops, migration, failure.cause, migration.dest_compute)
            return
    # Past the point of no return: the destination guest is gone.
    journal.record("source_allocation_to_instance", "executing")
    if ops.placement.holding(migration.uuid).allocations:  # not yet handed back
        ops.hand_over(migration.uuid, inst.uuid, "INSTANCE", inst.project_id, inst.user_id)
    journal.record("source_allocation_to_instance", "done")
    if _deleting(ops, inst.uuid):
        _left_to_the_delete(ops, migration)
        return
    old_flavor = inst.old_flavor or inst.flavor
    journal.record("finish_revert_resize", "executing")
    try:
        _start_source(ops, migration, old_flavor)
    except Exception as exc:
        LOG.warning("revert of %s failed on the source: %s", inst.uuid, exc)
        journal.record("finish_revert_resize", "failed", str(exc)[:1000])
        if _deleting(ops, inst.uuid):  # the delete destroyed the set-aside guest
            _left_to_the_delete(ops, migration)
            return
        with ops.db.write() as conn:
            migrations.update(conn, migration_uuid, status="error")
            instances.update(conn, inst.uuid, vm_state=states.ERROR, task_state=None,
                             host=migration.source_compute, node=migration.source_node,
                             flavor=old_flavor, old_flavor=None, new_flavor=None)
        ops.fault(inst.uuid, exc, migration.source_compute)
        ops.finish_action(inst.uuid, "Error")
        return
    journal.record("finish_revert_resize", "done")
    journal.record("settle", "executing")
    try:
        with ops.db.write() as conn:
            now = instances.get(conn, inst.uuid)
            migrations.update(conn, migration.uuid, status="reverted")
            instances.update(conn, inst.uuid, expected_task_state=TASK.RESIZE_REVERTING,
                             host=migration.source_compute, node=migration.source_node,
                             flavor=old_flavor, old_flavor=None, new_flavor=None,
                             vm_state=_vm_state_after(now.power_state), task_state=None)
    except (NotFound, UnexpectedTaskState):
        if not _deleting(ops, inst.uuid):
            raise
        _left_to_the_delete(ops, migration)  # the delete destroys the guest started again
        return
    journal.record("settle", "done")
    ops.finish_action(inst.uuid)


def _deleting(ops: Ops, uuid: str) -> bool:
    """The user deleted the server during the revert (a delete is allowed in any task state)."""
    try:
        return ops.instance(uuid).task_state == TASK.DELETING
    except NotFound:
        return True


def _left_to_the_delete(ops: Ops, migration: Migration) -> None:
    """A deleted server's revert stops: no guest is left on either host, nothing stays held.

    The delete may have run already, or may find the migration ended and look
    only at the instance's host: so the guests of both hosts are destroyed
    here, and the source allocation just handed back is dropped (the delete
    may have dropped the instance's allocations before it was handed back).
    """
    uuid = migration.instance_uuid
    LOG.info("instance %s was deleted during its revert; the revert stops", uuid)
    for host in sorted({h for h in (migration.source_compute, migration.dest_compute) if h}):
        ops.terminate_quietly(host, uuid)
    ops.placement.delete_allocations(migration.uuid)
    ops.placement.delete_allocations(uuid)
    with ops.db.write() as conn:
        migrations.update(conn, migration.uuid, status="error")
    ops.finish_action(uuid, "Error")


def _start_source(ops: Ops, migration: Migration, old_flavor: dict[str, object]) -> None:
    inst = ops.instance(migration.instance_uuid)
    power_on = inst.power_state != states.SHUTDOWN
    assert migration.source_compute is not None
    with ops.event(inst.uuid, "compute_finish_revert_resize", migration.source_compute):
        ops.call_agent(migration.source_compute, "finish_revert_resize",
                       instance_uuid=inst.uuid, migration_uuid=migration.uuid,
                       old_flavor=old_flavor, power_on=power_on)


# --- crash recovery: both go forward --------------------------------------------
def recover_confirm(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Confirm again unless it got to the end; only the action was left then."""
    migration = _migration_of(ops, op, "confirming")
    if migration.status in ("finished", "confirming"):
        confirm_resize(ops, migration.uuid, journal)
    else:
        ops.finish_action(migration.instance_uuid,
                          None if migration.status == "confirmed" else "Error")


def recover_revert(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Revert again unless it got to the end; a destination done is not asked again."""
    migration = _migration_of(ops, op, "reverting")
    if migration.status in ("finished", "reverting"):
        revert_resize(ops, migration.uuid, journal,
                      destination_done=op.state("revert_on_destination") == "done")
    else:
        ops.finish_action(migration.instance_uuid,
                          None if migration.status == "reverted" else "Error")


def _migration_of(ops: Ops, op: Interrupted, running: str) -> Migration:
    """The migration the API named; for a journal of an older version (no arguments),
    the instance's migration that is `running` or still `finished`."""
    with ops.db.read() as conn:
        if "migration_uuid" in op.args:
            return migrations.get(conn, str(op.args["migration_uuid"]))
        assert op.instance_uuid is not None
        found = migrations.for_instance(conn, op.instance_uuid, statuses=(running, "finished"))
    if not found:
        raise NotFound(f"no migration of {op.instance_uuid} to end")
    return found[0]
