"""`Sql` statements run on the driver's cursor when no listener watches them: the same
rows, counts and wrapped errors as through `exec_driver_sql`, on every backend; a
listener (the benches' counters, the role checks) still sees every statement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from stowage.db.statements import Sql
from tests.conftest import BACKENDS
from tests.dbs import throwaway_database

META = sa.MetaData()
T = sa.Table("t", META, sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
             sa.Column("a", sa.Integer, unique=True), sa.Column("b", sa.String(20)))
INSERT = Sql("INSERT INTO t (a, b) VALUES (:a, :b)")
SELECT = Sql("SELECT a, b FROM t WHERE a IN :a ORDER BY a")
ONE = Sql("SELECT b FROM t WHERE a = :a")
UPDATE = Sql("UPDATE t SET b = :b WHERE a >= :a")


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[sa.Engine]:
    with throwaway_database(request.param) as url:
        made = sa.create_engine(url)
        META.create_all(made)
        yield made
        made.dispose()


def _no_driver_sql(conn: Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kw: Any) -> Any:
        raise AssertionError("exec_driver_sql used with no listener watching")
    monkeypatch.setattr(conn, "exec_driver_sql", refuse)


def test_reads_and_writes_go_to_the_cursor(engine: sa.Engine,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with engine.connect() as conn, conn.begin():
        _no_driver_sql(conn, monkeypatch)
        for a in (1, 2, 3):
            assert INSERT.run(conn, a=a, b=f"r{a}") == 1
        assert SELECT.rows(conn, a=[3, 1, 9]) == [(1, "r1"), (3, "r3")]
        assert SELECT.rows(conn, a=[]) == []
        assert ONE.first(conn, a=2) == ("r2",)
        assert ONE.scalar(conn, a=9) is None
        # Rows matched, not changed: r2 keeps its value (MySQL counts found rows too).
        assert UPDATE.run(conn, a=2, b="r2") == 2
    with engine.connect() as conn:
        assert conn.execute(sa.select(T.c.a, T.c.b).order_by(T.c.a)).all() == [
            (1, "r1"), (2, "r2"), (3, "r2")]


def test_an_error_is_wrapped_and_the_transaction_rolls_back(
        engine: sa.Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    with engine.connect() as conn:
        with conn.begin():
            INSERT.run(conn, a=1, b="kept")
        with pytest.raises(IntegrityError), conn.begin():
            _no_driver_sql(conn, monkeypatch)
            INSERT.run(conn, a=2, b="undone")
            INSERT.run(conn, a=1, b="twice")
        monkeypatch.undo()
        with conn.begin():  # the connection is still usable
            assert SELECT.rows(conn, a=[1, 2]) == [(1, "kept")]


def test_a_listener_sees_every_statement(engine: sa.Engine) -> None:
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement.split()[0])
    event.listen(engine, "before_cursor_execute", note)
    try:
        with engine.connect() as conn, conn.begin():
            INSERT.run(conn, a=1, b="x")
            assert ONE.first(conn, a=1) == ("x",)
            assert UPDATE.run(conn, a=1, b="y") == 1
    finally:
        event.remove(engine, "before_cursor_execute", note)
    assert [s for s in seen if s in ("INSERT", "SELECT", "UPDATE")] == [
        "INSERT", "SELECT", "UPDATE"]


def test_outside_a_transaction_sqlalchemy_begins_one(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        INSERT.run(conn, a=5, b="auto")
        assert conn.in_transaction()
        conn.commit()
    with engine.connect() as conn:
        assert ONE.scalar(conn, a=5) == "auto"
