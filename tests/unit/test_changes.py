"""The change cursor: out-of-order commits, rolled-back ids, and the reload signal."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from stowage.db import Database, schema
from stowage.placement import changes
from stowage.placement import tables as t


@pytest.fixture
def db(tmp_path: object) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/changes.db")
    schema.upgrade(database)
    yield database
    database.dispose()


def _insert(db: Database, row_id: int, provider_id: int | None) -> None:
    with db.write() as conn:
        conn.execute(t.provider_changes.insert().values(
            id=row_id, provider_id=provider_id, created_at=datetime.datetime(2026, 1, 1)))


def test_poll_returns_new_changes_once(db: Database) -> None:
    cursor = changes.ChangeCursor()
    with db.write() as conn:
        changes.record(conn, [3, 1, 3])
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({1, 3}))
        assert not cursor.poll(conn)


def test_a_late_commit_below_the_cursor_is_still_seen(db: Database) -> None:
    cursor = changes.ChangeCursor()
    _insert(db, 1, 10)
    _insert(db, 3, 30)  # id 2 belongs to a transaction that has not committed yet
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({10, 30}))
    assert cursor.upto == 1 and cursor.pending == {3}
    _insert(db, 2, 20)
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({20}))
    assert cursor.upto == 3 and not cursor.pending


def test_a_rolled_back_id_is_skipped_after_the_timeout(db: Database,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cursor = changes.ChangeCursor()
    _insert(db, 1, 10)
    _insert(db, 3, 30)
    with db.read() as conn:
        cursor.poll(conn)
    monkeypatch.setattr(changes, "GAP_TIMEOUT", -1.0)
    _insert(db, 4, 40)
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({40}))
    assert cursor.upto == 4 and not cursor.pending


def test_usage_only_changes_are_told_apart(db: Database) -> None:
    cursor = changes.ChangeCursor()
    with db.write() as conn:
        changes.record(conn, [1, 2], usage_only=True)
        changes.record(conn, [2, 3])
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({2, 3}),
                                                    usage=frozenset({1}))


def test_record_all_asks_for_a_full_reload(db: Database) -> None:
    cursor = changes.ChangeCursor()
    with db.write() as conn:
        changes.record(conn, [1])
        changes.record_all(conn)
    with db.read() as conn:
        assert cursor.poll(conn) is None


def test_pruning_keeps_the_newest_row(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    _insert(db, 1, 10)
    _insert(db, 2, 20)
    monkeypatch.setattr(changes, "_PRUNE_PROBABILITY", 1.0)
    monkeypatch.setattr(changes, "KEEP_FOR", datetime.timedelta(seconds=0))
    with db.write() as conn:
        changes.record(conn, [5])
    with db.read() as conn:
        left = conn.execute(sa.select(t.provider_changes.c.id)).scalars().all()
    assert left == [3]


def test_a_poll_reads_the_missing_ids_by_name_not_everything_above_them(
        db: Database) -> None:
    cursor = changes.ChangeCursor()
    _insert(db, 1, 10)
    _insert(db, 3, 30)  # id 2 rolled back, or not committed yet
    with db.read() as conn:
        cursor.poll(conn)
    assert cursor.upto == 1 and set(cursor.missing) == {2} and cursor.high == 3
    _insert(db, 4, 40)
    seen: list[tuple[str, object]] = []

    def note(conn: object, cursor: object, statement: str, params: object,
             *args: object) -> None:
        seen.append((statement, params))

    sa.event.listen(db.engine, "before_cursor_execute", note)
    try:
        with db.read() as conn:
            assert cursor.poll(conn) == changes.Changes(full=frozenset({40}))
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", note)
    polls = [params for statement, params in seen if "resource_provider_changes" in statement]
    assert polls == [(3, 2)]  # above the highest applied (3, not 1), and id 2 by name


def test_an_own_claim_is_marked_applied_once(db: Database) -> None:
    cursor = changes.ChangeCursor()
    _insert(db, 1, 10)
    _insert(db, 2, 20)
    assert cursor.claim([2])  # id 1 not polled yet: it stays to be read
    assert cursor.upto == 0 and cursor.pending == {2}
    with db.read() as conn:
        assert cursor.poll(conn) == changes.Changes(full=frozenset({10}))
    assert cursor.upto == 2 and not cursor.pending
    assert not cursor.claim([2])  # already applied
