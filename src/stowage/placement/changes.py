"""The provider change log: writers note which providers they touched, readers replay it.

Every write that can change what the candidate engine sees (inventory,
usage, traits, aggregates, tree shape, class names) records the provider ids
in the same transaction, so a committed change is always logged and a rolled
back one never is. Allocation writes mark their entries `usage_only`, so a
reader re-sums those providers' usage instead of reloading them whole.
Readers poll with a `ChangeCursor`; ids may commit out of order on
PostgreSQL/MySQL, which the cursor tolerates.
"""

from __future__ import annotations

import datetime
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.db.statements import Sql
from stowage.placement import tables as t
from stowage.timeutil import utcnow as _now

__all__ = ["record", "prune_sometimes", "record_all", "ChangeCursor", "Changes", "KEEP_FOR"]

_LOG = t.provider_changes
# Rows older than this are pruned; a reader idle for longer reloads everything.
KEEP_FOR = datetime.timedelta(hours=1)
_PRUNE_PROBABILITY = 0.002
# An id not seen this long after a higher one was is taken as rolled back.
GAP_TIMEOUT = 10.0
# Safety net: reload everything this often (seconds) even without a known change.
FULL_RELOAD_EVERY = 300.0



_INSERT = Sql("INSERT INTO resource_provider_changes (provider_id, created_at, usage_only) "
              "VALUES (:provider_id, :created_at, :usage_only)")


def record(conn: Connection, provider_ids: Iterable[int], *, usage_only: bool = False) -> None:
    """Log the providers; `usage_only` when nothing but their usage changed (a claim)."""
    ids = sorted(set(provider_ids))
    if not ids:
        return
    now = _now()
    _INSERT.run_many(conn, [{"provider_id": i, "created_at": now, "usage_only": usage_only}
                            for i in ids])
    prune_sometimes(conn, now)


def prune_sometimes(conn: Connection, now: datetime.datetime) -> None:
    """Now and then, drop log rows older than KEEP_FOR; for writers that log by their own SQL."""
    if random.random() < _PRUNE_PROBABILITY:
        # Keep the newest row so that the id sequence has a floor on every backend.
        # (Two statements: MySQL cannot DELETE with a subquery on the same table.)
        newest = conn.execute(sa.select(sa.func.max(_LOG.c.id))).scalar() or 0
        conn.execute(_LOG.delete().where(_LOG.c.created_at < now - KEEP_FOR,
                                         _LOG.c.id < newest))


def record_all(conn: Connection) -> None:
    """Something every provider's view depends on changed (a class was renamed)."""
    conn.execute(_LOG.insert().values(provider_id=None, created_at=_now()))


# Every entry above what a reader has applied, in log order. (Raw driver values:
# usage_only is 0/1 on SQLite and MySQL, a boolean on PostgreSQL.)
_POLL = Sql("SELECT id, provider_id, usage_only FROM resource_provider_changes "
            "WHERE id > :upto ORDER BY id")


@dataclass(frozen=True, slots=True)
class Changes:
    """What one poll found: providers to reload fully, and those whose usage alone changed.

    A provider logged both ways counts as a full change only.
    """

    full: frozenset[int] = frozenset()
    usage: frozenset[int] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.full or self.usage)


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

    def poll(self, conn: Connection) -> Changes | None:
        """Providers changed since the last poll; None means 'reload everything'.

        An empty `Changes` means nothing changed.
        """
        rows = _POLL.rows(conn, upto=self.upto)
        fresh = [row for row in rows if row[0] not in self.pending]
        self.pending.update(row[0] for row in fresh)
        self._advance()
        full: set[int] = set()
        usage: set[int] = set()
        for _, provider_id, usage_only in fresh:
            if provider_id is None:
                return None
            (usage if usage_only else full).add(provider_id)
        return Changes(frozenset(full), frozenset(usage - full))

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
