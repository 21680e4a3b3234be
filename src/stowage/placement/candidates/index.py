"""Structural lookup tables over a snapshot, filled on first use and shared by requests.

The search visits anchor roots one at a time, so it needs to know, without
scanning every provider, which roots could possibly anchor a group (by
resource class), which providers a root's visit looks at (its tree plus the
sharing providers that share into it), the tree of each root in id order, and
each provider's ancestors (for same_subtree).

None of that depends on usage, so one index serves every snapshot of one
`Structure` (structure.py): a claim publishes a new snapshot but keeps the
structure, and the next request finds the index already filled. The
per-worker snapshot cache hands each request a shallow copy of one published
`Snapshot`; copies share the structure's `index_box`, so the index hangs on
the structure and dies with it. A change of structure starts a fresh index.

An index reads structural fields only (parents, roots, aggregates, which
classes a provider has) through the snapshot that first asked for it: every
snapshot sharing the structure agrees on those.
"""

from __future__ import annotations

from stowage.placement.candidates.snapshot import Snapshot

__all__ = ["TreeIndex", "index_of"]


class TreeIndex:
    """Lookups derived lazily, per key, so a structure that changes often stays cheap.

    A change of structure starts a new index; building every table up front
    would put a pass over all providers on the next request's path.
    """

    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        self._roots: list[int] | None = None
        self._pools: dict[int, list[int]] = {}
        self._by_class: dict[str, frozenset[int]] = {}
        self._by_classes: dict[tuple[str, ...], frozenset[int]] = {}
        self._lines: dict[int, frozenset[int]] = {}
        self._sharing: dict[int, frozenset[int]] | None = None
        self._shared_into: dict[int, list[int]] = {}
        self._all: frozenset[int] | None = None

    @property
    def roots(self) -> list[int]:
        """Every root, ascending: the order in which candidates are generated."""
        if self._roots is None:
            self._roots = sorted(self._snap.trees)
        return self._roots

    def tree(self, root: int) -> list[int]:
        """The ids of the tree of `root`, ascending (shared: do not modify)."""
        return self._snap.trees[root]

    def sharing_anchors(self) -> dict[int, frozenset[int]]:
        """Sharing provider -> every root it may anchor (its own included)."""
        if self._sharing is None:
            anchors = {sid: frozenset(self._snap.anchors(sid)) for sid in self._snap.sharing}
            shared_into: dict[int, list[int]] = {}
            for sid, roots in anchors.items():
                own = self._snap.providers[sid].root_id
                for root in roots:
                    if root != own:
                        shared_into.setdefault(root, []).append(sid)
            self._shared_into = shared_into
            self._sharing = anchors
        return self._sharing

    def pool(self, root: int) -> list[int]:
        """What an anchor's visit considers: its tree plus what other trees share into it."""
        found = self._pools.get(root)
        if found is None:
            self.sharing_anchors()
            shared = self._shared_into.get(root)
            found = sorted(self.tree(root) + shared) if shared else self.tree(root)
            self._pools[root] = found
        return found

    def line(self, pid: int) -> frozenset[int]:
        """`pid` and its ancestors."""
        found = self._lines.get(pid)
        if found is None:
            parent = self._snap.providers[pid].parent_id
            found = frozenset((pid,)) if parent is None else self.line(parent) | {pid}
            self._lines[pid] = found
        return found

    def with_class(self, rc: str) -> frozenset[int]:
        """Providers with an inventory of `rc`."""
        return self._snap.by_class.get(rc, frozenset())

    def anchors_by_class(self, rc: str) -> frozenset[int]:
        """Roots whose tree has `rc`, or into which a sharing provider shares it."""
        found = self._by_class.get(rc)
        if found is None:
            ids = self._snap.by_class.get(rc, frozenset())
            providers = self._snap.providers
            roots = {providers[pid].root_id for pid in ids}
            sharing = self.sharing_anchors()
            for pid in ids & sharing.keys():
                roots |= sharing[pid]
            found = self._by_class[rc] = self._shared(roots)
        return found

    def _shared(self, roots: set[int]) -> frozenset[int]:
        """`roots` frozen; every root is one shared set (not one per class: 4 MB each
        at 100,000 trees, where every tree has every class)."""
        if len(roots) == len(self._snap.trees):
            if self._all is None:
                self._all = frozenset(self._snap.trees)
            return self._all
        return frozenset(roots)

    def anchors_by_classes(self, classes: tuple[str, ...]) -> frozenset[int]:
        """Roots that may serve every class of `classes` (a group's resources)."""
        found = self._by_classes.get(classes)
        if found is None:
            sets = sorted({id(s): s for s in map(self.anchors_by_class, classes)}.values(),
                          key=len)
            found = self._by_classes[classes] = (
                sets[0] if len(sets) == 1 else sets[0].intersection(*sets[1:]))
        return found


def index_of(snap: Snapshot) -> TreeIndex:
    """The index of `snap`'s structure, built on first use (see the module docstring).

    Two threads may race to build it; both indexes are equal, one is kept.
    """
    box = snap.index_box
    index: TreeIndex | None = box[0]
    if index is None:
        index = box[0] = TreeIndex(snap)
    return index
