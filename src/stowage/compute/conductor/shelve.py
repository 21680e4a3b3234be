"""Shelve and offload: park a server on its host, then free the host entirely.

    shelve:   power_off ─> snapshot (image-backed) ─> settle: SHELVED, shelved_* facts kept
                                 (the instance still holds its flavor on its host)
    offload:  shelve_offload (guest destroyed) ─> drop_allocation (ports unbound from the
              host first; a `done` evacuation's source too) ─> settle_offloaded:
              SHELVED_OFFLOADED, no host, no allocation

The API created the snapshot's image record (`<name>-shelved`); the offload
follows at once when `shelved_offload_time` is 0, or for a volume-backed
server, as in Nova; otherwise `offload_expired` (the conductor's
periodic) or `shelveOffload` runs it later. The offload drops the instance's
allocation before the records say SHELVED_OFFLOADED, as Nova does, and the
resource tracker never heals an instance that is offloading or offloaded.
The server's ports are unbound from the host just before (Nova's
`cleanup_instance_network_on_host`): no binding host, no
`binding:profile.allocation` nor VF keys, but still the server's (device_id
kept), so unshelve binds them again wherever it lands. A shelve that keeps
the server on its host changes nothing of its ports.

A failed shelve powers the guest back on (if it ran; paused or suspended
again if it was), deletes the image record, and leaves the server as it was
(ACTIVE, SHUTOFF, PAUSED or SUSPENDED) with a fault. A
failed offload before the guest is destroyed leaves it SHELVED, holding its
flavor on its host; after (Placement unreachable) it is ERROR on its host,
still holding its flavor there. A server deleted meanwhile is the delete's:
the steps stop, and the shelve removes the image it made.

Both only go forward after a crash (`recover_shelve`): every step is
idempotent, so the shelve or the offload is run again from where the
instance's task state says it stands.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import actions, aggregates, instances, migrations, services, states
from stowage.compute.conductor import port_homes, ports, snapshot
from stowage.compute.conductor.common import OnServer, Ops
from stowage.compute.conductor.tasks import Interrupted, Journal, Step, StepFailed, run_steps
from stowage.compute.conductor.tasks import accept as accept_operation
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.rpc import ConductorAPI
from stowage.compute.states import TASK
from stowage.config import ComputeSettings, Settings
from stowage.context import RequestContext, new_request_id
from stowage.db import Database
from stowage.errors import NotFound
from stowage.image import data, images
from stowage.timeutil import utcnow

__all__ = ["shelve_server", "offload_server", "recover_shelve", "offload_expired",
           "forget_image", "SHELVE_STEPS", "OFFLOAD_STEPS", "SHELVED_KEYS", "IMAGE_SERVICE"]

LOG = logging.getLogger(__name__)

# The journal steps, in order (crash tests enumerate them); a shelve that
# offloads at once runs the offload's steps under its own journal.
SHELVE_STEPS = ("power_off", "snapshot", "settle")
OFFLOAD_STEPS = ("shelve_offload", "drop_allocation", "settle_offloaded")
# Nova's system_metadata facts of a shelved server (cleared by unshelve).
SHELVED_KEYS = ("shelved_at", "shelved_image_id", "shelved_host")
# The conductor acts on image records as the service, not as the user.
IMAGE_SERVICE = RequestContext(user_id="compute", roles=("admin",))
_SHELVING = (TASK.SHELVING, TASK.SHELVING_IMAGE_PENDING_UPLOAD,
             TASK.SHELVING_IMAGE_UPLOADING)


def forget_image(api_db: Database, conn: Connection, image_id: str | None,
                 settings: Settings | None = None) -> None:
    """Delete the shelved snapshot's record, and its data from the store of `settings`
    (the deployment's; None: no data to remove); one already gone is fine (as Nova's
    warning). Images are the API database's (`api_db`), `conn` may be a cell's."""
    if image_id:
        with api_db.using(conn, write=True) as api, contextlib.suppress(NotFound):
            images.delete(api, image_id, IMAGE_SERVICE)
        if settings is not None:
            data.remove(settings, image_id)


@dataclass
class Shelving(OnServer):
    """What the steps of one shelve or offload share (`gone()`: OnServer)."""

    ops: Ops
    instance: Instance
    image_id: str | None = None
    offload: bool = False

    @property
    def host(self) -> str:
        assert self.instance.host is not None
        return self.instance.host


class PowerOff(Step):
    """The guest stops (a stopped one stays stopped); undone by powering it on again."""

    name = "power_off"

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh

    def before(self, conn: Connection) -> None:
        # Any shelving state: recovery runs a shelve again from its first step.
        instances.save(conn, self.sh.instance.uuid, expected_task_state=_SHELVING,
                       task_state=TASK.SHELVING)

    def execute(self) -> None:
        self.sh.ops.call_agent(self.sh.host, "power_off_instance",
                               instance_uuid=self.sh.instance.uuid)

    def rollback(self) -> None:
        """The guest as it was: running again, and paused or suspended again if it was."""
        sh = self.sh
        if sh.instance.vm_state == states.STOPPED or sh.gone():
            return
        uuid = sh.instance.uuid
        sh.ops.call_agent(sh.host, "power_on_instance", instance_uuid=uuid)
        again = {states.PAUSED: "pause_instance", states.SUSPENDED: "suspend_instance"}
        if sh.instance.vm_state in again:
            sh.ops.call_agent(sh.host, again[sh.instance.vm_state], instance_uuid=uuid)


class Snapshot(Step):
    """The root disk becomes the shelved image (Nova's pending-upload, then uploading)."""

    name = "snapshot"
    event = "compute_shelve_instance"

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh

    def event_host(self) -> str | None:
        return self.sh.host

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.sh.instance.uuid, expected_task_state=_SHELVING,
                       task_state=TASK.SHELVING_IMAGE_PENDING_UPLOAD)

    def execute(self) -> None:
        sh = self.sh
        assert sh.image_id is not None
        encoded = sh.ops.call_agent(sh.host, "snapshot_instance",
                                    instance_uuid=sh.instance.uuid, image_id=sh.image_id)
        sh.ops.update(sh.instance.uuid, expected_task_state=_SHELVING,
                      task_state=TASK.SHELVING_IMAGE_UPLOADING)
        snapshot.store_snapshot(sh.ops, sh.image_id, encoded)


