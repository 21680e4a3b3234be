"""Servers whose API records exist but that no cell ever got: a build cut off by a crash.

POST /servers writes a server's API records (its instance mapping, request
spec and group membership: the API database) and the server itself (its
cell's database). When the cell keeps its records in a database of its own,
the two commit apart, API records first; a crash between the two commits
leaves API records for a server that does not exist anywhere. The API's own
failures clean up after themselves (`forget_api_records`); a crash cannot.

The conductor finds and removes them (`sweep`, at start and every lease):
a mapping older than a lease (no build takes that long between its two
commits) whose server no cell holds, not even deleted. A server that
exists, in any cell, deleted or hidden by a cross-cell carry, is never
touched. With a single database for everything there is nothing to find.

Nova has no equivalent: its API writes the build request and the mapping
in the API database, and the cell's records are written by the conductor
later, which Nova's `nova-manage db archive_deleted_rows` eventually tidies.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import server_groups
from stowage.compute import tables as t
from stowage.compute.cells import Cells
from stowage.timeutil import utcnow

__all__ = ["find", "forget_api_records", "Sweeper"]

LOG = logging.getLogger(__name__)

_IM, _I = t.instance_mappings, t.instances
_CHUNK = 500  # uuids per IN list (every backend's bound parameters)


def forget_api_records(conn: Connection, instance_uuid: str) -> None:
    """A server that was never written to its cell: its mapping, request spec and group
    membership go (`conn`: the API database)."""
    conn.execute(_IM.delete().where(_IM.c.instance_uuid == instance_uuid))
    conn.execute(t.request_specs.delete().where(
        t.request_specs.c.instance_uuid == instance_uuid))
    server_groups.remove_member(conn, instance_uuid)


def find(cells: Cells, before: datetime.datetime,
         since: datetime.datetime | None = None) -> list[str]:
    """Servers mapped before `before` (and not before `since`) that no cell holds."""
    # SELECT instance_uuid FROM instance_mappings WHERE created_at < :before
    #  [AND created_at >= :since]
    query = sa.select(_IM.c.instance_uuid).where(_IM.c.created_at < before)
    if since is not None:
        query = query.where(_IM.c.created_at >= since)
    with cells.api.read() as conn:
        mapped = [str(u) for u in conn.execute(query).scalars()]
    held: set[str] = set()
    for _, db in cells.distinct():
        with db.read() as conn:
            for start in range(0, len(mapped), _CHUNK):
                # SELECT uuid FROM instances WHERE uuid IN (...)   -- deleted rows too
                held.update(str(u) for u in conn.execute(sa.select(_I.c.uuid).where(
                    _I.c.uuid.in_(mapped[start:start + _CHUNK]))).scalars())
    return [uuid for uuid in mapped if uuid not in held]


def _forget(cells: Cells, uuids: Sequence[str]) -> None:
    with cells.api.write() as conn:
        for uuid in uuids:
            forget_api_records(conn, uuid)


class Sweeper:
    """One conductor's sweeps: the first looks at every mapping older than a lease, each
    later one only at those mapped since the previous one's cutoff (less a lease, for
    the clocks of other API hosts), so a round costs the servers built meanwhile."""

    def __init__(self, cells: Cells | None) -> None:
        self.cells = cells
        self._cutoff: datetime.datetime | None = None

    def sweep(self, lease_seconds: float) -> list[str]:
        """Remove the API records of servers no cell holds; returns their uuids."""
        cells = self.cells
        shared = None if cells is None else cells.one_database()
        if cells is None or (shared is not None and shared.engine is cells.api.engine):
            return []  # one transaction writes both: a crash leaves neither
        lease = datetime.timedelta(seconds=lease_seconds)
        cutoff = utcnow() - lease
        since = None if self._cutoff is None else self._cutoff - lease
        found = find(cells, cutoff, since)
        if found:
            LOG.warning("removing the API records of %d server(s) no cell holds (a build "
                        "cut off between its two commits): %s", len(found), ", ".join(found))
            _forget(cells, found)
        self._cutoff = cutoff
        return found
