"""Where a simulated host keeps its guests, so that a service restart is not a reboot.

A real hypervisor outlives the agent that drives it: guests keep running and
the disks a move set aside stay on the source. The simulated driver gets the
same property from one table, `simulated_guests`, which it rewrites for an
instance in the same call that changes the instance's guests in memory, and
reads back when the agent starts.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.compute.records import Columns
from stowage.db import Database
from stowage.db.statements import Sql

__all__ = ["GuestStore", "StoredGuest"]

_G = t.simulated_guests
# Every step of a move rewrites a guest: hand-written SQL.
_ROW = Columns(_G, ("host", "instance_uuid", "migration_uuid", "flavor", "power_state",
                    "incoming", "console", "booted_at"))
_DELETE = Sql("DELETE FROM simulated_guests WHERE host = :host AND instance_uuid = :instance_uuid")
_INSERT = Sql(f"INSERT INTO simulated_guests ({_ROW.select_list}) VALUES "
              f"({', '.join(':' + name for name in _ROW.names)})")


@dataclass(frozen=True)
class StoredGuest:
    instance_uuid: str
    migration_uuid: str  # '' for the instance's guest, else the move that set it aside
    flavor: dict[str, Any]
    power_state: int
    incoming: str | None
    console: list[str] = field(default_factory=list)
    booted_at: datetime.datetime | None = None


class GuestStore:
    """The guests of one host in the database; no I/O until a method is called."""

    def __init__(self, db: Database, host: str) -> None:
        self.db = db
        self.host = host

    def load(self) -> list[StoredGuest]:
        with self.db.read() as conn:
            rows = conn.execute(sa.select(_G).where(_G.c.host == self.host)
                                .order_by(_G.c.id)).all()
        return [StoredGuest(r.instance_uuid, r.migration_uuid, dict(r.flavor), r.power_state,
                            r.incoming, list(r.console or ()), r.booted_at) for r in rows]

    def save(self, instance_uuid: str, guests: Mapping[str, StoredGuest]) -> None:
        """Replace what this host holds of `instance_uuid` by `guests` (by migration uuid)."""
        with self.db.write() as conn:
            _DELETE.run(conn, host=self.host, instance_uuid=instance_uuid)
            _INSERT.run_many(conn, [_ROW.dump(conn, {
                "host": self.host, "instance_uuid": instance_uuid, "migration_uuid": key,
                "flavor": g.flavor, "power_state": g.power_state, "incoming": g.incoming,
                "console": g.console, "booted_at": g.booted_at})
                for key, g in guests.items()])
