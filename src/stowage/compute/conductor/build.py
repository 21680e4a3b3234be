"""Building servers: schedule and claim, spawn on the chosen host, reschedule on failure.

    ports' requests ─> scheduler (claims the first choice, ports' groups included)
        ─> ports created (network entries) ─> agent claims VFs, spawns
        ─> ports bound to the host ─> ACTIVE
                 └─ spawn or binding fails: drop the claim, claim the next
                    alternate, retry (the ports are bound again there)

A server with ports asks for their request groups too (`ports.requests_of`,
read from the Network service when the build starts); the chosen candidate's
`mappings` say which provider serves each group, the agent takes each
SR-IOV port's VF from the PF so chosen, and each port is bound to the host
with its allocation (`ports.bind`). A port Nova creates for a network entry
whose QoS policy gives it a resource request aborts the build without a
reschedule, as Nova's NetworksWithQoSPolicyNotSupported does.

When the scheduler finds nothing, or every alternate failed, the server goes
to ERROR with a fault, holds no allocation and lets its ports go (the ports
Nova created are deleted, the user's unbound). A server deleted while it was
being built is cleaned up here: guest destroyed, allocation dropped (its
ports are the delete's).

A build a crash cut off is settled on the next start (`recover_build`): a
server whose guest exists on its host and that holds its claim is ACTIVE,
its ports bound again (idempotent); any other is cleaned (guest destroyed,
claim dropped) and built again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stowage.compute import instances, states
from stowage.compute.conductor import carry, ports
from stowage.compute.conductor.common import ActionEvents, Ops, being_deleted
from stowage.compute.conductor.tasks import Batch, Interrupted, Journal
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError, RemoteError
from stowage.timeutil import utcnow

__all__ = ["build_instances", "recover_build", "STEPS"]

LOG = logging.getLogger(__name__)


# The journal steps of a build (crash tests enumerate them); `spawn` is per instance.
STEPS = ("schedule", "spawn")


def build_instances(ops: Ops, instance_uuids: list[str], journal: Journal,
                    selections: list[dict[str, Any]] | None = None) -> None:
    """Schedule (any cell's hosts), carry each server to its host's cell, build it there.
    `selections`: a server carried here, its host and alternates chosen already."""
    if selections is not None:
        uuid = instance_uuids[0]
        _build_one(ops, uuid, list(selections), journal, ports.load(ops, uuid), last=True)
        return
    with ops.api_db.read() as conn:
        spec = instances.request_spec(conn, instance_uuids[0])
    spec["num_instances"] = len(instance_uuids)
    # Ports belong to one server (a request naming ports creates one server).
    server_ports = {uuid: ports.load(ops, uuid) for uuid in instance_uuids}
    try:
        if len(instance_uuids) == 1:
            requests = ports.requests_of(ops, server_ports[instance_uuids[0]])
            spec["port_requests"] = ports.spec_entries(requests)
        chosen = _schedule(ops, spec, instance_uuids, journal)
    except MessagingError as exc:
        for uuid in instance_uuids:
            _error_out(ops, uuid, exc)
            carry.bury(ops, uuid, journal)
        return
    for i, (uuid, choices) in enumerate(zip(instance_uuids, chosen, strict=True)):
        target = carry.target_of(ops, uuid, choices[0])
        if target is not None and carry.carry(ops, uuid, target, journal, list(choices)):
            continue  # built by the conductor of the host's cell
        _build_one(ops, uuid, list(choices), journal, server_ports[uuid],
                   last=i == len(instance_uuids) - 1)


_SCHEDULE_EVENT = "conductor_schedule_and_build_instances"
_SPAWN_EVENT = "compute__do_build_and_run_instance"


@contextmanager
def _records(ops: Ops, journal: Journal, uuid: str) -> Iterator[tuple[Batch, ActionEvents]]:
    """One journal transaction with the records and action events of server `uuid`:
    a build writes its journal rows, task states and events together, before and
    after each thing it asks of the scheduler or an agent."""
    events = ops.events(uuid)
    with journal.batch() as batch:
        yield batch, events
    events.committed(batch.conn)


def _event_failed(ops: Ops, uuid: str, event: str, exc: BaseException) -> None:
    with ops.db.write() as conn:
        ops.events(uuid).finish(conn, event, exc)


def _schedule(ops: Ops, spec: dict[str, Any], uuids: list[str],
              journal: Journal) -> list[list[dict[str, Any]]]:
    """The scheduler's choices, journaled `executing` before and `done` after."""
    with _records(ops, journal, uuids[0]) as (batch, events):
        batch.record("schedule", "executing")
        events.start(batch.conn, _SCHEDULE_EVENT, None)
    try:
        chosen: list[list[dict[str, Any]]] = ops.scheduler.select_destinations(
            spec, uuids, any_cell=True)
    except Exception as exc:
        _event_failed(ops, uuids[0], _SCHEDULE_EVENT, exc)
        raise
    with _records(ops, journal, uuids[0]) as (batch, events):
        events.finish(batch.conn, _SCHEDULE_EVENT)
        batch.record("schedule", "done")
    return chosen


def _build_one(ops: Ops, uuid: str, choices: list[dict[str, Any]], journal: Journal,
               server_ports: ports.ServerPorts, last: bool) -> None:
    """Spawn on the first choice, else on each alternate; `last`: the build's last
    server, whose success ends the operation in the same transaction."""
    failure: Exception | None = None
    first = True
    while choices:
        choice = choices.pop(0)
        if not first and not ops.claim_alternate(ops.instance(uuid), choice):
            continue
        first = False
        try:
            _spawn_on(ops, uuid, choice, server_ports, journal, last)
            return
        except (NotFound, UnexpectedTaskState):
            _deleted_meanwhile(ops, uuid, choice["host"])
            return
        except ports.NetworksWithQoSPolicyNotSupported as exc:
            _error_out(ops, uuid, RemoteError(
                "BuildAbortException", f"Build of instance {uuid} aborted: Failed to "
                f"allocate the network(s), not rescheduling. ({exc})"))
            return
        except MessagingError as exc:
            LOG.info("build of %s on %s failed: %s", uuid, choice["host"], exc)
            failure = exc
            ops.placement.delete_allocations(uuid)
    reason = (f"Exceeded maximum number of retries. Exhausted all hosts available for "
              f"retrying build failures for instance {uuid}.")
    _error_out(ops, uuid, RemoteError("MaxRetriesExceeded",
                                      reason + (f" Last error: {failure}" if failure else "")))


def _spawn_on(ops: Ops, uuid: str, choice: dict[str, Any], server_ports: ports.ServerPorts,
              journal: Journal, last: bool) -> None:
    """Ports created, VFs claimed and guest spawned on the host, ports bound to it; a
    failure leaves the host with nothing of the server (the caller reschedules).

    `spawn executing`, the task state and the event's start commit together
    before anything is asked of the host; the event's end, ACTIVE, `spawn
    done` and the action's end (with `end`, for the last server) after.
    """
    host = str(choice["host"])
    # The agent records the host once the server group's late check allows it.
    with _records(ops, journal, uuid) as (batch, events):
        batch.record("spawn", "executing", json.dumps({"instance_uuid": uuid, "host": host}))
        inst = instances.update(batch.conn, uuid,
                                expected_task_state=(TASK.SCHEDULING, TASK.SPAWNING),
                                task_state=TASK.SPAWNING)
        events.start(batch.conn, _SPAWN_EVENT, host)
    spawned = False
    try:
        ports.create_at_boot(ops, server_ports, inst.project_id)
        group_map = ports.mapping(ops, server_ports.requests, choice, holder=uuid)
        vf_ports = ports.vf_ports(server_ports.requests, group_map)
        pci = ops.call_agent(host, "build_and_run_instance", instance_uuid=uuid,
                             flavor=inst.flavor, **({"vf_ports": vf_ports} if vf_ports else {}))
        spawned = True
        ports.bind(ops, server_ports, host, group_map, pci or {}, lambda: _deleting(ops, uuid))
    except Exception as exc:
        _event_failed(ops, uuid, _SPAWN_EVENT, exc)
        if not isinstance(exc, MessagingError):
            raise
        if spawned:  # the binding failed: the guest must not stay on this host
            ops.terminate_quietly(host, uuid)
        ops.update(uuid, expected_task_state=TASK.SPAWNING, host=None, node=None,
                   task_state=TASK.SCHEDULING)
        raise
    try:
        with _records(ops, journal, uuid) as (batch, events):
            events.finish(batch.conn, _SPAWN_EVENT)
            instances.save(batch.conn, uuid, expected_task_state=TASK.SPAWNING, host=host,
                           node=choice["node"], vm_state=states.ACTIVE, task_state=None,
                           power_state=states.RUNNING, launched_at=utcnow())
            batch.record("spawn", "done")
            events.finish_action(batch.conn)
            if last:
                batch.end()
    except (NotFound, UnexpectedTaskState):  # deleted meanwhile: the spawn itself succeeded
        with ops.db.write() as conn:
            ops.events(uuid).finish(conn, _SPAWN_EVENT)
        raise


def _deleting(ops: Ops, uuid: str) -> bool:
    with ops.db.read() as conn:
        return being_deleted(conn, uuid)


def _deleted_meanwhile(ops: Ops, uuid: str, host: str) -> None:
    """The user deleted the server while it was spawning: leave nothing behind."""
    LOG.info("instance %s was deleted during its build; cleaning up %s", uuid, host)
    try:
        ops.call_agent(host, "terminate_instance", instance_uuid=uuid)
    except MessagingError:
        LOG.warning("could not destroy the guest of deleted instance %s on %s", uuid, host)
    ops.placement.delete_allocations(uuid)


def _error_out(ops: Ops, uuid: str, exc: Exception) -> None:
    """ERROR with a fault (Nova's code 500 for NoValidHost too), no allocation, and its
    ports let go (Nova's `_cleanup_allocated_networks`)."""
    ops.placement.delete_allocations(uuid)
    try:
        ops.update(uuid, vm_state=states.ERROR, task_state=None, host=None, node=None)
    except NotFound:
        return
    _release_ports(ops, uuid)
    ops.fault(uuid, exc, None)
    ops.finish_action(uuid, "Error")


def _release_ports(ops: Ops, uuid: str) -> None:
    """Let the ports of a server that will not run go; a failure is only logged (the
    delete of the server tries again)."""
    try:
        ports.release(ops, ports.load(ops, uuid))
    except MessagingError as exc:
        LOG.warning("could not release the ports of %s: %s", uuid, exc)


def recover_build(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Settle every server of a build a crash cut off: ACTIVE if proven spawned, else rebuild."""
    again: list[str] = []
    for uuid in op.args.get("instance_uuids") or [op.instance_uuid]:
        if carry.recover(ops, uuid, op.operation_uuid):
            continue  # carried to another cell's database: built there
        try:
            inst = ops.instance_any(uuid)
        except NotFound:
            continue
        if inst.deleted:
            _forget(ops, inst)
        elif inst.task_state == TASK.DELETING:
            continue  # its delete is an operation of its own, recovered as such
        elif inst.vm_state != states.BUILDING:
            ops.finish_action(uuid, None if inst.vm_state == states.ACTIVE else "Error")
        elif inst.host and _spawned(ops, inst):
            ops.finish_action(uuid)
        else:
            _forget(ops, inst)
            ops.update(uuid, host=None, node=None, task_state=TASK.SCHEDULING)
            again.append(uuid)
    if again:
        LOG.warning("building %s again after a restart cut their build off", again)
        build_instances(ops, again, journal)


def _spawned(ops: Ops, inst: instances.Instance) -> bool:
    """The guest runs on the instance's host and the instance holds its claim: ACTIVE,
    once its ports are bound there (again: the crash may have come before)."""
    power = ops.guest_power(inst.host, inst.uuid)
    if power == states.NOSTATE or not ops.placement.holding(inst.uuid).allocations:
        return False
    assert inst.host is not None
    try:
        ports.rebind(ops, ports.load(ops, inst.uuid), inst.host, inst.uuid, "",
                     lambda: _deleting(ops, inst.uuid))
    except MessagingError as exc:
        LOG.warning("could not bind the ports of %s again: %s", inst.uuid, exc)
        return False
    ops.update(inst.uuid, vm_state=states.ACTIVE, task_state=None, power_state=power,
               launched_at=utcnow())
    return True


def _forget(ops: Ops, inst: instances.Instance) -> None:
    """Destroy whatever guest the build made and drop its claim (both idempotent)."""
    if inst.host:
        ops.terminate_quietly(inst.host, inst.uuid)
    ops.placement.delete_allocations(inst.uuid)
