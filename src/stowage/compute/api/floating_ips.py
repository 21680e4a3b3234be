"""/os-floating-ips and /os-floating-ip-pools: Nova's deprecated floating-IP proxies, as
Nova serves them with Neutron (2.1-2.35, 404 from 2.36).

    GET    /os-floating-ips        the caller's project's floating IPs
    GET    /os-floating-ips/{id}   one of them (an admin sees any)
    POST   /os-floating-ips        allocate one from `pool` (an external network's
                                   name or id; default `[compute] default_floating_pool`)
    DELETE /os-floating-ips/{id}   202: release it (disassociated first by the Network
                                   service; the server it was on forgets it)
    GET    /os-floating-ip-pools   the external networks' names (their id if unnamed)

A floating IP is `{id, ip, fixed_ip, instance_id, pool}` (Nova's view: `pool` is
its network's name or id, `instance_id` the device of the port it is on).
Nova's errors: 404 "Floating IP not found for ID X"; on allocation 404 "Floating
IP pool not found." (no such external network), 404 "No more floating IPs in
pool P." (none left), 403 "IP allocation over quota in pool P." (the Network
service's quota), 400 with the Network service's words for a refused request.
Nova asks Neutron with the user's token; stowage's client is the service's, so a
project's floating IPs are filtered here as Neutron's ownership rule would.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from stowage.compute.api.common import API_PREFIX, authorize, read_body, validate_body
from stowage.compute.api.network_proxy import network_of, require_proxy, translated
from stowage.compute.api.services import is_uuid
from stowage.compute.floating_addresses import refresh_quietly
from stowage.network.client import NetworkClient, NetworkError
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "floating_view", "visible", "by_address", "pool_id", "server_of",
           "RULE"]

RULE = "os_compute_api:os-floating-ips:"
_CREATE = {"type": ["object", "null"],
           "properties": {"pool": {"type": ["string", "null"]}}}
# Neutron's refusals of an allocation that Nova names itself (the rest pass through).
_EXHAUSTED = ("IpAddressGenerationFailure", "ExternalIpAddressExhausted")


def visible(req: Request, fip: Mapping[str, Any]) -> bool:
    """What the user's token would see in Neutron: its project's floating IPs (admin: all)."""
    ctx = req.context
    owner = fip.get("project_id") or fip.get("tenant_id")
    return bool(ctx.is_admin or owner == ctx.project_id)


def _ports(network: NetworkClient, fips: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """port id -> port details, for floating IPs the Network service answered without
    `port_details` (no fip-port-details extension: Nova shows the port then)."""
    wanted = sorted({str(f["port_id"]) for f in fips
                     if f.get("port_id") and "port_details" not in f})
    return {str(p["id"]): p for p in network.list_ports(id=wanted)} if wanted else {}


def _pools(network: NetworkClient, fips: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    wanted = sorted({str(f["floating_network_id"]) for f in fips})
    return {str(n["id"]): n for n in network.list_networks(id=wanted)} if wanted else {}


def floating_view(fip: Mapping[str, Any], pools: Mapping[str, Any],
                  ports: Mapping[str, Any]) -> dict[str, Any]:
    """Nova's `_translate_floating_ip_view`."""
    details = fip["port_details"] if "port_details" in fip else ports.get(
        str(fip.get("port_id")))
    net = pools.get(str(fip["floating_network_id"])) or {}
    return {"id": fip["id"], "ip": fip["floating_ip_address"],
            "pool": net.get("name") or fip["floating_network_id"],
            "fixed_ip": fip.get("fixed_ip_address"),
            "instance_id": details.get("device_id") if details else None}


