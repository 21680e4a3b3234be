"""Rebuild in place: the server's guest recreated from an image on its own host.

    API: image_ref, name, metadata... := the new ones; task rebuilding; `accepted`
      ─> check_image        a new image: Nova's `_validate_image_traits_for_rebuild`
                            (its required traits neither forbidden by the flavor nor
                            missing from the providers the server's allocation is on)
      ─> rebuild_instance   task rebuild_block_device_mapping, then rebuild_spawning;
                            the agent recreates the guest (powered off for a server
                            that was stopped, as Nova's rebuild powers it off again)
      ─> ACTIVE (STOPPED if it was), launched_at now, task None

The allocation never changes: the server keeps its host and flavor, so
nothing is claimed or given back (Nova schedules to the same host with the
`rebuild` check type, which claims nothing). A new image refused by the
check is Nova's NoValidHost: the server goes to ERROR with a fault and its
old image_ref back. A guest that could not be recreated leaves it ERROR with
a fault (Nova's compute manager); rebuilding again is the way out, and it
works on a server whose guest is gone (the guest is created anew).

Every step is idempotent, so a crash is recovered by rebuilding again while
the server is still in a rebuild task state (`recover_rebuild`).
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.compute import instances, states
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal
from stowage.compute.instances import UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.messaging import MessagingError
from stowage.timeutil import utcnow

__all__ = ["rebuild_server", "recover_rebuild", "STEPS", "REBUILD_TASKS"]

LOG = logging.getLogger(__name__)

STEPS = ("check_image", "rebuild_instance")
REBUILD_TASKS = (TASK.REBUILDING, TASK.REBUILD_BLOCK_DEVICE_MAPPING, TASK.REBUILD_SPAWNING)
_FORBIDDEN = ("Image traits are part of forbidden traits in flavor associated with the "
              "server. Either specify a different image during rebuild or create a new "
              "server with the specified image and a compatible flavor.")
_MISSING = ("Image traits cannot be satisfied by the current resource providers. Either "
            "specify a different image during rebuild or create a new server with the "
            "specified image.")


class NoValidHost(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(f"No valid host was found. {reason}")


def rebuild_server(ops: Ops, instance_uuid: str, args: dict[str, Any],
                   journal: Journal) -> None:
    """`args` as the API journaled them: orig_image_ref, image_ref, image_traits,
    orig_vm_state, image (the new request spec image), preserve_ephemeral."""
    inst = ops.instance(instance_uuid)
    assert inst.host is not None
    journal.record("check_image", "executing")
    try:
        if args["orig_image_ref"] != args["image_ref"]:
            _check_image_traits(ops, inst, set(args.get("image_traits") or ()))
    except NoValidHost as exc:
        _refused(ops, inst.uuid, args, exc)
        journal.record("check_image", "failed", str(exc)[:1000])
        return
    journal.record("check_image", "done")
    if not _settle(ops, inst.uuid, task_state=TASK.REBUILD_BLOCK_DEVICE_MAPPING):
        return
    journal.record("rebuild_instance", "executing")
    power_on = args.get("orig_vm_state") != states.STOPPED
    try:
        _settle(ops, inst.uuid, task_state=TASK.REBUILD_SPAWNING, raise_gone=True)
        with ops.event(inst.uuid, "compute_rebuild_instance", inst.host):
            ops.call_agent(inst.host, "rebuild_in_place", instance_uuid=inst.uuid,
                           flavor=inst.flavor, power_on=power_on,
                           preserve_ephemeral=bool(args.get("preserve_ephemeral")))
    except MessagingError as exc:
        if _settle(ops, inst.uuid, task_state=None, vm_state=states.ERROR):
            ops.fault(inst.uuid, exc, inst.host)
        journal.record("rebuild_instance", "failed", str(exc)[:1000])
        ops.finish_action(inst.uuid, "Error")
        return
    except _Gone:
        ops.finish_action(inst.uuid, "Error")
        return
    settled = _settle(ops, inst.uuid, task_state=None, launched_at=utcnow(),
                      vm_state=states.ACTIVE if power_on else states.STOPPED,
                      power_state=states.RUNNING if power_on else states.SHUTDOWN)
    if settled and args.get("image") is not None:
        _remember_image(ops, inst.uuid, args["image"])
    journal.record("rebuild_instance", "done")
    ops.finish_action(inst.uuid, None if settled else "Error")


def _check_image_traits(ops: Ops, inst: instances.Instance, image_traits: set[str]) -> None:
    """Nova's conductor check of a new image on the server's own providers."""
    if not image_traits:
        return
    specs = (inst.flavor.get("extra_specs") or {}).items()
    forbidden = {key.split(":", 1)[1] for key, value in specs
                 if key.startswith("trait") and ":" in key and value == "forbidden"}
    if image_traits & forbidden:
        raise NoValidHost(_FORBIDDEN)
    held: set[str] = set()
    for provider in ops.placement.holding(inst.uuid).allocations:
        held.update(ops.placement.provider_part(provider, "traits"))
    if image_traits - held:
        raise NoValidHost(_MISSING)


def _refused(ops: Ops, uuid: str, args: dict[str, Any], exc: NoValidHost) -> None:
    """Nova: the old image back, ERROR with the reason; the allocation is untouched."""
    if _settle(ops, uuid, task_state=None, vm_state=states.ERROR,
               image_ref=args["orig_image_ref"]):
        ops.fault(uuid, exc, None)
    ops.finish_action(uuid, "Error")


def _remember_image(ops: Ops, uuid: str, image: dict[str, Any]) -> None:
    """The request spec follows the new image, so later moves ask for its traits."""
    with ops.api_db.write() as conn:
        try:
            spec = instances.request_spec(conn, uuid)
        except NotFound:
            return
        instances.save_request_spec(conn, uuid, {**spec, "image": image})


class _Gone(Exception):
    """The server left the rebuild (deleted meanwhile): the delete owns it now."""


def _settle(ops: Ops, uuid: str, raise_gone: bool = False, **values: Any) -> bool:
    """Move on from a rebuild task state; False (or _Gone) when a delete took the server."""
    try:
        ops.update(uuid, expected_task_state=REBUILD_TASKS, **values)
    except (NotFound, UnexpectedTaskState):
        LOG.info("instance %s left its rebuild meanwhile; leaving it to the delete", uuid)
        if raise_gone:
            raise _Gone() from None
        return False
    return True


def recover_rebuild(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Rebuild again while the server is still rebuilding; else finish the action."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    if inst.deleted:
        return
    if inst.task_state in REBUILD_TASKS:
        rebuild_server(ops, inst.uuid, op.args, journal)
    else:
        ops.finish_action(inst.uuid, None if op.state("rebuild_instance") == "done"
                          else "Error")
