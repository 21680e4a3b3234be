"""/os-simulator/hosts/{host}/faults: arm, list and clear a simulated host's faults.

    POST   /os-simulator/hosts/{host}/faults              {"fault": {step, mode, times, error}}
    GET    /os-simulator/hosts/{host}/faults              the armed faults, with firings left
    DELETE /os-simulator/hosts/{host}/faults              disarm all of them
    DELETE /os-simulator/hosts/{host}/faults/{fault_id}   disarm one

A stowage extension (Nova has no such API; docs/faults.md, docs/compatibility.md):
it makes a named step of a simulated host fail once, N times or always, stops
the host's heartbeats, or kills its agent, from outside the process. Each
request is a short RPC call to the host's agent (`compute.<host>`,
agent/fault_injection.py), as force-complete reaches a source agent, so it
works wherever the agent runs.

Answers: POST 200 with the fault (`id`, `step`, `mode`, `remaining`,
`error`); GET 200; DELETEs 204. 404 "Compute host X could not be found."
for a host without a compute service, and for an unknown fault id; 409
when the host's driver is not the simulated one, or its agent does not
answer (killed, stopped). Bad bodies are 400 in Nova's words. Policies
`os_compute_api:os-simulator:faults:{create,index,delete}`, admin only.
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.compute import services as svc
from stowage.compute.agent.faults import (
    MAX_ERROR,
    MAX_TIMES,
    MODES,
    STEPS,
    FaultSpec,
    FaultSpecError,
)
from stowage.compute.api.common import API_PREFIX, authorize, read_body, validate_body
from stowage.compute.rpc import AgentAPI
from stowage.messaging import MessagingError, RemoteError
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "CREATE_SCHEMA"]

LOG = logging.getLogger(__name__)

_POLICY = "os_compute_api:os-simulator:faults:"
CREATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"fault": {
        "type": "object",
        "properties": {
            "step": {"type": "string", "enum": list(STEPS)},
            "mode": {"type": "string", "enum": list(MODES)},
            "times": {"type": "integer", "minimum": 1, "maximum": MAX_TIMES},
            "error": {"type": "string", "minLength": 1, "maxLength": MAX_ERROR},
        },
        "required": ["step"],
        "additionalProperties": False,
    }},
    "required": ["fault"],
    "additionalProperties": False,
}


def add_fault(req: Request) -> Response:
    host = _start(req, "create")
    body = validate_body(read_body(req), CREATE_SCHEMA)
    try:
        FaultSpec.from_mapping(body["fault"])  # what the schema cannot say (times <-> mode)
    except FaultSpecError as exc:
        raise HTTPError(400, f"Invalid input for field/attribute fault. {exc}") from None
    fault = _call(req, host, "add_fault", fault=body["fault"])
    LOG.warning("fault armed on host %s by %s: %s", host, req.context.user_id, fault)
    return json_response({"fault": fault})


def list_faults(req: Request) -> Response:
    host = _start(req, "index")
    return json_response({"faults": _call(req, host, "list_faults")})


def clear_faults(req: Request) -> Response:
    host = _start(req, "delete")
    _call(req, host, "clear_faults")
    return empty_response(204)


def remove_fault(req: Request) -> Response:
    host = _start(req, "delete")
    fault_id = req.params["fault_id"]
    if not _call(req, host, "remove_fault", fault_id=fault_id):
        raise HTTPError(404, f"Fault {fault_id} could not be found.")
    return empty_response(204)


def _start(req: Request, action: str) -> str:
    """Policy first, then the host: a compute service of that name, else 404."""
    authorize(req, _POLICY + action, {})
    host = req.params["host_name"]
    with req.app.host_db(host).read() as conn:
        if svc.compute_service(conn, host) is None:
            raise HTTPError(404, f"Compute host {host} could not be found.")
    return host


def _call(req: Request, host: str, method: str, **kwargs: Any) -> Any:
    """The agent's answer; 409 when it has no faults (not simulated) or does not answer."""
    plane = req.app.plane
    if plane is None:
        raise HTTPError(409, "The compute control plane is not running in this process.")
    try:
        return AgentAPI(plane.transport).call(host, method, **kwargs)
    except RemoteError as exc:
        if exc.exc_type == "FaultsUnsupported":
            raise HTTPError(409, exc.message) from None
        if exc.exc_type == "ValueError":
            raise HTTPError(400, f"Invalid input for field/attribute fault. "
                                 f"{exc.message}") from None
        raise
    except MessagingError as exc:
        LOG.warning("fault %s on host %s: the agent did not answer: %s", method, host, exc)
        raise HTTPError(409, f"Compute service of {host} is unavailable at this "
                             "time.") from None


_FAULTS = API_PREFIX + "/os-simulator/hosts/{host_name}/faults"
ROUTES = [
    Route("GET", _FAULTS, list_faults),
    Route("POST", _FAULTS, add_fault, json_body=True),
    Route("DELETE", _FAULTS, clear_faults),
    Route("DELETE", _FAULTS + "/{fault_id}", remove_fault),
]
