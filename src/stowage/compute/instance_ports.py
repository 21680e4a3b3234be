"""The ports of a server (`instance_ports`): which ports, who made them, what they asked for.

One row per entry of the server's `networks` request, in order. A port the
user passed is recorded by the API in the transaction that creates the
server, so that of two servers booted with one port at once only one can
have it (the unique `port_id`: the other gets PortInUse); a network entry
gets its port when the build creates it (`created`: the delete deletes such
a port, and only unbinds the others, as Nova's `deallocate_for_instance`).

`request` is the port's resource request as the conductor last scheduled it
(`port_requests.PortRequest.to_json()`): the audit adds it to the flavor when
it checks what the server holds. `vif` is what the server view's `addresses`
shows, refreshed whenever compute binds the port (Nova's info cache).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.db.statements import Sql
from stowage.network.standard import try_insert
from stowage.timeutil import utcnow

__all__ = ["InstancePort", "Requested", "record_requested", "of_instance", "of_instances",
           "set_port", "set_request", "set_vif", "forget", "PortTaken", "record_attached",
           "forget_port"]

_T = t.instance_ports


@dataclass(frozen=True)
class Requested:
    """One entry of a boot's `networks`: a port, or a network (and maybe its fixed IP)."""

    port_id: str | None = None
    network_id: str | None = None
    fixed_ip: str | None = None


@dataclass
class InstancePort:
    id: int
    instance_uuid: str
    position: int
    port_id: str | None
    network_id: str | None
    fixed_ip: str | None
    created: bool
    request: dict[str, Any] | None
    vif: dict[str, Any] | None


class PortTaken(Exception):
    """The port is another server's already (the unique `port_id` refused it)."""

    def __init__(self, port_id: str) -> None:
        super().__init__(f"Port {port_id} is still in use.")
        self.port_id = port_id


def _row(row: Any) -> InstancePort:
    return InstancePort(row.id, row.instance_uuid, row.position, row.port_id, row.network_id,
                        row.fixed_ip, bool(row.created),
                        dict(row.request) if row.request else None,
                        dict(row.vif) if row.vif else None)


def record_requested(conn: Connection, instance_uuid: str,
                     requested: Sequence[Requested]) -> None:
    """The server's requested ports and networks, in order; PortTaken if a port is in use.

    Each row goes in its own savepoint, so the caller's transaction survives
    the refusal and can be rolled back as a whole.
    """
    now = utcnow()
    for position, entry in enumerate(requested):
        values = {"instance_uuid": instance_uuid, "position": position,
                  "port_id": entry.port_id, "network_id": entry.network_id,
                  "fixed_ip": entry.fixed_ip, "created": entry.port_id is None,
                  "request": None, "vif": None, "created_at": now}
        if not try_insert(conn, _T, values):
            raise PortTaken(str(entry.port_id))


def of_instance(conn: Connection, instance_uuid: str) -> list[InstancePort]:
    return of_instances(conn, [instance_uuid]).get(instance_uuid, [])


def of_instances(conn: Connection, uuids: Sequence[str]) -> dict[str, list[InstancePort]]:
    """instance uuid -> its ports in request order (only instances that have any)."""
    if not uuids:
        return {}
    found: dict[str, list[InstancePort]] = {}
    for (id_, instance_uuid, position, port_id, network_id, fixed_ip, created, request,
         vif) in _OF_INSTANCES.rows(conn, uuids=list(uuids)):
        found.setdefault(instance_uuid, []).append(InstancePort(
            id_, instance_uuid, position, port_id, network_id, fixed_ip, bool(created),
            _json_of(request), _json_of(vif)))
    return found


# Read by every request and operation about one server, most of which have no ports: as
# SQL text, which skips Core's statement building (db/statements.py).
_OF_INSTANCES = Sql("SELECT id, instance_uuid, position, port_id, network_id, fixed_ip, "
                    "created, request, vif FROM instance_ports WHERE instance_uuid IN :uuids "
                    "ORDER BY instance_uuid, position")


def _json_of(raw: Any) -> dict[str, Any] | None:
    """A JSON column as the driver returns it: text (SQLite, MySQL) or parsed (PostgreSQL)."""
    value = json.loads(raw) if isinstance(raw, str | bytes) else raw  # "null" for None too
    return dict(value) if value else None


def _update(conn: Connection, where: sa.ColumnElement[bool], **values: Any) -> None:
    conn.execute(_T.update().where(where).values(updated_at=utcnow(), **values))


def set_port(conn: Connection, row_id: int, port_id: str) -> None:
    """The port Nova created for a network entry."""
    _update(conn, _T.c.id == row_id, port_id=port_id)


def set_request(conn: Connection, instance_uuid: str,
                requests: Mapping[str, dict[str, Any] | None]) -> None:
    """Each port's resource request as scheduled now (port id -> request JSON or None)."""
    for port_id, request in requests.items():
        _update(conn, sa.and_(_T.c.instance_uuid == instance_uuid, _T.c.port_id == port_id),
                request=request)


def set_vif(conn: Connection, instance_uuid: str, port_id: str, vif: Mapping[str, Any]) -> None:
    _update(conn, sa.and_(_T.c.instance_uuid == instance_uuid, _T.c.port_id == port_id),
            vif=dict(vif))


def forget(conn: Connection, instance_uuid: str) -> None:
    """The server let its ports go (deleted, or its build failed): others may use them."""
    conn.execute(_T.delete().where(_T.c.instance_uuid == instance_uuid))


def record_attached(conn: Connection, instance_uuid: str, entry: Requested) -> int:
    """One more port (or network) of a running server, after its others (an interface
    attach); the row's id. PortTaken if the port is another server's (or this one's)."""
    # SELECT max(position) FROM instance_ports WHERE instance_uuid = :uuid
    last = conn.execute(sa.select(sa.func.max(_T.c.position))
                        .where(_T.c.instance_uuid == instance_uuid)).scalar()
    position = -1 if last is None else int(last)
    values = {"instance_uuid": instance_uuid, "port_id": entry.port_id,
              "network_id": entry.network_id, "fixed_ip": entry.fixed_ip,
              "created": entry.port_id is None, "request": None, "vif": None,
              "created_at": utcnow()}
    for _ in range(3):  # two attaches at once may pick one position: the next one
        position += 1
        if try_insert(conn, _T, {**values, "position": position}):
            break
        if entry.port_id is not None and conn.execute(
                sa.select(_T.c.id).where(_T.c.port_id == entry.port_id)).first():
            raise PortTaken(entry.port_id)
    else:
        raise PortTaken(str(entry.port_id))
    # SELECT id FROM instance_ports WHERE instance_uuid = :uuid AND position = :position
    return int(conn.execute(sa.select(_T.c.id).where(
        _T.c.instance_uuid == instance_uuid,
        _T.c.position == position)).scalar_one())


def forget_port(conn: Connection, row_id: int) -> None:
    """One port of the server let go (a detach, or an attach that failed)."""
    conn.execute(_T.delete().where(_T.c.id == row_id))
