"""`Sql.run_many` on every backend: rows read by name, datetimes stored as SQLAlchemy
stores them (on SQLite each distinct one formatted once), and on PostgreSQL an
INSERT's rows sent as multi-row VALUES in chunks, in order, savepoint-safe."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from stowage.db import statements
from stowage.db.statements import Sql
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database

# Whole seconds: MySQL's DATETIME (Core's default there) keeps no fraction.
NOW = datetime.datetime(2026, 11, 28, 15, 4, 5)
LATER = NOW + datetime.timedelta(seconds=1)
META = sa.MetaData()
T = sa.Table("t", META, sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
             sa.Column("a", sa.Integer, unique=True), sa.Column("b", sa.String(20)),
             sa.Column("at", sa.DateTime), sa.Column("later", sa.DateTime))
INSERT = Sql("INSERT INTO t (a, b, at, later) VALUES (:a, :b, :at, :later)")


@contextmanager
def _made(backend: str) -> Iterator[sa.Engine]:
    with throwaway_database(backend) as url:
        made = sa.create_engine(url)
        META.create_all(made)
        yield made
        made.dispose()


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    with _made(request.param) as made:
        yield made


@pytest.fixture
def sqlite_engine() -> Iterator[sa.Engine]:
    with _made("sqlite") as made:
        yield made


def rows(count: int, first: int = 0,
         now: datetime.datetime = NOW) -> list[dict[str, object]]:
    later = now + datetime.timedelta(seconds=1)
    return [{"b": f"r{i}", "a": i, "at": now, "later": later if i % 2 else None}
            for i in range(first, first + count)]


def test_rows_land_in_order_as_core_writes_them(engine: sa.Engine,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(statements, "_ROWS_PARAMS", 12)  # chunks of 3 rows on PostgreSQL
    with engine.begin() as conn:
        INSERT.run_many(conn, rows(10))
        Sql("INSERT INTO t (a) VALUES (:a)").run_many(conn, [{"a": 100}, {"a": 101}])
        INSERT.run_many(conn, [])
        got = conn.execute(sa.select(T.c.a, T.c.b, T.c.at, T.c.later).order_by(T.c.id)).all()
    assert [tuple(r) for r in got] == [
        (i, f"r{i}", NOW, LATER if i % 2 else None) for i in range(10)] + [
        (100, None, None, None), (101, None, None, None)]


def test_sqlite_stores_datetimes_as_core_does(sqlite_engine: sa.Engine) -> None:
    """SQLite keeps datetimes as text: the bound rows must spell them as Core does."""
    with sqlite_engine.begin() as conn:
        INSERT.run_many(conn, rows(2, now=NOW.replace(microsecond=123456)))
        raw = conn.exec_driver_sql("SELECT at, later FROM t ORDER BY a").all()
    assert [tuple(r) for r in raw] == [("2026-11-28 15:04:05.123456", None),
                                       ("2026-11-28 15:04:05.123456",
                                        "2026-11-28 15:04:06.123456")]


def test_a_duplicate_fails_the_whole_write_inside_a_savepoint(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        INSERT.run_many(conn, rows(3))
        with pytest.raises(IntegrityError), conn.begin_nested():
            INSERT.run_many(conn, rows(3, first=2))
        assert conn.execute(sa.select(sa.func.count()).select_from(T)).scalar() == 3