class Settle(Step):
    """SHELVED, with Nova's shelved_* facts; straight on to offloading if it follows."""

    name = "settle"
    acts = False

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh

    def before(self, conn: Connection) -> None:
        sh = self.sh
        facts = {**(sh.instance.system_metadata or {}), "shelved_at": utcnow().isoformat(),
                 "shelved_image_id": sh.image_id, "shelved_host": sh.host}
        instances.save(conn, sh.instance.uuid, expected_task_state=_SHELVING,
                       vm_state=states.SHELVED, power_state=states.SHUTDOWN,
                       task_state=TASK.SHELVING_OFFLOADING if sh.offload else None,
                       system_metadata=facts)


class DestroyGuest(Step):
    """The host forgets the guest; nothing can bring it back, so later steps go forward."""

    name = "shelve_offload"
    event = "compute_shelve_offload_instance"

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh

    def event_host(self) -> str | None:
        return self.sh.host

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.sh.instance.uuid, expected_vm_state=states.SHELVED,
                       expected_task_state=TASK.SHELVING_OFFLOADING,
                       task_state=TASK.SHELVING_OFFLOADING)

    def execute(self) -> None:
        self.sh.ops.call_agent(self.sh.host, "shelve_offload_instance",
                               instance_uuid=self.sh.instance.uuid)


