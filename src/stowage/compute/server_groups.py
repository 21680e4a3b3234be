"""Server group records: a named policy (affinity, anti-affinity, soft-*) and its members.

A group belongs to the project that created it. Members are instance uuids;
an instance is in at most one group (Nova's rule), and a deleted instance
stops counting as a member (its membership row is removed when the server is
deleted, and listings skip soft-deleted instances anyway). The scheduler
reads `member_hosts` to apply the group's policy.

`rules` holds the 2.64 policy rules; only `max_server_per_host` exists, for
anti-affinity, and is stored as an integer.

The scheduler's view of a group is a snapshot: members scheduled at the same
time all see the others without a host yet. `check_host` is Nova's late check
(`_validate_instance_group_policy` on the compute host), run by the agent
where the claim becomes real. It locks the group's row and, in the same
transaction, the caller records the instance on the host (a build's
`instances.host`, a move's `migrations.dest_compute`): of members racing for
one host exactly one wins, whichever agent or process checks them, because
PostgreSQL and MySQL hold the row lock (`SELECT ... FOR UPDATE`) to the
commit and SQLite's writers are serialised anyway.
"""

from __future__ import annotations

import contextlib
import datetime
import uuid as uuidlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.migrations import FINAL_STATUSES
from stowage.db import Database
from stowage.db.engine import side
from stowage.db.statements import Sql
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["ServerGroup", "POLICIES", "HARD_POLICIES", "create", "get", "list_groups",
           "live_instances", "delete", "add_member", "remove_member", "members",
           "group_of_instance", "group_uuids_of",
           "member_hosts", "max_server_per_host", "PolicyViolated", "check_host", "late_check",
           "LateCheck",
           "ANTI_AFFINITY_VIOLATED", "AFFINITY_VIOLATED"]

_G = t.server_groups
_M = t.server_group_members
# Every build's and move's late check asks it; SQL text (most servers are in no group).
_GROUP_OF = Sql("SELECT group_id FROM server_group_members WHERE instance_uuid = :uuid")
_I = t.instances
_MIG = t.migrations

# Nova's reasons for rescheduling after its late check (the event and fault say them).
ANTI_AFFINITY_VIOLATED = "Anti-affinity instance group policy was violated."
AFFINITY_VIOLATED = "Affinity instance group policy was violated."


class PolicyViolated(Exception):
    """The host would break the instance's group policy: try an alternate (Nova reschedules)."""

HARD_POLICIES = ("anti-affinity", "affinity")
# Soft policies arrived with 2.15; they weigh hosts instead of filtering them.
POLICIES = HARD_POLICIES + ("soft-anti-affinity", "soft-affinity")


@dataclass
class ServerGroup:
    id: int
    uuid: str
    name: str
    project_id: str
    user_id: str
    policy: str
    rules: dict[str, Any]
    created_at: datetime.datetime
    members: list[str] = field(default_factory=list)


def max_server_per_host(group: ServerGroup) -> int:
    """How many members anti-affinity allows on one host (1 unless a 2.64 rule says more)."""
    return int(group.rules.get("max_server_per_host") or 1)


def _not_found(group_uuid: str) -> NotFound:
    return NotFound(f"Instance group {group_uuid} could not be found.")


def _from_row(row: Any, member_uuids: list[str]) -> ServerGroup:
    return ServerGroup(id=row.id, uuid=row.uuid, name=row.name, project_id=row.project_id,
                       user_id=row.user_id, policy=row.policy, rules=dict(row.rules or {}),
                       created_at=row.created_at, members=member_uuids)


# Instance uuids per statement (a bounded IN list on every database).
_CHUNK = 500
# Where members' instances are read: one cell's database, every cell's (a list), or
# None: the connection given holds them.
CellDbs = Database | Sequence[Database] | None


