"""The `/ports/{id}/bindings` sub-resource: list, create, update, activate and delete a
port's bindings, each inside the port's locked write (see `ports.locked`).

The rules themselves live in `bindings`; this module only finds the port,
checks it is a server's port and hands over its current bindings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.network import bindings, ports
from stowage.network.bindings import PortBinding
from stowage.network.policy import Guard

__all__ = ["list_bindings", "get_binding", "create", "update", "activate", "delete"]


def _port(conn: Connection, ctx: RequestContext, port_id: str) -> ports.Port:
    port = ports.get(conn, ctx, port_id)
    bindings.require_compute_port(port_id, port.device_owner)
    return port


def _locked(conn: Connection, guard: Guard, port_id: str) -> ports.Port:
    _port(conn, guard.ctx, port_id)
    return ports.locked(conn, guard, port_id, None, "update_port")


def list_bindings(conn: Connection, ctx: RequestContext, port_id: str) -> list[PortBinding]:
    return _port(conn, ctx, port_id).bindings


def get_binding(conn: Connection, ctx: RequestContext, port_id: str,
                host: str) -> PortBinding:
    return bindings.find(_port(conn, ctx, port_id).bindings, host, port_id)


def create(conn: Connection, guard: Guard, port_id: str,
           values: Mapping[str, Any]) -> PortBinding:
    port = _locked(conn, guard, port_id)
    return bindings.add_inactive(conn, port_id, port.bindings, values["host"],
                                 values.get("vnic_type", "normal"),
                                 values.get("profile") or {}, port.segment)


def update(conn: Connection, guard: Guard, port_id: str, host: str,
           values: Mapping[str, Any]) -> PortBinding:
    port = _locked(conn, guard, port_id)
    binding = bindings.find(port.bindings, host, port_id)
    changes = dict(values)
    if "profile" in changes and changes["profile"] is None:
        changes["profile"] = {}
    return bindings.update_host(conn, binding, changes, port.segment)


def activate(conn: Connection, guard: Guard, port_id: str, host: str) -> PortBinding:
    port = _locked(conn, guard, port_id)
    return bindings.activate(conn, port_id, port.bindings, host)


def delete(conn: Connection, guard: Guard, port_id: str, host: str) -> None:
    port = _locked(conn, guard, port_id)
    bindings.remove(conn, port_id, port.bindings, host)
