"""Network quotas as Neutron keeps them (its DbQuotaDriver): limits per project and
resource, usage counted from the records, and the check every create makes.

- A project's limit of a resource is its row in `network_quotas`, else
  Neutron's default (`DEFAULTS`); -1 is unlimited. Deleting a project's quota
  puts every resource back to its default.
- Usage is counted, not tracked: a resource's records whose `project_id` is
  the project's. The `default` security group and the rules Neutron gives
  every group count like any other; making them is never refused (Neutron
  checks only the records a request asks for).
- `claim()` is the check of a create, inside its transaction: it locks the
  project's row in `network_quota_holds`, then counts. Two creators of one
  project are thus counted one after the other (READ COMMITTED on PostgreSQL
  and MySQL, one writer at a time on SQLite), so they cannot exceed the limit
  together; over it is 409 OverQuota.

Policy (Neutron's rule names, secure-RBAC defaults in the service's rule
table, network/policy.py, which an operator's `[policy]` file overrides):
reading a quota takes `get_quota` unless the project is the caller's own;
changing or deleting one takes `update_quota` / `delete_quota`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.standard import try_insert

__all__ = ["DEFAULTS", "authorize", "limits", "all_limits", "usage", "update",
           "delete", "claim", "check_limits"]

# Neutron's [quotas] defaults, in the order its API lists them.
DEFAULTS: dict[str, int] = {"network": 100, "subnet": 100, "port": 500, "router": 10,
                            "floatingip": 50, "security_group": 10,
                            "security_group_rule": 100, "subnetpool": -1}
_Q = t.network_quotas
_H = t.network_quota_holds
# The table whose rows a resource's usage counts (None: no records yet).
_COUNTED: dict[str, sa.Table | None] = {
    "network": t.networks, "subnet": t.subnets, "port": t.ports, "router": t.routers,
    "floatingip": t.floatingips, "security_group": t.security_groups,
    "security_group_rule": t.security_group_rules, "subnetpool": t.subnetpools}


def authorize(guard: Guard, rule: str, project_id: str | None = None) -> None:
    """403 unless the rules let the caller do `rule` (`get_quota`, `update_quota`,
    `delete_quota`); reading one's own project's quota needs none, as in Neutron."""
    ctx = guard.ctx
    if rule == "get_quota" and project_id is not None and project_id == ctx.project_id:
        return
    # Neutron's validate_policy holds the caller's own values as the target.
    guard.check(rule, {**ctx.policy_target(), "tenant_id": ctx.project_id})


def _overrides(conn: Connection, project_id: str) -> dict[str, int]:
    rows = conn.execute(sa.select(_Q.c.resource, _Q.c.hard_limit)
                        .where(_Q.c.project_id == project_id))
    return {r.resource: int(r.hard_limit) for r in rows if r.resource in DEFAULTS}


def limits(conn: Connection, project_id: str) -> dict[str, int]:
    """The project's limit of every resource."""
    return {**DEFAULTS, **_overrides(conn, project_id)}


def all_limits(conn: Connection) -> list[dict[str, Any]]:
    """Every project with a limit of its own: all its limits, and its project_id."""
    found: dict[str, dict[str, Any]] = {}
    rows = conn.execute(sa.select(_Q).order_by(_Q.c.project_id, _Q.c.resource))
    for row in rows:
        if row.resource not in DEFAULTS:
            continue
        entry = found.setdefault(row.project_id, {**DEFAULTS, "project_id": row.project_id,
                                                  "tenant_id": row.project_id})
        entry[row.resource] = int(row.hard_limit)
    return list(found.values())


def _used(conn: Connection, project_id: str, resource: str) -> int:
    table = _COUNTED[resource]
    if table is None:
        return 0
    # SELECT count(*) FROM <table> WHERE project_id = :project
    query = sa.select(sa.func.count()).select_from(table).where(
        table.c.project_id == project_id)
    return int(conn.execute(query).scalar_one())


def usage(conn: Connection, project_id: str) -> dict[str, dict[str, int]]:
    """Neutron's quota details: limit, used and reserved (always 0 here) per resource."""
    return {resource: {"limit": limit, "used": _used(conn, project_id, resource),
                       "reserved": 0}
            for resource, limit in limits(conn, project_id).items()}


def check_limits(conn: Connection, project_id: str, wanted: Mapping[str, int]) -> None:
    """Neutron's `check_limit`: 400 when a new limit is below what the project uses."""
    for resource, limit in wanted.items():
        used = _used(conn, project_id, resource)
        if limit != -1 and used > limit:
            raise e.StatusError(400, f"Quota limit {limit} for {resource} must be greater "
                                     f"than or equal to already used {used}",
                                e.HTTP_BAD_REQUEST)


def update(conn: Connection, project_id: str, wanted: Mapping[str, int]) -> dict[str, int]:
    """Set the project's limits named in `wanted`; returns all its limits."""
    for resource, limit in wanted.items():
        where = sa.and_(_Q.c.project_id == project_id, _Q.c.resource == resource)
        if conn.execute(_Q.update().where(where).values(hard_limit=limit)).rowcount == 0 \
                and not try_insert(conn, _Q, {"project_id": project_id, "resource": resource,
                                              "hard_limit": limit}):
            # Another admin inserted it meanwhile: ours is the later write.
            conn.execute(_Q.update().where(where).values(hard_limit=limit))
    return limits(conn, project_id)


def delete(conn: Connection, project_id: str) -> None:
    conn.execute(_Q.delete().where(_Q.c.project_id == project_id))


def _hold(conn: Connection, project_id: str) -> None:
    """Lock the project's hold row (made on first use) until the transaction ends."""
    bump = _H.update().where(_H.c.project_id == project_id).values(holds=_H.c.holds + 1)
    if conn.execute(bump).rowcount == 1:
        return
    try_insert(conn, _H, {"project_id": project_id, "holds": 0})
    conn.execute(bump)


def claim(conn: Connection, project_id: str, resource: str, count: int = 1) -> None:
    """Refuse (409 OverQuota) a create of `count` records the project's limit has no room
    for; called inside the create's transaction, before it writes."""
    where = sa.and_(_Q.c.project_id == project_id, _Q.c.resource == resource)
    found = conn.execute(sa.select(_Q.c.hard_limit).where(where)).scalar()
    limit = DEFAULTS[resource] if found is None else int(found)
    if limit < 0:
        return
    _hold(conn, project_id)
    if _used(conn, project_id, resource) + count > limit:
        raise e.in_use(e.OVER_QUOTA, f"Quota exceeded for resources: {[resource]}.")
