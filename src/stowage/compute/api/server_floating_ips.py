"""The addFloatingIp / removeFloatingIp server actions (2.1-2.43, 404 from 2.44), as Nova
serves them with Neutron.

    {"addFloatingIp": {"address": A[, "fixed_address": F]}}   202: the floating IP A
        goes to the server's port that has F (default: the server's first IPv4 fixed
        address), taken from the server it was on if any (Nova moves it too)
    {"removeFloatingIp": {"address": A}}                      202: A leaves the server

Nova's checks and words, in its order: add finds the server (404), authorizes
`os_compute_api:os-floating-ips:add` on it, then needs the server's cached
network info (400 "Instance network is not ready yet"), a fixed IP (400 "No
fixed IPs associated to instance"), F among them (400 "Specified fixed address
not assigned to instance"), A among the caller's floating IPs (404 "floating IP
not found"); the Network service's refusal is 400: a conflict (another
floating IP on F already) in its words, anything else (no router from the
port's subnet to A's network) as "Unable to associate floating IP A to fixed
IP F for instance S. Error: ...". Remove looks A
up first (404 "Floating IP not found for address A."), authorizes `:remove` on
the server A is on, and is 409 "Floating IP A is not associated with instance
S." when A is not on this server. The servers' cached addresses follow
(compute/floating_addresses.py).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from stowage.compute import instance_ports
from stowage.compute import instances as inst
from stowage.compute.api.common import at_least, authorize, validate_body
from stowage.compute.api.floating_ips import RULE, by_address, server_of
from stowage.compute.api.network_proxy import network_of, translated
from stowage.compute.api.server_common import get_server, target
from stowage.compute.floating_addresses import refresh_quietly
from stowage.network.client import NetworkClient, NetworkError
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response

__all__ = ["ACTIONS", "REMOVED"]

# 2.44 removed the actions.
REMOVED = 44


def _schema(action: str, fields: tuple[str, ...]) -> dict[str, Any]:
    inner = {"type": "object", "properties": {f: {"type": "string"} for f in fields},
             "required": ["address"], "additionalProperties": False}
    return {"type": "object", "properties": {action: inner}, "required": [action],
            "additionalProperties": False}


def _addresses(body: Any, action: str, fields: tuple[str, ...]) -> dict[str, str]:
    """The action's addresses, each an IPv4 or IPv6 address (Nova's `ip_address` type)."""
    inner: dict[str, str] = validate_body(body, _schema(action, fields))[action]
    for name, value in inner.items():
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise HTTPError(400, f"Invalid input for field/attribute {name}. Value: {value}. "
                                 f"'{value}' is not valid under any of the given schemas"
                            ) from None
    return inner


def _removed(req: Request) -> None:
    if at_least(req, REMOVED):
        raise HTTPError(404, "The resource could not be found.")


def _fixed_ips(req: Request, server_id: str) -> tuple[inst.Instance, list[str]]:
    """The server and its cached fixed addresses (Nova's `instance.get_network_info()`)."""
    with req.app.server_db(server_id).read() as conn:
        instance = get_server(req, conn, server_id)
        authorize(req, RULE + "add", {"project_id": instance.project_id})
        rows = instance_ports.of_instance(conn, instance.uuid)
    if not any(r.vif for r in rows):
        raise HTTPError(400, "Instance network is not ready yet")
    fixed = [str(ip["address"]) for r in rows for ip in (r.vif or {}).get("ips") or ()]
    if not fixed:
        raise HTTPError(400, "No fixed IPs associated to instance")
    return instance, fixed


def _port_with(network: NetworkClient, server: str, address: str) -> str:
    """The server's port that has this fixed address (Nova's `_get_port_id_by_fixed_address`)."""
    for port in network.list_ports(device_id=server):
        if any(ip.get("ip_address") == address for ip in port.get("fixed_ips") or ()):
            return str(port["id"])
    raise HTTPError(400, f"Fixed IP associated with the address {address} could not be "
                         "found.")


def _add(req: Request, body: Any) -> Response:
    _removed(req)
    wanted = _addresses(body, "addFloatingIp", ("address", "fixed_address"))
    address, server_id = wanted["address"], req.params["server_id"]
    instance, fixed_ips = _fixed_ips(req, server_id)
    fixed = wanted.get("fixed_address")
    if fixed is not None and fixed not in fixed_ips:
        raise HTTPError(400, "Specified fixed address not assigned to instance")
    if fixed is None:
        fixed = next((ip for ip in fixed_ips if ipaddress.ip_address(ip).version == 4), None)
        if fixed is None:
            raise HTTPError(400, f"Unable to associate floating IP {address} to any fixed IPs "
                                 f"for instance {server_id}. Instance has no fixed IPv4 "
                                 "addresses to associate.")
    network = network_of(req)
    with translated():
        port_id = _port_with(network, instance.uuid, fixed)
        fip = by_address(req, network, address)
        if fip is None:
            raise HTTPError(404, "floating IP not found")
        previous = server_of(network, fip)
        try:
            network.update_floatingip(str(fip["id"]), {"port_id": port_id,
                                                       "fixed_ip_address": fixed})
        except NetworkError as exc:  # Nova: a conflict in Neutron's words, else its own
            if exc.status == 409:
                raise HTTPError(400, exc.message) from None
            raise HTTPError(400, f"Unable to associate floating IP {address} to fixed IP "
                                 f"{fixed} for instance {instance.uuid}. Error: "
                                 f"{exc.message}") from None
    for server in dict.fromkeys((instance.uuid, previous)):
        if server:
            refresh_quietly(req.app.server_db(server), network, server)
    return empty_response(202)


def _remove(req: Request, body: Any) -> Response:
    _removed(req)
    address = _addresses(body, "removeFloatingIp", ("address",))["address"]
    server_id = req.params["server_id"]
    network = network_of(req)
    with translated():
        fip = by_address(req, network, address)
        if fip is None:
            raise HTTPError(404, f"Floating IP not found for address {address}.")
        holder = server_of(network, fip)
    instance = _instance(req, holder)
    authorize(req, RULE + "remove", target(instance) if instance else {})
    if instance is None or not fip.get("port_id") or instance.uuid != server_id:
        raise HTTPError(409, f"Floating IP {address} is not associated with instance "
                             f"{server_id}.")
    with translated():
        network.update_floatingip(str(fip["id"]), {"port_id": None})
    refresh_quietly(req.app.server_db(instance.uuid), network, instance.uuid)
    return empty_response(202)


def _instance(req: Request, uuid: str | None) -> inst.Instance | None:
    """The server a floating IP is on (Nova's `get_instance`: 404 if the caller cannot
    see it)."""
    if not uuid:
        return None
    with req.app.server_db(uuid).read() as conn:
        return get_server(req, conn, uuid)


ACTIONS = {"addFloatingIp": _add, "removeFloatingIp": _remove}
