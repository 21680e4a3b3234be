"""Hot-path statements written once in SQL and handed straight to the driver.

Why: SQLAlchemy Core builds a statement object, derives its cache key and
processes its parameters on every execute. On SQLite that costs 60-200 µs
per statement, five to twenty times what the database itself spends, and a
claim (PUT /allocations) or a candidate refresh runs a dozen statements. The
statements on those paths are therefore written here as SQL text, rendered
once per driver placeholder style (and per IN-list length), and run with
`Connection.exec_driver_sql`: still inside the caller's transaction, still
seen by SQLAlchemy's events, with errors wrapped as the usual
`sqlalchemy.exc` classes.

When no listener watches statements (`before_cursor_execute` or
`after_cursor_execute`: the benches' counters, the tests' role checks), a
statement inside a transaction goes to the driver's cursor directly:
`exec_driver_sql` still spends 10-25 µs per statement building an execution
context and a result, more than SQLite itself, and a resize+confirm runs
140 statements. Errors are then wrapped (and a lost connection invalidated)
by the same SQLAlchemy code as on its own path.

Placeholders are ``:name``. A list or tuple value expands ``IN :name`` into
``IN (?, ?, ...)``; an empty list becomes ``IN (NULL)``, which matches
nothing. Results are the driver's raw values, so select integers, text and
numbers; datetimes passed as parameters are stored as SQLAlchemy stores
them (naive, ISO text on SQLite).

Use it where the count of statements per request is the cost; everywhere
else Core statements read better and are fast enough.
"""

from __future__ import annotations

import datetime
import operator
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.engine.interfaces import DBAPICursor

__all__ = ["Sql", "plain"]

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_SQLITE_DATETIME = "%Y-%m-%d %H:%M:%S.%f"
# "INSERT ... VALUES (%s, ...) [ON CONFLICT ...]": head, the row's tuple, tail.
_VALUES_ROW = re.compile(r"^(INSERT\b.*?\bVALUES\s*)(\([^()]*\))(.*)$", re.S | re.I)
# Well under PostgreSQL's 65,535 parameters per statement.
_ROWS_PARAMS = 5000


def _placeholder(paramstyle: str) -> str:
    if paramstyle == "qmark":
        return "?"
    if paramstyle in ("format", "pyformat"):
        return "%s"
    raise NotImplementedError(f"placeholder style {paramstyle!r}")


