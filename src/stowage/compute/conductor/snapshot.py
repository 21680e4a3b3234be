"""createImage, createBackup: the server's root disk becomes the data of the image the
API created; a backup then rotates the server's older backups of its type.

    API: image record (queued) + task_state image_snapshot (image_backup), journal
         `accepted` ──cast──>
    conductor: task image_pending_upload ──call──> agent snapshot_instance (the disk's bytes)
               task image_uploading ─> image/data.py upload (queued -> saving -> active,
               size, checksum, os_hash) ─> backup: rotation ─> task None; the
               instance action finishes

A backup's rotation is Nova's `_rotate_backups`: of the server's images with
`image_type` backup and the same `backup_type`, the oldest beyond `rotation`
are deleted (all of them, the new one too, for a rotation of 0).

The server stays as it was (vm_state, power state, host, allocation): Nova
snapshots a running guest live, and so does the simulated host.

A failure (the agent raised, the host is unreachable, the store refused the
bytes) deletes the image and clears the task state with a fault, as Nova's
compute manager does; an image the user deleted during the upload is only
logged (Nova's ImageNotFound during a snapshot); a server deleted meanwhile
takes the image along. The step is idempotent (an image already active is not uploaded again), so a
crash is recovered by running it again while the task state is a snapshot's.

`store_snapshot` is shared with the shelve (shelve.py) and the cross-cell
move (cross_cell.py): every image compute makes gets its bytes the same way.
"""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances
from stowage.compute.conductor.common import Ops
from stowage.compute.conductor.tasks import Interrupted, Journal, Step, StepFailed, run_steps
from stowage.compute.instances import Instance, UnexpectedTaskState
from stowage.compute.states import TASK
from stowage.errors import Conflict, NotFound
from stowage.image import data, images
from stowage.image.data import SERVICE

__all__ = ["STEPS", "SNAPSHOTTING", "snapshot_server", "recover_snapshot", "store_snapshot",
           "drop_image", "rotate_backups"]

LOG = logging.getLogger(__name__)

STEPS = ("snapshot",)
SNAPSHOTTING = (TASK.IMAGE_SNAPSHOT, TASK.IMAGE_BACKUP, TASK.IMAGE_PENDING_UPLOAD,
                TASK.IMAGE_UPLOADING)


def store_snapshot(ops: Ops, image_id: str, encoded: str) -> None:
    """The agent's snapshot (base64 bytes) as the image's data, the image active after.

    Without the deployment's settings (unit tests' planes) only the size is
    recorded. An image already active was stored by an earlier try: done.
    """
    raw = base64.b64decode(encoded)
    if ops.image_settings is None:
        with ops.api_db.write() as conn:
            images.record_upload(conn, image_id, SERVICE, len(raw))
        return
    try:
        data.upload(ops.api_db, ops.image_settings, image_id, [raw])
    except Conflict:
        with ops.api_db.read() as conn:
            if images.get(conn, image_id, SERVICE).status != "active":
                raise


def drop_image(ops: Ops, image_id: str | None) -> None:
    """Delete a snapshot's image and its data; one already gone is fine."""
    if not image_id:
        return
    with ops.api_db.write() as conn, contextlib.suppress(NotFound):
        images.delete(conn, image_id, SERVICE)
    if ops.image_settings is not None:
        data.remove(ops.image_settings, image_id)


def rotate_backups(ops: Ops, instance_uuid: str, backup_type: str, rotation: int,
                   new: str) -> None:
    """Delete the server's oldest backups of `backup_type` beyond `rotation` (Nova's).

    Newest first by `created_at`, which MySQL keeps to the second: among backups
    of the same second the one just made (`new`) counts as the newest.
    """
    wanted = {"image_type": "backup", "backup_type": backup_type,
              "instance_uuid": instance_uuid}
    with ops.api_db.read() as conn:
        found = images.list_images(conn, SERVICE, images.ListQuery(properties=wanted))
    found.sort(key=lambda i: (i.created_at, i.id == new), reverse=True)
    for image in found[rotation:]:
        LOG.info("rotating out backup %s of %s", image.id, instance_uuid)
        drop_image(ops, image.id)


