"""Evacuate: rebuild the server of a dead host on another one; the source cleans up later.

    API: migration `accepted` (type evacuation), task rebuilding
      ─> claim_destination   schedule, and in one write: the source allocation to the
                             migration + the destination claimed for the instance
      ─> rebuild_instance    dest agent: PCI and VF claim, late group check, migration
                             `pre-migrating`; the ports bound to the destination; guest
                             spawned (powered off for a stopped server)
      ─> migration `done`, instance on the destination, task None
    later, the source agent starts again (agent/evacuation.py): its guest destroyed,
    the migration's allocation deleted, migration `completed`

Who owns what: before the claim the instance holds the source; after it the
migration holds the source and the instance the destination, and so it stays
after `done` -- the dead host's resources are not free until its agent says
its guest is gone, or the server is deleted (Nova's delete frees every
allocation of the instance: conductor/lifecycle.py drops the evacuation's).
If the source is already back when the rebuild ends (its agent restarted
meanwhile), the conductor asks it to clean up at once.

A server with ports asks for their request groups on the destination too
(read again from the Network service); the destination takes each SR-IOV
port's VF from the PF the candidate maps its group to, and the ports are
bound to the destination with that mapping before the guest is rebuilt
there (Nova's `setup_instance_network_on_host` in `_do_rebuild_instance`).
The source's cleanup (agent/evacuation.py) deletes the migration's
allocation, bandwidth included, and frees its VFs, but never touches the
bindings: they point at the destination already.

A claim refused by the destination agent before it acted (PCI, the late
server group check) is retried on the scheduler's alternates. A server whose
ports have resource requests skips a destination whose compute is too old
for them, or every one while the compute RPC is pinned below 5.2
(`upgrade_checks`), for the next alternate; with none left it fails as with
no valid host. Any failure
undoes the completed steps in reverse: the destination guest is destroyed,
the ports are bound to the source again as they were (mapped from the
source allocation, each VF the one its binding named before: the source's
agent is dead and cannot be asked), and one write gives the source back to
the instance and drops the destination claim. The server is then ERROR on
its source, holding its source allocation, and the migration `error`
(nothing was rebuilt: no host, claims refused) or `failed` (the destination
failed), as Nova says.

A crash is recovered forward where it can be (`recover_evacuation`): the
source is dead, and its agent, if it comes back, destroys the guest of an
evacuation under way, so going back would leave a server with no guest. A
rebuild already journaled on the destination the instance holds is run
again there (every agent step is idempotent); otherwise what may exist is
undone (a guest or PCI claim on the journaled destination, the claim given
back) and the evacuation runs again from the scheduler. A crash during the
failure's undo finishes the undo: the server ends ERROR on its source.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances, migrations, services, states
from stowage.compute.conductor import port_homes, ports, upgrade_checks
from stowage.compute.conductor.common import MoveState, Ops, no_valid_host
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

__all__ = ["evacuate_server", "recover_evacuation", "STEPS", "CLAIM_REFUSED"]

LOG = logging.getLogger(__name__)

# The exception type a destination agent raises when it refused the rebuild's
# claim before touching anything (agent/evacuation.py): an alternate may be tried.
CLAIM_REFUSED = "RebuildClaimRefused"
# The task states of an evacuation under way: its end state is written only from one.
_REBUILDING = (TASK.REBUILDING, TASK.REBUILD_SPAWNING)


@dataclass
class Evacuation(MoveState):
    """What the steps of one evacuation share (source, destination, the delete's stop:
    MoveState)."""

    ops: Ops
    instance: Instance
    migration: Migration
    requested_host: str | None
    journal: Journal
    selections: list[dict[str, Any]] = field(default_factory=list)
    dest: dict[str, Any] | None = None
    # The server's ports (read when the destination is claimed, or lazily), and the
    # PCI part of their source bindings, for an undo that binds them back there.
    server_ports: ports.ServerPorts | None = None
    source_pci: dict[str, dict[str, Any]] | None = None

    moving = "evacuation"

    def ports(self) -> ports.ServerPorts:
        if self.server_ports is None:
            self.server_ports = ports.load(self.ops, self.instance.uuid)
        return self.server_ports

    def bind_to_source(self) -> None:
        """The ports back on the (dead) source, as its allocation maps them (held by the
        migration, or by the instance once given back), each VF as it was there."""
        server_ports = self.ports()
        if not server_ports:
            return
        holder = (self.migration.uuid
                  if self.ops.placement.holding(self.migration.uuid).allocations
                  else self.instance.uuid)
        port_homes.bind_back(self.ops, server_ports, self.source_host, holder,
                             self.source_pci or {}, self.gone)


class NoHostLeft(Exception):
    """Every host the scheduler offered refused the rebuild's claim."""


