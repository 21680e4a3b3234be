"""Rolling upgrades: compute service versions, the compute RPC pin, and what an old compute
cannot carry -- a move of a server whose ports have resource requests (Nova's rules).

Each compute agent writes its service version into its `services` row when it
starts (`services.version`, as Nova's `Service.version`); a hosts-file entry may
declare an older `service_version` to play an old compute. The numbers are
Nova's:

    SERVICE_VERSION        66   what a current stowage compute reports (Nova 2023.2)
    QOS_MOVE_ALL_COMPUTES  49   Nova 21.0 (Ussuri): the API refuses resize and migrate of a
                                server whose ports have resource requests until every
                                nova-compute is at least this (400, `refusal()`)
    QOS_MOVE_HOST          39   Nova's conductor: a destination below this, or a compute
                                RPC pinned below 5.2, cannot take such a move; the
                                alternates are tried, and with none left the move fails
                                with MaxRetriesExceeded ("Exhausted all hosts available
                                during compute service level check ...")
    QOS_MOVE_RPC           5.2  the compute RPC version whose prep_resize carries the
                                request spec (the ports' groups and mapping)
    QOS_ATTACH             55   Nova 23.0 (Wallaby): the API refuses attaching a port with a
                                resource request to a server whose host's compute is older
                                (400 AttachInterfaceWithQoSPolicyNotSupported,
                                `attach_refusal()`)

`[upgrade_levels] compute` pins the compute RPC version the conductor may
send: "auto" (the default) is the version every running compute understands,
read from the lowest service version (`AUTO_RPC`, Nova's service version
history); an explicit "5.1", "6.0", ... is taken as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import instance_ports
from stowage.compute import tables as t
from stowage.network.resource_request import read

__all__ = ["SERVICE_VERSION", "QOS_MOVE_ALL_COMPUTES", "QOS_MOVE_HOST", "QOS_MOVE_RPC",
           "CURRENT_RPC", "parse_rpc", "min_compute_version", "host_version", "rpc_pin",
           "refusal", "host_takes_qos_move", "QOS_ATTACH", "attach_refusal"]

SERVICE_VERSION = 66
QOS_MOVE_ALL_COMPUTES = 49
QOS_MOVE_HOST = 39
QOS_MOVE_RPC = (5, 2)
QOS_ATTACH = 55
CURRENT_RPC = (6, 2)
# lowest compute service version -> the compute RPC version "auto" pins to (the first
# row whose version it reaches): Nova's SERVICE_VERSION_HISTORY, coarsely.
AUTO_RPC: tuple[tuple[int, tuple[int, int]], ...] = (
    (66, CURRENT_RPC), (57, (6, 0)), (39, QOS_MOVE_RPC), (35, (5, 0)), (0, (4, 22)))
_S = t.services


def parse_rpc(text: str) -> tuple[int, int] | None:
    """"5.2" -> (5, 2); "auto" -> None. Raises ValueError for anything else."""
    if text == "auto":
        return None
    major, _, minor = text.partition(".")
    if not major.isdigit() or (minor and not minor.isdigit()):
        raise ValueError(f"[upgrade_levels] compute must be 'auto' or a version like '5.2', "
                         f"not {text!r}")
    return int(major), int(minor or 0)


def min_compute_version(conn: Connection) -> int | None:
    """The lowest version of the compute services (None: there is none)."""
    # SELECT min(version) FROM services WHERE binary = 'nova-compute' AND deleted = 0
    found = conn.execute(sa.select(sa.func.min(_S.c.version)).where(
        _S.c.binary == "nova-compute", _S.c.deleted == 0)).scalar()
    return None if found is None else int(found)


def host_version(conn: Connection, host: str) -> int:
    """The version of `host`'s compute service (0: no such service)."""
    # SELECT version FROM services WHERE host = :host AND binary = 'nova-compute' AND deleted = 0
    found = conn.execute(sa.select(_S.c.version).where(
        _S.c.host == host, _S.c.binary == "nova-compute", _S.c.deleted == 0)).scalar()
    return int(found or 0)


def rpc_pin(conn: Connection, setting: str) -> tuple[int, int]:
    """The compute RPC version the conductor may send (see the module docstring)."""
    pinned = parse_rpc(setting)
    if pinned is not None:
        return pinned
    lowest = min_compute_version(conn)
    if lowest is None:
        return CURRENT_RPC
    return next(rpc for version, rpc in AUTO_RPC if lowest >= version)


def refusal(conn: Connection, instance_uuid: str, action: str) -> str | None:
    """The API's 400 for a resize/migrate of a server with resource-requesting ports while
    some compute is older than Ussuri's (None: allowed)."""
    if not any(row.request and row.request.get("format")
               for row in instance_ports.of_instance(conn, instance_uuid)):
        return None
    lowest = min_compute_version(conn)
    if lowest is not None and lowest < QOS_MOVE_ALL_COMPUTES:
        return (f"The {action} action on a server with ports having resource requests, like "
                "a port with a QoS minimum bandwidth policy, is not supported until every "
                "nova-compute is upgraded to Ussuri")
    return None


def host_takes_qos_move(conn: Connection, host: str, setting: str) -> bool:
    """Nova's `_support_resource_request`: the host is new enough and the RPC is not
    pinned below the version that carries the request spec."""
    return (host_version(conn, host) >= QOS_MOVE_HOST
            and rpc_pin(conn, setting) >= QOS_MOVE_RPC)


def attach_refusal(conn: Connection, instance_uuid: str, host: str,
                   port: Mapping[str, Any]) -> str | None:
    """The API's 400 for attaching `port`, which has a resource request, to a server whose
    host's compute is older than Wallaby's (None: allowed)."""
    if not read(str(port.get("id")), port.get("resource_request")).groups:
        return None
    if host_version(conn, host) >= QOS_ATTACH:
        return None
    return (f"Attaching interfaces with QoS policy is not supported for instance "
            f"{instance_uuid}.")
