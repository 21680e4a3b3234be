"""Server actions that reach the guest: os-getConsoleOutput and injectNetworkInfo.

    action               policy                      answer
    os-getConsoleOutput  project member (or admin)   200 {"output": the last `length` lines}
    injectNetworkInfo    admin                       202, cast to the server's host

Both go to the agent of the server's host, as Nova's API goes to the compute
service: a server without a host is 409 "Instance X is not ready", a host
that is down 409 "Service is unavailable at this time." The console is the
guest's whether it runs or not (a stopped guest's log is still there, as a
libvirt console file is); a host with no guest for the server is 404 "Guest
does not have a console available." (Nova's ConsoleNotAvailable). `length`
is an integer or a string of one, at least -1; -1 or none means the whole
log, 0 nothing. Control characters other than tab and newline are removed
from the output, as Nova does. injectNetworkInfo refuses a locked server
unless the caller is admin (Nova's check_instance_lock) and records no
instance action, as in Nova; the agent hands the guest its ports' addresses.

`agent_call` is shared with the diagnostics handler (server_diagnostics.py),
`agent_cast` with the external events (server_external_events.py).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from stowage.compute import instances as inst
from stowage.compute.api.action_common import Handler, check_host_up, moving_server
from stowage.compute.api.common import authorize, validate_body
from stowage.compute.api.server_common import check_unlocked, target
from stowage.compute.rpc import agent_target
from stowage.messaging import MessagingError, RemoteError
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response

__all__ = ["ACTIONS", "agent_call", "agent_cast", "guest_server"]

LOG = logging.getLogger(__name__)

_CONSOLE_SCHEMA = {
    "type": "object",
    "properties": {"os-getConsoleOutput": {
        "type": "object",
        "properties": {"length": {"type": ["integer", "string", "null"],
                                  "pattern": "^-?[0-9]+$", "minimum": -1}},
        "additionalProperties": False}},
    "required": ["os-getConsoleOutput"],
    "additionalProperties": False,
}
# What XML could not carry once; Nova still strips it.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")
# Nova's ConsoleNotAvailable, for a host that has no guest for the server.
_NO_CONSOLE = (404, "Guest does not have a console available.")


def guest_server(req: Request, policy: str) -> inst.Instance:
    """The caller's server, authorized, on a host that is up (409s as the docstring says)."""
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance, service = moving_server(req, conn)
    authorize(req, policy, target(instance))
    check_host_up(req, instance, service)
    return instance


def agent_call(req: Request, instance: inst.Instance, method: str,
               answers: dict[str, tuple[int, str | None]], **kwargs: Any) -> Any:
    """Call `method` on the server's host's agent; a refusal whose type `answers` names
    is that status, with that message (None: the agent's own words)."""
    plane = req.app.plane
    try:
        if plane is None:
            raise MessagingError("the compute control plane is not running in this process")
        return plane.transport.call(agent_target(instance.host or ""), method,
                                    instance_uuid=instance.uuid, **kwargs)
    except RemoteError as exc:
        answer = answers.get(exc.exc_type)
        if answer is None:
            raise
        raise HTTPError(answer[0], answer[1] or exc.message) from None


def agent_cast(req: Request, host: str, method: str, **kwargs: Any) -> None:
    """Cast `method` to the host's agent; a cast Nova sends and forgets, so one that
    cannot be sent is logged, not answered."""
    plane = req.app.plane
    try:
        if plane is None:
            raise MessagingError("the compute control plane is not running in this process")
        plane.transport.cast(agent_target(host), method, **kwargs)
    except MessagingError:
        LOG.exception("could not cast %s to host %s", method, host)


def _length(body: Any) -> int | None:
    value = validate_body(body, _CONSOLE_SCHEMA)["os-getConsoleOutput"].get("length")
    if value is None or int(value) == -1:
        return None
    if int(value) < -1:
        raise HTTPError(400, f"Invalid input for field/attribute length. Value: {value}. "
                             f"{value} is less than the minimum of -1")
    return int(value)


def _console_output(req: Request, body: Any) -> Response:
    length = _length(body)
    instance = guest_server(req, "os_compute_api:os-console-output")
    output = agent_call(req, instance, "get_console_output", {"GuestNotFound": _NO_CONSOLE},
                        length=length)
    return json_response({"output": _CONTROL.sub("", str(output))})


def _inject_network_info(req: Request, body: Any) -> Response:
    instance = guest_server(req, "os_compute_api:os-admin-actions:inject_network_info")
    check_unlocked(req, instance)
    # the answer is 202 whatever the host does
    agent_cast(req, instance.host or "", "inject_network_info", instance_uuid=instance.uuid)
    return empty_response(202)


ACTIONS: dict[str, Handler] = {
    "os-getConsoleOutput": _console_output,
    "injectNetworkInfo": _inject_network_info,
}
