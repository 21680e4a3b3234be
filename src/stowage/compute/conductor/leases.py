"""Conductor leases: an operation belongs to the conductor that runs it, until it dies.

Several conductors share the journal. The head of each operation (its
`accepted` row) says who runs it and until when:

    owner     lease_expires
    NULL      accepted at      accepted by the API, no conductor started it yet
    X         T                conductor X runs it; its lease holds until T
    any       NULL             ended (released with the journal's `end` row)

* **Claim.** The conductor a cast reaches claims the head in the transaction
  of the operation's first journal write (`owner IS NULL`, so a cast that
  comes after a take-over is refused). A journal the conductor opens itself
  (no `accepted` row) inserts an owned head instead.
* **Confirm.** Every later journal transaction confirms the lease with one
  conditional UPDATE that also extends it (`owner = me`); the one that writes
  `end` sets `lease_expires` to NULL. A lease found taken raises `LeaseLost`,
  rolling the transaction back: a conductor that was paused past its lease
  (a zombie) writes nothing more.
* **Renew.** A thread extends every lease this conductor holds in one UPDATE
  per third of the lease; it runs only while leases are held.
* **Take over.** `expired()` lists heads whose lease ran out (and heads no
  conductor claimed within a lease of being accepted: a cast lost with its
  process); `take()` claims one with an UPDATE conditional on the owner seen
  and on the expiry still being past. Row locks (PostgreSQL, MySQL) or the
  single writer (SQLite) let exactly one conductor win; the winner finishes
  or undoes the operation with the recovery code.
* **Dead here.** A lease whose owner ran on this host, in this PID namespace,
  in a process that no longer exists (a conductor killed and restarted on
  the same machine, the one-process deployment after a crash) is taken over
  at once instead of after its expiry: the same check by pid would be wrong
  across hosts or containers, so the owner names both. The same goes for an
  unclaimed head whose accepting process (`accepted_by` in its detail) is
  gone: in one process the cast died with it, and no conductor will claim it.
* **Guard.** Before an operation acts (an agent, the scheduler, Placement),
  `guard()` checks the lease in memory; when its last confirmation is older
  than two thirds of the lease (the process was paused, the database out of
  reach) it confirms it in the database first, so a zombie stops before it
  acts. What a pause between that check and the call itself does cannot be
  fenced without the agents checking the lease too.

Expiry compares wall clocks of different hosts: keep them in sync (NTP) to
well within a lease, as Nova's service-group heartbeats also assume.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from stowage.db import Database
from stowage.db.statements import Sql
from stowage.timeutil import utcnow

__all__ = ["LeaseLost", "Leases", "Expired", "new_owner"]

LOG = logging.getLogger(__name__)

# The runner of a cast claims a head no conductor claimed yet.
_CLAIM = Sql("UPDATE operation_steps SET owner = :me, lease_expires = :until "
             "WHERE operation_uuid = :uuid AND step = 'accepted' AND owner IS NULL "
             "AND lease_expires IS NOT NULL")
_HEAD = Sql("SELECT 1 FROM operation_steps WHERE operation_uuid = :uuid AND step = 'accepted'")
_INSERT_HEAD = Sql(
    "INSERT INTO operation_steps (operation_uuid, operation, instance_uuid, step, state, "
    "created_at, owner, lease_expires) VALUES (:uuid, :operation, :instance_uuid, "
    "'accepted', 'done', :now, :me, :until)")
# Every journal transaction of the owner: still mine? then extend (or end) it.
_CONFIRM = Sql("UPDATE operation_steps SET lease_expires = :until "
               "WHERE operation_uuid = :uuid AND step = 'accepted' AND owner = :me "
               "AND lease_expires IS NOT NULL")
_RENEW = Sql("UPDATE operation_steps SET lease_expires = :until "
             "WHERE step = 'accepted' AND owner = :me AND lease_expires IS NOT NULL "
             "AND operation_uuid IN :uuids")
_STILL_MINE = Sql("SELECT operation_uuid FROM operation_steps WHERE step = 'accepted' "
                  "AND owner = :me AND lease_expires IS NOT NULL AND operation_uuid IN :uuids")
_EXPIRED = Sql("SELECT operation_uuid, owner FROM operation_steps WHERE step = 'accepted' "
               "AND ((owner IS NOT NULL AND lease_expires < :now) "
               "OR (owner IS NULL AND lease_expires < :unclaimed_before)) ORDER BY id")
_TAKE = Sql("UPDATE operation_steps SET owner = :me, lease_expires = :until "
            "WHERE operation_uuid = :uuid AND step = 'accepted' AND owner = :old "
            "AND lease_expires < :now")
_LEASED_HERE = Sql("SELECT operation_uuid, owner FROM operation_steps WHERE step = 'accepted' "
                   "AND owner LIKE :prefix AND lease_expires >= :now ORDER BY id")
_TAKE_DEAD = Sql("UPDATE operation_steps SET owner = :me, lease_expires = :until "
                 "WHERE operation_uuid = :uuid AND step = 'accepted' AND owner = :old "
                 "AND lease_expires IS NOT NULL")
_UNCLAIMED_HERE = Sql("SELECT operation_uuid, detail FROM operation_steps "
                      "WHERE step = 'accepted' AND owner IS NULL AND lease_expires IS NOT NULL "
                      "ORDER BY id")
_TAKE_UNCLAIMED_DEAD = Sql("UPDATE operation_steps SET owner = :me, lease_expires = :until "
                           "WHERE operation_uuid = :uuid AND step = 'accepted' "
                           "AND owner IS NULL AND lease_expires IS NOT NULL")
_TAKE_UNCLAIMED = Sql("UPDATE operation_steps SET owner = :me, lease_expires = :until "
                      "WHERE operation_uuid = :uuid AND step = 'accepted' AND owner IS NULL "
                      "AND lease_expires < :unclaimed_before")
# A run that stopped on an error: let the next conductor to look take it over now.
_EXPIRE = Sql("UPDATE operation_steps SET lease_expires = :now WHERE operation_uuid = :uuid "
              "AND step = 'accepted' AND owner = :me AND lease_expires IS NOT NULL")
# The end of an operation whose journal holds no lease (older rows, tools, tests).
_RELEASE = Sql("UPDATE operation_steps SET lease_expires = NULL "
               "WHERE operation_uuid = :uuid AND step = 'accepted'")


class LeaseLost(BaseException):  # noqa: N818 - a stop, like SystemExit, not an error
    """This conductor no longer owns the operation: stop it without writing or acting.

    A BaseException so that no `except Exception` of an operation (its undo,
    its error end state) runs on the way out: the new owner does all that.
    """

    def __init__(self, operation_uuid: str) -> None:
        super().__init__(f"operation {operation_uuid} is no longer this conductor's")
        self.operation_uuid = operation_uuid


@dataclass(frozen=True)
class Expired:
    """An operation whose lease ran out (`owner` None: never claimed)."""

    operation_uuid: str
    owner: str | None
    dead: bool = False  # its owner's process is gone from this machine: no need to wait


@functools.cache
def _machine() -> str:
    """This host and PID namespace: only where both match does a pid name the same process.
    (Once per process: the API names it in every operation it accepts.)"""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}/{namespace}"


def this_process() -> str:
    """machine:pid, what `dead_here` can check (the API writes it as `accepted_by`)."""
    return f"{_machine()}:{os.getpid()}"


def new_owner() -> str:
    """machine:pid:random, unique per conductor process start."""
    return f"{this_process()}:{secrets.token_hex(4)}"


def dead_here(owner: str) -> bool:
    """The owner ran on this machine and its process is gone (killed, crashed)."""
    machine, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if machine != _machine() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it exists, as another user's process
    return False


def _acceptor(detail: str | None) -> str:
    """The `accepted_by` of an accepted row's detail ("" when it has none)."""
    try:
        return str(json.loads(detail or "{}").get("accepted_by") or "")
    except (ValueError, AttributeError):
        return ""


