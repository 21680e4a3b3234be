"""POST /servers/{id}/action {"rebuild": ...}: the server recreated from an image, in place.

    2.1   imageRef (required), name, metadata, adminPass, preserve_ephemeral,
          OS-DCF:diskConfig, accessIPv4/6, personality
    2.19  description
    2.54  key_name (null unsets it; an unknown name is 400 "Invalid key_name provided.");
          the answer shows key_name
    2.57  user_data (base64 or null, stored); personality gone; the answer shows user_data
    2.63  trusted_image_certificates (validated, policy `rebuild:trusted_certs`)
    2.75  the answer is the whole server view (before: the base view, as PUT)
    2.90  hostname

Allowed in ACTIVE, SHUTOFF and ERROR with no task state, on an unlocked
server (admins excepted) that has a host; 409 otherwise, in Nova's words.
The new image must exist (400 "Cannot find image for rebuild"), be active
and fit the flavor, as on create; a volume-backed server keeps its image
(Nova before 2.93). The metadata must fit the `metadata_items` quota (403).
The name, metadata, description, hostname, access IPs, disk config, key pair
(`server_boot_extras.rebuild_values`, checked as on create) and image_ref are
written with the task state `rebuilding` in one compare-and-swap; the
conductor (conductor/rebuild.py) checks a new image's traits against the
server's providers and recreates the guest. The answer (202) carries
`adminPass` (given, or generated) as Nova's does with
`enable_instance_password`.
"""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import quota_checks, states
from stowage.compute.api import server_boot_extras as extras
from stowage.compute.api import server_views as views
from stowage.compute.api.action_common import Handler, accept, cast_after_commit, start_action
from stowage.compute.api.common import authorize, validate_body
from stowage.compute.api.quota_common import over_quota, owner
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    get_server,
    move_state,
    target,
)
from stowage.compute.api.server_create import (
    check_description,
    check_name,
    generate_password,
)
from stowage.compute.api.server_create_schema import (
    DESCRIPTION,
    HOSTNAME,
    NAME,
    SETTABLE_HOSTNAME,
    TRUE_STRINGS,
    check_formats,
    create_schema,
)
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.image import images
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response

__all__ = ["ACTIONS"]

KEY_NAME, USER_DATA, TRUSTED_CERTS = 54, 57, 63
_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
_TRUSTED_CERTS = {"type": ["array", "null"], "minItems": 1, "maxItems": 50,
                  "uniqueItems": True, "items": {"type": "string", "minLength": 1}}


def _schema(minor: int) -> dict[str, Any]:
    """Nova's rebuild schema at 2.`minor`, from the create schema's field definitions."""
    create = create_schema(minor)["properties"]["server"]["properties"]
    props: dict[str, Any] = {key: copy.deepcopy(create[key]) for key in (
        "adminPass", "metadata", "OS-DCF:diskConfig", "accessIPv4", "accessIPv6")}
    props.update(name=NAME, imageRef={"type": "string", "pattern": _UUID},
                 preserve_ephemeral=copy.deepcopy(create["config_drive"]))
    if minor < USER_DATA:
        props["personality"] = {"type": "array"}
    if minor >= 19:
        props["description"] = DESCRIPTION
    if minor >= KEY_NAME:
        props["key_name"] = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}
    if minor >= USER_DATA:
        props["user_data"] = {"type": ["string", "null"], "maxLength": 65535}
    if minor >= TRUSTED_CERTS:
        props["trusted_image_certificates"] = _TRUSTED_CERTS
    if minor >= SETTABLE_HOSTNAME:
        props["hostname"] = HOSTNAME
    return {"type": "object",
            "properties": {"rebuild": {"type": "object", "properties": props,
                                       "required": ["imageRef"],
                                       "additionalProperties": False}},
            "required": ["rebuild"], "additionalProperties": False}


def _read_body(req: Request, body: Any) -> dict[str, Any]:
    """The validated `rebuild` object (formats and names checked as on create)."""
    data: dict[str, Any] = validate_body(body, _schema(req.version.minor))["rebuild"]
    check_formats({"server": {k: v for k, v in data.items() if v is not None}})
    if "name" in data:
        check_name(data["name"])
    if "description" in data:
        check_description(data["description"])
    return data


