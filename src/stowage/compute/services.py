"""Service and compute node records: who runs where, whether it is up, what a node has.

A service row is one worker (nova-compute per host, nova-conductor,
nova-scheduler). It is *up* while its heartbeat (`last_seen_up`) is younger
than `service_down_time` and nobody forced it down; *disabled* services stay
up but take no new instances. A compute node row is the hypervisor of one
nova-compute service; its uuid is its resource provider's uuid. Both are
soft-deleted (`deleted` = id) like Nova's, so a re-registered host gets a
fresh row while old references still resolve.

A service's `availability_zone`, as read here, is the zone its own row names
(the zone the host's configuration gave it, which the agent writes from the
hosts file), else None. Its host's zone -- the `availability_zone` metadata of
a host aggregate the host is in, Nova's only source of zones, else that
column -- needs the aggregates, which live in the API database while services
live in a cell's: `aggregates.with_zones` applies them, as Nova's
`availability_zones.set_availability_zones` does.
"""

from __future__ import annotations

import datetime
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.records import Columns
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.db.statements import Sql
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["Service", "ComputeNode", "COMPUTE", "CONDUCTOR", "SCHEDULER", "INTERNAL_ZONE",
           "ensure_service", "heartbeat", "is_up", "heard_from", "list_services", "get_service",
           "service_by_host", "compute_service", "service_from_raw", "SERVICE",
           "update_service", "delete_service",
           "compute_nodes_of_host",
           "register_controller_services", "ensure_compute_node", "compute_node_of_host",
           "update_compute_node", "list_compute_nodes", "get_compute_node", "workloads",
           "select_list"]

COMPUTE = "nova-compute"
CONDUCTOR = "nova-conductor"
SCHEDULER = "nova-scheduler"
# Nova's internal_service_availability_zone: where non-compute services live.
INTERNAL_ZONE = "internal"
_TOPICS = {COMPUTE: "compute", CONDUCTOR: "conductor", SCHEDULER: "scheduler"}

_S = t.services
# The largest id of an INTEGER column (services.id).
_MAX_ID = 0x7FFFFFFF
_N = t.compute_nodes


@dataclass
class Service:
    id: int
    uuid: str
    host: str
    binary: str
    topic: str | None
    availability_zone: str | None
    report_count: int
    disabled: bool
    disabled_reason: str | None
    forced_down: bool
    last_seen_up: datetime.datetime | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


@dataclass
class ComputeNode:
    id: int
    uuid: str
    service_id: int | None
    host: str
    hypervisor_hostname: str
    hypervisor_type: str
    hypervisor_version: int
    host_ip: str | None
    vcpus: int
    memory_mb: int
    local_gb: int
    vcpus_used: int
    memory_mb_used: int
    local_gb_used: int
    running_vms: int
    cpu_allocation_ratio: float
    ram_allocation_ratio: float
    disk_allocation_ratio: float
    pci_stats: dict[str, Any]
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def select_list(dialect: Any, alias: str) -> str:
    """`SERVICE`'s columns of `services` aliased `alias`, for hand-written SQL."""
    quote = dialect.identifier_preparer.quote
    return ", ".join(f"{alias}.{quote(name)}" for name in _SERVICE.names)


def _service(row: Any) -> Service:
    m = row._mapping
    return Service(**{f.name: m[f.name] for f in fields(Service)})


def _node(row: Any) -> ComputeNode:
    m = row._mapping
    return ComputeNode(**{f.name: m[f.name] for f in fields(ComputeNode)})


# --- services ------------------------------------------------------------------
def ensure_service(conn: Connection, host: str, binary: str,
                   availability_zone: str | None = None, version: int | None = None) -> Service:
    """The live service row of (host, binary), created when missing; the AZ is kept
    current, and the service `version` when given (a compute agent's, see upgrade.py)."""
    row = conn.execute(sa.select(_S).where(_S.c.host == host, _S.c.binary == binary,
                                           _S.c.deleted == 0)).first()
    if row is None:
        now = utcnow()
        conn.execute(_S.insert().values(
            uuid=str(uuidlib.uuid4()), host=host, binary=binary, topic=_TOPICS.get(binary),
            availability_zone=availability_zone, report_count=0, disabled=False,
            forced_down=False, last_seen_up=now, version=version or 0, created_at=now,
            deleted=0))
        return service_by_host(conn, host, binary)
    found = _service(row)  # its own zone column, not its host's zone
    if version is not None:
        # UPDATE services SET version = :version WHERE id = :id AND version != :version
        conn.execute(_S.update().where(_S.c.id == found.id, _S.c.version != version)
                     .values(version=version))
    if found.availability_zone != availability_zone:
        return update_service(conn, found.id, availability_zone=availability_zone)
    return service_by_host(conn, host, binary)


