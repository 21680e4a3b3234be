"""Property: answers served through the per-worker memo equal freshly computed ones,
while providers keep changing underneath (as claims and inventory writes do)."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.placement.candidates import render, search
from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.snapshot import Snapshot
from tests.unit.candidates_builders import inv, provider, request, snapshot
from tests.unit.test_candidates_property import CLASSES, forests

QUERIES = [
    "resources=VCPU:1",
    "resources=VCPU:1,MEMORY_MB:2",
    "resources=VCPU:1&resources1=MEMORY_MB:1&group_policy=none",
    "resources1=VCPU:1&resources2=MEMORY_MB:1&group_policy=isolate",
    "resources=VCPU:2&limit=2",
]


def _answer(snap: Snapshot, qs: str, minor: int, memo: Memo | None) -> Any:
    req = request(qs, minor)
    result = search.search(snap, req, -1, None, memo)
    return orjson.loads(render.render_json(snap, req, result, memo))


def _changed(snap: Snapshot, pid: int, used: int) -> Snapshot:
    """A new snapshot where one provider was replaced, as the worker cache does."""
    providers = dict(snap.providers)
    old = providers[pid]
    invs = {rc: dataclasses.replace(i, used=min(used, i.capacity))
            for rc, i in old.inventories.items()}
    providers[pid] = dataclasses.replace(old, inventories=invs)
    return Snapshot(providers, set(CLASSES), set(), {})


@settings(max_examples=150, deadline=None)
@given(forests(), st.lists(st.tuples(st.integers(0, 20), st.integers(0, 6)), max_size=6),
       st.sampled_from([29, 34, 39]))
def test_memo_never_serves_a_stale_answer(snap: Snapshot, edits: list[tuple[int, int]],
                                          minor: int) -> None:
    snap.known_classes = set(CLASSES)
    memo = Memo()
    ids = sorted(snap.providers)
    for qs in QUERIES:
        assert _answer(snap, qs, minor, memo) == _answer(snap, qs, minor, None)
    for pick, used in edits:
        snap = _changed(snap, ids[pick % len(ids)], used)
        for qs in QUERIES:
            assert _answer(snap, qs, minor, memo) == _answer(snap, qs, minor, None), qs


def test_memo_reuses_unchanged_trees() -> None:
    snap = snapshot(provider(1, VCPU=inv(8)), provider(2, VCPU=inv(8)))
    snap.known_classes = {"VCPU"}
    memo = Memo()
    first = _answer(snap, "resources=VCPU:1", 39, memo)
    table = next(iter(memo._trees.values()))
    kept = table[1][1]
    assert _answer(snap, "resources=VCPU:1", 39, memo) == first
    assert table[1][1] is kept  # served from the memo, not recomputed
