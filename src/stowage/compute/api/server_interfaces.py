"""GET /servers/{id}/os-interface[/{port_id}]: a server's ports, as Nova's os-interface shows them.

    {"interfaceAttachments": [{"port_id", "net_id", "mac_addr", "port_state",
                               "fixed_ips": [{"subnet_id", "ip_address"}],
                               "tag" (2.70)}]}

The list is the Network service's ports whose `device_id` is the server (as
Nova asks Neutron); `show` answers 404 "Instance X does not have a port with
id P" for a port that is not the server's. Tags are not recorded here, so a
2.70 `tag` is always null.

`POST` attaches (`interfaceAttachment`: `port_id`, or `net_id` with at most one
`fixed_ips` entry, or neither: the project's one network) and answers 200
with the attachment, as Nova's API, which calls the compute service and
waits; `DELETE` detaches (202, cast). Both need vm_state active or stopped,
no task state and an unlocked server (409 otherwise, Nova's wording; an
admin may act on a locked one). The attach records the port's
`instance_ports` row, the action and its journal entry in one transaction:
a port that is another server's (or this one's) is 409 PortInUse, and of
two attaches of one port only one gets the row. What the conductor does
with it -- the port's resources claimed on the server's host, its binding --
is `conductor/interfaces.py`; its failures answer as Nova's:

    InterfaceAttachResourceAllocationFailed   400 (the host cannot give the bandwidth)
    NetworksWithQoSPolicyNotSupported         400 (a port compute creates asks for some)
    InterfaceAttachFailed, anything else      500 "Failed to attach network adapter device
                                              to <server>"

A port with a resource request is refused before that (400, Nova's
AttachInterfaceWithQoSPolicyNotSupported) while the server's host's compute
is older than Wallaby's `upgrade.QOS_ATTACH`.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from stowage.compute import instance_ports, states, upgrade
from stowage.compute.api.action_common import accept, cast_after_commit, start_action
from stowage.compute.api.common import API_PREFIX, at_least, authorize, read_body, validate_body
from stowage.compute.api.server_common import (
    check_state,
    check_unlocked,
    conductor,
    get_server,
    invalid_state,
    target,
)
from stowage.compute.api.server_networks import port_in_use
from stowage.compute.instance_ports import PortTaken, Requested
from stowage.compute.instances import Instance
from stowage.messaging import MessagingError, RemoteError
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

LOG = logging.getLogger(__name__)
TAGS = 70
_UUID = {"type": "string",
         "pattern": "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                    "[0-9a-fA-F]{12}$"}
_CREATE_SCHEMA = {
    "type": "object",
    "properties": {"interfaceAttachment": {
        "type": "object",
        "properties": {
            "net_id": _UUID,
            "port_id": _UUID,
            "fixed_ips": {"type": "array", "minItems": 1, "maxItems": 1,
                          "items": {"type": "object",
                                    "properties": {"ip_address": {"type": "string",
                                                                  "format": "ip-address"}},
                                    "required": ["ip_address"],
                                    "additionalProperties": False}},
        },
        "additionalProperties": False}},
    "additionalProperties": False,
}
_ALLOWED = (states.ACTIVE, states.STOPPED)
# The conductor's errors (by type) and Nova's answer to each.
_ANSWERS = {"InterfaceAttachResourceAllocationFailed": 400,
            "NetworksWithQoSPolicyNotSupported": 400}


def _network(req: Request) -> NetworkClient | None:
    plane = req.app.plane
    return None if plane is None else plane.network


def _server(req: Request, policy: str) -> str:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
    authorize(req, f"os_compute_api:os-attach-interfaces:{policy}", target(instance))
    return instance.uuid


def _view(req: Request, port: dict[str, Any]) -> dict[str, Any]:
    view = {"net_id": port["network_id"], "port_id": port["id"],
            "mac_addr": port["mac_address"], "port_state": port["status"],
            "fixed_ips": port.get("fixed_ips")}
    if at_least(req, TAGS):
        view["tag"] = None
    return view


def list_interfaces(req: Request) -> Response:
    uuid = _server(req, "list")
    network = _network(req)
    found = [] if network is None else network.list_ports(device_id=uuid)
    return json_response({"interfaceAttachments": [_view(req, p) for p in found]})


def show_interface(req: Request) -> Response:
    uuid = _server(req, "show")
    port_id = req.params["port_id"]
    network = _network(req)
    port = None if network is None else network.show_port(port_id)
    if port is None:
        raise HTTPError(404, f"Port {port_id} could not be found.")
    if port.get("device_id") != uuid:
        raise HTTPError(404, f"Instance {uuid} does not have a port with id {port_id}")
    return json_response({"interfaceAttachment": _view(req, port)})


def _requested(req: Request, body: Any, network: NetworkClient | None) -> Requested:
    """The port or network to attach, checked as Nova checks it before calling compute."""
    attachment = (validate_body(body, _CREATE_SCHEMA) or {}).get("interfaceAttachment") or {}
    port_id, net_id = attachment.get("port_id"), attachment.get("net_id")
    fixed_ip = (attachment.get("fixed_ips") or [{}])[0].get("ip_address")
    if fixed_ip is not None:
        try:
            ipaddress.ip_address(fixed_ip)
        except ValueError:
            raise HTTPError(400, f"Invalid input for field/attribute ip_address. Value: "
                                 f"{fixed_ip}. '{fixed_ip}' is not valid under any of the "
                                 "given schemas") from None
    if port_id and net_id:
        raise HTTPError(400, "Must not input both network_id and port_id")
    if fixed_ip and not net_id:
        raise HTTPError(400, "Must input network_id when request IP address")
    ctx = req.context
    if port_id:
        port = network.show_port(port_id) if network is not None else None
        if port is None or (not ctx.is_admin and port.get("project_id") != ctx.project_id):
            raise HTTPError(404, f"Port id {port_id} could not be found.")
        if port.get("device_id"):
            raise port_in_use(port_id)
        return Requested(port_id=str(port_id))
    if net_id:
        net = network.show_network(net_id) if network is not None else None
        if net is None or not (ctx.is_admin or net.get("shared")
                               or net.get("project_id") == ctx.project_id):
            raise HTTPError(404, f"Network {net_id} could not be found.")
        if fixed_ip and network is not None and network.list_ports(
                network_id=net_id, fixed_ips=f"ip_address={fixed_ip}"):
            raise HTTPError(409, f"Fixed IP address {fixed_ip} is already in use on "
                                 f"instance {net_id}.")
        return Requested(network_id=str(net_id), fixed_ip=fixed_ip)
    nets = [] if network is None else [n for n in network.list_networks()
                                       if n.get("project_id") == ctx.project_id
                                       or n.get("shared")]
    if len(nets) > 1:
        raise HTTPError(400, "Multiple possible networks found, use a Network ID to be more "
                             "specific.")
    if not nets:
        raise HTTPError(400, "No specific network was requested and none are available for "
                             f"project '{ctx.project_id}'.")
    return Requested(network_id=str(nets[0]["id"]))


def _attachable(req: Request, conn: Any, action: str, policy: str) -> Instance:
    instance = get_server(req, conn, req.params["server_id"])
    authorize(req, f"os_compute_api:os-attach-interfaces:{policy}", target(instance))
    check_unlocked(req, instance)
    check_state(instance, action, _ALLOWED, must_have_launched=False)
    if not instance.host:
        raise invalid_state(action, instance.uuid, "vm_state", instance.vm_state)
    return instance


def _answer(uuid: str, call: Callable[[], None]) -> None:
    """Run a conductor call; its failure as Nova answers it (see the docstring)."""
    try:
        call()
    except RemoteError as exc:
        status = _ANSWERS.get(exc.exc_type, 500)
        message = exc.message if status != 500 else (
            f"Failed to attach network adapter device to {uuid}")
        LOG.info("attach to %s failed: %s", uuid, exc)
        raise HTTPError(status, message) from None
    except MessagingError as exc:
        raise HTTPError(500, f"Failed to attach network adapter device to {uuid}") from exc


def _refuse_old_compute(conn: Any, instance: Instance, network: NetworkClient | None,
                        entry: Requested) -> None:
    """400 for a port with a resource request while the server's host's compute is older
    than Nova Wallaby's (`upgrade.attach_refusal`)."""
    port = (network.show_port(entry.port_id)
            if entry.port_id and network is not None else None)
    message = (None if port is None or not instance.host
               else upgrade.attach_refusal(conn, instance.uuid, instance.host, port))
    if message is not None:
        raise HTTPError(400, message)


