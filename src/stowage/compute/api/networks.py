"""/os-networks and /os-tenant-networks: Nova's deprecated network proxies, as Nova
serves them with Neutron (reads 2.1-2.35, 404 from 2.36).

    GET /os-networks[/{id}]          the networks the caller sees in the Network
                                     service (their project's, shared and external
                                     ones; an admin sees all): `id` and `label` (the name), the
                                     other nova-network fields null; admins get the
                                     admin fields too, null as well
    GET /os-tenant-networks[/{id}]   the same networks as {id, cidr: "None", label}
                                     (Nova's historical answer with Neutron)
    POST /os-networks, POST /os-networks/add, DELETE /os-networks/{id},
    POST /os-networks/{id}/action, POST /os-tenant-networks,
    DELETE /os-tenant-networks/{id}  410 Gone at every microversion: nova-network is gone

A network the caller cannot see is 404 "Network not found".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stowage.compute.api.common import API_PREFIX, authorize
from stowage.compute.api.network_proxy import network_of, require_proxy, translated
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "network_view", "tenant_network_view"]

_FIELDS = ("id", "cidr", "netmask", "gateway", "broadcast", "dns1", "dns2", "cidr_v6",
           "gateway_v6", "label", "netmask_v6")
_ADMIN_FIELDS = ("created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge",
                 "vlan", "vpn_public_address", "vpn_public_port", "vpn_private_address",
                 "dhcp_start", "project_id", "host", "bridge_interface", "multi_host",
                 "priority", "rxtx_base", "mtu", "dhcp_server", "enable_dhcp",
                 "share_address")


def network_view(req: Request, net: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's network_dict: only id and label are known without nova-network."""
    fields = _FIELDS + (_ADMIN_FIELDS if req.context.is_admin else ())
    view: dict[str, Any] = dict.fromkeys(fields)
    view.update(id=net["id"], label=net["name"])
    return view


def tenant_network_view(net: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": net["id"], "cidr": str(None), "label": net["name"]}


def _visible(req: Request, net: Mapping[str, Any]) -> bool:
    """What the user's token lists in Neutron: its project's, shared and external ones."""
    ctx = req.context
    return bool(ctx.is_admin or net.get("shared") or net.get("router:external")
                or net.get("project_id") == ctx.project_id)


def _networks(req: Request, rule: str) -> list[dict[str, Any]]:
    require_proxy(req)
    authorize(req, rule, {"project_id": req.context.project_id})
    with translated():
        return [n for n in network_of(req).list_networks() if _visible(req, n)]


def _network(req: Request, rule: str) -> dict[str, Any]:
    require_proxy(req)
    authorize(req, rule, {"project_id": req.context.project_id})
    with translated():
        net = network_of(req).show_network(req.params["network_id"])
    if net is None or not _visible(req, net):
        raise HTTPError(404, "Network not found")
    return net


def list_networks(req: Request) -> Response:
    found = _networks(req, "os_compute_api:os-networks:list")
    return json_response({"networks": [network_view(req, n) for n in found]})


def show_network(req: Request) -> Response:
    found = _network(req, "os_compute_api:os-networks:show")
    return json_response({"network": network_view(req, found)})


def list_tenant_networks(req: Request) -> Response:
    found = _networks(req, "os_compute_api:os-tenant-networks:list")
    return json_response({"networks": [tenant_network_view(n) for n in found]})


def show_tenant_network(req: Request) -> Response:
    found = _network(req, "os_compute_api:os-tenant-networks:show")
    return json_response({"network": tenant_network_view(found)})


def gone(req: Request) -> Response:
    raise HTTPError(410, "Gone")


_NETS = API_PREFIX + "/os-networks"
_TENANT = API_PREFIX + "/os-tenant-networks"
ROUTES = [
    Route("GET", _NETS, list_networks),
    Route("POST", _NETS, gone),
    Route("POST", _NETS + "/add", gone),
    Route("GET", _NETS + "/{network_id}", show_network),
    Route("DELETE", _NETS + "/{network_id}", gone),
    Route("POST", _NETS + "/{network_id}/action", gone),
    Route("GET", _TENANT, list_tenant_networks),
    Route("POST", _TENANT, gone),
    Route("GET", _TENANT + "/{network_id}", show_tenant_network),
    Route("DELETE", _TENANT + "/{network_id}", gone),
]
