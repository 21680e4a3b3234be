"""GET /servers/{id}/ips[/{network_label}]: a server's addresses by network name.

    GET .../ips                 {"addresses": {label: [{"version", "addr"}, ...]}}
    GET .../ips/{label}         {label: [{"version", "addr"}, ...]}

The same addresses as the server view's `addresses` (its ports' fixed IPs
under their network's name, in the order the ports were requested, then the
floating IPs mapped to them), without
the OS-EXT-IPS extras, as Nova's ips view. A label the server has no address
on is 404 "Instance is not a member of specified network".
"""

from __future__ import annotations

from typing import Any

from stowage.compute import instance_ports
from stowage.compute.api.common import API_PREFIX, authorize
from stowage.compute.api.server_common import get_server, target
from stowage.compute.api.server_views import addresses
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]


def _networks(req: Request, policy: str) -> dict[str, list[dict[str, Any]]]:
    with req.app.server_db(req.params["server_id"]).read() as conn:
        instance = get_server(req, conn, req.params["server_id"])
        authorize(req, f"os_compute_api:ips:{policy}", target(instance))
        ports = instance_ports.of_instance(conn, instance.uuid)
    return {label: [{"version": ip["version"], "addr": ip["addr"]} for ip in ips]
            for label, ips in addresses(ports).items()}


def list_ips(req: Request) -> Response:
    return json_response({"addresses": _networks(req, "index")})


def show_ips(req: Request) -> Response:
    label = req.params["network_label"]
    networks = _networks(req, "show")
    if label not in networks:
        raise HTTPError(404, "Instance is not a member of specified network")
    return json_response({label: networks[label]})


_IPS = API_PREFIX + "/servers/{server_id}/ips"
ROUTES = [
    Route("GET", _IPS, list_ips),
    Route("GET", _IPS + "/{network_label}", show_ips),
]
