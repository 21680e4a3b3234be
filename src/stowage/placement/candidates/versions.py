"""Per-tree version numbers, and which trees changed between two publishes.

Memoized candidate work (memo.py, assemble.py) is only as good as its
validation. Comparing a tree's provider objects one by one costs a few
microseconds per tree, which at 10,000 trees is most of a warm request. So
every snapshot carries, per root, a version number that changes exactly when
some provider of that tree changes (added, removed, or different in value):
an entry remembers the version it was computed at, and checking it is one
integer compare.

A `Lineage` goes further for whole blocks of trees: it records, for each
publish of one snapshot cache, the roots whose version changed, so a memo
synchronised at publish `a` learns what to drop at publish `b` in
O(changes) instead of re-checking every tree.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterable

__all__ = ["Lineage", "fresh_version", "fresh_versions"]

# Versions are unique in the process, so entries of unrelated snapshots never match.
_COUNTER = itertools.count(1)


def fresh_version() -> int:
    return next(_COUNTER)


def fresh_versions(roots: Iterable[int]) -> dict[int, int]:
    """A new version for every root: nothing computed before is taken as valid.

    One new number serves every root: an entry is only ever checked against
    its own root's version, so roots need not differ from each other, only
    from every version seen before. (One int object instead of one per root:
    28 bytes a tree at 100,000 trees.)
    """
    return dict.fromkeys(roots, next(_COUNTER))


class Lineage:
    """The publishes of one chain of snapshots, each with the roots it changed.

    Only the last `keep` publishes are remembered; asking about older ones
    answers None ("unknown: re-check everything"), never a wrong set.
    """

    def __init__(self, keep: int = 512) -> None:
        self._lock = threading.Lock()
        self._log: deque[tuple[int, frozenset[int]]] = deque(maxlen=keep)
        self.seq = 0

    def record(self, roots: Iterable[int]) -> int:
        """Note one publish that changed `roots`; returns its sequence number."""
        with self._lock:
            self.seq += 1
            self._log.append((self.seq, frozenset(roots)))
            return self.seq

    def changed_between(self, a: int, b: int) -> set[int] | None:
        """Roots changed by the publishes after the earlier of `a`, `b`, up to the later."""
        low, high = min(a, b), max(a, b)
        if low == high:
            return set()
        with self._lock:
            if not self._log or self._log[0][0] > low + 1:
                return None
            # Publishes are numbered consecutively: skip straight to the first one after `low`.
            first = low + 1 - self._log[0][0]
            out: set[int] = set()
            for seq, roots in itertools.islice(self._log, first, None):
                if seq > high:
                    break
                out |= roots
            return out
