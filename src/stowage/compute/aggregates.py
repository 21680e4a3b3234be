"""Host aggregates: named groups of compute hosts with metadata, and the zones they make.

Nova's rules, kept here without HTTP (the handler maps the errors):

1. Names are unique (a racing create or rename loses on the unique key: 409).
2. A host joins an aggregate once, and only when it runs a nova-compute service.
3. An aggregate with `availability_zone` metadata is an availability zone: its
   hosts are in that zone. A host may be in many aggregates but in one zone
   only, so a host cannot join (and an aggregate cannot take a zone) when that
   would give one of its hosts two zones.
4. A zone cannot be renamed while the aggregate's hosts run instances, whose
   zone would change under them; nor set to an empty name (removing the key is
   refused the same way, as in Nova).
5. Only an empty aggregate can be deleted.

Concurrency: every write locks the aggregate's row first and then the
services rows of the hosts it checks (`SELECT ... FOR UPDATE`; SQLite writes
are serialised anyway), so that two admins cannot both put one host into two
zones; the unique keys catch the rest. The Placement side (the node providers'
aggregates) is mirrored by the caller after the transaction commits.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid as uuidlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import services
from stowage.compute import tables as t
from stowage.errors import Conflict, Invalid, NotFound
from stowage.timeutil import utcnow

__all__ = ["Aggregate", "AZ_KEY", "host_zones", "with_zones", "zone_of", "HostNotFound",
           "list_aggregates", "get", "locked", "create", "hosts_occupied",
           "rename", "check_zone_change", "set_metadata", "add_host", "remove_host", "delete",
           "compute_host", "metadata_by_host", "zone_aggregates", "tenant_aggregates",
           "TENANT_KEY"]

AZ_KEY = "availability_zone"
TENANT_KEY = "filter_tenant_id"  # and filter_tenant_id2, ...: one project per key
_A, _H, _M = t.aggregates, t.aggregate_hosts, t.aggregate_metadata


class HostNotFound(NotFound):
    """No live nova-compute service on that host (Nova's ComputeHostNotFound)."""


@dataclass
class Aggregate:
    id: int
    uuid: str
    name: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    hosts: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def availability_zone(self) -> str | None:
        return self.metadata.get(AZ_KEY)


# --- reads ---------------------------------------------------------------------------
def list_aggregates(conn: Connection, ids: Sequence[int] | None = None) -> list[Aggregate]:
    """Every aggregate (or those of `ids`) with hosts and metadata, by id: three queries."""
    query = sa.select(_A).order_by(_A.c.id)
    if ids is not None:
        query = query.where(_A.c.id.in_(list(ids)))
    found = {row.id: Aggregate(row.id, row.uuid, row.name, row.created_at, row.updated_at)
             for row in conn.execute(query)}
    if not found:
        return []
    for agg_id, host in conn.execute(sa.select(_H.c.aggregate_id, _H.c.host)
                                     .where(_H.c.aggregate_id.in_(list(found)))
                                     .order_by(_H.c.id)):
        found[agg_id].hosts.append(host)
    for agg_id, key, value in conn.execute(sa.select(_M.c.aggregate_id, _M.c.key, _M.c.value)
                                           .where(_M.c.aggregate_id.in_(list(found)))
                                           .order_by(_M.c.id)):
        found[agg_id].metadata[key] = value
    return list(found.values())


def get(conn: Connection, aggregate_id: int) -> Aggregate:
    found = list_aggregates(conn, [aggregate_id]) if 0 < aggregate_id <= 0x7FFFFFFF else []
    if not found:
        raise NotFound(f"Aggregate {aggregate_id} could not be found.")
    return found[0]


def metadata_by_host(conn: Connection) -> dict[str, dict[str, frozenset[str]]]:
    """host -> key -> the values its aggregates give that key (the scheduler reads it)."""
    # SELECT h.host, m.key, m.value FROM aggregate_hosts h
    #   JOIN aggregate_metadata m ON m.aggregate_id = h.aggregate_id
    rows = conn.execute(sa.select(_H.c.host, _M.c.key, _M.c.value)
                        .join(_M, _M.c.aggregate_id == _H.c.aggregate_id))
    found: dict[str, dict[str, set[str]]] = {}
    for host, key, value in rows:
        found.setdefault(host, {}).setdefault(key, set()).add(value)
    return {host: {k: frozenset(v) for k, v in keys.items()} for host, keys in found.items()}


# Past this many hosts one read of every zoned host beats an IN list.
_ZONES_IN_LIST = 500


def host_zones(conn: Connection, hosts: Collection[str] | None = None) -> dict[str, str]:
    """host -> the zone its aggregates give it (the least, should two disagree; the
    API refuses that). Hosts in no zoned aggregate are left out."""
    # SELECT h.host, min(m.value) FROM aggregate_hosts h JOIN aggregate_metadata m
    #   ON m.aggregate_id = h.aggregate_id WHERE m.key = 'availability_zone' GROUP BY h.host
    query = (sa.select(_H.c.host, sa.func.min(_M.c.value))
             .join(_M, _M.c.aggregate_id == _H.c.aggregate_id)
             .where(_M.c.key == AZ_KEY).group_by(_H.c.host))
    if hosts is not None:
        if not hosts:
            return {}
        if len(hosts) <= _ZONES_IN_LIST:
            query = query.where(_H.c.host.in_(sorted(hosts)))
    return {str(host): str(zone) for host, zone in conn.execute(query)}


def with_zones(conn: Connection, found: Sequence[services.Service]) -> list[services.Service]:
    """`found` with each service in its host's zone (services.py): the aggregates are
    the API database's, `conn`, while the services came from a cell's."""
    zones = host_zones(conn, {s.host for s in found})
    return [dataclasses.replace(s, availability_zone=zones[s.host]) if s.host in zones else s
            for s in found]


def zone_of(conn: Connection, service: services.Service | None, default: str) -> str:
    """The zone of one service's host, `default` when it has none (or no service)."""
    if service is None:
        return default
    return with_zones(conn, [service])[0].availability_zone or default


def zone_aggregates(conn: Connection, zone: str) -> list[str]:
    """Uuids of the aggregates that make `zone` (the AZ pre-filter's `member_of`)."""
    query = (sa.select(_A.c.uuid).join(_M, _M.c.aggregate_id == _A.c.id)
             .where(_M.c.key == AZ_KEY, _M.c.value == zone).order_by(_A.c.id))
    return [str(u) for u in conn.execute(query).scalars()]


def tenant_aggregates(conn: Connection, project_id: str) -> list[str]:
    """Uuids of the aggregates reserved for `project_id` by a `filter_tenant_id*` key
    (Nova's tenant isolation pre-filter)."""
    # SELECT DISTINCT a.uuid FROM aggregates a JOIN aggregate_metadata m
    #   ON m.aggregate_id = a.id WHERE m.key LIKE 'filter\_tenant\_id%' AND m.value = :project
    query = (sa.select(_A.c.uuid).distinct().join(_M, _M.c.aggregate_id == _A.c.id)
             .where(_M.c.key.startswith(TENANT_KEY, autoescape=True),
                    _M.c.value == project_id))
    return sorted(str(u) for u in conn.execute(query).scalars())


# --- writes --------------------------------------------------------------------------
def create(conn: Connection, name: str, zone: str | None) -> Aggregate:
    now = utcnow()
    if conn.execute(sa.select(_A.c.id).where(_A.c.name == name)).first() is not None:
        raise Conflict(f"Aggregate {name} already exists.")
    try:
        inserted = conn.execute(_A.insert().values(
            uuid=str(uuidlib.uuid4()), name=name, created_at=now)).inserted_primary_key
    except sa.exc.IntegrityError:
        raise Conflict(f"Aggregate {name} already exists.") from None
    assert inserted is not None
    agg_id = inserted[0]
    if zone:
        conn.execute(_M.insert().values(aggregate_id=agg_id, key=AZ_KEY, value=zone,
                                        created_at=now))
    return get(conn, int(agg_id))


def rename(conn: Connection, aggregate: Aggregate, name: str) -> None:
    if name == aggregate.name:
        return
    if conn.execute(sa.select(_A.c.id).where(_A.c.name == name)).first() is not None:
        raise Conflict(f"Aggregate {name} already exists.")
    try:
        conn.execute(_A.update().where(_A.c.id == aggregate.id)
                     .values(name=name, updated_at=utcnow()))
    except sa.exc.IntegrityError:
        raise Conflict(f"Aggregate {name} already exists.") from None


def locked(conn: Connection, aggregate_id: int, zones: bool = False) -> Aggregate:
    """The aggregate, its row locked for this transaction (rule: aggregate, then hosts).

    With `zones` (a change `check_zone_change` will judge), every zoned
    aggregate is locked with it, all in id order: two changes that could put
    one host in two zones wait for each other (rule 3), and never deadlock.
    """
    if 0 < aggregate_id <= 0x7FFFFFFF:
        # SELECT id FROM aggregates WHERE id = :id [OR id IN (SELECT aggregate_id
        #   FROM aggregate_metadata WHERE key = 'availability_zone')] ORDER BY id FOR UPDATE
        wanted = _A.c.id == aggregate_id
        if zones:
            wanted = sa.or_(wanted, _A.c.id.in_(
                sa.select(_M.c.aggregate_id).where(_M.c.key == AZ_KEY)))
        conn.execute(sa.select(_A.c.id).where(wanted).order_by(_A.c.id).with_for_update())
    return get(conn, aggregate_id)


def check_zone_change(conn: Connection, aggregate: Aggregate, metadata: Mapping[str, object],
                      hosts: Sequence[str] | None = None,
                      occupied: Callable[[Sequence[str]], bool] | None = None) -> str | None:
    """Why `metadata` (new keys of `aggregate`, or its zone for joining `hosts`) would break
    rule 3 or 4; None when it is safe (Nova's is_safe_to_update_az). The caller
    holds `locked(..., zones=True)`.

    `occupied` (given when instances matter) says whether servers live on some of
    the hosts: they are a cell's, so it reads outside this transaction, as Nova does.
    """
    if AZ_KEY not in metadata:
        return None
    zone = metadata[AZ_KEY]
    if not zone:
        return f"Aggregate {aggregate.name} does not support empty named availability zone"
    checked = list(hosts if hosts is not None else aggregate.hosts)
    others = [a for a in _zone_aggregates_of(conn, checked) if a.id != aggregate.id]
    conflicting = [a.availability_zone for a in others if a.availability_zone != zone]
    if conflicting:
        return f"One or more hosts already in availability zone(s) {conflicting!r}"
    if occupied is not None and zone != aggregate.availability_zone and checked \
            and occupied(checked):
        return "One or more hosts contain instances in this zone"
    return None


def hosts_occupied(conn: Connection, hosts: Sequence[str]) -> bool:
    """Whether a live server is on one of `hosts` (a cell database's `conn`)."""
    i = t.instances
    # SELECT count(*) FROM instances WHERE deleted = 0 AND host IN (:hosts)
    return bool(conn.execute(sa.select(sa.func.count()).select_from(i).where(
        i.c.deleted == 0, i.c.host.in_(list(hosts)))).scalar_one())


def _zone_aggregates_of(conn: Connection, hosts: Sequence[str]) -> list[Aggregate]:
    if not hosts:
        return []
    ids = conn.execute(sa.select(_H.c.aggregate_id).distinct()
                       .join(_M, _M.c.aggregate_id == _H.c.aggregate_id)
                       .where(_H.c.host.in_(list(hosts)), _M.c.key == AZ_KEY)).scalars()
    return list_aggregates(conn, list(ids))


def set_metadata(conn: Connection, aggregate: Aggregate, metadata: Mapping[str, str | None]
                 ) -> None:
    """Add or replace keys; a None value deletes its key (absent keys are ignored)."""
    now = utcnow()
    for key, value in metadata.items():
        if value is None:
            conn.execute(_M.delete().where(_M.c.aggregate_id == aggregate.id, _M.c.key == key))
        elif key in aggregate.metadata:
            conn.execute(_M.update().where(_M.c.aggregate_id == aggregate.id, _M.c.key == key)
                         .values(value=value))
        else:
            conn.execute(_M.insert().values(aggregate_id=aggregate.id, key=key, value=value,
                                            created_at=now))
    conn.execute(_A.update().where(_A.c.id == aggregate.id).values(updated_at=now))


def add_host(conn: Connection, aggregate: Aggregate, host: str) -> None:
    if host in aggregate.hosts:
        raise Conflict(f"Aggregate {aggregate.id} already has host {host}.")
    try:
        conn.execute(_H.insert().values(aggregate_id=aggregate.id, host=host,
                                        created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise Conflict(f"Aggregate {aggregate.id} already has host {host}.") from None


def remove_host(conn: Connection, aggregate: Aggregate, host: str) -> None:
    done = conn.execute(_H.delete().where(_H.c.aggregate_id == aggregate.id, _H.c.host == host))
    if not done.rowcount:
        raise NotFound(f"Aggregate {aggregate.id} has no host {host}.")


def delete(conn: Connection, aggregate: Aggregate) -> None:
    """Rule 5; the hosts are checked again under the row lock `locked` took."""
    if aggregate.hosts:
        raise Invalid("Host aggregate is not empty")
    conn.execute(_M.delete().where(_M.c.aggregate_id == aggregate.id))
    conn.execute(_A.delete().where(_A.c.id == aggregate.id))


def compute_host(conn: Connection, host: str) -> services.Service:
    """The host's nova-compute service; exact match (MySQL's collation is exact here)."""
    found = services.compute_service(conn, host)
    if found is None or found.host != host:
        raise HostNotFound(f"Compute host {host} could not be found.")
    return found
