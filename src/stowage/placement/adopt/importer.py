"""`stowage manage placement import`: an upstream Placement database into stowage's.

    check the source ── revision readable? rows stowage can hold? ──▶ refuse, say why
    one write transaction on the target:
        target empty (or --force) ──▶ delete its Placement rows
        copy every table, parents first, ids kept ──▶ move id sequences
        sync standard classes and traits ──▶ tell running workers to reload

All or nothing: any failure (a corrupt row the target's foreign keys refuse, a
lost connection, Ctrl-C) rolls the one transaction back and leaves the target
as it was, so the command can simply be run again. The source is only read,
in one snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.db import Database, schema
from stowage.placement import changes
from stowage.placement import tables as t
from stowage.placement.adopt import copying
from stowage.placement.adopt import upstream_schema as us
from stowage.placement.adopt.progress import Progress
from stowage.placement.adopt.source import data_problems, our_driver, revision_problem
from stowage.timeutil import utcnow

__all__ = ["ImportRefused", "ImportFailed", "import_database", "target_holds"]


class ImportRefused(Exception):
    """The source cannot be read or the target is not empty; nothing was written."""


class ImportFailed(Exception):
    """Writing failed part way; the target's transaction was rolled back."""


def import_database(source_url: str, db: Database, *, force: bool = False,
                    out: TextIO | None = None) -> Progress:
    """Copy the upstream database at `source_url` into `db`; returns the counts."""
    engine = sa.create_engine(our_driver(source_url))
    progress = Progress("importing", out)
    shown = sa.make_url(source_url).render_as_string(hide_password=True)
    try:
        with copying.snapshot(engine) as src:
            problem = revision_problem(src)
            problems = [problem] if problem else data_problems(src)
            if problems:
                raise ImportRefused(f"cannot import {shown}: " + "; ".join(problems))
            schema.upgrade(db)  # an empty target gets stowage's tables first
            with db.write() as dst:
                held = target_holds(dst)
                if held and not force:
                    raise ImportRefused(f"the target already holds {held}; --force replaces "
                                        "all of its Placement data")
                _replace(src, dst, progress)
    finally:
        engine.dispose()
    return progress


def target_holds(conn: Connection) -> str:
    """What Placement data the target has beyond the standard classes and traits
    ("" when none)."""
    counts = {table.name: copying.count(conn, table)
              for table in (t.resource_providers, t.consumers, t.aggregates, t.projects,
                            t.users, t.consumer_types)}
    found = [f"{count} {name}" for name, count in counts.items() if count]
    custom_rc = conn.execute(sa.select(sa.func.count()).where(
        t.resource_classes.c.id >= t.CUSTOM_RC_MIN_ID)).scalar()
    custom_traits = conn.execute(sa.select(sa.func.count()).where(
        t.traits.c.name.like("CUSTOM\\_%", escape="\\"))).scalar()
    found += [f"{custom_rc} custom resource classes"] if custom_rc else []
    found += [f"{custom_traits} custom traits"] if custom_traits else []
    return ", ".join(found)


def _replace(src: Connection, dst: Connection, progress: Progress) -> None:
    _wipe(dst)
    copying.copy_tables(src, dst, us.TABLES, us.metadata, t.metadata, progress, _failed,
                        _filler)
    copying.move_sequences(dst, (t.metadata.tables[name] for name in us.TABLES))
    schema.sync_standard_names(dst)
    changes.record_all(dst)


def _failed(name: str, exc: sa.exc.DBAPIError) -> ImportFailed:
    return ImportFailed(f"writing {name} failed, nothing was imported: {exc.orig}")


def _filler(columns: list[str]) -> Callable[[copying.Row], copying.Row] | None:
    """Upstream leaves some columns NULL that stowage requires: a creation time
    (now) and a provider's generation (0, upstream's default)."""
    now = utcnow()
    fill = {name: value for name, value in (("created_at", now), ("generation", 0))
            if name in columns}
    if not fill:
        return None

    def filled(row: copying.Row) -> copying.Row:
        for name, value in fill.items():
            if row[name] is None:
                row[name] = value
        return row

    return filled


def _wipe(conn: Connection) -> None:
    """Delete every Placement row, children first (the change log stays: workers
    replay it). Providers lose their tree links first: MySQL checks a
    self-referencing key row by row."""
    for table in (t.allocations, t.consumers, t.provider_aggregates, t.provider_traits,
                  t.inventories):
        conn.execute(table.delete())
    conn.execute(t.resource_providers.update().values(parent_provider_id=None,
                                                      root_provider_id=None))
    for table in (t.resource_providers, t.aggregates, t.consumer_types, t.users, t.projects,
                  t.traits, t.resource_classes):
        conn.execute(table.delete())
