"""The steps of a live migration, each with what it undoes (the flow is in live_migrate.py).

Before the copy (undone in reverse on failure)::

    claim_destination   migration queued -> preparing; one POST /allocations: the
                        migration takes the source, the instance claims the destination
                        (with the ports' request groups)
    check_destination   hypervisors compatible, dest (claims the SR-IOV ports' VFs) and
                        source pre-checks, then an INACTIVE binding of each port on the
                        dest; on failure the bindings, VFs and claim are dropped and the
                        next alternate claimed (reschedule)
    pre_live_migration  dest: a paused guest waits for the memory
    live_migration      migration preparing -> running; source: the copy, polled

After the copy (only forward: the guest runs on the destination)::

    post_live_migration_at_destination   dest bindings activated (source ones deleted);
                                         dest: the guest runs; instance host = dest
    post_live_migration                  source: what the copy left is dropped
    drop_source_allocation               the migration's allocation deleted; completed
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import instances, migrations, services, states, upgrade
from stowage.compute import tables as t
from stowage.compute.conductor import live_migrate_ports, ports
from stowage.compute.conductor.common import DeletedDuringMove, MoveState, Ops, short_reason
from stowage.compute.conductor.tasks import Step
from stowage.compute.instances import Instance
from stowage.compute.migrations import Migration
from stowage.compute.scheduler.request import SchedulingRequest
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError
from stowage.placement.client import Holding
from stowage.timeutil import utcnow

__all__ = ["LiveMove", "ClaimDestination", "CheckDestination", "PreLiveMigration",
           "LiveMigration", "PostAtDestination", "PostOnSource", "DropSourceAllocation",
           "LiveMigrationAborted", "PreCheckFailed", "NoValidHost", "MaxRetriesExceeded",
           "GuestNotRestored", "LiveMigrationFailed", "POLL_SECONDS"]

LOG = logging.getLogger(__name__)
POLL_SECONDS = 0.05  # between two polls of a running copy
PROGRESS_SECONDS = 0.5  # between two writes of its progress on the migration


class LiveMigrationAborted(Exception):
    """DELETE /servers/{id}/migrations/{id}: the migration ends `cancelled`."""


class PreCheckFailed(Exception):
    """A destination that cannot take the guest (Nova's MigrationPreCheckError family)."""


class NoValidHost(Exception):
    pass


class MaxRetriesExceeded(NoValidHost):
    pass


class LiveMigrationFailed(Exception):
    """The copy stopped on the source before the guest reached the destination."""


class GuestNotRestored(Exception):
    """The copy failed and the source could not run the guest again: the server is ERROR."""


@dataclass
class LiveMove(MoveState):
    """What the steps of one live migration share (source, destination, the delete's stop:
    MoveState)."""

    ops: Ops
    instance: Instance
    migration: Migration
    requested_host: str | None
    force: bool
    block_migration: bool | None
    selections: list[dict[str, Any]] = field(default_factory=list)
    dest: dict[str, Any] | None = None
    dest_check: dict[str, Any] = field(default_factory=dict)
    retries: int = 0
    # The server's ports (read when the destination is claimed, or lazily by an undo).
    server_ports: ports.ServerPorts | None = None

    moving = "live migration"

    def ports(self) -> ports.ServerPorts:
        if self.server_ports is None:
            self.server_ports = ports.load(self.ops, self.instance.uuid)
        return self.server_ports

    def advance(self, conn: Connection, before: str, after: str) -> None:
        """Move the migration from status `before` to `after`, unless the API cancelled it
        (abort of a queued or preparing migration, 2.65) or a delete ended it."""
        m = t.migrations
        # UPDATE migrations SET status = :after, updated_at = :now
        #  WHERE uuid = :uuid AND status = :before
        done = conn.execute(sa.update(m).where(m.c.uuid == self.migration.uuid,
                                               m.c.status == before)
                            .values(status=after, updated_at=utcnow())).rowcount
        if done:
            return
        self.stop_if_deleted(conn)
        status = migrations.get(conn, self.migration.uuid).status
        if status == "cancelled":
            raise LiveMigrationAborted(f"Live migration {self.migration.id} of instance "
                                       f"{self.instance.uuid} was aborted.")
        raise DeletedDuringMove(f"Migration {self.migration.uuid} is {status}, not {before}.")

    def record_dest(self, conn: Connection) -> None:
        assert self.dest is not None
        migrations.save(conn, self.migration.uuid, dest_compute=self.dest["host"],
                        dest_node=self.dest["node"], dest_host=self.dest["host"])


class ClaimDestination(Step):
    """The migration takes the instance's source over, the instance claims the destination.

    The scheduler picks the destination (the requested one, checked, from
    2.68 or without `force`) and claims it in the same `POST /allocations`
    that hands the source to the migration; the next hosts are kept as
    unclaimed alternates. A forced host (2.30-2.67) is not scheduled, but
    still claimed in that one write, from its own allocation candidates.
    """

    name = "claim_destination"
    event = "conductor_live_migrate_instance"

    def __init__(self, move: LiveMove) -> None:
        self.move = move
        self.spec: dict[str, Any] = {}

    def before(self, conn: Connection) -> None:
        m = self.move
        m.stop_if_deleted(conn)
        m.advance(conn, "queued", "preparing")
        _check_up(m.ops, conn, m.source_host)
        with m.ops.api_db.using(conn) as api:
            spec = instances.request_spec(api, m.instance.uuid)
        spec.update(flavor=m.instance.flavor, move=True, ignore_hosts=[m.source_host],
                    requested_destination=({"host": m.requested_host, "node": None}
                                           if m.requested_host else None))
        self.spec = spec

    def execute(self) -> None:
        m = self.move
        self.spec["port_requests"] = ports.spec_entries(ports.requests_of(m.ops, m.ports()))
        held = m.ops.placement.holding(m.instance.uuid)
        if m.force and m.requested_host:
            m.dest = _forced_claim(m, self.spec, held)
            return
        m.schedule(self.spec, held)

    def after(self, conn: Connection) -> None:
        self.move.record_dest(conn)

    def rollback(self) -> None:
        """Give the source back, or drop both claims of a server deleted meanwhile."""
        self.move.give_source_back()


def _check_up(ops: Ops, conn: Connection, host: str) -> None:
    """Nova's `_check_host_is_up`: the compute service of `host` answers heartbeats."""
    try:
        service = services.service_by_host(conn, host, services.COMPUTE)
    except NotFound:
        service = None
    if service is None or not services.is_up(service, ops.settings):
        raise PreCheckFailed(f"Compute service of {host} is unavailable at this time.")


def _forced_claim(m: LiveMove, spec: dict[str, Any], held: Holding) -> dict[str, Any]:
    """The forced host's first allocation candidate, claimed as the scheduler claims a move."""
    host = m.requested_host
    assert host is not None
    with m.ops.db.read() as conn:
        node = services.compute_node_of_host(conn, host)
        if node is None:
            raise PreCheckFailed(f"Compute host {host} could not be found.")
        _check_up(m.ops, conn, host)
    req = SchedulingRequest.from_spec({**spec, "requested_destination": None},
                                      [m.instance.uuid])
    # Not candidate_query(): a forced host is taken even when disabled, as Nova's force does.
    params = req.placement.query()
    params.extend((f"in_tree{suffix}", node.uuid) for suffix in sorted(req.placement.groups))
    found = m.ops.placement.allocation_candidates([*params, ("limit", "1")])
    if not found.get("allocation_requests"):
        raise NoValidHost(f"No valid host was found. Unable to move instance "
                          f"{m.instance.uuid} to host {host}. There is not enough capacity "
                          "on the host for the instance.")
    chosen = found["allocation_requests"][0]
    allocations = {rp: dict(a["resources"]) for rp, a in chosen["allocations"].items()}
    inst = m.instance
    m.ops.placement.write_many({
        m.migration.uuid: Holding(held.allocations, None, inst.project_id, inst.user_id,
                                  "MIGRATION"),
        inst.uuid: Holding(allocations, held.generation, inst.project_id, inst.user_id,
                           "INSTANCE")})
    return {"host": host, "node": node.hypervisor_hostname,
            "allocation_request": {"mappings": chosen.get("mappings") or {}}}


class CheckDestination(Step):
    """Hypervisors compatible, the destination's and the source's pre-checks, then the
    ports' INACTIVE bindings on the destination.

    The destination's check claims the SR-IOV ports' VFs from the PFs the
    destination mapping names; each port then gets an inactive binding there
    with that mapping and VF (`live_migrate_ports.prepare`), the source binding
    staying active. A destination that fails any of it loses its bindings, its
    VFs and its claim, and the next alternate is claimed and checked (each host
    tried has its own events), up to `[compute] migrate_max_retries`; a
    requested host has no alternates. The rollback drops the bindings and VFs
    of the host last tried.
    """

    name = "check_destination"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def before(self, conn: Connection) -> None:
        self.move.stop_if_deleted(conn)

    def execute(self) -> None:
        """Check hosts until one takes the guest; a step that fails leaves nothing behind,
        so the bindings and VFs of the host last tried are dropped before it raises."""
        try:
            self._check_until_one_takes()
        except Exception:
            self._discard_quietly()
            raise

    def _check_until_one_takes(self) -> None:
        m = self.move
        while True:
            try:
                self._attempt()
                return
            except (MessagingError, PreCheckFailed) as exc:
                LOG.info("live migration of %s to %s refused: %s", m.instance.uuid,
                         m.dest_host, exc)
                if m.gone():
                    raise m.deleted_error() from exc
                self._discard_quietly()
                self._next_alternate(exc)
                with m.ops.db.write() as conn:  # an undo after a crash finds the host tried
                    m.record_dest(conn)

    def _attempt(self) -> None:
        m = self.move
        uuid = m.instance.uuid
        vfs = live_migrate_ports.vf_ports(m.ops, m.ports(), m.dest, uuid)
        with m.ops.event(uuid, "compute_check_can_live_migrate_destination", m.dest_host):
            _check_hypervisors(m)
            _check_port_upgrade(m)
            check = m.ops.call_agent(
                m.dest_host, "check_can_live_migrate_destination", instance_uuid=uuid,
                block_migration=m.block_migration,
                **({"migration_uuid": m.migration.uuid, "vf_ports": vfs} if vfs else {}))
        with m.ops.event(uuid, "compute_check_can_live_migrate_source", m.source_host):
            m.ops.call_agent(m.source_host, "check_can_live_migrate_source",
                             instance_uuid=uuid, dest_check=check)
        m.dest_check = dict(check)
        try:
            live_migrate_ports.prepare(m.ops, m.ports(), m.dest_host, m.dest, uuid,
                                       check.get("port_pci") or {})
        except live_migrate_ports.BindingRefused as exc:
            raise PreCheckFailed(str(exc)) from exc
        if m.gone():  # the delete let the ports go meanwhile: nothing of ours may stay
            raise m.deleted_error()

    def _discard_quietly(self) -> None:
        try:
            self.rollback()
        except Exception:
            LOG.exception("could not drop the destination bindings of %s on %s",
                          self.move.instance.uuid, self.move.dest_host)

    def rollback(self) -> None:
        """The ports' inactive bindings deleted, the VFs of the host tried released; the
        source bindings were never touched."""
        m = self.move
        live_migrate_ports.discard(m.ops, m.ports(), m.dest_host if m.dest else None,
                                   m.instance.uuid, m.migration.uuid)

    def _next_alternate(self, exc: Exception) -> None:
        """Drop the refused claim and claim the next alternate; raise when none is left."""
        m = self.move
        reason = _reason(exc)
        if m.requested_host:
            raise PreCheckFailed(f"Migration pre-check error: {reason}") from exc
        limit = m.ops.settings.migrate_max_retries
        if 0 <= limit <= m.retries:
            raise MaxRetriesExceeded(
                f"Exceeded max scheduling retries {limit} for instance {m.instance.uuid} "
                f"during live migration. Last error: {reason}") from exc
        alternate = m.ops.next_alternate(m.instance, m.selections)
        if alternate is not None:
            m.dest, m.retries = alternate, m.retries + 1
            return
        raise NoValidHost(f"No valid host was found. No host left to live migrate instance "
                          f"{m.instance.uuid} to. Last error: {reason}") from exc

    def after(self, conn: Connection) -> None:
        self.move.record_dest(conn)


def _reason(exc: Exception) -> str:
    return short_reason(exc) if isinstance(exc, MessagingError) else str(exc)


def _check_port_upgrade(m: LiveMove) -> None:
    """A server whose ports have resource requests moves only between computes that can
    carry them (service version `upgrade.QOS_MOVE_HOST`, compute RPC not pinned below
    `upgrade.QOS_MOVE_RPC`): a failed pre-check, so the next alternate is tried."""
    if not any(r.request and r.request.get("format") for r in m.ports().rows):
        return
    setting = m.ops.settings.upgrade_levels_compute
    with m.ops.db.read() as conn:
        old = [h for h in (m.source_host, m.dest_host)
               if not upgrade.host_takes_qos_move(conn, h, setting)]
    if old:
        raise PreCheckFailed(
            "Cannot live migrate a server with ports having resource requests: the compute "
            f"service of {old[0]} is too old, or the compute RPC is pinned below 5.2.")


def _check_hypervisors(m: LiveMove) -> None:
    """Same hypervisor type, destination version not older (Nova's
    `_check_compatible_with_source_hypervisor`); the destination service up."""
    with m.ops.db.read() as conn:
        source = services.compute_node_of_host(conn, m.source_host)
        dest = services.compute_node_of_host(conn, m.dest_host)
        _check_up(m.ops, conn, m.dest_host)
    if source is None or dest is None:
        raise PreCheckFailed(f"Compute host {m.dest_host if dest is None else m.source_host} "
                             "could not be found.")
    if source.hypervisor_type != dest.hypervisor_type:
        raise PreCheckFailed("The supplied hypervisor type of is invalid.")
    if dest.hypervisor_version < source.hypervisor_version:
        raise PreCheckFailed("The instance requires a newer hypervisor version than has "
                             "been provided.")


class PreLiveMigration(Step):
    """The destination prepares a paused guest to receive the memory."""

    name = "pre_live_migration"
    event = "compute_pre_live_migration"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.dest_host

    def before(self, conn: Connection) -> None:
        self.move.stop_if_deleted(conn)

    def execute(self) -> None:
        m = self.move
        m.ops.call_agent(m.dest_host, "pre_live_migration", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)

    def rollback(self) -> None:
        m = self.move
        if m.dest is None:
            return  # recovery: the crash came before a destination was recorded
        m.ops.call_agent(m.dest_host, "rollback_live_migration_at_destination",
                         instance_uuid=m.instance.uuid, migration_uuid=m.migration.uuid)


class LiveMigration(Step):
    """The source copies the guest to the destination while it runs (status `running`).

    The agent only starts the copy; this step polls it, writing the bytes
    copied on the migration for `GET /servers/{id}/migrations`, until it
    completed (the guest is on the destination) or stopped: aborted, failed,
    or the server deleted (the delete destroys the guests).
    """

    name = "live_migration"
    event = "compute_live_migration"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.source_host

    def before(self, conn: Connection) -> None:
        m = self.move
        m.stop_if_deleted(conn)
        m.advance(conn, "preparing", "running")

    def execute(self) -> None:
        """Start the copy and wait for it; a copy that did not complete is undone here, since
        the step that fails is not rolled back by the run (it may have half-acted)."""
        try:
            self._copy()
        except Exception as exc:
            try:
                self.rollback()
            except Exception as undo:
                LOG.exception("the guest of %s could not be restored on %s",
                              self.move.instance.uuid, self.move.source_host)
                raise GuestNotRestored(f"{_reason(exc)}; the guest could not be restored on "
                                       f"{self.move.source_host}: {undo}") from exc
            raise

    def _copy(self) -> None:
        m = self.move
        block = bool(m.dest_check.get("block_migration", m.block_migration))
        m.ops.call_agent(m.source_host, "live_migration", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid, dest_host=m.dest_host,
                         block_migration=block)
        seen: dict[str, Any] = {}
        written = 0.0
        while True:
            progress = m.ops.call_agent(m.source_host, "live_migration_progress",
                                        instance_uuid=m.instance.uuid,
                                        migration_uuid=m.migration.uuid)
            state = progress.pop("state")
            error = progress.pop("error", "")
            due = state != "running" or time.monotonic() - written >= PROGRESS_SECONDS
            if progress and progress != seen and due:
                written = time.monotonic()
                with m.ops.db.write() as conn:
                    migrations.save(conn, m.migration.uuid, **progress)
                seen = progress
            if state == "completed":
                return
            if state == "cancelled":
                raise LiveMigrationAborted(f"Live migration {m.migration.id} of instance "
                                           f"{m.instance.uuid} was aborted.")
            if state != "running":
                raise LiveMigrationFailed(f"Live migration failed: {error}")
            time.sleep(POLL_SECONDS)

    def rollback(self) -> None:
        """The guest runs on the source again; for a server deleted meanwhile, destroy it."""
        m = self.move
        if m.gone():
            m.ops.terminate_quietly(m.source_host, m.instance.uuid)
            return
        m.ops.call_agent(m.source_host, "rollback_live_migration",
                         instance_uuid=m.instance.uuid, migration_uuid=m.migration.uuid)
        _paused_again(m, m.source_host)


def _paused_again(m: LiveMove, host: str) -> None:
    """A paused server's guest runs once moved or restored (the hypervisor resumes it):
    pause it again, as libvirt keeps a paused domain paused (idempotent)."""
    if m.instance.vm_state == states.PAUSED:
        m.ops.call_agent(host, "pause_instance", instance_uuid=m.instance.uuid)


# --- after the copy: only forward ------------------------------------------------------
class PostAtDestination(Step):
    """The ports' destination bindings become the active ones (the source ones are
    deleted), the destination runs the guest; the instance's host is the destination
    from now on."""

    name = "post_live_migration_at_destination"
    event = "compute_post_live_migration_at_destination"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.dest_host

    def execute(self) -> None:
        m = self.move
        live_migrate_ports.activate(m.ops, m.ports(), m.dest_host, m.source_host,
                                    m.migration.uuid, m.gone)
        m.ops.call_agent(m.dest_host, "post_live_migration_at_destination",
                         instance_uuid=m.instance.uuid, migration_uuid=m.migration.uuid)
        _paused_again(m, m.dest_host)

    def after(self, conn: Connection) -> None:
        m = self.move
        assert m.dest is not None
        power = states.PAUSED_POWER if m.instance.vm_state == states.PAUSED else states.RUNNING
        instances.save(conn, m.instance.uuid, expected_task_state=TASK.MIGRATING,
                       host=m.dest["host"], node=m.dest["node"], power_state=power)


class PostOnSource(Step):
    """The source drops what the copy left behind (the stopped guest)."""

    name = "post_live_migration"
    event = "compute_post_live_migration"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def event_host(self) -> str | None:
        return self.move.source_host

    def execute(self) -> None:
        m = self.move
        m.ops.call_agent(m.source_host, "post_live_migration", instance_uuid=m.instance.uuid,
                         migration_uuid=m.migration.uuid)


class DropSourceAllocation(Step):
    """The migration's source allocation is deleted: migration completed, server ACTIVE
    (PAUSED if it was)."""

    name = "drop_source_allocation"

    def __init__(self, move: LiveMove) -> None:
        self.move = move

    def execute(self) -> None:
        self.move.ops.placement.delete_allocations(self.move.migration.uuid)

    def after(self, conn: Connection) -> None:
        m = self.move
        migrations.save(conn, m.migration.uuid, status="completed")
        instances.save(conn, m.instance.uuid, expected_task_state=TASK.MIGRATING,
                       vm_state=m.instance.vm_state, task_state=None, progress=0)
