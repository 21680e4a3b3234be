"""Live migration: the guest moves while it runs; the migration owns the source meanwhile.

    API: migration queued, server MIGRATING ─> claim_destination (preparing; one write:
    source to the migration + dest to the instance) ─> check_destination (reschedule to
    alternates) ─> pre_live_migration (dest) ─> live_migration (running; source copies,
    polled) ═══ the guest is on dest ═══> post_live_migration_at_destination ─>
    post_live_migration (source) ─> drop_source_allocation (completed, ACTIVE on dest)

The steps are in `live_migrate_steps.py`. Until the copy completed, a failure
undoes the completed steps in reverse: the source allocation goes back to the
instance in one write that also drops the destination claim, the prepared
guest on the destination is destroyed, the guest runs on the source, and the
server is ACTIVE there again (Nova's `_rollback_live_migration`) with the
migration `error`, or `cancelled` after an abort. A guest that could not be
brought back on the source leaves the server in ERROR. Once the copy
completed the move only goes forward; a failure after it leaves the server
in ERROR on the destination, holding its destination allocation, and the
migration `error` holding nothing.

The server's ports move with it (`live_migrate_ports.py`): the destination
claim carries their request groups, `check_destination` gives each an
INACTIVE binding on the destination (its mapping, its VF) beside the
untouched ACTIVE one on the source, the post step activates it and deletes
the source's, and every undo before the copy completed deletes it again.

A server deleted during its live migration is not written back: its
rollbacks give nothing back and destroy what they made, and neither the
migration nor the instance keeps an allocation.

A live migration a crash cut off (`recover_live_migration`) goes forward when
its journal proves the copy completed (`live_migration` done: the post steps
are idempotent and run again), and is rolled back to the source otherwise,
settling on what the source hypervisor says: ACTIVE when the guest runs
there, ERROR when it does not.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from stowage.compute import instances, migrations, states
from stowage.compute.conductor.common import DeletedDuringMove, Ops, no_valid_host
from stowage.compute.conductor.live_migrate_steps import (
    CheckDestination,
    ClaimDestination,
    DropSourceAllocation,
    GuestNotRestored,
    LiveMigration,
    LiveMigrationAborted,
    LiveMove,
    NoValidHost,
    PostAtDestination,
    PostOnSource,
    PreCheckFailed,
    PreLiveMigration,
)
from stowage.compute.conductor.tasks import (
    Interrupted,
    Journal,
    Step,
    StepFailed,
    roll_back,
    run_steps,
)
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError, RemoteError

__all__ = ["live_migrate_instance", "recover_live_migration", "STEPS"]

LOG = logging.getLogger(__name__)


def _before_copy(move: LiveMove) -> list[Step]:
    return [ClaimDestination(move), CheckDestination(move), PreLiveMigration(move),
            LiveMigration(move)]


def _after_copy(move: LiveMove) -> list[Step]:
    return [PostAtDestination(move), PostOnSource(move), DropSourceAllocation(move)]


_BEFORE_COPY = ("claim_destination", "check_destination", "pre_live_migration",
                "live_migration")
# The journal steps of a live migration, in order (crash tests enumerate them).
STEPS = (*_BEFORE_COPY, "post_live_migration_at_destination", "post_live_migration",
         "drop_source_allocation")


def live_migrate_instance(ops: Ops, instance_uuid: str, migration_uuid: str,
                          host: str | None, force: bool, block_migration: bool | None,
                          journal: Journal) -> None:
    """Run the live migration the API accepted; on failure, undo and report."""
    try:
        with ops.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
            migration = migrations.get(conn, migration_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its live migration started", instance_uuid)
        ops.finish_action(instance_uuid, "Error")
        return
    move = LiveMove(ops, inst, migration, host, force, block_migration)
    try:
        run_steps(_before_copy(move), journal)
    except StepFailed as failure:
        _rolled_back(move, failure)
        return
    _go_forward(move, journal)


def _go_forward(move: LiveMove, journal: Journal) -> None:
    """The guest is on the destination: the post steps, then the end of the action."""
    try:
        run_steps(_after_copy(move), journal, move.ops.finishing(move.instance.uuid))
    except StepFailed as failure:
        _failed_after_copy(move, failure)


def _rolled_back(move: LiveMove, failure: StepFailed) -> None:
    """Back on the source: ACTIVE (ERROR if its guest could not be brought back there)."""
    ops, inst = move.ops, move.instance
    LOG.warning("live migration of %s failed at %s: %s", inst.uuid, failure.step.name,
                failure.cause)
    if move.gone() or isinstance(failure.cause, DeletedDuringMove):
        _stopped_by_delete(move)
        return
    aborted = isinstance(failure.cause, LiveMigrationAborted)
    lost = failure.undo_errors or isinstance(failure.cause, GuestNotRestored)
    vm_state = states.ERROR if lost else inst.vm_state
    try:
        with ops.db.write() as conn:
            migrations.save(conn, move.migration.uuid,
                            status="cancelled" if aborted else "error")
            instances.update(conn, inst.uuid, expected_task_state=TASK.MIGRATING,
                             vm_state=vm_state, task_state=None, host=move.source_host,
                             node=move.migration.source_node or inst.node, progress=0)
    except (NotFound, UnexpectedTaskState):
        if not move.gone():
            raise
        _stopped_by_delete(move)
        return
    if not aborted:
        _fault(move, failure.cause)
    ops.finish_action(inst.uuid, None if aborted else "Error")


def _fault(move: LiveMove, cause: BaseException) -> None:
    """A refusal (source or destination down, no valid host, a pre-check) is a 400 fault
    with the refusal's own message, as Nova's conductor records its exception (and as
    the API answers it before 2.34); anything else a 500."""
    if isinstance(cause, PreCheckFailed) or no_valid_host(cause, NoValidHost):
        message = cause.message if isinstance(cause, RemoteError) else str(cause)
        move.ops.fault(move.instance.uuid, cause, move.source_host, 400, message)
        return
    move.ops.fault(move.instance.uuid, cause, move.source_host)


def _failed_after_copy(move: LiveMove, failure: StepFailed) -> None:
    """The guest left the source: ERROR on the destination, which it holds; the
    migration's source allocation is dropped (Nova's post-migration failure)."""
    ops, inst = move.ops, move.instance
    LOG.error("live migration of %s failed after the copy, at %s: %s", inst.uuid,
              failure.step.name, failure.cause)
    if move.gone():
        _stopped_by_delete(move)
        return
    ops.placement.delete_allocations(move.migration.uuid)
    if isinstance(failure.step, PostAtDestination):
        with contextlib.suppress(MessagingError):  # clean the source up all the same
            ops.call_agent(move.source_host, "post_live_migration",
                           instance_uuid=inst.uuid, migration_uuid=move.migration.uuid)
    assert move.dest is not None
    try:
        with ops.db.write() as conn:
            migrations.save(conn, move.migration.uuid, status="error")
            instances.update(conn, inst.uuid, expected_task_state=TASK.MIGRATING,
                             vm_state=states.ERROR, task_state=None, host=move.dest["host"],
                             node=move.dest["node"], progress=0)
    except (NotFound, UnexpectedTaskState):
        if not move.gone():
            raise
        _stopped_by_delete(move)
        return
    ops.fault(inst.uuid, failure.cause, move.dest_host)
    ops.finish_action(inst.uuid, "Error")


def _stopped_by_delete(move: LiveMove) -> None:
    """A server deleted during its live migration ends with nothing, anywhere.

    The rollbacks gave nothing back; the delete destroys the guests on the
    instance's host and the migration's hosts. Allocations and guests are
    dropped here too, since the delete may have run before the rollbacks.
    """
    ops, mig = move.ops, move.migration
    LOG.info("instance %s was deleted during its live migration; the move stops",
             move.instance.uuid)
    ops.placement.delete_allocations(mig.uuid)
    ops.placement.delete_allocations(move.instance.uuid)
    hosts = {move.source_host, mig.dest_compute, move.dest["host"] if move.dest else None}
    for host in sorted(h for h in hosts if h):
        ops.terminate_quietly(host, move.instance.uuid)
    with ops.db.write() as conn, contextlib.suppress(NotFound):
        migrations.save(conn, mig.uuid, status="error")
    ops.finish_action(move.instance.uuid, "Error")


class InterruptedByRestart(Exception):
    """The fault recorded on an instance whose live migration a crash cut off."""


def recover_live_migration(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Finish a live migration a crash cut off, or undo it to the source.

    Completed (only the action was left): finish it. Ended already (failure
    handled): the same. The copy completed (`live_migration` done): the post
    steps run again. Otherwise the journaled steps are rolled back in reverse
    and the instance settles on its source as its guest there says.
    """
    assert op.instance_uuid is not None
    with ops.db.read() as conn:
        inst = instances.get(conn, op.instance_uuid, read_deleted=True)
        migration = _migration_of(conn, op)
    if migration is None or migration.status == "completed":
        ops.finish_action(inst.uuid, None if migration else "Error")
        return
    if migration.finished and inst.task_state != TASK.MIGRATING:
        ops.finish_action(inst.uuid, "Error")
        return
    move = LiveMove(ops, inst, migration, op.args.get("host"), bool(op.args.get("force")),
                    op.args.get("block_migration"))
    if migration.dest_compute:
        move.dest = {"host": migration.dest_compute, "node": migration.dest_node}
    if inst.deleted or move.gone():
        _stopped_by_delete(move)
        return
    if _copied(op):
        LOG.warning("finishing the live migration %s of %s cut off by a restart",
                    migration.uuid, inst.uuid)
        _go_forward(move, journal)
        return
    LOG.warning("undoing the live migration %s of %s cut off by a restart", migration.uuid,
                inst.uuid)
    roll_back(_before_copy(move), {name: op.state(name) for name in _BEFORE_COPY}, journal)
    _settle_undone(ops, inst, migration)


