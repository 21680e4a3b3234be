"""Per-worker memo of candidate work, valid while the trees it came from are unchanged.

Every snapshot carries a version per tree that changes exactly when one of
the tree's providers does (versions.py). An entry remembers the version it
was computed at, so validating it is one integer compare, and a claim costs
the next identical request one tree's recomputation instead of all of them.

Two kinds of table per request shape (the request without its `limit`, which
only decides where the answer is cut):

- `trees`: a root's candidates as objects, for the general search, which
  needs them (sharing providers, nested-awareness, random sampling);
- `encoded`: a root's candidates and summaries already encoded as JSON, for
  the common case where the answer is those fragments concatenated
  (assemble.py).

Candidates of a tree that involves sharing providers are never memoized: they
depend on providers outside the tree and are deduplicated across trees.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from stowage.placement.candidates.assemble import BLOCK, EncodedTable
from stowage.placement.candidates.snapshot import Provider

__all__ = ["Memo", "TreeTable"]

# root id -> (the tree's version, that root's candidates)
TreeTable = dict[int, tuple[int, list[Any]]]
_T = TypeVar("_T")


class Memo:
    def __init__(self, max_requests: int = 64, max_summaries: int = 400_000,
                 max_encoded_bytes: int = 256 << 20, block: int = BLOCK) -> None:
        self._lock = threading.Lock()
        self._trees: OrderedDict[str, TreeTable] = OrderedDict()
        self._encoded: OrderedDict[str, EncodedTable] = OrderedDict()
        self._summaries: dict[tuple[int, Hashable], tuple[Provider, dict[str, Any]]] = {}
        self._max_requests = max_requests
        self._max_summaries = max_summaries
        self._max_encoded_bytes = max_encoded_bytes
        self._block = block

    def trees(self, request_key: str) -> TreeTable:
        """The per-root table of one request shape (least recently used shapes drop out)."""
        with self._lock:
            return _lru(self._trees, request_key, dict, self._max_requests)

    def encoded(self, request_key: str) -> EncodedTable:
        """The encoded-fragment table of one request shape, within a memory budget.

        Each table holds its answer's bytes per tree, and the whole answer
        when it is small (assemble.py), so tables are dropped, least recently
        used first, once their sizes add up to more than the budget.
        """
        with self._lock:
            table = _lru(self._encoded, request_key, lambda: EncodedTable(self._block),
                         self._max_requests)
            total = sum(t.nbytes for t in self._encoded.values())
            while total > self._max_encoded_bytes and len(self._encoded) > 1:
                _, dropped = self._encoded.popitem(last=False)
                total -= dropped.nbytes
            return table

    def summary(self, provider: Provider, variant: Hashable,
                build: Callable[[Provider], dict[str, Any]]) -> dict[str, Any]:
        """A provider's summary, rebuilt only when the provider object was replaced."""
        key = (id(provider), variant)
        hit = self._summaries.get(key)
        if hit is not None and hit[0] is provider:
            return hit[1]
        body = build(provider)
        if len(self._summaries) >= self._max_summaries:
            self._summaries.clear()  # crude, but bounded; refilled on demand
        self._summaries[key] = (provider, body)
        return body


def _lru(tables: OrderedDict[str, _T], key: str, new: Callable[[], _T], most: int) -> _T:
    table = tables.get(key)
    if table is None:
        table = tables[key] = new()
        while len(tables) > most:
            tables.popitem(last=False)
    else:
        tables.move_to_end(key)
    return table
