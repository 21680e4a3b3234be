"""`stowage manage db reset --yes`: start over, with the cells' databases too.

Compute keeps its records in an API database and a database per cell
(docs/cells.md); with SQLite the cells are files beside the API file
(`stowage_cell1.db`, `stowage_cell0.db`, named in the startup banner).
Deleting `stowage.db` alone leaves them behind, and a new `stowage serve`
would find the old servers and hosts in them. `reset` removes

- SQLite: the API file, every cell file its cell mappings name, the default
  cell files beside it (even when the API file is already gone), and their
  `-wal`/`-shm`/`-journal` companions;
- PostgreSQL, MySQL: stowage's tables (and Alembic's version table) in the
  API database and in every cell database of another URL; other tables stay.

Without `--yes` it refuses and says what it would remove; an in-memory
database has nothing to reset.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import sqlalchemy as sa

from stowage.compute import tables as compute_tables
from stowage.compute.cells import CELL0, CELL1, SAME_DATABASE
from stowage.identity import tables as identity_tables
from stowage.image import tables as image_tables
from stowage.network import tables as network_tables
from stowage.placement import tables as placement_tables

__all__ = ["add_parser", "reset", "sqlite_files"]

_SIDE_FILES = ("-wal", "-shm", "-journal")


def add_parser(manage_sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    db = manage_sub.add_parser("db", help="database schema: upgrade, or reset to nothing")
    db.add_argument("action", choices=["upgrade", "reset"])
    db.add_argument("--database", help="SQLAlchemy URL of the API database")
    db.add_argument("--yes", action="store_true",
                    help="reset: really delete every record (the API and cell databases)")


def _file_of(url: sa.URL) -> Path | None:
    """The file of a SQLite URL; None for another backend or an in-memory database."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(str(url.database))


def _cell_urls(api_url: sa.URL) -> list[str]:
    """The databases the API database's cell mappings name (none if it has no mappings)."""
    engine = sa.create_engine(api_url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("cell_mappings"):
                return []
            cm = compute_tables.cell_mappings
            return [str(url) for url in conn.execute(sa.select(cm.c.database_connection))
                    .scalars() if url != SAME_DATABASE]
    finally:
        engine.dispose()


def sqlite_files(api_url: str) -> list[Path]:
    """The files a reset of this SQLite API database removes (those that exist)."""
    url = sa.make_url(api_url)
    api_file = _file_of(url)
    if api_file is None:
        return []
    found = [api_file]
    if api_file.exists():
        found += [path for path in (_file_of(sa.make_url(u)) for u in _cell_urls(url))
                  if path is not None]
    found += [api_file.with_name(f"{api_file.stem}_{cell}{api_file.suffix}")
              for cell in (CELL1, CELL0)]
    unique = list(dict.fromkeys(path.resolve() for path in found))
    with_side = [p.with_name(p.name + s) for p in unique for s in ("", *_SIDE_FILES)]
    return [path for path in with_side if path.exists()]


def _drop_tables(url: str) -> list[str]:
    """Drop stowage's tables (the five services' and Alembic's) in that database."""
    ours = {name for metadata in (placement_tables.metadata, compute_tables.metadata,
                                  image_tables.metadata, network_tables.metadata,
                                  identity_tables.metadata) for name in metadata.tables}
    ours.add("alembic_version")
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            present = [name for name in sa.inspect(conn).get_table_names() if name in ours]
            reflected = sa.MetaData()
            reflected.reflect(conn, only=present)
            reflected.drop_all(conn)
    finally:
        engine.dispose()
    return present


def reset(api_url: str, yes: bool) -> int:
    """`manage db reset`: exit status 0 when done, 1 when a database cannot be reached,
    2 when refused."""
    try:
        return _reset(api_url, yes)
    except sa.exc.OperationalError as exc:
        print(f"stowage: cannot reach the database: {exc.orig}", file=sys.stderr)
        return 1


def _reset(api_url: str, yes: bool) -> int:
    url = sa.make_url(api_url)
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        if _file_of(url) is None:
            print(f"stowage: {shown} is an in-memory database: nothing to reset",
                  file=sys.stderr)
            return 2
        files = sqlite_files(api_url)
        if not yes:
            return _refuse(", ".join(map(str, files)) or "nothing (no such files)")
        for path in files:
            path.unlink()
            print(f"removed {path}")
        return 0
    cells = [u for u in _cell_urls(url) if sa.make_url(u) != url]
    if not yes:
        return _refuse(f"stowage's tables in {shown}" + "".join(
            f" and in {sa.make_url(u).render_as_string(hide_password=True)}" for u in cells))
    for target in (*cells, api_url):
        dropped = _drop_tables(target)
        where = sa.make_url(target).render_as_string(hide_password=True)
        print(f"dropped {len(dropped)} table(s) in {where}")
    return 0


def _refuse(what: str) -> int:
    print(f"stowage: `manage db reset` deletes every record: it would remove {what}. "
          "Run it again with --yes to do so.", file=sys.stderr)
    return 2
