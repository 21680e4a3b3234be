"""One `Database` per process: an engine plus the transaction discipline every write uses.

SQLite allows one writer at a time, and a deferred transaction that later tries
to write fails at once with "database is locked" instead of waiting. Writes on
SQLite therefore take a process-wide lock and start with ``BEGIN IMMEDIATE``;
PostgreSQL and MySQL rely on row locks and generation compare-and-swap.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from stowage.db import statements

__all__ = ["Database", "create_engine", "API", "CELL", "side", "sides", "LockOrderViolation"]

_WRITE = "stowage_write"
# The execution option that names which database a connection was opened for.
_ROLE = "stowage_role"
# Per thread, the engines and roles of the write transactions open (Database.write).
_WRITING = threading.local()
# The roles of a cells deployment's databases: the API (global) one and a cell's. A
# handle without a role (the services outside Compute, tests) is held to neither.
API = "api"
CELL = "cell"


def _sqlite_engine(url: sa.URL) -> Engine:
    engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let us emit BEGIN ourselves, and make foreign keys real.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        if url.database not in (None, "", ":memory:"):
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE)
        statements.plain(conn, "BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


# A pooled connection idle for longer than this is pinged before it is handed out.
PING_AFTER_IDLE = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection only when it sat idle: a server restart is caught,
    and a busy worker does not pay a round trip per transaction for it.

    SQLAlchemy's `pool_pre_ping` pings on every checkout; on PostgreSQL that is a
    third of the round trips of a short read. Raising DisconnectionError makes the
    pool drop the connection and try another (its documented retry).
    """

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE:
            return
        try:
            cur = dbapi_conn.cursor()
            cur.execute("SELECT 1")
            cur.fetchall()
            cur.close()
            dbapi_conn.rollback()  # end the transaction the ping may have opened
        except Exception as exc:
            raise sa.exc.DisconnectionError(str(exc)) from exc


def create_engine(url: str) -> Engine:
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    kwargs: dict[str, Any] = {"pool_size": 10, "max_overflow": 20}
    if parsed.get_backend_name() == "mysql":
        kwargs["isolation_level"] = "READ COMMITTED"
    engine = sa.create_engine(parsed, **kwargs)
    _ping_when_idle(engine)
    return engine


class Database:
    """Engine plus `read()` / `write()` transactions; constructed without I/O.

    `role` says which database of a cells deployment a handle stands for:
    `API` for the API (global) database, `CELL` for a cell's, None for a
    handle that stands for no one side (the other services, tests). `view()` gives
    a handle of another role on the same engine and write lock, so code can
    say which database each transaction belongs to before the data is split
    (db/roles.py can then refuse a statement that crosses the line).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.backend = self.engine.dialect.name
        self._write_lock = threading.RLock() if self.backend == "sqlite" else None
        self.role: str | None = None
        self._options: dict[str, Any] = {}

    def view(self, role: str | None) -> Database:
        """This database seen as `role`: same engine, same lock (no I/O)."""
        if role == self.role:
            return self
        other = copy.copy(self)
        other.role = role
        other._options = {_ROLE: role} if role else {}
        return other

    @contextmanager
    def using(self, conn: Connection | None, write: bool = False) -> Iterator[Connection]:
        """A connection of this database for a block inside another's transaction.

        When `conn` is on this same database (one database serves the API and
        the cell), it is `conn` itself, its transaction going on, tagged with
        this handle's role for the block; otherwise a new transaction here,
        a write when `write`: no transaction spans two databases.
        """
        if conn is None or conn.engine is not self.engine:
            with self.write() if write else self.read() as other:
                yield other
            return
        before = conn.get_execution_options().get(_ROLE)
        conn.execution_options(**{_ROLE: self.role})
        try:
            yield conn
        finally:
            conn.execution_options(**{_ROLE: before})

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            if self._options:
                conn = conn.execution_options(**self._options)
            with conn.begin():
                yield conn

    @contextmanager
    def read_statements(self) -> Iterator[Connection]:
        """A read whose statements need no common snapshot: no BEGIN/COMMIT round trips.

        On PostgreSQL (READ COMMITTED) each statement of a read transaction
        sees the latest commits anyway, so autocommit changes nothing but the
        two round trips it saves (the candidate engine's change-log poll, on
        every GET /allocation_candidates); psycopg switches it locally. SQLite
        keeps its transaction: there it is free, and one snapshot for the
        whole read. MySQL too (its driver would restore the session's
        isolation level with a round trip of its own at check-in).
        """
        if self.backend != "postgresql":
            with self.read() as conn:
                yield conn
            return
        with self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT", **self._options)

    # Tests (db/roles.py) turn on the check of the lock order between databases.
    check_order = False

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One transaction: commits on success, rolls back on any exception.

        Between two databases the order is a cell's, then the API's: a cell's
        write transaction may lend its code the API's (`using(..., write=True)`),
        never the other way round -- two threads taking the two in opposite
        orders would each wait for the other (on SQLite until its timeout).
        """
        held: list[tuple[Engine, str | None]] = _WRITING.__dict__.setdefault("held", [])
        if self.check_order and self.role == CELL and any(
                role == API and engine is not self.engine for engine, role in held):
            raise LockOrderViolation("a cell's write transaction inside the API's: the "
                                     "order is a cell's, then the API's (db/engine.py)")
        entry = (self.engine, self.role)
        held.append(entry)
        try:
            with self._write_transaction() as conn:
                yield conn
        finally:
            # Its own entry: the late group check ends an API transaction after the
            # cell's it was opened in (server_groups.late_check), not only last in first out.
            del held[max(i for i, e in enumerate(held) if e is entry)]

    @contextmanager
    def _write_transaction(self) -> Iterator[Connection]:
        if self._write_lock is None:
            with self.engine.connect() as conn:
                if self._options:
                    conn = conn.execution_options(**self._options)
                with conn.begin():
                    yield conn
            return
        with self._write_lock, self.engine.connect() as conn:
            conn = conn.execution_options(**{_WRITE: True}, **self._options)
            with conn.begin():
                yield conn

    def dispose(self) -> None:
        self.engine.dispose()


class LockOrderViolation(AssertionError):
    """Write transactions of two databases opened in the forbidden order."""


def side(db: Database | None, conn: Connection) -> AbstractContextManager[Connection]:
    """`db.using(conn)`, or `conn` itself when no `db` is given (one database for both
    sides, as callers that predate cells and unit tests pass)."""
    return nullcontext(conn) if db is None else db.using(conn)


def sides(db: Database, cell_db: Database | None = None) -> tuple[Database, Database]:
    """(API handle, cell handle) of a worker: the cell's own database when it has one
    (`cell_db`), else `db`, which then holds both."""
    return db.view(API), (cell_db or db).view(CELL)
