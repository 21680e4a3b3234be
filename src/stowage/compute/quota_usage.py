"""Quota usage: how much of each countable resource a project (or one of its users) uses.

As Nova with `[quota] count_usage_from_placement = True`:

    instances             the compute database's live instances (not deleted), shelved
                          offloaded ones included
    cores, ram            Placement's usage of the project's consumers: VCPU + PCPU and
                          MEMORY_MB (`GET /usages?project_id=[&user_id=]`)
    server_groups         the project's (user's) server groups
    server_group_members  per group: its live members that the user owns (see
                          `group_members`); 0 in a project-wide answer, as Nova
    key_pairs             the user's key pairs, counted by whoever serves them (a
                          `count_keypairs` function); 0 in a project-wide answer

A move's source allocation belongs to the migration consumer (stowage writes
it with the instance's project, type MIGRATION). That allocation is not the
project's usage: the instance counts once, as the larger of what it and its
migration hold, per resource class. So a server in VERIFY_RESIZE counts the
larger of its old and new flavor, and after confirm or revert the one it
keeps. An evacuated server counts once too: its evacuation migration keeps
the source until that host comes back, and is `done` meanwhile (Nova, whose
instance holds both hosts, counts it twice until then).

Without a Placement client (an API process that serves no servers) cores
and ram are summed from the instances' flavors instead (Nova's legacy
counting: the larger flavor while resized, nothing once offloaded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import resources, states
from stowage.compute import tables as t
from stowage.compute.migrations import FINAL_STATUSES
from stowage.compute.server_groups import live_instances
from stowage.placement.client import PlacementClient

__all__ = ["Usage", "KeypairCounter", "PLACEMENT_CLASSES", "count", "instances",
           "server_groups", "group_member_uuids", "members_of_user", "cores_and_ram",
           "COUNTED", "API_COUNTED"]

# key_pairs of one user: (connection, user_id) -> how many.
KeypairCounter = Callable[[Connection, str], int]
# resource -> amount in use
Usage = dict[str, int]
# Quota resource -> the Placement classes it counts.
PLACEMENT_CLASSES = {"cores": ("VCPU", "PCPU"), "ram": ("MEMORY_MB",)}
_MIGRATION = "MIGRATION"

_I = t.instances
_G = t.server_groups
_M = t.server_group_members
_MIG = t.migrations


def _owned(query: sa.Select[Any], table: sa.Table, project_id: str,
           user_id: str | None) -> sa.Select[Any]:
    query = query.where(table.c.project_id == project_id)
    return query if user_id is None else query.where(table.c.user_id == user_id)


def instances(conn: Connection, project_id: str, user_id: str | None = None) -> int:
    # SELECT COUNT(*) FROM instances WHERE deleted = 0 AND project_id = :p [AND user_id = :u]
    # (a cross-cell move's hidden copy does not count: cell_copy.py)
    query = _owned(sa.select(sa.func.count()).select_from(_I).where(_I.c.deleted == 0,
                                                                     _I.c.hidden == sa.false()),
                   _I, project_id, user_id)
    return int(conn.execute(query).scalar() or 0)


def server_groups(conn: Connection, project_id: str, user_id: str | None = None) -> int:
    # SELECT COUNT(*) FROM server_groups WHERE project_id = :p [AND user_id = :u]
    query = _owned(sa.select(sa.func.count()).select_from(_G), _G, project_id, user_id)
    return int(conn.execute(query).scalar() or 0)


def group_member_uuids(api: Connection, group_uuid: str) -> list[str]:
    """The group's members (the API database's), live or not."""
    # SELECT m.instance_uuid FROM server_group_members m
    #   JOIN server_groups g ON g.id = m.group_id WHERE g.uuid = :group
    return [str(u) for u in api.execute(sa.select(_M.c.instance_uuid)
                                        .join(_G, _G.c.id == _M.c.group_id)
                                        .where(_G.c.uuid == group_uuid)).scalars()]


def members_of_user(cell: Connection, members: list[str], user_id: str) -> int:
    """Of the group's `members`, the live ones `user_id` owns (Nova's members-by-user
    count), read in their cell."""
    return len(live_instances(cell, members, user_id=user_id))


def _as_quota(by_class: Mapping[str, int]) -> Usage:
    return {res: sum(by_class.get(rc, 0) for rc in classes)
            for res, classes in PLACEMENT_CLASSES.items()}


def _held(placement: PlacementClient, consumer: str) -> dict[str, int]:
    """Per class, what the consumer holds over all providers."""
    return resources.summed(placement.holding(consumer).allocations)


def _moving(conn: Connection, project_id: str, user_id: str | None) -> list[tuple[str, str]]:
    """(migration uuid, instance uuid) of the project's live instances' unfinished moves
    that may hold more on their source than on their destination."""
    # SELECT m.uuid, m.instance_uuid, i.flavor, i.old_flavor, i.new_flavor
    #   FROM migrations m JOIN instances i ON i.uuid = m.instance_uuid AND i.deleted = 0
    #  WHERE m.status NOT IN (<final>) AND i.project_id = :p [AND i.user_id = :u]
    joined = _MIG.join(_I, sa.and_(_I.c.uuid == _MIG.c.instance_uuid, _I.c.deleted == 0,
                                   _I.c.hidden == sa.false()))
    query = (sa.select(_MIG.c.uuid, _MIG.c.instance_uuid, _I.c.flavor, _I.c.old_flavor,
                       _I.c.new_flavor).select_from(joined)
             .where(_MIG.c.status.not_in(FINAL_STATUSES)))
    return [(m, i) for m, i, flavor, old, new in conn.execute(_owned(query, _I, project_id,
                                                                         user_id))
            if old and _may_shrink(old, new or flavor)]


def _may_shrink(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether a resize from `old` to `new` asks less of cores or ram.

    Only such a move adds to the usage (the source, held by the migration, is
    the larger side); every other move -- a larger or equal flavor, or no new
    flavor at all (migrate, live migrate, evacuate) -- adds nothing, so its
    two consumers need not be read: with many servers waiting in
    VERIFY_RESIZE that was two Placement reads per server per quota check.
    The amounts come from the same translation the claim used.
    """
    before = _as_quota(resources.placement_request(old).amounts())
    after = _as_quota(resources.placement_request(new).amounts())
    return any(before[res] > after[res] for res in before)


