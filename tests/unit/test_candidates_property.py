"""Property: on random small trees the engine equals a brute-force enumeration,
and every candidate it returns could be claimed as is."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.placement.candidates.snapshot import Provider, Snapshot
from tests.unit.candidates_builders import inv, provider, run, snapshot

CLASSES = ("VCPU", "MEMORY_MB")


@st.composite
def forests(draw: Any) -> Snapshot:
    providers: list[Provider] = []
    next_id = 1
    for _ in range(draw(st.integers(1, 3))):
        root = next_id
        parents: list[int | None] = [None]
        for _ in range(draw(st.integers(1, 4))):
            parent = draw(st.sampled_from(parents))
            invs = {rc: inv(draw(st.integers(1, 6)), step=draw(st.sampled_from([1, 1, 2])),
                            used=draw(st.integers(0, 2)))
                    for rc in CLASSES if draw(st.booleans())}
            providers.append(provider(next_id, parent, root, **invs))
            parents.append(next_id)
            next_id += 1
    return snapshot(*providers)


requests = st.tuples(
    st.dictionaries(st.sampled_from(CLASSES), st.integers(1, 4), min_size=1),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(CLASSES), st.integers(1, 4),
                                         min_size=1)))


def _query(unsuffixed: dict[str, int], granular: dict[str, int] | None) -> str:
    qs = "resources=" + ",".join(f"{rc}:{n}" for rc, n in unsuffixed.items())
    if granular:
        qs += "&resources1=" + ",".join(f"{rc}:{n}" for rc, n in granular.items())
    return qs


def _claimable(snap: Snapshot, alloc: dict[int, dict[str, int]]) -> bool:
    for pid, res in alloc.items():
        for rc, amount in res.items():
            i = snap.providers[pid].inventories[rc]
            if i.used + amount > i.capacity or amount > i.max_unit:
                return False
    return True


def _brute(snap: Snapshot, unsuffixed: dict[str, int],
           granular: dict[str, int] | None) -> set[object]:
    found: set[object] = set()
    for members in snap.trees.values():
        def fits(pid: int, rc: str, n: int) -> bool:
            i = snap.providers[pid].inventories.get(rc)
            return i is not None and i.fits(n)
        choices = [[p for p in members if fits(p, rc, n)] for rc, n in unsuffixed.items()]
        g_choices: list[int | None] = [None]
        if granular:
            g_choices = [p for p in members if all(fits(p, rc, n) for rc, n in granular.items())]
        for combo in itertools.product(*choices):
            for g in g_choices:
                alloc: dict[int, dict[str, int]] = {}
                for pid, (rc, n) in zip(combo, unsuffixed.items(), strict=True):
                    alloc.setdefault(pid, {})[rc] = n
                if g is not None and granular:
                    for rc, n in granular.items():
                        alloc.setdefault(g, {})
                        alloc[g][rc] = alloc[g].get(rc, 0) + n
                if _claimable(snap, alloc):
                    found.add(_frozen(alloc))
    return found


def _frozen(alloc: dict[int, dict[str, int]]) -> object:
    return frozenset((p, rc, n) for p, res in alloc.items() for rc, n in res.items())


@settings(max_examples=300, deadline=None)
@given(forests(), requests)
def test_engine_matches_brute_force(snap: Snapshot, req: tuple[Any, Any]) -> None:
    unsuffixed, granular = req
    result = run(snap, _query(unsuffixed, granular))
    got = [_frozen(c.allocations) for c in result.candidates]
    for cand in result.candidates:
        assert _claimable(snap, cand.allocations)
        roots = {snap.providers[p].root_id for p in cand.allocations}
        assert len(roots) == 1
    assert set(got) == _brute(snap, unsuffixed, granular)
    used_roots = {snap.providers[p].root_id for c in result.candidates for p in c.allocations}
    assert set(result.summary_ids) == {p for r in used_roots for p in snap.trees[r]}
