"""Guest actions on the server's own host: reboot, pause, unpause, suspend, resume,
rescue, unrescue, and the guest's side of a deferred delete (soft_delete, restore).

None moves the server or changes what it holds: its allocation, host and
flavor stay; only the guest's power state and the instance's vm_state
change. Each is one agent call under the operation's journal, like
os-stop/os-start (`lifecycle.power`):

    API: task_state := <the action's>, journal `accepted` ──cast──> conductor
    conductor: reboot only: task_state rebooting -> reboot_started (compare-and-swap)
               journal <op> executing ──call──> agent <op>_instance (driver, idempotent)
               journal <op> done; vm_state/power_state := the result; task_state := None

A failure leaves the server as Nova's compute manager does: the task state
is reverted and a fault recorded; a reboot that failed puts the server in
ERROR unless its guest still runs (Nova's `reboot_instance`), a rescue that
failed puts it in ERROR (Nova's `rescue_instance`), an unrescue that failed
leaves it RESCUED. A rescue's arguments (the rescue image) are the ones the
API journaled (`args`). A hard reboot
of a server in ERROR brings it back to ACTIVE when its guest exists.

Every step is idempotent, so a crash is recovered by running the operation
again while the server is still in one of its task states (`recover`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stowage.compute import states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError

__all__ = ["GuestAction", "ACTIONS", "STEPS", "run", "recover"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class GuestAction:
    """What one action does: its task states, agent method, event and outcome."""

    name: str  # the journaled operation and its one step
    tasks: tuple[str, ...]  # the task states the API may have left it in
    started: str | None  # the conductor's task state while the hypervisor works
    method: str  # the agent method
    event: str  # the instance action event (Nova's compute manager method)
    vm_state: str
    power_state: int


ACTIONS: dict[str, GuestAction] = {a.name: a for a in (
    GuestAction("reboot", (TASK.REBOOTING, TASK.REBOOT_STARTED), TASK.REBOOT_STARTED,
                "reboot_instance", "compute_reboot_instance", states.ACTIVE, states.RUNNING),
    GuestAction("reboot_hard", (TASK.REBOOTING_HARD, TASK.REBOOT_STARTED_HARD),
                TASK.REBOOT_STARTED_HARD, "reboot_instance", "compute_reboot_instance",
                states.ACTIVE, states.RUNNING),
    GuestAction("pause", (TASK.PAUSING,), None, "pause_instance", "compute_pause_instance",
                states.PAUSED, states.PAUSED_POWER),
    GuestAction("unpause", (TASK.UNPAUSING,), None, "unpause_instance",
                "compute_unpause_instance", states.ACTIVE, states.RUNNING),
    GuestAction("suspend", (TASK.SUSPENDING,), None, "suspend_instance",
                "compute_suspend_instance", states.SUSPENDED, states.SUSPENDED_POWER),
    GuestAction("resume", (TASK.RESUMING,), None, "resume_instance", "compute_resume_instance",
                states.ACTIVE, states.RUNNING),
    GuestAction("rescue", (TASK.RESCUING,), None, "rescue_instance", "compute_rescue_instance",
                states.RESCUED, states.RUNNING),
    GuestAction("unrescue", (TASK.UNRESCUING,), None, "unrescue_instance",
                "compute_unrescue_instance", states.ACTIVE, states.RUNNING),
    # Deferred delete (api/server_deferred_delete.py): the guest powered off, then on.
    GuestAction("soft_delete", (TASK.SOFT_DELETING,), None, "power_off_instance",
                "compute_soft_delete_instance", states.SOFT_DELETED, states.SHUTDOWN),
    GuestAction("restore", (TASK.RESTORING,), None, "power_on_instance",
                "compute_restore_instance", states.ACTIVE, states.RUNNING),
)}
# The journal steps of each operation (crash tests enumerate them).
STEPS: dict[str, tuple[str, ...]] = {name: (name,) for name in ACTIONS}


def run(ops: Ops, instance_uuid: str, name: str, journal: Journal,
        args: Mapping[str, Any] | None = None) -> None:
    """Do the action on the server's host and settle the instance on its outcome."""
    action = ACTIONS[name]
    inst = ops.instance(instance_uuid)
    assert inst.host is not None
    task = inst.task_state
    if action.started is not None and task != action.started:
        if not _settle(ops, inst.uuid, task, task_state=action.started):
            ops.finish_action(inst.uuid, "Error")
            return
        task = action.started
    journal.record(name, "executing")
    kwargs: dict[str, Any] = {}
    if action.method == "reboot_instance":
        kwargs["hard"] = name == "reboot_hard"
    elif name == "rescue":
        kwargs["image_ref"] = (args or {}).get("rescue_image_ref")
    try:
        with ops.event(inst.uuid, action.event, inst.host):
            ops.call_agent(inst.host, action.method, instance_uuid=inst.uuid, **kwargs)
    except MessagingError as exc:
        _failed(ops, inst, action, task, exc)
        journal.record(name, "failed", str(exc)[:1000])
        return
    settled = _settle(ops, inst.uuid, task, task_state=None, vm_state=action.vm_state,
                      power_state=action.power_state)
    journal.record(name, "done")
    ops.finish_action(inst.uuid, None if settled else "Error")


def _failed(ops: Ops, inst: Instance, action: GuestAction, task: str | None,
            exc: BaseException) -> None:
    """Nova's outcome of a failed action: task reverted, a fault, ERROR for a dead reboot."""
    values: dict[str, object] = {"task_state": None}
    if action.name == "soft_delete":
        values["deleted_at"] = None  # not soft deleted after all: nothing to reclaim
    if action.name == "rescue":
        values["vm_state"] = states.ERROR
    if action.method == "reboot_instance":
        power = ops.guest_power(inst.host, inst.uuid)
        values["power_state"] = power
        if power != states.RUNNING:
            values["vm_state"] = states.ERROR
    if _settle(ops, inst.uuid, task, **values):
        ops.fault(inst.uuid, exc, inst.host)
    ops.finish_action(inst.uuid, "Error")


def _settle(ops: Ops, uuid: str, task: str | None, **values: object) -> bool:
    """Leave the action's task state; False when something else owns the server now
    (a delete, or a hard reboot that took over a soft one)."""
    try:
        ops.update(uuid, expected_task_state=task, **values)
    except (NotFound, UnexpectedTaskState):
        LOG.info("instance %s left task state %s meanwhile; leaving it be", uuid, task)
        return False
    return True


def recover(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Run the action again while the server is still in one of its task states,
    else only finish the instance action."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    if inst.deleted:
        return
    if inst.task_state in ACTIONS[op.operation].tasks:
        run(ops, inst.uuid, op.operation, journal, op.args)
    else:
        ops.finish_action(inst.uuid, None if op.state(op.operation) == "done" else "Error")
