"""Building servers: schedule and claim, spawn on the chosen host, reschedule on failure.

    scheduler (claims the first choice) ─> agent spawns ─> ACTIVE
                 └─ spawn fails: drop the claim, claim the next alternate, retry

When the scheduler finds nothing, or every alternate failed, the server goes
to ERROR with a fault and holds no allocation. A server deleted while it was
being built is cleaned up here: guest destroyed, allocation dropped.

A build a crash cut off is settled on the next start (`recover_build`): a
server whose guest exists on its host and that holds its claim is ACTIVE;
any other is cleaned (guest destroyed, claim dropped) and built again.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from stowage.compute import instances, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError, RemoteError
from stowage.timeutil import utcnow

__all__ = ["build_instances", "recover_build", "STEPS"]

LOG = logging.getLogger(__name__)


# The journal steps of a build (crash tests enumerate them); `spawn` is per instance.
STEPS = ("schedule", "spawn")


def build_instances(ops: Ops, instance_uuids: list[str], journal: Journal) -> None:
    with ops.db.read() as conn:
        spec = instances.request_spec(conn, instance_uuids[0])
    spec["num_instances"] = len(instance_uuids)
    journal.record("schedule", "executing")
    try:
        with ops.event(instance_uuids[0], "conductor_schedule_and_build_instances"):
            selections = ops.scheduler.select_destinations(spec, instance_uuids)
    except MessagingError as exc:
        for uuid in instance_uuids:
            _error_out(ops, uuid, exc)
        return
    journal.record("schedule", "done")
    for uuid, choices in zip(instance_uuids, selections, strict=True):
        _build_one(ops, uuid, list(choices), journal)


def _build_one(ops: Ops, uuid: str, choices: list[dict[str, Any]], journal: Journal) -> None:
    last: Exception | None = None
    first = True
    while choices:
        choice = choices.pop(0)
        if not first and not ops.claim_alternate(ops.instance(uuid), choice):
            continue
        first = False
        try:
            journal.record("spawn", "executing",
                           json.dumps({"instance_uuid": uuid, "host": choice["host"]}))
            _spawn_on(ops, uuid, choice)
            journal.record("spawn", "done")
            ops.finish_action(uuid)
            return
        except (NotFound, UnexpectedTaskState):
            _deleted_meanwhile(ops, uuid, choice["host"])
            return
        except MessagingError as exc:
            LOG.info("build of %s on %s failed: %s", uuid, choice["host"], exc)
            last = exc
            ops.placement.delete_allocations(uuid)
    reason = (f"Exceeded maximum number of retries. Exhausted all hosts available for "
              f"retrying build failures for instance {uuid}.")
    _error_out(ops, uuid, RemoteError("MaxRetriesExceeded",
                                      reason + (f" Last error: {last}" if last else "")))


def _spawn_on(ops: Ops, uuid: str, choice: dict[str, Any]) -> None:
    host = str(choice["host"])
    # The agent records the host once the server group's late check allows it.
    inst = ops.update(uuid, expected_task_state=(TASK.SCHEDULING, TASK.SPAWNING),
                      task_state=TASK.SPAWNING)
    try:
        with ops.event(uuid, "compute__do_build_and_run_instance", host):
            ops.call_agent(host, "build_and_run_instance", instance_uuid=uuid,
                           flavor=inst.flavor)
    except MessagingError:
        ops.update(uuid, expected_task_state=TASK.SPAWNING, host=None, node=None,
                   task_state=TASK.SCHEDULING)
        raise
    ops.update(uuid, expected_task_state=TASK.SPAWNING, host=host, node=choice["node"],
               vm_state=states.ACTIVE, task_state=None, power_state=states.RUNNING,
               launched_at=utcnow())


def _deleted_meanwhile(ops: Ops, uuid: str, host: str) -> None:
    """The user deleted the server while it was spawning: leave nothing behind."""
    LOG.info("instance %s was deleted during its build; cleaning up %s", uuid, host)
    try:
        ops.call_agent(host, "terminate_instance", instance_uuid=uuid)
    except MessagingError:
        LOG.warning("could not destroy the guest of deleted instance %s on %s", uuid, host)
    ops.placement.delete_allocations(uuid)


def _error_out(ops: Ops, uuid: str, exc: Exception) -> None:
    """ERROR with a fault (Nova's code 500 for NoValidHost too) and no allocation."""
    ops.placement.delete_allocations(uuid)
    try:
        ops.update(uuid, vm_state=states.ERROR, task_state=None, host=None, node=None)
    except NotFound:
        return
    ops.fault(uuid, exc, None)
    ops.finish_action(uuid, "Error")


def recover_build(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Settle every server of a build a crash cut off: ACTIVE if proven spawned, else rebuild."""
    again: list[str] = []
    for uuid in op.args.get("instance_uuids") or [op.instance_uuid]:
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
    """The guest runs on the instance's host and the instance holds its claim: ACTIVE."""
    power = ops.guest_power(inst.host, inst.uuid)
    if power == states.NOSTATE or not ops.placement.holding(inst.uuid).allocations:
        return False
    ops.update(inst.uuid, vm_state=states.ACTIVE, task_state=None, power_state=power,
               launched_at=utcnow())
    return True


def _forget(ops: Ops, inst: instances.Instance) -> None:
    """Destroy whatever guest the build made and drop its claim (both idempotent)."""
    if inst.host:
        ops.terminate_quietly(inst.host, inst.uuid)
    ops.placement.delete_allocations(inst.uuid)
