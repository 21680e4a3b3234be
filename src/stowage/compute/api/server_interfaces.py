"""GET /servers/{id}/os-interface[/{port_id}]: a server's ports, as Nova's os-interface shows them.

    {"interfaceAttachments": [{"port_id", "net_id", "mac_addr", "port_state",
                               "fixed_ips": [{"subnet_id", "ip_address"}],
                               "tag" (2.70)}]}

The list is the Network service's ports whose `device_id` is the server (as
Nova asks Neutron); `show` answers 404 "Instance X does not have a port with
id P" for a port that is not the server's. Tags are not recorded here, so a
2.70 `tag` is always null. Attaching and detaching (POST, DELETE) are not
served yet.
"""

from __future__ import annotations

from typing import Any

from stowage.compute.api.common import API_PREFIX, at_least, authorize
from stowage.compute.api.server_common import get_server, target
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

TAGS = 70


def _network(req: Request) -> NetworkClient | None:
    plane = req.app.plane
    return None if plane is None else plane.network


def _server(req: Request, policy: str) -> str:
    with req.app.db.read() as conn:
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


_ALL = API_PREFIX + "/servers/{server_id}/os-interface"
ROUTES = [
    Route("GET", _ALL, list_interfaces),
    Route("GET", _ALL + "/{port_id}", show_interface),
]
