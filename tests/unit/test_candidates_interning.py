"""The full load shares equal values between providers, and a claim never leaks into a neighbour.

    rp1, rp2, rp3: VCPU 8, trait HW_CPU_X86_AVX2, aggregate A   (alike)
    rp4:           VCPU 16, no trait, no aggregate             (different)

Interning (interning.py) makes rp1..rp3 hold one inventories dict, one
Inventory, one trait set and one aggregate set. A claim on rp1 must then
give rp1 new objects and leave rp2 and rp3 as they were.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import os_resource_classes as orc
import os_traits
import pytest
import sqlalchemy as sa

from stowage.db import Database, schema
from stowage.placement import changes
from stowage.placement import tables as t
from stowage.placement.candidates import loading
from stowage.placement.candidates.cache import SnapshotCache
from stowage.placement.candidates.interning import Pool
from stowage.placement.candidates.snapshot import Snapshot

_NOW = datetime.datetime(2026, 1, 1)
_VCPU = orc.STANDARDS.index("VCPU")
_AGG = "6d4c2a44-5d43-4b0c-8f9e-2f6d1b2a7c11"
_TRAIT = os_traits.HW_CPU_X86_AVX2


@pytest.fixture
def db(tmp_path: object) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/interning.db")
    schema.upgrade(database)
    with database.write() as conn:
        trait_id = conn.execute(sa.select(t.traits.c.id)
                                .where(t.traits.c.name == _TRAIT)).scalar_one()
        agg_id = conn.execute(t.aggregates.insert().values(uuid=_AGG)
                              ).inserted_primary_key[0]
        for pid in (1, 2, 3, 4):
            total = 8 if pid < 4 else 16
            conn.execute(t.resource_providers.insert().values(
                id=pid, uuid=f"00000000-0000-0000-0000-00000000000{pid}", name=f"rp{pid}",
                generation=0, root_provider_id=pid, created_at=_NOW))
            conn.execute(t.inventories.insert().values(
                resource_provider_id=pid, resource_class_id=_VCPU, total=total, reserved=0,
                min_unit=1, max_unit=total, step_size=1, allocation_ratio=1.0,
                created_at=_NOW))
            if pid < 4:
                conn.execute(t.provider_traits.insert().values(
                    resource_provider_id=pid, trait_id=trait_id, created_at=_NOW))
                conn.execute(t.provider_aggregates.insert().values(
                    resource_provider_id=pid, aggregate_id=agg_id))
    yield database
    database.dispose()


def test_alike_providers_share_their_values(db: Database) -> None:
    with db.read() as conn:
        providers, trait_ids = loading.load_providers(conn, None)
    p1, p2, p3, p4 = (providers[i] for i in (1, 2, 3, 4))
    assert p1.inventories is p2.inventories is p3.inventories
    assert p1.traits is p2.traits is p3.traits == frozenset({_TRAIT})
    assert p1.aggregates is p2.aggregates is p3.aggregates == frozenset({_AGG})
    assert p4.inventories is not p1.inventories
    assert p4.inventories["VCPU"].capacity == 16 and p1.inventories["VCPU"].capacity == 8
    assert p4.traits == frozenset() and p4.aggregates == frozenset()
    assert set(trait_ids) == {_TRAIT}


def test_a_claim_replaces_only_the_claimed_providers_objects(db: Database) -> None:
    cache = SnapshotCache()
    with db.read() as conn:
        before = cache.view(conn, {"VCPU"}, set())
    shared = before.providers[2].inventories
    with db.write() as conn:
        conn.execute(t.allocations.insert().values(
            resource_provider_id=1, consumer_id="c", resource_class_id=_VCPU, used=3,
            created_at=_NOW))
        changes.record(conn, [1], usage_only=True)
    with db.read() as conn:
        after = cache.view(conn, {"VCPU"}, set())
    assert after.providers[1].inventories["VCPU"].used == 3
    for pid in (2, 3):
        assert after.providers[pid].inventories is shared
        assert shared["VCPU"].used == 0
    assert before.providers[1].inventories["VCPU"].used == 0  # the old view is unchanged


def test_a_pool_returns_one_object_per_value() -> None:
    pool = Pool()
    a = pool.inventory(8.0, 0, 1, 8, 1)
    assert pool.inventory(8.0, 0, 1, 8, 1) is a
    assert pool.inventory(8.0, 1, 1, 8, 1) is not a
    d1 = pool.inventories({"VCPU": a})
    assert pool.inventories({"VCPU": a}) is d1
    assert pool.names(["X", "Y"]) is pool.names(["Y", "X"])
    assert pool.name("".join(["VC", "PU"])) is pool.name("VCPU")


def _claim(db: Database, pid: int, consumer: str) -> None:
    with db.write() as conn:
        conn.execute(t.allocations.insert().values(
            resource_provider_id=pid, consumer_id=consumer, resource_class_id=_VCPU, used=1,
            created_at=_NOW))
        changes.record(conn, [pid], usage_only=True)


def _view(cache: SnapshotCache, db: Database) -> Snapshot:
    with db.read() as conn:
        return cache.view(conn, {"VCPU"}, set())


def test_held_views_never_change_while_publishes_alternate_mappings(db: Database) -> None:
    """A and B held in turn: each publish lands on mappings no live view uses (spare.py)."""
    cache = SnapshotCache()
    a = _view(cache, db)
    _claim(db, 1, "c1")
    b = _view(cache, db)  # a is held: b's mappings are a copy
    assert b.providers is not a.providers
    a_mappings = a.providers
    del a  # a's mappings become free to reuse
    _claim(db, 2, "c2")
    c = _view(cache, db)  # b is held: c reuses a's mappings, brought up to date
    assert c.providers is a_mappings
    used = {pid: c.providers[pid].inventories["VCPU"].used for pid in (1, 2, 3)}
    assert used == {1: 1, 2: 1, 3: 0}
    assert b.providers[2].inventories["VCPU"].used == 0  # b did not change
    assert c.versions[2] != b.versions[2] and c.versions[3] == b.versions[3]
    _claim(db, 3, "c3")
    d = _view(cache, db)  # b and c held: a third copy, nothing seen by b or c changes
    assert b.providers[1].inventories["VCPU"].used == 1
    assert c.providers[3].inventories["VCPU"].used == 0
    assert [d.providers[pid].inventories["VCPU"].used for pid in (1, 2, 3)] == [1, 1, 1]
