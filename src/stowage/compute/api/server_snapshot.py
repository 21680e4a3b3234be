"""POST /servers/{id}/action {"createImage": {"name", "metadata"}}: snapshot a server.

    allowed in (no task)                     task_state      answer
    active | stopped | paused | suspended    image_snapshot  202; below 2.45 a Location
                                                             header, from 2.45 {"image_id"}

Nova's checks, in its order: the body (name required, no leading or
trailing blanks; metadata keys and values at most 255 characters), policy
`os_compute_api:servers:create_image` (members or admins), the lock, the
state (409 "Cannot 'createImage' instance ... while it is in ..."), then the
metadata items against the owner's `metadata_items` quota (403 "Image
metadata limit exceeded"). A volume-backed server is refused with 400:
Nova snapshots its volumes, and volumes are not served (docs/compatibility.md).

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
    check_unlocked,
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
_SCHEMA = {
    "type": "object",
    "properties": {"createImage": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 255,
                     "pattern": r"^\S(.*\S)?$"},
            "metadata": {"type": "object",
                         "patternProperties": {"^[a-zA-Z0-9-_:. ]{1,255}$": {
                             "type": "string", "maxLength": 255}},
                         "additionalProperties": False}},
        "required": ["name"], "additionalProperties": False}},
    "required": ["createImage"], "additionalProperties": False,
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
    metadata: dict[str, str] = args.get("metadata") or {}
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:create_image", target(instance))
        if instance.volume_backed:
            authorize(req, "os_compute_api:servers:create_image:allow_volume_backed",
                      target(instance))
        check_unlocked(req, instance)
        check_state(instance, "createImage", _SNAPSHOTTABLE)
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        if instance.volume_backed:
            raise HTTPError(400, "Snapshots of volume-backed servers are not supported: "
                                 "volumes are not served.")
        _check_metadata_quota(req, conn, instance, metadata)
        image_id = snapshot_record(req, conn, instance, args["name"], metadata)
        start_action(conn, req, instance, "createImage")
        move_state(conn, instance, "createImage", task_state=TASK.IMAGE_SNAPSHOT)
        op = accept(conn, req, instance, "snapshot", image_id=image_id)
    try:
        cast_after_commit(
            req, instance,
            lambda c: c.snapshot_server(instance.uuid, req.context.request_id, image_id, op),
            {"task_state": None}, ("snapshot", op))
    except Exception:
        with req.app.db.write() as api:
            forget_image(req.app.db, api, image_id)
        raise
    if req.version.minor >= IMAGE_ID_BODY:
        return json_response({"image_id": image_id}, status=202)
    return empty_response(202).header("location", req.url(f"/images/{image_id}"))


def _check_metadata_quota(req: Request, conn: Connection, instance: inst.Instance,
                          metadata: dict[str, str]) -> None:
    try:
        quota_checks.check_metadata_items(conn, owner(req, instance.project_id,
                                                      instance.user_id), len(metadata))
    except quota_checks.OverQuota:
        raise HTTPError(403, "Image metadata limit exceeded") from None


def snapshot_record(req: Request, conn: Connection, instance: inst.Instance, name: str,
                    extra: dict[str, str]) -> str:
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
            "image_type": "snapshot", "base_image_ref": instance.image_ref or ""}
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
ACTIONS: dict[str, Handler] = {"createImage": _create_image}
