"""The conductor endpoint: every operation the API casts, the periodic confirm, recovery.

Methods are RPC entry points (JSON keyword arguments, called on the cast
pool); each builds an `Ops` for the request and runs one operation module
under the journal the API opened when it accepted the operation
(`operation_uuid`). The journal gets its `end` row only when the operation
returned; one that raised stays open for the next start.

Several conductors may share the database: each operation is leased to the
one that runs it (`leases.py`). On start (`recover()`, run once the agents are
up so their hypervisors can be asked), and every third of a lease after that
(`take_over_expired()`, from the control plane's periodic loop), a conductor
takes over every operation without `end` whose lease expired -- its
conductor died, or the API accepted it and no conductor ever started it --
and finishes or undoes it with its module; a live peer's operations are never
touched:

    build            proven spawned (guest on its host + claim) -> ACTIVE; else clean, build again
    resize, migrate  VERIFY_RESIZE reached -> finish the action; else roll the journaled
                     steps back and settle on the source: ACTIVE/SHUTOFF if its guest is
                     there (allocation given back), ERROR if not
    confirm, revert  go forward again (idempotent; revert skips a destination already done)
    stop, start      power again while still in the task state; else finish the action
    delete           delete again (idempotent; a server already gone is only finished)
    shelve, shelve_offload   forward: the shelve (or the offload) again from where the
                     task state stands; every step is idempotent
    snapshot         forward while in a snapshot task state (idempotent); else the image is
                     deleted unless the snapshot was done
    unshelve         forward: a guest proven spawned on its claimed host -> ACTIVE; else
                     guest destroyed, claim dropped, unshelved again (the power-on of a
                     still-shelved server: powered on again)
    evacuate         forward: the rebuild again on its journaled destination, else a
                     possible claim given back and scheduled again; a failure
                     whose undo was cut off is undone (ERROR on the source)
    live_migrate     the copy journaled done -> the post steps again (ACTIVE on dest);
                     else roll back to the source: ACTIVE if its guest runs there, else ERROR
    attach_interface undone (the port's claim taken out, unplugged, unbound, its row gone)
    reboot, reboot_hard, pause, unpause, suspend, resume   the action again while the
                     server is still in its task state (idempotent); else finish it
    rebuild          rebuilt again while still in a rebuild task state; else finish it
    detach_interface done again (idempotent)
    power_update     the event again; inside its step, the step again; else finish it

An operation accepted by the API but whose cast a crash lost is recovered the
same way (it has only its `accepted` row). Recovery journals under the
operation's own uuid and writes `end` last, so a crash during recovery leaves
the same work to the next conductor. A run that raised gives its lease up at
once; a recovery that raised keeps it until it expires, then is tried again.

Last, no instance may stay in a task state that no operation owns (a
multi-create cut between its batches, rows of an older version): a building
one is built, a deleting one deleted, one in VERIFY_RESIZE loses its task,
and any other settles on what its hypervisor says (`_unstick`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from stowage.compute import actions, cell_copy, instances, migrations, states
from stowage.compute.cells import Cells
from stowage.compute.conductor import (
    build,
    carry,
    cross_cell,
    evacuate,
    guest_actions,
    interfaces,
    lifecycle,
    live_migrate,
    migrate,
    power_update,
    rebuild,
    resize_end,
    shelve,
    snapshot,
    tasks,
    unshelve,
)
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.leases import LeaseLost, Leases
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.compute.rpc import AgentAPI, ConductorAPI, SchedulerAPI
from stowage.config import ComputeSettings, Settings
from stowage.context import new_request_id
from stowage.db import Database
from stowage.db.engine import sides
from stowage.db.retry import retryable
from stowage.errors import NotFound
from stowage.messaging import Transport
from stowage.metrics import process as metrics
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient
from stowage.timeutil import utcnow

__all__ = ["Conductor", "RECOVERY"]

LOG = logging.getLogger(__name__)

Recover = Callable[[Ops, Interrupted, Journal], None]
# operation name (as journaled) -> how a crash of it is finished or undone
RECOVERY: dict[str, Recover] = {
    "build": build.recover_build,
    "resize": migrate.recover_move,
    "migrate": migrate.recover_move,
    cross_cell.OPERATION: migrate.recover_cross_cell,
    "confirm_resize": resize_end.recover_confirm,
    "revert_resize": resize_end.recover_revert,
    "stop": lifecycle.recover_power,
    "start": lifecycle.recover_power,
    "delete": lifecycle.recover_delete,
    "shelve": shelve.recover_shelve,
    "shelve_offload": shelve.recover_shelve,
    "snapshot": snapshot.recover_snapshot,
    "unshelve": unshelve.recover_unshelve,
    "unshelve_power_on": unshelve.recover_unshelve_power_on,
    "evacuate": evacuate.recover_evacuation,
    "live_migrate": live_migrate.recover_live_migration,
    "attach_interface": interfaces.recover_attach,
    "detach_interface": interfaces.recover_detach,
    **{name: guest_actions.recover for name in guest_actions.ACTIONS},
    "rebuild": rebuild.recover_rebuild,
    power_update.OPERATION: power_update.recover,
}


def _cell_of(cells: Cells) -> Callable[[str], str]:
    """instance uuid -> the uuid of the cell its mapping names (what a move keeps to)."""
    def cell_of(instance_uuid: str) -> str:
        only = cells.only_compute_cell()
        return (only or cells.of_instance(instance_uuid)).uuid
    return cell_of


class Conductor:
    def __init__(self, settings: ComputeSettings, db: Database, placement: PlacementClient,
                 transport: Transport, network: NetworkClient | None = None, *,
                 cell_db: Database | None = None, cells: Cells | None = None,
                 image_settings: Settings | None = None) -> None:
        self.settings = settings
        self.image_settings = image_settings  # the image store of snapshots (None: none)
        # The API database (request specs, flavors, groups, quotas, aggregates) and the
        # cell's (one conductor per cell database: runtime.CellRouter routes the casts).
        self.api_db, self.db = sides(db, cell_db)
        self.cells = cells
        self.placement = placement
        self.network = network
        self.agents = AgentAPI(transport)
        self.scheduler = SchedulerAPI(transport, None if cells is None else _cell_of(cells))
        self.api = ConductorAPI(transport)
        # This conductor's leases on the operations it runs (owner: host:pid:random).
        self.leases = Leases(self.db, lambda: self.settings.conductor_lease_seconds)

    def _ops(self, request_id: str) -> Ops:
        return Ops(self.settings, self.db, self.api_db, self.placement, self.agents,
                   self.scheduler,
                   request_id, tasks.crash_hook(self.settings.crash_at), self.network,
                   self.leases, self.cells, self.api, self.image_settings)

    def _run(self, operation: str, instance_uuid: str, request_id: str,
             operation_uuid: str | None, work: Callable[[Ops, Journal], None],
             claim_first: bool = False) -> None:
        """Run one accepted operation under its journal; `end` only when it returned.

        Its first journal write claims the lease; when another conductor has it
        (took it over, or a cast came twice) the run stops there, having done
        nothing. An operation that acts before it journals anything (delete,
        detach) passes `claim_first` and pays a transaction for the claim. A run
        that raised gives the lease up for another to take over; one whose
        transaction the database chose as a deadlock victim is recovered here at
        once (`_resume`).
        """
        ops = self._ops(request_id)
        run = metrics.operation_started(operation)
        # A fresh operation: the API wrote its `accepted` row, no other.
        journal = ops.journal(operation, instance_uuid, operation_uuid,
                              existing=(tasks.ACCEPTED,) if operation_uuid else ())
        try:
            journal.reached(tasks.ACCEPTED, "done")  # a crash here: a cast lost after the 202
            if claim_first:
                journal.claim()
            work(ops, journal)
            journal.close()
            metrics.operation_finished(run)
        except LeaseLost as lost:
            LOG.warning("%s of %s stopped: %s", operation, instance_uuid, lost)
            metrics.operation_finished(run, outcome="lease_lost")
            self.leases.drop(journal.uuid)
        except BaseException as exc:
            metrics.operation_finished(run, exc)
            if not journal.claimed or journal.closed:
                raise
            if retryable(exc):
                self._resume(journal.uuid, exc)
                return
            self._give_up(journal.uuid)
            raise

    def _resume(self, operation_uuid: str, exc: BaseException) -> None:
        """After a deadlock: finish or undo the operation with its recovery code now.

        The victim's transaction was rolled back whole, which is what a crash
        right before it would have left, and the lease is still ours; waiting
        for it to expire would leave the server in its task state for a third
        of a lease (a delete answered 202 and not done).
        """
        LOG.warning("operation %s lost a deadlock (%s); recovering it now", operation_uuid,
                    getattr(exc, "orig", exc))
        op = tasks.operation(self.db, operation_uuid)
        if op is None:
            self.leases.drop(operation_uuid)  # its `end` committed before the victim
            return
        self._recover(op)

    def _give_up(self, operation_uuid: str) -> None:
        try:
            self.leases.expire(operation_uuid)
        except Exception:
            LOG.exception("could not give up the lease of %s; it expires by itself",
                          operation_uuid)

    def start(self) -> None:
        """Recover what a crash cut off (the control plane calls this once agents are up)."""
        self.recover()

    # --- RPC entry points -----------------------------------------------------
    def build_instances(self, instance_uuids: list[str], request_id: str,
                        operation_uuid: str | None = None,
                        selections: list[dict[str, Any]] | None = None) -> None:
        self._run("build", instance_uuids[0], request_id, operation_uuid,
                  lambda ops, j: build.build_instances(ops, instance_uuids, j, selections))

    def migrate_server(self, instance_uuid: str, request_id: str,
                       new_flavor: dict[str, Any] | None, host: str | None,
                       operation_uuid: str | None = None, cross_cell: bool = False) -> None:
        self._run("resize" if new_flavor else "migrate", instance_uuid, request_id,
                  operation_uuid,
                  lambda ops, j: migrate.migrate_server(ops, instance_uuid, new_flavor, host, j,
                                                        cross_cell))

    def cross_cell_resize(self, instance_uuid: str, request_id: str,
                          operation_uuid: str) -> None:
        """The target cell's part of a cross-cell move (accepted by the source's hand-over)."""
        self._run(cross_cell.OPERATION, instance_uuid, request_id, operation_uuid,
                  lambda ops, j: migrate.continue_in_target(ops, instance_uuid, j))

    def confirm_resize(self, instance_uuid: str, migration_uuid: str, request_id: str,
                       operation_uuid: str | None = None) -> None:
        self._run("confirm_resize", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: resize_end.confirm_resize(ops, migration_uuid, j))

    def revert_resize(self, instance_uuid: str, migration_uuid: str, request_id: str,
                      operation_uuid: str | None = None) -> None:
        self._run("revert_resize", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: resize_end.revert_resize(ops, migration_uuid, j))

    def power(self, instance_uuid: str, request_id: str, on: bool,
              operation_uuid: str | None = None) -> None:
        self._run("start" if on else "stop", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: lifecycle.power(ops, instance_uuid, on, j))

    def guest_action(self, instance_uuid: str, request_id: str, action: str,
                     operation_uuid: str | None = None,
                     args: dict[str, Any] | None = None) -> None:
        """reboot, reboot_hard, pause, unpause, suspend, resume, rescue or unrescue
        (guest_actions.py); `args`: what the API journaled (a rescue's image)."""
        self._run(action, instance_uuid, request_id, operation_uuid,
                  lambda ops, j: guest_actions.run(ops, instance_uuid, action, j, args))

    def rebuild_server(self, instance_uuid: str, request_id: str, args: dict[str, Any],
                       operation_uuid: str | None = None) -> None:
        self._run("rebuild", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: rebuild.rebuild_server(ops, instance_uuid, args, j))

    def evacuate_server(self, instance_uuid: str, migration_uuid: str, request_id: str,
                        host: str | None, operation_uuid: str | None = None) -> None:
        self._run("evacuate", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: evacuate.evacuate_server(ops, instance_uuid, migration_uuid,
                                                          host, j))

    def shelve_server(self, instance_uuid: str, request_id: str, image_id: str | None,
                      operation_uuid: str | None = None) -> None:
        self._run("shelve", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: shelve.shelve_server(ops, instance_uuid, image_id, j))

    def snapshot_server(self, instance_uuid: str, request_id: str, image_id: str,
                        operation_uuid: str | None = None,
                        backup: dict[str, Any] | None = None) -> None:
        self._run("snapshot", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: snapshot.snapshot_server(ops, instance_uuid, image_id, j,
                                                          backup))

    def shelve_offload(self, instance_uuid: str, request_id: str,
                       operation_uuid: str | None = None) -> None:
        self._run("shelve_offload", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: shelve.offload_server(ops, instance_uuid, j))

    def unshelve_server(self, instance_uuid: str, request_id: str, host: str | None,
                        operation_uuid: str | None = None) -> None:
        # The API journaled the path it accepted: in place while still shelved.
        with self.db.read() as conn:
            try:
                in_place = instances.get(conn, instance_uuid).vm_state == states.SHELVED
            except NotFound:
                in_place = False
        name = "unshelve_power_on" if in_place else "unshelve"
        self._run(name, instance_uuid, request_id, operation_uuid,
                  lambda ops, j: unshelve.unshelve_server(ops, instance_uuid, host, j))

    def live_migrate_instance(self, instance_uuid: str, migration_uuid: str, request_id: str,
                              host: str | None, force: bool, block_migration: bool | None,
                              operation_uuid: str | None = None) -> None:
        self._run("live_migrate", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: live_migrate.live_migrate_instance(
                      ops, instance_uuid, migration_uuid, host, force, block_migration, j))

    def check_attach(self, instance_uuid: str, port_id: str | None, network_id: str | None,
                     request_id: str) -> None:
        """Called by the API before it records an attach (read only)."""
        interfaces.check_attach(self._ops(request_id), instance_uuid, port_id, network_id)

    def attach_interface(self, instance_uuid: str, port_row: int, request_id: str,
                         operation_uuid: str | None = None) -> str:
        """Called, not cast: the API answers with the attached port (its id)."""
        attached: list[str] = []
        self._run("attach_interface", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: attached.append(
                      interfaces.attach_interface(ops, instance_uuid, port_row, j)))
        if not attached:
            raise RuntimeError(f"the attach to {instance_uuid} was taken over by another "
                               "conductor")
        return attached[0]

    def detach_interface(self, instance_uuid: str, port_id: str, request_id: str,
                         operation_uuid: str | None = None) -> None:
        self._run("detach_interface", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: interfaces.detach_interface(ops, instance_uuid, port_id, j),
                  claim_first=True)

    def power_update(self, instance_uuid: str, request_id: str, tag: str,
                     operation_uuid: str | None = None) -> None:
        """The power-update external event (power_update.py)."""
        self._run(power_update.OPERATION, instance_uuid, request_id, operation_uuid,
                  lambda ops, j: power_update.power_update(ops, instance_uuid, tag, j))

    def delete_instance(self, instance_uuid: str, request_id: str,
                        operation_uuid: str | None = None) -> None:
        self._run("delete", instance_uuid, request_id, operation_uuid,
                  lambda ops, j: lifecycle.delete_instance(ops, instance_uuid, j),
                  claim_first=True)

    # --- periodic -------------------------------------------------------------
    def confirm_expired_resizes(self) -> None:
        """Nova's `resize_confirm_window`: confirm resizes left in VERIFY_RESIZE too long."""
        window = self.settings.resize_confirm_window
        if window <= 0:
            return
        cutoff = utcnow() - datetime.timedelta(seconds=window)
        with self.db.read() as conn:
            due = [m for m in migrations.in_progress(conn)
                   if m.status == "finished" and (m.updated_at or m.created_at or cutoff) < cutoff]
        for migration in due:
            request_id = new_request_id()
            try:
                with self.db.write() as conn:
                    inst = instances.update(
                        conn, migration.instance_uuid, expected_vm_state=states.RESIZED,
                        expected_task_state=None, task_state=states.TASK.RESIZE_CONFIRMING)
                    actions.start_action(conn, inst.uuid, "confirmResize", request_id,
                                         inst.user_id, inst.project_id)
                    operation = tasks.accept(conn, "confirm_resize", inst.uuid, request_id,
                                             migration_uuid=migration.uuid)
            except Exception:  # noqa: BLE001 - someone else acts on it right now
                continue
            # Through the cast pool like an API confirm, so it is drained and journaled alike.
            self.api.confirm_resize(migration.instance_uuid, migration.uuid, request_id,
                                    operation)

    def offload_shelved(self) -> None:
        """Nova's `shelved_offload_time`: offload servers shelved longer than that."""
        shelve.offload_expired(self.settings, self.db, self.api)

    def reclaim_soft_deleted(self) -> None:
        """Nova's `_reclaim_queued_deletes`: delete servers soft deleted longer than
        `reclaim_instance_interval` (their allocation goes with them)."""
        interval = self.settings.reclaim_instance_interval
        if interval <= 0:
            return
        cutoff = utcnow() - datetime.timedelta(seconds=interval)
        with self.db.read() as conn:
            due = [i for i in instances.list_instances(conn, {"vm_state": states.SOFT_DELETED})
                   if i.task_state is None and (i.deleted_at or cutoff) < cutoff]
        for inst in due:
            request_id = new_request_id()
            try:
                with self.db.write() as conn:
                    instances.save(conn, inst.uuid, expected_vm_state=states.SOFT_DELETED,
                                   expected_task_state=None, task_state=states.TASK.DELETING)
                    operation = tasks.accept(conn, "delete", inst.uuid, request_id)
            except (NotFound, instances.UnexpectedTaskState):
                continue  # restored, force-deleted or deleted right now
            self.api.delete_instance(inst.uuid, request_id, operation)

    # --- crash recovery and take-over -------------------------------------------
    def recover(self) -> None:
        """On start: take over what dead conductors left (never a live one's), then
        settle instances no operation owns."""
        self._adopt_headless()
        self.take_over_expired()
        self._unstick()

    def take_over_expired(self) -> None:
        """Finish or undo each operation whose lease expired, oldest first; for the
        periodic loop too (every third of a lease). Only one conductor wins each."""
        for expired in self.leases.expired():
            if not self.leases.take(expired):
                continue  # another conductor was quicker, or the owner came back
            op = tasks.operation(self.db, expired.operation_uuid)
            if op is None:
                self.leases.drop(expired.operation_uuid)  # it ended meanwhile
                continue
            self._recover(op)

    def _adopt_headless(self) -> None:
        """Open operations without an `accepted` row (journals written with no lease:
        tools, tests; migration 0019 gave older ones a head) get one of ours.

        Unlike `take()` this is not race-safe between conductors starting at the
        same instant: no such journal is written since 0019.
        """
        for op in tasks.interrupted(self.db):
            if tasks.ACCEPTED in op.steps:
                continue
            with self.db.write() as conn:
                self.leases.claim_in(conn, op.operation_uuid,
                                     (op.operation, op.instance_uuid), ending=False)
            self.leases.committed(op.operation_uuid, ending=False)
            self._recover(op)

    def _recover(self, op: Interrupted) -> None:
        """Finish or undo one operation whose lease this conductor just took."""
        recover = RECOVERY.get(op.operation)
        ops = self._ops(op.request_id or new_request_id())
        journal = ops.journal(op.operation, op.instance_uuid, op.operation_uuid,
                              existing=op.steps, claimed=True)
        LOG.warning("recovering %s of %s cut off at %s", op.operation, op.instance_uuid,
                    list(op.steps.items())[-1][0])
        try:
            if recover is not None and op.instance_uuid is not None:
                recover(ops, op, journal)
        except NotFound as exc:
            LOG.info("nothing left to recover of %s %s: %s", op.operation,
                     op.instance_uuid, exc)
        except LeaseLost as lost:
            LOG.warning("recovery of %s of %s stopped: %s", op.operation, op.instance_uuid,
                        lost)
            self.leases.drop(op.operation_uuid)
            return
        except Exception:
            LOG.exception("could not recover %s of %s; tried again once its lease expires",
                          op.operation, op.instance_uuid)
            self.leases.drop(op.operation_uuid)
            return
        try:
            journal.close()
            metrics.operation_recovered(op.operation)
        except LeaseLost as lost:
            LOG.warning("recovery of %s of %s not ended: %s", op.operation, op.instance_uuid,
                        lost)
            self.leases.drop(op.operation_uuid)

    def _unstick(self) -> None:
        """Settle instances left in a task state with no open operation (see the docstring)."""
        carry.sweep(self._ops(new_request_id()), self.settings.conductor_lease_seconds)
        owned = {u for op in tasks.interrupted(self.db)
                 for u in [op.instance_uuid, *op.args.get("instance_uuids", [])]}
        with self.db.read() as conn:
            # A hidden copy is another cell's server until its carry ends (carry.py).
            owned |= cell_copy.hidden_uuids(conn)
            stuck = [i for i in instances.list_instances(conn)
                     if i.task_state is not None and i.uuid not in owned]
            moving = {m.instance_uuid for m in migrations.in_progress(conn)}
        for inst in stuck:
            ops = self._ops(new_request_id())
            LOG.warning("instance %s was left %s/%s by no operation; settling it", inst.uuid,
                        inst.vm_state, inst.task_state)
            try:
                self._settle_stuck(ops, inst, inst.uuid in moving)
            except Exception:
                LOG.exception("could not settle instance %s", inst.uuid)

    @staticmethod
    def _settle_stuck(ops: Ops, inst: instances.Instance, moving: bool) -> None:
        if inst.vm_state == states.BUILDING or inst.task_state == states.TASK.DELETING:
            name = "build" if inst.vm_state == states.BUILDING else "delete"
            journal = ops.journal(name, inst.uuid)
            op = Interrupted(journal.uuid, name, inst.uuid, args={"instance_uuids": [inst.uuid]})
            try:
                RECOVERY[name](ops, op, journal)
                journal.close()
            finally:
                if ops.leases is not None and not journal.closed:
                    ops.leases.drop(journal.uuid)  # not renewed: it expires, is taken over
        elif inst.vm_state == states.RESIZED or not moving:
            power = ops.guest_power(inst.host, inst.uuid)
            vm_state = inst.vm_state if inst.vm_state == states.RESIZED else {
                states.RUNNING: states.ACTIVE, states.SHUTDOWN: states.STOPPED,
                states.PAUSED_POWER: states.PAUSED,
                states.SUSPENDED_POWER: states.SUSPENDED}.get(power, states.ERROR)
            ops.update(inst.uuid, task_state=None, vm_state=vm_state, power_state=power)
        else:
            LOG.error("instance %s is in a move no journal knows; left for the operator "
                      "(os-resetState)", inst.uuid)