def heartbeat(conn: Connection, host: str, binary: str) -> bool:
    """Record that the service is alive; False when its row is gone (deleted by an admin)."""
    now = utcnow()
    done = conn.execute(_S.update().where(_S.c.host == host, _S.c.binary == binary,
                                          _S.c.deleted == 0)
                        .values(last_seen_up=now, report_count=_S.c.report_count + 1))
    return bool(done.rowcount)


def heartbeat_many(conn: Connection, hosts: Sequence[str], binary: str) -> list[str]:
    """`heartbeat` for many hosts of one binary in one statement; the hosts whose row is gone."""
    if not hosts:
        return []
    now = utcnow()
    live = (_S.c.host.in_(hosts), _S.c.binary == binary, _S.c.deleted == 0)
    done = conn.execute(_S.update().where(*live)
                        .values(last_seen_up=now, report_count=_S.c.report_count + 1))
    if done.rowcount == len(hosts):
        return []
    found = set(conn.execute(sa.select(_S.c.host).where(*live)).scalars())
    return [host for host in hosts if host not in found]


def is_up(service: Service, settings: ComputeSettings,
          now: datetime.datetime | None = None) -> bool:
    """Nova's DB servicegroup rule: not forced down and heard from within service_down_time."""
    return heard_from(service.forced_down, service.last_seen_up, settings, now)


def heard_from(forced_down: bool, last_seen_up: datetime.datetime | None,
               settings: ComputeSettings, now: datetime.datetime | None = None) -> bool:
    """`is_up` on the two columns it reads, for callers that read only those (the scheduler)."""
    if forced_down or last_seen_up is None:
        return False
    elapsed = ((now or utcnow()) - last_seen_up).total_seconds()
    return abs(elapsed) <= settings.service_down_time


def list_services(conn: Connection, host: str | None = None,
                  binary: str | None = None) -> list[Service]:
    query = sa.select(_S).where(_S.c.deleted == 0).order_by(_S.c.id)
    if host is not None:
        query = query.where(_S.c.host == host)
    if binary is not None:
        query = query.where(_S.c.binary == binary)
    return [_service(row) for row in conn.execute(query)]


def get_service(conn: Connection, ident: int | str) -> Service:
    """By integer id or by uuid (what the API shows before and since 2.53).

    An id no INTEGER column can hold names no service; asking the database
    would overflow its driver (SQLite refuses integers beyond 64 bits).
    """
    if isinstance(ident, int) and not 0 < ident <= _MAX_ID:
        raise NotFound(f"Service {ident} could not be found.")
    column = _S.c.id if isinstance(ident, int) else _S.c.uuid
    row = conn.execute(sa.select(_S).where(column == ident, _S.c.deleted == 0)).first()
    if row is None:
        raise NotFound(f"Service {ident} could not be found.")
    return _service(row)


def service_by_host(conn: Connection, host: str, binary: str) -> Service:
    row = conn.execute(sa.select(_S).where(_S.c.host == host, _S.c.binary == binary,
                                                  _S.c.deleted == 0)).first()
    if row is None:
        raise NotFound(f"Service {binary} on host {host} could not be found.")
    return _service(row)


_SERVICE = SERVICE = Columns(_S, [f.name for f in fields(Service)])
_BY_HOST: dict[str, Sql] = {}


def service_from_raw(conn: Connection, row: Sequence[Any]) -> Service:
    """A service from a raw row of `SERVICE`'s columns."""
    return Service(**_SERVICE.load(conn, row))


def compute_service(conn: Connection, host: str) -> Service | None:
    """The host's live nova-compute service, or None (every server view asks this)."""
    statement = _BY_HOST.get(conn.dialect.name)
    if statement is None:
        # `binary` is a reserved word on MySQL: quoted as the dialect quotes it.
        quote = conn.dialect.identifier_preparer.quote
        names = select_list(conn.dialect, "s")
        statement = _BY_HOST[conn.dialect.name] = Sql(
            f"SELECT {names} FROM services s WHERE s.host = :host AND "
            f"s.{quote('binary')} = :binary AND s.deleted = 0")
    row = statement.first(conn, host=host, binary=COMPUTE)
    return None if row is None else service_from_raw(conn, row)


_UPDATABLE = frozenset({"disabled", "disabled_reason", "forced_down", "availability_zone"})


def update_service(conn: Connection, service_id: int, **values: Any) -> Service:
    unknown = set(values) - _UPDATABLE
    if unknown:
        raise ValueError(f"services cannot update {sorted(unknown)}")
    conn.execute(_S.update().where(_S.c.id == service_id, _S.c.deleted == 0)
                 .values(updated_at=utcnow(), **values))
    return get_service(conn, service_id)


