"""Every provider of the database kept in memory per worker, replaying the change log.

A request no longer reloads inventories, usages, traits and aggregates: it
polls the change log (one indexed query) and reloads only the providers that
changed since its worker last looked. The cache only ever proposes
candidates; every claim is still checked in a database transaction, so a
briefly stale view can cost a retry, never an overcommit.
"""

from __future__ import annotations

import copy
import gc
import threading

from sqlalchemy.engine import Connection

from stowage.placement import tables as t
from stowage.placement.candidates import snapshot
from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.snapshot import Snapshot
from stowage.placement.changes import ChangeCursor

__all__ = ["SnapshotCache"]


class SnapshotCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cursor = ChangeCursor()
        self._snapshot: Snapshot | None = None
        # Per-tree candidates and per-provider summaries of recent requests.
        self.memo = Memo()

    def view(self, conn: Connection, classes: set[str], traits: set[str]) -> Snapshot:
        """The current snapshot, with which of the request's names exist."""
        view = copy.copy(self._current(conn))  # shallow: shares the read-only indexes
        view.known_classes = snapshot._known(conn, t.resource_classes, classes)
        view.known_traits = snapshot._known(conn, t.traits, traits)
        return view

    def _current(self, conn: Connection) -> Snapshot:
        with self._lock:
            if self._snapshot is None or self._cursor.stale():
                self._reload(conn)
            else:
                changed = self._cursor.poll(conn)
                if changed is None:
                    self._reload(conn)
                elif changed:
                    self._apply(conn, {i for i in changed if i is not None})
            assert self._snapshot is not None
            return self._snapshot

    def _reload(self, conn: Connection) -> None:
        """Load everything; trees whose providers did not change keep their versions."""
        self._cursor.reset(conn)
        providers, trait_ids = snapshot.load_providers(conn, None)
        old = self._snapshot
        if old is None:
            self._snapshot = Snapshot(providers, set(), set(), trait_ids)
        else:
            self._snapshot = old.with_changes(providers, old.providers.keys() - providers,
                                              trait_ids)
        _freeze_heap()

    def _apply(self, conn: Connection, ids: set[int]) -> None:
        """Swap in fresh copies of the changed providers; deleted ones drop out.

        A new Snapshot object is published, so requests still using the old
        one are unaffected.
        """
        assert self._snapshot is not None
        loaded, trait_ids = snapshot.load_providers(conn, ids)
        self._snapshot = self._snapshot.with_changes(loaded, ids - loaded.keys(), trait_ids)


def _freeze_heap() -> None:
    """Keep the cyclic GC from re-walking the (large, long-lived) snapshot.

    Large answers allocate many objects, which triggers full collections that
    would traverse every provider each time. Frozen objects are skipped. Only
    full reloads (start-up, then every few minutes) freeze; they first
    unfreeze and collect, so cyclic garbage is never kept for longer than that.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
