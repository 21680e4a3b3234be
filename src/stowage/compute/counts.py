"""Counts over a cell's records that an operator's gauges read (no listing built for them)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import tables as t

__all__ = ["live_instances"]


def live_instances(conn: Connection) -> int:
    """Servers not deleted in this cell database (what `GET /servers?all_tenants` lists)."""
    # SELECT count(*) FROM instances WHERE deleted = 0
    i = t.instances
    return int(conn.execute(sa.select(sa.func.count()).select_from(i)
                            .where(i.c.deleted == 0)).scalar_one())
