"""Throw-away databases on the local SQLite, PostgreSQL and MariaDB/MySQL servers.

`throwaway_database` yields an empty database; `migrated_database` one already at
the newest migration, as `schema.upgrade` leaves it. The latter is cloned from a
template this process migrates once per backend (a file copy on SQLite,
`CREATE DATABASE ... TEMPLATE` on PostgreSQL): the Alembic chain costs ~0.3 s on
SQLite and 1-3 s on PostgreSQL, against a few milliseconds and ~0.2 s for a
clone, and the fixtures that start a server or a deployment ask for hundreds
of databases a run. MySQL has no cheap clone (`CREATE TABLE ... LIKE` drops the
foreign keys): a clone replays the template's `SHOW CREATE TABLE` statements and
copies the few tables holding rows. The migration tests (test_manage_db,
test_schema_* and the adopt tests) keep starting from `throwaway_database` and
run the real chain on every backend.

Dropping a PostgreSQL database waits for every backend to let go of its files
(0.3-4 s on a loaded machine); MySQL's drop is quicker but still a round of
DDL. Neither is something a test waits for: drops of server databases go to one
background thread per process, and `finish_drops()` (tests/conftest.py, at the
end of the session) waits for the last ones.
"""

from __future__ import annotations

import atexit
import os
import queue
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MYSQL_ADMIN = "mysql+pymysql://root@127.0.0.1:3306/"
_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{}"
_MYSQL_URL = "mysql+pymysql://root@127.0.0.1:3306/{}?charset=utf8mb4"


def _new_name() -> str:
    return f"stowage_test_{uuid.uuid4().hex[:12]}"


_ADMINS: dict[str, sa.Engine] = {}
_ADMIN_LOCK = threading.Lock()


def _admin(backend: str) -> sa.Engine:
    """An autocommit engine on the server's administrative database, one per process."""
    with _ADMIN_LOCK:
        if backend not in _ADMINS:
            _ADMINS[backend] = sa.create_engine(PG_ADMIN if backend == "postgresql"
                                                else MYSQL_ADMIN, isolation_level="AUTOCOMMIT")
        return _ADMINS[backend]