class ClaimDestination(Step):
    """The migration takes the source over, the instance claims the destination, in one write.

    The scheduler ignores the source host, honours a requested host and the
    server group, and keeps the next hosts as unclaimed alternates.
    """

    name = "claim_destination"
    event = "conductor_rebuild_server"

    def __init__(self, evac: Evacuation) -> None:
        self.evac = evac
        self.spec: dict[str, Any] = {}

    def before(self, conn: Connection) -> None:
        e = self.evac
        e.stop_if_deleted(conn)
        with e.ops.api_db.using(conn) as api:
            spec = instances.request_spec(api, e.instance.uuid)
        spec.update(flavor=e.instance.flavor, move=True, ignore_hosts=[e.source_host],
                    requested_destination=({"host": e.requested_host, "node": None}
                                           if e.requested_host else None))
        self.spec = spec

    def execute(self) -> None:
        e = self.evac
        if e.dest is not None:
            return  # recovery: the claim was made before the crash
        requests = ports.requests_of(e.ops, e.ports())
        self.spec["port_requests"] = ports.spec_entries(requests)
        e.source_pci = port_homes.vf_profiles(e.ops, e.ports())
        e.schedule(self.spec, e.ops.placement.holding(e.instance.uuid))
        if self.spec["port_requests"] and not upgrade_checks.dest_takes_ports(e):
            e.give_source_back()  # this step raised: it leaves nothing behind
            raise NoHostLeft(upgrade_checks.exhausted_message(e.instance.uuid))

    def rollback(self) -> None:
        """Give the source back, or drop both claims of a server deleted meanwhile."""
        self.evac.give_source_back()


