"""What every conductor operation works with: records, Placement, agents, scheduler.

`Ops` bundles the dependencies and the request id of the operation so that
steps stay small; `event()` records an instance action event around a step,
so `openstack server event show` tells the operator which step failed where.
`ActionEvents` writes those events inside the journal's transactions: it
looks the action up once and ends each event by its id.

DELETE answers in any task state, as Nova's does, so an operation asks
`being_deleted()` (`OnServer.gone()`, mixed into the state its steps share)
before it writes its end state or gives anything back; `MoveState`, mixed
into the state of a migrate, live migration or evacuation, adds what those
moves hold alike: source and destination, the `DeletedDuringMove` stop, and
giving the source back. `Ops.next_alternate()` is the reschedule of every
operation that keeps the scheduler's alternates, `no_valid_host()` tells its
400 faults from its 500s, and `Ops.finishing()` ends its action in the
journal's last transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.engine import Connection

from stowage.compute import actions, instances, states
from stowage.compute.cells import Cells
from stowage.compute.conductor.leases import Leases
from stowage.compute.conductor.tasks import Batch, CrashHook, Journal
from stowage.compute.instances import Instance
from stowage.compute.migrations import Migration
from stowage.compute.rpc import AgentAPI, ConductorAPI, SchedulerAPI
from stowage.config import ComputeSettings, Settings
from stowage.db import Database
from stowage.errors import NotFound
from stowage.messaging import MessagingError, RemoteError
from stowage.network.client import NetworkClient
from stowage.placement.client import Holding, PlacementClient
from stowage.timeutil import utcnow

__all__ = ["Ops", "ActionEvents", "short_reason", "being_deleted", "OnServer", "MoveState",
           "DeletedDuringMove", "no_valid_host"]

LOG = logging.getLogger(__name__)


class ActionEvents:
    """The events of one instance's action (`request_id`), written in the caller's transaction.

    An event's id is kept once the transaction that inserted it committed
    (`committed()`), so that ending it is one UPDATE by primary key; an id
    from a transaction that rolled back is forgotten, never reused.
    """

    def __init__(self, instance_uuid: str, request_id: str) -> None:
        self.instance_uuid = instance_uuid
        self.request_id = request_id
        self._action: int | None = None
        self._looked_up = False
        self._open: dict[str, int] = {}
        self._staged: dict[str, int] = {}
        self._staged_in: Connection | None = None
        self._touched_in: Connection | None = None

    def action(self, conn: Connection) -> int | None:
        """The action's id (None: the request started none, e.g. internal work)."""
        if not self._looked_up:
            self._action = actions.action_id(conn, self.instance_uuid, self.request_id)
            self._looked_up = True
        return self._action

    def start(self, conn: Connection, event: str, host: str | None) -> None:
        action = self.action(conn)
        if action is None:
            return
        if self._staged_in is not conn:
            self._staged, self._staged_in = {}, conn
        now = utcnow()
        self._staged[event] = actions.open_event(conn, action, event, host, now)
        self._touch(conn, action, now)

    def finish(self, conn: Connection, event: str, error: BaseException | None = None) -> None:
        action = self.action(conn)
        if action is None:
            return
        staged = self._staged.pop(event, None) if self._staged_in is conn else None
        event_id = staged if staged is not None else self._open.pop(event, None)
        reason = None if error is None else short_reason(error)
        if event_id is None:  # started by another process (recovery): find it
            actions.finish_event(conn, self.instance_uuid, self.request_id, event, reason)
            return
        now = utcnow()
        actions.close_event(conn, event_id, reason, now)
        self._touch(conn, action, now, error=reason is not None)

    def _touch(self, conn: Connection, action: int, now: Any, error: bool = False) -> None:
        """One `updated_at` per transaction is enough; an error is always written."""
        if error or self._touched_in is not conn:
            actions.touch_action(conn, action, now, error)
            self._touched_in = conn

    def committed(self, conn: Connection) -> None:
        """The transaction `conn` ran committed: its events exist."""
        if self._staged_in is conn:
            self._open.update(self._staged)
            self._staged, self._staged_in = {}, None

    def finish_action(self, conn: Connection, message: str | None = None) -> None:
        action = self.action(conn)
        if action is not None:
            actions.finish_action_by_id(conn, action, message)