class Sql:
    """One SQL statement with ``:name`` parameters, rendered per driver on first use."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())
        self.names = _PARAM.findall(self.text)
        self._pieces = _PARAM.split(self.text)[::2]
        self._rendered: dict[tuple[str, tuple[int, ...]], str] = {}
        self._lock = threading.Lock()

    def _render(self, paramstyle: str, lengths: tuple[int, ...]) -> str:
        """The driver's SQL for these list lengths (-1: a plain value)."""
        key = (paramstyle, lengths)
        sql = self._rendered.get(key)
        if sql is not None:
            return sql
        mark = _placeholder(paramstyle)
        pieces = [p.replace("%", "%%") for p in self._pieces] if mark == "%s" else self._pieces
        out = [pieces[0]]
        for n, piece in zip(lengths, pieces[1:], strict=True):
            if n < 0:
                out.append(mark)
            else:
                out.append("(" + (", ".join([mark] * n) if n else "NULL") + ")")
            out.append(piece)
        sql = "".join(out)
        with self._lock:
            self._rendered[key] = sql
        return sql

    def _bind(self, conn: Connection, params: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        sqlite = conn.dialect.name == "sqlite"
        values: list[Any] = []
        lengths = []
        for name in self.names:
            value = params[name]
            if isinstance(value, list | tuple):
                lengths.append(len(value))
                values.extend(_adapt(v, sqlite) for v in value)
            else:
                lengths.append(-1)
                values.append(_adapt(value, sqlite))
        return self._render(conn.dialect.paramstyle, tuple(lengths)), tuple(values)

    def rows(self, conn: Connection, **params: Any) -> list[tuple[Any, ...]]:
        """Every row, as plain tuples."""
        sql, values = self._bind(conn, params)
        with _cursor(conn, sql, values) as cursor:
            if cursor is not None:
                return [tuple(r) for r in cursor.fetchall()]
        return [tuple(r) for r in conn.exec_driver_sql(sql, values)]

    def stream(self, conn: Connection, batch: int = 5000, **params: Any) -> Iterator[Any]:
        """Every row as the driver returns it, fetched `batch` at a time.

        For reads of hundreds of thousands of rows (the candidate engine's full
        load): rows come straight from the driver's cursor, without a Python
        call per row or a list of all of them held at once.
        """
        sql, values = self._bind(conn, params)
        result = conn.exec_driver_sql(sql, values)
        cursor = result.cursor
        try:
            while rows := cursor.fetchmany(batch):
                yield from rows
        finally:
            result.close()

    def first(self, conn: Connection, **params: Any) -> tuple[Any, ...] | None:
        sql, values = self._bind(conn, params)
        with _cursor(conn, sql, values) as cursor:
            if cursor is not None:
                found = cursor.fetchone() if cursor.description is not None else None
                return None if found is None else tuple(found)
        row = conn.exec_driver_sql(sql, values).first()
        return None if row is None else tuple(row)

    def scalar(self, conn: Connection, **params: Any) -> Any:
        row = self.first(conn, **params)
        return None if row is None else row[0]

    def run(self, conn: Connection, **params: Any) -> int:
        """Execute a write; returns the rows it matched."""
        sql, values = self._bind(conn, params)
        with _cursor(conn, sql, values) as cursor:
            if cursor is not None:
                return int(cursor.rowcount)
        return int(conn.exec_driver_sql(sql, values).rowcount)

    def run_many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """The same write once per parameter set, in one driver call (no list values).

        Bulk writes pass thousands of rows sharing one timestamp: each row is
        read with one itemgetter, and each distinct datetime formatted once.
        """
        if not rows:
            return
        sql = self._render(conn.dialect.paramstyle, (-1,) * len(self.names))
        get = operator.itemgetter(*self.names)
        values = [get(r) for r in rows]
        if len(self.names) == 1:
            values = [(v,) for v in values]
        if conn.dialect.name == "sqlite":
            formatted: dict[datetime.datetime, str] = {}

            def text(v: datetime.datetime) -> str:
                found = formatted.get(v)
                if found is None:
                    found = formatted[v] = v.strftime(_SQLITE_DATETIME)
                return found

            values = [tuple([text(v) if isinstance(v, datetime.datetime) else v for v in row])
                      for row in values]
        if conn.dialect.name == "postgresql" and len(values) > 1:
            self._insert_rows(conn, sql, values)
            return
        conn.exec_driver_sql(sql, values)

    def _insert_rows(self, conn: Connection, sql: str, values: list[tuple[Any, ...]]) -> None:
        """PostgreSQL: an INSERT's rows as multi-row VALUES, `_ROWS_PARAMS` values a statement.

        psycopg runs an executemany as one statement per row (pipelined): the
        server parses, plans and executes each. One statement per chunk of
        rows costs the database a third of that. (PyMySQL already rewrites an
        executemany INSERT this way; SQLite's executemany reuses one prepared
        statement.) Any other statement runs as an executemany.
        """
        found = _VALUES_ROW.match(sql)
        if found is None:
            conn.exec_driver_sql(sql, values)
            return
        head, row, tail = found.groups()
        per = max(1, _ROWS_PARAMS // max(1, len(self.names)))
        for start in range(0, len(values), per):
            part = values[start:start + per]
            conn.exec_driver_sql(head + ", ".join([row] * len(part)) + tail,
                                 tuple(v for one in part for v in one))


def plain(conn: Connection, sql: str) -> None:
    """A statement with no parameters and no rows (SQLite's BEGIN, once per transaction),
    on the cursor unless a listener watches: see the module's docstring."""
    dispatch = conn.dispatch
    if dispatch.before_cursor_execute or dispatch.after_cursor_execute:
        conn.exec_driver_sql(sql)
        return
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql)
    except Exception as exc:  # noqa: BLE001 - wrapped as SQLAlchemy wraps it
        conn._handle_dbapi_exception(exc, sql, (), cursor, None)
    finally:
        cursor.close()


def _watched(conn: Connection) -> bool:
    """Some listener must see this connection's statements (or SQLAlchemy must begin
    its transaction): they go through `exec_driver_sql` then."""
    dispatch = conn.dispatch
    return bool(dispatch.before_cursor_execute or dispatch.after_cursor_execute
                or not conn.in_transaction())


@contextmanager
def _cursor(conn: Connection, sql: str, values: tuple[Any, ...]
            ) -> Iterator[DBAPICursor | None]:
    """The driver's cursor having run `sql`, closed after the block; None when the
    statement must take SQLAlchemy's own path (`_watched`)."""
    if _watched(conn):
        yield None
        return
    cursor = conn.connection.cursor()
    try:
        try:
            cursor.execute(sql, values)
        except Exception as exc:  # noqa: BLE001 - wrapped as SQLAlchemy wraps it
            conn._handle_dbapi_exception(exc, sql, values, cursor, None)
        yield cursor
    finally:
        cursor.close()


def _adapt(value: Any, sqlite: bool) -> Any:
    if sqlite and isinstance(value, datetime.datetime):
        return value.strftime(_SQLITE_DATETIME)
    return value
