"""Resize and cold migrate: the migration record owns the source while the instance moves.

    create migration ─> source allocation to migration ─> schedule + claim dest
        ─> prep on dest (reschedule to alternates) ─> resize on source
        ─> finish on dest ─> VERIFY_RESIZE

Every step undoes itself in reverse when a later one fails, so a failed move
leaves the instance holding exactly its source allocation and the migration
holding nothing. Failures before the guest is touched (scheduling, dest
claims) put the instance back where it was; failures on the hypervisors leave
it in ERROR, as Nova does, with the accounting of before the move.
"""

from __future__ import annotations

import logging
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from stowage.compute import instances, migrations, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Journal, Step, StepFailed, run_steps
from stowage.compute.instances import Instance
from stowage.compute.migrations import Migration
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import RemoteError

__all__ = ["migrate_server"]

LOG = logging.getLogger(__name__)


@dataclass
class Move:
    """What the steps of one move share."""

    ops: Ops
    instance: Instance
    new_flavor: dict[str, Any]
    requested_host: str | None
    migration: Migration
    selections: list[dict[str, Any]] = field(default_factory=list)
    dest: dict[str, Any] | None = None

    @property
    def source_host(self) -> str:
        assert self.instance.host is not None
        return self.instance.host

    @property
    def dest_host(self) -> str:
        assert self.dest is not None
        return str(self.dest["host"])


class CreateMigration(Step):
    name = "create_migration"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m, inst = self.move, self.move.instance
        with m.ops.db.write() as conn:
            migrations.create(conn, m.migration)
            instances.update(conn, inst.uuid, expected_task_state=TASK.RESIZE_PREP,
                             old_flavor=inst.flavor, new_flavor=m.new_flavor)

    def rollback(self) -> None:
        m = self.move
        with m.ops.db.write() as conn:
            migrations.update(conn, m.migration.uuid, status="error")
            instances.update(conn, m.instance.uuid, old_flavor=None, new_flavor=None)


class SourceToMigration(Step):
    """The migration takes over the instance's source allocation (one atomic write)."""

    name = "source_allocation_to_migration"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        m.ops.hand_over(m.instance.uuid, m.migration.uuid, "MIGRATION",
                        m.instance.project_id, m.instance.user_id)

    def rollback(self) -> None:
        m = self.move
        m.ops.hand_over(m.migration.uuid, m.instance.uuid, "INSTANCE",
                        m.instance.project_id, m.instance.user_id)


class ClaimDestination(Step):
    """The scheduler picks and claims the destination for the instance; alternates are kept."""

    name = "claim_destination"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        with m.ops.event(m.instance.uuid, "conductor_migrate_server"):
            spec = self._spec()
            m.selections = m.ops.scheduler.select_destinations(spec, [m.instance.uuid])[0]
        m.dest = m.selections.pop(0)

    def _spec(self) -> dict[str, Any]:
        m = self.move
        with m.ops.db.read() as conn:
            spec = instances.request_spec(conn, m.instance.uuid)
        resize = m.migration.migration_type == "resize"
        same_host_ok = resize and m.ops.settings.allow_resize_to_same_host
        spec.update(flavor=m.new_flavor, move=True,
                    ignore_hosts=[] if same_host_ok else [m.source_host],
                    requested_destination=({"host": m.requested_host, "node": None}
                                           if m.requested_host else None))
        return spec

    def rollback(self) -> None:
        m = self.move
        m.ops.placement.delete_allocations(m.instance.uuid)