def _copied(op: Interrupted) -> bool:
    """The journal proves the guest reached the destination: the copy's step is done."""
    return op.state("live_migration") == "done" or any(
        op.state(name) is not None for name in STEPS[len(_BEFORE_COPY):])


def _migration_of(conn: Any, op: Interrupted) -> Migration | None:
    """The migration the API created with the operation (its uuid is in the accepted row)."""
    try:
        return migrations.get(conn, str(op.args.get("migration_uuid")))
    except NotFound:
        return None


def _settle_undone(ops: Ops, inst: Instance, migration: Migration) -> None:
    """On the source: ACTIVE (PAUSED) when its guest runs (is paused) there, else ERROR."""
    source = migration.source_compute or inst.host
    power = ops.guest_power(source, inst.uuid)
    vm_state = {states.RUNNING: states.ACTIVE, states.PAUSED_POWER: states.PAUSED}.get(
        power, states.ERROR)
    cancelled = migration.status == "cancelled"
    with ops.db.write() as conn:
        migrations.save(conn, migration.uuid, status="cancelled" if cancelled else "error")
        instances.update(conn, inst.uuid, vm_state=vm_state, task_state=None, host=source,
                         node=migration.source_node or inst.node, power_state=power,
                         progress=0)
    reason = ("the live migration was interrupted by a restart and undone"
              + ("" if vm_state != states.ERROR else f"; no guest runs on {source}"))
    ops.fault(inst.uuid, InterruptedByRestart(reason), source)
    ops.finish_action(inst.uuid, "Error")