class DropAllocation(Step):
    """The ports unbound from the host, then the instance holds nothing in Placement any
    more (before the records say so); all idempotent.

    Nothing means nothing: Nova's offload removes every allocation of the
    instance, the dead source's of an evacuation included (the instance holds
    it there). Here each `done` evacuation's migration holds it, so its
    allocation is deleted too, the migration named first in the instance's
    `migrations.RELEASED_KEY` (it stays `done`, as Nova leaves it, for the
    source agent to destroy its guest when it is back).
    """

    name = "drop_allocation"

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh
        self.evacuations: list[str] = []

    def before(self, conn: Connection) -> None:
        uuid = self.sh.instance.uuid
        if instances.task_state(conn, uuid) != TASK.SHELVING_OFFLOADING:
            raise UnexpectedTaskState(f"Instance {uuid} is no longer offloading.")
        meta = dict(instances.get(conn, uuid).system_metadata or {})
        released = migrations.released(meta)
        self.evacuations = [m.uuid for m in migrations.for_instance(conn, uuid, ("done",))
                            if migrations.awaiting_source_cleanup(m) or m.uuid in released]
        if set(self.evacuations) - released:
            meta[migrations.RELEASED_KEY] = sorted(released | set(self.evacuations))
            instances.save(conn, uuid, system_metadata=meta)

    def execute(self) -> None:
        sh = self.sh
        port_homes.park(sh.ops, ports.load(sh.ops, sh.instance.uuid), sh.gone)
        for migration_uuid in self.evacuations:
            sh.ops.placement.delete_allocations(migration_uuid)
        sh.ops.placement.delete_allocations(sh.instance.uuid)


class SettleOffloaded(Step):
    """SHELVED_OFFLOADED: no host, no node; the server shows the zone it was in, as Nova's
    instance keeps the zone its last host gave it (scheduling follows the request spec)."""

    name = "settle_offloaded"
    acts = False

    def __init__(self, sh: Shelving) -> None:
        self.sh = sh

    def before(self, conn: Connection) -> None:
        sh = self.sh
        service = services.compute_service(conn, sh.host)
        with sh.ops.api_db.using(conn) as api:
            zone = aggregates.zone_of(api, service, sh.ops.settings.default_availability_zone)
        instances.save(conn, sh.instance.uuid, expected_task_state=TASK.SHELVING_OFFLOADING,
                       vm_state=states.SHELVED_OFFLOADED, task_state=None, host=None,
                       node=None, power_state=states.SHUTDOWN, availability_zone=zone)