class RebuildOnDestination(Step):
    """The destination agent claims the host, the ports are bound there, the agent spawns
    the guest; alternates on a refused claim.

    The destination is journaled with the step (again when an alternate takes
    over), so that recovery knows where to run it again, and so are the VFs
    the ports had on the source, for an undo after a restart. A failure
    leaves nothing behind: the destination's claim and guest are dropped and
    the ports bound to the source again before it is raised.
    """

    name = "rebuild_instance"
    event = "compute_rebuild_instance"

    def __init__(self, evac: Evacuation) -> None:
        self.evac = evac

    @property
    def power_on(self) -> bool:
        return self.evac.instance.vm_state != states.STOPPED

    def event_host(self) -> str | None:
        return self.evac.dest_host

    def journal_detail(self) -> str:
        dest = self.evac.dest or {}
        return json.dumps({"host": dest.get("host"), "node": dest.get("node"),
                           **({"source_pci": self.evac.source_pci}
                              if self.evac.source_pci else {})})

    def before(self, conn: Connection) -> None:
        e = self.evac
        e.stop_if_deleted(conn)
        instances.save(conn, e.instance.uuid, expected_task_state=_REBUILDING,
                       task_state=TASK.REBUILD_SPAWNING)

    def execute(self) -> None:
        e = self.evac
        try:
            while True:
                try:
                    self._rebuild_here()
                    return
                except RemoteError as exc:
                    if exc.exc_type != CLAIM_REFUSED:
                        raise
                    LOG.info("%s refused to rebuild %s (%s); trying an alternate",
                             e.dest_host, e.instance.uuid, exc.message)
                    self._next_host(exc)
        except Exception:
            self._undo_quietly()
            raise

    def _rebuild_here(self) -> None:
        """Claim (PCI, VFs of the mapped PFs, the group check), bind, spawn: each idempotent."""
        e = self.evac
        server_ports = e.ports()
        group_map = (ports.mapping(e.ops, server_ports.requests, e.dest, e.instance.uuid)
                     if server_ports else {})
        wanted = ports.vf_ports(server_ports.requests, group_map)
        extra = {"vf_ports": wanted} if wanted else {}
        args = {"instance_uuid": e.instance.uuid, "migration_uuid": e.migration.uuid,
                "flavor": e.instance.flavor, **extra}
        pci = e.ops.call_agent(e.dest_host, "rebuild_claim", **args) or {}
        ports.bind(e.ops, server_ports, e.dest_host, group_map, pci, e.gone)
        e.ops.call_agent(e.dest_host, "rebuild_instance", power_on=self.power_on, **args)

    def _undo_quietly(self) -> None:
        """What this step left on the destination dropped, the ports back on the source;
        a failure here is logged, the step's own failure is what the caller learns."""
        e = self.evac
        if e.dest is None:
            return
        try:
            e.ops.call_agent(e.dest_host, "abort_rebuild_instance",
                             instance_uuid=e.instance.uuid, migration_uuid=e.migration.uuid)
        except Exception:
            LOG.exception("could not undo the rebuild of %s on %s", e.instance.uuid,
                          e.dest_host)
        try:
            e.bind_to_source()
        except Exception:
            LOG.exception("could not bind the ports of %s back to its source", e.instance.uuid)

    def _next_host(self, exc: RemoteError) -> None:
        """Drop the refused claim, claim the next alternate, journal it as the destination."""
        e = self.evac
        events = e.ops.events(e.instance.uuid)
        with e.ops.db.write() as conn:
            events.finish(conn, self.event or "", exc)
        alternate = e.ops.next_alternate(e.instance, e.selections)
        if alternate is None:
            raise NoHostLeft(f"No valid host was found. Every host refused the rebuild of "
                             f"instance {e.instance.uuid}; last: {exc.message}")
        e.dest = alternate
        if (any(r.groups for r in e.ports().requests)
                and not upgrade_checks.dest_takes_ports(e)):
            raise NoHostLeft(upgrade_checks.exhausted_message(e.instance.uuid))
        with e.journal.batch() as batch:
            e.stop_if_deleted(batch.conn)
            batch.record(self.name, "executing", self.journal_detail())
            events.start(batch.conn, self.event or "", e.dest_host)

    def after(self, conn: Connection) -> None:
        e = self.evac
        assert e.dest is not None
        migrations.save(conn, e.migration.uuid, status="done", dest_compute=e.dest["host"],
                        dest_node=e.dest["node"], dest_host=e.dest["host"])
        instances.save(conn, e.instance.uuid, expected_task_state=TASK.REBUILD_SPAWNING,
                       host=e.dest["host"], node=e.dest["node"], task_state=None,
                       vm_state=states.ACTIVE if self.power_on else states.STOPPED,
                       power_state=states.RUNNING if self.power_on else states.SHUTDOWN)

    def rollback(self) -> None:
        e = self.evac
        if e.dest is None:
            return
        e.ops.call_agent(e.dest_host, "abort_rebuild_instance", instance_uuid=e.instance.uuid,
                         migration_uuid=e.migration.uuid)
        e.bind_to_source()


def _steps(evac: Evacuation) -> list[Step]:
    return [ClaimDestination(evac), RebuildOnDestination(evac)]


# The journal steps of an evacuation, in order (crash tests enumerate them).
STEPS = ("claim_destination", "rebuild_instance")