def _image(req: Request, conn: Connection, image_id: str, instance: inst.Instance
           ) -> images.Image:
    """The new image, usable with the server's flavor (Nova's `_check_requested_image`)."""
    try:
        with req.app.db.using(conn) as api:
            image = images.get(api, image_id, req.context)
    except NotFound:
        raise HTTPError(400, "Cannot find image for rebuild") from None
    if instance.volume_backed and image.id != instance.image_ref:
        raise HTTPError(400, f"Image {image.id} is unacceptable: Unable to rebuild with a "
                             "different image for a volume-backed server.")
    if image.status != "active":
        raise HTTPError(400, f"Image {image.id} is not active.")
    flavor = instance.flavor
    if int(flavor.get("memory_mb") or 0) < (image.min_ram or 0):
        raise HTTPError(400, "Flavor's memory is too small for requested image.")
    root_gb = int(flavor.get("root_gb") or 0)
    if not instance.volume_backed and root_gb and (image.min_disk or 0) > root_gb:
        gib = 1024 ** 3
        raise HTTPError(400, "Flavor's disk is smaller than the minimum size specified in "
                             f"image metadata. Flavor disk is {root_gb * gib} bytes, "
                             f"minimum size is {image.min_disk * gib} bytes.")
    return image


def _new_values(req: Request, conn: Connection, data: dict[str, Any],
                image: images.Image) -> dict[str, Any]:
    """The instance columns the rebuild sets with its task state."""
    if "metadata" in data:
        try:
            quota_checks.check_metadata_items(conn, owner(req), len(data["metadata"]))
        except quota_checks.OverQuota as exc:
            raise over_quota(exc) from None
    values: dict[str, Any] = {"image_ref": image.id, "task_state": TASK.REBUILDING,
                              "progress": 0}
    for key, column in (("name", "display_name"), ("metadata", "metadata"),
                        ("description", "display_description"), ("hostname", "hostname"),
                        ("user_data", "user_data")):
        if key in data:
            values[column] = data[key]
    values.update(extras.rebuild_values(conn, req, data, image.id, image.properties))
    return values


def _rebuild(req: Request, body: Any) -> Response:
    data = _read_body(req, body)
    password = data.get("adminPass") or generate_password()
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, "os_compute_api:servers:rebuild", target(instance))
        if data.get("trusted_image_certificates"):
            authorize(req, "os_compute_api:servers:rebuild:trusted_certs", target(instance))
        check_unlocked(req, instance)
        check_state(instance, "rebuild", (states.ACTIVE, states.STOPPED, states.ERROR))
        if instance.host is None:
            raise HTTPError(409, f"Instance {instance.uuid} is not ready")
        image = _image(req, conn, data["imageRef"], instance)
        traits = sorted(key.split(":", 1)[1] for key, value in image.properties.items()
                        if key.startswith("trait:") and value == "required")
        args = {"orig_image_ref": instance.image_ref, "image_ref": image.id,
                "image_traits": traits, "orig_vm_state": instance.vm_state,
                "image": {"id": image.id, "properties": dict(image.properties)},
                "preserve_ephemeral": _as_bool(data.get("preserve_ephemeral", False))}
        start_action(conn, req, instance, "rebuild")
        move_state(conn, instance, "rebuild", **_new_values(req, conn, data, image))
        op = accept(conn, req, instance, "rebuild", **args)
        rebuilt = inst.get(conn, instance.uuid)
        loaded = views.load_extras(conn, [rebuilt])
    views.finish_extras(req, loaded, [rebuilt], with_groups=True)
    cast_after_commit(
        req, instance,
        lambda c: c.rebuild_server(instance.uuid, req.context.request_id, args, op),
        {"task_state": None, "image_ref": instance.image_ref}, ("rebuild", op))
    view = views.updated(req, rebuilt, views.Shown.for_request(req), loaded)
    view["adminPass"] = password
    # Nova adds these to the answer whatever the view held: key_name from 2.54 and
    # user_data from 2.57, in place of the admin's OS-EXT-SRV-ATTR:user_data.
    view.pop("OS-EXT-SRV-ATTR:user_data", None)
    if req.version.minor >= KEY_NAME:
        view["key_name"] = rebuilt.key_name
    if req.version.minor >= USER_DATA:
        view["user_data"] = rebuilt.user_data
    return json_response({"server": view}, status=202)




def _as_bool(value: Any) -> bool:
    return value is True or str(value) in TRUE_STRINGS


ACTIONS: dict[str, Handler] = {"rebuild": _rebuild}
