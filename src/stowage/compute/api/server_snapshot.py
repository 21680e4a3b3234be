"""POST /servers/{id}/action createImage {"name", "metadata"} and createBackup {"name",
"backup_type", "rotation", "metadata"}: an image of the server's root disk.

    allowed in (no task)                     task_state      answer
    active | stopped | paused | suspended    image_snapshot  202; below 2.45 a Location
                                             (image_backup)  header, from 2.45 {"image_id"}

Nova's checks, in its order: the body (name required, no leading or
trailing blanks; metadata keys and values at most 255 characters; a
backup's rotation a non-negative integer), policy
(`os_compute_api:servers:create_image`, `os_compute_api:os-create-backup`:
members or admins), up to 2.38 the metadata items against the owner's
`metadata_items` quota (403 "Image metadata limit exceeded"), the state
(409 "Cannot 'createImage' instance ... while it is in ..."). A locked
server is not refused (Nova: a lock guards against changes, and a snapshot
changes nothing). A volume-backed server is refused with 400: Nova
snapshots its volumes, and volumes are not served (docs/compatibility.md);
for a backup that is Nova's own answer.

A backup's image has `image_type` backup and `backup_type`; after its upload
the conductor deletes the server's oldest backups of that type beyond
`rotation` (conductor/snapshot.py). Below 2.45 a rotation of 0 answers no
Location (the image is rotated out at once).

The image record is created here, queued, in the transaction that accepts
the operation (as the shelve's, server_shelve.py), owned by the server's
project with Nova's properties: image_type snapshot, instance_uuid, user_id,
base_image_ref, owner_project_name / owner_user_name when the token names
them, the base image's own properties and min_ram as Nova inherits them
(`_NON_INHERITABLE` left out), min_disk at least the flavor's root disk, and
the request's metadata last. An admin snapshotting another project's server
makes it `shared` with `instance_owner`, as the shelve does. The conductor
(conductor/snapshot.py) uploads the guest's disk into it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import quota_checks, states
from stowage.compute.api.action_common import Handler, accept, cast_after_commit, start_action
from stowage.compute.api.common import authorize, validate_body
from stowage.compute.api.quota_common import owner
from stowage.compute.api.server_common import (
    check_state,
    get_server,
    move_state,
    target,
)
from stowage.compute.conductor.shelve import IMAGE_SERVICE, forget_image
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.image import images
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response

__all__ = ["ACTIONS", "snapshot_record"]

IMAGE_ID_BODY = 45
IMAGE_META_QUOTA_MAX = 38  # Nova checks the metadata quota up to 2.38 only
_NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^\S(.*\S)?$"}
_METADATA = {"type": "object",
             "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string",
                                                                  "maxLength": 255}},
             "additionalProperties": False}
_SCHEMA = {
    "type": "object",
    "properties": {"createImage": {
        "type": "object", "properties": {"name": _NAME, "metadata": _METADATA},
        "required": ["name"], "additionalProperties": False}},
    "required": ["createImage"], "additionalProperties": False,
}
_BACKUP_SCHEMA = {
    "type": "object",
    "properties": {"createBackup": {
        "type": "object",
        "properties": {
            "name": _NAME,
            "backup_type": {"type": "string"},
            "rotation": {"type": ["integer", "string"], "pattern": "^[0-9]*$", "minimum": 0,
                         "minLength": 1},
            "metadata": _METADATA,
        },
        "required": ["name", "backup_type", "rotation"], "additionalProperties": False}},
    "required": ["createBackup"], "additionalProperties": False,
}
_SNAPSHOTTABLE = (states.ACTIVE, states.STOPPED, states.PAUSED, states.SUSPENDED)
# Nova's NON_INHERITABLE_IMAGE_PROPERTIES, and what the new image gets anew.
_NON_INHERITABLE = frozenset({
    "cache_in_nova", "bittorrent", "img_signature_hash_method", "img_signature",
    "img_signature_key_type", "img_signature_certificate_uuid", "instance_uuid",
    "user_id", "image_type", "base_image_ref", "owner_project_name", "owner_user_name",
    "instance_owner", "image_location", "image_state", "owner_id"})


def _create_image(req: Request, body: Any) -> Response:
    args = validate_body(body, _SCHEMA)["createImage"]
    return _snapshot(req, "createImage", "os_compute_api:servers:create_image", args["name"],
                     args.get("metadata") or {}, None)


def _create_backup(req: Request, body: Any) -> Response:
    args = validate_body(body, _BACKUP_SCHEMA)["createBackup"]
    backup = {"backup_type": args["backup_type"], "rotation": int(args["rotation"])}
    metadata = {**(args.get("metadata") or {}), "backup_type": args["backup_type"]}
    return _snapshot(req, "createBackup", "os_compute_api:os-create-backup", args["name"],
                     metadata, backup)


def _snapshot(req: Request, action: str, rule: str, name: str, metadata: dict[str, str],
              backup: dict[str, Any] | None) -> Response:
    """Both actions, in Nova's order: policy, metadata quota (to 2.38), state, the image
    record, task state, action and journal; the cast; the answer by microversion."""
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, rule, target(instance))
        if req.version.minor <= IMAGE_META_QUOTA_MAX:
            _check_metadata_quota(req, conn, instance, metadata)
        if instance.volume_backed and backup is None:
            authorize(req, "os_compute_api:servers:create_image:allow_volume_backed",
                      target(instance))
        check_state(instance, action, _SNAPSHOTTABLE)
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        if instance.volume_backed:
            raise HTTPError(400, "Backup is not supported for volume-backed instances."
                            if backup else "Snapshots of volume-backed servers are not "
                            "supported: volumes are not served.")
        image_id = snapshot_record(req, conn, instance, name, metadata,
                                   "backup" if backup else "snapshot")
        start_action(conn, req, instance, action)
        move_state(conn, instance, action,
                   task_state=TASK.IMAGE_BACKUP if backup else TASK.IMAGE_SNAPSHOT)
        op = accept(conn, req, instance, "snapshot", image_id=image_id,
                    **({"backup": backup} if backup else {}))
    try:
        cast_after_commit(
            req, instance,
            lambda c: c.snapshot_server(instance.uuid, req.context.request_id, image_id, op,
                                        backup),
            {"task_state": None}, ("snapshot", op))
    except Exception:
        with req.app.db.write() as api:
            forget_image(req.app.db, api, image_id, req.app.settings)
        raise
    if req.version.minor >= IMAGE_ID_BODY:
        return json_response({"image_id": image_id}, status=202)
    if backup is not None and backup["rotation"] == 0:
        return empty_response(202)  # Nova: no Location for a backup rotated out at once
    return empty_response(202).header("location", req.url(f"/images/{image_id}"))


def _check_metadata_quota(req: Request, conn: Connection, instance: inst.Instance,
                          metadata: dict[str, str]) -> None:
    try:
        quota_checks.check_metadata_items(conn, owner(req, instance.project_id,
                                                      instance.user_id), len(metadata))
    except quota_checks.OverQuota:
        raise HTTPError(403, "Image metadata limit exceeded") from None


def snapshot_record(req: Request, conn: Connection, instance: inst.Instance, name: str,
                    extra: dict[str, str], image_type: str = "snapshot") -> str:
    """The queued image a snapshot uploads into, owned by the server's project (Nova's
    rules; shared with the shelve, server_shelve.py)."""
    ctx = req.context
    foreign = ctx.project_id != instance.project_id
    with req.app.db.using(conn, write=True) as api:
        base = _base_image(api, instance)
        values: dict[str, Any] = {
            **({k: v for k, v in base.properties.items() if k not in _NON_INHERITABLE}
               if base is not None else {}),
            "name": name, "owner": instance.project_id,
            "visibility": "shared" if foreign else "private",
            "disk_format": "raw", "container_format": "bare",
            "min_ram": base.min_ram if base is not None else 0,
            "min_disk": max(int(instance.flavor.get("root_gb") or 0),
                            base.min_disk if base is not None else 0),
            "instance_uuid": instance.uuid, "user_id": str(ctx.user_id),
            "image_type": image_type, "base_image_ref": instance.image_ref or ""}
        names = {"owner_project_name": ctx.project_name, "owner_user_name": ctx.user_name}
        values.update({k: v for k, v in names.items() if v})
        if foreign:
            values["instance_owner"] = instance.project_id
        values.update(extra)
        return images.create(api, ctx, values).id


def _base_image(api: Connection, instance: inst.Instance) -> images.Image | None:
    if not instance.image_ref:
        return None
    try:
        return images.get(api, instance.image_ref, IMAGE_SERVICE)
    except NotFound:
        return None  # deleted since the boot: nothing to inherit


# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {"createImage": _create_image, "createBackup": _create_backup}