def _server_sql(backend: str, name: str, template: str | None = None) -> tuple[str, str, str]:
    """The URL of database `name` on `backend`, and the statements creating and dropping it."""
    if backend == "postgresql":
        create = f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")
        return (_PG_URL.format(name), create,
                f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    if backend == "mysql":
        return (_MYSQL_URL.format(name),
                f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
                f"DROP DATABASE IF EXISTS `{name}`")
    raise ValueError(f"unknown backend {backend!r}")


class _Dropper:
    """Drops server databases on a background thread, in the order they were let go."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.failures: list[str] = []

    def put(self, backend: str, statement: str) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="db-dropper",
                                                daemon=True)
                self._thread.start()
        self._queue.put((backend, statement))

    def _run(self) -> None:
        while True:
            backend, statement = self._queue.get()
            try:
                with _admin(backend).connect() as conn:
                    conn.exec_driver_sql(statement)
            except Exception as exc:  # reported by finish(), never lost
                self.failures.append(f"{statement}: {exc}")
            finally:
                self._queue.task_done()

    def finish(self) -> list[str]:
        """Wait until every queued drop ran; the ones that failed."""
        self._queue.join()
        return self.failures


_DROPPER = _Dropper()


def finish_drops() -> list[str]:
    """Wait for the databases still being dropped, then drop this process's templates;
    the drop statements that failed. Called at the end of the session (and at exit,
    for scripts such as bench/placement_import.py); a second call has nothing to do."""
    failures = _DROPPER.finish()
    with _TEMPLATE_LOCK:
        drops, _CLEANUPS[:] = list(_CLEANUPS), []
        _TEMPLATES.clear()
    for drop in drops:
        try:
            drop()
        except Exception as exc:
            failures.append(f"template: {exc}")
    return failures


@contextmanager
def throwaway_database(backend: str) -> Iterator[str]:
    """Yield the URL of a new, empty database and drop it afterwards."""
    name = _new_name()
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield f"sqlite:///{os.path.join(tmp, name)}.db"
        return
    with _server_database(backend, name) as url:
        yield url


@contextmanager
def _server_database(backend: str, name: str, template: str | None = None) -> Iterator[str]:
    url, create, drop = _server_sql(backend, name, template)
    with _admin(backend).connect() as conn:
        conn.exec_driver_sql(create)
    try:
        yield url
    finally:
        _DROPPER.put(backend, drop)


@contextmanager
def migrated_database(backend: str) -> Iterator[str]:
    """Yield the URL of a new database at the newest migration; dropped afterwards."""
    template = _template(backend)
    name = _new_name()
    if backend == "postgresql":
        with _server_database(backend, name, template) as url:
            yield url
    elif backend == "mysql":
        with _server_database(backend, name) as url:
            _mysql_clone(template, url)
            yield url
    else:
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, f"{name}.db")
            shutil.copyfile(template, target)
            yield f"sqlite:///{target}"


def _upgrade(url: str) -> None:
    from stowage.db import Database, schema

    db = Database(url)
    try:
        schema.upgrade(db)
    finally:
        db.dispose()


_TEMPLATES: dict[str, str] = {}
_TEMPLATE_LOCK = threading.Lock()
# What removes each template; run by finish_drops().
_CLEANUPS: list[Callable[[], object]] = []
atexit.register(finish_drops)


def _template(backend: str) -> str:
    """This process's migrated template on `backend` (a file path, or a database name),
    made at first use and removed when the process exits."""
    with _TEMPLATE_LOCK:
        if backend not in _TEMPLATES:
            _TEMPLATES[backend] = {"sqlite": _sqlite_template,
                                   "postgresql": _postgresql_template,
                                   "mysql": _mysql_template}[backend]()
        return _TEMPLATES[backend]


def _sqlite_template() -> str:
    tmp = tempfile.mkdtemp(prefix="stowage-template-")
    _CLEANUPS.append(lambda: shutil.rmtree(tmp, ignore_errors=True))
    path = os.path.join(tmp, "template.db")
    _upgrade(f"sqlite:///{path}")
    # The last connection closed checkpointed the write-ahead log into the file:
    # a copy of the file alone is the whole database.
    assert not os.path.exists(f"{path}-wal") or os.path.getsize(f"{path}-wal") == 0
    return path


def _server_template(backend: str) -> tuple[str, str]:
    """A new database on `backend`, migrated, dropped by finish_drops(): (name, URL)."""
    name = f"stowage_template_{uuid.uuid4().hex[:12]}"
    url, create, drop = _server_sql(backend, name)
    with _admin(backend).connect() as conn:
        conn.exec_driver_sql(create)
    _CLEANUPS.append(lambda: _drop_now(backend, drop))
    _upgrade(url)  # disposed: a PostgreSQL template must have no connection when copied
    return name, url


def _postgresql_template() -> str:
    return _server_template("postgresql")[0]


# Per MySQL template: its tables' CREATE TABLE statements, and the tables holding rows.
_MYSQL_SCHEMAS: dict[str, tuple[list[str], list[str]]] = {}


def _mysql_template() -> str:
    """A migrated MySQL database, and (in _MYSQL_SCHEMAS) what a clone replays of it:
    the CREATE TABLE statements (with their foreign keys and AUTO_INCREMENT values)
    and the tables with rows (the Alembic version, standard classes and traits)."""
    name, url = _server_template("mysql")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            kinds = dict(conn.exec_driver_sql("SHOW FULL TABLES").all())
            assert set(kinds.values()) == {"BASE TABLE"}, kinds  # no views to replay
            creates = [conn.exec_driver_sql(f"SHOW CREATE TABLE `{table}`").one()[1]
                       for table in kinds]
            filled = [table for table in kinds
                      if conn.exec_driver_sql(f"SELECT 1 FROM `{table}` LIMIT 1").first()]
    finally:
        engine.dispose()
    _MYSQL_SCHEMAS[name] = (creates, filled)
    return name


def _mysql_clone(template: str, url: str) -> None:
    """Make the database at `url` what the template `template` is: its tables, in any
    order (foreign keys are checked from the next session on), then its rows."""
    creates, filled = _MYSQL_SCHEMAS[template]
    engine = sa.create_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("SET FOREIGN_KEY_CHECKS = 0")
            for statement in creates:
                cursor.execute(statement)  # no parameters: taken as written
            for table in filled:
                cursor.execute(f"INSERT INTO `{table}` SELECT * FROM `{template}`.`{table}`")
            raw.commit()
        finally:
            raw.close()
    finally:
        engine.dispose()


def _drop_now(backend: str, statement: str) -> None:
    with _admin(backend).connect() as conn:
        conn.exec_driver_sql(statement)
