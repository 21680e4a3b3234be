"""Quota enforcement: may this project (and user) add these amounts? Nova's checks and words.

Every check counts the usage now (`quota_usage`), adds the request's deltas
and compares with the project's limits and the user's (`quota_limits`); -1 is
unlimited. A refusal is an `OverQuota` whose message is Nova's, answered with
403 by the API:

    servers (create)        "Quota exceeded for cores: Requested 4, but already used 18 of
                            20 cores"; a multi-create whose min_count fits is lowered to
                            what fits instead (`instances_that_fit`)
    resize (upsize)         the same sentence with the deltas of cores and ram
    unshelve (offloaded)    "Quota exceeded for resources: ['cores']"
    server groups           "Quota exceeded, too many server groups."
    group members (boot)    "Quota exceeded, too many servers in group"
    metadata items          "Maximum number of metadata items exceeds 128"
    key pairs               "Quota exceeded, too many key pairs."

Nothing here writes: a check and the write it guards run in one transaction,
and the server create counts again after its records are written (Nova's
`recheck_quota`) so that two racing requests cannot both end over the limit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from sqlalchemy.engine import Connection

from stowage.compute import quota_limits as limits
from stowage.compute import quota_usage as usage
from stowage.config import QuotaSettings
from stowage.db import Database
from stowage.db.engine import side
from stowage.placement.client import PlacementClient

__all__ = ["OverQuota", "Owner", "check_deltas", "instances_that_fit", "check_resize",
           "check_unshelve", "check_server_groups", "check_group_members",
           "check_metadata_items", "check_keypairs_quota"]


class OverQuota(Exception):
    """A request that would take the project or user over a limit; `message` is Nova's."""

    def __init__(self, message: str, overs: list[str], headroom: dict[str, int]) -> None:
        super().__init__(message)
        self.message = message
        self.overs = overs
        self.headroom = headroom


@dataclass
class Owner:
    """Whose quota a request spends: the project and user, and how to count their usage."""

    project_id: str
    user_id: str
    settings: QuotaSettings
    placement: PlacementClient | None = None
    count_keypairs: usage.KeypairCounter | None = field(default=None, repr=False)
    # Where limits, groups and key pairs live, and where servers do (None: the
    # connection a check is given is both).
    api_db: Database | None = field(default=None, repr=False)
    cell_db: Database | None = field(default=None, repr=False)
    # The other cells' databases: their servers count too (docs/cells.md).
    other_cells: Sequence[Database] = field(default=(), repr=False)

    def api(self, conn: Connection) -> AbstractContextManager[Connection]:
        """The API database: `conn` when it is one, else a read of its own."""
        return side(self.api_db, conn)

    def used(self, conn: Connection, resources: Collection[str], user_id: str | None = None,
             ) -> usage.Usage:
        """The project's (or user's) usage of `resources`, each side counted where it lives."""
        on_api = [r for r in resources if r in usage.API_COUNTED]
        with self.api(conn) as api:
            found = usage.count(api, None, self.project_id, user_id, on_api,
                                self.count_keypairs) if on_api else {}
        on_cell = [r for r in resources if r not in usage.API_COUNTED]
        if on_cell:
            with self.cell(conn) as cell:
                found.update(usage.count(cell, self.placement, self.project_id, user_id,
                                         on_cell))
            for db in self.other_cells:
                with db.read() as cell:
                    more = usage.count(cell, self.placement, self.project_id, user_id,
                                       on_cell, first_cell=False)
                for resource, amount in more.items():
                    found[resource] = found.get(resource, 0) + amount
        return found

    def cell(self, conn: Connection) -> AbstractContextManager[Connection]:
        """The servers' cell database: `conn` when it is one, else a read of its own."""
        return side(self.cell_db, conn)


@dataclass
class _Over:
    """The resources over the limit, with what Nova's message shows for each."""

    overs: list[str]
    limits: dict[str, int]
    used: dict[str, int]
    headroom: dict[str, int]