def delete_service(conn: Connection, service_id: int) -> list[ComputeNode]:
    """Soft-delete the service and its compute nodes; returns the nodes (their providers go too).
    """
    service = get_service(conn, service_id)
    nodes = [n for n in compute_nodes_of_host(conn, service.host)
             if service.binary == COMPUTE]
    now = utcnow()
    for node in nodes:
        conn.execute(_N.update().where(_N.c.id == node.id)
                     .values(deleted=_N.c.id, updated_at=now))
    conn.execute(_S.update().where(_S.c.id == service.id)
                 .values(deleted=_S.c.id, updated_at=now))
    return nodes


def register_controller_services(db: Database, host: str,
                                 binaries: Sequence[str] = (CONDUCTOR, SCHEDULER)) -> None:
    """The conductor and/or scheduler rows of this process's host, marked alive now.

    Their heartbeat is `heartbeat(conn, host, CONDUCTOR)` / `SCHEDULER` on the
    same period as the agents', or they show as down after service_down_time.
    Several processes of one binary on one host share its row, as Nova's do;
    when two start at once, one creates it and the other, refused by the
    unique (host, binary, deleted) key, finds it on its second try.
    """
    try:
        _register(db, host, binaries)
    except sa.exc.IntegrityError:
        _register(db, host, binaries)


def _register(db: Database, host: str, binaries: Sequence[str]) -> None:
    with db.write() as conn:
        for binary in binaries:
            ensure_service(conn, host, binary, INTERNAL_ZONE)
            heartbeat(conn, host, binary)


# --- compute nodes ------------------------------------------------------------------
def ensure_compute_node(conn: Connection, uuid: str, host: str, service_id: int,
                        values: Mapping[str, Any]) -> ComputeNode:
    """The node row `uuid`, created for `host` when missing; `values` are written either way."""
    now = utcnow()
    done = conn.execute(_N.update().where(_N.c.uuid == uuid, _N.c.deleted == 0)
                        .values(service_id=service_id, updated_at=now, **values))
    if not done.rowcount:
        defaults = {"hypervisor_hostname": host, "hypervisor_type": "fake",
                    "hypervisor_version": 1000, "vcpus_used": 0, "memory_mb_used": 0,
                    "local_gb_used": 0, "running_vms": 0, "pci_stats": {}}
        conn.execute(_N.insert().values(**{**defaults, **values}, uuid=uuid, host=host,
                                        service_id=service_id, created_at=now, deleted=0))
    return get_compute_node(conn, uuid)


def compute_node_of_host(conn: Connection, host: str) -> ComputeNode | None:
    nodes = compute_nodes_of_host(conn, host)
    return nodes[0] if nodes else None


def compute_nodes_of_host(conn: Connection, host: str) -> list[ComputeNode]:
    query = sa.select(_N).where(_N.c.host == host, _N.c.deleted == 0).order_by(_N.c.id)
    return [_node(row) for row in conn.execute(query)]


def update_compute_node(conn: Connection, uuid: str, **values: Any) -> None:
    conn.execute(_N.update().where(_N.c.uuid == uuid, _N.c.deleted == 0)
                 .values(updated_at=utcnow(), **values))


def list_compute_nodes(conn: Connection, hostname_pattern: str | None = None,
                       limit: int | None = None, after_id: int | None = None,
                       ) -> list[ComputeNode]:
    """Live nodes by id; `hostname_pattern` matches as a substring, as Nova's search does."""
    query = sa.select(_N).where(_N.c.deleted == 0).order_by(_N.c.id)
    if hostname_pattern is not None:
        # WHERE hypervisor_hostname LIKE '%pattern%' (unescaped: Nova lets % and _ match)
        query = query.where(_N.c.hypervisor_hostname.like(f"%{hostname_pattern}%"))
    if after_id is not None:
        query = query.where(_N.c.id > after_id)
    if limit is not None:
        query = query.limit(limit)
    return [_node(row) for row in conn.execute(query)]


def workloads(conn: Connection) -> dict[str, int]:
    """host -> instances with a task in progress (Nova's `current_workload`)."""
    i = t.instances
    # SELECT host, count(*) FROM instances
    #  WHERE deleted = 0 AND task_state IS NOT NULL AND host IS NOT NULL GROUP BY host
    rows = conn.execute(sa.select(i.c.host, sa.func.count()).where(
        i.c.deleted == 0, i.c.task_state.is_not(None), i.c.host.is_not(None))
        .group_by(i.c.host))
    return {host: int(count) for host, count in rows}


def get_compute_node(conn: Connection, ident: int | str) -> ComputeNode:
    """By integer id or by uuid (what os-hypervisors shows before and since 2.53)."""
    column = _N.c.id if isinstance(ident, int) else _N.c.uuid
    row = conn.execute(sa.select(_N).where(column == ident, _N.c.deleted == 0)).first()
    if row is None:
        raise NotFound(f"Compute host {ident} could not be found.")
    return _node(row)
