"""A live migration's ports: an inactive binding on the destination, activated once the guest moved.

    vf_ports   each SR-IOV port's PF provider on the destination (from the destination
               mapping), for the destination's check to claim a VF of it
    prepare    each port gets an INACTIVE binding on the destination, whose profile
               carries the destination mapping (`allocation`) and the VF claimed there
               (Nova's `_bind_ports_on_destination`); the source binding stays ACTIVE
               and untouched. A binding the Network service cannot make refuses the
               host (a pre-check error: the next alternate is tried)
    discard    the INACTIVE bindings deleted and the destination's VFs released: a
               refused host, a rollback, an abort (Nova's `_rollback_live_migration`
               deleting the destination bindings)
    activate   the destination binding made ACTIVE (the source one turns INACTIVE) and
               the source one deleted, once the guest runs there (Nova's
               `migrate_instance_start` / `_post_live_migration`); a port whose
               `device_owner` names another zone than the destination's gets
               compute:<destination zone> (Nova's `_update_port_binding_for_instance`
               rewrites it when the host changed: "the AZ could have also changed")

Every write is idempotent: a binding already there with the same profile is
kept, an activation already done is skipped, deleting what is gone is fine,
so a step done again after a crash converges. Before the switch-over the
only INACTIVE bindings a server's port can have are its live migration's, so
`discard` deletes all of them: a crash that lost which host was being tried
leaves nothing behind on the Network service.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stowage.compute.conductor import ports
from stowage.compute.conductor.common import Ops
from stowage.messaging import MessagingError, RemoteError
from stowage.network.client import NetworkClient, NetworkError

__all__ = ["vf_ports", "prepare", "discard", "activate", "BindingRefused"]

LOG = logging.getLogger(__name__)
_INACTIVE, _ACTIVE = "INACTIVE", "ACTIVE"


class BindingRefused(Exception):
    """The Network service could not bind a port on the destination (a pre-check error)."""


def vf_ports(ops: Ops, server_ports: ports.ServerPorts,
             dest: Mapping[str, Any] | None, instance_uuid: str) -> dict[str, str]:
    """port id -> the PF provider whose VF the port gets on the destination."""
    if not server_ports or not any(r.vf_group for r in server_ports.requests):
        return {}
    return ports.vf_ports(server_ports.requests,
                          ports.mapping(ops, server_ports.requests, dest, instance_uuid))


def _bindings(network: NetworkClient, port_id: str) -> dict[str, dict[str, Any]]:
    """host -> binding of the port; {} for a port gone or no longer a server's."""
    try:
        return {str(b["host"]): b for b in network.list_bindings(port_id)}
    except NetworkError as exc:
        if exc.status in (400, 404):
            return {}
        raise


def prepare(ops: Ops, server_ports: ports.ServerPorts, host: str,
            dest: Mapping[str, Any] | None, instance_uuid: str,
            pci: Mapping[str, Mapping[str, Any]]) -> None:
    """An INACTIVE binding of every port on `host`: the destination mapping, the VF."""
    if not server_ports:
        return
    network = ports.require_network(ops)
    group_map = ports.mapping(ops, server_ports.requests, dest, instance_uuid)
    by_port = {r.port_id: r for r in server_ports.requests}
    try:
        for port_id in server_ports.port_ids:
            port = network.show_port(port_id)
            if port is None:
                continue
            profile = ports.host_profile(port, by_port.get(port_id), group_map,
                                         pci.get(port_id))
            there = _bindings(network, port_id).get(host)
            if there is not None:
                if there.get("status") == _INACTIVE and there.get("profile") == profile:
                    continue  # done already (a step done again)
                network.delete_binding(port_id, host)
            network.create_binding(port_id, host, profile,
                                   str(port.get("binding:vnic_type") or "normal"))
    except NetworkError as exc:
        if exc.status >= 500 or exc.type == "PortBindingError":
            raise BindingRefused(f"Binding failed for port {port_id} on host {host}: "
                                 f"{exc.message}") from exc
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc


def discard(ops: Ops, server_ports: ports.ServerPorts, host: str | None, instance_uuid: str,
            migration_uuid: str) -> None:
    """Delete the ports' INACTIVE bindings and release the VFs `host` claimed for the move."""
    if not server_ports:
        return
    if ops.network is not None:
        try:
            for port_id in server_ports.port_ids:
                for name, binding in _bindings(ops.network, port_id).items():
                    if binding.get("status") == _INACTIVE:
                        ops.network.delete_binding(port_id, name)
        except NetworkError as exc:
            raise RemoteError(exc.type or "NetworkError", exc.message) from exc
    if host is None or not any(r.vf_group for r in server_ports.requests):
        return
    try:
        # Drops the claim under the migration's key (and a prepared guest, if any).
        ops.call_agent(host, "rollback_live_migration_at_destination",
                       instance_uuid=instance_uuid, migration_uuid=migration_uuid)
    except MessagingError as exc:
        # An agent that does not answer rebuilds its claims from Placement when it
        # starts again, where the instance no longer holds anything of this host.
        LOG.warning("could not release the VFs of %s on %s: %s", instance_uuid, host, exc)


def activate(ops: Ops, server_ports: ports.ServerPorts, dest_host: str, source_host: str,
             migration_uuid: str, gone: Any) -> None:
    """The destination bindings become the active ones; the source bindings are deleted.

    A port without a destination binding (made before the Network service
    kept one, or lost) is bound there directly, as the instance's allocation
    maps it, with the VF the destination holds for the move.
    """
    if not server_ports or gone():
        return
    network = ports.require_network(ops)
    missing = False
    try:
        for port_id in server_ports.port_ids:
            found = _bindings(network, port_id)
            if not found:
                continue
            there = found.get(dest_host)
            if there is None:
                missing = True
                continue
            if there.get("status") == _INACTIVE:
                network.activate_binding(port_id, dest_host)
            if source_host in found:
                network.delete_binding(port_id, source_host)
    except NetworkError as exc:
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc
    if missing:
        ports.rebind(ops, server_ports, dest_host, server_ports.instance_uuid, migration_uuid,
                     gone)
    _own_in_dest_zone(ops, network, server_ports, dest_host)


def _own_in_dest_zone(ops: Ops, network: NetworkClient, server_ports: ports.ServerPorts,
                      dest_host: str) -> None:
    """Each port owned by a compute of another zone: compute:<the destination's zone>
    (only written when it differs, so a step done again writes nothing)."""
    owner = ports.owner_on(ops, dest_host)
    try:
        for port_id in server_ports.port_ids:
            port = network.show_port(port_id)
            current = str((port or {}).get("device_owner") or "")
            if port is not None and current.startswith("compute:") and current != owner:
                network.update_port(port_id, {"device_owner": owner})
    except NetworkError as exc:
        raise RemoteError(exc.type or "NetworkError", exc.message) from exc