def live_instances(cell: Connection, uuids: Sequence[str], host: str | None = None,
                   user_id: str | None = None) -> dict[str, str]:
    """Of `uuids` (a group's members, from the API database), the live instances in
    `cell` (on `host`, of `user_id`, when given): uuid -> host ('' for none)."""
    found: dict[str, str] = {}
    for start in range(0, len(uuids), _CHUNK):
        # SELECT uuid, host FROM instances WHERE uuid IN (:uuids) AND deleted = 0
        #   [AND host = :host] [AND user_id = :user_id]
        query = sa.select(_I.c.uuid, _I.c.host).where(
            _I.c.uuid.in_(uuids[start:start + _CHUNK]), _I.c.deleted == 0)
        if host is not None:
            query = query.where(_I.c.host == host)
        if user_id is not None:
            query = query.where(_I.c.user_id == user_id)
        found.update((str(u), str(h or "")) for u, h in cell.execute(query))
    return found


def live_in_cells(conn: Connection, cell_db: CellDbs, uuids: Sequence[str],
                  user_id: str | None = None) -> dict[str, str]:
    """`live_instances` read in each of `cell_db`'s databases (a server is in one)."""
    if cell_db is None or isinstance(cell_db, Database):
        with side(cell_db, conn) as cell:
            return live_instances(cell, uuids, user_id=user_id)
    found: dict[str, str] = {}
    for db in cell_db:
        with db.using(conn) as cell:
            found.update(live_instances(cell, uuids, user_id=user_id))
    return found


def _live_members(conn: Connection, group_ids: list[int], cell_db: CellDbs = None
                  ) -> dict[int, list[str]]:
    """group id -> uuids of its members that are live instances, in joining order."""
    if not group_ids:
        return {}
    # SELECT group_id, instance_uuid FROM server_group_members
    #  WHERE group_id IN (...) ORDER BY id
    rows = conn.execute(sa.select(_M.c.group_id, _M.c.instance_uuid)
                        .where(_M.c.group_id.in_(group_ids)).order_by(_M.c.id)).all()
    live = live_in_cells(conn, cell_db, [str(row.instance_uuid) for row in rows])
    found: dict[int, list[str]] = {gid: [] for gid in group_ids}
    for row in rows:
        if row.instance_uuid in live:
            found[row.group_id].append(row.instance_uuid)
    return found


def create(conn: Connection, name: str, policy: str, project_id: str, user_id: str,
           rules: Mapping[str, Any] | None = None, uuid: str | None = None) -> ServerGroup:
    if policy not in POLICIES:
        raise ValueError(f"invalid server group policy {policy!r}")
    group_uuid = uuid or str(uuidlib.uuid4())
    now = utcnow()
    values = {"uuid": group_uuid, "name": name, "project_id": project_id, "user_id": user_id,
              "policy": policy, "rules": dict(rules or {}), "created_at": now}
    key = conn.execute(_G.insert().values(**values)).inserted_primary_key
    assert key is not None
    group_id = int(key[0])
    return ServerGroup(id=group_id, uuid=group_uuid, name=name, project_id=project_id,
                       user_id=user_id, policy=policy, rules=dict(rules or {}),
                       created_at=now)


def get(conn: Connection, group_uuid: str, project_id: str | None = None,
        cell_db: CellDbs = None) -> ServerGroup:
    """The group with its live members; NotFound when missing (or in another project if given)."""
    query = sa.select(_G).where(_G.c.uuid == group_uuid)
    if project_id is not None:
        query = query.where(_G.c.project_id == project_id)
    row = conn.execute(query).first()
    if row is None:
        raise _not_found(group_uuid)
    return _from_row(row, _live_members(conn, [row.id], cell_db)[row.id])


def list_groups(conn: Connection, project_id: str | None = None, offset: int = 0,
                limit: int | None = None, cell_db: CellDbs = None
                ) -> list[ServerGroup]:
    """Groups oldest first, of one project or (None) of all projects."""
    query = sa.select(_G).order_by(_G.c.id).offset(offset)
    if project_id is not None:
        query = query.where(_G.c.project_id == project_id)
    if limit is not None:
        query = query.limit(limit)
    rows = conn.execute(query).all()
    by_group = _live_members(conn, [row.id for row in rows], cell_db)
    return [_from_row(row, by_group[row.id]) for row in rows]


