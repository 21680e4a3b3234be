"""Per-worker memo of candidate work, valid while the providers it came from are unchanged.

The snapshot cache replaces a provider's object whenever the change log says
the provider changed, and never mutates one in place. So "the same provider
objects as last time" (compared with `is`) proves that a tree's candidates,
or a provider's summary, are still what they were. A claim then costs the
next identical request one tree's recomputation instead of all of them.

Candidates of a tree that involves sharing providers are never memoized: they
depend on providers outside the tree and are deduplicated across trees.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from stowage.placement.candidates.snapshot import Provider

__all__ = ["Memo", "TreeTable"]

# root id -> (the pool's provider objects, that root's candidates)
TreeTable = dict[int, tuple[tuple[Provider, ...], list[Any]]]


class Memo:
    def __init__(self, max_requests: int = 64, max_summaries: int = 400_000) -> None:
        self._lock = threading.Lock()
        self._trees: OrderedDict[str, TreeTable] = OrderedDict()
        self._summaries: dict[tuple[int, Hashable], tuple[Provider, dict[str, Any]]] = {}
        self._max_requests = max_requests
        self._max_summaries = max_summaries

    def trees(self, request_key: str) -> TreeTable:
        """The per-root table of one request shape (least recently used shapes drop out)."""
        with self._lock:
            table = self._trees.get(request_key)
            if table is None:
                table = self._trees[request_key] = {}
                while len(self._trees) > self._max_requests:
                    self._trees.popitem(last=False)
            else:
                self._trees.move_to_end(request_key)
            return table

    def summary(self, provider: Provider, variant: Hashable,
                build: Callable[[Provider], dict[str, Any]]) -> dict[str, Any]:
        key = (id(provider), variant)
        hit = self._summaries.get(key)
        if hit is not None and hit[0] is provider:
            return hit[1]
        body = build(provider)
        if len(self._summaries) >= self._max_summaries:
            self._summaries.clear()  # crude, but bounded; refilled on demand
        self._summaries[key] = (provider, body)
        return body


def same_objects(old: tuple[Provider, ...], new: tuple[Provider, ...]) -> bool:
    return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))
