"""Property: answers served through the per-worker memo equal freshly computed ones,
byte for byte, while providers keep changing underneath (as claims and inventory
writes do)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.placement.candidates import render, search
from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.snapshot import SHARING_TRAIT, Snapshot
from stowage.placement.candidates.versions import Lineage
from tests.unit.candidates_builders import inv, provider, request, snapshot
from tests.unit.test_candidates_property import CLASSES, forests

QUERIES = [
    "resources=VCPU:1",
    "resources=VCPU:1,MEMORY_MB:2",
    "resources=VCPU:1&resources1=MEMORY_MB:1&group_policy=none",
    "resources1=VCPU:1&resources2=MEMORY_MB:1&group_policy=isolate",
    "resources=VCPU:2&limit=2",
    "resources=VCPU:1&limit=1",
    "resources=MEMORY_MB:1&limit=3",
]


def _answer(snap: Snapshot, qs: str, minor: int, memo: Memo | None,
            max_candidates: int = -1) -> bytes:
    req = request(qs, minor)
    result = search.search(snap, req, max_candidates, None, memo)
    return render.render_json(snap, req, result, memo)


def _changed(snap: Snapshot, pid: int, used: int) -> Snapshot:
    """The successor snapshot where one provider was replaced, as the worker cache makes it."""
    old = snap.providers[pid]
    invs = {rc: dataclasses.replace(i, used=min(used, i.capacity))
            for rc, i in old.inventories.items()}
    new = snap.with_changes({pid: dataclasses.replace(old, inventories=invs)})
    new.known_classes = set(CLASSES)
    return new


def _check(snap: Snapshot, memo: Memo, minor: int) -> None:
    for qs in QUERIES:
        for cap in (-1, 2):
            assert _answer(snap, qs, minor, memo, cap) == _answer(snap, qs, minor, None, cap), qs


@settings(max_examples=150, deadline=None)
@given(st.lists(forests(), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), max_size=6),
       st.sampled_from([25, 28, 29, 34, 39]), st.booleans())
def test_memo_never_serves_a_stale_answer(forest_list: list[Snapshot],
                                          edits: list[tuple[int, int]], minor: int,
                                          sharing: bool) -> None:
    # Several forests side by side: more trees than a (test-sized) block holds.
    providers = []
    for forest in forest_list:
        offset = max((p.id for p in providers), default=0)
        providers += [dataclasses.replace(p, id=p.id + offset, uuid=f"rp-{p.id + offset}",
                                          parent_id=p.parent_id and p.parent_id + offset,
                                          root_id=p.root_id + offset)
                      for p in forest.providers.values()]
    if sharing:  # a sharing provider turns the encoded fast path off
        providers = [dataclasses.replace(p, aggregates=frozenset({"a"})) for p in providers]
        providers.append(provider(1000, traits={SHARING_TRAIT}, aggs={"a"}, MEMORY_MB=4))
    snap = snapshot(*providers)
    snap.known_classes = set(CLASSES)
    memo = Memo(block=2)
    ids = sorted(snap.providers)
    _check(snap, memo, minor)
    for pick, used in edits:
        snap = _changed(snap, ids[pick % len(ids)], used)
        _check(snap, memo, minor)


def test_memo_reuses_unchanged_trees() -> None:
    snap = snapshot(provider(1, VCPU=inv(8)), provider(2, VCPU=inv(8)), provider(3, VCPU=inv(8)))
    memo = Memo(block=2)
    first = _answer(snap, "resources=VCPU:1", 39, memo)
    table = next(iter(memo._encoded.values()))
    kept = dict(table.trees)
    assert _answer(snap, "resources=VCPU:1", 39, memo) is first  # the whole body reused
    snap = _changed(snap, 3, 2)
    assert table.seq != snap.seq
    second = _answer(snap, "resources=VCPU:1", 39, memo)
    assert second == _answer(snap, "resources=VCPU:1", 39, None) != first
    assert table.trees[1] is kept[1] and table.trees[2] is kept[2]  # not re-encoded
    assert table.trees[3] is not kept[3]
    assert 0 in table.blocks  # the block of roots 1 and 2 was not dropped


def test_memo_reuses_trees_next_to_sharing_providers() -> None:
    snap = snapshot(provider(1, VCPU=inv(8)), provider(2, VCPU=inv(8)),
                    provider(3, traits={SHARING_TRAIT}, aggs={"x"}, DISK_GB=100))
    memo = Memo()
    first = _answer(snap, "resources=VCPU:1", 39, memo)
    table = next(iter(memo._trees.values()))
    kept = table[1][1]
    assert _answer(snap, "resources=VCPU:1", 39, memo) == first
    assert table[1][1] is kept  # served from the memo, not recomputed


def test_with_changes_keeps_versions_of_equal_providers() -> None:
    snap = snapshot(provider(1, VCPU=inv(8)), provider(2, parent=1, root=1, VCPU=inv(8)),
                    provider(3, VCPU=inv(8)))
    same = snap.with_changes({3: dataclasses.replace(snap.providers[3])})
    assert same.versions == snap.versions and same.seq == snap.seq
    moved = snap.with_changes({2: dataclasses.replace(snap.providers[2], parent_id=None,
                                                      root_id=2)})
    assert moved.versions[1] != snap.versions[1] and moved.versions[3] == snap.versions[3]
    assert moved.lineage is not None and snap.lineage is moved.lineage
    assert moved.lineage.changed_between(snap.seq, moved.seq) == {1, 2}
    gone = moved.with_changes({}, removed=[3])
    assert 3 not in gone.trees and gone.versions[3] != moved.versions[3]


def test_lineage_forgets_old_publishes() -> None:
    lineage = Lineage(keep=2)
    for roots in ({1}, {2}, {3}):
        lineage.record(roots)
    assert lineage.changed_between(3, 1) == {2, 3}
    assert lineage.changed_between(0, 3) is None  # publish 1 is forgotten: unknown
    assert lineage.changed_between(3, 3) == set()