def delete(conn: Connection, group_uuid: str) -> None:
    group_id = conn.execute(sa.select(_G.c.id).where(_G.c.uuid == group_uuid)).scalar()
    if group_id is None:
        raise _not_found(group_uuid)
    conn.execute(_M.delete().where(_M.c.group_id == group_id))
    conn.execute(_G.delete().where(_G.c.id == group_id))


def add_member(conn: Connection, group_uuid: str, instance_uuid: str) -> None:
    """Make the instance a member (idempotent)."""
    group_id = conn.execute(sa.select(_G.c.id).where(_G.c.uuid == group_uuid)).scalar()
    if group_id is None:
        raise _not_found(group_uuid)
    present = conn.execute(sa.select(_M.c.id).where(
        _M.c.group_id == group_id, _M.c.instance_uuid == instance_uuid)).first()
    if present is None:
        conn.execute(_M.insert().values(group_id=group_id, instance_uuid=instance_uuid))


def remove_member(conn: Connection, instance_uuid: str) -> None:
    """Drop the instance from whatever group holds it (a deleted server leaves its group)."""
    conn.execute(_M.delete().where(_M.c.instance_uuid == instance_uuid))


def members(conn: Connection, group_uuid: str, cell_db: CellDbs = None) -> list[str]:
    return get(conn, group_uuid, cell_db=cell_db).members


def group_of_instance(conn: Connection, instance_uuid: str, cell_db: CellDbs = None
                      ) -> ServerGroup | None:
    # SELECT g.* FROM server_groups g JOIN server_group_members m ON m.group_id = g.id
    #  WHERE m.instance_uuid = :instance_uuid
    row = conn.execute(sa.select(_G).select_from(_G.join(_M, _M.c.group_id == _G.c.id))
                       .where(_M.c.instance_uuid == instance_uuid)).first()
    if row is None:
        return None
    return _from_row(row, _live_members(conn, [row.id], cell_db)[row.id])


# Every server view (2.71) asks this: hand-written.
_GROUP_UUIDS = Sql("SELECT g.uuid FROM server_group_members m JOIN server_groups g "
                   "ON g.id = m.group_id WHERE m.instance_uuid = :uuid ORDER BY g.id")


def group_uuids_of(conn: Connection, instance_uuid: str) -> list[str]:
    """The uuids of the groups the instance is a member of (one at most, by Nova's rule)."""
    return [str(row[0]) for row in _GROUP_UUIDS.rows(conn, uuid=instance_uuid)]


def member_hosts(conn: Connection, group_uuid: str, cell_db: CellDbs = None
                 ) -> dict[str, str]:
    """Live members that have a host: instance uuid -> host."""
    # SELECT m.instance_uuid FROM server_groups g
    #   JOIN server_group_members m ON m.group_id = g.id WHERE g.uuid = :group_uuid
    uuids = [str(u) for u in conn.execute(
        sa.select(_M.c.instance_uuid).select_from(_G.join(_M, _M.c.group_id == _G.c.id))
        .where(_G.c.uuid == group_uuid)).scalars()]
    return {uuid: host for uuid, host in live_in_cells(conn, cell_db, uuids).items() if host}


# The late check as `late_check` lends it: (cell connection, instance, host) -> None.
LateCheck = Callable[[Connection, str, str], None]


