"""One fresh, empty database per YAML file.

Upstream's gabbi run gives every YAML file an empty database; tests rely on
it (e.g. "list resource providers" expects exactly the fixture's providers).
SQLite gets a new file in the file's work directory. PostgreSQL and MySQL
(MariaDB) get a uniquely named database on the loopback server, created and
dropped with the server's own command line client so that no database driver
is needed in the test process. Only loopback addresses are ever used.
"""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FreshDatabase", "create_database"]

_PG = ["psql", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres",
       "-v", "ON_ERROR_STOP=1", "-q", "-c"]
_MYSQL = ["mysql", "-h", "127.0.0.1", "-P", "3306", "-u", "root", "-e"]


@dataclass
class FreshDatabase:
    """A database URL plus how to get rid of the database afterwards."""

    kind: str
    name: str
    url: str

    def drop(self) -> None:
        """Drop the database; SQLite files vanish with the work directory."""
        if self.kind == "postgresql":
            _sql(_PG, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        elif self.kind == "mysql":
            _sql(_MYSQL, f"DROP DATABASE IF EXISTS `{self.name}`")


def _sql(client: list[str], statement: str) -> None:
    subprocess.run([*client, statement], check=True, capture_output=True,
                   timeout=60)


def create_database(kind: str, workdir: Path) -> FreshDatabase:
    """Create an empty database of ``kind`` and return its URL."""
    name = f"stowage_conf_{secrets.token_hex(6)}"
    if kind == "sqlite":
        path = workdir / "placement.db"
        return FreshDatabase(kind, name, f"sqlite:///{path}")
    if kind == "postgresql":
        _sql(_PG, f'CREATE DATABASE "{name}"')
        url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        return FreshDatabase(kind, name, url)
    if kind == "mysql":
        _sql(_MYSQL, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        url = f"mysql+pymysql://root@127.0.0.1:3306/{name}?charset=utf8mb4"
        return FreshDatabase(kind, name, url)
    raise ValueError(f"unknown database kind {kind!r}")