def shelve_server(ops: Ops, instance_uuid: str, image_id: str | None,
                  journal: Journal) -> None:
    """Shelve; then offload under the same journal when `shelved_offload_time` is 0
    (always for a volume-backed server, which has no snapshot to come back from)."""
    try:
        inst = ops.instance(instance_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its shelve started", instance_uuid)
        _drop_image(ops, image_id)
        return
    offload = inst.volume_backed or ops.settings.shelved_offload_time == 0
    sh = Shelving(ops, inst, image_id, offload)
    steps: list[Step] = [PowerOff(sh), *([Snapshot(sh)] if image_id else []), Settle(sh)]
    try:
        run_steps(steps, journal, None if offload else ops.finishing(inst.uuid))
    except StepFailed as failure:
        _shelve_failed(sh, failure)
        return
    if offload:
        offload_server(ops, inst.uuid, journal)


def offload_server(ops: Ops, instance_uuid: str, journal: Journal) -> None:
    """Destroy the shelved guest and free its host (task state shelving_offloading)."""
    try:
        sh = Shelving(ops, ops.instance(instance_uuid))
    except NotFound:
        LOG.info("instance %s was deleted before its offload started", instance_uuid)
        return
    steps: list[Step] = [DestroyGuest(sh), DropAllocation(sh), SettleOffloaded(sh)]
    try:
        run_steps(steps, journal, ops.finishing(instance_uuid))
    except StepFailed as failure:
        _offload_failed(sh, failure)


def _drop_image(ops: Ops, image_id: str | None) -> None:
    snapshot.drop_image(ops, image_id)


def _shelve_failed(sh: Shelving, failure: StepFailed) -> None:
    """As before the shelve (the guest powered on again if it ran), with a fault; no image."""
    ops, inst = sh.ops, sh.instance
    LOG.warning("shelve of %s failed at %s: %s", inst.uuid, failure.step.name, failure.cause)
    _drop_image(ops, sh.image_id)
    if not sh.gone():
        with contextlib.suppress(NotFound, UnexpectedTaskState):  # deleted just now
            ops.update(inst.uuid, expected_task_state=_SHELVING, vm_state=inst.vm_state,
                       task_state=None, power_state=ops.guest_power(inst.host, inst.uuid))
            ops.fault(inst.uuid, failure.cause, inst.host)
    ops.finish_action(inst.uuid, "Error")


def _offload_failed(sh: Shelving, failure: StepFailed) -> None:
    """The records follow what is left, unless the server was deleted meanwhile (the delete's):

    guest intact               SHELVED on its host, holding its flavor there
    guest gone, allocation     ERROR on its host, still holding its flavor there
    guest and allocation gone  SHELVED_OFFLOADED (only the records had failed)
    """
    ops, inst = sh.ops, sh.instance
    LOG.warning("offload of %s failed at %s: %s", inst.uuid, failure.step.name, failure.cause)
    values: dict[str, Any] = {"task_state": None, "vm_state": states.ERROR}
    if isinstance(failure.step, DestroyGuest):
        values.update(vm_state=states.SHELVED, expected_task_state=TASK.SHELVING_OFFLOADING)
    elif isinstance(failure.step, SettleOffloaded):
        values.update(vm_state=states.SHELVED_OFFLOADED, host=None, node=None)
    if not sh.gone():
        with contextlib.suppress(NotFound, UnexpectedTaskState):
            ops.update(inst.uuid, **values)
            ops.fault(inst.uuid, failure.cause, inst.host)
    ops.finish_action(inst.uuid, "Error")


# --- the periodic offload -------------------------------------------------------
def offload_expired(settings: ComputeSettings, db: Database, conductor: ConductorAPI) -> None:
    """Nova's `_poll_shelved_instances`: offload servers shelved longer than the setting."""
    keep = settings.shelved_offload_time
    if keep <= 0:
        return
    cutoff = utcnow() - datetime.timedelta(seconds=keep)
    with db.read() as conn:
        shelved = instances.list_instances(conn, {"vm_state": states.SHELVED})
    for inst in shelved:
        shelved_at = _shelved_at(inst)
        if inst.task_state is not None or shelved_at is None or shelved_at >= cutoff:
            continue
        request_id = new_request_id()
        try:
            with db.write() as conn:
                instances.save(conn, inst.uuid, expected_vm_state=states.SHELVED,
                               expected_task_state=None, task_state=TASK.SHELVING_OFFLOADING)
                actions.start_action(conn, inst.uuid, "shelveOffload", request_id,
                                     inst.user_id, inst.project_id)
                operation = accept_operation(conn, "shelve_offload", inst.uuid, request_id)
        except (NotFound, UnexpectedTaskState):
            continue  # someone acts on it right now
        conductor.shelve_offload(inst.uuid, request_id, operation)


def _shelved_at(inst: Instance) -> datetime.datetime | None:
    raw = (inst.system_metadata or {}).get("shelved_at")
    try:
        return datetime.datetime.fromisoformat(str(raw)) if raw else None
    except ValueError:
        return None


# --- crash recovery: forward ----------------------------------------------------
def recover_shelve(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Run the shelve or the offload again from where the task state says it stands.

    Serves both `shelve` and `shelve_offload`; the shelve's image is the one
    the API journaled when it accepted it.
    """
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    image_id = op.args.get("image_id")
    if inst.deleted or inst.task_state == TASK.DELETING:
        if op.operation == "shelve" and inst.vm_state not in (states.SHELVED,
                                                              states.SHELVED_OFFLOADED):
            _drop_image(ops, image_id)  # the delete only removes the image of a shelved one
        ops.finish_action(inst.uuid, "Error")
    elif inst.task_state in _SHELVING:
        shelve_server(ops, inst.uuid, image_id, journal)
    elif inst.task_state == TASK.SHELVING_OFFLOADING and inst.vm_state == states.SHELVED:
        offload_server(ops, inst.uuid, journal)
    else:
        done = inst.vm_state in (states.SHELVED, states.SHELVED_OFFLOADED)
        ops.finish_action(inst.uuid, None if done else "Error")