@dataclass
class Ops:
    settings: ComputeSettings
    # The cell's database, and the API database (request specs, flavors, groups, images).
    db: Database
    api_db: Database
    placement: PlacementClient
    agents: AgentAPI
    scheduler: SchedulerAPI
    request_id: str
    # Crash tests only (`[compute] crash_at`): ends the process at a journal point.
    hook: CrashHook | None = None
    # The Network service, for servers with ports (None: none is configured).
    network: NetworkClient | None = None
    # The conductor's leases: journals claim and confirm the operation under them.
    leases: Leases | None = None
    # The deployment's cells (None: one database holds everything), and the conductor
    # to hand a server carried to another cell's database over to (conductor/carry.py).
    cells: Cells | None = None
    conductor: ConductorAPI | None = None
    # The deployment's settings, for the image store snapshots go to (image/data.py);
    # None: a snapshot only records its size.
    image_settings: Settings | None = None
    _events: dict[str, ActionEvents] = field(default_factory=dict, init=False, repr=False)

    def journal(self, operation: str, instance_uuid: str | None, uuid: str | None = None,
                existing: Collection[str] | None = None, claimed: bool = False) -> Journal:
        """The journal of `operation` (`uuid`: the one the API accepted, if any;
        `existing`: the steps it has rows for, when known; `claimed`: the lease is
        already this conductor's, taken over)."""
        events = self.events(instance_uuid) if instance_uuid is not None else None
        return Journal(self.db, operation, instance_uuid, uuid, self.hook, existing, events,
                       self.leases, claimed)

    def events(self, instance_uuid: str) -> ActionEvents:
        """The events of this request's action on the instance."""
        found = self._events.get(instance_uuid)
        if found is None:
            found = self._events[instance_uuid] = ActionEvents(instance_uuid, self.request_id)
        return found

    def host_db(self, host: str) -> Database:
        """The database of the host's cell: its compute service and node are there (a
        cross-cell move's destination is another cell's host)."""
        if self.cells is None or self.cells.only_compute_cell() is not None:
            return self.db
        cell = self.cells.of_host(host)
        return self.db if cell is None else self.cells.database(cell)

    def instance(self, uuid: str) -> Instance:
        with self.db.read() as conn:
            return instances.get(conn, uuid)

    def instance_any(self, uuid: str) -> Instance:
        """The instance even if it was deleted meanwhile (recovery checks `deleted`)."""
        with self.db.read() as conn:
            return instances.get(conn, uuid, read_deleted=True)

    def update(self, uuid: str, **values: Any) -> Instance:
        with self.db.write() as conn:
            return instances.update(conn, uuid, **values)

    def fault(self, uuid: str, exc: BaseException, host: str | None, code: int = 500,
              message: str | None = None) -> None:
        """`message`: the fault's own (default: `short_reason`, which names the type)."""
        with self.db.write() as conn:
            instances.add_fault(conn, uuid, code, message or short_reason(exc),
                                details=str(exc), host=host)

    @contextmanager
    def event(self, instance_uuid: str, name: str, host: str | None = None) -> Iterator[None]:
        """An event around the block, each end in its own transaction (steps batch theirs)."""
        events = self.events(instance_uuid)
        with self.db.write() as conn:
            events.start(conn, name, host)
        events.committed(conn)
        try:
            yield
        except Exception as exc:
            with self.db.write() as conn:
                events.finish(conn, name, exc)
            raise
        with self.db.write() as conn:
            events.finish(conn, name)

    def finish_action(self, instance_uuid: str, message: str | None = None) -> None:
        with self.db.write() as conn:
            self.events(instance_uuid).finish_action(conn, message)

    def call_agent(self, host: str, method: str, **kwargs: Any) -> Any:
        return self.agents.call(host, method, **kwargs)

    def guest_power(self, host: str | None, instance_uuid: str) -> int:
        """What `host`'s hypervisor says of the guest now; NOSTATE when none or unreachable.

        Recovery settles on this, so only a guest that answers counts as intact.
        """
        if not host:
            return states.NOSTATE
        try:
            return int(self.call_agent(host, "guest_power_state", instance_uuid=instance_uuid))
        except MessagingError as exc:
            LOG.warning("cannot ask %s about the guest of %s: %s", host, instance_uuid, exc)
            return states.NOSTATE

    def terminate_quietly(self, host: str, instance_uuid: str) -> None:
        """Destroy whatever `host` holds of the instance; a failure is only logged."""
        try:
            self.call_agent(host, "terminate_instance", instance_uuid=instance_uuid)
        except MessagingError as exc:
            LOG.warning("could not destroy the guest of %s on %s: %s", instance_uuid, host, exc)

    def claim_alternate(self, inst: Instance, alternate: Mapping[str, Any]) -> bool:
        """Claim an alternate the scheduler kept unclaimed; False when it is taken by now."""
        allocs = {rp: a["resources"]
                  for rp, a in alternate["allocation_request"]["allocations"].items()}
        try:
            self.placement.claim(inst.uuid, allocs, inst.project_id, inst.user_id, None)
        except Exception as exc:  # noqa: BLE001 - taken, or unreachable: try the next one
            LOG.info("alternate %s for %s could not be claimed: %s", alternate["host"],
                     inst.uuid, exc)
            return False
        return True

    def next_alternate(self, inst: Instance,
                       selections: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Drop the instance's refused claim and claim the next alternate still free.

        Alternates are popped from `selections` as they are tried; None when
        none is left (the instance then holds nothing new).
        """
        self.placement.delete_allocations(inst.uuid)
        while selections:
            alternate = selections.pop(0)
            if self.claim_alternate(inst, alternate):
                return alternate
        return None

    def finishing(self, instance_uuid: str) -> Callable[[Batch], None]:
        """The `last` of `run_steps`: the action finishes and the journal ends in the
        transaction of the last step, so a crash leaves both or neither."""
        events = self.events(instance_uuid)

        def last(batch: Batch) -> None:
            events.finish_action(batch.conn)
            batch.end()

        return last

    def hand_over(self, source: str, target: str, target_type: str, project_id: str,
                  user_id: str) -> None:
        """Atomically give everything `source` holds to `target`, which loses what it held.

        One `POST /allocations` for both consumers, each at the generation just
        read: migration -> instance on a revert or a rollback (a move's
        instance -> migration is part of its destination claim, in the
        scheduler). A concurrent writer makes it fail with a conflict and
        change nothing.
        """
        held = self.placement.holding(source)
        before = self.placement.holding(target)
        self.placement.write_many({
            target: Holding(held.allocations, before.generation, project_id, user_id,
                            target_type),
            source: Holding({}, held.generation, project_id, user_id,
                            held.consumer_type or "INSTANCE"),
        })


def being_deleted(conn: Connection, instance_uuid: str) -> bool:
    """The server is being deleted (or is deleted): its operation stops and gives nothing back.

    The delete owns the guest and the allocations from then on.
    """
    try:
        return instances.task_state(conn, instance_uuid) == states.TASK.DELETING
    except NotFound:
        return True


class DeletedDuringMove(Exception):
    """DELETE /servers/{id} came during a move (Nova deletes in any task state)."""


class OnServer:
    """Mixed into the dataclass the steps of one operation share: is its server going?

    A plain class with annotations only, not a dataclass, so that the
    dataclass's own fields keep their order and defaults.
    """

    ops: Ops
    instance: Instance

    def gone(self) -> bool:
        """The server is being deleted (or is deleted): stop, and give nothing back."""
        with self.ops.db.read() as conn:
            return self.gone_in(conn)

    def gone_in(self, conn: Connection) -> bool:
        return being_deleted(conn, self.instance.uuid)


class MoveState(OnServer):
    """Mixed into the state of a move whose migration record holds the source meanwhile
    (migrate and resize, live migration, evacuation)."""

    migration: Migration
    selections: list[dict[str, Any]]
    dest: dict[str, Any] | None
    # The move in "Instance ... was deleted during its <moving>."
    moving: ClassVar[str] = "move"

    @property
    def source_host(self) -> str:
        host = self.migration.source_compute or self.instance.host
        assert host is not None
        return host

    @property
    def dest_host(self) -> str:
        assert self.dest is not None
        return str(self.dest["host"])

    def deleted_error(self) -> DeletedDuringMove:
        return DeletedDuringMove(f"Instance {self.instance.uuid} was deleted during its "
                                 f"{self.moving}.")

    def stop_if_deleted(self, conn: Connection) -> None:
        if self.gone_in(conn):
            raise self.deleted_error()

    def schedule(self, spec: dict[str, Any], held: Holding) -> None:
        """The scheduler picks the destination and claims it in the same atomic
        `POST /allocations` that hands `held` (the instance's source) to the
        migration; the next hosts are kept as unclaimed alternates."""
        spec["move_source"] = {"migration_uuid": self.migration.uuid,
                               "allocations": held.allocations,
                               "generation": held.generation}
        self.selections = self.ops.scheduler.select_destinations(
            spec, [self.instance.uuid], any_cell=bool(spec.get("allow_cross_cell_move")))[0]
        self.dest = self.selections.pop(0)

    def give_source_back(self) -> None:
        """Give the source back, replacing the destination claim, in one write; nothing if
        the migration holds nothing (the claim was never made, or was undone already).

        A server deleted meanwhile gets nothing back: both allocations are
        dropped. Deleted while it was being given back (the delete may have
        dropped the instance's allocations already): dropped again after.
        """
        if self.gone():
            self.ops.placement.delete_allocations(self.migration.uuid)
            self.ops.placement.delete_allocations(self.instance.uuid)
            return
        if self.ops.placement.holding(self.migration.uuid).allocations:
            self.ops.hand_over(self.migration.uuid, self.instance.uuid, "INSTANCE",
                               self.instance.project_id, self.instance.user_id)
        if self.gone():
            self.ops.placement.delete_allocations(self.instance.uuid)


def no_valid_host(exc: BaseException, exhausted: type[Exception]) -> bool:
    """No host could take the server, a 400 fault as Nova's NoValidHost: the scheduler
    refused (its error crosses the RPC seam by name) or the operation ran out of
    alternates (`exhausted`, its own error for that)."""
    return isinstance(exc, exhausted) or (
        isinstance(exc, RemoteError) and exc.exc_type == "NoValidHost")


def short_reason(exc: BaseException) -> str:
    """A one-line reason for faults and events: a remote failure's own message, as Nova shows."""
    if isinstance(exc, RemoteError):
        return exc.message[:255]
    if isinstance(exc, MessagingError):
        return str(exc)[:255]
    return f"{type(exc).__name__}: {exc}"[:255]
