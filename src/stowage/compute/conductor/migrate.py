"""Resize and cold migrate: the migration record owns the source while the instance moves.

    create migration ─> schedule, and in one write: source to the migration + claim dest
        ─> prep on dest (reschedule to alternates) ─> resize on source
        ─> finish on dest ─> VERIFY_RESIZE

Every step undoes itself in reverse when a later one fails, so a failed move
leaves the instance holding exactly its source allocation and the migration
holding nothing. Failures before the guest is touched (scheduling, dest
claims) put the instance back where it was; failures on the hypervisors leave
it in ERROR, as Nova does, with the accounting of before the move.

A server with ports asks for their request groups on the destination too
(read from the Network service when the destination is claimed): the
destination agent takes each SR-IOV port's VF from the PF the new candidate's
`mappings` name (prep_resize), and the ports are bound to the destination with
the new mapping just before it starts the guest (finish_resize, Nova's
`migrate_instance_finish` there). Every undo of that step binds them back to
the source, mapped from the allocation the migration holds there, each VF
the one the source still holds; a same-host resize keeps its ports on the
same host's providers, mapped from the new allocation.

A server deleted during its move (DELETE answers in any task state, as Nova's
does) is not written back: the move notices at its next step or state change,
its rollbacks give nothing back to the instance and destroy what they made
(guests on both hosts), and neither the migration nor the instance keeps an
allocation; the delete destroys the guest on the instance's host.

A move a crash cut off before VERIFY_RESIZE is undone the same way on the
next start (`recover_move`): the journaled steps are rebuilt from the
migration record and rolled back, and the instance ends ACTIVE or SHUTOFF on
its source when the source hypervisor still has its guest, ERROR otherwise.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import cell_copy, instances, migrations, states
from stowage.compute.cells import CellMapping
from stowage.compute.conductor import cross_cell, ports, tasks, upgrade_checks
from stowage.compute.conductor.common import MoveState, Ops, being_deleted, no_valid_host
from stowage.compute.conductor.tasks import (
    Batch,
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
from stowage.db import Database
from stowage.errors import NotFound
from stowage.messaging import RemoteError

__all__ = ["migrate_server", "recover_move", "continue_in_target", "recover_cross_cell",
           "STEPS"]

LOG = logging.getLogger(__name__)


@dataclass
class Move(MoveState):
    """What the steps of one move share (source, destination, the delete's stop: MoveState)."""

    ops: Ops
    instance: Instance
    new_flavor: dict[str, Any]
    requested_host: str | None
    migration: Migration
    selections: list[dict[str, Any]] = field(default_factory=list)
    dest: dict[str, Any] | None = None
    # The server's ports (read when the destination is claimed, or lazily by an undo),
    # and the VF each SR-IOV port holds on the destination (from prep_resize).
    server_ports: ports.ServerPorts | None = None
    dest_pci: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A host of another cell may be chosen (`compute:servers:resize:cross_cell`).
    cross_cell: bool = False
    # The steps being run: ClaimDestination replaces the rest with a hand-over when the
    # destination's cell keeps its records in another database (cross_cell.py).
    steps: list[Step] = field(default_factory=list)
    # The journal's operation uuid (a hand-over's continuation is named after it).
    operation_uuid: str = ""
    # Run in the target cell: the source cell's database, whose copy a delete marks.
    source_db: Database | None = None

    def gone_in(self, conn: Connection) -> bool:
        """Deleted here, or -- run in the target cell -- in the source cell, where the
        instance mapping still sends the DELETE until the swap."""
        if super().gone_in(conn):
            return True
        if self.source_db is None:
            return False
        with self.source_db.read() as source:
            return being_deleted(source, self.instance.uuid)

    def ports(self) -> ports.ServerPorts:
        if self.server_ports is None:
            self.server_ports = ports.load(self.ops, self.instance.uuid)
        return self.server_ports

    def dest_mapping(self) -> dict[str, str]:
        """group -> provider on the destination: the candidate's mappings, else (a step
        done again after a restart) what the instance holds there."""
        return ports.mapping(self.ops, self.ports().requests, self.dest, self.instance.uuid)

    def bind_to_source(self) -> None:
        """The ports back on the source, as the migration's source allocation maps them
        (or the instance's, once given back), each VF the one the source holds."""
        server_ports = self.ports()
        if not server_ports:
            return
        holder = (self.migration.uuid
                  if self.ops.placement.holding(self.migration.uuid).allocations
                  else self.instance.uuid)
        ports.rebind(self.ops, server_ports, self.source_host, holder, "", self.gone)


class CreateMigration(Step):
    name = "create_migration"
    acts = False

    def __init__(self, move: Move) -> None:
        self.move = move

    def journal_detail(self) -> str:
        return json.dumps({"migration_uuid": self.move.migration.uuid})

    def before(self, conn: Connection) -> None:
        m, inst = self.move, self.move.instance
        migrations.create(conn, m.migration)
        instances.save(conn, inst.uuid, expected_task_state=TASK.RESIZE_PREP,
                       old_flavor=inst.flavor, new_flavor=m.new_flavor)

    def rollback(self) -> None:
        m = self.move
        with m.ops.db.write() as conn:
            instances.lock(conn, m.instance.uuid)  # the lock order: instance, then migrations
            if not migrations.save(conn, m.migration.uuid, status="error"):
                return  # a crash came before the migration was written: nothing to undo
            with contextlib.suppress(NotFound):  # deleted during the move: nothing to reset
                instances.save(conn, m.instance.uuid, old_flavor=None, new_flavor=None)


class ClaimDestination(Step):
    """The migration takes the instance's source over, the instance claims the destination.

    The scheduler picks the destination and claims it in the same atomic
    `POST /allocations` that hands the source to the migration; the next
    hosts are kept as unclaimed alternates.
    """

    name = "claim_destination"
    event = "conductor_migrate_server"

    def __init__(self, move: Move) -> None:
        self.move = move
        self.spec: dict[str, Any] = {}

    def before(self, conn: Connection) -> None:
        m = self.move
        m.stop_if_deleted(conn)
        if m.server_ports is None:  # in this transaction: no read of its own
            m.server_ports = ports.load_in(conn, m.instance.uuid)
        with m.ops.api_db.using(conn) as api:
            spec = instances.request_spec(api, m.instance.uuid)
        resize = m.migration.migration_type == "resize"
        same_host_ok = resize and m.ops.settings.allow_resize_to_same_host
        spec.update(flavor=m.new_flavor, move=True,
                    ignore_hosts=[] if same_host_ok else [m.source_host],
                    requested_destination=({"host": m.requested_host, "node": None}
                                           if m.requested_host else None))
        if m.cross_cell and m.ops.cells is not None:  # any cell's hosts, its own preferred
            spec.update(allow_cross_cell_move=True,
                        cross_cell_from=m.ops.cells.of_instance(m.instance.uuid).uuid)
        self.spec = spec

    def execute(self) -> None:
        m = self.move
        requests = ports.requests_of(m.ops, m.ports())
        self.spec["port_requests"] = ports.spec_entries(requests)
        m.schedule(self.spec, m.ops.placement.holding(m.instance.uuid))
        if self.spec["port_requests"] and not upgrade_checks.dest_takes_ports(m):
            m.give_source_back()  # this step raised: it leaves nothing behind
            raise MaxRetriesExceeded(
                f"Exhausted all hosts available during compute service level check for "
                f"instance {m.instance.uuid}.")
        target = cross_cell.target_cell(m.ops, m.dest)
        if target is not None:  # the rest runs in the destination's cell
            m.steps[m.steps.index(self) + 1:] = [
                cross_cell.HandOver(m, target, m.operation_uuid)]

    def rollback(self) -> None:
        """Give the source back, or drop both claims of a server deleted meanwhile."""
        self.move.give_source_back()


class PrepOnDestination(Step):
    """The destination agent claims what Placement does not track (PCI); reschedules on failure.

    The agent records itself as the migration's destination once the group
    policy allows it. Each host tried gets its own `compute_prep_resize` event.
    """

    name = "prep_resize"
    event = "compute_prep_resize"

    def __init__(self, move: Move) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.dest_host

    def before(self, conn: Connection) -> None:
        self.move.stop_if_deleted(conn)

    def execute(self) -> None:
        m = self.move
        while True:
            try:
                vf_ports = ports.vf_ports(m.ports().requests, m.dest_mapping())
                m.dest_pci = m.ops.call_agent(
                    m.dest_host, "prep_resize", instance_uuid=m.instance.uuid,
                    migration_uuid=m.migration.uuid, new_flavor=m.new_flavor,
                    **({"vf_ports": vf_ports} if vf_ports else {})) or {}
                return
            except RemoteError as exc:
                LOG.info("prep_resize on %s failed (%s); trying an alternate", m.dest_host, exc)
                events = m.ops.events(m.instance.uuid)
                with m.ops.db.write() as conn:
                    events.finish(conn, "compute_prep_resize", exc)
                alternate = m.ops.next_alternate(m.instance, m.selections)
                if alternate is None:
                    raise MaxRetriesExceeded(
                        f"Exceeded maximum number of retries. Exhausted all hosts available "
                        f"for retrying build failures for instance {m.instance.uuid}. "
                        f"Last error: {exc.message}") from exc
                m.dest = alternate
                with_groups = any(r.groups for r in m.ports().requests)
                if with_groups and not upgrade_checks.dest_takes_ports(m):
                    raise MaxRetriesExceeded(
                        f"Exhausted all hosts available during compute service level check "
                        f"for instance {m.instance.uuid}.") from exc
                with m.ops.db.write() as conn:
                    m.stop_if_deleted(conn)
                    events.start(conn, "compute_prep_resize", m.dest_host)
                events.committed(conn)

    def rollback(self) -> None:
        m = self.move
        if m.dest is None:
            return  # recovery: the crash came before a destination was recorded
        m.ops.call_agent(m.dest_host, "abort_prep_resize", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


class MaxRetriesExceeded(Exception):
    pass


class ResizeOnSource(Step):
    """The source powers the guest off and hands its disk over.

    A server deleted meanwhile fails the records written after: the step then
    undoes itself (the run does), so the source guest does not stay behind.
    """

    name = "resize_instance"
    event = "compute_resize_instance"

    def __init__(self, move: Move) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.source_host

    def before(self, conn: Connection) -> None:
        m = self.move
        migrations.save(conn, m.migration.uuid, status="migrating")
        instances.save(conn, m.instance.uuid, expected_task_state=TASK.RESIZE_PREP,
                       task_state=TASK.RESIZE_MIGRATING)

    def execute(self) -> None:
        m = self.move
        m.ops.call_agent(m.source_host, "resize_instance", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid, dest_host=m.dest_host,
                         new_flavor=m.new_flavor)

    def after(self, conn: Connection) -> None:
        m = self.move
        migrations.save(conn, m.migration.uuid, status="post-migrating")
        instances.save(conn, m.instance.uuid, expected_task_state=TASK.RESIZE_MIGRATING,
                       task_state=TASK.RESIZE_MIGRATED)

    def rollback(self) -> None:
        """Bring the source guest back; for a server deleted meanwhile, destroy it instead."""
        m = self.move
        if m.gone():
            m.ops.call_agent(m.source_host, "terminate_instance", instance_uuid=m.instance.uuid)
            return
        m.ops.call_agent(m.source_host, "abort_resize_instance", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


class FinishOnDestination(Step):
    """The ports are bound to the destination, which starts the guest with the new flavor:
    VERIFY_RESIZE.

    A failure binds the ports back to the source before it is raised (the
    step leaves nothing behind); a server deleted meanwhile fails the records
    written after: the step then undoes itself, so the new guest does not
    stay behind.
    """

    name = "finish_resize"
    event = "compute_finish_resize"

    def __init__(self, move: Move) -> None:
        self.move = move

    @property
    def power_on(self) -> bool:
        return self.move.instance.vm_state != states.STOPPED

    def event_host(self) -> str | None:
        return self.move.dest_host

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.move.instance.uuid, expected_task_state=TASK.RESIZE_MIGRATED,
                       task_state=TASK.RESIZE_FINISH)

    def execute(self) -> None:
        m = self.move
        try:
            self._bind_to_destination()
            m.ops.call_agent(m.dest_host, "finish_resize", instance_uuid=m.instance.uuid,
                             migration_uuid=m.migration.uuid, new_flavor=m.new_flavor,
                             power_on=self.power_on)
        except Exception:
            self._back_to_source()
            raise

    def _bind_to_destination(self) -> None:
        m = self.move
        server_ports = m.ports()
        if not server_ports:
            return
        group_map = m.dest_mapping()
        pci = m.dest_pci
        wanted = ports.vf_ports(server_ports.requests, group_map)
        if wanted and set(pci) != set(wanted):  # done again after a restart: ask the host
            pci = m.ops.call_agent(m.dest_host, "port_devices", instance_uuid=m.instance.uuid,
                                   migration_uuid=m.migration.uuid, vf_ports=wanted)
        ports.bind(m.ops, server_ports, m.dest_host, group_map, pci, m.gone)

    def _back_to_source(self) -> None:
        try:
            self.move.bind_to_source()
        except Exception:
            LOG.exception("could not bind the ports of %s back to its source",
                          self.move.instance.uuid)

    def after(self, conn: Connection) -> None:
        self.on_destination(conn, vm_state=states.RESIZED, task_state=None)

    def on_destination(self, conn: Connection, **state: Any) -> None:
        """The records of the server on its destination (and the migration finished)."""
        m = self.move
        assert m.dest is not None
        migrations.save(conn, m.migration.uuid, status="finished")
        instances.save(conn, m.instance.uuid, expected_task_state=TASK.RESIZE_FINISH,
                       host=m.dest["host"], node=m.dest["node"], flavor=m.new_flavor,
                       power_state=states.RUNNING if self.power_on else states.SHUTDOWN,
                       **state)

    def rollback(self) -> None:
        m = self.move
        if m.dest is None:
            return
        m.ops.call_agent(m.dest_host, "abort_finish_resize", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)
        m.bind_to_source()


def _steps(move: Move) -> list[Step]:
    move.steps = [CreateMigration(move), ClaimDestination(move), PrepOnDestination(move),
                  ResizeOnSource(move), FinishOnDestination(move)]
    return move.steps


# The journal steps of a move, in order (crash tests enumerate them).
STEPS = ("create_migration", "claim_destination", "prep_resize", "resize_instance",
         "finish_resize")


def migrate_server(ops: Ops, instance_uuid: str, new_flavor: dict[str, Any] | None,
                   host: str | None, journal: Journal, cross_cell_ok: bool = False) -> None:
    """Run a resize (`new_flavor`) or cold migration; on failure, undo and report.
    `cross_cell_ok`: the destination may be in another cell (cross_cell.py)."""
    try:
        inst = ops.instance(instance_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its move started", instance_uuid)
        ops.finish_action(instance_uuid, "Error")
        return
    migration = Migration(
        uuid=str(uuidlib.uuid4()), instance_uuid=inst.uuid,
        migration_type="resize" if new_flavor else "migration", status="pre-migrating",
        source_compute=inst.host, source_node=inst.node,
        old_flavor_id=inst.flavor.get("id"),
        new_flavor_id=(new_flavor or inst.flavor).get("id"),
        project_id=inst.project_id, user_id=inst.user_id)
    move = Move(ops, inst, new_flavor or inst.flavor, host, migration,
                cross_cell=cross_cell_ok, operation_uuid=journal.uuid)
    finishing = ops.finishing(inst.uuid)

    def last(batch: Batch) -> None:
        """A move handed over ends here; its action, in the target cell."""
        if any(isinstance(step, cross_cell.HandOver) for step in move.steps):
            batch.end()
        else:
            finishing(batch)
    try:
        run_steps(_steps(move), journal, last)
    except StepFailed as failure:
        _after_failure(move, failure)


# --- the target cell's part of a cross-cell move (cross_cell.py) ---------------------
class ClaimedInSource(Step):
    """The claims the source cell's conductor made (the migration owns the source, the
    instance the destination): given back if the move fails here."""

    name = "claimed_in_source"
    acts = False

    def __init__(self, move: Move) -> None:
        self.move = move

    def rollback(self) -> None:
        self.move.give_source_back()


class FinishInTarget(FinishOnDestination):
    """finish_resize in the target cell: the records of the destination, but the task
    stays `resize_finish` until the swap shows the server here (VERIFY_RESIZE then)."""

    def after(self, conn: Connection) -> None:
        self.on_destination(conn)


class Mirrored(Step):
    """A step of the target's part whose progress the source cell's copy -- the one the
    user sees until the swap -- is told before it acts: the task state and the
    migration's status and destination, so that the move looks like any resize and
    external events reach both hosts (server_external_events._hosts)."""

    def __init__(self, move: Move, step: Step) -> None:
        self.move, self.step = move, step
        self.name, self.event, self.acts = step.name, step.event, step.acts

    def event_host(self) -> str | None:
        return self.step.event_host()

    def journal_detail(self) -> str | None:
        return self.step.journal_detail()

    def before(self, conn: Connection) -> None:
        self.step.before(conn)

    def execute(self) -> None:
        self._mirror()
        self.step.execute()

    def after(self, conn: Connection) -> None:
        self.step.after(conn)

    def rollback(self) -> None:
        self.step.rollback()

    def _mirror(self) -> None:
        m = self.move
        assert m.source_db is not None
        with m.ops.db.read() as conn:
            now = instances.get(conn, m.instance.uuid)
            move = migrations.get(conn, m.migration.uuid)
        with m.source_db.write() as conn, contextlib.suppress(NotFound, UnexpectedTaskState):
            instances.lock(conn, now.uuid)  # the lock order: instance, then migrations
            migrations.save(conn, move.uuid, status=move.status, dest_compute=move.dest_compute,
                            dest_node=move.dest_node, dest_host=move.dest_host)
            instances.save(conn, now.uuid, expected_task_state=_MOVING,
                           task_state=now.task_state)


def _target_steps(move: Move) -> list[Step]:
    snapshot = [cross_cell.SnapshotAtSource(move)] if cross_cell.snapshots(move) else []
    acting = [PrepOnDestination(move), *snapshot, ResizeOnSource(move), FinishInTarget(move)]
    move.steps = [ClaimedInSource(move), *(Mirrored(move, step) for step in acting),
                  cross_cell.Swap(move)]
    return move.steps


def _target_move(ops: Ops, instance_uuid: str, args: dict[str, Any]) -> Move:
    """The move as the target cell has it: its copies of the instance and migration."""
    with ops.db.read() as conn:
        inst = instances.get(conn, instance_uuid, read_deleted=True)
        migration = migrations.get(conn, str(args["migration_uuid"]))
    move = Move(ops, inst, dict(args["new_flavor"]), None, migration, cross_cell=True,
                source_db=cross_cell.source_copy(ops, migration))
    move.selections = [dict(choice) for choice in args.get("selections") or ()]
    move.dest = move.selections.pop(0) if move.selections else (
        {"host": migration.dest_compute, "node": migration.dest_node}
        if migration.dest_compute else None)
    return move


def continue_in_target(ops: Ops, instance_uuid: str, journal: Journal) -> None:
    """The target cell's part of a cross-cell move, up to VERIFY_RESIZE here; a failure
    carries the records back to the source cell."""
    op = tasks.operation(ops.db, journal.uuid)
    if op is None:
        return
    try:
        move = _target_move(ops, instance_uuid, op.args)
    except NotFound:
        LOG.info("nothing of %s's move is left in this cell", instance_uuid)
        return
    try:
        run_steps(_target_steps(move), journal, ops.finishing(instance_uuid))
    except StepFailed as failure:
        _failed_in_target(move, failure)


def _failed_in_target(move: Move, failure: StepFailed) -> None:
    """As any failed move, then back to the source cell -- unless a delete reached the
    server there meanwhile: this cell's copy is dropped and the delete has the rest."""
    if move.gone():
        _stopped_by_delete(move)
        cell_copy.purge_server(move.ops.db, move.instance.uuid)
        return
    _after_failure(move, failure)
    cross_cell.carry_back(move.ops, move.migration)


# The task states of a running move: its end state is written only from one of them.
_MOVING = (TASK.RESIZE_PREP, TASK.RESIZE_MIGRATING, TASK.RESIZE_MIGRATED, TASK.RESIZE_FINISH)


def _after_failure(move: Move, failure: StepFailed) -> None:
    """Nova's end states: the guest untouched -> as before; touched -> ERROR.

    A server deleted during its move is not written back: the delete owns it.
    """
    ops, inst = move.ops, move.instance
    step = failure.step.step if isinstance(failure.step, Mirrored) else failure.step
    touched = isinstance(step, (ResizeOnSource, FinishOnDestination)) and not (
        isinstance(failure.cause, RemoteError)
        and failure.cause.exc_type == "InstanceFaultRollback")
    vm_state = states.ERROR if touched else inst.vm_state
    LOG.warning("move of %s failed at %s: %s", inst.uuid, failure.step.name, failure.cause)
    if move.gone():
        _stopped_by_delete(move)
        return
    try:
        with ops.db.write() as conn:
            _migration_failed(conn, move.migration.uuid)
            instances.update(conn, inst.uuid, expected_task_state=_MOVING, vm_state=vm_state,
                             task_state=None, host=inst.host, node=inst.node,
                             flavor=inst.flavor, old_flavor=None, new_flavor=None)
    except (NotFound, UnexpectedTaskState):
        if not move.gone():
            raise
        _stopped_by_delete(move)
        return
    code = 400 if no_valid_host(failure.cause, MaxRetriesExceeded) else 500
    ops.fault(inst.uuid, failure.cause, move.source_host, code)
    ops.finish_action(inst.uuid, "Error")


def _migration_failed(conn: Any, migration_uuid: str) -> None:
    with contextlib.suppress(NotFound):  # never written: the move stopped at its first step
        migrations.update(conn, migration_uuid, status="error")


def _stopped_by_delete(move: Move) -> None:
    """The move of a deleted server ends holding nothing: no allocation, migration in error.

    The rollbacks gave nothing back to the instance and destroyed what they
    made; the delete destroys the guest on the instance's host. Allocations
    are dropped here too, since the delete may have run before the rollbacks.
    """
    ops, uuid = move.ops, move.instance.uuid
    LOG.info("instance %s was deleted during its move; the move stops", uuid)
    ops.placement.delete_allocations(move.migration.uuid)
    ops.placement.delete_allocations(uuid)
    with ops.db.write() as conn:
        _migration_failed(conn, move.migration.uuid)
    ops.finish_action(uuid, "Error")


class InterruptedByRestart(Exception):
    """The fault recorded on an instance whose operation a crash cut off."""


def recover_move(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Finish the bookkeeping of a move a crash cut off, or undo it to the source.

    VERIFY_RESIZE reached: only the action was left to finish. A failure
    already handled: the same. Otherwise the journaled steps are rolled back
    in reverse (each rollback is idempotent and safe if its execute never
    ran), and the instance settles on its source as its guest there says.
    """
    assert op.instance_uuid is not None
    with ops.db.read() as conn:
        inst = instances.get(conn, op.instance_uuid, read_deleted=True)
        migration = _migration_of(conn, op)
    if migration is not None and migration.status == "finished":
        ops.finish_action(inst.uuid)
        return
    if (migration is not None and migration.finished and inst.task_state is None
            and not inst.deleted):
        ops.finish_action(inst.uuid, "Error")
        return
    target = _handed_to(ops, op)
    if target is not None and cross_cell.handed_over(ops, target, op.operation_uuid):
        return  # the move is the target cell's now: its journal recovers it
    if migration is not None:
        move = Move(ops, inst, op.args.get("new_flavor") or inst.new_flavor or inst.flavor,
                    op.args.get("host"), migration)
        if migration.dest_compute:
            move.dest = {"host": migration.dest_compute, "node": migration.dest_node}
        LOG.warning("undoing the move %s of %s cut off by a restart", migration.uuid, inst.uuid)
        steps = _steps(move) + ([cross_cell.HandOver(move, target, op.operation_uuid)]
                                if target is not None else [])
        roll_back(steps, {step.name: op.state(step.name) for step in steps}, journal)
    _settle_undone(ops, inst.uuid, migration)


def _handed_to(ops: Ops, op: Interrupted) -> CellMapping | None:
    """The cell a cut-off move was being handed over to (journaled with the step)."""
    detail = op.detail(cross_cell.HandOver.name)
    if ops.cells is None or not isinstance(detail, dict) or not detail.get("cell"):
        return None
    return ops.cells.by_uuid(str(detail["cell"]))


def recover_cross_cell(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """The target cell's part of a move a crash cut off: VERIFY_RESIZE reached -> the swap
    (again) and the action; else its steps undone, settled on the source as any move
    undone by a restart, and the records carried back to the source cell."""
    assert op.instance_uuid is not None
    try:
        move = _target_move(ops, op.instance_uuid, op.args)
    except NotFound:
        return  # carried back already: nothing is left here
    if move.migration.status == "finished":
        swap = cross_cell.Swap(move)
        swap.execute()
        with ops.db.write() as conn:
            swap.after(conn)
        ops.finish_action(move.instance.uuid)
        return
    if move.gone():
        _forget_deleted(ops, move.instance, move.migration)
        cell_copy.purge_server(ops.db, move.instance.uuid)
        return
    steps = _target_steps(move)
    roll_back(steps, {step.name: op.state(step.name) for step in steps}, journal)
    _settle_undone(ops, move.instance.uuid, move.migration)
    cross_cell.carry_back(ops, move.migration)


def _migration_of(conn: Any, op: Interrupted) -> Migration | None:
    """The migration the move created: journaled with its first step, else its open one."""
    detail = op.detail("create_migration")
    if isinstance(detail, dict) and detail.get("migration_uuid"):
        try:
            return migrations.get(conn, str(detail["migration_uuid"]))
        except NotFound:
            return None  # the crash came before the migration was written
    assert op.instance_uuid is not None
    open_moves = [m for m in migrations.for_instance(conn, op.instance_uuid) if not m.finished]
    return open_moves[0] if open_moves else None


def _settle_undone(ops: Ops, uuid: str, migration: Migration | None) -> None:
    """On the source: ACTIVE or SHUTOFF when its guest is there, ERROR when it is not."""
    with ops.db.read() as conn:
        inst = instances.get(conn, uuid, read_deleted=True)
    source = migration.source_compute if migration is not None else inst.host
    if inst.deleted:
        _forget_deleted(ops, inst, migration)
        return
    power = ops.guest_power(source, uuid)
    vm_state = {states.RUNNING: states.ACTIVE, states.SHUTDOWN: states.STOPPED}.get(
        power, states.ERROR)
    with ops.db.write() as conn:
        if migration is not None:
            migrations.update(conn, migration.uuid, status="error")
        instances.update(conn, uuid, vm_state=vm_state, task_state=None, host=source,
                         node=migration.source_node if migration is not None else inst.node,
                         flavor=inst.old_flavor or inst.flavor, old_flavor=None,
                         new_flavor=None, power_state=power)
    reason = ("the move was interrupted by a restart and undone"
              + ("" if vm_state != states.ERROR else f"; no guest is left on {source}"))
    ops.fault(uuid, InterruptedByRestart(reason), source)
    ops.finish_action(uuid, "Error")


def _forget_deleted(ops: Ops, inst: Instance, migration: Migration | None) -> None:
    """The instance was deleted during its move: nothing of it may stay anywhere."""
    hosts = {inst.host}
    if migration is not None:
        hosts |= {migration.source_compute, migration.dest_compute}
        ops.placement.delete_allocations(migration.uuid)
        with ops.db.write() as conn:
            migrations.update(conn, migration.uuid, status="error")
    for host in sorted(h for h in hosts if h):
        ops.terminate_quietly(host, inst.uuid)
    ops.placement.delete_allocations(inst.uuid)
