"""Timestamps as every table stores them: naive UTC datetimes."""

from __future__ import annotations

import datetime

__all__ = ["utcnow"]


def utcnow() -> datetime.datetime:
    """Naive UTC: DateTime columns carry no zone on SQLite and MySQL."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
