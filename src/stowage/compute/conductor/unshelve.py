"""Unshelve: power a shelved server on where it is, or place an offloaded one from scratch.

    shelved (still on its host, holding its flavor there):
        power_on ─> settle: ACTIVE, snapshot image deleted, shelved_* facts cleared
    offloaded (no host, no allocation):
        schedule (the scheduler claims a host for the instance, as for a build)
          ─> spawn from the shelved image (reschedule to alternates on failure)
          ─> ACTIVE on the new host, snapshot image deleted, shelved_* facts cleared

The request spec is the server's own (image traits, server group, zone as
the API last set it) with the flavor the server has now (a resize changes
it); a 2.91 `host` pins the destination for this unshelve only, as Nova does
not keep it.

A server with ports (offloaded: unbound from any host, still the server's)
asks for their request groups, read again from the Network service, as a
build does; the host takes each SR-IOV port's VF from the PF the chosen
candidate maps its group to, and once the guest is spawned the ports are
bound there with that mapping (Nova's `setup_instance_network_on_host` with
the provider mappings). A host whose compute is too old for the ports'
resource requests, or any host while the compute RPC is pinned below 5.2, is
skipped for the next alternate (`upgrade_checks`). A binding that fails destroys the guest and tries
the next alternate, as a failed spawn does.

A failed unshelve of an offloaded server (no valid host, every alternate's
spawn failed) leaves it SHELVED_OFFLOADED with no host, no allocation
anywhere and its image kept, its ports unbound, so it can be unshelved
again; a fault says why. A failed power-on leaves it SHELVED on its host. A server deleted
meanwhile is the delete's: the claim is dropped and the new guest destroyed.

After a crash (`recover_unshelve`, `recover_unshelve_power_on`) both go
forward: a guest proven spawned on the host the instance claims settles
ACTIVE; anything else is cleaned (guest destroyed, claim dropped) and the
unshelve runs again.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances, states
from stowage.compute.conductor import port_homes, ports, upgrade_checks
from stowage.compute.conductor.common import OnServer, Ops, no_valid_host
from stowage.compute.conductor.shelve import SHELVED_KEYS, forget_image
from stowage.compute.conductor.tasks import Interrupted, Journal, Step, StepFailed, run_steps
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError, RemoteError
from stowage.timeutil import utcnow

__all__ = ["unshelve_server", "recover_unshelve", "recover_unshelve_power_on", "STEPS",
           "POWER_ON_STEPS"]

LOG = logging.getLogger(__name__)

# The journal steps of each path, in order (crash tests enumerate them).
STEPS = ("schedule", "spawn")
POWER_ON_STEPS = ("power_on", "settle")
_UNSHELVING = (TASK.UNSHELVING, TASK.SPAWNING)


@dataclass
class Unshelving(OnServer):
    """What the steps of one unshelve share (`gone()`: OnServer)."""

    ops: Ops
    instance: Instance
    host: str | None = None  # the admin's 2.91 destination
    selections: list[dict[str, Any]] = field(default_factory=list)
    dest: dict[str, Any] | None = None
    server_ports: ports.ServerPorts | None = None

    def ports(self) -> ports.ServerPorts:
        if self.server_ports is None:
            self.server_ports = ports.load(self.ops, self.instance.uuid)
        return self.server_ports

    def park_ports(self) -> None:
        """The ports unbound from any host again (still the server's); only logged if the
        Network service fails: the next unshelve binds them anyway."""
        try:
            port_homes.park(self.ops, self.ports(), self.gone)
        except MessagingError as exc:
            LOG.warning("could not unbind the ports of %s: %s", self.instance.uuid, exc)

    @property
    def image_id(self) -> str | None:
        return (self.instance.system_metadata or {}).get("shelved_image_id")

    def unshelved(self, conn: Connection, expected: Any, **values: Any) -> None:
        """ACTIVE: the shelved image and facts are gone, in the same transaction."""
        facts = {k: v for k, v in (self.instance.system_metadata or {}).items()
                 if k not in SHELVED_KEYS}
        instances.save(conn, self.instance.uuid, expected_task_state=expected,
                       vm_state=states.ACTIVE, task_state=None, power_state=states.RUNNING,
                       system_metadata=facts, **values)
        forget_image(self.ops.api_db, conn, self.image_id, self.ops.image_settings)


class Schedule(Step):
    """The scheduler picks a host for the instance and claims it (alternates kept)."""

    name = "schedule"
    event = "schedule_instances"

    def __init__(self, un: Unshelving) -> None:
        self.un = un
        self.spec: dict[str, Any] = {}

    def before(self, conn: Connection) -> None:
        un = self.un
        if instances.task_state(conn, un.instance.uuid) != TASK.UNSHELVING:
            raise UnexpectedTaskState(f"Instance {un.instance.uuid} is no longer unshelving.")
        with un.ops.api_db.using(conn) as api:
            spec = instances.request_spec(api, un.instance.uuid)
        # The flavor the server has now: a confirmed resize does not rewrite the spec.
        spec.update(flavor=un.instance.flavor, move=False, ignore_hosts=[], num_instances=1,
                    requested_destination={"host": un.host, "node": None} if un.host else None)
        self.spec = spec

    def execute(self) -> None:
        un = self.un
        self.spec["port_requests"] = ports.spec_entries(ports.requests_of(un.ops, un.ports()))
        un.selections = un.ops.scheduler.select_destinations(self.spec, [un.instance.uuid])[0]
        un.dest = un.selections.pop(0)
        if self.spec["port_requests"]:
            un.dest = _new_enough(un, un.dest)

    def rollback(self) -> None:
        self.un.ops.placement.delete_allocations(self.un.instance.uuid)


class Spawn(Step):
    """The chosen host spawns the guest from the shelved image; alternates on failure."""

    name = "spawn"
    event = "compute_unshelve_instance"

    def __init__(self, un: Unshelving) -> None:
        self.un = un

    def event_host(self) -> str | None:
        return None if self.un.dest is None else str(self.un.dest["host"])

    def journal_detail(self) -> str | None:
        return json.dumps({"host": self.event_host()})

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.un.instance.uuid, expected_task_state=_UNSHELVING,
                       task_state=TASK.SPAWNING)

    def execute(self) -> None:
        un = self.un
        while True:
            assert un.dest is not None
            host = str(un.dest["host"])
            try:
                self._spawn_on(host)
                return
            except RemoteError as exc:
                LOG.info("unshelve of %s on %s failed (%s); trying an alternate",
                         un.instance.uuid, host, exc)
                self._forget_host()
                alternate = un.ops.next_alternate(un.instance, un.selections)
                if alternate is None:
                    raise _retries_exceeded(un.instance.uuid, exc) from exc
                un.dest = (_new_enough(un, alternate)
                           if any(r.groups for r in un.ports().requests) else alternate)

    def _spawn_on(self, host: str) -> None:
        """VFs of the mapped PFs claimed and the guest spawned on `host`, then the ports
        bound there; a failed binding destroys the guest and unbinds the ports again."""
        un = self.un
        server_ports = un.ports()
        group_map = (ports.mapping(un.ops, server_ports.requests, un.dest, un.instance.uuid)
                     if server_ports else {})
        wanted = ports.vf_ports(server_ports.requests, group_map)
        pci = un.ops.call_agent(host, "unshelve_instance", instance_uuid=un.instance.uuid,
                                flavor=un.instance.flavor, image_id=un.image_id,
                                **({"vf_ports": wanted} if wanted else {}))
        try:
            ports.bind(un.ops, server_ports, host, group_map, pci or {}, un.gone)
        except RemoteError:
            un.ops.terminate_quietly(host, un.instance.uuid)
            un.park_ports()
            raise

    def _forget_host(self) -> None:
        """The agent recorded its host before the spawn failed: not this host after all."""
        un = self.un
        with un.ops.db.write() as conn:
            instances.save(conn, un.instance.uuid, expected_task_state=TASK.SPAWNING,
                           host=None, node=None)

    def after(self, conn: Connection) -> None:
        un = self.un
        assert un.dest is not None
        un.unshelved(conn, TASK.SPAWNING, host=un.dest["host"], node=un.dest["node"],
                     launched_at=utcnow())

    def rollback(self) -> None:
        """Destroy the new guest and forget its host (the claim goes with Schedule's undo)."""
        un = self.un
        if un.dest is None:
            return
        un.ops.terminate_quietly(str(un.dest["host"]), un.instance.uuid)
        un.park_ports()
        with un.ops.db.write() as conn, contextlib.suppress(NotFound, UnexpectedTaskState):
            instances.save(conn, un.instance.uuid, expected_task_state=TASK.SPAWNING,
                           host=None, node=None)


class PowerOn(Step):
    """The shelved guest, still on its host, runs again."""

    name = "power_on"
    event = "compute_start_instance"

    def __init__(self, un: Unshelving) -> None:
        self.un = un

    def event_host(self) -> str | None:
        return self.un.instance.host

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.un.instance.uuid, expected_vm_state=states.SHELVED,
                       expected_task_state=(TASK.UNSHELVING, TASK.POWERING_ON),
                       task_state=TASK.POWERING_ON)

    def execute(self) -> None:
        un = self.un
        assert un.instance.host is not None
        un.ops.call_agent(un.instance.host, "power_on_instance", instance_uuid=un.instance.uuid)


class SettleActive(Step):
    name = "settle"
    acts = False

    def __init__(self, un: Unshelving) -> None:
        self.un = un

    def before(self, conn: Connection) -> None:
        self.un.unshelved(conn, TASK.POWERING_ON)


class RetriesExceeded(Exception):
    pass


def _new_enough(un: Unshelving, dest: dict[str, Any]) -> dict[str, Any]:
    """`dest`, or the first alternate whose compute can take the ports' resource requests
    (claimed in its place); none: RetriesExceeded, the instance holding nothing."""
    found = upgrade_checks.host_taking_ports(un.ops, un.instance, dest, un.selections)
    if found is None:
        raise RetriesExceeded(upgrade_checks.exhausted_message(un.instance.uuid))
    return found


def _retries_exceeded(uuid: str, exc: RemoteError) -> RetriesExceeded:
    return RetriesExceeded(
        f"Exceeded maximum number of retries. Exhausted all hosts available for retrying "
        f"build failures for instance {uuid}. Last error: {exc.message}")


def unshelve_server(ops: Ops, instance_uuid: str, host: str | None, journal: Journal) -> None:
    """Power on in place (SHELVED) or schedule and spawn (SHELVED_OFFLOADED)."""
    try:
        inst = ops.instance(instance_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its unshelve started", instance_uuid)
        return
    un = Unshelving(ops, inst, host)
    in_place = inst.vm_state == states.SHELVED
    steps: list[Step] = ([PowerOn(un), SettleActive(un)] if in_place
                         else [Schedule(un), Spawn(un)])
    try:
        run_steps(steps, journal, ops.finishing(inst.uuid))
    except StepFailed as failure:
        _failed(un, failure, in_place)


def _failed(un: Unshelving, failure: StepFailed, in_place: bool) -> None:
    """Back to SHELVED (on its host) or SHELVED_OFFLOADED (no host, nothing held)."""
    ops, inst = un.ops, un.instance
    LOG.warning("unshelve of %s failed at %s: %s", inst.uuid, failure.step.name, failure.cause)
    if un.gone():
        if not in_place:
            ops.placement.delete_allocations(inst.uuid)
        ops.finish_action(inst.uuid, "Error")
        return
    values: dict[str, Any] = {} if in_place else {"host": None, "node": None}
    try:
        ops.update(inst.uuid, expected_task_state=(*_UNSHELVING, TASK.POWERING_ON),
                   task_state=None, **values)
    except (NotFound, UnexpectedTaskState):
        if not un.gone():
            raise
        if not in_place:
            ops.placement.delete_allocations(inst.uuid)
    else:
        if not in_place:
            un.park_ports()
        no_host = no_valid_host(failure.cause, RetriesExceeded)
        ops.fault(inst.uuid, failure.cause, inst.host, 400 if no_host else 500)
    ops.finish_action(inst.uuid, "Error")


# --- crash recovery: forward ----------------------------------------------------
def recover_unshelve(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Settle ACTIVE when the guest is proven spawned, else clean up and unshelve again."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    spawned_on = (op.detail("spawn") or {}).get("host")
    if inst.deleted or inst.task_state == TASK.DELETING:
        if inst.deleted:
            for host in sorted({h for h in (inst.host, spawned_on) if h}):
                ops.terminate_quietly(host, inst.uuid)
            ops.placement.delete_allocations(inst.uuid)
        ops.finish_action(inst.uuid, "Error")
        return
    if inst.vm_state != states.SHELVED_OFFLOADED or inst.task_state not in _UNSHELVING:
        ops.finish_action(inst.uuid, None if inst.vm_state == states.ACTIVE else "Error")
        return
    un = Unshelving(ops, inst, op.args.get("host"))
    if inst.host and _spawned(ops, inst):
        with ops.db.write() as conn:
            un.unshelved(conn, _UNSHELVING)
        ops.finish_action(inst.uuid)
        return
    for host in sorted({h for h in (inst.host, spawned_on) if h}):
        ops.terminate_quietly(host, inst.uuid)
    ops.placement.delete_allocations(inst.uuid)
    ops.update(inst.uuid, host=None, node=None, task_state=TASK.UNSHELVING)
    LOG.warning("unshelving %s again after a restart cut its unshelve off", inst.uuid)
    unshelve_server(ops, inst.uuid, un.host, journal)


def _spawned(ops: Ops, inst: Instance) -> bool:
    """The guest runs on the instance's host and the instance holds its claim, its ports
    bound there (again: the crash may have come before they were)."""
    try:
        power = ops.guest_power(inst.host, inst.uuid)
    except MessagingError:
        return False
    if power == states.NOSTATE or not ops.placement.holding(inst.uuid).allocations:
        return False
    assert inst.host is not None
    un = Unshelving(ops, inst)
    try:
        ports.rebind(ops, un.ports(), inst.host, inst.uuid, "", un.gone)
    except MessagingError as exc:
        LOG.warning("could not bind the ports of %s again: %s", inst.uuid, exc)
        return False
    return True


def recover_unshelve_power_on(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Power on again while the server is still shelved and unshelving; else finish."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    if (not inst.deleted and inst.vm_state == states.SHELVED
            and inst.task_state in (TASK.UNSHELVING, TASK.POWERING_ON)):
        unshelve_server(ops, inst.uuid, None, journal)
    elif not inst.deleted:
        ops.finish_action(inst.uuid, None if inst.vm_state == states.ACTIVE else "Error")
