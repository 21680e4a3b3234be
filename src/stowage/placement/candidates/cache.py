"""Every provider of the database kept in memory per worker, replaying the change log.

A request no longer reloads inventories, usages, traits and aggregates: it
polls the change log (one indexed query) and reloads only the providers that
changed since its worker last looked; for those whose usage alone changed
(claims), only their usage. This worker's own claims it does not read back
at all: the claim hands over its committed figures (`claimed`). The cache
only ever proposes candidates; every
claim is still checked in a database transaction, so a briefly stale view can
cost a retry, never an overcommit.

A change publishes a successor snapshot. Requests still holding the previous
one keep an unchanged view of it; when none does (the usual case between two
requests), the successor takes over the previous one's provider mapping and
updates it in place rather than copying tens of thousands of entries.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import threading
import weakref
from collections.abc import Iterator, Mapping

from sqlalchemy.engine import Connection

from stowage.placement.candidates import loading
from stowage.placement.candidates.memo import Memo
from stowage.placement.candidates.snapshot import Provider, Snapshot
from stowage.placement.candidates.spare import Spare
from stowage.placement.changes import ChangeCursor, Changes

__all__ = ["SnapshotCache"]


# Beyond this many changed providers, loading every provider beats long IN lists.
_MAX_CHANGED = 500


class SnapshotCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cursor = ChangeCursor()
        self._snapshot: Snapshot | None = None
        # The views of the published snapshot that requests still hold: while
        # there are none, the next change may update its mappings in place
        # instead of copying them (copying is O(providers)).
        self._lent: list[weakref.ref[Snapshot]] = []
        # The mappings the last copying publish left behind (spare.py).
        self._spare = Spare()
        # This worker's own committed claims, not yet in the snapshot (claimed).
        self._claims: list[tuple[list[int], Mapping[int, Mapping[str, int]]]] = []
        # Per-tree candidates and per-provider summaries of recent requests.
        self.memo = Memo()

    def view(self, conn: Connection, classes: set[str], traits: set[str]) -> Snapshot:
        """The current snapshot, with which of the request's names exist.

        Each request gets a shallow copy of the published snapshot (sharing
        its mappings), tracked until the request drops it: hold the view
        itself for as long as its mappings are used.
        """
        with self._lock:
            self._refresh(conn)
            assert self._snapshot is not None
            view = copy.copy(self._snapshot)
            if len(self._lent) >= 32:
                self._lent = [ref for ref in self._lent if ref() is not None]
            self._lent.append(weakref.ref(view))
        view.known_classes, view.known_traits = loading.known_names(conn, classes, traits)
        return view

    def claimed(self, log_ids: list[int], usage: Mapping[int, Mapping[str, int]]) -> None:
        """Note this worker's own committed claim, so its next refresh need not read it back.

        `usage` is the claimed classes' usage as the claim committed it
        (claim.py): the database's figure, not an increment. The next refresh
        takes it in with whatever its poll finds, in one publish (`_own`).
        The other workers replay the claim's log entries as before.
        """
        with self._lock:
            if self._snapshot is not None and log_ids:
                self._claims.append((log_ids, usage))

    def _own(self) -> dict[int, dict[str, int]]:
        """The noted claims no poll has had yet, marked applied: provider -> class -> usage.

        A claim whose entries a poll already had is moot (the poll's reload
        read it). One that no poll had is the latest word on its classes: a
        later change to those providers waited for the claim's row locks, so
        its entries come after the claim's and are not seen either; their
        replay reloads the providers. Later claims win (log order).
        """
        claims, self._claims = self._claims, []
        totals: dict[int, dict[str, int]] = {}
        for log_ids, usage in sorted(claims, key=lambda c: min(c[0])):
            if self._cursor.claim(log_ids):
                for pid, classes in usage.items():
                    totals.setdefault(pid, {}).update(classes)
        return totals

    def _refresh(self, conn: Connection) -> None:
        if self._snapshot is None or self._cursor.stale():
            self._claims = []
            self._reload(conn)
            return
        own = self._own()
        changed = self._cursor.poll(conn)
        if changed is None:
            self._reload(conn)
        elif changed or own:
            self._apply(conn, changed, own)

    def _unused(self) -> bool:
        """Does no request hold a view of the published snapshot any more?"""
        return all(ref() is None for ref in self._lent)

    def _publish(self, snap: Snapshot) -> None:
        self._snapshot = snap
        self._lent = []

    def _successor(self, updated: dict[int, Provider], removed: set[int],
                   trait_ids: dict[str, int]) -> Snapshot:
        """The published snapshot with a change applied, without copying its mappings.

        In place when no view holds it; else on the spare mappings when no view
        holds those (spare.py); else, rarely, on copies.
        """
        snap = self._snapshot
        assert snap is not None and snap.lineage is not None
        if self._unused():
            base, in_place = snap, True
        else:
            spare = self._spare.take(snap)
            base, in_place = (spare, True) if spare is not None else (snap, False)
        new = base.with_changes(updated, removed, trait_ids, in_place=in_place)
        if base is snap and in_place:
            roots = snap.lineage.changed_between(snap.seq, new.seq)
            self._spare.behind(updated.keys() | removed, roots)
        elif new.providers is not snap.providers:
            self._spare.keep(snap, self._lent)
            roots = snap.lineage.changed_between(snap.seq, new.seq)
            self._spare.behind(updated.keys() | removed, roots)
        return new

    def _reload(self, conn: Connection) -> None:
        """Load everything; trees whose providers did not change keep their versions."""
        self._cursor.reset(conn)
        self._spare.drop()
        with _no_collections():
            providers, trait_ids = loading.load_providers(conn, None)
            old = self._snapshot
            if old is None:
                self._publish(Snapshot(providers, set(), set(), trait_ids))
            else:
                self._publish(old.with_changes(providers, old.providers.keys() - providers,
                                               trait_ids, in_place=self._unused()))
        _freeze_heap()

    def _apply(self, conn: Connection, changed: Changes,
               own: Mapping[int, Mapping[str, int]]) -> None:
        """Swap in fresh copies of the changed providers; deleted ones drop out.

        Providers whose usage alone changed (claims) get their usage reloaded,
        one grouped sum; the others are reloaded whole; this worker's own
        claims (`own`) come from their own figures, unless a reload read them
        anyway. A new Snapshot object is published, so requests still using
        the old one are unaffected.
        """
        snap = self._snapshot
        assert snap is not None
        usage_only = {pid for pid in changed.usage if pid in snap.providers}
        full = set(changed.full | (changed.usage - usage_only))
        if len(full) + len(usage_only) > _MAX_CHANGED:
            # Everything, without restarting the cursor (unlike _reload); providers
            # that did not change keep their objects and their trees' versions.
            full, usage_only = set(snap.providers) | full, set()
        loaded, trait_ids = loading.load_providers(
            conn, None if len(full) > _MAX_CHANGED else full) if full else ({}, {})
        removed = full - loaded.keys()
        updated = loading.with_totals(snap.providers,
                                      {p: u for p, u in own.items() if p not in removed})
        updated.update((pid, loaded[pid]) for pid in full if pid in loaded)
        if usage_only:
            updated.update(loading.with_usage(snap.providers, usage_only,
                                              loading.load_usage(conn, usage_only)))
        self._publish(self._successor(updated, removed, trait_ids))


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """No cyclic collection while a full load allocates its objects.

    A load makes hundreds of thousands of container objects, none of them
    garbage; each allocation threshold crossed would start a collection that
    walks them again (40% of the load's CPU at 100,000 providers). The load
    makes no reference cycles to reclaim, and `_freeze_heap` collects once
    right after it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
