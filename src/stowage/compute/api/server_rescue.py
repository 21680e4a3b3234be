"""rescue, unrescue: boot a server from a rescue disk on its host, and back (Nova's rules).

    action    allowed in (no task)       task_state   result     answer
    rescue    active | stopped | error   rescuing     RESCUED    200 {"adminPass": ...}
    unrescue  rescued                    unrescuing   ACTIVE     202

Both are guest actions on the server's own host (`conductor/guest_actions.py`):
the allocation, host and flavor stay, so rescue changes nothing Placement or
the quota count. The rescue disk is `rescue_image_ref` when given (it must be
an image the caller sees, and active: else 400 "Requested rescue image ... is
not supported", Nova's UnsupportedRescueImage), else the server's own image.
The answer carries the guest's admin password, the one given or a generated
one, unless `enable_instance_password` is off (then `{}`), as Nova's.

A volume-backed server cannot be rescued (400, Nova's answer below 2.87; the
2.87 stable-device rescue of volume-backed servers needs volumes, which are
not served). A RESCUED server only accepts unrescue, delete, lock and unlock
among the actions: every other one's allowed states leave RESCUED out, as
Nova's state checks do.

Policies: `os_compute_api:os-rescue` and `os_compute_api:os-unrescue`, the
project's members or admins.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from stowage.compute import instances as inst
from stowage.compute import states
from stowage.compute.api.action_common import Handler
from stowage.compute.api.common import validate_body
from stowage.compute.api.server_create import generate_password
from stowage.compute.api.server_guest_actions import guest_action
from stowage.compute.states import TASK
from stowage.errors import NotFound
from stowage.image import images
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response

__all__ = ["ACTIONS"]

_UUID = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
_RESCUE_SCHEMA = {
    "type": "object",
    "properties": {"rescue": {
        "type": ["object", "null"],
        "properties": {"adminPass": {"type": "string"},
                       "rescue_image_ref": {"type": "string", "pattern": _UUID}},
        "additionalProperties": False}},
    "required": ["rescue"], "additionalProperties": False,
}
_UNRESCUE_SCHEMA = {"type": "object", "required": ["unrescue"], "additionalProperties": False,
                    "properties": {"unrescue": {}}}
_RESCUABLE = (states.ACTIVE, states.STOPPED, states.ERROR)


def _rescue(req: Request, body: Any) -> Response:
    args = validate_body(body, _RESCUE_SCHEMA)["rescue"] or {}
    password = args.get("adminPass") or generate_password()
    image_ref = args.get("rescue_image_ref")

    def prepare(conn: Connection, instance: inst.Instance) -> dict[str, Any]:
        if instance.volume_backed:
            raise HTTPError(400, f"Instance {instance.uuid} cannot be rescued: Cannot rescue "
                                 "a volume-backed instance")
        if image_ref is not None:
            _check_rescue_image(req, conn, image_ref)
        return {"rescue_image_ref": image_ref or instance.image_ref}

    guest_action(req, "rescue", "rescue", "os_compute_api:os-rescue", _RESCUABLE,
                 TASK.RESCUING, prepare=prepare)
    plane = req.app.plane  # the control plane's settings when it runs here (tests change it)
    settings = req.app.settings.compute if plane is None else plane.settings
    if not settings.enable_instance_password:
        return json_response({})
    return json_response({"adminPass": password})


def _check_rescue_image(req: Request, conn: Connection, image_ref: str) -> None:
    """The rescue disk must be an image the caller sees, with data (Nova: 400)."""
    try:
        with req.app.db.using(conn) as api:
            image = images.get(api, image_ref, req.context)
    except NotFound:
        image = None
    if image is None or image.status != "active":
        raise HTTPError(400, f"Requested rescue image '{image_ref}' is not supported")


def _unrescue(req: Request, body: Any) -> Response:
    validate_body(body, _UNRESCUE_SCHEMA)
    guest_action(req, "unrescue", "unrescue", "os_compute_api:os-unrescue", (states.RESCUED,),
                 TASK.UNRESCUING)
    return empty_response(202)




# action name -> handler, merged into POST /servers/{id}/action (server_actions.py)
ACTIONS: dict[str, Handler] = {
    "rescue": _rescue,
    "unrescue": _unrescue,
}