def release(conn: Connection, operation_uuid: str) -> None:
    """The operation ended under a journal with no lease: no one may take it over."""
    _RELEASE.run(conn, uuid=operation_uuid)


class Leases:
    """The leases of one conductor (`owner`); `seconds()` reads the current setting."""

    def __init__(self, db: Database, seconds: Callable[[], float],
                 owner: str | None = None) -> None:
        self.db = db
        self.seconds = seconds
        self.owner = owner or new_owner()
        self._lock = threading.Lock()
        self._confirmed: dict[str, float] = {}  # held operation -> monotonic confirmation
        self._lost: set[str] = set()
        self._renewer: threading.Thread | None = None
        self._stopped = threading.Event()

    def _until(self) -> datetime.datetime:
        return utcnow() + datetime.timedelta(seconds=self.seconds())

    # --- in the journal's transactions --------------------------------------------
    def claim_in(self, conn: Connection, uuid: str, head: tuple[str, str | None] | None,
                 ending: bool) -> None:
        """First write of a run: claim the head (`head` = (operation, instance) when it
        may not exist yet, to insert it); raises LeaseLost when another has it."""
        until = None if ending else self._until()
        if _CLAIM.run(conn, me=self.owner, until=until, uuid=uuid):
            return
        if head is None or _HEAD.first(conn, uuid=uuid) is not None:
            raise LeaseLost(uuid)
        _INSERT_HEAD.run(conn, uuid=uuid, operation=head[0], instance_uuid=head[1],
                         now=utcnow(), me=self.owner, until=until)

    def confirm_in(self, conn: Connection, uuid: str, ending: bool) -> None:
        """A later write of the owner: extend the lease (or end it); LeaseLost if taken."""
        if uuid in self._lost or not _CONFIRM.run(
                conn, me=self.owner, until=None if ending else self._until(), uuid=uuid):
            self.drop(uuid)  # for good: no more renewals of it
            raise LeaseLost(uuid)

    def committed(self, uuid: str, ending: bool) -> None:
        """The transaction that claimed or confirmed the lease of `uuid` committed."""
        if ending:
            self.drop(uuid)
            return
        with self._lock:
            self._confirmed[uuid] = time.monotonic()
            if self._renewer is None and not self._stopped.is_set():
                self._renewer = threading.Thread(target=self._renew_while_held,
                                                 name="conductor-leases", daemon=True)
                self._renewer.start()

    # --- around the operation's actions -------------------------------------------
    def guard(self, uuid: str) -> None:
        """Before acting: raise LeaseLost unless the lease is surely still ours."""
        with self._lock:
            if uuid in self._lost:
                raise LeaseLost(uuid)
            confirmed = self._confirmed.get(uuid)
        if confirmed is None or time.monotonic() - confirmed < self.seconds() * 2 / 3:
            return  # not held under a lease (older journals), or confirmed recently
        with self.db.write() as conn:
            self.confirm_in(conn, uuid, ending=False)
        self.committed(uuid, ending=False)

    def drop(self, uuid: str) -> None:
        """Stop renewing `uuid` (ended, lost, or given up: then it expires by itself)."""
        with self._lock:
            self._confirmed.pop(uuid, None)
            self._lost.discard(uuid)

    def expire(self, uuid: str) -> None:
        """The run of `uuid` stopped on an error: let any conductor take it over now."""
        self.drop(uuid)
        with self.db.write() as conn:
            _EXPIRE.run(conn, now=utcnow(), uuid=uuid, me=self.owner)

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._confirmed)

    # --- renewal --------------------------------------------------------------------
    def renew(self) -> None:
        """Extend every lease held, in one UPDATE; note the ones another conductor took."""
        uuids = self.held()
        if not uuids:
            return
        started = time.monotonic()
        with self.db.write() as conn:
            renewed = _RENEW.run(conn, me=self.owner, until=self._until(), uuids=uuids)
            mine = set(uuids) if renewed == len(uuids) else {
                r[0] for r in _STILL_MINE.rows(conn, me=self.owner, uuids=uuids)}
        with self._lock:
            for uuid in uuids:
                if uuid not in self._confirmed:
                    continue  # ended meanwhile
                if uuid in mine:
                    self._confirmed[uuid] = max(self._confirmed[uuid], started)
                else:
                    LOG.warning("conductor %s lost the lease of operation %s", self.owner,
                                uuid)
                    self._lost.add(uuid)

    def _renew_while_held(self) -> None:
        while not self._stopped.wait(self.seconds() / 3):
            with self._lock:
                if not self._confirmed:
                    self._renewer = None
                    return
            try:
                self.renew()
            except Exception:
                LOG.exception("could not renew the leases of conductor %s", self.owner)
        with self._lock:
            self._renewer = None

    def stop(self) -> None:
        """No more renewals (the conductor stops; tests use it as a death)."""
        self._stopped.set()

    # --- take-over --------------------------------------------------------------------
    def expired(self) -> list[Expired]:
        """Operations whose owner died on this machine, then those whose lease ran out,
        oldest first (never those this conductor runs)."""
        now = utcnow()
        unclaimed_before = now - datetime.timedelta(seconds=self.seconds())
        with self.db.read() as conn:
            rows = _EXPIRED.rows(conn, now=now, unclaimed_before=unclaimed_before)
            here = _LEASED_HERE.rows(conn, prefix=f"{_machine()}:%", now=now)
            unclaimed = _UNCLAIMED_HERE.rows(conn)
        held = set(self.held())
        dead = [Expired(uuid, owner, dead=True) for uuid, owner in here if dead_here(owner)]
        dead += [Expired(uuid, None, dead=True) for uuid, detail in unclaimed
                 if dead_here(_acceptor(detail))]
        seen = {e.operation_uuid for e in dead}
        return [e for e in [*dead, *(Expired(uuid, owner) for uuid, owner in rows
                                     if uuid not in seen)]
                if e.operation_uuid not in held]

    def take(self, expired: Expired) -> bool:
        """Claim an expired operation; True for exactly one of the conductors that try."""
        now = utcnow()
        with self.db.write() as conn:
            if expired.dead and expired.owner is None:
                won = _TAKE_UNCLAIMED_DEAD.run(conn, me=self.owner, until=self._until(),
                                               uuid=expired.operation_uuid)
            elif expired.dead:
                won = _TAKE_DEAD.run(conn, me=self.owner, until=self._until(),
                                     uuid=expired.operation_uuid, old=expired.owner)
            elif expired.owner is None:
                won = _TAKE_UNCLAIMED.run(
                    conn, me=self.owner, until=self._until(), uuid=expired.operation_uuid,
                    unclaimed_before=now - datetime.timedelta(seconds=self.seconds()))
            else:
                won = _TAKE.run(conn, me=self.owner, until=self._until(), now=now,
                                uuid=expired.operation_uuid, old=expired.owner)
        if won:
            LOG.warning("conductor %s took over operation %s from %s", self.owner,
                        expired.operation_uuid, expired.owner or "no conductor")
            self.committed(expired.operation_uuid, ending=False)
        return bool(won)
