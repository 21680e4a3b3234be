"""Copy a table's rows from one database to another in batches, ids and all.

Why ids are kept: every foreign key then stays right without a lookup per
row, a round trip (import, then export) gives upstream back its own rows,
and an operator's ad-hoc SQL keeps meaning the same rows. The price is
that the target's id sequences must be moved past the copied ids
(`move_sequences`), and MySQL must be told that an id of 0 (VCPU's) is a
value, not "the next one" (`allow_zero_ids`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from stowage.placement.adopt.progress import Progress

__all__ = ["BATCH", "Row", "read_rows", "write_rows", "parents_first", "move_sequences",
           "allow_zero_ids", "count", "snapshot"]

BATCH = 5000
Row = dict[str, Any]


def count(conn: Connection, table: sa.Table) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0)


def read_rows(conn: Connection, table: sa.Table, columns: Sequence[str]) -> Iterator[Row]:
    """Every row of `table` as a dict of `columns`, streamed, in primary key order."""
    cols = [table.c[name] for name in columns]
    query = sa.select(*cols).order_by(*table.primary_key.columns)
    result = conn.execution_options(stream_results=True, yield_per=BATCH).execute(query)
    for row in result:
        yield dict(zip(columns, row, strict=True))


def _batches(rows: Iterable[Row]) -> Iterator[list[Row]]:
    batch: list[Row] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def write_rows(conn: Connection, table: sa.Table, rows: Iterable[Row], progress: Progress,
               fix: Callable[[Row], Row] | None = None) -> None:
    """Insert `rows` (each passed through `fix`) into `table`, a batch at a time."""
    insert = table.insert()
    for batch in _batches(rows):
        conn.execute(insert, [fix(row) for row in batch] if fix else batch)
        progress.advance(len(batch))


def copy_tables(src: Connection, dst: Connection, names: Iterable[str], source: sa.MetaData,
                target: sa.MetaData, progress: Progress,
                failed: Callable[[str, sa.exc.DBAPIError], Exception],
                filler: Callable[[list[str]], Callable[[Row], Row] | None] | None = None
                ) -> None:
    """Each table of `names`, in that order (referenced tables first), from `source`'s
    schema to `target`'s: the columns both have, providers parents first (a parent's
    row before its children's, whatever their ids); a refused write is `failed(...)`.
    `filler(columns)` may give each row what the target requires and the source lacks."""
    for name in names:
        frm, to = source.tables[name], target.tables[name]
        columns = [c.name for c in to.columns if c.name in frm.c]
        try:
            progress.begin(name, count(src, frm))
            rows = read_rows(src, frm, columns)
            if name == "resource_providers":
                rows = iter(parents_first(list(rows)))
            write_rows(dst, to, rows, progress, filler(columns) if filler else None)
        except sa.exc.DBAPIError as exc:
            raise failed(name, exc) from exc
        progress.end()


def parents_first(providers: list[Row]) -> list[Row]:
    """Providers in id order, except that a provider whose parent comes later (it was
    re-parented, microversion 1.37) waits for it: the tree's foreign keys are
    checked row by row on MySQL. Keeping id order keeps the rows' physical order,
    which decides what a `limit` of allocation candidates returns."""
    present = {row["id"] for row in providers}
    placed: set[int] = set()
    waiting: dict[int, list[Row]] = {}
    ordered: list[Row] = []
    for row in sorted(providers, key=lambda row: row["id"]):
        parent = row["parent_provider_id"]
        if parent is not None and parent in present and parent not in placed:
            waiting.setdefault(parent, []).append(row)
            continue
        pending = [row]
        while pending:
            done = pending.pop()
            ordered.append(done)
            placed.add(done["id"])
            pending.extend(reversed(waiting.pop(done["id"], [])))
    # A cycle (corrupt data) never gets placed: append it, for the keys to refuse.
    return ordered + [row for rows in waiting.values() for row in rows]


def move_sequences(conn: Connection, tables: Iterable[sa.Table]) -> None:
    """PostgreSQL: set each serial id sequence past the highest id copied in.
    (SQLite and MySQL move theirs on an insert with an explicit id.)"""
    if conn.dialect.name != "postgresql":
        return
    for table in tables:
        if "id" not in table.c:
            continue
        # SELECT setval(pg_get_serial_sequence('t', 'id'), COALESCE(MAX(id), 0) + 1, false)
        #   FROM t   -- only when the column has a sequence
        sequence = conn.execute(sa.text("SELECT pg_get_serial_sequence(:t, 'id')"),
                                {"t": table.name}).scalar()
        if sequence:
            conn.execute(sa.text(f"SELECT setval(:s, COALESCE(MAX(id), 0) + 1, false) "
                                 f"FROM {table.name}"), {"s": sequence})


def allow_zero_ids(conn: Connection) -> None:
    """MySQL takes an inserted 0 in an AUTO_INCREMENT column for "the next id" unless told
    otherwise; resource class 0 is VCPU (upstream sets the same mode for it)."""
    if conn.dialect.name in ("mysql", "mariadb"):
        conn.execute(sa.text("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')"))


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A read transaction that sees one moment of the database throughout, so that a
    copy made while its service still writes is consistent (if not the latest)."""
    with engine.connect() as conn:
        if conn.dialect.name != "sqlite":  # SQLite's transactions see one moment already
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn
