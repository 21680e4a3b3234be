"""Ending a resize: confirm drops the migration's source allocation, revert gives it back.

Confirm (API, automatic after `resize_confirm_window`, or deleting a server
in VERIFY_RESIZE): the source cleans up and the migration's allocation is
deleted (one step), then the records settle. A failed source cleanup changes nothing:
the server stays in VERIFY_RESIZE with its migration `finished`, so confirm
or revert can be retried, and the accounting stays exact.

Revert: the destination destroys its guest, then one atomic write hands the
source allocation back to the instance (replacing its destination one), then
the source starts the old guest, then the records settle. If the destination
fails, nothing changed; once the destination guest is gone the revert goes
forward, and a source failure leaves the instance in ERROR on its source
with its source allocation.

A server with ports: confirm leaves them where they are (bound to the
destination since finish_resize). Revert binds them back to the source just
before the source starts the old guest (Nova's `finish_revert_resize`), with
the mapping found in the source allocation the instance holds again after
the hand-back and each SR-IOV port's VF the one the source kept; the ports
therefore point at the source whenever the server is there, ERROR included.

Both only go forward once begun, so a crash is recovered by running them
again (`recover_confirm`, `recover_revert`): every step is idempotent, the
hand-over only moves what the migration still holds, and a revert whose
destination step was journaled done does not ask the destination again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances, migrations, states
from stowage.compute.conductor import cross_cell, ports
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import (
    Batch,
    Interrupted,
    Journal,
    Step,
    StepFailed,
    run_steps,
)
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK
from stowage.errors import NotFound

__all__ = ["confirm_resize", "revert_resize", "confirm_migration", "recover_confirm",
           "recover_revert", "STEPS"]

LOG = logging.getLogger(__name__)

# The journal steps of each operation, in order (crash tests enumerate them).
STEPS = {
    "confirm_resize": ("confirm_on_source", "settle"),
    "revert_resize": ("revert_on_destination", "source_allocation_to_instance",
                      "finish_revert_resize", "settle"),
}


def _vm_state_after(power_state: int) -> str:
    return states.STOPPED if power_state == states.SHUTDOWN else states.ACTIVE


class CleanSource(Step):
    """The source forgets the old guest, then the migration's source allocation is dropped
    (as Nova's compute does in its confirm); an API confirm marks the migration
    `confirming` first.

    One step, so one journal transaction fewer than two: nothing undoes either
    part (a failure of the drop, like one of the source, keeps the resize open
    for a retry) and recovery confirms again from the start whatever the
    journal says, each part being idempotent.
    """

    name = "confirm_on_source"
    event = "compute_confirm_resize"

    def __init__(self, ops: Ops, migration: Migration, mark: bool) -> None:
        self.ops, self.migration, self.mark = ops, migration, mark

    def event_host(self) -> str | None:
        return self.migration.source_compute

    def before(self, conn: Connection) -> None:
        if self.mark:
            migrations.save(conn, self.migration.uuid, status="confirming")

    def execute(self) -> None:
        m = self.migration
        assert m.source_compute is not None
        self.ops.call_agent(m.source_compute, "confirm_resize",
                            instance_uuid=m.instance_uuid, migration_uuid=m.uuid)
        self.ops.placement.delete_allocations(m.uuid)


class ForgetSourceCopy(Step):
    """A move from another cell: that cell's (hidden) copy of the server is hard-deleted
    once the source host let the old guest go (cross_cell.py)."""

    name = "forget_source_copy"

    def __init__(self, ops: Ops, migration: Migration) -> None:
        self.ops, self.migration = ops, migration

    def execute(self) -> None:
        cross_cell.forget_source_copy(self.ops, self.migration)


class Settle(Step):
    """The records: migration confirmed, and the server out of VERIFY_RESIZE (unless a delete
    confirms it, which settles the server itself)."""

    name = "settle"
    acts = False

    def __init__(self, migration: Migration, settle_instance: bool) -> None:
        self.migration, self.settle_instance = migration, settle_instance

    def before(self, conn: Connection) -> None:
        migrations.save(conn, self.migration.uuid, status="confirmed")
        if self.settle_instance:
            inst = instances.get(conn, self.migration.instance_uuid)
            instances.save(conn, inst.uuid, vm_state=_vm_state_after(inst.power_state),
                           task_state=None, old_flavor=None, new_flavor=None)


def confirm_resize(ops: Ops, migration_uuid: str, journal: Journal) -> None:
    with ops.db.read() as conn:
        migration = migrations.get(conn, migration_uuid)
    confirm_migration(ops, migration, journal, settle_instance=True, mark_confirming=True,
                      last=ops.finishing(migration.instance_uuid))


def confirm_migration(ops: Ops, migration: Migration, journal: Journal,
                      settle_instance: bool, mark_confirming: bool = False,
                      last: Callable[[Batch], None] | None = None) -> bool:
    """The steps of a confirm under `journal` (a delete runs them under its own, and
    settles the instance itself); False if the source failed and the resize was kept
    open. `last` writes the operation's final records with the settle."""
    steps: list[Step] = [CleanSource(ops, migration, mark_confirming)]
    if cross_cell.source_copy(ops, migration) is not None:
        steps.append(ForgetSourceCopy(ops, migration))
    steps.append(Settle(migration, settle_instance))
    try:
        run_steps(steps, journal, last)
    except StepFailed as failure:
        if isinstance(failure.step, Settle):
            raise failure.cause from failure
        LOG.warning("confirm of %s failed: %s", migration.instance_uuid, failure.cause)
        _keep_open(ops, migration, failure.cause, migration.source_compute)
        return False
    return True


def _keep_open(ops: Ops, migration: Migration, cause: BaseException, host: str | None) -> None:
    """Nothing changed: VERIFY_RESIZE again with the migration `finished`, and a fault."""
    with ops.db.write() as conn:
        migrations.update(conn, migration.uuid, status="finished")
        instances.update(conn, migration.instance_uuid, task_state=None)
    ops.fault(migration.instance_uuid, cause, host)
    ops.finish_action(migration.instance_uuid, "Error")


class DestroyOnDestination(Step):
    """The destination destroys the new guest; the migration is marked `reverting` first."""

    name = "revert_on_destination"
    event = "compute_revert_resize"

    def __init__(self, ops: Ops, migration: Migration) -> None:
        self.ops, self.migration = ops, migration

    def event_host(self) -> str | None:
        return self.migration.dest_compute

    def before(self, conn: Connection) -> None:
        migrations.save(conn, self.migration.uuid, status="reverting")

    def execute(self) -> None:
        m = self.migration
        assert m.dest_compute is not None
        self.ops.call_agent(m.dest_compute, "revert_resize", instance_uuid=m.instance_uuid,
                            migration_uuid=m.uuid)


_HAND_BACK = "source_allocation_to_instance"
_START_SOURCE = "finish_revert_resize"
_START_EVENT = "compute_finish_revert_resize"


def revert_resize(ops: Ops, migration_uuid: str, journal: Journal,
                  destination_done: bool = False) -> None:
    """Destination, hand-back, source, records: one journal transaction before each step
    acts and one at the end (`destination_done`: recovery found that step journaled done)."""
    with ops.db.read() as conn:
        migration = migrations.get(conn, migration_uuid)
        inst = instances.get(conn, migration.instance_uuid)
    if destination_done:
        with journal.batch() as batch:
            migrations.save(batch.conn, migration.uuid, status="reverting")
            batch.record(_HAND_BACK, "executing")
    else:
        try:
            run_steps([DestroyOnDestination(ops, migration)], journal,
                      last=lambda batch: batch.record(_HAND_BACK, "executing"))
        except StepFailed as failure:
            LOG.warning("revert of %s failed on the destination: %s", inst.uuid, failure.cause)
            _keep_open(ops, migration, failure.cause, migration.dest_compute)
            return
    # Past the point of no return: the destination guest is gone.
    if ops.placement.holding(migration.uuid).allocations:  # not yet handed back
        ops.hand_over(migration.uuid, inst.uuid, "INSTANCE", inst.project_id, inst.user_id)
    power_on = _before_source(ops, journal, migration)
    if power_on is None:
        _left_to_the_delete(ops, migration)
        return
    old_flavor = inst.old_flavor or inst.flavor
    assert migration.source_compute is not None
    try:
        ports.rebind(ops, ports.load(ops, inst.uuid), migration.source_compute, inst.uuid, "",
                     lambda: _deleting(ops, inst.uuid))
        ops.call_agent(migration.source_compute, "finish_revert_resize",
                       instance_uuid=inst.uuid, migration_uuid=migration.uuid,
                       old_flavor=old_flavor, power_on=power_on)
    except Exception as exc:
        _source_failed(ops, journal, migration, old_flavor, exc)
        cross_cell.carry_back(ops, migration)  # ERROR on the source host, in its cell
        return
    crossed = cross_cell.source_copy(ops, migration) is not None
    if _settle_reverted(ops, journal, migration, old_flavor, end=not crossed) and crossed:
        cross_cell.carry_back(ops, migration)  # the journal ends after (`_run`)


def _before_source(ops: Ops, journal: Journal, migration: Migration) -> bool | None:
    """Journal the hand-back done and the source step started (with its event); whether
    the source should power the guest on. None: the server is being deleted."""
    events = ops.events(migration.instance_uuid)
    with journal.batch() as batch:
        batch.record(_HAND_BACK, "done")
        try:
            now = instances.get(batch.conn, migration.instance_uuid)
        except NotFound:
            return None
        if now.task_state == TASK.DELETING:
            return None
        batch.record(_START_SOURCE, "executing")
        events.start(batch.conn, _START_EVENT, migration.source_compute)
    return now.power_state != states.SHUTDOWN


def _source_failed(ops: Ops, journal: Journal, migration: Migration,
                   old_flavor: dict[str, Any], exc: Exception) -> None:
    """ERROR on the source with its old flavor (unless the server is being deleted)."""
    uuid = migration.instance_uuid
    LOG.warning("revert of %s failed on the source: %s", uuid, exc)
    with journal.batch() as batch:
        ops.events(uuid).finish(batch.conn, _START_EVENT, exc)
        batch.record(_START_SOURCE, "failed", str(exc)[:1000])
    if _deleting(ops, uuid):  # the delete destroyed the set-aside guest
        _left_to_the_delete(ops, migration)
        return
    with ops.db.write() as conn:
        instances.lock(conn, uuid)  # the lock order: instance, then migrations
        migrations.save(conn, migration.uuid, status="error")
        instances.save(conn, uuid, vm_state=states.ERROR, task_state=None,
                       host=migration.source_compute, node=migration.source_node,
                       flavor=old_flavor, old_flavor=None, new_flavor=None)
    ops.fault(uuid, exc, migration.source_compute)
    ops.finish_action(uuid, "Error")


def _settle_reverted(ops: Ops, journal: Journal, migration: Migration,
                     old_flavor: dict[str, Any], end: bool = True) -> bool:
    """Source done, the records settled, the action and (`end`) the operation ended: one
    transaction; False when a server deleted meanwhile was left to the delete."""
    uuid = migration.instance_uuid
    events = ops.events(uuid)
    try:
        with journal.batch() as batch:
            events.finish(batch.conn, _START_EVENT)
            batch.record(_START_SOURCE, "done")
            _settle_records(batch, migration, old_flavor)
            events.finish_action(batch.conn)
            if end:
                batch.end()
    except (NotFound, UnexpectedTaskState):
        if not _deleting(ops, uuid):
            raise
        with journal.batch() as batch:
            events.finish(batch.conn, _START_EVENT)
            batch.record(_START_SOURCE, "done")
        _left_to_the_delete(ops, migration)  # the delete destroys the guest started again
        return False
    return True


def _settle_records(batch: Batch, migration: Migration, old_flavor: dict[str, Any]) -> None:
    batch.passed("settle", "executing")
    now = instances.get(batch.conn, migration.instance_uuid)
    migrations.save(batch.conn, migration.uuid, status="reverted")
    instances.save(batch.conn, now.uuid, expected_task_state=TASK.RESIZE_REVERTING,
                   host=migration.source_compute, node=migration.source_node,
                   flavor=old_flavor, old_flavor=None, new_flavor=None,
                   vm_state=_vm_state_after(now.power_state), task_state=None)
    batch.record("settle", "done")


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
    cross_cell.forget_source_copy(ops, migration)  # the delete has this cell's copy


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
        if migration.status in ("reverted", "error"):
            cross_cell.carry_back(ops, migration)  # a cross-cell revert's last part


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
