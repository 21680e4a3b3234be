"""Security group records: groups, each project's `default` group, and the groups of ports.

As in Neutron, a project's `default` group is made the first time the project
needs one — when it lists or creates security groups or creates a port — with
Neutron's four default rules: egress to anywhere over IPv4 and IPv6, and
ingress over IPv4 and IPv6 from members of the group itself. The row in
`default_security_groups` (keyed by project) is inserted together with the
group, so two requests making it at once leave one default group: the loser's
savepoint is rolled back and it reads the winner's.

The default group cannot be deleted (409 SecurityGroupCannotRemoveDefault)
nor renamed (409 SecurityGroupCannotUpdateDefault), and no other group may
be called "default" (409 SecurityGroupDefaultAlreadyExists). A group that a
port is in cannot be deleted (409 SecurityGroupInUse); the foreign key from
`port_security_groups` keeps a concurrent port update from slipping one in.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.context import RequestContext
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import quotas
from stowage.network import security_group_rules as rules
from stowage.network import tables as t
from stowage.network.policy import Guard
from stowage.network.security_group_rules import Rule
from stowage.network.standard import lock, utcnow

__all__ = ["Group", "target", "rule_targets", "DEFAULT_NAME", "DEFAULT_DESCRIPTION", "missing",
           "get", "list_groups",
           "ensure_default", "create", "update", "delete", "of_ports", "set_port_groups",
           "check_usable", "create_rule", "delete_rule"]

DEFAULT_NAME = "default"
DEFAULT_DESCRIPTION = "Default security group"
_G = t.security_groups
_D = t.default_security_groups
_PSG = t.port_security_groups


@dataclass
class Group:
    id: str
    project_id: str
    name: str
    description: str
    revision_number: int
    created_at: datetime.datetime
    updated_at: datetime.datetime
    rules: list[Rule] = field(default_factory=list)


def missing(group_id: str) -> DomainError:
    return e.not_found(e.SECURITY_GROUP_NOT_FOUND, f"Security group {group_id} does not exist")


def _visible(ctx: RequestContext) -> sa.ColumnElement[bool]:
    return sa.true() if ctx.is_admin else _G.c.project_id == (ctx.project_id or "")


def _groups(conn: Connection, where: sa.ColumnElement[bool]) -> list[Group]:
    rows = conn.execute(sa.select(_G).where(where).order_by(_G.c.created_at, _G.c.id)).all()
    found = rules.of_groups(conn, [r.id for r in rows])
    return [Group(r.id, r.project_id, r.name, r.description, int(r.revision_number),
                  r.created_at, r.updated_at, found.get(r.id, [])) for r in rows]


def get(conn: Connection, ctx: RequestContext, group_id: str) -> Group:
    found = _groups(conn, sa.and_(_G.c.id == group_id, _visible(ctx)))
    if not found:
        raise missing(group_id)
    return found[0]


def list_groups(conn: Connection, ctx: RequestContext, ids: Sequence[str] | None = None,
                projects: Sequence[str] | None = None,
                names: Sequence[str] | None = None) -> list[Group]:
    """Visible groups, narrowed in SQL to `ids` / `projects` when given. The default group
    of the project listed (the one filtered on, else the caller's) is made first, unless
    the listing looks for ids or for names other than "default"."""
    wanted = list(projects or ([ctx.project_id] if ctx.project_id else []))
    looks_for_default = names is None or DEFAULT_NAME in names
    own = len(wanted) == 1 and (ctx.is_admin or wanted[0] == ctx.project_id)
    if ids is None and looks_for_default and own:
        ensure_default(conn, wanted[0])
    where = _visible(ctx)
    if ids is not None:
        where = sa.and_(where, _G.c.id.in_(list(ids)))
    if projects is not None:
        where = sa.and_(where, _G.c.project_id.in_(list(projects)))
    return _groups(conn, where)


def _default_of(conn: Connection, project_id: str, for_update: bool = False) -> str | None:
    query = sa.select(_D.c.security_group_id).where(_D.c.project_id == project_id)
    if for_update:
        query = query.with_for_update()
    found = conn.execute(query).scalar()
    return None if found is None else str(found)


def ensure_default(conn: Connection, project_id: str) -> str:
    """The id of the project's default group, made (with its rules) if it has none."""
    found = _default_of(conn, project_id)
    if found is not None:
        return found
    group_id, now = str(uuid.uuid4()), utcnow()
    try:
        with conn.begin_nested():
            conn.execute(_G.insert().values(
                id=group_id, project_id=project_id, name=DEFAULT_NAME,
                description=DEFAULT_DESCRIPTION, revision_number=0, created_at=now,
                updated_at=now))
            conn.execute(_D.insert().values(project_id=project_id, security_group_id=group_id))
            for direction in ("egress", "ingress"):
                for ethertype in ("IPv4", "IPv6"):
                    remote = group_id if direction == "ingress" else None
                    rules.insert(conn, group_id, project_id, {
                        "direction": direction, "ethertype": ethertype,
                        "remote_group_id": remote})
    except sa.exc.IntegrityError:
        # Another request made it first: take theirs (a locking read sees it on MySQL too).
        winner = _default_of(conn, project_id, for_update=True)
        if winner is None:
            raise
        return winner
    return group_id


def _check_name(name: Any) -> None:
    if isinstance(name, str) and name.lower() == DEFAULT_NAME:
        raise e.in_use(e.SECURITY_GROUP_DEFAULT_EXISTS, "Default security group already exists.")


def target(group: Group) -> dict[str, object]:
    """What the policy rules see of a group."""
    return {"id": group.id, "project_id": group.project_id, "tenant_id": group.project_id}


def create(conn: Connection, guard: Guard, values: Mapping[str, Any]) -> Group:
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    guard.check("create_security_group",
                {**values, "project_id": project_id, "tenant_id": project_id}, values)
    _check_name(values.get("name"))
    # Counted before the project's default group is made, as Neutron reserves first.
    quotas.claim(conn, project_id, "security_group")
    ensure_default(conn, project_id)
    group_id, now = str(uuid.uuid4()), utcnow()
    conn.execute(_G.insert().values(
        id=group_id, project_id=project_id, name=values.get("name", ""),
        description=values.get("description", ""), revision_number=0, created_at=now,
        updated_at=now))
    # Neutron gives every new group the two egress rules of the default group.
    for ethertype in ("IPv4", "IPv6"):
        rules.insert(conn, group_id, project_id, {"direction": "egress",
                                                  "ethertype": ethertype})
    return get(conn, ctx, group_id)


def _locked(conn: Connection, guard: Guard, group_id: str, expected: int | None,
            action: str, values: Mapping[str, Any] | None = None) -> Group:
    group = get(conn, guard.ctx, group_id)
    seen = target(group)
    guard.check(action, {**seen, **(values or {})}, values or (), lambda: missing(group_id),
                seen)
    lock(conn, _G, group_id, expected, lambda: missing(group_id))
    return group


def _is_default(conn: Connection, group: Group) -> bool:
    return _default_of(conn, group.project_id) == group.id


def update(conn: Connection, guard: Guard, group_id: str, values: Mapping[str, Any],
           expected: int | None) -> Group:
    ctx = guard.ctx
    group = _locked(conn, guard, group_id, expected, "update_security_group", values)
    changes = {k: values[k] for k in ("name", "description") if k in values}
    if "name" in changes and changes["name"] != group.name:
        if _is_default(conn, group):
            raise e.in_use(e.SECURITY_GROUP_CANNOT_UPDATE_DEFAULT,
                           "Updating default security group not allowed.")
        _check_name(changes["name"])
    if changes:
        conn.execute(_G.update().where(_G.c.id == group_id).values(**changes))
    return get(conn, ctx, group_id)


def delete(conn: Connection, guard: Guard, group_id: str, expected: int | None) -> None:
    ctx = guard.ctx
    group = _locked(conn, guard, group_id, expected, "delete_security_group")
    if _is_default(conn, group) and not ctx.is_admin:
        raise e.in_use(e.SECURITY_GROUP_CANNOT_REMOVE_DEFAULT,
                       "Insufficient rights for removing default security group.")
    in_use = e.in_use(e.SECURITY_GROUP_IN_USE, f"Security Group {group_id} in use.")
    if conn.execute(sa.select(_PSG.c.port_id).where(_PSG.c.security_group_id == group_id)
                    .limit(1)).first() is not None:
        raise in_use
    try:
        with conn.begin_nested():
            conn.execute(_D.delete().where(_D.c.security_group_id == group_id))
            conn.execute(_G.delete().where(_G.c.id == group_id))
    except sa.exc.IntegrityError:
        raise in_use from None  # a port joined the group meanwhile


def of_ports(conn: Connection, port_ids: Collection[str]) -> dict[str, list[str]]:
    """Each port's group ids, in the order of the groups' creation."""
    found: dict[str, list[str]] = {p: [] for p in port_ids}
    if not found:
        return found
    rows = conn.execute(sa.select(_PSG.c.port_id, _PSG.c.security_group_id)
                        .select_from(_PSG.join(_G, _G.c.id == _PSG.c.security_group_id))
                        .where(_PSG.c.port_id.in_(list(found)))
                        .order_by(_G.c.created_at, _G.c.id)).all()
    for row in rows:
        found[row.port_id].append(row.security_group_id)
    return found


def check_usable(conn: Connection, project_id: str, group_ids: Sequence[str]) -> None:
    """Every group must exist and belong to the port's project (404 as Neutron)."""
    if not group_ids:
        return
    owned = set(conn.execute(sa.select(_G.c.id).where(
        _G.c.id.in_(list(group_ids)), _G.c.project_id == project_id)).scalars())
    for group_id in group_ids:
        if group_id not in owned:
            raise missing(group_id)


def set_port_groups(conn: Connection, port_id: str, project_id: str,
                    group_ids: Sequence[str] | None) -> None:
    """Put the port in exactly `group_ids`; None: the project's default group."""
    if group_ids is None:
        group_ids = [ensure_default(conn, project_id)]
    wanted = list(dict.fromkeys(group_ids))
    check_usable(conn, project_id, wanted)
    conn.execute(_PSG.delete().where(_PSG.c.port_id == port_id))
    try:
        for group_id in wanted:
            conn.execute(_PSG.insert().values(port_id=port_id, security_group_id=group_id))
    except sa.exc.IntegrityError:
        # The group was deleted between the check and the insert.
        raise missing(", ".join(wanted)) from None


def _group_project(conn: Connection, group_id: str) -> str | None:
    # SELECT project_id FROM security_groups WHERE id = :group
    found = conn.execute(sa.select(_G.c.project_id).where(_G.c.id == group_id)).scalar()
    return None if found is None else str(found)


def create_rule(conn: Connection, guard: Guard, values: Mapping[str, Any]) -> Rule:
    """A rule in a group of the caller's project; the group's revision moves with its rules.
    The rules decide first (403), as Neutron's API layer does; a group the caller cannot
    see is then 404."""
    ctx = guard.ctx
    project_id = values.get("project_id") or ctx.project_id or ""
    guard.check("create_security_group_rule", {
        **values, "project_id": project_id, "tenant_id": project_id,
        "security_group:tenant_id": _group_project(conn, values["security_group_id"])},
        values)
    group = get(conn, ctx, values["security_group_id"])
    quotas.claim(conn, values.get("project_id") or group.project_id, "security_group_rule")
    checked = rules.check(dict(values))
    remote = checked.get("remote_group_id")
    if remote is not None and remote != group.id:
        get(conn, ctx, remote)
    lock(conn, _G, group.id, None, lambda: missing(group.id))
    rule_id = rules.insert(conn, group.id, checked.get("project_id") or group.project_id,
                           checked)
    return rules.get(conn, ctx, rule_id)


def rule_targets(conn: Connection, found: Sequence[Rule]) -> dict[str, dict[str, object]]:
    """What the policy rules see of each rule (`security_group_rules.target`)."""
    ids = {r.security_group_id for r in found}
    # SELECT id, project_id FROM security_groups WHERE id IN (:ids)
    owners = dict(conn.execute(sa.select(_G.c.id, _G.c.project_id)
                               .where(_G.c.id.in_(list(ids)))).tuples().all()) if ids else {}
    return {r.id: rules.target(r, owners.get(r.security_group_id)) for r in found}


def delete_rule(conn: Connection, guard: Guard, rule_id: str) -> None:
    rule = rules.get(conn, guard.ctx, rule_id)
    seen = rules.target(rule, _group_project(conn, rule.security_group_id))
    guard.check("delete_security_group_rule", seen, (), lambda: rules.missing(rule_id))
    lock(conn, _G, rule.security_group_id, None, lambda: missing(rule.security_group_id))
    if conn.execute(t.security_group_rules.delete()
                    .where(t.security_group_rules.c.id == rule_id)).rowcount != 1:
        raise rules.missing(rule_id)
