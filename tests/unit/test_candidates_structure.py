"""Property: a snapshot's successor has the lookup tables a rebuild from scratch gives,
and its predecessor's tables are left as they were (requests may still use them)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.placement.candidates.snapshot import SHARING_TRAIT, Provider, Snapshot
from stowage.placement.candidates.structure import Structure
from tests.unit.candidates_builders import inv, provider, snapshot


def _tables(s: Structure) -> tuple[Any, ...]:
    return (s.by_uuid, s.trees, s.by_class, s.agg_members, s.sharing, s.non_roots)


@st.composite
def edits(draw: Any, snap: Snapshot) -> tuple[dict[int, Provider], set[int]]:
    """A few providers added, changed or removed (leaves only, as the API allows)."""
    updated: dict[int, Provider] = {}
    removed: set[int] = set()
    parents = {p.parent_id for p in snap.providers.values()}
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["add", "change", "remove"]))
        ids = sorted(snap.providers)
        if kind == "add" or not ids:
            pid = max([*ids, *updated, 0]) + 1
            parent = draw(st.sampled_from([None, *ids]))
            root = pid if parent is None else snap.providers[parent].root_id
            updated[pid] = provider(pid, parent, root, VCPU=inv(4))
            continue
        pid = draw(st.sampled_from(ids))
        if kind == "remove" and pid not in parents:
            removed.add(pid)
            continue
        old = snap.providers[pid]
        classes = draw(st.sets(st.sampled_from(["VCPU", "MEMORY_MB", "DISK_GB"])))
        updated[pid] = dataclasses.replace(
            old, inventories={rc: inv(draw(st.integers(1, 8))) for rc in classes},
            traits=frozenset(draw(st.sets(st.sampled_from([SHARING_TRAIT, "CUSTOM_GOLD"])))),
            aggregates=frozenset(draw(st.sets(st.sampled_from(["a", "b"])))))
    return updated, removed - updated.keys()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_successor_tables_equal_a_rebuild(data: st.DataObject) -> None:
    snap = snapshot(provider(1, VCPU=inv(4)), provider(2, 1, 1, MEMORY_MB=inv(4)),
                    provider(3, aggs={"a"}, traits={SHARING_TRAIT}, DISK_GB=inv(9)))
    for _ in range(4):
        before = copy.deepcopy(_tables(snap.structure))  # type: ignore[arg-type]
        updated, removed = data.draw(edits(snap))
        new = snap.with_changes(updated, removed)
        assert new.structure is not None and snap.structure is not None
        assert _tables(snap.structure) == before  # the predecessor is untouched
        assert _tables(new.structure) == _tables(Structure.build(new.providers))
        assert (new.by_class, new.has_trees) == (new.structure.by_class,
                                                 new.structure.non_roots > 0)
        snap = new


def test_a_usage_change_keeps_the_structure_and_its_index() -> None:
    snap = snapshot(provider(1, VCPU=inv(4)), provider(2, VCPU=inv(4)))
    old = snap.providers[1]
    used = dataclasses.replace(old, inventories={"VCPU": inv(4, used=2)})
    new = snap.with_changes({1: used})
    assert new.structure is snap.structure and new.index_box is snap.index_box
    assert new.versions[1] != snap.versions[1] and new.versions[2] == snap.versions[2]
    gold = new.with_changes({1: dataclasses.replace(used, traits=frozenset({"CUSTOM_GOLD"}))})
    assert gold.structure is new.structure  # no table lists ordinary traits
    moved = gold.with_changes({1: dataclasses.replace(used, aggregates=frozenset({"a"}))})
    assert moved.structure is not gold.structure and moved.index_box is not gold.index_box
