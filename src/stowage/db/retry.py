"""Which database errors mean "run the transaction again", on every backend.

PostgreSQL and MySQL pick a victim when two transactions wait for each
other's row locks (a deadlock), and PostgreSQL's serializable checks refuse
one of two conflicting transactions; in both cases the victim was rolled
back whole and nothing of it stayed, so running it again is safe and is what
Nova and Neutron do (oslo.db's `wrap_db_retry(retry_on_deadlock=True)`).
SQLite has a single writer and never raises these.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["retryable"]

# PostgreSQL deadlock / serialization failure; MySQL deadlock / lock wait timeout.
_SQLSTATES = frozenset({"40P01", "40001"})
_MYSQL_CODES = frozenset({1213, 1205})


def retryable(exc: BaseException) -> bool:
    """The database rolled the transaction back as a deadlock (or serialization) victim."""
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    orig = exc.orig
    if getattr(orig, "sqlstate", None) in _SQLSTATES:
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return len(args) > 0 and args[0] in _MYSQL_CODES