def create_interface(req: Request) -> Response:
    body = read_body(req)
    with req.app.server_db(req.params["server_id"]).read() as conn:
        _attachable(req, conn, "attach_interface", "create")
    network = _network(req)
    entry = _requested(req, body, network)
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = _attachable(req, conn, "attach_interface", "create")
        _refuse_old_compute(conn, instance, network, entry)
        uuid = instance.uuid
    _answer(uuid, lambda: conductor(req).check_attach(uuid, entry.port_id, entry.network_id,
                                                      req.context.request_id))
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _attachable(req, conn, "attach_interface", "create")
        try:
            row = instance_ports.record_attached(conn, instance.uuid, entry)
        except PortTaken as exc:
            raise port_in_use(exc.port_id) from None
        start_action(conn, req, instance, "attach_interface")
        op = accept(conn, req, instance, "attach_interface", port_row=row)
    found: list[str] = []
    _answer(instance.uuid, lambda: found.append(conductor(req).attach_interface(
        instance.uuid, row, req.context.request_id, op)))
    port_id = found[0]
    port = network.show_port(port_id) if network is not None else None
    if port is None:
        raise HTTPError(404, f"Port {port_id} could not be found.")
    return json_response({"interfaceAttachment": _view(req, port)})


def delete_interface(req: Request) -> Response:
    port_id = req.params["port_id"]
    network = _network(req)
    with req.app.server_db(req.params["server_id"]).write() as conn:
        instance = _attachable(req, conn, "detach_interface", "delete")
        port = network.show_port(port_id) if network is not None else None
        mine = any(r.port_id == port_id for r in instance_ports.of_instance(conn, instance.uuid))
        if not mine and (port is None or port.get("device_id") != instance.uuid):
            raise HTTPError(404, f"Port {port_id} is not attached")
        start_action(conn, req, instance, "detach_interface")
        op = accept(conn, req, instance, "detach_interface", port_id=port_id)
    cast_after_commit(
        req, instance,
        lambda c: c.detach_interface(instance.uuid, port_id, req.context.request_id, op),
        {}, ("detach_interface", op))
    return empty_response(202)


_ALL = API_PREFIX + "/servers/{server_id}/os-interface"
ROUTES = [
    Route("GET", _ALL, list_interfaces),
    Route("POST", _ALL, create_interface),
    Route("GET", _ALL + "/{port_id}", show_interface),
    Route("DELETE", _ALL + "/{port_id}", delete_interface),
]
