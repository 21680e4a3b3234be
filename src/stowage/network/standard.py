"""Neutron's standard attributes (revision number, timestamps) and the write discipline
every record module shares.

Every change to a network, subnet, port or QoS policy starts by bumping the
row's `revision_number`::

    UPDATE <table> SET revision_number = revision_number + 1, updated_at = :now
     WHERE id = :id [AND revision_number = :expected]

That one statement is the compare-and-swap behind `If-Match:
revision_number=N` (412 when it matches no row although the row exists; an N
beyond the BIGINT column matches none without being sent), and
it takes the row's write lock (PostgreSQL, MySQL; SQLite serialises writers
anyway), so two writers of the same record run one after the other and the
second sees the first one's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.timeutil import utcnow

__all__ = ["lock", "try_insert", "utcnow", "MAX_REVISION"]

# The largest revision_number the BIGINT column holds (SQLite cannot even bind a larger one).
MAX_REVISION = 2**63 - 1


def lock(conn: Connection, table: sa.Table, row_id: str, expected: int | None,
         missing: Callable[[], DomainError]) -> None:
    """Bump the row's revision (and lock it), or raise `missing()` / 412."""
    if expected is None or expected <= MAX_REVISION:
        query = table.update().where(table.c.id == row_id)
        if expected is not None:
            query = query.where(table.c.revision_number == expected)
        result = conn.execute(query.values(revision_number=table.c.revision_number + 1,
                                           updated_at=utcnow()))
        if result.rowcount == 1:
            return
    current = conn.execute(sa.select(table.c.revision_number)
                           .where(table.c.id == row_id)).scalar()
    if current is None:
        raise missing()
    raise e.StatusError(412, f"Constrained to {expected}, but current revision is {current}",
                        e.PRECONDITION_FAILED)


def try_insert(conn: Connection, table: sa.Table, values: Mapping[str, Any]) -> bool:
    """Insert one row in a savepoint; False (and nothing written) if a unique key refuses it."""
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**values))
    except sa.exc.IntegrityError:
        return False
    return True
