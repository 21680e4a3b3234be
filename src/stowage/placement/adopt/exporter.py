"""`stowage manage placement export`: stowage's Placement data into upstream's schema.

    stowage DB at head? ──▶ target has none of upstream's tables? ──▶ else refuse
    create upstream 16.0.0's tables (upstream_schema) in the target
    copy every table, parents first, ids kept ──▶ move id sequences
    stamp alembic_version at upstream's head, so that `placement-manage db sync`
    has nothing to do and stock Placement 16.0.0 serves the database as it is

All or nothing: the tables and rows are written in one transaction; where DDL
cannot be rolled back (MySQL), a failure drops the tables this run created,
so the target is empty again and the command can be run again.
"""

from __future__ import annotations

from typing import TextIO

import sqlalchemy as sa

from stowage.db import Database, schema
from stowage.db.engine import create_engine
from stowage.placement import tables as t
from stowage.placement.adopt import copying
from stowage.placement.adopt import upstream_schema as us
from stowage.placement.adopt.progress import Progress
from stowage.placement.adopt.source import our_driver

__all__ = ["ExportRefused", "ExportFailed", "export_database"]


class ExportRefused(Exception):
    """The stowage database is not at head or the target is not empty; nothing written."""


class ExportFailed(Exception):
    """Writing failed part way; the tables this export created were dropped again."""


def export_database(db: Database, target_url: str, *, out: TextIO | None = None) -> Progress:
    """Write `db`'s Placement data into the empty database at `target_url`."""
    if not schema.is_current(db):
        raise ExportRefused("the stowage database is not at the newest schema: run "
                            "`stowage manage db upgrade` first")
    # stowage's own engine: on SQLite it opens the transaction itself, so the
    # CREATE TABLEs are inside it (pysqlite would commit each at once, and a
    # kill -9 mid-copy would leave upstream's tables behind).
    engine = create_engine(our_driver(target_url))
    progress = Progress("exporting", out)
    try:
        _refuse_non_empty(engine, target_url)
        try:
            with copying.snapshot(db.engine) as src, engine.begin() as dst:
                copying.allow_zero_ids(dst)
                us.metadata.create_all(dst)
                copying.copy_tables(src, dst, us.TABLES, t.metadata, us.metadata, progress,
                                    _failed)
                copying.move_sequences(dst, (us.metadata.tables[n] for n in us.TABLES))
                dst.execute(us.alembic_version.insert().values(version_num=us.HEAD))
        except BaseException:
            us.metadata.drop_all(engine, checkfirst=True)
            raise
    finally:
        engine.dispose()
    return progress


def _refuse_non_empty(engine: sa.Engine, url: str) -> None:
    with engine.connect() as conn:
        present = sorted(set(sa.inspect(conn).get_table_names()) & set(us.metadata.tables))
    if present:
        shown = sa.make_url(url).render_as_string(hide_password=True)
        raise ExportRefused(f"{shown} already has table(s) {', '.join(present)}: export "
                            "writes into an empty database only")


def _failed(name: str, exc: sa.exc.DBAPIError) -> ExportFailed:
    return ExportFailed(f"writing {name} failed, the target is left empty: {exc.orig}")
