"""Create or upgrade the schema with Alembic, then sync the standard names.

Standard resource classes and traits come from os-resource-classes and
os-traits; they are inserted on every upgrade so that a newer library's names
appear without a migration.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import os_resource_classes as orc
import os_traits
import sqlalchemy as sa

from stowage.db.engine import Database
from stowage.placement import tables as t

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["HEAD", "upgrade", "is_current", "sync_standard_names"]

MIGRATIONS = Path(__file__).parent / "migrations"
# The newest revision under migrations/versions (tests/unit/test_schema_head.py holds
# the two equal). A database already there needs no Alembic: importing it is half a
# second of every process start, and a deployment starts many processes.
HEAD = "0030"


def _alembic_config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def _at_head(conn: sa.Connection) -> bool:
    if not sa.inspect(conn).has_table("alembic_version"):
        return False
    return set(conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars()) \
        == {HEAD}


def is_current(db: Database) -> bool:
    """Whether the database is at the newest migration (workers check, never upgrade:
    several processes starting at once must not race one another's DDL)."""
    with db.read() as conn:
        return _at_head(conn)


def upgrade(db: Database, revision: str = "head") -> None:
    with db.read() as conn:
        done = revision == "head" and _at_head(conn)
    if not done:
        from alembic import command

        with db.write() as conn:
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    with db.write() as conn:
        sync_standard_names(conn)


def sync_standard_names(conn: sa.Connection) -> None:
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    have_rc = set(conn.execute(sa.select(t.resource_classes.c.name)).scalars())
    rows = [{"id": i, "name": name, "created_at": now}
            for i, name in enumerate(orc.STANDARDS) if name not in have_rc]
    if rows:
        conn.execute(t.resource_classes.insert(), rows)
    have_traits = set(conn.execute(sa.select(t.traits.c.name)).scalars())
    names = sorted(set(os_traits.get_traits()) - have_traits)
    if names:
        conn.execute(t.traits.insert(), [{"name": n, "created_at": now} for n in names])