def _views(network: NetworkClient, fips: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    pools, ports = _pools(network, fips), _ports(network, fips)
    return [floating_view(f, pools, ports) for f in fips]


def _not_found(fip_id: str) -> HTTPError:
    return HTTPError(404, f"Floating IP not found for ID {fip_id}")


def _one(req: Request, network: NetworkClient) -> dict[str, Any]:
    fip_id = req.params["floating_ip_id"]
    fip = network.show_floatingip(fip_id)
    if fip is None or not visible(req, fip):
        raise _not_found(fip_id)
    return fip


def by_address(req: Request, network: NetworkClient, address: str) -> dict[str, Any] | None:
    """The floating IP with this address the caller may see (Nova's
    `_get_floating_ip_by_address`); None when there is none; 409 for several."""
    found = [f for f in network.list_floatingips(floating_ip_address=address)
             if f.get("floating_ip_address") == address and visible(req, f)]
    if len(found) > 1:
        raise HTTPError(409, f"Multiple floating IPs are found for address {address}.")
    return found[0] if found else None


def pool_id(network: NetworkClient, name_or_id: str) -> str:
    """The external network a pool names, by id if it looks like one, else by name:
    Nova's `_get_floating_ip_pool_id_by_name_or_id`."""
    key = "id" if is_uuid(name_or_id) else "name"
    nets = [n for n in network.list_networks(**{"router:external": "True", key: name_or_id})
            if n.get(key) == name_or_id and n.get("router:external")]
    if not nets:
        raise HTTPError(404, "Floating IP pool not found.")
    if len(nets) > 1:
        raise HTTPError(400, f"Multiple floating IP pools matches found for name "
                             f"'{name_or_id}'")
    return str(nets[0]["id"])


def list_floating_ips(req: Request) -> Response:
    require_proxy(req)
    authorize(req, RULE + "list", {"project_id": req.context.project_id})
    network = network_of(req)
    with translated():
        fips = [f for f in network.list_floatingips(project_id=req.context.project_id or "")
                if (f.get("project_id") or f.get("tenant_id")) == req.context.project_id]
        views = _views(network, fips)
    return json_response({"floating_ips": views})


def show_floating_ip(req: Request) -> Response:
    require_proxy(req)
    authorize(req, RULE + "show", {"project_id": req.context.project_id})
    network = network_of(req)
    with translated():
        (view,) = _views(network, [_one(req, network)])
    return json_response({"floating_ip": view})


@contextmanager
def _allocation_errors(pool: str | None) -> Iterator[None]:
    """Nova's words for Neutron's refusals of an allocation."""
    where = f" in pool {pool}." if pool else None
    try:
        yield
    except NetworkError as exc:
        if exc.type in _EXHAUSTED:
            raise HTTPError(404, f"No more floating IPs{where or ' available.'}") from None
        if exc.type == "OverQuota":
            raise HTTPError(403, f"IP allocation over quota{where or '.'}") from None
        if exc.status == 400:
            raise HTTPError(400, exc.message) from None
        raise


def create_floating_ip(req: Request) -> Response:
    require_proxy(req)
    authorize(req, RULE + "create", {"project_id": req.context.project_id})
    body = validate_body(read_body(req) if req.body else None, _CREATE)
    pool = body.get("pool") if body else None
    network = network_of(req)
    with translated():
        net_id = pool_id(network, pool or req.app.settings.compute.default_floating_pool)
        with _allocation_errors(pool):
            fip = network.create_floatingip({"floating_network_id": net_id,
                                             "project_id": req.context.project_id})
        (view,) = _views(network, [fip])
    return json_response({"floating_ip": view})


def delete_floating_ip(req: Request) -> Response:
    require_proxy(req)
    authorize(req, RULE + "delete", {"project_id": req.context.project_id})
    network = network_of(req)
    with translated():
        fip = _one(req, network)
        server = server_of(network, fip)
        if not network.delete_floatingip(str(fip["id"])):
            raise HTTPError(404, f"Floating IP not found for address "
                                 f"{fip['floating_ip_address']}.")
    if server:
        refresh_quietly(req.app.server_db(server), network, server)
    return empty_response(202)


def server_of(network: NetworkClient, fip: Mapping[str, Any]) -> str | None:
    """The server the floating IP is on (its port's device), if any."""
    if not fip.get("port_id"):
        return None
    details = fip.get("port_details") or network.show_port(str(fip["port_id"])) or {}
    return str(details.get("device_id") or "") or None


def list_pools(req: Request) -> Response:
    require_proxy(req)
    authorize(req, "os_compute_api:os-floating-ip-pools", {"project_id": req.context.project_id})
    with translated():
        nets = network_of(req).list_networks(**{"router:external": "True"})
    return json_response({"floating_ip_pools": [{"name": n.get("name") or n["id"]}
                                                for n in nets if n.get("router:external")]})


_FIPS = API_PREFIX + "/os-floating-ips"
ROUTES = [
    Route("GET", _FIPS, list_floating_ips),
    Route("POST", _FIPS, create_floating_ip),
    Route("GET", _FIPS + "/{floating_ip_id}", show_floating_ip),
    Route("DELETE", _FIPS + "/{floating_ip_id}", delete_floating_ip),
    Route("GET", API_PREFIX + "/os-floating-ip-pools", list_pools),
]
