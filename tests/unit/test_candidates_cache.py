"""The worker's snapshot cache: usage-only changes, and views that outlive a publish.

    provider 1 (VCPU 8) ── claims ──► change log (usage_only) ──► cache reloads usage
    provider 2 (VCPU 8) ── inventory ► change log (full)       ──► cache reloads it whole
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator

import os_resource_classes as orc
import pytest
from sqlalchemy import event as sa_event

from stowage.db import Database, schema
from stowage.placement import changes
from stowage.placement import tables as t
from stowage.placement.candidates.cache import SnapshotCache

_NOW = datetime.datetime(2026, 1, 1)
_VCPU = orc.STANDARDS.index("VCPU")


@pytest.fixture
def db(tmp_path: object) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/cache.db")
    schema.upgrade(database)
    with database.write() as conn:
        for pid in (1, 2):
            conn.execute(t.resource_providers.insert().values(
                id=pid, uuid=f"00000000-0000-0000-0000-00000000000{pid}", name=f"rp{pid}",
                generation=0, root_provider_id=pid, created_at=_NOW))
            conn.execute(t.inventories.insert().values(
                resource_provider_id=pid, resource_class_id=_VCPU, total=8, reserved=0,
                min_unit=1, max_unit=8, step_size=1, allocation_ratio=1.0, created_at=_NOW))
    yield database
    database.dispose()


def _claim(db: Database, pid: int, used: int) -> None:
    with db.write() as conn:
        conn.execute(t.allocations.insert().values(
            resource_provider_id=pid, consumer_id="c", resource_class_id=_VCPU, used=used,
            created_at=_NOW))
        changes.record(conn, [pid], usage_only=True)


def _used(cache: SnapshotCache, db: Database, pid: int) -> int:
    with db.read() as conn:
        return cache.view(conn, {"VCPU"}, set()).providers[pid].inventories["VCPU"].used


def test_usage_only_changes_reload_usage_and_keep_the_structure(db: Database) -> None:
    cache = SnapshotCache()
    assert _used(cache, db, 1) == 0
    with db.read() as conn:
        before = cache.view(conn, set(), set())
    _claim(db, 1, 3)
    with db.read() as conn:
        after = cache.view(conn, set(), set())
    assert after.providers[1].inventories["VCPU"].used == 3
    assert before.providers[1].inventories["VCPU"].used == 0  # a held view is unchanged
    assert after.structure is before.structure
    assert after.providers[2] is before.providers[2]
    with db.write() as conn:
        conn.execute(t.inventories.update().where(t.inventories.c.resource_provider_id == 2)
                     .values(total=16))
        changes.record(conn, [2])
    with db.read() as conn:
        latest = cache.view(conn, set(), set())
    assert latest.providers[2].inventories["VCPU"].capacity == 16
    assert after.providers[2].inventories["VCPU"].capacity == 8


def test_a_snapshot_nobody_holds_is_updated_in_place(db: Database) -> None:
    cache = SnapshotCache()
    with db.read() as conn:
        mapping = cache.view(conn, set(), set()).providers  # the view itself is dropped
    _claim(db, 1, 2)
    assert _used(cache, db, 1) == 2
    with db.read() as conn:
        assert cache.view(conn, set(), set()).providers is mapping


def test_known_names_look_up_only_what_is_not_standard(db: Database) -> None:
    cache = SnapshotCache()
    with db.write() as conn:
        conn.execute(t.traits.insert().values(name="CUSTOM_GOLD", created_at=_NOW))
    with db.read() as conn:
        view = cache.view(conn, {"VCPU", "CUSTOM_NOPE"}, {"HW_CPU_X86_AVX2", "CUSTOM_GOLD",
                                                          "CUSTOM_NONE", "NOT_A_TRAIT"})
    assert view.known_classes == {"VCPU"}
    assert view.known_traits == {"HW_CPU_X86_AVX2", "CUSTOM_GOLD"}


def _logged_claim(db: Database, log_id: int, pid: int, used: int) -> None:
    """A claim as another worker commits it: the allocation and its log entry, by id."""
    with db.write() as conn:
        conn.execute(t.allocations.insert().values(
            resource_provider_id=pid, consumer_id=f"c{log_id}", resource_class_id=_VCPU,
            used=used, created_at=_NOW))
        conn.execute(t.provider_changes.insert().values(
            id=log_id, provider_id=pid, created_at=_NOW, usage_only=True))


@contextlib.contextmanager
def _statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def note(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    sa_event.listen(db.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        sa_event.remove(db.engine, "before_cursor_execute", note)


def test_an_own_claim_is_taken_as_committed_without_reading_it_back(db: Database) -> None:
    cache = SnapshotCache()
    assert _used(cache, db, 1) == 0
    _logged_claim(db, 1, 1, 3)
    cache.claimed([1], {1: {"VCPU": 3}})
    with _statements(db) as seen:
        assert _used(cache, db, 1) == 3
    # The poll alone (after SQLite's BEGIN): no usage sum, and entry 1 is not replayed.
    assert [s for s in seen if "allocations" in s] == []
    assert cache._cursor.upto == 1


def test_an_own_claim_a_poll_already_had_is_ignored(db: Database) -> None:
    cache = SnapshotCache()
    assert _used(cache, db, 1) == 0
    _logged_claim(db, 1, 1, 3)
    _logged_claim(db, 2, 1, 2)  # another worker's claim, after ours
    assert _used(cache, db, 1) == 5  # a request of this worker polled both
    cache.claimed([1], {1: {"VCPU": 3}})  # our PUT's thread comes back late
    assert _used(cache, db, 1) == 5


def test_a_later_claim_seen_after_an_own_one_is_replayed(db: Database) -> None:
    cache = SnapshotCache()
    assert _used(cache, db, 1) == 0
    _logged_claim(db, 1, 1, 3)
    _logged_claim(db, 2, 1, 2)  # committed before this worker takes its own claim in
    cache.claimed([1], {1: {"VCPU": 3}})  # the usage as our claim committed it
    assert _used(cache, db, 1) == 5  # entry 2 is still unseen: its replay reloads
