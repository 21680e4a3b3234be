"""POST /servers `networks`: what the server is plugged into, checked as Nova checks it.

    [{"port": P}]              the user's port: it must exist (400 PortNotFound), be
                               free (409 PortInUse), have a fixed IP; a port with a
                               resource request needs 2.72 (400 before)
    [{"uuid": N, "fixed_ip"}]  a port Nova creates on N at build (400 for a malformed
                               uuid, NetworkNotFound,
                               NetworkRequiresSubnet, FixedIpAlreadyInUse)
    "none"                     no network
    "auto", or no `networks`   the project's one available network (its own or a
    before 2.37                shared one); several: 409 NetworkAmbiguous; none: no
                               network before 2.37, and for "auto" 400
                               UnableToAutoAllocateNetwork (this service has no
                               auto-allocated-topology extension)

A port cannot serve several servers of one request (400, Nova's
InvalidFixedIpAndMaxCountRequest), nor a fixed IP. The checks read the Network
service with the compute service's admin client, as Nova's
`validate_networks` does; a port another project owns is not found for a
non-admin, as Neutron hides it from their token. The result is the list of
entries recorded per server (`instance_ports.Requested`); the port's
`device_id` is set when the server is bound on its host, and until then
the unique `instance_ports.port_id` keeps a second server from taking it.
"""

from __future__ import annotations

import uuid
from typing import Any

from stowage.compute.instance_ports import Requested
from stowage.network.client import NetworkClient
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["requested_networks", "PORT_RESOURCE_REQUESTS", "port_in_use"]

# 2.72: servers may be created with ports that have a resource request.
PORT_RESOURCE_REQUESTS = 72
AUTO_OR_NONE = 37


def port_in_use(port_id: str) -> HTTPError:
    return HTTPError(409, f"Port {port_id} is still in use.")


def requested_networks(req: Request, networks: Any, max_count: int) -> list[Requested]:
    """The checked entries of `networks` (None: the member was absent)."""
    if networks == "none":
        return []
    network = _client(req)
    if networks is None or networks == "auto" or networks == []:
        return _default_network(req, network, auto=networks == "auto")
    entries = [_entry(req, item) for item in networks]
    if max_count > 1:
        kind = "port_id" if any(e.port_id for e in entries) else (
            "fixed_ip" if any(e.fixed_ip for e in entries) else None)
        if kind is not None:
            raise HTTPError(400, f"Failed to launch instances: max_count cannot be greater "
                                 f"than 1 if an {kind} is specified.")
    seen: set[str] = set()
    for entry in entries:
        if entry.port_id is not None:
            if entry.port_id in seen:
                raise port_in_use(entry.port_id)
            seen.add(entry.port_id)
            _check_port(req, network, entry.port_id)
        else:
            assert entry.network_id is not None
            _check_network(req, network, entry.network_id, entry.fixed_ip)
    return entries


def _client(req: Request) -> NetworkClient | None:
    plane = req.app.plane
    return None if plane is None else plane.network


def _entry(req: Request, item: dict[str, Any]) -> Requested:
    """Nova's `_get_requested_networks` for one item."""
    port, fixed_ip = item.get("port"), item.get("fixed_ip")
    if port:
        if fixed_ip is not None:
            raise HTTPError(400, f"Specified Fixed IP '{fixed_ip}' cannot be used with port "
                                 f"'{port}': the two cannot be specified together.")
        return Requested(port_id=str(port))
    if "uuid" not in item:
        raise HTTPError(400, "Bad network format: missing 'uuid'")
    if not _uuid_like(str(item["uuid"])):  # before 2.37 the schema lets any string in
        raise HTTPError(400, "Bad networks format: network uuid is not in proper format "
                             f"({item['uuid']})")
    return Requested(network_id=str(item["uuid"]), fixed_ip=fixed_ip)


def _uuid_like(value: str) -> bool:
    """oslo's is_uuid_like: a uuid in any of the forms `uuid.UUID` reads."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _check_port(req: Request, network: NetworkClient | None, port_id: str) -> None:
    port = network.show_port(port_id) if network is not None else None
    ctx = req.context
    if port is None or (not ctx.is_admin and port.get("project_id") != ctx.project_id):
        raise HTTPError(400, f"Port id {port_id} could not be found.")
    if port.get("device_id"):
        raise port_in_use(port_id)
    if not port.get("fixed_ips"):
        raise HTTPError(400, f"Port {port_id} requires a FixedIP in order to be used.")
    if port.get("resource_request") and req.version.minor < PORT_RESOURCE_REQUESTS:
        raise HTTPError(400, "Creating servers with ports having resource requests, like a "
                             "port with a QoS minimum bandwidth policy, is not supported "
                             "until microversion 2.72.")


def _visible(req: Request, net: dict[str, Any]) -> bool:
    ctx = req.context
    return bool(ctx.is_admin or net.get("shared") or net.get("project_id") == ctx.project_id)


def _check_network(req: Request, network: NetworkClient | None, network_id: str,
                   fixed_ip: str | None) -> None:
    net = network.show_network(network_id) if network is not None else None
    if net is None or not _visible(req, net):
        raise HTTPError(400, f"Network {network_id} could not be found.")
    if not net.get("subnets"):
        raise HTTPError(400, f"Network {network_id} requires a subnet in order to boot "
                             "instances on.")
    if fixed_ip and network is not None:
        taken = network.list_ports(network_id=network_id,
                                   fixed_ips=f"ip_address={fixed_ip}")
        if taken:
            raise HTTPError(400, f"Fixed IP address {fixed_ip} is already in use on instance "
                                 f"{taken[0].get('device_id', '')}.")


def _default_network(req: Request, network: NetworkClient | None,
                     auto: bool) -> list[Requested]:
    """The one network the project may use (Nova's `_ports_needed_per_instance`)."""
    ctx = req.context
    nets = [] if network is None else [
        n for n in network.list_networks()
        if n.get("project_id") == ctx.project_id or n.get("shared")]
    if len(nets) > 1:
        raise HTTPError(409, "Multiple possible networks found, use a Network ID to be more "
                             "specific.")
    if not nets:
        if auto:
            raise HTTPError(400, "Unable to automatically allocate a network for project "
                                 f"{ctx.project_id}")
        return []
    return [Requested(network_id=str(nets[0]["id"]))]