def _from_placement(conn: Connection, placement: PlacementClient, project_id: str,
                    user_id: str | None, whole: bool = True) -> Usage:
    """What the project's instance consumers hold, plus what each move's migration holds
    beyond its instance (so that an instance counts as the larger of the two). Not
    `whole`: only the moves of `conn`'s cell (another cell's part: Placement's project
    usage is every cell's, counted once)."""
    used = {res: 0 for res in PLACEMENT_CLASSES}
    for kind, by_class in placement.project_usages(project_id, user_id).items() if whole \
            else ():
        if kind != _MIGRATION:
            for res, amount in _as_quota(by_class).items():
                used[res] += amount
    for migration, instance in _moving(conn, project_id, user_id):
        source = _as_quota(_held(placement, migration))
        if not any(source.values()):
            continue
        dest = _as_quota(_held(placement, instance))
        for res in used:
            used[res] += max(0, source[res] - dest[res])
    return used


def _from_flavors(conn: Connection, project_id: str, user_id: str | None) -> Usage:
    """Legacy counting: each instance's flavor (the larger one while resized)."""
    query = _owned(sa.select(_I.c.vm_state, _I.c.flavor, _I.c.old_flavor)
                   .where(_I.c.deleted == 0, _I.c.hidden == sa.false(),
                          _I.c.vm_state != states.SHELVED_OFFLOADED),
                   _I, project_id, user_id)
    used = {"cores": 0, "ram": 0}
    for vm_state, flavor, old in conn.execute(query):
        flavors = [flavor] + ([old] if vm_state == states.RESIZED and old else [])
        used["cores"] += max(int(f.get("vcpus", 0)) for f in flavors)
        used["ram"] += max(int(f.get("memory_mb", 0)) for f in flavors)
    return used


def cores_and_ram(conn: Connection, placement: PlacementClient | None, project_id: str,
                  user_id: str | None = None, whole: bool = True) -> Usage:
    if placement is None:
        return _from_flavors(conn, project_id, user_id)
    return _from_placement(conn, placement, project_id, user_id, whole)


# What is counted (the other resources are absolute); of them, what is counted in the
# API database -- the rest (servers, cores, ram) in a cell's.
COUNTED = ("instances", "cores", "ram", "server_groups", "key_pairs")
API_COUNTED = frozenset({"server_groups", "key_pairs"})


def count(conn: Connection, placement: PlacementClient | None, project_id: str,
          user_id: str | None = None, resources: Iterable[str] | None = None,
          count_keypairs: KeypairCounter | None = None, first_cell: bool = True) -> Usage:
    """Usage of the countable `resources` (all by default); absolute ones are 0.

    `API_COUNTED` resources are counted in the API database, the others in
    a cell's: with cells, each side is counted on its own connection, and each
    cell's after the first adds only its own part (`first_cell` False).
    """
    wanted = set(resources) if resources is not None else set(COUNTED)
    used: Usage = {}
    if "instances" in wanted:
        used["instances"] = instances(conn, project_id, user_id)
    if wanted & set(PLACEMENT_CLASSES):
        used.update(cores_and_ram(conn, placement, project_id, user_id, first_cell))
    if "server_groups" in wanted:
        used["server_groups"] = server_groups(conn, project_id, user_id)
    if "key_pairs" in wanted and user_id is not None and count_keypairs is not None:
        used["key_pairs"] = count_keypairs(conn, user_id)
    return used
