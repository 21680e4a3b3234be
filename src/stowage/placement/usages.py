"""Usages: how much of each resource class is allocated, per provider or per project/user.

Per provider, every class in the provider's inventory appears (0 when
unused). Per project (1.9), only classes with allocations appear; from 1.38
the totals are grouped by consumer type with a count of distinct consumers,
where ``all`` lumps every type together and ``unknown`` means "no type"
(consumers written before 1.38).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import tables as t
from stowage.placement.consumers import UNKNOWN_TYPE

__all__ = ["for_provider", "for_project", "TypedUsage", "by_consumer_type", "ALL_TYPES"]

ALL_TYPES = "all"

_A = t.allocations
_C = t.consumers
_RC = t.resource_classes


def for_provider(conn: Connection, provider_id: int) -> dict[str, int]:
    # SELECT rc.name, COALESCE(SUM(a.used), 0) FROM inventories i
    # JOIN resource_classes rc ON i.resource_class_id = rc.id
    # LEFT JOIN allocations a ON a.resource_provider_id = i.resource_provider_id
    #                        AND a.resource_class_id = i.resource_class_id
    # WHERE i.resource_provider_id = :id GROUP BY rc.name
    inv = t.inventories
    joined = inv.join(_RC, inv.c.resource_class_id == _RC.c.id).outerjoin(
        _A, sa.and_(_A.c.resource_provider_id == inv.c.resource_provider_id,
                    _A.c.resource_class_id == inv.c.resource_class_id))
    rows = conn.execute(sa.select(_RC.c.name, sa.func.coalesce(sa.func.sum(_A.c.used), 0))
                        .select_from(joined).where(inv.c.resource_provider_id == provider_id)
                        .group_by(_RC.c.name))
    return {name: int(used) for name, used in rows}


def _owned_by(query: sa.Select[Any], project_id: str, user_id: str | None) -> sa.Select[Any]:
    """Restrict a query over allocations JOIN consumers to one project (and user)."""
    project = sa.select(t.projects.c.id).where(t.projects.c.external_id == project_id)
    query = query.where(_C.c.project_id.in_(project.scalar_subquery()))
    if user_id:
        user = sa.select(t.users.c.id).where(t.users.c.external_id == user_id)
        query = query.where(_C.c.user_id.in_(user.scalar_subquery()))
    return query


def for_project(conn: Connection, project_id: str, user_id: str | None = None) -> dict[str, int]:
    # SELECT rc.name, SUM(a.used) FROM allocations a
    # JOIN consumers c ON a.consumer_id = c.uuid JOIN resource_classes rc ON ...
    # WHERE c.project_id = (SELECT id FROM projects WHERE external_id = :project)
    #   [AND c.user_id = (SELECT id FROM users WHERE external_id = :user)]
    # GROUP BY rc.name
    joined = _A.join(_C, _A.c.consumer_id == _C.c.uuid).join(
        _RC, _A.c.resource_class_id == _RC.c.id)
    query = sa.select(_RC.c.name, sa.func.sum(_A.c.used)).select_from(joined)
    query = _owned_by(query, project_id, user_id).group_by(_RC.c.name)
    return {name: int(used) for name, used in conn.execute(query)}


@dataclass
class TypedUsage:
    consumer_count: int
    usages: dict[str, int]


def _lumped(conn: Connection, project_id: str, user_id: str | None,
            key: str) -> dict[str, TypedUsage]:
    """`all` (every consumer) or `unknown` (untyped consumers) as a single group.

    The consumer count rides in the same statement as the sums (an
    uncorrelated scalar subquery), so both come from one snapshot.
    """
    untyped = key == UNKNOWN_TYPE
    counted = _owned_by(sa.select(sa.func.count(sa.distinct(_A.c.consumer_id)))
                        .select_from(_A.join(_C, _A.c.consumer_id == _C.c.uuid)),
                        project_id, user_id)
    joined = _A.join(_C, _A.c.consumer_id == _C.c.uuid).join(
        _RC, _A.c.resource_class_id == _RC.c.id)
    query = _owned_by(sa.select(_RC.c.name, sa.func.sum(_A.c.used)).select_from(joined),
                      project_id, user_id)
    if untyped:
        counted = counted.where(_C.c.consumer_type_id.is_(None))
        query = query.where(_C.c.consumer_type_id.is_(None))
    query = query.add_columns(counted.correlate(None).scalar_subquery()).group_by(_RC.c.name)
    usages, consumers = {}, 0
    for name, used, count in conn.execute(query):
        usages[name], consumers = int(used), int(count)
    return {key: TypedUsage(consumers, usages)} if usages else {}


def by_consumer_type(conn: Connection, project_id: str, user_id: str | None = None,
                     consumer_type: str | None = None) -> dict[str, TypedUsage]:
    """Usages grouped by consumer type name (1.38); untyped consumers count as `unknown`."""
    if consumer_type in (ALL_TYPES, UNKNOWN_TYPE):
        return _lumped(conn, project_id, user_id, consumer_type)
    ct = t.consumer_types
    # One statement, so that the sums and the counts come from one snapshot: in two, a
    # consumer of a new type committed in between (a migration's, mid-resize) had sums
    # and no count (500 under load, bench/scale.py).
    # SELECT s.type, s.rc, s.used, n.consumers FROM
    #   (SELECT COALESCE(ct.name, '') type, rc.name rc, SUM(a.used) used
    #    FROM allocations a JOIN consumers c ON a.consumer_id = c.uuid
    #    LEFT JOIN consumer_types ct ON c.consumer_type_id = ct.id JOIN resource_classes rc
    #    WHERE <owned by project/user> [AND ct.name = :type] GROUP BY type, rc.name) s
    # JOIN (SELECT COALESCE(ct.name, '') type, COUNT(DISTINCT a.consumer_id) consumers
    #       FROM <the same> GROUP BY type) n ON n.type = s.type
    joined = (_A.join(_C, _A.c.consumer_id == _C.c.uuid)
              .outerjoin(ct, _C.c.consumer_type_id == ct.c.id)
              .join(_RC, _A.c.resource_class_id == _RC.c.id))
    kind = sa.func.coalesce(ct.c.name, "")

    def grouped(*columns: Any) -> Any:
        query = _owned_by(sa.select(kind.label("kind"), *columns).select_from(joined),
                          project_id, user_id)
        return query.where(ct.c.name == consumer_type) if consumer_type else query

    sums = grouped(_RC.c.name.label("rc"), sa.func.sum(_A.c.used).label("used")) \
        .group_by(kind, _RC.c.name).subquery()
    counts = grouped(sa.func.count(sa.distinct(_A.c.consumer_id)).label("consumers")) \
        .group_by(kind).subquery()
    rows = conn.execute(sa.select(sums.c.kind, sums.c.rc, sums.c.used, counts.c.consumers)
                        .select_from(sums.join(counts, counts.c.kind == sums.c.kind)))
    result: dict[str, TypedUsage] = {}
    for type_name, rc_name, used, consumers in rows:
        group = result.setdefault(type_name or UNKNOWN_TYPE, TypedUsage(int(consumers), {}))
        group.usages[rc_name] = int(used)
    return result
