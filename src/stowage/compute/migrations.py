"""Migration records: one per move, whose uuid owns the source allocation while it runs.

Status words are Nova's. A migration is "in progress" from creation until it
reaches a final status (confirmed, reverted, error, failed, done, completed,
cancelled); while in progress it may own allocations in Placement, afterwards
it must own nothing (the invariant checker holds us to that).
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t
from stowage.compute.records import Columns
from stowage.db.statements import Sql
from stowage.errors import NotFound
from stowage.timeutil import utcnow

__all__ = ["Migration", "FINAL_STATUSES", "RELEASED_KEY", "released", "awaiting_source_cleanup",
           "create", "get", "update", "save", "in_progress", "for_instance", "list_migrations"]

_M = t.migrations
FINAL_STATUSES = ("confirmed", "reverted", "error", "failed", "done", "completed",
                  "cancelled")


@dataclass
class Migration:
    uuid: str
    instance_uuid: str
    migration_type: str  # "resize", "migration", "live-migration", "evacuation"
    status: str
    source_compute: str | None = None
    source_node: str | None = None
    dest_compute: str | None = None
    dest_node: str | None = None
    dest_host: str | None = None
    old_flavor_id: int | None = None
    new_flavor_id: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    hidden: bool = False
    cross_cell_move: bool = False
    memory_total: int | None = None
    memory_processed: int | None = None
    memory_remaining: int | None = None
    disk_total: int | None = None
    disk_processed: int | None = None
    disk_remaining: int | None = None
    created_at: datetime.datetime | None = None
    updated_at: datetime.datetime | None = None
    id: int | None = None
    # Its id once its instance was deleted (Nova's instance_destroy soft-deletes them).
    deleted: int = 0

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES


# The instance's system_metadata key listing its `done` evacuations whose source
# allocation a shelve offload deleted (Nova's offload frees every allocation of the
# instance); they stay `done` for the source agent to destroy its guest.
RELEASED_KEY = "released_evacuations"


def released(system_metadata: Mapping[str, Any] | None) -> frozenset[str]:
    """The evacuations an offload of the instance released (`RELEASED_KEY`)."""
    return frozenset((system_metadata or {}).get(RELEASED_KEY) or ())


def awaiting_source_cleanup(mig: Migration, released: Collection[str] = ()) -> bool:
    """An evacuation `done`: final for the move, not for accounting. It owns the dead
    source's allocation until the source agent, started again, cleans up (`completed`),
    or until its server is deleted (the delete drops it and soft-deletes the migration)
    or shelve-offloaded (the offload drops it and names it in `released`, the
    instance's `RELEASED_KEY`)."""
    return (mig.migration_type == "evacuation" and mig.status == "done" and not mig.deleted
            and mig.uuid not in released)


_COLUMNS = tuple(f.name for f in fields(Migration))
# A move writes its migration at every step: hand-written SQL, typed as Core would type it.
_RECORD = Columns(_M, _COLUMNS)
_GET = Sql(f"SELECT {_RECORD.select_list} FROM migrations WHERE uuid = :uuid")
_INSERT_NAMES = tuple(name for name in _COLUMNS if name != "id")
_INSERT = Sql(f"INSERT INTO migrations ({', '.join(_INSERT_NAMES)}) "
              f"VALUES ({', '.join(':' + name for name in _INSERT_NAMES)}) RETURNING id")
_SAVES: dict[tuple[str, ...], Sql] = {}
_NEWEST_FIRST = " ORDER BY created_at DESC, id DESC"
_FOR_INSTANCE = Sql(f"SELECT {_RECORD.select_list} FROM migrations "
                    f"WHERE instance_uuid = :uuid{_NEWEST_FIRST}")
_FOR_INSTANCE_IN = Sql(f"SELECT {_RECORD.select_list} FROM migrations "
                       f"WHERE instance_uuid = :uuid AND status IN :statuses{_NEWEST_FIRST}")


def _from_row(row: Any) -> Migration:
    return Migration(**{name: row._mapping[name] for name in _COLUMNS})


def create(conn: Connection, mig: Migration) -> Migration:
    now = utcnow()
    values = {name: getattr(mig, name) for name in _INSERT_NAMES}
    values.update(created_at=now, updated_at=None, deleted=0)
    if conn.dialect.insert_returning:
        mig.id = int(_INSERT.scalar(conn, **_RECORD.dump(conn, values)))
    else:  # MySQL: no RETURNING
        key = conn.execute(_M.insert().values(**values)).inserted_primary_key
        assert key is not None
        mig.id = int(key[0])
    mig.created_at = now
    return mig


def get(conn: Connection, uuid: str) -> Migration:
    row = _GET.first(conn, uuid=uuid)
    if row is None:
        raise NotFound(f"Migration {uuid} could not be found.")
    return Migration(**_RECORD.load(conn, row))


def update(conn: Connection, uuid: str, **values: Any) -> Migration:
    save(conn, uuid, **values)
    return get(conn, uuid)


def save(conn: Connection, uuid: str, **values: Any) -> bool:
    """Change columns without reading the record back; False when there is no such record."""
    names = tuple(sorted(values))
    statement = _SAVES.get(names)
    if statement is None:
        sets = ", ".join(f"{name} = :{name}" for name in (*names, "updated_at"))
        statement = _SAVES[names] = Sql(f"UPDATE migrations SET {sets} WHERE uuid = :uuid")
    params = _RECORD.dump(conn, {**values, "updated_at": utcnow()})
    return statement.run(conn, uuid=uuid, **params) > 0


def for_instance(conn: Connection, instance_uuid: str,
                 statuses: Sequence[str] | None = None) -> list[Migration]:
    """The instance's migrations, newest first, optionally only in `statuses`."""
    if statuses is None:
        rows = _FOR_INSTANCE.rows(conn, uuid=instance_uuid)
    else:
        rows = _FOR_INSTANCE_IN.rows(conn, uuid=instance_uuid, statuses=list(statuses))
    return [Migration(**_RECORD.load(conn, row)) for row in rows]


def in_progress(conn: Connection, host: str | None = None) -> list[Migration]:
    """Migrations not yet final, optionally touching `host` as source or destination."""
    query = sa.select(_M).where(_M.c.status.not_in(FINAL_STATUSES)).order_by(_M.c.id)
    if host is not None:
        query = query.where(sa.or_(_M.c.source_compute == host, _M.c.dest_compute == host))
    return [_from_row(row) for row in conn.execute(query)]


def list_migrations(conn: Connection, where: Sequence[Any] = (),
                    newest_first: bool = True) -> list[Migration]:
    """Migrations matching SQLAlchemy clauses on `tables.migrations` (the API builds them)."""
    order = (_M.c.created_at.desc(), _M.c.id.desc()) if newest_first else (_M.c.id,)
    query = sa.select(_M).where(*where).order_by(*order)
    return [_from_row(row) for row in conn.execute(query)]