def _compare(deltas: Mapping[str, int], limit: Mapping[str, int],
             used: Mapping[str, int]) -> _Over:
    over = _Over([], {}, {}, {})
    for res, delta in deltas.items():
        cap = limit[res]
        if cap == limits.UNLIMITED:
            continue
        over.limits[res], over.used[res] = cap, used.get(res, 0)
        over.headroom[res] = cap - used.get(res, 0)
        if used.get(res, 0) + delta > cap:  # a zero delta is over where usage already is
            over.overs.append(res)
    return over


def _find_over(conn: Connection, owner: Owner, deltas: Mapping[str, int]) -> _Over | None:
    """The project's excess if any, else the user's (whose own limits may be lower).

    A user without limits of their own cannot be over where the project is not
    (their usage is part of the project's), so they are not counted again.
    """
    counted = [r for r in deltas if r in ("instances", "cores", "ram", "server_groups")]
    with owner.api(conn) as api:
        project_caps = limits.project_limits(api, owner.settings, owner.project_id)
        user_caps = limits.user_limits(api, owner.settings, owner.project_id, owner.user_id,
                                       project_caps)
    if all(project_caps[r] == limits.UNLIMITED == user_caps[r] for r in deltas):
        # Nothing can be over an unlimited quota: counting (a Placement usage read and the
        # moves' holdings) would change no answer, and at scale it is most of a resize's
        # API request.
        return None
    project = _compare(deltas, project_caps, owner.used(conn, counted))
    if project.overs:
        return project
    if all(user_caps[r] == project_caps[r] for r in deltas):
        return None
    user = _compare(deltas, user_caps, owner.used(conn, counted, owner.user_id))
    return user if user.overs else None


def _too_many(over: _Over, requested: Mapping[str, object]) -> OverQuota:
    """Nova's TooManyInstances: 'Quota exceeded for a, b: Requested x, y, but already used
    u, v of l, m a, b' (each list joined with ', ', resources sorted)."""
    overs = sorted(over.overs)

    def joined(values: Mapping[str, object]) -> str:
        return ", ".join(str(values[r]) for r in overs)

    names = ", ".join(overs)
    message = (f"Quota exceeded for {names}: Requested {joined(requested)}, but already "
               f"used {joined(over.used)} of {joined(over.limits)} {names}")
    return OverQuota(message, overs, over.headroom)


def check_deltas(conn: Connection, owner: Owner, deltas: Mapping[str, int]) -> None:
    """OverQuota (the TooManyInstances sentence) if adding `deltas` exceeds a limit."""
    over = _find_over(conn, owner, deltas)
    if over is not None:
        raise _too_many(over, deltas)


