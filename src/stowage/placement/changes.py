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


# Every entry above the highest a reader has applied, and those below it still
# missing, in log order. (Raw driver values: usage_only is 0/1 on SQLite and
# MySQL, a boolean on PostgreSQL.)
_POLL = Sql("SELECT id, provider_id, usage_only FROM resource_provider_changes "
            "WHERE id > :high ORDER BY id")
_POLL_GAPS = Sql("SELECT id, provider_id, usage_only FROM resource_provider_changes "
                 "WHERE id > :high OR id IN :missing ORDER BY id")
# Past this many ids missing at once, polls stop naming them (the IN list) and
# read everything above the lowest one instead.
_MAX_NAMED = 64
# A jump of the id sequence wider than this reloads everything rather than
# noting every id in between as missing.
_MAX_JUMP = 10_000


def _padded(ids: list[int]) -> list[int]:
    """`ids`, the last one repeated up to a power of two: a few statement texts, not 64.

    Each IN-list length is a statement of its own to the driver's and the
    server's prepared-statement caches; the set of missing ids changes often.
    """
    size = 1 << (len(ids) - 1).bit_length()
    return ids + ids[-1:] * (size - len(ids))


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
    id was still `missing` (an uncommitted or rolled-back transaction; the
    value is when it was first missed). A poll asks for what is above the
    highest id applied and for the missing ids by name, not for everything
    above `upto`: on PostgreSQL a refused claim rolls back an id, and while
    that gap waits out GAP_TIMEOUT a busy log would otherwise be read again,
    hundreds of rows, on every request.
    """

    upto: int = 0
    pending: set[int] = field(default_factory=set)
    missing: dict[int, float] = field(default_factory=dict)
    high: int = 0
    loaded_at: float = field(default_factory=time.monotonic)

    def stale(self) -> bool:
        """Time for a full reload: the log may have been pruned, or a gap misjudged."""
        return time.monotonic() - self.loaded_at > FULL_RELOAD_EVERY

    def poll(self, conn: Connection) -> Changes | None:
        """Providers changed since the last poll; None means 'reload everything'.

        An empty `Changes` means nothing changed.
        """
        if not self.missing:
            rows = _POLL.rows(conn, high=self.high)
        elif len(self.missing) <= _MAX_NAMED:
            rows = _POLL_GAPS.rows(conn, high=self.high, missing=_padded(sorted(self.missing)))
        else:
            rows = _POLL.rows(conn, high=self.upto)
        full: set[int] = set()
        usage: set[int] = set()
        now = time.monotonic()
        for row_id, provider_id, usage_only in rows:
            if row_id <= self.upto or row_id in self.pending:
                continue
            if provider_id is None or not self._note(row_id, now):
                return None
            (usage if usage_only else full).add(provider_id)
        self._expire(now)
        return Changes(frozenset(full), frozenset(usage - full))

    def claim(self, ids: list[int]) -> bool:
        """Mark a worker's own committed log entries applied; False if a poll already had them.

        All of one transaction's entries commit together, so a poll has seen
        all of them or none.
        """
        if any(i <= self.upto or i in self.pending for i in ids) or not ids:
            return False
        if max(ids) - self.high > _MAX_JUMP:
            return False  # the next poll finds them too, and reloads everything
        now = time.monotonic()
        for i in ids:
            self._note(i, now)
        self._advance()
        return True

    def _note(self, row_id: int, now: float) -> bool:
        """Record one applied id; False when the sequence jumped too far to track."""
        if row_id > self.high:
            if row_id - self.high > _MAX_JUMP:
                return False
            for gap in range(self.high + 1, row_id):
                self.missing[gap] = now
            self.high = row_id
        else:
            self.missing.pop(row_id, None)
        self.pending.add(row_id)
        return True

    def _expire(self, now: float) -> None:
        """Ids missing for longer than GAP_TIMEOUT never committed: stop waiting for them."""
        for gap in [g for g, since in self.missing.items() if now - since > GAP_TIMEOUT]:
            del self.missing[gap]
        self._advance()

    def _advance(self) -> None:
        if not self.missing:
            self.upto, self.pending = self.high, set()
            return
        floor = min(self.missing) - 1
        if floor > self.upto:
            self.upto = floor
            self.pending = {i for i in self.pending if i > floor}

    def reset(self, conn: Connection) -> None:
        """Restart before a full reload: what is logged by then is applied by the reload.

        A transaction still open during the reload may hold an id below the
        log's current end. So the ids of the last GAP_TIMEOUT seconds that are
        there now (committed, hence read by the reload that follows) are taken
        as applied, and the ones between them not there yet as missing: those
        are replayed if they commit. (Replaying every recent entry instead
        would reload everything again after a `record_all`, on every request
        for GAP_TIMEOUT seconds.)
        """
        horizon = _now() - datetime.timedelta(seconds=GAP_TIMEOUT)
        # SELECT MAX(id) FROM resource_provider_changes WHERE created_at < :horizon
        top = conn.execute(sa.select(sa.func.max(_LOG.c.id))
                           .where(_LOG.c.created_at < horizon)).scalar()
        self.upto = self.high = int(top or 0)
        self.pending, self.missing = set(), {}
        self.loaded_at = time.monotonic()
        recent = [row_id for row_id, in _RECENT.rows(conn, upto=self.upto)]
        if recent and recent[-1] - self.high <= _MAX_JUMP:
            for row_id in recent:
                self._note(row_id, self.loaded_at)
            self._advance()


_RECENT = Sql("SELECT id FROM resource_provider_changes WHERE id > :upto ORDER BY id")
