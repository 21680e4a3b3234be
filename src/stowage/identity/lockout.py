"""Keystone's account lockout: after N wrong passwords in a row, a user is refused a while.

    [identity] lockout_failure_attempts = N   0 (the default): never lock
    [identity] lockout_duration = seconds     how long a lock lasts (Keystone's 1800)

The rules are those of Keystone's SQL identity backend
(`[security_compliance]`):

1. Only a wrong password of an existing user counts; an unknown name has
   nothing to lock.
2. A locked user is refused before the password is looked at, with
   Keystone's 401 "The account is locked for user: <id>." -- the right
   password does not open it, and attempts while locked are not counted.
3. Once `lockout_duration` has passed since the last failure, the count
   starts again from zero.
4. A successful password forgets the failures; so does an administrator
   enabling the user (`PATCH /v3/users/{id}` with `enabled: true`).

Every API worker counts into the same row (`identity_login_failures`).
The count is raised in the database (`failed_count = failed_count + 1`),
so two workers refusing one user at the same moment count two; when both
find no row yet, the primary key lets one insert win and the other counts
by the update instead. With the lockout off nothing is written.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import sqlalchemy as sa

from stowage.db import Database
from stowage.identity.tables import identity_login_failures as _F

__all__ = ["Lockout", "locked_message", "forget"]


def locked_message(user_id: str) -> str:
    """Keystone's AccountLocked text, word for word (clients match on it)."""
    return f"The account is locked for user: {user_id}."


def forget(conn: sa.Connection, user_id: str) -> None:
    """Drop the user's failures inside the caller's transaction (rule 4)."""
    # DELETE FROM identity_login_failures WHERE user_id = :user_id
    conn.execute(_F.delete().where(_F.c.user_id == user_id))


@dataclass(frozen=True)
class Lockout:
    """The lockout of one deployment: its database and its two settings. No I/O here."""

    db: Database
    attempts: int  # 0: off
    duration: int  # seconds

    @property
    def enabled(self) -> bool:
        return self.attempts > 0

    def _row(self, user_id: str) -> sa.Row[tuple[int, datetime.datetime]] | None:
        with self.db.read() as conn:
            return conn.execute(sa.select(_F.c.failed_count, _F.c.failed_at)
                                .where(_F.c.user_id == user_id)).first()

    def is_locked(self, user_id: str, now: datetime.datetime) -> bool:
        """Whether the user is locked out now; an expired lock is cleared (rule 3)."""
        row = self._row(user_id) if self.enabled else None
        if row is None or row.failed_count < self.attempts:
            return False
        if row.failed_at + datetime.timedelta(seconds=self.duration) > now:
            return True
        self.succeeded(user_id)
        return False

    def failed(self, user_id: str, now: datetime.datetime) -> None:
        """Count one wrong password (rule 1)."""
        if not self.enabled:
            return
        with self.db.write() as conn:
            if self._count(conn, user_id, now):
                return
            try:
                with conn.begin_nested():
                    conn.execute(_F.insert().values(user_id=user_id, failed_count=1,
                                                    failed_at=now))
            except sa.exc.IntegrityError:
                # Another worker inserted the first failure meanwhile: count on top of it.
                self._count(conn, user_id, now)

    def succeeded(self, user_id: str) -> None:
        """Forget the user's failures (rule 4); nothing to write when there are none."""
        if not self.enabled or self._row(user_id) is None:
            return
        with self.db.write() as conn:
            forget(conn, user_id)

    @staticmethod
    def _count(conn: sa.Connection, user_id: str, now: datetime.datetime) -> bool:
        # UPDATE identity_login_failures SET failed_count = failed_count + 1,
        #        failed_at = :now WHERE user_id = :user_id
        return bool(conn.execute(_F.update().where(_F.c.user_id == user_id).values(
            failed_count=_F.c.failed_count + 1, failed_at=now)).rowcount)
