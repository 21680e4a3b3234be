"""Ending a resize: confirm drops the migration's source allocation, revert gives it back.

Confirm (API, automatic after `resize_confirm_window`, or deleting a server
in VERIFY_RESIZE): the source cleans up, then the migration's allocation is
deleted. A failed source cleanup changes nothing: the server stays in
VERIFY_RESIZE with its migration `finished`, so confirm or revert can be
retried, and the accounting stays exact.

Revert: the destination destroys its guest, then one atomic write hands the
source allocation back to the instance (replacing its destination one), then
the source starts the old guest. If the destination fails, nothing changed;
once the destination guest is gone the revert goes forward, and a source
failure leaves the instance in ERROR on its source with its source allocation.
"""

from __future__ import annotations

import logging

from stowage.compute import instances, migrations, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Journal, Step, StepFailed, run_steps
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK

__all__ = ["confirm_resize", "revert_resize"]

LOG = logging.getLogger(__name__)


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


def confirm_resize(ops: Ops, migration_uuid: str) -> None:
    with ops.db.write() as conn:
        migration = migrations.update(conn, migration_uuid, status="confirming")
    journal = Journal(ops.db, "confirm_resize", migration.instance_uuid)
    try:
        run_steps([CleanSource(ops, migration), DropMigrationAllocation(ops, migration)],
                  journal)
    except StepFailed as failure:
        LOG.warning("confirm of %s failed: %s", migration.instance_uuid, failure.cause)
        _keep_open(ops, migration, failure.cause, migration.source_compute)
        return
    finally:
        journal.close()
    inst = ops.instance(migration.instance_uuid)
    with ops.db.write() as conn:
        migrations.update(conn, migration_uuid, status="confirmed")
        instances.update(conn, inst.uuid, vm_state=_vm_state_after(inst.power_state),
                         task_state=None, old_flavor=None, new_flavor=None)
    ops.finish_action(inst.uuid)


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


def revert_resize(ops: Ops, migration_uuid: str) -> None:
    with ops.db.write() as conn:
        migration = migrations.update(conn, migration_uuid, status="reverting")
    inst = ops.instance(migration.instance_uuid)
    journal = Journal(ops.db, "revert_resize", inst.uuid)
    try:
        run_steps([DestroyOnDestination(ops, migration)], journal)
    except StepFailed as failure:
        LOG.warning("revert of %s failed on the destination: %s", inst.uuid, failure.cause)
        _keep_open(ops, migration, failure.cause, migration.dest_compute)
        journal.close()
        return
    # Past the point of no return: the destination guest is gone.
    ops.hand_over(migration.uuid, inst.uuid, "INSTANCE", inst.project_id, inst.user_id)
    journal.record("source_allocation_to_instance", "done")
    try:
        _finish_revert(ops, migration, inst.old_flavor or inst.flavor)
    except Exception as exc:
        LOG.warning("revert of %s failed on the source: %s", inst.uuid, exc)
        with ops.db.write() as conn:
            migrations.update(conn, migration_uuid, status="error")
            instances.update(conn, inst.uuid, vm_state=states.ERROR, task_state=None,
                             host=migration.source_compute, node=migration.source_node,
                             flavor=inst.old_flavor or inst.flavor, old_flavor=None,
                             new_flavor=None)
        ops.fault(inst.uuid, exc, migration.source_compute)
        ops.finish_action(inst.uuid, "Error")
    else:
        ops.finish_action(inst.uuid)
    finally:
        journal.close()


def _finish_revert(ops: Ops, migration: Migration, old_flavor: dict[str, object]) -> None:
    inst = ops.instance(migration.instance_uuid)
    power_on = inst.power_state != states.SHUTDOWN
    assert migration.source_compute is not None
    with ops.event(inst.uuid, "compute_finish_revert_resize", migration.source_compute):
        ops.call_agent(migration.source_compute, "finish_revert_resize",
                       instance_uuid=inst.uuid, migration_uuid=migration.uuid,
                       old_flavor=old_flavor, power_on=power_on)
    with ops.db.write() as conn:
        migrations.update(conn, migration.uuid, status="reverted")
        instances.update(conn, inst.uuid, expected_task_state=TASK.RESIZE_REVERTING,
                         host=migration.source_compute, node=migration.source_node,
                         flavor=old_flavor, old_flavor=None, new_flavor=None,
                         vm_state=_vm_state_after(inst.power_state), task_state=None)
