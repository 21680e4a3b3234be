"""One fresh, empty database per YAML file.

Upstream's gabbi run gives every YAML file an empty database; tests rely on
it (e.g. "list resource providers" expects exactly the fixture's providers).
SQLite gets a new file in the file's work directory. PostgreSQL and MySQL
(MariaDB) get a uniquely named database on the loopback server, created and
dropped with the server's own command line client so that no database driver
is needed in the test process. Only loopback addresses are ever used.

For stowage (`migrated=True`) each new database is a copy of a template that
`stowage manage db upgrade` brought to the newest schema once per test
process (PostgreSQL: `CREATE DATABASE ... TEMPLATE`; MySQL: mysqldump piped
into the new database; SQLite: a file copy): the server then starts on a
database at head, as it would in production after the first start, instead
of running every migration again for each of the 79 files on each backend.
The templates are dropped when the process exits. Databases are dropped in
the background: the next file does not wait for the last one's drop.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .sidevenv import REPO_ROOT

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
        """Start dropping the database (`finish_drops` waits for it); SQLite files
        vanish with the work directory."""
        if self.kind == "postgresql":
            _drop_later(_PG, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        elif self.kind == "mysql":
            _drop_later(_MYSQL, f"DROP DATABASE IF EXISTS `{self.name}`")


# Drops still running. Nothing waits for one between two files: a PostgreSQL drop
# waits for every backend to let go of the database's files (0.3-4 s on a loaded
# machine), which the next file's server need not wait for.
_DROPPING: list[subprocess.Popen[bytes]] = []


def _drop_later(client: list[str], statement: str) -> None:
    _DROPPING.append(subprocess.Popen([*client, statement], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE))


def finish_drops() -> list[str]:
    """Wait for the drops started; the error output of those that failed. Called at the
    end of the test session (tests/conftest.py) and at exit."""
    failures = []
    while _DROPPING:
        proc = _DROPPING.pop(0)
        _, err = proc.communicate(timeout=120)
        if proc.returncode:
            failures.append(err.decode(errors="replace").strip())
    return failures


atexit.register(finish_drops)  # registered first, so it runs after the templates' drops


def _sql(client: list[str], statement: str) -> None:
    subprocess.run([*client, statement], check=True, capture_output=True,
                   timeout=60)


def _url(kind: str, name: str, workdir: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{workdir / 'placement.db'}"
    if kind == "postgresql":
        return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    if kind == "mysql":
        return f"mysql+pymysql://root@127.0.0.1:3306/{name}?charset=utf8mb4"
    raise ValueError(f"unknown database kind {kind!r}")


def _create_empty(kind: str, name: str) -> None:
    if kind == "postgresql":
        _sql(_PG, f'CREATE DATABASE "{name}"')
    elif kind == "mysql":
        _sql(_MYSQL, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")


def create_database(kind: str, workdir: Path, migrated: bool = False) -> FreshDatabase:
    """Create a database of ``kind`` and return its URL: empty, or (``migrated``) at
    stowage's newest schema with its standard names."""
    name = f"stowage_conf_{secrets.token_hex(6)}"
    url = _url(kind, name, workdir)
    if not migrated:
        _create_empty(kind, name)
        return FreshDatabase(kind, name, url)
    template = _template(kind)
    if kind == "sqlite":
        shutil.copyfile(template, workdir / "placement.db")
    elif kind == "postgresql":
        _sql(_PG, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    else:
        _create_empty(kind, name)
        _copy_mysql(template, name)
    return FreshDatabase(kind, name, url)


_TEMPLATES: dict[str, str] = {}  # kind -> this process's template (name or file)


def _template(kind: str) -> str:
    """This process's template of ``kind``, migrated to head on first use."""
    if kind not in _TEMPLATES:
        name = f"stowage_conf_tpl_{secrets.token_hex(6)}"
        workdir = Path(tempfile.mkdtemp(prefix="conformance-template-"))
        _create_empty(kind, name)
        template = FreshDatabase(kind, name, _url(kind, name, workdir))
        atexit.register(_drop_template, template, workdir)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
        subprocess.run([sys.executable, "-m", "stowage", "manage", "db", "upgrade",
                        "--database", template.url], check=True, capture_output=True,
                       timeout=300, env=env)
        _TEMPLATES[kind] = str(workdir / "placement.db") if kind == "sqlite" else name
    return _TEMPLATES[kind]


def _drop_template(template: FreshDatabase, workdir: Path) -> None:
    template.drop()
    shutil.rmtree(workdir, ignore_errors=True)


_DUMPS: dict[str, bytes] = {}  # template -> its mysqldump, taken once: it never changes


def _copy_mysql(source: str, target: str) -> None:
    """Tables and rows of ``source`` into the empty database ``target``."""
    if source not in _DUMPS:
        _DUMPS[source] = subprocess.run(
            ["mysqldump", "-h", "127.0.0.1", "-P", "3306", "-u", "root", "--skip-comments",
             "--single-transaction", source],
            check=True, capture_output=True, timeout=120).stdout
    subprocess.run(["mysql", "-h", "127.0.0.1", "-P", "3306", "-u", "root", target],
                   input=_DUMPS[source], check=True, capture_output=True, timeout=120)
