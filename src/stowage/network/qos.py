"""QoS policy records and their minimum-bandwidth rules.

A policy applies to a port directly (`ports.qos_policy_id`) or through the
port's network (`networks.qos_policy_id`, for ports without their own).
Its minimum-bandwidth rules (at most one per direction) are what the port's
`resource_request` asks Placement for. Neutron's two refusals are kept:

- a policy still attached to a network or a port cannot be deleted
  (409 QosPolicyInUse);
- a minimum-bandwidth rule cannot be added, changed or removed while a port
  owned by a server (`device_owner` compute:*) uses the policy: the
  bandwidth it holds in Placement would no longer match (501, Neutron's
  "Cannot update QoS policies/rules backed by resources tracked in
  Placement").
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.standard import lock, try_insert, utcnow

__all__ = ["Rule", "Policy", "missing", "DIRECTIONS", "RULE_TYPE", "get", "list_policies", "create",
           "update", "delete", "rules_of", "get_rule", "create_rule", "update_rule",
           "delete_rule", "check_usable"]

DIRECTIONS = ("egress", "ingress")
RULE_TYPE = "minimum_bandwidth"
COMPUTE_OWNER = "compute:"
_P = t.qos_policies
_R = t.qos_minimum_bandwidth_rules


@dataclass
class Rule:
    id: str
    qos_policy_id: str
    min_kbps: int
    direction: str


@dataclass
class Policy:
    id: str
    project_id: str
    name: str
    description: str
    shared: bool
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    rules: list[Rule] = field(default_factory=list)


def _missing(policy_id: str) -> DomainError:
    return e.not_found(e.QOS_POLICY_NOT_FOUND, f"QoS policy {policy_id} could not be found.")


def _rule_missing(rule_id: str, policy_id: str) -> DomainError:
    return e.not_found(e.QOS_RULE_NOT_FOUND,
                       f"QoS rule {rule_id} for policy {policy_id} could not be found.")


def _to_rule(row: Any) -> Rule:
    return Rule(row.id, row.qos_policy_id, int(row.min_kbps), row.direction)


def rules_of(conn: Connection, policy_ids: Iterable[str]) -> dict[str, list[Rule]]:
    """Each policy's minimum-bandwidth rules, ordered by id (Neutron's reading order)."""
    wanted = sorted(set(policy_ids))
    found: dict[str, list[Rule]] = {pid: [] for pid in wanted}
    if not wanted:
        return found
    rows = conn.execute(sa.select(_R).where(_R.c.qos_policy_id.in_(wanted)).order_by(_R.c.id))
    for row in rows:
        found[row.qos_policy_id].append(_to_rule(row))
    return found


def _policies(conn: Connection, where: sa.ColumnElement[bool]) -> list[Policy]:
    rows = conn.execute(sa.select(_P).where(where).order_by(_P.c.created_at, _P.c.id)).all()
    rules = rules_of(conn, (r.id for r in rows))
    return [Policy(r.id, r.project_id, r.name, r.description, bool(r.shared),
                   int(r.revision_number), r.created_at, r.updated_at, rules[r.id])
            for r in rows]


def missing(policy_id: str) -> DomainError:
    """The 404 of a policy the caller cannot see."""
    return _missing(policy_id)


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    if ctx.is_admin:
        return sa.true()
    # shared OR project_id = :project
    return sa.or_(_P.c.shared.is_(True), _P.c.project_id == (ctx.project_id or ""))


def get(conn: Connection, ctx: RequestContext, policy_id: str) -> Policy:
    found = _policies(conn, sa.and_(_P.c.id == policy_id, _visible(ctx)))
    if not found:
        raise _missing(policy_id)
    return found[0]


def list_policies(conn: Connection, ctx: RequestContext,
                  ids: Sequence[str] | None = None) -> list[Policy]:
    where = _visible(ctx)
    if ids is not None:
        where = sa.and_(where, _P.c.id.in_(list(ids)))
    return _policies(conn, where)


def create(conn: Connection, ctx: RequestContext, values: Mapping[str, Any]) -> Policy:
    now = utcnow()
    policy_id = str(uuid.uuid4())
    conn.execute(_P.insert().values(
        id=policy_id, project_id=values.get("project_id") or ctx.project_id or "",
        name=values.get("name", ""), description=values.get("description", ""),
        shared=bool(values.get("shared", False)), revision_number=0, created_at=now,
        updated_at=now))
    return get(conn, ctx, policy_id)


def update(conn: Connection, ctx: RequestContext, policy_id: str,
           values: Mapping[str, Any], expected: int | None) -> Policy:
    get(conn, ctx, policy_id)
    lock(conn, _P, policy_id, expected, lambda: _missing(policy_id))
    changes = {k: v for k, v in values.items() if k in ("name", "description", "shared")}
    if changes:
        conn.execute(_P.update().where(_P.c.id == policy_id).values(**changes))
    return get(conn, ctx, policy_id)


def _user(conn: Connection, policy_id: str) -> tuple[str, str] | None:
    """A (kind, id) still using the policy: a network first, then a port."""
    for kind, table in (("network", t.networks), ("port", t.ports)):
        # SELECT id FROM <table> WHERE qos_policy_id = :policy LIMIT 1
        found = conn.execute(sa.select(table.c.id).where(table.c.qos_policy_id == policy_id)
                             .limit(1)).scalar()
        if found is not None:
            return kind, str(found)
    return None


def delete(conn: Connection, ctx: RequestContext, policy_id: str,
           expected: int | None) -> None:
    get(conn, ctx, policy_id)
    lock(conn, _P, policy_id, expected, lambda: _missing(policy_id))
    user = _user(conn, policy_id)
    if user is not None:
        raise e.in_use(e.QOS_POLICY_IN_USE,
                       f"QoS Policy {policy_id} is used by {user[0]} {user[1]}.")
    conn.execute(_P.delete().where(_P.c.id == policy_id))


def _used_by_server_port(conn: Connection, policy_id: str) -> bool:
    """Whether a port of a server uses the policy, directly or through its network."""
    p, n = t.ports, t.networks
    # SELECT 1 FROM ports JOIN networks ON networks.id = ports.network_id
    #  WHERE ports.device_owner LIKE 'compute:%' AND (ports.qos_policy_id = :policy
    #        OR (ports.qos_policy_id IS NULL AND networks.qos_policy_id = :policy)) LIMIT 1
    query = (sa.select(p.c.id).select_from(p.join(n, n.c.id == p.c.network_id))
             .where(p.c.device_owner.like(COMPUTE_OWNER + "%"),
                    sa.or_(p.c.qos_policy_id == policy_id,
                           sa.and_(p.c.qos_policy_id.is_(None),
                                   n.c.qos_policy_id == policy_id)))
             .limit(1))
    return conn.execute(query).first() is not None


def _refuse_if_placed(conn: Connection, policy_id: str) -> None:
    if _used_by_server_port(conn, policy_id):
        raise e.StatusError(501, "Cannot update QoS policies/rules backed by resources "
                                 "tracked in Placement", e.NOT_IMPLEMENTED)


def _conflict(policy_id: str, rules: Sequence[Rule], direction: str,
              rule_id: str | None = None) -> None:
    for rule in rules:
        if rule.direction == direction and rule.id != rule_id:
            raise e.in_use(e.QOS_RULES_CONFLICT, f"Rule {RULE_TYPE} conflicts with rule "
                           f"{rule.id} which already exists in QoS Policy {policy_id}.")


def get_rule(conn: Connection, ctx: RequestContext, policy_id: str, rule_id: str) -> Rule:
    for rule in get(conn, ctx, policy_id).rules:
        if rule.id == rule_id:
            return rule
    raise _rule_missing(rule_id, policy_id)


def create_rule(conn: Connection, ctx: RequestContext, policy_id: str, min_kbps: int,
                direction: str) -> Rule:
    """One rule per direction; a concurrent twin loses on the unique key with the same 409."""
    get(conn, ctx, policy_id)
    lock(conn, _P, policy_id, None, lambda: _missing(policy_id))
    _conflict(policy_id, get(conn, ctx, policy_id).rules, direction)
    _refuse_if_placed(conn, policy_id)
    rule_id = str(uuid.uuid4())
    if not try_insert(conn, _R, {"id": rule_id, "qos_policy_id": policy_id,
                                 "min_kbps": min_kbps, "direction": direction}):
        _conflict(policy_id, get(conn, ctx, policy_id).rules, direction)
    return get_rule(conn, ctx, policy_id, rule_id)


def update_rule(conn: Connection, ctx: RequestContext, policy_id: str, rule_id: str,
                values: Mapping[str, Any]) -> Rule:
    get_rule(conn, ctx, policy_id, rule_id)
    lock(conn, _P, policy_id, None, lambda: _missing(policy_id))
    rule = get_rule(conn, ctx, policy_id, rule_id)
    direction = values.get("direction", rule.direction)
    _conflict(policy_id, get(conn, ctx, policy_id).rules, direction, rule_id)
    _refuse_if_placed(conn, policy_id)
    conn.execute(_R.update().where(_R.c.id == rule_id).values(
        min_kbps=values.get("min_kbps", rule.min_kbps), direction=direction))
    return get_rule(conn, ctx, policy_id, rule_id)


def delete_rule(conn: Connection, ctx: RequestContext, policy_id: str, rule_id: str) -> None:
    get_rule(conn, ctx, policy_id, rule_id)
    lock(conn, _P, policy_id, None, lambda: _missing(policy_id))
    _refuse_if_placed(conn, policy_id)
    conn.execute(_R.delete().where(_R.c.id == rule_id))


def check_usable(conn: Connection, ctx: RequestContext, policy_id: str | None) -> None:
    """A policy a caller attaches must be one they can see (404 otherwise).

    The policy's row is share-locked until the caller commits, so that a
    concurrent delete of the policy waits and then sees its new user.
    """
    if policy_id is None:
        return
    # SELECT id FROM qos_policies WHERE id = :policy AND <visible> FOR SHARE
    found = conn.execute(sa.select(_P.c.id).where(_P.c.id == policy_id, _visible(ctx))
                         .with_for_update(read=True)).first()
    if found is None:
        raise _missing(policy_id)