class TakeSnapshot(Step):
    """Nova's pending-upload, then uploading: the agent reads the disk, the store keeps it;
    a backup's rotation after (`backup`: backup_type and rotation)."""

    name = "snapshot"

    def __init__(self, ops: Ops, instance: Instance, image_id: str,
                 backup: Mapping[str, Any] | None = None) -> None:
        self.ops, self.instance, self.image_id = ops, instance, image_id
        self.backup = backup
        self.event = "compute_backup_instance" if backup else "compute_snapshot_instance"

    def event_host(self) -> str | None:
        return self.instance.host

    def before(self, conn: Connection) -> None:
        instances.save(conn, self.instance.uuid, expected_task_state=SNAPSHOTTING,
                       task_state=TASK.IMAGE_PENDING_UPLOAD)

    def execute(self) -> None:
        assert self.instance.host is not None
        encoded = self.ops.call_agent(self.instance.host, "snapshot_instance",
                                      instance_uuid=self.instance.uuid, image_id=self.image_id)
        self.ops.update(self.instance.uuid, expected_task_state=SNAPSHOTTING,
                        task_state=TASK.IMAGE_UPLOADING)
        try:
            store_snapshot(self.ops, self.image_id, encoded)
        except NotFound:  # the user deleted the image meanwhile: Nova only logs it
            LOG.warning("image %s was deleted during the snapshot of %s", self.image_id,
                        self.instance.uuid)
        if self.backup:
            rotate_backups(self.ops, self.instance.uuid, str(self.backup["backup_type"]),
                           int(self.backup["rotation"]), self.image_id)

    def after(self, conn: Connection) -> None:
        instances.save(conn, self.instance.uuid, expected_task_state=SNAPSHOTTING,
                       task_state=None)


def snapshot_server(ops: Ops, instance_uuid: str, image_id: str, journal: Journal,
                    backup: Mapping[str, Any] | None = None) -> None:
    """Take the snapshot into `image_id` (and rotate, for a backup); on failure no image
    and no task state."""
    try:
        inst = ops.instance(instance_uuid)
    except NotFound:
        LOG.info("instance %s was deleted before its snapshot started", instance_uuid)
        drop_image(ops, image_id)
        return
    try:
        run_steps([TakeSnapshot(ops, inst, image_id, backup)], journal,
                  ops.finishing(inst.uuid))
    except StepFailed as failure:
        _failed(ops, inst, image_id, failure)


def _failed(ops: Ops, inst: Instance, image_id: str, failure: StepFailed) -> None:
    LOG.warning("snapshot of %s failed: %s", inst.uuid, failure.cause)
    drop_image(ops, image_id)
    with contextlib.suppress(NotFound, UnexpectedTaskState):  # deleted meanwhile
        ops.update(inst.uuid, expected_task_state=SNAPSHOTTING, task_state=None)
        ops.fault(inst.uuid, failure.cause, inst.host)
    ops.finish_action(inst.uuid, "Error")


def recover_snapshot(ops: Ops, op: Interrupted, journal: Journal) -> None:
    """Again while the server is in a snapshot's task state; else the image goes, unless
    the snapshot had finished (its step `done`)."""
    assert op.instance_uuid is not None
    inst = ops.instance_any(op.instance_uuid)
    image_id = str(op.args.get("image_id") or "")
    if not inst.deleted and inst.task_state in SNAPSHOTTING:
        snapshot_server(ops, inst.uuid, image_id, journal, op.args.get("backup"))
        return
    done = op.state("snapshot") == "done"
    if not done:
        drop_image(ops, image_id)
    if not inst.deleted:
        ops.finish_action(inst.uuid, None if done else "Error")
