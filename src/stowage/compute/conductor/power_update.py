"""The `power-update` external event as a journaled operation (Nova's `power_update`).

A bare-metal service tells Compute that a node was powered outside it; the
server's guest and record follow the event's tag. The API records the
`start`/`stop` action and journals the operation `accepted` in one
transaction (api/server_external_events.py), then casts it here, as it does
the detach of a deleted port:

    API: action start|stop, journal `accepted` (tag) ──cast──> conductor
    conductor: the record already at the tag's power state -> nothing more (as before)
               journal power_update executing ──call──> agent power_update_instance
               (record := the tag's state if no other task runs, guest powered to it;
               idempotent) -> `compute_power_update` Success or Error
               journal power_update done (failed); action finished (Error)

Why journaled: the cast can be lost after the API answered 200, or the
process can die between the record and the guest, which left an action
open for ever and a record the power-state sync would then read the other
way (a guest still off under an ACTIVE record is *stopped* by the sync). A
conductor takes an interrupted one over (`recover`): before the step is
journaled `executing` it runs the event again; after, it calls the agent's
step again whatever the record says (the step checks the guest itself);
once `done` or `failed`, it only finishes the action.
"""

from __future__ import annotations

import logging

from stowage.compute import states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.errors import NotFound
from stowage.messaging import MessagingError

__all__ = ["OPERATION", "STEPS", "TARGET", "power_update", "recover"]

LOG = logging.getLogger(__name__)

OPERATION = "power_update"
STEPS = {OPERATION: ("power_update",)}
# The event's tag -> the power state it asks for.
TARGET = {"POWER_ON": states.RUNNING, "POWER_OFF": states.SHUTDOWN}


def power_update(ops: Ops, instance_uuid: str, tag: str, journal: Journal,
                 again: bool = False) -> None:
    """Bring the server's guest and record to `tag`'s power state (`again`: even if the
    record says it is there, as after a crash inside the step)."""
    try:
        inst = ops.instance(instance_uuid)
    except NotFound:
        return  # deleted meanwhile: the delete owns it
    if not again and inst.power_state == TARGET[tag]:
        LOG.info("power-update %s for %s: already there", tag, inst.uuid)
        return
    if inst.host is None:
        ops.finish_action(inst.uuid, "Error")
        return
    journal.record("power_update", "executing")
    try:
        with ops.event(inst.uuid, "compute_power_update", inst.host):
            ops.call_agent(inst.host, "power_update_instance", instance_uuid=inst.uuid,
                           tag=tag)
    except MessagingError as exc:  # refused (another task, a state it cannot take) or lost
        LOG.warning("power-update %s of %s failed: %s", tag, inst.uuid, exc)
        journal.record("power_update", "failed")
        ops.finish_action(inst.uuid, "Error")
        return
    journal.record("power_update", "done")
    ops.finish_action(inst.uuid)


def recover(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Forward: the event again, its step again, or only the action finished."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    if inst.deleted:
        return
    state = op.state("power_update")
    if state in ("done", "failed"):
        ops.finish_action(inst.uuid, None if state == "done" else "Error")
        return
    power_update(ops, inst.uuid, str(op.args["tag"]), journal, again=state is not None)