def instances_that_fit(conn: Connection, owner: Owner, flavor: Mapping[str, int],
                       min_count: int, max_count: int) -> int:
    """How many of min_count..max_count servers of `flavor` fit (Nova's
    check_num_instances_quota): max_count, or fewer if that fits; else OverQuota."""
    vcpus, ram = int(flavor["vcpus"]), int(flavor["memory_mb"])
    deltas = {"instances": max_count, "cores": max_count * vcpus, "ram": max_count * ram}
    over = _find_over(conn, owner, deltas)
    if over is None:
        return max_count
    allowed = over.headroom.get("instances", max_count)
    if vcpus and "cores" in over.headroom:
        allowed = min(allowed, over.headroom["cores"] // vcpus)
    if ram and "ram" in over.headroom:
        allowed = min(allowed, over.headroom["ram"] // ram)
    if min_count <= allowed < max_count:  # min_count >= 1
        return instances_that_fit(conn, owner, flavor, min_count, allowed)
    wanted = str(min_count) if min_count == max_count else f"{min_count}-{max_count}"
    raise _too_many(over, {"instances": wanted, "cores": deltas["cores"], "ram": deltas["ram"]})


def recheck_instances(conn: Connection, owner: Owner, flavor: Mapping[str, int],
                      requested: int) -> None:
    """After the records are written: is anything over? (Nova's recheck with zero deltas;
    the message names the original request.)"""
    vcpus, ram = int(flavor["vcpus"]), int(flavor["memory_mb"])
    over = _find_over(conn, owner, {"instances": 0, "cores": 0, "ram": 0})
    if over is not None:
        raise _too_many(over, {"instances": requested, "cores": requested * vcpus,
                               "ram": requested * ram})


def check_resize(conn: Connection, owner: Owner, old: Mapping[str, int],
                 new: Mapping[str, int]) -> None:
    """An upsize's growth in cores and ram must fit (a downsize is never refused)."""
    deltas = {res: int(new[key]) - int(old.get(key, 0))
              for res, key in (("cores", "vcpus"), ("ram", "memory_mb"))}
    deltas = {res: delta for res, delta in deltas.items() if delta > 0}
    if deltas:
        check_deltas(conn, owner, deltas)


def check_unshelve(conn: Connection, owner: Owner, flavor: Mapping[str, int]) -> None:
    """An offloaded server holds no cores or ram; taking them back must fit (Nova's
    OverQuota wording, as its `_check_quota_unshelve_offloaded`)."""
    deltas = {"instances": 0, "cores": int(flavor["vcpus"]), "ram": int(flavor["memory_mb"])}
    over = _find_over(conn, owner, deltas)
    if over is not None:
        overs = sorted(over.overs)
        raise OverQuota(f"Quota exceeded for resources: {overs!r}", overs, over.headroom)


def check_server_groups(conn: Connection, owner: Owner, adding: int = 1) -> None:
    over = _find_over(conn, owner, {"server_groups": adding})
    if over is not None:
        raise OverQuota("Quota exceeded, too many server groups.", over.overs, over.headroom)


def check_group_members(conn: Connection, owner: Owner, group_uuid: str, adding: int) -> None:
    """The user's live members of the group plus `adding` within server_group_members."""
    with owner.api(conn) as api:
        cap = limits.user_limits(api, owner.settings, owner.project_id,
                                 owner.user_id)["server_group_members"]
        if cap == limits.UNLIMITED:
            return
        members = usage.group_member_uuids(api, group_uuid)
    with owner.cell(conn) as cell:
        used = usage.members_of_user(cell, members, owner.user_id)
    for db in owner.other_cells:
        with db.read() as cell:
            used += usage.members_of_user(cell, members, owner.user_id)
    if used + adding > cap:
        raise OverQuota("Quota exceeded, too many servers in group",
                        ["server_group_members"], {"server_group_members": cap - used})


def check_metadata_items(conn: Connection, owner: Owner, count: int) -> None:
    """A server's (or image's) metadata: at most metadata_items items in all."""
    with owner.api(conn) as api:
        cap = limits.user_limits(api, owner.settings, owner.project_id,
                                 owner.user_id)["metadata_items"]
    if cap != limits.UNLIMITED and count > cap:
        raise OverQuota(f"Maximum number of metadata items exceeds {cap}",
                        ["metadata_items"], {"metadata_items": cap})


def check_keypairs_quota(conn: Connection, owner: Owner, adding: int = 1) -> None:
    """The user's key pairs plus `adding` within key_pairs; `owner.count_keypairs` counts
    them (whoever serves os-keypairs provides it)."""
    cap = limits.user_limits(conn, owner.settings, owner.project_id,
                             owner.user_id)["key_pairs"]
    if cap == limits.UNLIMITED or owner.count_keypairs is None:
        return
    used = owner.count_keypairs(conn, owner.user_id)
    if used + adding > cap:
        raise OverQuota("Quota exceeded, too many key pairs.", ["key_pairs"],
                        {"key_pairs": cap - used})
