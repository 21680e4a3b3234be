"""What an operator's gauges read of a cell's records: counts, and lean rows of every node
and service (plain tuples of the few columns a scrape reports: a scrape of 1,000 hosts
builds no record objects)."""

from __future__ import annotations

import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t

__all__ = ["NodeUsage", "ServiceState", "live_instances", "node_usages", "service_states"]


def live_instances(conn: Connection) -> int:
    """Servers not deleted in this cell database (what `GET /servers?all_tenants` lists)."""
    # SELECT count(*) FROM instances WHERE deleted = 0
    i = t.instances
    return int(conn.execute(sa.select(sa.func.count()).select_from(i)
                            .where(i.c.deleted == 0)).scalar_one())


class NodeUsage(NamedTuple):
    """A compute node's sizes and usage, as os-hypervisors shows them."""

    host: str
    hypervisor_hostname: str
    running_vms: int
    vcpus: int
    vcpus_used: int
    memory_mb: int
    memory_mb_used: int
    local_gb: int
    local_gb_used: int


def node_usages(conn: Connection) -> list[NodeUsage]:
    """Every live compute node of this cell database."""
    n = t.compute_nodes
    # SELECT host, hypervisor_hostname, running_vms, vcpus, ... FROM compute_nodes
    #  WHERE deleted = 0 ORDER BY id
    rows = conn.execute(sa.select(n.c.host, n.c.hypervisor_hostname, n.c.running_vms,
                                  n.c.vcpus, n.c.vcpus_used, n.c.memory_mb,
                                  n.c.memory_mb_used, n.c.local_gb, n.c.local_gb_used)
                        .where(n.c.deleted == 0).order_by(n.c.id)).all()
    return [NodeUsage(*row) for row in rows]


class ServiceState(NamedTuple):
    """What os-services shows of a service, and what decides whether it is up."""

    uuid: str
    host: str
    binary: str
    disabled: bool
    disabled_reason: str | None
    forced_down: bool
    last_seen_up: datetime.datetime | None


def service_states(conn: Connection) -> list[ServiceState]:
    """Every live service of this cell database."""
    s = t.services
    # SELECT uuid, host, binary, disabled, disabled_reason, forced_down, last_seen_up
    #   FROM services WHERE deleted = 0 ORDER BY id
    rows = conn.execute(sa.select(s.c.uuid, s.c.host, s.c.binary, s.c.disabled,
                                  s.c.disabled_reason, s.c.forced_down, s.c.last_seen_up)
                        .where(s.c.deleted == 0).order_by(s.c.id)).all()
    return [ServiceState(*row) for row in rows]