@contextmanager
def late_check(api_db: Database) -> Iterator[LateCheck]:
    """The late check for a cell write transaction opened inside this block; the group's
    row stays locked until the block ends, after that transaction committed.

        with server_groups.late_check(api_db) as check:
            with cell_db.write() as conn:
                check(conn, instance_uuid, host)
                ... record the instance (or migration) on the host ...
            # the cell committed: the group is unlocked only now

    With one database for both, the lock is the cell transaction's and ends
    with it. With a cell database of its own, the group's API transaction,
    opened inside the cell's (the one order, cell then API), ends only after
    the cell's commit: the next member checked sees this one's host, where
    ending it first let two members checked at that moment both pass.
    """
    with contextlib.ExitStack() as held:
        def check(conn: Connection, instance_uuid: str, host: str) -> None:
            check_host(conn, instance_uuid, host, api_db, held)

        yield check


def check_host(conn: Connection, instance_uuid: str, host: str, api_db: Database,
               held: contextlib.ExitStack | None = None) -> None:
    """Raise PolicyViolated unless the instance may run on `host` under its group's hard policy.

    Call it inside the (cell's) write transaction that records the instance on
    the host, `conn`: the group's row (`api_db`) stays locked until it ends
    when one database holds both; with two, until `held` closes (`late_check`),
    else for the group's own transaction. Soft policies only weigh hosts, so
    they are not checked. As Nova counts: anti-affinity sees the other members
    on the host and those with a move in progress from or to it; affinity sees
    the hosts the other members run on.
    """
    with api_db.using(conn) as api:
        # Most servers are in no group: they need no write transaction of the API's.
        if _GROUP_OF.first(api, uuid=instance_uuid) is None:
            return
    with contextlib.ExitStack() as here:
        apart = held is not None and conn.engine is not api_db.engine
        api = (held if apart and held is not None else here).enter_context(
            api_db.using(conn, write=True))
        group = _lock_group_of(api, instance_uuid)
        if group is None:
            return
        others = [str(u) for u in api.execute(sa.select(_M.c.instance_uuid).where(
            _M.c.group_id == group.id, _M.c.instance_uuid != instance_uuid)).scalars()]
    if group.policy == "anti-affinity":
        if len(_members_on_host(conn, others, host)) >= max_server_per_host(group):
            raise PolicyViolated(ANTI_AFFINITY_VIOLATED)
    elif group.policy == "affinity":
        hosts = {h for h in live_instances(conn, others).values() if h}
        if hosts and host not in hosts:
            raise PolicyViolated(AFFINITY_VIOLATED)


def _lock_group_of(conn: Connection, instance_uuid: str) -> ServerGroup | None:
    """The instance's group, its row locked to the end of the transaction; None if in none."""
    group_id = conn.execute(sa.select(_M.c.group_id)
                            .where(_M.c.instance_uuid == instance_uuid)).scalar()
    if group_id is None:
        return None
    # SELECT * FROM server_groups WHERE id = :group_id FOR UPDATE
    row = conn.execute(sa.select(_G).where(_G.c.id == group_id).with_for_update()).first()
    if row is None:
        return None
    return _from_row(row, [])


def _members_on_host(cell: Connection, members: Sequence[str], host: str) -> set[str]:
    """Of `members`, the live ones running on `host`, or moving from or to it (a
    migration not yet final)."""
    found = set(live_instances(cell, members, host))
    for start in range(0, len(members), _CHUNK):
        # SELECT mg.instance_uuid FROM migrations mg JOIN instances i ON i.uuid = mg.instance_uuid
        #  WHERE mg.instance_uuid IN (:members) AND i.deleted = 0
        #    AND mg.status NOT IN (<final>)
        #    AND (mg.source_compute = :host OR mg.dest_compute = :host)
        moving = (sa.select(_MIG.c.instance_uuid)
                  .select_from(_MIG.join(_I, _I.c.uuid == _MIG.c.instance_uuid))
                  .where(_MIG.c.instance_uuid.in_(members[start:start + _CHUNK]),
                         _I.c.deleted == 0, _MIG.c.status.not_in(FINAL_STATUSES),
                         sa.or_(_MIG.c.source_compute == host, _MIG.c.dest_compute == host)))
        found.update(str(row[0]) for row in cell.execute(moving))
    return found