class PrepOnDestination(Step):
    """The destination agent claims what Placement does not track (PCI); reschedules on failure."""

    name = "prep_resize"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        while True:
            try:
                self._prep()
                return
            except RemoteError as exc:
                LOG.info("prep_resize on %s failed (%s); trying an alternate", m.dest_host, exc)
                if not self._next_alternate():
                    raise MaxRetriesExceeded(
                        f"Exceeded maximum number of retries. Exhausted all hosts available "
                        f"for retrying build failures for instance {m.instance.uuid}. "
                        f"Last error: {exc.message}") from exc

    def _prep(self) -> None:
        m = self.move
        assert m.dest is not None
        with m.ops.db.write() as conn:
            m.migration = migrations.update(
                conn, m.migration.uuid, dest_compute=m.dest["host"], dest_node=m.dest["node"],
                dest_host=m.dest["host"])
        with m.ops.event(m.instance.uuid, "compute_prep_resize", m.dest_host):
            m.ops.call_agent(m.dest_host, "prep_resize", instance_uuid=m.instance.uuid,
                             migration_uuid=m.migration.uuid, new_flavor=m.new_flavor)

    def _next_alternate(self) -> bool:
        """Drop the failed claim and claim the next alternate; False when none is left."""
        m = self.move
        m.ops.placement.delete_allocations(m.instance.uuid)
        while m.selections:
            alternate = m.selections.pop(0)
            if m.ops.claim_alternate(m.instance, alternate):
                m.dest = alternate
                return True
        return False

    def rollback(self) -> None:
        m = self.move
        m.ops.call_agent(m.dest_host, "abort_prep_resize", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


class MaxRetriesExceeded(Exception):
    pass


class ResizeOnSource(Step):
    """The source powers the guest off and hands its disk over."""

    name = "resize_instance"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        with m.ops.db.write() as conn:
            migrations.update(conn, m.migration.uuid, status="migrating")
            instances.update(conn, m.instance.uuid, expected_task_state=TASK.RESIZE_PREP,
                             task_state=TASK.RESIZE_MIGRATING)
        with m.ops.event(m.instance.uuid, "compute_resize_instance", m.source_host):
            m.ops.call_agent(m.source_host, "resize_instance", instance_uuid=m.instance.uuid,
                             migration_uuid=m.migration.uuid, dest_host=m.dest_host,
                             new_flavor=m.new_flavor)
        with m.ops.db.write() as conn:
            migrations.update(conn, m.migration.uuid, status="post-migrating")
            instances.update(conn, m.instance.uuid, task_state=TASK.RESIZE_MIGRATED)

    def rollback(self) -> None:
        m = self.move
        m.ops.call_agent(m.source_host, "abort_resize_instance", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


class FinishOnDestination(Step):
    """The destination starts the guest with the new flavor: VERIFY_RESIZE."""

    name = "finish_resize"

    def __init__(self, move: Move) -> None:
        self.move = move

    def execute(self) -> None:
        m = self.move
        assert m.dest is not None
        power_on = m.instance.vm_state != states.STOPPED
        with m.ops.db.write() as conn:
            instances.update(conn, m.instance.uuid, task_state=TASK.RESIZE_FINISH)
        with m.ops.event(m.instance.uuid, "compute_finish_resize", m.dest_host):
            m.ops.call_agent(m.dest_host, "finish_resize", instance_uuid=m.instance.uuid,
                             migration_uuid=m.migration.uuid, new_flavor=m.new_flavor,
                             power_on=power_on)
        with m.ops.db.write() as conn:
            migrations.update(conn, m.migration.uuid, status="finished")
            instances.update(
                conn, m.instance.uuid, expected_task_state=TASK.RESIZE_FINISH,
                host=m.dest["host"], node=m.dest["node"], flavor=m.new_flavor,
                vm_state=states.RESIZED, task_state=None,
                power_state=states.RUNNING if power_on else states.SHUTDOWN)

    def rollback(self) -> None:
        m = self.move
        m.ops.call_agent(m.dest_host, "abort_finish_resize", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


def migrate_server(ops: Ops, instance_uuid: str, new_flavor: dict[str, Any] | None,
                   host: str | None) -> None:
    """Run a resize (`new_flavor`) or cold migration; on failure, undo and report."""
    inst = ops.instance(instance_uuid)
    migration = Migration(
        uuid=str(uuidlib.uuid4()), instance_uuid=inst.uuid,
        migration_type="resize" if new_flavor else "migration", status="pre-migrating",
        source_compute=inst.host, source_node=inst.node,
        old_flavor_id=inst.flavor.get("id"),
        new_flavor_id=(new_flavor or inst.flavor).get("id"),
        project_id=inst.project_id, user_id=inst.user_id)
    move = Move(ops, inst, new_flavor or inst.flavor, host, migration)
    steps = [CreateMigration(move), SourceToMigration(move), ClaimDestination(move),
             PrepOnDestination(move), ResizeOnSource(move), FinishOnDestination(move)]
    journal = Journal(ops.db, "migrate", inst.uuid)
    try:
        run_steps(steps, journal)
    except StepFailed as failure:
        _after_failure(move, failure)
    else:
        ops.finish_action(inst.uuid)
    finally:
        journal.close()


def _after_failure(move: Move, failure: StepFailed) -> None:
    """Nova's end states: the guest untouched -> as before; touched -> ERROR."""
    ops, inst = move.ops, move.instance
    touched = isinstance(failure.step, (ResizeOnSource, FinishOnDestination)) and not (
        isinstance(failure.cause, RemoteError)
        and failure.cause.exc_type == "InstanceFaultRollback")
    vm_state = states.ERROR if touched else inst.vm_state
    LOG.warning("move of %s failed at %s: %s", inst.uuid, failure.step.name, failure.cause)
    try:
        with ops.db.write() as conn:
            migrations.update(conn, move.migration.uuid, status="error")
            instances.update(conn, inst.uuid, vm_state=vm_state, task_state=None,
                             host=inst.host, node=inst.node, flavor=inst.flavor,
                             old_flavor=None, new_flavor=None)
    except NotFound:
        LOG.info("instance %s was deleted while its move failed", inst.uuid)
        return
    code = 400 if _no_valid_host(failure.cause) else 500
    ops.fault(inst.uuid, failure.cause, move.source_host, code)
    ops.finish_action(inst.uuid, "Error")


def _no_valid_host(exc: BaseException) -> bool:
    return isinstance(exc, MaxRetriesExceeded) or (
        isinstance(exc, RemoteError) and exc.exc_type == "NoValidHost")
