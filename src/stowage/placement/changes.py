"""The provider change log: writers note which providers they touched, readers replay it.

Every write that can change what the candidate engine sees (inventory,
usage, traits, aggregates, tree shape, class names) records the provider ids
in the same transaction, so a committed change is always logged and a rolled
back one never is. Readers poll `since(last_seen)`; ids may commit out of
order on PostgreSQL/MySQL, which `ChangeCursor` tolerates.
"""

from __future__ import annotations

import datetime
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["record", "record_all", "ChangeCursor", "KEEP_FOR"]

_LOG = t.provider_changes
# Rows older than this are pruned; a reader idle for longer reloads everything.
KEEP_FOR = datetime.timedelta(hours=1)
_PRUNE_PROBABILITY = 0.002
# An id not seen this long after a higher one was is taken as rolled back.
GAP_TIMEOUT = 10.0
# Safety net: reload everything this often (seconds) even without a known change.
FULL_RELOAD_EVERY = 300.0



def record(conn: Connection, provider_ids: Iterable[int]) -> None:
    ids = sorted(set(provider_ids))
    if not ids:
        return
    now = _now()
    conn.execute(_LOG.insert(), [{"provider_id": i, "created_at": now} for i in ids])
    if random.random() < _PRUNE_PROBABILITY:
        # Keep the newest row so that the id sequence has a floor on every backend.
        # (Two statements: MySQL cannot DELETE with a subquery on the same table.)
        newest = conn.execute(sa.select(sa.func.max(_LOG.c.id))).scalar() or 0
        conn.execute(_LOG.delete().where(_LOG.c.created_at < now - KEEP_FOR,
                                         _LOG.c.id < newest))


def record_all(conn: Connection) -> None:
    """Something every provider's view depends on changed (a class was renamed)."""
    conn.execute(_LOG.insert().values(provider_id=None, created_at=_now()))


@dataclass
class ChangeCursor:
    """Where a reader is in the log: everything up to `upto` has been applied.

    `pending` holds ids above `upto` that were already applied while a lower
    id was still missing (an uncommitted or rolled-back transaction).
    """

    upto: int = 0
    pending: set[int] = field(default_factory=set)
    gap_since: float | None = None
    loaded_at: float = field(default_factory=time.monotonic)

    def stale(self) -> bool:
        """Time for a full reload: the log may have been pruned, or a gap misjudged."""
        return time.monotonic() - self.loaded_at > FULL_RELOAD_EVERY

    def poll(self, conn: Connection) -> list[int | None] | None:
        """Provider ids changed since the last poll; None means 'reload everything'.

        An empty list means nothing changed.
        """
        # SELECT id, provider_id FROM resource_provider_changes WHERE id > :upto ORDER BY id
        rows = conn.execute(sa.select(_LOG.c.id, _LOG.c.provider_id)
                            .where(_LOG.c.id > self.upto).order_by(_LOG.c.id)).all()
        fresh = [(i, p) for i, p in rows if i not in self.pending]
        self.pending.update(i for i, _ in fresh)
        self._advance()
        if any(p is None for _, p in fresh):
            return None
        return [p for _, p in fresh]

    def _advance(self) -> None:
        while self.upto + 1 in self.pending:
            self.upto += 1
            self.pending.discard(self.upto)
        if not self.pending:
            self.gap_since = None
            return
        now = time.monotonic()
        if self.gap_since is None:
            self.gap_since = now
        elif now - self.gap_since > GAP_TIMEOUT:
            # The missing id never committed: skip to the next one we have.
            self.upto = min(self.pending) - 1
            self.gap_since = None
            self._advance()

    def reset(self, conn: Connection) -> None:
        """Restart after a full reload, replaying the last few seconds.

        A transaction still open during the reload may hold an id below the
        log's current end; ids logged in the last GAP_TIMEOUT seconds are
        therefore replayed (harmless if already reflected) rather than skipped.
        """
        horizon = _now() - datetime.timedelta(seconds=GAP_TIMEOUT)
        # SELECT MAX(id) FROM resource_provider_changes WHERE created_at < :horizon
        top = conn.execute(sa.select(sa.func.max(_LOG.c.id))
                           .where(_LOG.c.created_at < horizon)).scalar()
        self.upto, self.pending, self.gap_since = int(top or 0), set(), None
        self.loaded_at = time.monotonic()