def evacuate_server(ops: Ops, instance_uuid: str, migration_uuid: str, host: str | None,
                    journal: Journal) -> None:
    """Run an evacuation the API accepted; on failure, undo and report."""
    try:
        with ops.db.read() as conn:
            inst = instances.get(conn, instance_uuid)
            migration = migrations.get(conn, migration_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its evacuation started", instance_uuid)
        _forget(ops, instance_uuid, migration_uuid)
        return
    _run(Evacuation(ops, inst, migration, host, journal))


def _run(evac: Evacuation) -> None:
    try:
        run_steps(_steps(evac), evac.journal, evac.ops.finishing(evac.instance.uuid))
    except StepFailed as failure:
        _after_failure(evac, failure.step, failure.cause)
        return
    _clean_source_if_back(evac)


def _after_failure(evac: Evacuation, step: Step, cause: BaseException) -> None:
    """ERROR on the source, holding the source (the rollbacks gave it back), as Nova leaves it.

    The migration is `error` when nothing was rebuilt (Nova's conductor) and
    `failed` when the destination failed (Nova's compute).
    """
    ops, inst = evac.ops, evac.instance
    LOG.warning("evacuation of %s failed at %s: %s", inst.uuid, step.name, cause)
    if evac.gone():
        _stopped_by_delete(evac)
        return
    no_host = no_valid_host(cause, NoHostLeft)
    status = "error" if no_host or isinstance(step, ClaimDestination) else "failed"
    try:
        with ops.db.write() as conn:
            migrations.save(conn, evac.migration.uuid, status=status)
            instances.update(conn, inst.uuid, expected_task_state=_REBUILDING,
                             vm_state=states.ERROR, task_state=None)
    except (NotFound, UnexpectedTaskState):
        if not evac.gone():
            raise
        _stopped_by_delete(evac)
        return
    ops.fault(inst.uuid, cause, evac.source_host, 400 if no_host else 500)
    ops.finish_action(inst.uuid, "Error")


def _stopped_by_delete(evac: Evacuation) -> None:
    """A server deleted during its evacuation keeps nothing: no allocation, migration error."""
    LOG.info("instance %s was deleted during its evacuation; it stops", evac.instance.uuid)
    _forget(evac.ops, evac.instance.uuid, evac.migration.uuid)


def _forget(ops: Ops, instance_uuid: str, migration_uuid: str) -> None:
    ops.placement.delete_allocations(migration_uuid)
    ops.placement.delete_allocations(instance_uuid)
    with ops.db.write() as conn:
        migrations.save(conn, migration_uuid, status="error")
    ops.finish_action(instance_uuid, "Error")


def _clean_source_if_back(evac: Evacuation) -> None:
    """The source's service is up again (its agent restarted during the evacuation, and
    found it under way): ask it for the cleanup it would otherwise do at its next start."""
    ops, source = evac.ops, evac.source_host
    with ops.db.read() as conn:
        service = services.compute_service(conn, source)
    if service is None or not services.is_up(service, ops.settings):
        return
    try:
        ops.call_agent(source, "clean_evacuated", migration_uuid=evac.migration.uuid)
    except MessagingError as exc:
        LOG.warning("%s could not clean up after evacuating %s (its next start will): %s",
                    source, evac.instance.uuid, exc)


def recover_evacuation(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Finish an evacuation a crash cut off: forward, or the undo of a failure already begun.

    A finished one (migration `done`, `error` or `failed`) only has its action
    left to finish.
    """
    assert op.instance_uuid is not None
    migration_uuid = str(op.args["migration_uuid"])
    with ops.db.read() as conn:
        inst = instances.get(conn, op.instance_uuid, read_deleted=True)
        migration = migrations.get(conn, migration_uuid)
    if inst.deleted:
        _forget_deleted(ops, inst, migration)
        return
    if migration.finished:
        ops.finish_action(inst.uuid, None if migration.status in ("done", "completed")
                          else "Error")
        return
    evac = Evacuation(ops, inst, migration, op.args.get("host"), journal)
    steps = {name: op.state(name) for name in STEPS}
    detail = op.detail("rebuild_instance")
    if isinstance(detail, dict) and detail.get("host"):
        evac.dest = {"host": detail["host"], "node": detail.get("node")}
        evac.source_pci = detail.get("source_pci") or {}
    undoing = any(state in ("failed", "rolled_back", "undo_failed") for state in steps.values())
    if undoing:
        LOG.warning("finishing the undo of the evacuation of %s cut off by a restart",
                    inst.uuid)
        roll_back(_steps(evac), steps, journal)
        failed = [step for step in _steps(evac) if steps[step.name] == "failed"]
        _after_failure(evac, failed[0] if failed else RebuildOnDestination(evac),
                       InterruptedByRestart("the evacuation failed and its undo was "
                                            "interrupted by a restart"))
        return
    if evac.dest is None or not _holds_destination(evac):
        # No rebuild journaled where the claim is (a crash while an alternate took
        # over, or before the rebuild): undo what may exist, and schedule again.
        roll_back(_steps(evac), steps, journal)
        evac.dest = None
    LOG.warning("resuming the evacuation of %s cut off by a restart", inst.uuid)
    _run(evac)


def _holds_destination(evac: Evacuation) -> bool:
    """The instance holds its claim in the journaled destination's tree."""
    with evac.ops.db.read() as conn:
        node = services.compute_node_of_host(conn, evac.dest_host)
    held = evac.ops.placement.holding(evac.instance.uuid).allocations
    return node is not None and node.uuid in held


class InterruptedByRestart(Exception):
    """The fault recorded on an instance whose evacuation's undo a crash cut off."""


def _forget_deleted(ops: Ops, inst: Instance, migration: Migration) -> None:
    """The server was deleted during its evacuation: nothing of it may stay anywhere."""
    if migration.dest_compute and migration.dest_compute != inst.host:
        ops.terminate_quietly(migration.dest_compute, inst.uuid)
    _forget(ops, inst.uuid, migration.uuid)
